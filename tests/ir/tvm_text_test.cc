// The text form as Apache TVM 0.27 prints and reads it: canonical target dicts, device strings
// with a memory scope, R.device / R.cuda devices, `cls = Module`, @I.ir_module(...) with
// arguments, a lone @R.function, out_dtype=None. The texts marked "as TVM prints it" are TVM's
// own output (`mod.script()`), kept verbatim. tests/tvm/tvm_roundtrip.py checks the same against
// TVM itself where it is installed.
#include <gtest/gtest.h>

#include "ir/builder.h"
#include "ir/verifier.h"
#include "tests/test_util.h"

namespace quilt::ir {
namespace {

using quilt::testing::Parse;
using quilt::testing::ParseError;
using quilt::testing::SInfoOf;

// As TVM 0.27 prints it.
constexpr char kTvmPrinted[] = R"(# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice({"keys": ["cpu"], "kind": "llvm", "mtriple": "x86_64-conda-linux-gnu", "tag": ""}, 0, "global"), I.vdevice({"arch": "sm_50", "keys": ["cuda", "gpu"], "kind": "cuda", "max_num_threads": 1024, "tag": "", "thread_warp_size": 32}, 0, "global"), I.vdevice({"arch": "sm_50", "keys": ["cuda", "gpu"], "kind": "cuda", "max_num_threads": 1024, "tag": "", "thread_warp_size": 32}, 1, "global.texture"), I.vdevice({"arch": "sm_80", "keys": ["cuda", "gpu"], "kind": "cuda", "max_num_threads": 1024, "tag": "", "thread_warp_size": 32}, 0, "global")]})
    @R.function
    def g(x: R.Tensor((2, 3), dtype="float32", vdevice="cuda:1:global.texture")) -> R.Tensor((2, 3), dtype="float32", vdevice="cuda:0:global"):
        cls = Module
        r: R.Tensor((2, 3), dtype="float32", vdevice="cuda:0:global") = cls.main(x, x)
        return r

    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32", vdevice="cuda:1:global.texture"), y: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32", vdevice="cuda:0:global"):
        with R.dataflow():
            a: R.Tensor((2, 3), dtype="float32", vdevice="cuda:1:global.texture") = R.add(x, x)
            b: R.Tensor((2, 3), dtype="float32") = R.hint_on_device(y, R.device(device_type=2, index=0), "global")
            c: R.Tensor((2, 3), dtype="float32", vdevice="cuda:0:global") = R.to_vdevice(a, dst_vdevice="cuda:0:global")
            d: R.Tensor((2, 3), dtype="float32") = R.hint_on_device(y, R.device(device_type=2, index=1), "global.texture")
            e: R.Tensor((2, 3), dtype="float16", vdevice="cuda:0:global") = R.astype(c, dtype="float16")
            lv: R.Tensor((3, 2), dtype="float32") = R.permute_dims(y, axes=None)
            f: R.Tensor((2, 2), dtype="float32") = R.matmul(y, lv, out_dtype=None)
            R.output(b, c, d)
        return c
)";

TEST(TvmText, ModuleAsTvmPrintsIt) {
  IRModule mod = Parse(kTvmPrinted);
  ASSERT_EQ(mod.vdevices.size(), 4u);
  // Target dict values keep their types.
  const Target& cpu = mod.vdevices[0].target;
  EXPECT_EQ(cpu.kind, "llvm");
  EXPECT_EQ(std::get<std::vector<std::string>>(cpu.attrs.at("keys")),
            (std::vector<std::string>{"cpu"}));
  EXPECT_EQ(std::get<std::string>(cpu.attrs.at("tag")), "");
  EXPECT_EQ(std::get<int64_t>(mod.vdevices[1].target.attrs.at("max_num_threads")), 1024);
  EXPECT_EQ(mod.vdevices[2].memory_scope, "global.texture");
  EXPECT_EQ(mod.vdevices[3].target.Attr("arch"), "sm_80");
  // "cuda:1:global.texture" is the second cuda entry; "cuda:0:global" the first.
  EXPECT_EQ(*SInfoOf(mod, "main", "x")->vdevice, mod.vdevices[2]);
  EXPECT_EQ(*SInfoOf(mod, "main", "c")->vdevice, mod.vdevices[1]);
  // R.device(device_type=2, index=1) is CUDA device 1 (DLPack's code 2), with its scope.
  const auto& bindings = mod.Lookup("main")->body->blocks[0].bindings;
  const auto* d = As<CallNode>(bindings[3].value);
  ASSERT_TRUE(d);
  EXPECT_EQ(*d->attrs.Get<std::string>("device_type"), "cuda");
  EXPECT_EQ(*d->attrs.Get<int64_t>("index"), 1);
  EXPECT_EQ(*d->attrs.Get<std::string>("memory_scope"), "global.texture");
  // out_dtype=None is the unset dtype.
  const auto* f = As<CallNode>(bindings[6].value);
  ASSERT_TRUE(f);
  EXPECT_EQ(*f->attrs.Get<DataType>("out_dtype"), DataType::kVoid);
  EXPECT_EQ(SInfoOf(mod, "main", "f")->dtype, DataType::kFloat32);
}

TEST(TvmText, PrintedAsTvmReadsIt) {
  std::string text = PrintModule(Parse(kTvmPrinted));
  // A function that calls another names the module first; one that calls none does not.
  size_t g = text.find("def g(");
  size_t main = text.find("def main(");
  ASSERT_NE(g, std::string::npos);
  ASSERT_NE(main, std::string::npos);
  size_t cls = text.find("        cls = Module\n");
  EXPECT_TRUE(cls > g && cls < main) << text;
  EXPECT_EQ(text.find("cls = Module", main), std::string::npos) << text;
  // Devices as TVM's parser takes them; the default scope is left out, another one written.
  EXPECT_NE(text.find("R.hint_on_device(y, R.cuda(0))"), std::string::npos) << text;
  EXPECT_NE(text.find("R.hint_on_device(y, R.cuda(1), \"global.texture\")"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\"keys\": [\"cuda\", \"gpu\"], \"max_num_threads\": 1024"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("I.vdevice({\"kind\": \"cuda\", \"arch\": \"sm_50\""), std::string::npos)
      << text;
}

TEST(TvmText, HintScopeIsPartOfEquality) {
  IRModule a = Parse(kTvmPrinted);
  std::string other = kTvmPrinted;
  const std::string scoped = "index=1), \"global.texture\")";
  other.replace(other.find(scoped), scoped.size(), "index=1), \"global\")");
  IRModule b = Parse(other);
  EXPECT_FALSE(StructuralEqual(a, b));
  EXPECT_NE(StructuralHash(a), StructuralHash(b));
}

TEST(TvmText, LoneFunctionIsAModuleOfOneFunction) {
  // As TVM prints a relax.Function by itself.
  IRModule mod = Parse(R"(# from tvm.script import relax as R

@R.function
def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
    y: R.Tensor((2, 3), dtype="float32") = R.add(x, x)
    return y
)");
  ASSERT_EQ(mod.functions.size(), 1u);
  EXPECT_EQ(mod.functions[0].first, "main");
  EXPECT_TRUE(mod.vdevices.empty());
}

TEST(TvmText, EveryDeviceFormOfAHint) {
  const std::pair<const char*, const char*> kForms[] = {
      {"R.cpu()", "cpu:0"},
      {"R.cuda(1)", "cuda:1"},
      {"R.opencl(0)", "opencl:0"},
      {"R.device(4, 0)", "opencl:0"},
      {"R.device(device_type=2, index=1)", "cuda:1"},
      {"R.device(\"cuda\", 1)", "cuda:1"},
      {"tvm.cuda(1)", "cuda:1"},
      {"tvm.device(\"cuda\", 1)", "cuda:1"},
      {"\"cuda\"", "cuda:0"},
      {"\"cuda:1\"", "cuda:1"},
  };
  for (const auto& [form, want] : kForms) {
    IRModule mod = Parse(std::string(R"(@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("cuda", 0), I.vdevice("cuda", 1), I.vdevice("opencl", 0)]})
    @R.function
    def main(x: R.Tensor((2,), "float32")):
        y = R.hint_on_device(x, )") +
                         form + R"()
        return y
)");
    ASSERT_FALSE(mod.functions.empty()) << form;
    const auto* hint = As<CallNode>(mod.functions[0].second->body->blocks[0].bindings[0].value);
    ASSERT_TRUE(hint) << form;
    EXPECT_EQ(*hint->attrs.Get<std::string>("device_type") + ":" +
                  std::to_string(*hint->attrs.Get<int64_t>("index")),
              want)
        << form;
  }
}

struct TvmError {
  const char* name;
  const char* text;
  const char* location;
  const char* message;
};

void PrintTo(const TvmError& c, std::ostream* os) { *os << c.name; }

class TvmTextErrorTest : public ::testing::TestWithParam<TvmError> {};

TEST_P(TvmTextErrorTest, SaysWhereAndWhat) {
  std::string error = ParseError(GetParam().text);
  EXPECT_EQ(error.rfind(GetParam().location, 0), 0u) << error;
  EXPECT_NE(error.find(GetParam().message), std::string::npos) << error;
}

const TvmError kTvmErrors[] = {
    {"ScopeOfTheEntryDiffers", R"(@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("cuda", 0), I.vdevice("cuda", 0, "global.texture")]})
    @R.function
    def f(x: R.Tensor((2,), "float32", "cuda:0:global.texture")):
        return x
)",
     "5:40",
     "device string \"cuda:0:global.texture\" names entry 1 (cuda (id 0, global)), whose memory "
     "scope is \"global\""},
    {"UnknownDLPackCode", R"(@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm")]})
    @R.function
    def f(x: R.Tensor((2,), "float32")):
        y = R.hint_on_device(x, R.device(3, 0))
        return y
)",
     "6:42", "unknown device type 3 (DLPack codes: 1 cpu, 2 cuda"},
    {"UnknownDeviceString", R"(@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm")]})
    @R.function
    def f(x: R.Tensor((2,), "float32")):
        y = R.hint_on_device(x, "gpu:0")
        return y
)",
     "6:33", "unknown device type 'gpu'"},
    {"ClsNamesAnotherClass", R"(@I.ir_module
class Module:
    @R.function
    def f(x: R.Tensor((2,), "float32")):
        cls = Other
        return x
)",
     "5:15", "`cls = Other`: the module is 'Module'"},
    {"UnknownIrModuleArgument", R"(@I.ir_module(strict=True)
class Module:
    @R.function
    def f(x: R.Tensor((2,), "float32")):
        return x
)",
     "1:14", "@I.ir_module: unknown argument 'strict'"},
    {"TwoLoneFunctions", R"(@R.function
def f(x: R.Tensor((2,), "float32")):
    return x

@R.function
def g(x: R.Tensor((2,), "float32")):
    return x
)",
     "6:1", "one @I.ir_module class or one @R.function"},
    {"TargetDictValue", R"(@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice({"kind": "cuda", "arch": 8.0})]})
)",
     "3:75", "target attribute \"arch\": expected a string, an integer"},
};

INSTANTIATE_TEST_SUITE_P(Errors, TvmTextErrorTest, ::testing::ValuesIn(kTvmErrors),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(TvmText, PackedCallsPrimFuncsAndCallTir) {
  IRModule mod = Parse(R"(@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add(A: T.Buffer((T.int64(4),), "float32"), B: T.Buffer((T.int64(4),), "float32")):
        T.func_attr({"tir.noalias": True})
        # a comment inside TIR
        for i in range(T.int64(4)):
            with T.block("B"):
                vi = T.axis.spatial(T.int64(4), i)
                T.reads(A[vi])
                T.writes(B[vi])
                B[vi] = A[vi] + A[vi]

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tuple(R.Tensor((4,), "float32"), R.Tensor((4,), "float32"), R.Tensor((4,), "float32")):
        cls = Module
        a = R.call_tir(cls.add, (x,), out_sinfo=R.Tensor((4,), "float32"))
        b = R.call_dps_packed("my_kernel", (x, a), out_ty=R.Tensor((4,), "float32"))
        c = R.call_pure_packed("my_fn", b, ty_args=R.Tensor((4,), "float32"))
        return (a, b, c)

    @R.function(pure=False)
    def effect(x: R.Tensor((4,), "float32")):
        y = R.call_packed("print", x, sinfo_args=R.Tensor((4,), "float32"))
        return y
)");
  ASSERT_EQ(mod.prim_funcs.size(), 1u);
  EXPECT_EQ(mod.prim_funcs[0].first, "add");
  // Carried as written, dedented, comment and all.
  EXPECT_EQ(mod.prim_funcs[0].second.rfind("@T.prim_func(private=True)\ndef add(", 0), 0u);
  EXPECT_NE(mod.prim_funcs[0].second.find("\n    # a comment inside TIR\n"), std::string::npos);
  const auto& bindings = mod.Lookup("main")->body->blocks[0].bindings;
  ASSERT_EQ(bindings.size(), 3u);
  const ExternStyle kStyles[] = {ExternStyle::kTir, ExternStyle::kDpsPacked,
                                 ExternStyle::kPurePacked};
  for (size_t i = 0; i < 3; ++i) {
    const auto* call = As<CallNode>(bindings[i].value);
    ASSERT_TRUE(call);
    EXPECT_EQ(As<ExternFuncNode>(call->callee)->style, kStyles[i]) << i;
    EXPECT_EQ(bindings[i].var->struct_info->StaticShape(), (std::vector<int64_t>{4})) << i;
  }
  EXPECT_EQ(As<CallNode>(bindings[1].value)->args.size(), 2u);
  std::string text = PrintModule(mod);
  EXPECT_NE(text.find("R.call_tir(cls.add, (x,), out_ty=R.Tensor((4,), \"float32\"))"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("R.call_dps_packed(\"my_kernel\", (x, a), out_ty="), std::string::npos)
      << text;
  EXPECT_NE(text.find("R.call_pure_packed(\"my_fn\", b, ty_args="), std::string::npos) << text;
  EXPECT_NE(text.find("\n    @T.prim_func(private=True)\n    def add("), std::string::npos) << text;
  // Two prim_funcs that differ in text differ.
  IRModule other = mod;
  other.prim_funcs[0].second += "\n";
  std::string why;
  EXPECT_FALSE(StructuralEqual(mod, other, &why));
  EXPECT_NE(why.find("prim_func 'add'"), std::string::npos) << why;
}

TEST(TvmText, AnImpureCallInAPureFunctionIsAnError) {
  std::string e = ParseError(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), "float32")):
        y = R.call_packed("print", x, sinfo_args=R.Tensor((4,), "float32"))
        return y
)");
  EXPECT_EQ(e.rfind("5:13:", 0), 0u) << e;
  EXPECT_NE(e.find("R.call_packed(\"print\") is impure, in function 'main', which is pure"),
            std::string::npos)
      << e;
  // The verifier says the same of a module built otherwise.
  IRModule mod = Parse(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), "float32")):
        y = R.call_pure_packed("print", x, sinfo_args=R.Tensor((4,), "float32"))
        return y
)");
  auto f = std::make_shared<FunctionNode>(*mod.functions[0].second);
  auto body = std::make_shared<SeqExprNode>(*f->body);
  Binding& b = body->blocks[0].bindings[0];
  const auto* call = As<CallNode>(b.value);
  b.value = MakeExternCall("print", call->args, call->sinfo_args, ExternStyle::kPacked);
  f->body = body;
  mod.functions[0].second = f;
  Status s = Verify(mod);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().ToString().find("is impure, in a pure function"), std::string::npos)
      << s.error().ToString();
}

TEST(TvmText, CallTirNamesAPrimFuncOfTheModule) {
  std::string e = ParseError(R"(@I.ir_module
class Module:
    @R.function
    def g(x: R.Tensor((4,), "float32")):
        return x

    @R.function
    def main(x: R.Tensor((4,), "float32")):
        cls = Module
        y = R.call_tir(cls.g, (x,), out_sinfo=R.Tensor((4,), "float32"))
        return y
)");
  EXPECT_EQ(e.rfind("10:24:", 0), 0u) << e;
  EXPECT_NE(e.find("no T.prim_func named 'g' in the module ('g' is a Relax function)"),
            std::string::npos)
      << e;
}

TEST(TvmText, MatchCastAndTypeVarsAsTvmPrintsThem) {
  // As TVM 0.27 prints it: a signature's symbolic dims named by module-level TypeVars.
  IRModule mod = Parse(R"(# from typing import TypeVar
# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

m = TypeVar("m")
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((m, 4), dtype="float32"), y: R.Tensor(dtype="float32", ndim=2)) -> R.Tensor((m, 4), dtype="float32"):
        n = T.int64()
        a: R.Tensor((n, 4), dtype="float32") = R.match_cast(y, R.Tensor((n, 4), dtype="float32"))
        b: R.Tensor((m, 4), dtype="float32") = R.match_cast(x, R.Tensor((m, 4), dtype="float32"))
        c: R.Tensor((m, 4), dtype="float32") = R.add(b, b)
        return c
)");
  StructInfo a = SInfoOf(mod, "main", "a");
  ASSERT_TRUE(a->shape);
  EXPECT_EQ(ToString((*a->shape)[0]), "n");
  EXPECT_EQ(AsInt((*a->shape)[1]), 4);
  // x's m and b's m are one symbol.
  EXPECT_EQ((*SInfoOf(mod, "main", "b")->shape)[0], (*SInfoOf(mod, "main", "x")->shape)[0]);
  std::string text = PrintModule(mod);
  EXPECT_NE(text.find("R.match_cast(y, R.Tensor((n, 4), \"float32\"))"), std::string::npos) << text;
}

TEST(TvmText, AMatchCastThatContradictsItsValueIsAnError) {
  std::string e = ParseError(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 4), "float32")):
        a = R.match_cast(x, R.Tensor((2, 5), "float32"))
        return a
)");
  EXPECT_EQ(e.rfind("5:13:", 0), 0u) << e;
  EXPECT_NE(e.find("R.match_cast:"), std::string::npos) << e;
  e = ParseError(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 4), "float32")):
        a = R.match_cast(x, R.Tensor((2, 4), "int32"))
        return a
)");
  EXPECT_NE(e.find("R.match_cast:"), std::string::npos) << e;
}

TEST(TvmText, ATensorShapedByAShapeVariable) {
  // As TVM prints a reshape by a shape variable: R.Tensor(v, ...) takes what is known of v.
  IRModule mod = Parse(R"(# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tuple(R.Tensor(dtype="float32", ndim=4), R.Tensor((3, 2), dtype="float32")):
        s: R.Shape([2, 3]) = R.shape_of(x)
        t: R.Tensor((2,), dtype="int64") = R.shape_to_tensor(s)
        u: R.Tensor((4,), dtype="int64") = R.concat((t, t), axis=0)
        v: R.Shape(ndim=4) = R.tensor_to_shape(u)
        w: R.Tensor(v, dtype="float32") = R.reshape(x, v)
        q: R.Shape([3, 2]) = R.shape([3, 2])
        r: R.Tensor(q, dtype="float32") = R.reshape(x, q)
        return (w, r)
)");
  EXPECT_EQ(SInfoOf(mod, "main", "w")->ndim, 4);
  EXPECT_EQ(SInfoOf(mod, "main", "r")->StaticShape(), (std::vector<int64_t>{3, 2}));
}

TEST(TvmText, CheckWellFormedArgumentIsAccepted) {
  IRModule mod = Parse(R"(@I.ir_module(check_well_formed=False)
class Module:
    @R.function
    def f(x: R.Tensor((2,), "float32")):
        return x
)");
  EXPECT_EQ(mod.functions.size(), 1u);
}

}  // namespace
}  // namespace quilt::ir
