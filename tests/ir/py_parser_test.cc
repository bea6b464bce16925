#include <gtest/gtest.h>

#include <string>

#include "ir/text/py_ast.h"

namespace quilt::ir::text {
namespace {

PyModule Parse(std::string_view source) {
  PyModule module;
  PyError error;
  EXPECT_TRUE(ParsePy(source, &module, &error)) << ToString(error);
  return module;
}

// "LINE:COL: message" of the error that parsing `source` must give.
std::string Error(std::string_view source) {
  PyModule module;
  PyError error;
  EXPECT_FALSE(ParsePy(source, &module, &error)) << source;
  return ToString(error);
}

// Parses a single expression statement and returns the expression.
PyExprPtr Expr(std::string_view source) {
  PyModule module = Parse(std::string(source) + "\n");
  if (module.body.size() != 1 || module.body[0]->kind != PyStmtKind::kExpr) {
    ADD_FAILURE() << "not a single expression statement: " << source;
    return nullptr;
  }
  return module.body[0]->value;
}

// ToString of one item / the base of an expression, for compact structural checks.
std::string Item(const PyExprPtr& e, size_t i) { return ToString(*e->items.at(i)); }

TEST(PyParserTest, FullModule) {
  constexpr std::string_view kSource = R"py(# comment
@I.ir_module
class Module:
    I.module_global_infos(
        {
            "vdevice": [
                R.VDevice("llvm"),
                R.VDevice("cuda", 0),
            ]
        }
    )

    @R.function
    def foo(
        a: R.Tensor((2, 3), "float32", "cuda"),
        b: R.Tensor((2, 3), dtype="float32", vdevice="cuda:0"),
    ) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            s1: R.Tensor((2, 3), "float32", "cuda") = R.add(a, b)
            s2 = R.hint_on_device(s1, tvm.cuda(0))
            R.output(s2)
        return s2
)py";
  PyModule module = Parse(kSource);
  ASSERT_EQ(module.body.size(), 1u);
  const PyStmt& cls = *module.body[0];
  EXPECT_EQ(cls.kind, PyStmtKind::kClassDef);
  EXPECT_EQ(cls.name, "Module");
  EXPECT_EQ(cls.loc.line, 3);
  EXPECT_EQ(cls.loc.col, 1);
  EXPECT_TRUE(cls.bases.empty());
  ASSERT_EQ(cls.decorators.size(), 1u);
  EXPECT_EQ(cls.decorators[0]->kind, PyExprKind::kAttr);
  EXPECT_EQ(cls.decorators[0]->name, "ir_module");
  EXPECT_EQ(cls.decorators[0]->base->name, "I");
  ASSERT_EQ(cls.body.size(), 2u);

  // I.module_global_infos({...})
  const PyStmt& infos = *cls.body[0];
  ASSERT_EQ(infos.kind, PyStmtKind::kExpr);
  EXPECT_EQ(infos.loc.line, 4);
  EXPECT_EQ(infos.loc.col, 5);
  const PyExpr& call = *infos.value;
  ASSERT_EQ(call.kind, PyExprKind::kCall);
  EXPECT_EQ(ToString(*call.base), "I.module_global_infos");
  ASSERT_EQ(call.items.size(), 1u);
  const PyExpr& dict = *call.items[0];
  ASSERT_EQ(dict.kind, PyExprKind::kDict);
  ASSERT_EQ(dict.items.size(), 2u);
  EXPECT_EQ(dict.items[0]->kind, PyExprKind::kString);
  EXPECT_EQ(dict.items[0]->name, "vdevice");
  EXPECT_EQ(dict.items[0]->loc.line, 6);
  EXPECT_EQ(dict.items[0]->loc.col, 13);
  const PyExpr& list = *dict.items[1];
  ASSERT_EQ(list.kind, PyExprKind::kList);
  ASSERT_EQ(list.items.size(), 2u);
  EXPECT_EQ(ToString(*list.items[0]), "R.VDevice(\"llvm\")");
  EXPECT_EQ(ToString(*list.items[1]), "R.VDevice(\"cuda\", 0)");
  EXPECT_EQ(list.items[1]->items[1]->kind, PyExprKind::kInt);
  EXPECT_EQ(list.items[1]->items[1]->int_value, 0);

  // def foo(...)
  const PyStmt& fn = *cls.body[1];
  ASSERT_EQ(fn.kind, PyStmtKind::kFunctionDef);
  EXPECT_EQ(fn.name, "foo");
  EXPECT_EQ(fn.loc.line, 14);
  EXPECT_EQ(fn.loc.col, 5);
  ASSERT_EQ(fn.decorators.size(), 1u);
  EXPECT_EQ(ToString(*fn.decorators[0]), "R.function");
  ASSERT_EQ(fn.params.size(), 2u);
  EXPECT_EQ(fn.params[0].name, "a");
  EXPECT_EQ(fn.params[0].loc.line, 15);
  EXPECT_EQ(fn.params[0].loc.col, 9);
  EXPECT_EQ(fn.params[0].default_value, nullptr);
  const PyExpr& ann_a = *fn.params[0].annotation;
  ASSERT_EQ(ann_a.kind, PyExprKind::kCall);
  ASSERT_EQ(ann_a.items.size(), 3u);
  EXPECT_EQ(ann_a.items[0]->kind, PyExprKind::kTuple);
  EXPECT_EQ(Item(fn.params[0].annotation, 0), "(2, 3)");
  EXPECT_EQ(ann_a.items[2]->name, "cuda");
  EXPECT_EQ(fn.params[1].name, "b");
  const PyExpr& ann_b = *fn.params[1].annotation;
  ASSERT_EQ(ann_b.items.size(), 1u);
  ASSERT_EQ(ann_b.keywords.size(), 2u);
  EXPECT_EQ(ann_b.keywords[0].name, "dtype");
  EXPECT_EQ(ann_b.keywords[0].value->name, "float32");
  EXPECT_EQ(ann_b.keywords[1].name, "vdevice");
  EXPECT_EQ(ann_b.keywords[1].value->name, "cuda:0");
  EXPECT_EQ(ann_b.keywords[1].loc.line, 16);
  EXPECT_EQ(ann_b.keywords[1].loc.col, 46);
  ASSERT_NE(fn.returns, nullptr);
  EXPECT_EQ(ToString(*fn.returns), "R.Tensor((2, 3), \"float32\")");
  ASSERT_EQ(fn.body.size(), 2u);

  // with R.dataflow(): ...
  const PyStmt& with = *fn.body[0];
  ASSERT_EQ(with.kind, PyStmtKind::kWith);
  EXPECT_EQ(with.loc.line, 18);
  EXPECT_EQ(ToString(*with.value), "R.dataflow()");
  EXPECT_TRUE(with.targets.empty());
  ASSERT_EQ(with.body.size(), 3u);
  const PyStmt& s1 = *with.body[0];
  ASSERT_EQ(s1.kind, PyStmtKind::kAssign);
  EXPECT_EQ(s1.loc.line, 19);
  EXPECT_EQ(s1.loc.col, 13);
  ASSERT_EQ(s1.targets.size(), 1u);
  EXPECT_EQ(s1.targets[0]->name, "s1");
  ASSERT_NE(s1.annotation, nullptr);
  EXPECT_EQ(ToString(*s1.annotation), "R.Tensor((2, 3), \"float32\", \"cuda\")");
  EXPECT_EQ(ToString(*s1.value), "R.add(a, b)");
  const PyStmt& s2 = *with.body[1];
  ASSERT_EQ(s2.kind, PyStmtKind::kAssign);
  EXPECT_EQ(s2.annotation, nullptr);
  EXPECT_EQ(ToString(*s2.value), "R.hint_on_device(s1, tvm.cuda(0))");
  EXPECT_EQ(with.body[2]->kind, PyStmtKind::kExpr);
  EXPECT_EQ(ToString(*with.body[2]->value), "R.output(s2)");

  const PyStmt& ret = *fn.body[1];
  ASSERT_EQ(ret.kind, PyStmtKind::kReturn);
  EXPECT_EQ(ret.loc.line, 22);
  EXPECT_EQ(ret.loc.col, 9);
  EXPECT_EQ(ret.value->name, "s2");
}

TEST(PyParserTest, RelaxSnippets) {
  constexpr std::string_view kSource = R"py(# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function(private=True)
    def main(x: R.Tensor(("n", 784), dtype="float32"), w: R.Tensor((784, 128), dtype="float32")) -> R.Tuple(R.Tensor(("n", 128), dtype="float32"), R.Shape([1])):
        n = T.int64()
        R.func_attr({"num_input": 1, "relax.force_pure": True})
        with R.dataflow():
            lv: R.Tensor((n, 128), dtype="float32") = R.matmul(x, w, out_dtype="void")
            lv1 = R.nn.relu(lv)
            c = R.const(1.5, "float32")
            k = metadata["relax.expr.Constant"][0]
            p = R.prim_value(T.int64(-1))
            s = R.reshape(lv1, R.shape([n * 2 // 2, 128]))
            gv: R.Tuple(R.Tensor((n, 128), dtype="float32"), R.Shape([1])) = s, R.shape([1])
            R.output(gv)
        return gv
)py";
  PyModule m = Parse(kSource);
  ASSERT_EQ(m.body.size(), 1u);
  const PyStmt& fn = *m.body[0]->body.at(0);
  EXPECT_EQ(ToString(*fn.decorators.at(0)), "R.function(private=True)");
  EXPECT_EQ(ToString(*fn.returns),
            "R.Tuple(R.Tensor((\"n\", 128), dtype=\"float32\"), R.Shape([1]))");
  const PyStmt& with = *fn.body.at(2);
  ASSERT_EQ(with.body.size(), 8u);
  EXPECT_EQ(ToString(*with.body[3]->value), "metadata[\"relax.expr.Constant\"][0]");
  EXPECT_EQ(ToString(*with.body[4]->value), "R.prim_value(T.int64(-1))");
  EXPECT_EQ(ToString(*with.body[5]->value), "R.reshape(lv1, R.shape([n * 2 // 2, 128]))");
  EXPECT_EQ(with.body[6]->value->kind, PyExprKind::kTuple);
}

TEST(PyParserTest, Precedence) {
  PyExprPtr e = Expr("n * 2 + m // 4");
  ASSERT_EQ(e->kind, PyExprKind::kBinOp);
  EXPECT_EQ(e->name, "+");
  EXPECT_EQ(e->items[0]->name, "*");
  EXPECT_EQ(e->items[0]->items[0]->name, "n");
  EXPECT_EQ(e->items[0]->items[1]->int_value, 2);
  EXPECT_EQ(e->items[1]->name, "//");
  EXPECT_EQ(e->items[1]->items[0]->name, "m");
  EXPECT_EQ(ToString(*e), "n * 2 + m // 4");

  e = Expr("-x ** 2");
  ASSERT_EQ(e->kind, PyExprKind::kUnaryOp);
  EXPECT_EQ(e->name, "-");
  EXPECT_EQ(e->items[0]->kind, PyExprKind::kBinOp);
  EXPECT_EQ(e->items[0]->name, "**");
  EXPECT_EQ(ToString(*e), "-x ** 2");

  e = Expr("a ** b ** c");  // right-associative
  EXPECT_EQ(e->items[0]->name, "a");
  EXPECT_EQ(e->items[1]->name, "**");
  e = Expr("2 ** -1");
  EXPECT_EQ(e->items[1]->kind, PyExprKind::kUnaryOp);
  e = Expr("a - b - c");  // left-associative
  EXPECT_EQ(e->items[0]->name, "-");
  EXPECT_EQ(e->items[1]->name, "c");

  e = Expr("a or b and not c == d");
  EXPECT_EQ(e->name, "or");
  EXPECT_EQ(e->items[1]->name, "and");
  EXPECT_EQ(e->items[1]->items[1]->name, "not");
  EXPECT_EQ(e->items[1]->items[1]->items[0]->name, "==");

  e = Expr("x @ w + b < y % 3");
  EXPECT_EQ(e->name, "<");
  EXPECT_EQ(e->items[0]->name, "+");
  EXPECT_EQ(e->items[0]->items[0]->name, "@");
  EXPECT_EQ(e->items[1]->name, "%");

  EXPECT_EQ(ToString(*Expr("(a + b) * c")), "(a + b) * c");
  EXPECT_EQ(ToString(*Expr("a - (b - c)")), "a - (b - c)");
  EXPECT_EQ(ToString(*Expr("(-x) ** 2")), "(-x) ** 2");
  EXPECT_EQ(ToString(*Expr("(a ** b) ** c")), "(a ** b) ** c");
  EXPECT_EQ(ToString(*Expr("not (a or b)")), "not (a or b)");
  EXPECT_EQ(ToString(*Expr("a & b | c ^ d << 1")), "a & b | c ^ d << 1");
  EXPECT_EQ(ToString(*Expr("(a < b) == c")), "(a < b) == c");
}

TEST(PyParserTest, TupleForms) {
  PyExprPtr e = Expr("(a)");
  EXPECT_EQ(e->kind, PyExprKind::kName);
  EXPECT_EQ(e->loc.col, 2);
  e = Expr("()");
  EXPECT_EQ(e->kind, PyExprKind::kTuple);
  EXPECT_TRUE(e->items.empty());
  e = Expr("(a,)");
  ASSERT_EQ(e->kind, PyExprKind::kTuple);
  EXPECT_EQ(e->items.size(), 1u);
  EXPECT_EQ(ToString(*e), "(a,)");
  e = Expr("(a, b,)");
  ASSERT_EQ(e->kind, PyExprKind::kTuple);
  EXPECT_EQ(e->items.size(), 2u);
  EXPECT_EQ(ToString(*e), "(a, b)");
  e = Expr("((1, 2), [3], {}, [], {'k': (4,),})");
  ASSERT_EQ(e->items.size(), 5u);
  EXPECT_EQ(ToString(*e), "((1, 2), [3], {}, [], {\"k\": (4,)})");

  PyModule m = Parse("a, b = f(x)\nc = 1, 2,\nreturn a, b\nreturn\n(p, q), r = v\nx = y = z\n");
  ASSERT_EQ(m.body.size(), 6u);
  ASSERT_EQ(m.body[0]->targets.size(), 1u);
  EXPECT_EQ(m.body[0]->targets[0]->kind, PyExprKind::kTuple);
  EXPECT_EQ(ToString(*m.body[0]->targets[0]), "(a, b)");
  EXPECT_EQ(ToString(*m.body[1]->value), "(1, 2)");
  EXPECT_EQ(m.body[2]->kind, PyStmtKind::kReturn);
  EXPECT_EQ(ToString(*m.body[2]->value), "(a, b)");
  EXPECT_EQ(m.body[3]->kind, PyStmtKind::kReturn);
  EXPECT_EQ(m.body[3]->value, nullptr);
  EXPECT_EQ(ToString(*m.body[4]->targets[0]), "((p, q), r)");
  ASSERT_EQ(m.body[5]->targets.size(), 2u);
  EXPECT_EQ(m.body[5]->targets[0]->name, "x");
  EXPECT_EQ(m.body[5]->targets[1]->name, "y");
  EXPECT_EQ(m.body[5]->value->name, "z");
}

TEST(PyParserTest, Subscript) {
  PyExprPtr e = Expr("x[0]");
  ASSERT_EQ(e->kind, PyExprKind::kSubscript);
  EXPECT_EQ(e->base->name, "x");
  EXPECT_EQ(e->items[0]->int_value, 0);
  e = Expr("lv[-1].shape[0]");
  ASSERT_EQ(e->kind, PyExprKind::kSubscript);
  EXPECT_EQ(e->base->kind, PyExprKind::kAttr);
  EXPECT_EQ(e->base->base->kind, PyExprKind::kSubscript);
  EXPECT_EQ(e->base->base->items[0]->kind, PyExprKind::kUnaryOp);
  EXPECT_EQ(ToString(*e), "lv[-1].shape[0]");
  e = Expr("A[i, j + 1]");
  EXPECT_EQ(e->items[0]->kind, PyExprKind::kTuple);
  EXPECT_EQ(ToString(*e), "A[i, j + 1]");
  PyModule m = Parse("x[0] = 1\n");
  EXPECT_EQ(m.body[0]->targets[0]->kind, PyExprKind::kSubscript);
}

TEST(PyParserTest, Strings) {
  PyExprPtr e = Expr(R"("a\nb\t\\\'\"\x41" 'c"d' "")");
  ASSERT_EQ(e->kind, PyExprKind::kString);
  EXPECT_EQ(e->name, "a\nb\t\\'\"Ac\"d");
  EXPECT_EQ(ToString(*e), R"("a\nb\t\\'\"Ac\"d")");
  EXPECT_EQ(Expr(R"('\u00e9\0\q')")->name, "\xC3\xA9" + std::string(1, '\0') + "\\q");
  EXPECT_EQ(Expr("'''multi\nline'''")->name, "multi\nline");
  EXPECT_EQ(Expr("'# not a comment'")->name, "# not a comment");
}

TEST(PyParserTest, Numbers) {
  PyExprPtr e = Expr("0x_FF");
  EXPECT_EQ(e->kind, PyExprKind::kInt);
  EXPECT_EQ(e->int_value, 255);
  EXPECT_EQ(e->text, "0x_FF");
  EXPECT_EQ(Expr("1_000_000")->int_value, 1000000);
  EXPECT_EQ(Expr("9223372036854775807")->int_value, INT64_MAX);
  e = Expr("1e-5");
  EXPECT_EQ(e->kind, PyExprKind::kFloat);
  EXPECT_DOUBLE_EQ(e->float_value, 1e-5);
  EXPECT_EQ(e->text, "1e-5");
  EXPECT_DOUBLE_EQ(Expr(".5")->float_value, 0.5);
  EXPECT_DOUBLE_EQ(Expr("2.")->float_value, 2.0);
  EXPECT_DOUBLE_EQ(Expr("1.5E+3")->float_value, 1500.0);
  EXPECT_EQ(Expr("inf")->kind, PyExprKind::kName);
  e = Expr("[True, False, None]");
  EXPECT_EQ(e->items[0]->kind, PyExprKind::kBool);
  EXPECT_EQ(e->items[0]->int_value, 1);
  EXPECT_EQ(e->items[1]->int_value, 0);
  EXPECT_EQ(e->items[2]->kind, PyExprKind::kNone);
  EXPECT_EQ(ToString(*e), "[True, False, None]");
  EXPECT_EQ(ToString(*Expr("(1).real")), "(1).real");
}

TEST(PyParserTest, IfElifElse) {
  PyModule m = Parse(
      "if a:\n"
      "    x = 1\n"
      "elif b:\n"
      "    x = 2\n"
      "elif c:\n"
      "    pass\n"
      "else:\n"
      "    x = 3\n"
      "    y = 4\n"
      "z = x\n");
  ASSERT_EQ(m.body.size(), 2u);
  const PyStmt& s = *m.body[0];
  ASSERT_EQ(s.kind, PyStmtKind::kIf);
  EXPECT_EQ(s.value->name, "a");
  ASSERT_EQ(s.body.size(), 1u);
  ASSERT_EQ(s.orelse.size(), 1u);
  const PyStmt& elif1 = *s.orelse[0];
  ASSERT_EQ(elif1.kind, PyStmtKind::kIf);
  EXPECT_EQ(elif1.loc.line, 3);
  EXPECT_EQ(elif1.value->name, "b");
  ASSERT_EQ(elif1.orelse.size(), 1u);
  const PyStmt& elif2 = *elif1.orelse[0];
  EXPECT_EQ(elif2.value->name, "c");
  EXPECT_EQ(elif2.body[0]->kind, PyStmtKind::kPass);
  ASSERT_EQ(elif2.orelse.size(), 2u);
  EXPECT_EQ(ToString(*elif2.orelse[1]->value), "4");
  EXPECT_EQ(m.body[1]->kind, PyStmtKind::kAssign);

  m = Parse("if a:\n    pass\n");
  EXPECT_TRUE(m.body[0]->orelse.empty());
}

TEST(PyParserTest, LayoutAndOneLiners) {
  PyModule m = Parse(
      "\xEF\xBB\xBF"
      "x = f(a,  # comment inside parens\n"
      "\n"
      "      b) + \\\n"
      "    c\r\n"
      "   \n"
      "def g(): return x; pass\n"
      "class C(Base, other.Base,): pass\n"
      "with T.block('b') as (i, j): x = 1\n"
      "if x: y = 1\n"
      "else: y = 2\n"
      "def h(p=1, q: int = 2,): return p\n"
      "# trailing comment without newline");
  ASSERT_EQ(m.body.size(), 6u);
  EXPECT_EQ(ToString(*m.body[0]->value), "f(a, b) + c");
  const PyStmt& g = *m.body[1];
  ASSERT_EQ(g.kind, PyStmtKind::kFunctionDef);
  ASSERT_EQ(g.body.size(), 2u);
  EXPECT_EQ(g.body[1]->kind, PyStmtKind::kPass);
  EXPECT_EQ(g.returns, nullptr);
  ASSERT_EQ(m.body[2]->bases.size(), 2u);
  EXPECT_EQ(ToString(*m.body[2]->bases[1]), "other.Base");
  ASSERT_EQ(m.body[3]->targets.size(), 1u);
  EXPECT_EQ(ToString(*m.body[3]->targets[0]), "(i, j)");
  EXPECT_EQ(m.body[4]->orelse.size(), 1u);
  const PyStmt& h = *m.body[5];
  ASSERT_EQ(h.params.size(), 2u);
  EXPECT_EQ(h.params[0].annotation, nullptr);
  EXPECT_EQ(h.params[0].default_value->int_value, 1);
  EXPECT_EQ(h.params[1].annotation->name, "int");

  EXPECT_TRUE(Parse("").body.empty());
  EXPECT_TRUE(Parse("# only a comment\n\n").body.empty());
}

TEST(PyParserTest, NestedBlocksDedentToOuterLevels) {
  PyModule m = Parse(
      "class A:\n"
      "  def f():\n"
      "      if x:\n"
      "          return 1\n"
      "  def g():\n"
      "      pass\n"
      "b = 2\n");
  ASSERT_EQ(m.body.size(), 2u);
  ASSERT_EQ(m.body[0]->body.size(), 2u);
  EXPECT_EQ(m.body[0]->body[1]->name, "g");
}

TEST(PyParserTest, ErrorUnclosedParen) {
  EXPECT_EQ(Error("x = f(a,\ny = 2\n"), "1:6: '(' was never closed");
  EXPECT_EQ(Error("x = [1, (2\n"), "1:9: '(' was never closed");
  EXPECT_EQ(Error("x = f(a b)\n"), "1:9: expected ')' or ',' but found 'b'");
}

TEST(PyParserTest, ErrorIndentation) {
  EXPECT_EQ(Error("if x:\n    a = 1\n  b = 2\n"),
            "3:3: unindent does not match any outer indentation level");
  EXPECT_EQ(Error("a = 1\n    b = 2\n"), "2:5: unexpected indent");
  EXPECT_EQ(Error("if x:\n\ta = 1\n"), "2:1: tab character in indentation is not supported");
  EXPECT_EQ(Error("def f():\nreturn 1\n"),
            "2:1: expected an indented block after function definition on line 1");
  EXPECT_EQ(Error("with a:\n"), "2:1: expected an indented block after 'with' statement on line 1");
}

TEST(PyParserTest, ErrorUnterminatedString) {
  EXPECT_EQ(Error("x = 1\ny = f(\"abc)\nz = 2\n"), "2:7: unterminated string");
  EXPECT_EQ(Error("x = 'abc"), "1:5: unterminated string");
  EXPECT_EQ(Error("x = '\\xZ1'"), "1:6: invalid \\x escape");
}

TEST(PyParserTest, ErrorMissingColon) {
  EXPECT_EQ(Error("def f(x)\n    return x\n"),
            "1:9: expected ':' after function signature but found 'NEWLINE'");
  EXPECT_EQ(Error("def f(x) -> R.Tensor  # c\n    return x\n"),
            "1:21: expected ':' after function signature but found 'NEWLINE'");
  EXPECT_EQ(Error("if x\n    pass\n"),
            "1:5: expected ':' after 'if' condition but found 'NEWLINE'");
  EXPECT_EQ(Error("class A\n    pass\n"),
            "1:8: expected ':' after class header but found 'NEWLINE'");
  EXPECT_EQ(Error("with R.dataflow() as\n"), "1:21: expected expression but found 'NEWLINE'");
}

TEST(PyParserTest, ErrorStrayToken) {
  EXPECT_EQ(Error("x = f(a))\n"), "1:9: unexpected token ')'");
  EXPECT_EQ(Error("x = 1 2\n"), "1:7: unexpected token '2'");
  EXPECT_EQ(Error("x = )\n"), "1:5: expected expression but found ')'");
  EXPECT_EQ(Error("x = $\n"), "1:5: unexpected character '$'");
}

TEST(PyParserTest, ErrorOther) {
  EXPECT_EQ(Error("f(k=1, 2)\n"), "1:8: positional argument follows keyword argument");
  EXPECT_EQ(Error("f(x) = 1\n"), "1:1: cannot assign to expression 'f(x)'");
  EXPECT_EQ(Error("a < b < c\n"), "1:7: chained comparisons are not supported");
  EXPECT_EQ(Error("x += 1\n"), "1:3: augmented assignment '+=' is not supported");
  EXPECT_EQ(Error("x: int\n"), "1:7: expected '=' after annotation but found 'NEWLINE'");
  EXPECT_EQ(Error("for i in x:\n    pass\n"), "1:1: 'for' statements are not supported");
  EXPECT_EQ(Error("@R.function\nx = 1\n"),
            "2:1: expected 'def' or 'class' after decorator but found 'x'");
  EXPECT_EQ(Error("else:\n    pass\n"), "1:1: 'else' without matching 'if'");
  EXPECT_EQ(Error("def f(a=1, b):\n    pass\n"),
            "1:12: parameter without a default follows parameter with a default");
  EXPECT_EQ(Error("x = {1, 2}\n"), "1:7: expected ':' after dict key but found ','");
  EXPECT_EQ(Error("x = 1abc\n"), "1:5: invalid decimal literal");
  EXPECT_EQ(Error("x = 99999999999999999999\n"), "1:5: integer literal is too large");
  EXPECT_EQ(Error(std::string(300, '(') + std::string(300, ')')),
            "1:201: expression is nested too deeply");
}

TEST(PyParserTest, FirstErrorOnly) {
  // The parse error on line 1 comes before the lexical error on line 2.
  EXPECT_EQ(Error("x = = 1\ny = 'abc\n"), "1:5: expected expression but found '='");
  PyModule untouched;
  untouched.body.push_back(nullptr);
  EXPECT_FALSE(ParsePy("x = (", &untouched, nullptr));
  EXPECT_EQ(untouched.body.size(), 1u);
}

}  // namespace
}  // namespace quilt::ir::text
