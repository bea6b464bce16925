// The text form: TVM-style modules parse as written, print back equal (Parse() in test_util
// checks the round trip for every module), and bad text gets an error with line:column.
#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace quilt::ir {
namespace {

using quilt::testing::Parse;
using quilt::testing::ParseError;
using quilt::testing::SInfoOf;

TEST(Text, TvmStyleModuleWithAttrsKeywordsShadowingCallsAndTupleReturn) {
  IRModule mod = Parse(R"(
@I.ir_module
class Module:
    I.module_attrs({"system_lib_prefix": "lib_", "opt_level": 3})
    I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("cuda", 1), I.vdevice("opencl")]})

    @R.function(private=True)
    def helper(x: R.Tensor((2, 3), dtype="float32", vdevice="cuda")) -> R.Tensor((2, 3), dtype="float32", vdevice="cuda"):
        y = R.exp(x)
        return y

    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32", vdevice="cuda"), w: R.Tensor((3, 4), "float32")):
        R.func_attr({"global_symbol": "main", "num_input": 1})
        x = R.add(x, x)
        x = cls.helper(x)
        a = R.hint_on_device(x, tvm.cuda(1))
        b = R.hint_on_device(w, tvm.cpu())
        c = R.hint_on_device(w, tvm.opencl(0))
        t = (a, c)
        first = t[0]
        return (first, b)
)");
  EXPECT_EQ(*mod.attrs.Get<std::string>("system_lib_prefix"), "lib_");
  EXPECT_EQ(*mod.attrs.Get<int64_t>("opt_level"), 3);
  ASSERT_EQ(mod.vdevices.size(), 3u);
  EXPECT_EQ(mod.vdevices[1].vdevice_id, 1);
  Function main = mod.Lookup("main");
  EXPECT_EQ(*main->attrs.Get<std::string>("global_symbol"), "main");
  EXPECT_TRUE(mod.Lookup("helper")->is_private);
  // Shadowed x: the second binding reads the first.
  const auto& bindings = main->body->blocks[0].bindings;
  ASSERT_GE(bindings.size(), 2u);
  EXPECT_EQ(bindings[0].var->name_hint, "x");
  EXPECT_EQ(bindings[1].var->name_hint, "x");
  EXPECT_NE(bindings[0].var, bindings[1].var);
  const auto* call = As<CallNode>(bindings[1].value);
  ASSERT_TRUE(call);
  EXPECT_EQ(call->args[0], Expr(bindings[0].var));
  EXPECT_EQ(As<GlobalVarNode>(call->callee)->name, "helper");
  // hint_on_device keeps the physical device it names.
  const auto* hint = As<CallNode>(bindings[2].value);
  EXPECT_EQ(*hint->attrs.Get<std::string>("device_type"), "cuda");
  EXPECT_EQ(*hint->attrs.Get<int64_t>("index"), 1);
  // The tuple return.
  StructInfo ret = main->ret_struct_info;
  ASSERT_EQ(ret->kind, StructInfoKind::kTuple);
  EXPECT_EQ(ret->fields.size(), 2u);
  EXPECT_EQ(*ret->fields[0]->vdevice, mod.vdevices[1]);
}

TEST(Text, TupleAnnotationsAsListAndAliasBindings) {
  IRModule mod = Parse(R"(
@I.ir_module
class Module:
    I.module_attrs({"attr": 10})
    I.module_global_infos(
        {
            "vdevice": [
                I.vdevice("llvm"),
                I.vdevice("cuda", 0),
                I.vdevice("metal", 0, "global"),
            ]
        }
    )

    @R.function
    def pair(
        a: R.Tensor((4, 4), "float32"),
        b: R.Tensor((4, 4), "float32"),
    ) -> R.Tuple([R.Tensor((4, 4), "float32", "cuda"), R.Tensor((4, 4), "float32", "cuda")]):
        with R.dataflow():
            a1 = a
            b1 = b
            p = R.matmul(a1, b1)
            q: R.Tensor((4, 4), "float32", "cuda") = R.sigmoid(p)
            R.output(q)
        return (q, q)
)");
  StructInfo ret = mod.Lookup("pair")->ret_struct_info;
  ASSERT_EQ(ret->kind, StructInfoKind::kTuple);
  ASSERT_EQ(ret->fields.size(), 2u);
  EXPECT_EQ(*ret->fields[1]->vdevice, mod.vdevices[1]);
  EXPECT_EQ(mod.vdevices[2].memory_scope, "global");
  // An alias binding takes its value's struct info.
  EXPECT_EQ(SInfoOf(mod, "pair", "a1")->StaticShape(), (std::vector<int64_t>{4, 4}));
}

TEST(Text, ShadowedNamesPrintUniquely) {
  IRModule mod = Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), "float32")):
        x = R.add(x, x)
        x_1 = R.multiply(x, x)
        x = R.add(x_1, x)
        return x
)");
  std::string text = PrintModule(mod);
  EXPECT_NE(text.find("x_1: R.Tensor((2,), \"float32\") = R.add(x, x)"), std::string::npos) << text;
}

TEST(Text, SymbolicShapesAndDeclarations) {
  IRModule mod = Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor(("m", 4), "float32")) -> R.Tensor((n + m, 4), "float32"):
        n = T.int64()
        m = T.int64()
        z: R.Tensor((n + m, 4), "float32") = R.concat((x, y), axis=0)
        return z
)");
  StructInfo z = SInfoOf(mod, "main", "z");
  ASSERT_TRUE(z->shape);
  EXPECT_EQ(ToString((*z->shape)[0]), "n + m");
  // n in x's shape and n in z's shape are the same variable.
  StructInfo x = SInfoOf(mod, "main", "x");
  EXPECT_EQ((*x->shape)[0], (*z->shape)[0]->a);
}

TEST(Text, DataflowBlockOutputsAndInnerVariables) {
  IRModule mod = Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 2), "float32")):
        with R.dataflow():
            lv = R.nn.relu(x)
            gv = R.nn.softmax(lv, axis=0)
            R.output(gv)
        return gv
)");
  const BindingBlock& block = mod.Lookup("main")->body->blocks[0];
  EXPECT_TRUE(block.dataflow);
  EXPECT_TRUE(block.bindings[0].var->IsDataflow());
  EXPECT_FALSE(block.bindings[1].var->IsDataflow());
  EXPECT_EQ(*As<CallNode>(block.bindings[1].value)->attrs.Get<int64_t>("axis"), 0);
}

TEST(Text, ConstantsShapesPrimValuesAndIf) {
  IRModule mod = Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), flag: R.Tensor((), "bool")):
        c = R.const([[1.5, -2.0, 0.1], [3.0, 4.0, 1e-07]], "float32")
        i = R.const(7, "int64")
        h = R.const_bytes("003c0040", (2,), "float16")
        s = R.shape([3, 2])
        p = R.prim_value(5)
        r = R.reshape(x, s)
        r2 = R.reshape(x, (6,))
        q = R.permute_dims(x)
        if flag:
            a = R.add(x, c)
            y = R.multiply(a, a)
        else:
            y = R.subtract(x, c)
        return (y, r, r2, q, i, h, p)
)");
  StructInfo r = SInfoOf(mod, "main", "r");
  EXPECT_EQ(r->StaticShape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(SInfoOf(mod, "main", "q")->StaticShape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(SInfoOf(mod, "main", "y")->StaticShape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(SInfoOf(mod, "main", "h")->dtype, DataType::kFloat16);
}

TEST(Text, CommentsAndBlankLinesAreIgnored) {
  Parse(R"(# leading comment
@I.ir_module
class Module:   # trailing comment

    # a comment between members
    @R.function
    def f(x: R.Tensor((1,), "int32")):  # here too
        return x
)");
}

struct ErrorCase {
  const char* name;
  const char* text;
  const char* location;  // "LINE:COL"
  const char* message;   // a part of the message
};

constexpr char kHeader[] = R"(@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("cuda", 0)]})
)";

std::string WithHeader(const char* body) { return std::string(kHeader) + body; }

void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.name; }

class TextErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(TextErrorTest, SaysWhereAndWhat) {
  std::string error = ParseError(WithHeader(GetParam().text));
  EXPECT_EQ(error.rfind(GetParam().location, 0), 0u) << error;
  EXPECT_NE(error.find(GetParam().message), std::string::npos) << error;
}

const ErrorCase kErrors[] = {
    {"UnknownOp", R"(
    @R.function
    def f(x: R.Tensor((2,), "float32")):
        y = R.frobnicate(x)
        return y
)",
     "7:13", "unknown op R.frobnicate"},
    {"UnknownName", R"(
    @R.function
    def f(x: R.Tensor((2,), "float32")):
        y = R.add(x, z)
        return y
)",
     "7:22", "unknown name 'z'"},
    {"DeviceStringMatchesNothing", R"(
    @R.function
    def f(x: R.Tensor((2,), "float32", "opencl")):
        return x
)",
     "6:40", "device string \"opencl\" names no entry"},
    {"DeviceIndexOutOfList", R"(
    @R.function
    def f(x: R.Tensor((2,), "float32", "cuda:1")):
        return x
)",
     "6:40", "names no entry of the vdevice list"},
    {"VDeviceConflict", R"(
    @R.function
    def f(a: R.Tensor((2,), "float32", "llvm"), b: R.Tensor((2,), "float32", "cuda")):
        c = R.add(a, b)
        return c
)",
     "7:13",
     "R.add has arguments on different vdevices: `a` is on llvm (id 0, global) and `b` is on cuda "
     "(id 0, global)"},
    {"BroadcastMismatch", R"(
    @R.function
    def f(a: R.Tensor((2, 3), "float32"), b: R.Tensor((4, 3), "float32")):
        c = R.add(a, b)
        return c
)",
     "7:13", "cannot broadcast"},
    {"AnnotationContradictsInference", R"(
    @R.function
    def f(a: R.Tensor((2, 3), "float32")):
        c: R.Tensor((3, 2), "float32") = R.add(a, a)
        return c
)",
     "7:9", "'c': annotated shape (3, 2) but inferred shape (2, 3)"},
    {"WrongArgumentCount", R"(
    @R.function
    def f(a: R.Tensor((2, 3), "float32")):
        c = R.add(a)
        return c
)",
     "7:13", "R.add takes 2 argument(s) (x1, x2), got 1"},
    {"UnknownDtype", R"(
    @R.function
    def f(a: R.Tensor((2, 3), "float33")):
        return a
)",
     "6:31", "unknown dtype \"float33\""},
    {"NegativeDeviceId", R"(
    @R.function
    def f(a: R.Tensor((2, 3), "float32")):
        b = R.hint_on_device(a, tvm.cuda(-1))
        return b
)",
     "7:42", "device id -1 is negative"},
    {"UnclosedParenthesis", R"(
    @R.function
    def f(a: R.Tensor((2, 3), "float32"):
        return a
)",
     "6:10", "'(' was never closed"},
    {"MissingReturn", R"(
    @R.function
    def f(a: R.Tensor((2, 3), "float32")):
        b = R.exp(a)
)",
     "6:5", "no return statement"},
    {"OutputOutsideBlock", R"(
    @R.function
    def f(a: R.Tensor((2, 3), "float32")):
        with R.dataflow():
            b = R.exp(a)
            R.output(c)
        return b
)",
     "9:22", "R.output names 'c'"},
    // A symbol declared in a block is not one of its bindings (this crashed the parser).
    {"OutputNamesASymbol", R"(
    @R.function
    def f(a: R.Tensor((2, 3), "float32")):
        with R.dataflow():
            n = T.int64()
            R.output(n)
        return a
)",
     "9:22", "R.output names 'n', which the block does not bind"},
    // Only T.int64() and T.int32() declare symbols; another T.int... call is no declaration.
    {"CallStartingLikeASymbolDeclaration", R"(
    @R.function
    def f(a: R.Tensor((2, 3), "float32")):
        with R.dataflow():
            b = T.int64x.add(a, a)
            R.output(b)
        return b
)",
     "8:17", "unknown function T.int64x.add"},
    {"DataflowVarUsedOutside", R"(
    @R.function
    def f(a: R.Tensor((2, 3), "float32")):
        with R.dataflow():
            b = R.exp(a)
            c = R.exp(b)
            R.output(c)
        return b
)",
     "11:16", "unknown name 'b'"},
    {"UnknownCallee", R"(
    @R.function
    def f(a: R.Tensor((2, 3), "float32")):
        b = cls.g(a)
        return b
)",
     "7:13", "no function named 'g'"},
};

INSTANTIATE_TEST_SUITE_P(Errors, TextErrorTest, ::testing::ValuesIn(kErrors),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(TextErrors, BadTargetKindNamesTheKnownOnes) {
  std::string error = ParseError(R"(@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("gpu")]})
)");
  EXPECT_EQ(error.rfind("3:50:", 0), 0u) << error;
  EXPECT_NE(error.find("unknown target kind 'gpu'"), std::string::npos) << error;
  EXPECT_NE(error.find("known: llvm"), std::string::npos) << error;
}

TEST(TextErrors, SyntaxErrorsCarryFileLineAndColumn) {
  Expected<IRModule> mod = ParseModule("@I.ir_module\nclass Module:\n    def f(:\n", "m.qir");
  ASSERT_FALSE(mod);
  EXPECT_EQ(mod.error().location, "m.qir:3:10");
}

}  // namespace
}  // namespace quilt::ir
