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
  EXPECT_EQ(CapabilityFor(*ir::Target::Parse("opencl")).Supports(AsCall(relu)).reason,
            "no OpenCL kernel for R.nn.relu yet");
  EXPECT_EQ(CapabilityFor(*ir::Target::Parse("metal")).Supports(AsCall(relu)).reason,
            "quilt has no back end for metal devices");
}

}  // namespace
}  // namespace quilt::targets
