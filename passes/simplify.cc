// simplify: removes bindings whose value nobody uses (dead code), repeatedly, in every function
// and in the branches of its Ifs.
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

// The bindings of `seq` that something uses, repeatedly; the bodies of If branches first, so
// that what only a dead binding in a branch read dies too.
Expected<ir::SeqExpr> RemoveDead(const ir::SeqExpr& seq) {
  std::vector<ir::BindingBlock> blocks = seq->blocks;
  bool branches_changed = false;
  for (ir::BindingBlock& block : blocks) {
    for (ir::Binding& b : block.bindings) {
      const auto* branch = As<ir::IfNode>(b.value);
      if (!branch) continue;
      Expected<ir::SeqExpr> then_branch = RemoveDead(branch->then_branch);
      if (!then_branch) return then_branch.error();
      Expected<ir::SeqExpr> else_branch = RemoveDead(branch->else_branch);
      if (!else_branch) return else_branch.error();
      if (*then_branch == branch->then_branch && *else_branch == branch->else_branch) continue;
      Expected<ir::Expr> made = ir::MakeIf(branch->cond, *then_branch, *else_branch);
      if (!made) return made.error();
      b.value = *made;
      branches_changed = true;
    }
  }
  bool removed = false;
  for (bool changed = true; changed;) {
    changed = false;
    std::set<const ir::VarNode*> used;
    Uses(seq->body, &used);
    for (const ir::BindingBlock& block : blocks) {
      for (const ir::Binding& b : block.bindings) Uses(b.value, &used);
    }
    for (ir::BindingBlock& block : blocks) {
      std::vector<ir::Binding> kept;
      for (const ir::Binding& b : block.bindings) {
        if (used.count(b.var.get())) {
          kept.push_back(b);
        } else {
          changed = removed = true;
        }
      }
      block.bindings = std::move(kept);
    }
  }
  if (!removed && !branches_changed) return seq;
  std::vector<ir::BindingBlock> nonempty;
  for (ir::BindingBlock& b : blocks) {
    if (!b.bindings.empty()) nonempty.push_back(std::move(b));
  }
  return ir::MakeSeqExpr(std::move(nonempty), seq->body);
}

Expected<ir::Function> RemoveDead(const ir::Function& f) {
  Expected<ir::SeqExpr> body = RemoveDead(f->body);
  if (!body) return body.error();
  if (*body == f->body) return f;
  return ir::MakeFunction(f->params, *body, f->ret_struct_info, f->attrs, f->is_pure, f->is_private,
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
