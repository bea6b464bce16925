// Symbolic dims at run time: the values of a graph's symbols for one run, and the evaluation of
// the dim expressions of the package against them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "quilt/package_generated.h"
#include "runtime/src/status.h"

namespace quilt::rt {

class DimEnv {
 public:
  explicit DimEnv(const pkg::Graph& g);
  // The value of dim node `i`, or nullopt while a symbol it uses is unbound (or it divides by 0).
  std::optional<int64_t> Eval(int i) const;
  bool IsUnboundSymbol(int i) const;
  // Matches dim node `i` against an actual extent: binds a lone unbound symbol, else requires
  // equality where the node can be evaluated. `what` names the place for the message.
  Status Match(int i, int64_t actual, const std::string& what);
  std::string SymbolName(int sym) const;
  std::string DimString(int i) const;

 private:
  const pkg::Graph& g_;
  std::vector<int64_t> values_;
  std::vector<bool> bound_;
};

}  // namespace quilt::rt
