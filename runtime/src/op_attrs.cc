#include "runtime/src/op_attrs.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace quilt::rt {
namespace {

struct OpSchema {
  std::string_view name;
  std::string_view schema;
};

// Every op of ops.def with its schema: "x, indices, axis:int=0, mode:str=fast".
constexpr OpSchema kOps[] = {
#define QUILT_OP(kind, name, pattern, infer, schema) {name, schema},
#include "ir/ops.def"
};

// What lowering adds to the steps of some ops: a conv's fused activation (fuse_epilogue.h), the
// members of a fused elementwise chain (fused.h; each member's own attributes are checked
// against that member's op).
struct Added {
  std::string_view op;
  std::vector<std::string_view> attrs;
};
const std::vector<Added>& LoweringAttributes() {
  static const std::vector<Added> added = {
      {"nn.conv1d", {"activation", "activation_min", "activation_max"}},
      {"nn.conv2d", {"activation", "activation_min", "activation_max"}},
      {"nn.conv3d", {"activation", "activation_min", "activation_max"}},
      {"fused_elementwise", {"ops", "arity", "args", "dtypes"}},
  };
  return added;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

using Table = std::unordered_map<std::string_view, std::vector<std::string_view>>;

Table Build() {
  Table table;
  for (const OpSchema& op : kOps) {
    std::vector<std::string_view>& names = table[op.name];
    std::string_view rest = op.schema;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      std::string_view item = Trim(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      size_t colon = item.find(':');
      if (colon != std::string_view::npos) names.push_back(item.substr(0, colon));
    }
  }
  for (const Added& a : LoweringAttributes()) {
    std::vector<std::string_view>& names = table[a.op];
    names.insert(names.end(), a.attrs.begin(), a.attrs.end());
  }
  return table;
}

}  // namespace

std::span<const std::string_view> KernelAttributes(std::string_view op, bool* known) {
  static const Table table = Build();
  auto it = table.find(op);
  *known = it != table.end();
  if (!*known) return {};
  return it->second;
}

}  // namespace quilt::rt
