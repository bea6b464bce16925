// Target capability: the CPU answers from its kernel table, back ends without kernels say so.
#include "targets/capability.h"

#include <gtest/gtest.h>

#include "ir/builder.h"
#include "ir/op.h"

namespace quilt::targets {
namespace {

ir::Expr Call(ir::OpKind kind, std::vector<ir::Expr> args) {
  Expected<ir::Expr> c = ir::MakeOpCall(kind, std::move(args));
  EXPECT_TRUE(c) << c.error().ToString();
  return *c;
}

const ir::CallNode& AsCall(const ir::Expr& e) { return *ir::As<ir::CallNode>(e); }

TEST(Capability, TheCpuTakesWhatItHasAKernelFor) {
  ir::Var x = ir::MakeVar("x", ir::TensorSInfo(std::vector<int64_t>{2, 3}, ir::DataType::kFloat32));
  ir::Expr add = Call(ir::OpKind::kAdd, {x, x});
  const Capability& cpu = CapabilityFor(*ir::Target::Parse("llvm -mcpu=native"));
  EXPECT_TRUE(cpu.Supports(AsCall(add)).ok);
  ir::Var bytes = ir::MakeVar("b", ir::TensorSInfo(std::vector<int64_t>{16}, ir::DataType::kUInt8));
  Expected<ir::Expr> decode = ir::MakeOpCall(ir::OpKind::kImageDecode, {bytes});
  ASSERT_TRUE(decode) << decode.error().ToString();
  Support s = cpu.Supports(AsCall(*decode));
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.reason, "no CPU kernel for R.image.decode");
}

TEST(Capability, BackEndsWithoutKernelsSaySo) {
  ir::Var x = ir::MakeVar("x", ir::TensorSInfo(std::vector<int64_t>{2}, ir::DataType::kFloat32));
  ir::Expr relu = Call(ir::OpKind::kRelu, {x});
  Support cuda = CapabilityFor(*ir::Target::Parse("cuda -arch=sm_80")).Supports(AsCall(relu));
  EXPECT_FALSE(cuda.ok);
  EXPECT_EQ(cuda.reason, "no CUDA kernel for R.nn.relu yet");
  EXPECT_EQ(CapabilityFor(*ir::Target::Parse("metal")).Supports(AsCall(relu)).reason,
            "quilt has no back end for metal devices");
}

TEST(Capability, OpenClTakesElementwiseOpsWithBroadcastsItCanSee) {
  const Capability& cl = CapabilityFor(*ir::Target::Parse("opencl"));
  auto sym = [](const char* n) { return ir::SymVar(n); };
  ir::Var x = ir::MakeVar("x", ir::TensorSInfo(std::vector<ir::PrimExpr>{sym("n"), ir::IntImm(3)},
                                               ir::DataType::kFloat32));
  ir::Var row =
      ir::MakeVar("r", ir::TensorSInfo(std::vector<int64_t>{1, 3}, ir::DataType::kFloat32));
  EXPECT_TRUE(cl.Supports(AsCall(Call(ir::OpKind::kRelu, {x}))).ok);
  EXPECT_TRUE(cl.Supports(AsCall(Call(ir::OpKind::kAdd, {x, row}))).ok);  // (n, 3) + (1, 3)
  // Two symbols: the compiler knows the result's shape as an expression of both, not which side
  // broadcasts.
  ir::Var y = ir::MakeVar("y", ir::TensorSInfo(std::vector<ir::PrimExpr>{sym("m"), ir::IntImm(3)},
                                               ir::DataType::kFloat32));
  Support s = cl.Supports(AsCall(Call(ir::OpKind::kMaximum, {x, y})));
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.reason, "OpenCL: R.maximum broadcasts argument 0 in a way only the run decides")
      << s.reason;
  // A tensor whose shape the compiler does not know at all.
  ir::Var z =
      ir::MakeVar("z", ir::TensorSInfo(std::nullopt, ir::DataType::kFloat32, std::nullopt, 2));
  s = cl.Supports(AsCall(Call(ir::OpKind::kMaximum, {x, z})));
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.reason,
            "OpenCL runs R.maximum on float32, float16, int32, int64 and bool tensors of known "
            "shape only")
      << s.reason;
  // Integers too, where the CPU kernels' integer semantics are written (not power).
  ir::Var i = ir::MakeVar("i", ir::TensorSInfo(std::vector<int64_t>{4}, ir::DataType::kInt64));
  EXPECT_TRUE(cl.Supports(AsCall(Call(ir::OpKind::kAdd, {i, i}))).ok);
  s = cl.Supports(AsCall(Call(ir::OpKind::kPower, {i, i})));
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.reason, "no OpenCL kernel for R.power on (int64, int64)");
  // float16 stored as such and computed in float32: elementwise ops, and the families that
  // compute in float (a softmax, a matmul) where all their float data is float16. float64
  // nowhere.
  ir::Var h = ir::MakeVar("h", ir::TensorSInfo(std::vector<int64_t>{4}, ir::DataType::kFloat16));
  EXPECT_TRUE(cl.Supports(AsCall(Call(ir::OpKind::kAdd, {h, h}))).ok);
  EXPECT_TRUE(cl.Supports(AsCall(Call(ir::OpKind::kSoftmax, {h}))).ok);
  ir::Var hm =
      ir::MakeVar("hm", ir::TensorSInfo(std::vector<int64_t>{4, 4}, ir::DataType::kFloat16));
  EXPECT_TRUE(cl.Supports(AsCall(Call(ir::OpKind::kMatmul, {hm, hm}))).ok);
  ir::Var f64 =
      ir::MakeVar("f64", ir::TensorSInfo(std::vector<int64_t>{4}, ir::DataType::kFloat64));
  s = cl.Supports(AsCall(Call(ir::OpKind::kSoftmax, {f64})));
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.reason,
            "OpenCL runs R.nn.softmax on float32 (or all float16) tensors of known shape only")
      << s.reason;
  s = cl.Supports(AsCall(Call(ir::OpKind::kAdd, {f64, f64})));
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.reason,
            "OpenCL runs R.add on float32, float16, int32, int64 and bool tensors of known shape "
            "only");
  EXPECT_TRUE(cl.Supports(AsCall(Call(ir::OpKind::kSoftmax, {x}))).ok);
  s = cl.Supports(AsCall(Call(ir::OpKind::kCumsum, {x})));
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.reason, "no OpenCL kernel for R.cumsum yet");
}

}  // namespace
}  // namespace quilt::targets
