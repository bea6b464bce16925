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

// What lowering adds to the steps of some ops: a conv's (or transposed conv's) fused activation
// (fuse_epilogue.h), the members of a fused elementwise chain (fused.h; each member's own
// attributes are checked against that member's op).
// A fused conv also takes its bias as a third argument, or, with the attributes affine and post,
// up to three constants to add and multiply by before its activation and three after, a
// residual tensor, and a prelu activation its slope. A matmul whose constant B quiltc packed into
// the panels its kernel reads has B's shape as packed_b; matmul_pack_b packs a B made at session
// creation (targets/pack_weights.h). A matmul with a fused bias (attribute bias) takes it as a
// third argument, and its bounds as a conv's activation.
struct Added {
  std::string_view op;
  std::vector<std::string_view> attrs;
  int extra_args = 0;
};
const std::vector<Added>& LoweringAttributes() {
  static const std::vector<Added> added = [] {
    const std::vector<std::string_view> epilogue = {
        "activation", "activation_min", "activation_max", "activation_alpha",
        "affine",     "post",           "residual"};
    std::vector<Added> list;
    for (std::string_view conv : {"nn.conv1d", "nn.conv2d", "nn.conv3d", "nn.conv1d_transpose",
                                  "nn.conv2d_transpose", "nn.conv3d_transpose"}) {
      list.push_back({conv, epilogue, 8});
    }
    list.insert(
        list.end(),
        {
            {"fused_elementwise", {"ops", "arity", "args", "dtypes"}, -1},
            {"matmul", {"packed_b", "bias", "activation", "activation_min", "activation_max"}, 1},
            {"matmul_pack_b", {}, 1},
        });
    return list;
  }();
  return added;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

struct Entry {
  std::vector<std::string_view> attrs;
  int args = 0;
  int extra_args = 0;  // -1: any number of arguments
};
using Table = std::unordered_map<std::string_view, Entry>;

const Table& TheTable() {
  static const Table table = [] {
    Table t;
    for (const OpSchema& op : kOps) {
      Entry& e = t[op.name];
      std::string_view rest = op.schema;
      while (!rest.empty()) {
        size_t comma = rest.find(',');
        std::string_view item = Trim(rest.substr(0, comma));
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        size_t colon = item.find(':');
        if (colon != std::string_view::npos) {
          e.attrs.push_back(item.substr(0, colon));
        } else if (!item.empty()) {
          ++e.args;
        }
      }
    }
    for (const Added& a : LoweringAttributes()) {
      Entry& e = t[a.op];
      e.attrs.insert(e.attrs.end(), a.attrs.begin(), a.attrs.end());
      e.extra_args = a.extra_args;
    }
    return t;
  }();
  return table;
}

}  // namespace

std::span<const std::string_view> KernelAttributes(std::string_view op, bool* known) {
  auto it = TheTable().find(op);
  *known = it != TheTable().end();
  if (!*known) return {};
  return it->second.attrs;
}

bool KernelTupleArgument(std::string_view op, int arg) {
  return arg == 0 && (op == "concat" || op == "einsum");
}

bool KernelArguments(std::string_view op, int* count, int* extra) {
  auto it = TheTable().find(op);
  if (it == TheTable().end() || it->second.extra_args < 0) return false;
  *count = it->second.args;
  *extra = it->second.extra_args;
  return true;
}

}  // namespace quilt::rt
