// simplify: removes bindings whose value nobody uses (dead code), repeatedly, in every function.
// Bindings are pure in the IR, so removing an unused one changes no result. Constant folding and
// common subexpressions are left to the importer (which folds what it knows) for now.
#include <set>

#include "ir/builder.h"
#include "passes/pass.h"

namespace quilt::passes {
namespace {

using ir::As;

void Uses(const ir::Expr& e, std::set<const ir::VarNode*>* used) {
  if (!e) return;
  for (const ir::VarNode* v : ir::UsedVars(e)) used->insert(v);
}

Expected<ir::Function> RemoveDead(const ir::Function& f) {
  std::vector<ir::BindingBlock> blocks = f->body->blocks;
  for (bool changed = true; changed;) {
    changed = false;
    std::set<const ir::VarNode*> used;
    Uses(f->body->body, &used);
    for (const ir::BindingBlock& block : blocks) {
      for (const ir::Binding& b : block.bindings) Uses(b.value, &used);
    }
    for (ir::BindingBlock& block : blocks) {
      std::vector<ir::Binding> kept;
      for (const ir::Binding& b : block.bindings) {
        if (used.count(b.var.get())) {
          kept.push_back(b);
        } else {
          changed = true;
        }
      }
      block.bindings = std::move(kept);
    }
  }
  std::vector<ir::BindingBlock> nonempty;
  for (ir::BindingBlock& b : blocks) {
    if (!b.bindings.empty()) nonempty.push_back(std::move(b));
  }
  if (nonempty.size() == f->body->blocks.size()) {
    size_t before = 0, after = 0;
    for (const auto& b : f->body->blocks) before += b.bindings.size();
    for (const auto& b : nonempty) after += b.bindings.size();
    if (before == after) return f;
  }
  return ir::MakeFunction(f->params, ir::MakeSeqExpr(std::move(nonempty), f->body->body),
                          f->ret_struct_info, f->attrs, f->is_pure, f->is_private,
                          f->param_defaults);
}

}  // namespace

Expected<Pass> CreateSimplify(const PassSpec& spec) {
  if (Status s = CheckOptions(spec, {}); !s) return s.error();
  return Pass{"simplify", [](const ir::IRModule& mod) -> Expected<ir::IRModule> {
                ir::IRModule out = mod;
                for (auto& [name, f] : out.functions) {
                  Expected<ir::Function> g = RemoveDead(f);
                  if (!g) return Error(g.error().message, "function '" + name + "'");
                  f = *g;
                }
                return out;
              }};
}

}  // namespace quilt::passes
