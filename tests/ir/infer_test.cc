// Struct-info inference through the builder: broadcasting (static and symbolic), the vdevice
// rules, and the shape rules of the first ops, each checked against hand-computed results.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <map>

#include "ir/builder.h"
#include "ir/op_infer.h"

namespace quilt::ir {
namespace {

VDevice Dev(const char* target, int id = 0) {
  return VDevice{*Target::Parse(target), id, "global"};
}

Var Tensor(const char* name, std::vector<PrimExpr> shape, DataType dtype = DataType::kFloat32,
           std::optional<VDevice> d = std::nullopt) {
  return MakeVar(name, TensorSInfo(std::move(shape), dtype, d));
}

std::vector<PrimExpr> Dims(std::initializer_list<int64_t> dims) {
  std::vector<PrimExpr> out;
  for (int64_t d : dims) out.push_back(IntImm(d));
  return out;
}

StructInfo Infer(OpKind op, std::vector<Expr> args, Attrs attrs = {}) {
  Expected<Expr> call = MakeOpCall(op, std::move(args), std::move(attrs));
  EXPECT_TRUE(call) << (call ? "" : call.error().message);
  return call ? (*call)->struct_info : nullptr;
}

std::string InferError(OpKind op, std::vector<Expr> args, Attrs attrs = {}) {
  Expected<Expr> call = MakeOpCall(op, std::move(args), std::move(attrs));
  EXPECT_FALSE(call) << "expected an error";
  return call ? "" : call.error().message;
}

// Constant dims fold only where the result fits 64 bits; an overflowing one stays an expression
// (never undefined behaviour, never a wrapped size).
TEST(PrimFold, OverflowStaysAnExpression) {
  PrimExpr big = IntImm(int64_t{1} << 62);
  EXPECT_EQ(AsInt(MakeBinary(PrimKind::kMul, big, IntImm(2))), std::nullopt);
  EXPECT_EQ(AsInt(MakeBinary(PrimKind::kMul, big, IntImm(4))), std::nullopt);
  EXPECT_EQ(AsInt(MakeBinary(PrimKind::kAdd, big, big)), std::nullopt);
  EXPECT_EQ(AsInt(MakeBinary(PrimKind::kSub, IntImm(INT64_MIN), IntImm(1))), std::nullopt);
  EXPECT_EQ(AsInt(MakeBinary(PrimKind::kFloorDiv, IntImm(INT64_MIN), IntImm(-1))), std::nullopt);
  EXPECT_EQ(AsInt(MakeBinary(PrimKind::kMul, IntImm(3), IntImm(5))), 15);
  // Symbolic products and sums with coefficients that overflow keep their terms.
  PrimExpr n = SymVar("n");
  PrimExpr scaled = MakeBinary(PrimKind::kMul, n, big);
  EXPECT_FALSE(AsInt(MakeBinary(PrimKind::kMul, scaled, IntImm(4))));
  PrimExpr sum = MakeBinary(PrimKind::kAdd, scaled, scaled);  // n * 2^63: stays a sum
  EXPECT_EQ(sum->kind, PrimKind::kAdd);
  EXPECT_EQ(MakeBinary(PrimKind::kAdd, n, n)->kind, PrimKind::kMul) << "n + n is still n * 2";
}

TEST(Broadcast, StaticShapesAlignFromTheRight) {
  StructInfo s = Infer(OpKind::kAdd, {Tensor("a", Dims({2, 1, 3})), Tensor("b", Dims({4, 3}))});
  EXPECT_EQ(s->StaticShape(), (std::vector<int64_t>{2, 4, 3}));
  EXPECT_EQ(s->dtype, DataType::kFloat32);
}

TEST(Broadcast, ScalarWithTensor) {
  StructInfo s = Infer(OpKind::kMultiply, {Tensor("a", {}), Tensor("b", Dims({5, 2}))});
  EXPECT_EQ(s->StaticShape(), (std::vector<int64_t>{5, 2}));
}

TEST(Broadcast, MismatchIsAnError) {
  std::string e = InferError(OpKind::kAdd, {Tensor("a", Dims({2, 3})), Tensor("b", Dims({4, 3}))});
  EXPECT_NE(e.find("cannot broadcast: dimension 0 is 2 in one and 4 in the other"),
            std::string::npos)
      << e;
}

TEST(Broadcast, SymbolicDimWithOneAndWithItself) {
  PrimExpr n = SymVar("n");
  StructInfo s = Infer(OpKind::kAdd, {Tensor("a", {n, IntImm(3)}), Tensor("b", Dims({1, 3}))});
  ASSERT_TRUE(s->shape);
  EXPECT_EQ((*s->shape)[0], n);
  s = Infer(OpKind::kSubtract, {Tensor("a", {n, IntImm(3)}), Tensor("b", {n, IntImm(1)})});
  ASSERT_TRUE(s->shape);
  EXPECT_EQ((*s->shape)[0], n);
  EXPECT_EQ(AsInt((*s->shape)[1]), 3);
}

// e with each variable replaced by its value in `env`, folded (by MakeBinary's constant rules).
PrimExpr Bind(const PrimExpr& e, const std::map<std::string, int64_t>& env) {
  if (e->kind == PrimKind::kInt) return e;
  if (e->kind == PrimKind::kVar) return IntImm(env.at(e->name));
  return MakeBinary(e->kind, Bind(e->a, env), Bind(e->b, env));
}

// Two symbolic dims the compiler cannot prove equal: the result's dim is what numpy gives for
// every pair that broadcasts, zeros included; the other dims stay known.
TEST(Broadcast, UnprovableSymbolicPairIsTheBroadcastOfBoth) {
  StructInfo s = Infer(
      OpKind::kAdd, {Tensor("a", {SymVar("n"), IntImm(4)}), Tensor("b", {SymVar("m"), IntImm(4)})});
  ASSERT_TRUE(s->shape);
  EXPECT_EQ(s->ndim, 2);
  EXPECT_EQ(AsInt((*s->shape)[1]), 4);
  const PrimExpr& d = (*s->shape)[0];
  // (n, m) -> numpy's broadcast of the two extents.
  const std::vector<std::array<int64_t, 3>> cases = {{1, 5, 5}, {5, 1, 5}, {5, 5, 5}, {1, 1, 1},
                                                     {0, 1, 0}, {1, 0, 0}, {0, 0, 0}, {7, 7, 7}};
  for (const auto& [n, m, want] : cases) {
    EXPECT_EQ(AsInt(Bind(d, {{"n", n}, {"m", m}})), want) << "n = " << n << ", m = " << m;
  }
}

// A symbolic dim against a constant other than 1 is that constant (the symbol is 1 or equal to
// it wherever the inputs broadcast).
TEST(Broadcast, SymbolicDimAgainstAConstantIsTheConstant) {
  PrimExpr n = SymVar("n");
  StructInfo s = Infer(OpKind::kAdd, {Tensor("a", {n, IntImm(3)}), Tensor("b", Dims({4, 3}))});
  EXPECT_EQ(s->StaticShape(), (std::vector<int64_t>{4, 3}));
  s = Infer(OpKind::kMaximum, {Tensor("a", Dims({0, 3})), Tensor("b", {n, IntImm(3)})});
  EXPECT_EQ(s->StaticShape(), (std::vector<int64_t>{0, 3}));
}

// Each unprovable pair nests both operands' expressions: a long chain of them (values computed
// apart, added again and again) stops growing past a bound and keeps only the rank.
TEST(Broadcast, NestedUnprovablePairsStopAtABound) {
  Var a = Tensor("a", {SymVar("n"), IntImm(4)});
  Var b = Tensor("b", {SymVar("m"), IntImm(4)});
  StructInfo s = a->struct_info;
  int known = 0;
  for (int i = 0; i < 12 && s->shape; ++i) {
    s = Infer(OpKind::kAdd, {MakeVar("x", s), b});
    if (s->shape) ++known;
  }
  EXPECT_FALSE(s->shape);
  EXPECT_EQ(s->ndim, 2);
  EXPECT_GE(known, 3) << "the first few nestings keep their shapes";
}

TEST(Broadcast, ComparisonGivesBoolAndLogicalNeedsBool) {
  StructInfo s = Infer(OpKind::kLess, {Tensor("a", Dims({3})), Tensor("b", Dims({3}))});
  EXPECT_EQ(s->dtype, DataType::kBool);
  std::string e = InferError(OpKind::kLogicalAnd, {Tensor("a", Dims({3})), Tensor("b", Dims({3}))});
  EXPECT_NE(e.find("expects bool tensors, got float32"), std::string::npos) << e;
}

TEST(Broadcast, DtypesMustAgree) {
  std::string e =
      InferError(OpKind::kAdd, {Tensor("a", Dims({3})), Tensor("b", Dims({3}), DataType::kInt64)});
  EXPECT_NE(e.find("dtypes differ: float32 and int64"), std::string::npos) << e;
}

TEST(VDeviceRule, SharedVDeviceFlowsToTheResult) {
  VDevice cuda = Dev("cuda");
  StructInfo s = Infer(OpKind::kAdd, {Tensor("a", Dims({3}), DataType::kFloat32, cuda),
                                      Tensor("b", Dims({3}), DataType::kFloat32, cuda)});
  EXPECT_EQ(s->vdevice, cuda);
}

TEST(VDeviceRule, UnannotatedArgumentTakesItFromTheOthers) {
  VDevice cuda = Dev("cuda");
  StructInfo s = Infer(OpKind::kMatmul, {Tensor("a", Dims({2, 3})),
                                         Tensor("b", Dims({3, 4}), DataType::kFloat32, cuda)});
  EXPECT_EQ(s->vdevice, cuda);  // matmul keeps the rule too
  Var t = MakeVar("t", TupleSInfo({TensorSInfo(Dims({2, 3}), DataType::kFloat32, cuda),
                                   TensorSInfo(Dims({1, 3}), DataType::kFloat32)}));
  s = Infer(OpKind::kConcat, {t});
  EXPECT_EQ(s->vdevice, cuda);  // and concat
  EXPECT_EQ(s->StaticShape(), (std::vector<int64_t>{3, 3}));
}

TEST(VDeviceRule, TwoDifferentVDevicesIsAnErrorNamingOpDevicesAndArguments) {
  std::string e =
      InferError(OpKind::kMultiply, {Tensor("lhs", Dims({3}), DataType::kFloat32, Dev("llvm")),
                                     Tensor("rhs", Dims({3}), DataType::kFloat32, Dev("cuda", 1))});
  EXPECT_EQ(e,
            "R.multiply has arguments on different vdevices: `lhs` is on llvm (id 0, global) "
            "and `rhs` is on cuda (id 1, global); insert R.to_vdevice to copy one of them");
}

TEST(VDeviceRule, SameTargetDifferentIdsDiffer) {
  std::string e =
      InferError(OpKind::kAdd, {Tensor("a", Dims({3}), DataType::kFloat32, Dev("cuda", 0)),
                                Tensor("b", Dims({3}), DataType::kFloat32, Dev("cuda", 1))});
  EXPECT_NE(e.find("different vdevices"), std::string::npos);
}

// A hint's result is on the hinted device, which only realize-vdevice can resolve against the
// module's list: until then it is free, never on the input's device.
TEST(VDeviceRule, ToVDeviceMovesAndHintFrees) {
  VDevice cuda = Dev("cuda");
  Var a = Tensor("a", Dims({3}), DataType::kFloat32, Dev("llvm"));
  Attrs to;
  to.Set("dst_vdevice", cuda);
  EXPECT_EQ(Infer(OpKind::kToVDevice, {a}, to)->vdevice, cuda);
  Attrs hint;
  hint.Set("device_type", std::string("cuda"));
  StructInfo hinted = Infer(OpKind::kHintOnDevice, {a}, hint);
  EXPECT_FALSE(hinted->vdevice.has_value());
  EXPECT_EQ(hinted->StaticShape(), (std::vector<int64_t>{3}));
}

TEST(Shapes, MatmulBatchesAndVectors) {
  PrimExpr n = SymVar("n");
  StructInfo s =
      Infer(OpKind::kMatmul, {Tensor("a", {n, IntImm(2), IntImm(3)}), Tensor("b", Dims({3, 5}))});
  ASSERT_TRUE(s->shape);
  EXPECT_EQ((*s->shape)[0], n);
  EXPECT_EQ(AsInt((*s->shape)[2]), 5);
  s = Infer(OpKind::kMatmul, {Tensor("a", Dims({3})), Tensor("b", Dims({4, 3, 7}))});
  EXPECT_EQ(s->StaticShape(), (std::vector<int64_t>{4, 7}));
  s = Infer(OpKind::kMatmul, {Tensor("a", Dims({3})), Tensor("b", Dims({3}))});
  EXPECT_EQ(s->StaticShape(), (std::vector<int64_t>{}));
  std::string e =
      InferError(OpKind::kMatmul, {Tensor("a", Dims({2, 3})), Tensor("b", Dims({4, 5}))});
  EXPECT_NE(e.find("reduction dimensions differ: 3 in 'x1' and 4 in 'x2'"), std::string::npos) << e;
}

TEST(Shapes, ReshapeInfersMinusOneAndChecksCounts) {
  Var x = Tensor("x", Dims({2, 3, 4}));
  StructInfo s = Infer(OpKind::kReshape, {x, MakeShapeExpr(Dims({4, -1}))});
  EXPECT_EQ(s->StaticShape(), (std::vector<int64_t>{4, 6}));
  std::string e = InferError(OpKind::kReshape, {x, MakeShapeExpr(Dims({5, 5}))});
  EXPECT_NE(e.find("24 elements"), std::string::npos) << e;
}

TEST(Shapes, PermuteSqueezeExpand) {
  Var x = Tensor("x", Dims({2, 1, 4}));
  Attrs perm;
  perm.Set("axes", std::vector<int64_t>{2, 0, 1});
  EXPECT_EQ(Infer(OpKind::kPermuteDims, {x}, perm)->StaticShape(), (std::vector<int64_t>{4, 2, 1}));
  EXPECT_EQ(Infer(OpKind::kPermuteDims, {x})->StaticShape(), (std::vector<int64_t>{4, 1, 2}));
  EXPECT_EQ(Infer(OpKind::kSqueeze, {x})->StaticShape(), (std::vector<int64_t>{2, 4}));
  Attrs axis;
  axis.Set("axis", std::vector<int64_t>{0});
  std::string e = InferError(OpKind::kSqueeze, {x}, axis);
  EXPECT_NE(e.find("cannot squeeze axis 0 of size 2"), std::string::npos) << e;
  Attrs ex;
  ex.Set("axis", std::vector<int64_t>{0, -1});
  EXPECT_EQ(Infer(OpKind::kExpandDims, {x}, ex)->StaticShape(),
            (std::vector<int64_t>{1, 2, 1, 4, 1}));
}

TEST(Shapes, ConcatAddsSymbolicDims) {
  PrimExpr n = SymVar("n"), m = SymVar("m");
  Expr t = MakeTuple({Tensor("a", {n, IntImm(4)}), Tensor("b", {m, IntImm(4)})});
  StructInfo s = Infer(OpKind::kConcat, {t});
  ASSERT_TRUE(s->shape);
  EXPECT_EQ(ToString((*s->shape)[0]), "n + m");
  Attrs axis;
  axis.Set("axis", int64_t{2});
  EXPECT_NE(InferError(OpKind::kConcat, {t}, axis).find("axis 2 is out of range for rank 2"),
            std::string::npos);
}

TEST(Shapes, SoftmaxAxisAndUnaryDtypes) {
  Var x = Tensor("x", Dims({2, 3}));
  Attrs axis;
  axis.Set("axis", int64_t{-3});
  EXPECT_NE(InferError(OpKind::kSoftmax, {x}, axis).find("out of range"), std::string::npos);
  Var i = Tensor("i", Dims({2}), DataType::kInt32);
  EXPECT_NE(InferError(OpKind::kExp, {i}).find("floating-point"), std::string::npos);
  EXPECT_EQ(Infer(OpKind::kAbs, {i})->dtype, DataType::kInt32);
  EXPECT_EQ(Infer(OpKind::kLogicalNot, {Tensor("b", Dims({2}), DataType::kBool)})->dtype,
            DataType::kBool);
}

TEST(Shapes, SplitIntoSectionsStaticAndSymbolic) {
  Attrs a;
  a.Set("indices_or_sections", std::vector<int64_t>{});
  a.Set("sections", int64_t{4});
  // 5 into 4 parts of ceil(5 / 4) = 2: 2, 2, 1, 0.
  StructInfo s = Infer(OpKind::kSplit, {Tensor("x", Dims({5, 3}))}, a);
  ASSERT_EQ(s->fields.size(), 4u);
  EXPECT_EQ(s->fields[1]->StaticShape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(s->fields[2]->StaticShape(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(s->fields[3]->StaticShape(), (std::vector<int64_t>{0, 3}));
  a.Set("sections", int64_t{3});
  a.Set("axis", int64_t{1});
  s = Infer(OpKind::kSplit, {Tensor("x", {IntImm(2), SymVar("n")})}, a);
  ASSERT_EQ(s->fields.size(), 3u);
  ASSERT_TRUE(s->fields[0]->shape && s->fields[2]->shape);
  EXPECT_EQ(ToString((*s->fields[0]->shape)[1]), "(n + 2) // 3");
  EXPECT_EQ(ToString((*s->fields[2]->shape)[1]), "n - (n + 2) // 3 * 2");
  a.Set("indices_or_sections", std::vector<int64_t>{1});
  EXPECT_NE(InferError(OpKind::kSplit, {Tensor("x", Dims({4, 4}))}, a)
                .find("indices_or_sections must be empty when sections is given"),
            std::string::npos);
}

Expr FloatConstant(std::vector<float> values) {
  auto bytes = std::make_shared<std::vector<uint8_t>>(values.size() * sizeof(float));
  if (!values.empty()) std::memcpy(bytes->data(), values.data(), bytes->size());
  Expected<Expr> c = MakeConstant(DataType::kFloat32, {static_cast<int64_t>(values.size())}, bytes);
  EXPECT_TRUE(c);
  return *c;
}

// A resize by constant scales of dims known only by name: a whole-number scale multiplies the
// dim (floor(d * 2) is d * 2 for every count d); any other keeps only the rank, since the dim
// is then floor(d * s), which the dims cannot say.
TEST(Shapes, ResizeByWholeScalesOfSymbolicDims) {
  PrimExpr h = SymVar("h"), w = SymVar("w");
  Var x = Tensor("x", {IntImm(1), IntImm(3), h, w});
  Expr none = FloatConstant({});
  auto sizes = std::make_shared<std::vector<uint8_t>>();
  Expected<Expr> no_sizes = MakeConstant(DataType::kInt64, {0}, sizes);
  ASSERT_TRUE(no_sizes);
  StructInfo s = Infer(OpKind::kResize, {x, none, FloatConstant({1, 1, 2, 3}), *no_sizes});
  ASSERT_TRUE(s->shape);
  EXPECT_EQ(ToString((*s->shape)[1]), "3");
  EXPECT_EQ(ToString((*s->shape)[2]), "h * 2");
  EXPECT_EQ(ToString((*s->shape)[3]), "w * 3");
  s = Infer(OpKind::kResize, {x, none, FloatConstant({1, 1, 1.5f, 2}), *no_sizes});
  EXPECT_FALSE(s->shape);
  EXPECT_EQ(s->ndim, 4);
}

TEST(Shapes, TensorToShapeOfUnknownLengthHasUnknownRank) {
  StructInfo s = Infer(OpKind::kTensorToShape, {Tensor("t", {SymVar("n")}, DataType::kInt64)});
  EXPECT_EQ(s->kind, StructInfoKind::kShape);
  EXPECT_EQ(s->ndim, -1);
  StructInfo r = Infer(OpKind::kReshape, {Tensor("x", Dims({6})), MakeVar("s", s)});
  EXPECT_EQ(r->ndim, -1);
  EXPECT_EQ(Infer(OpKind::kTensorToShape, {Tensor("t", Dims({3}), DataType::kInt64)})->ndim, 3);
  EXPECT_NE(InferError(OpKind::kTensorToShape, {Tensor("t", Dims({2, 2}), DataType::kInt64)})
                .find("expects a 1-D tensor, got rank 2"),
            std::string::npos);
}

TEST(Shapes, ImageDecodeHasRunTimeSizeAndFormatChannels) {
  Var bytes = Tensor("b", {SymVar("n")}, DataType::kUInt8);
  StructInfo s = Infer(OpKind::kImageDecode, {bytes});
  ASSERT_TRUE(s->shape);
  EXPECT_EQ(s->dtype, DataType::kUInt8);
  EXPECT_FALSE(AsInt((*s->shape)[0]));
  EXPECT_EQ(AsInt((*s->shape)[2]), 3);
  Attrs gray;
  gray.Set("pixel_format", std::string("Grayscale"));
  EXPECT_EQ(AsInt((*Infer(OpKind::kImageDecode, {bytes}, gray)->shape)[2]), 1);
  Attrs bad;
  bad.Set("pixel_format", std::string("RGBA"));
  EXPECT_NE(InferError(OpKind::kImageDecode, {bytes}, bad)
                .find("pixel_format must be RGB, BGR or Grayscale, got 'RGBA'"),
            std::string::npos);
  EXPECT_NE(InferError(OpKind::kImageDecode, {Tensor("f", Dims({4}))})
                .find("the encoded image must be uint8, got float32"),
            std::string::npos);
}

TEST(Shapes, TfIdfVectorizerOutputSizeIsTheLargestIndexPlusOne) {
  Attrs a;
  a.Set("mode", std::string("TF"));
  a.Set("min_gram_length", int64_t{2});
  a.Set("max_gram_length", int64_t{2});
  a.Set("max_skip_count", int64_t{0});
  a.Set("ngram_counts", std::vector<int64_t>{0, 0});
  a.Set("ngram_indexes", std::vector<int64_t>{0, 6, 2});
  a.Set("pool_int64s", std::vector<int64_t>{2, 3, 5, 4, 5, 6});
  EXPECT_EQ(Infer(OpKind::kTfIdfVectorizer, {Tensor("x", Dims({12}), DataType::kInt32)}, a)
                ->StaticShape(),
            (std::vector<int64_t>{7}));
  PrimExpr n = SymVar("n");
  StructInfo s =
      Infer(OpKind::kTfIdfVectorizer, {Tensor("x", {n, IntImm(6)}, DataType::kInt64)}, a);
  ASSERT_TRUE(s->shape);
  EXPECT_EQ((*s->shape)[0], n);
  EXPECT_EQ(AsInt((*s->shape)[1]), 7);
  EXPECT_EQ(s->dtype, DataType::kFloat32);
  a.Set("weights", std::vector<double>{1.0});
  EXPECT_NE(InferError(OpKind::kTfIdfVectorizer, {Tensor("x", Dims({3}), DataType::kInt64)}, a)
                .find("weights has 1 values for 3 ngram_indexes"),
            std::string::npos);
  a.Set("weights", std::monostate{});
  a.Set("mode", std::string("BM25"));
  EXPECT_NE(InferError(OpKind::kTfIdfVectorizer, {Tensor("x", Dims({3}), DataType::kInt64)}, a)
                .find("mode must be TF, IDF or TFIDF, got 'BM25'"),
            std::string::npos);
  a.Set("mode", std::string("TF"));
  EXPECT_NE(InferError(OpKind::kTfIdfVectorizer, {Tensor("x", Dims({3}))}, a)
                .find("the tokens must be int32 or int64, got float32"),
            std::string::npos);
}

// Inference multiplies static dims: an argument or a result of more than 2^50 elements (the
// runtime's limit) is refused before any rule computes with it; 2^44 x 2^40 would overflow 64
// bits in reshape's element count.
TEST(InferCall, StaticSizesPastTheLimitAreRefused) {
  Var big = Tensor("x", Dims({int64_t{1} << 44, int64_t{1} << 40}));
  std::string e = InferError(OpKind::kReshape, {big, MakeShapeExpr(Dims({-1}))});
  EXPECT_NE(e.find("R.reshape: argument 'x' (`x`) is R.Tensor((17592186044416, 1099511627776), "
                   "\"float32\"), more than 2^50 elements"),
            std::string::npos)
      << e;
  // A result: broadcasting two tensors of 2^30 elements each to 2^60.
  Var a = Tensor("a", Dims({int64_t{1} << 30, 1}));
  Var b = Tensor("b", Dims({1, int64_t{1} << 30}));
  e = InferError(OpKind::kAdd, {a, b});
  EXPECT_NE(e.find("R.add: the result would be R.Tensor((1073741824, 1073741824), \"float32\"), "
                   "more than 2^50 elements"),
            std::string::npos)
      << e;
  // At the limit, both are fine.
  Var edge = Tensor("e", Dims({int64_t{1} << 25, int64_t{1} << 25}));
  EXPECT_TRUE(Infer(OpKind::kReshape, {edge, MakeShapeExpr(Dims({-1}))}));
}

TEST(Attrs, DefaultsAreFilledAndUnknownsRefused) {
  Expected<Expr> call = MakeOpCall(OpKind::kSoftmax, {Tensor("x", Dims({2}))});
  ASSERT_TRUE(call);
  EXPECT_EQ(*As<CallNode>(*call)->attrs.Get<int64_t>("axis"), -1);
  Attrs bad;
  bad.Set("axes", int64_t{1});
  Expected<Expr> e = MakeOpCall(OpKind::kSoftmax, {Tensor("x", Dims({2}))}, bad);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().message, "R.nn.softmax has no attribute 'axes'");
}

TEST(OpTable, EveryOpHasANameAndRule) {
  for (const OpInfo& op : AllOps()) {
    EXPECT_FALSE(op.name.empty());
    EXPECT_NE(op.infer, nullptr) << op.name;
    EXPECT_EQ(FindOp(op.name), &op);
    EXPECT_EQ(&GetOp(op.kind), &op);
  }
}

TEST(TargetTest, ParsesStringsAndDicts) {
  Expected<Target> t = Target::Parse("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a76");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->kind, "llvm");
  EXPECT_EQ(t->Attr("mtriple"), "aarch64-linux-gnu");
  EXPECT_EQ(t->Attr("mcpu"), "cortex-a76");
  EXPECT_EQ(t->DeviceType(), "cpu");
  Expected<Target> d = Target::FromDict({{"kind", "cuda"}, {"arch", "sm_80"}});
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, *Target::Parse("cuda -arch=sm_80"));
  EXPECT_EQ(Target::Parse("opencl")->DeviceType(), "opencl");
  EXPECT_FALSE(Target::Parse("cuda arch=sm_80"));
  EXPECT_FALSE(Target::Parse(""));
  // TVM's canonical dicts hold lists, integers and flags; each keeps its type, and the string
  // form writes them as TVM's "-key=value" does.
  Expected<Target> canonical = Target::FromDict({{"kind", "cuda"},
                                                 {"keys", std::vector<std::string>{"cuda", "gpu"}},
                                                 {"max_num_threads", int64_t{1024}},
                                                 {"tag", ""},
                                                 {"libs", std::vector<int64_t>{1, 2}},
                                                 {"fast", true}});
  ASSERT_TRUE(canonical);
  EXPECT_EQ(canonical->ToString(),
            "cuda -fast=true -keys=cuda,gpu -libs=1,2 -max_num_threads=1024 -tag=");
  EXPECT_TRUE(std::holds_alternative<int64_t>(canonical->attrs.at("max_num_threads")));
  EXPECT_NE(*canonical, *Target::Parse(canonical->ToString()));  // "1024" is text there
  EXPECT_TRUE(std::holds_alternative<bool>(Target::Parse("llvm -fast")->attrs.at("fast")));
  EXPECT_FALSE(Target::FromDict({{"kind", int64_t{1}}}));
}

TEST(TargetTest, DeviceStringsResolveByKindOrdinalAndIndex) {
  std::vector<VDevice> list = {Dev("llvm"), Dev("cuda", 0), Dev("cuda -arch=sm_80", 0),
                               Dev("cuda", 1)};
  EXPECT_EQ(*ResolveDeviceString("cuda", list), 1);
  EXPECT_EQ(*ResolveDeviceString("cuda:1", list), 2);  // the second entry of kind cuda
  EXPECT_EQ(*ResolveDeviceString("cuda:2", list), 3);
  EXPECT_EQ(*ResolveDeviceString("vdevice:3", list), 3);
  EXPECT_FALSE(ResolveDeviceString("cuda:3", list));
  EXPECT_FALSE(ResolveDeviceString("vdevice:4", list));
  EXPECT_FALSE(ResolveDeviceString("cuda:-1", list));
  // TVM's form with the memory scope: the entry as without it, whose scope must match.
  EXPECT_EQ(*ResolveDeviceString("cuda:1:global", list), 2);
  std::vector<VDevice> scoped = list;
  scoped[3].memory_scope = "global.texture";
  EXPECT_EQ(*ResolveDeviceString("cuda:2:global.texture", scoped), 3);
  Expected<int> wrong = ResolveDeviceString("cuda:0:global.texture", scoped);
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("whose memory scope is \"global\""), std::string::npos)
      << wrong.error().message;
  EXPECT_FALSE(ResolveDeviceString("cuda:1:", list));
  EXPECT_FALSE(ResolveDeviceString("vdevice:1:global", list));
  EXPECT_EQ(*ResolvePhysicalDevice("cuda", 1, "global.texture", scoped), 3);
  EXPECT_FALSE(ResolvePhysicalDevice("cuda", 1, "global", scoped));
  EXPECT_EQ(*ResolvePhysicalDevice("cuda", 1, "", list), 3);
  EXPECT_FALSE(ResolvePhysicalDevice("opencl", 0, "", list));
  EXPECT_EQ(DeviceString(2, list), "cuda:1");
}

TEST(DataTypes, EveryOnnxElementTypeHasAName) {
  for (int i = 1; i <= kLastDataType; ++i) {
    DataType t = static_cast<DataType>(i);
    EXPECT_EQ(ParseDataType(DataTypeName(t)), t) << i;
  }
  EXPECT_EQ(DataTypeBits(DataType::kInt4), 4);
  EXPECT_EQ(DataTypeBits(DataType::kBFloat16), 16);
  EXPECT_TRUE(IsFloat(DataType::kFloat8E5M2));
  EXPECT_FALSE(IsFloat(DataType::kInt8));
}

}  // namespace
}  // namespace quilt::ir
