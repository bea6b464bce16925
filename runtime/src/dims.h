// Symbolic dims at run time: the values of a graph's symbols for one run, and the evaluation of
// the dim expressions of the package against them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "quilt/package_generated.h"
#include "runtime/src/status.h"

namespace quilt::rt {

class DimEnv {
 public:
  // The memory of an environment, for the next one of the same graph (a loop body's, at each
  // iteration) to reuse.
  struct Storage {
    std::vector<int64_t> values;
    std::vector<bool> bound;
    std::vector<std::optional<int64_t>> memo;
  };
  explicit DimEnv(const pkg::Graph& g, Storage kept = {});
  // Hands this environment's memory over (it is then empty).
  Storage Release();
  // The value of dim node `i`, or nullopt while a symbol it uses is unbound (or it divides by 0,
  // or overflows 64 bits). Each node is computed once per symbol binding, without recursion (the
  // package checker made every operand's index smaller than its node's), so a pool of shared
  // subexpressions costs its size, not the number of paths through it.
  std::optional<int64_t> Eval(int i) const;
  bool IsUnboundSymbol(int i) const;
  // Matches dim node `i` against an actual extent: binds a lone unbound symbol, else requires
  // equality where the node can be evaluated. `what` names the place for the message: a string,
  // or a callable returning one, called only for the message (no string built on a run's way).
  template <class What>
  Status Match(int i, int64_t actual, const What& what) {
    int64_t want = 0;
    if (Matches(i, actual, &want)) return Status::Ok();
    if constexpr (std::is_invocable_v<const What&>) {
      return Mismatch(i, actual, want, what());
    } else {
      return Mismatch(i, actual, want, what);
    }
  }
  std::string SymbolName(int sym) const;
  // The expression of dim node `i` for messages; nested past a few levels it reads "...".
  std::string DimString(int i) const;

 private:
  // Match without the message: false where the node evaluates to another value (`*want`).
  bool Matches(int i, int64_t actual, int64_t* want);
  Status Mismatch(int i, int64_t actual, int64_t want, std::string_view what) const;
  std::string DimString(int i, int depth) const;
  std::optional<int64_t> Compute(const pkg::DimNode& d) const;

  const pkg::Graph& g_;
  std::vector<int64_t> values_;
  std::vector<bool> bound_;
  // Eval's memo: node values, valid for nodes 0..done_ under the current bindings.
  mutable std::vector<std::optional<int64_t>> memo_;
  mutable int done_ = -1;
};

}  // namespace quilt::rt
