// Known values through the ops that compute on shapes, op by op: each test computes a Reshape
// target (or an If condition) the way exporters do, and the imported result must have the
// static shape worked out by hand. Without the known values the Reshape's result has unknown
// dims, and the test fails.
#include <gtest/gtest.h>

#include "tests/importers/onnx_test_util.h"

namespace quilt::importers::onnx {
namespace {

using ::onnx::TensorProto;
using quilt::testing::ImportedResult;
using quilt::testing::OnnxGraph;
using quilt::testing::SetInt;
using quilt::testing::SetInts;

// A graph whose output reshapes a float input `d` of 24 elements to the int64 value `target`,
// which the test computes with nodes of its own.
class Known : public ::testing::Test {
 protected:
  Known() : g(17) { g.Input("d", TensorProto::FLOAT, {24}); }

  void Ints(const std::string& name, std::vector<int64_t> dims, std::vector<int64_t> v) {
    g.Initializer<int64_t>(name, TensorProto::INT64, std::move(dims), v);
  }
  void Bools(const std::string& name, std::vector<int64_t> dims, std::vector<bool> v) {
    g.Initializer<bool>(name, TensorProto::BOOL, std::move(dims), v);
  }
  ::onnx::NodeProto& Node(const std::string& op, std::vector<std::string> in,
                          const std::string& out) {
    return g.Node(op, std::move(in), {out}, op + "_" + out);
  }
  // Where(cond, [2, 12], [3, 8]): the shape tells which side a known condition took.
  void ShapeFromCondition(const std::string& cond) {
    Ints("yes", {2}, {2, 12});
    Ints("no", {2}, {3, 8});
    Node("Where", {cond, "yes", "no"}, "target");
  }
  std::vector<int64_t> ReshapedTo(const std::string& target = "target") {
    g.Node("Reshape", {"d", target}, {"y"}, "reshape");
    g.Output("y", TensorProto::FLOAT);
    ir::StructInfo s = ImportedResult(g);
    if (!s) return {};
    return s->StaticShape().value_or(std::vector<int64_t>{});
  }

  OnnxGraph g;
};

TEST_F(Known, Arithmetic) {
  Ints("a", {2}, {9, 25});
  Ints("b", {1}, {3});
  Node("Div", {"a", "b"}, "q");       // (3, 8): integer division truncates
  Node("Mod", {"a", "b"}, "r");       // (0, 1)
  Node("Add", {"q", "r"}, "s");       // (3, 9)
  Node("Sub", {"s", "r"}, "t");       // (3, 8)
  Node("Mul", {"t", "b"}, "u");       // (9, 24)
  Node("Div", {"u", "b"}, "target");  // (3, 8)
  EXPECT_EQ(ReshapedTo(), (std::vector<int64_t>{3, 8}));
}

TEST_F(Known, ModFollowsTheSignOfTheDivisorUnlessFmod) {
  Ints("a", {2}, {-7, 7});
  Ints("b", {1}, {4});
  Node("Mod", {"a", "b"}, "m");             // (1, 3)
  auto& f = Node("Mod", {"a", "b"}, "fm");  // (-3, 3)
  SetInt(f, "fmod", 1);
  Node("Sub", {"m", "fm"}, "diff");  // (4, 0)
  Ints("k", {2}, {2, 4});
  Node("Add", {"diff", "k"}, "target");  // (6, 4)
  EXPECT_EQ(ReshapedTo(), (std::vector<int64_t>{6, 4}));
}

TEST_F(Known, VariadicMinMaxSumAndNegAbsSign) {
  Ints("a", {2}, {4, 12});
  Ints("b", {2}, {2, 20});
  Ints("c", {2}, {3, 6});
  Node("Min", {"a", "b", "c"}, "lo");   // (2, 6)
  Node("Max", {"a", "b", "c"}, "hi");   // (4, 20)
  Node("Sum", {"lo", "hi", "c"}, "s");  // (9, 32)
  Node("Neg", {"s"}, "n");              // (-9, -32)
  Node("Sign", {"n"}, "sg");            // (-1, -1)
  Node("Abs", {"n"}, "ab");             // (9, 32)
  Node("Add", {"ab", "sg"}, "t");       // (8, 31)
  Ints("k", {2}, {-6, -19});
  Node("Add", {"t", "k"}, "target");  // (2, 12)
  EXPECT_EQ(ReshapedTo(), (std::vector<int64_t>{2, 12}));
}

TEST_F(Known, CastToBoolAndNotDecideAWhere) {
  Ints("zero", {}, {0});
  auto& c = Node("Cast", {"zero"}, "b");
  SetInt(c, "to", TensorProto::BOOL);  // false
  Node("Not", {"b"}, "nb");            // true
  ShapeFromCondition("nb");
  EXPECT_EQ(ReshapedTo(), (std::vector<int64_t>{2, 12}));
}

TEST_F(Known, ComparisonsAndLogic) {
  Ints("a", {}, {5});
  Ints("b", {}, {7});
  Node("Less", {"a", "b"}, "lt");            // true
  Node("GreaterOrEqual", {"a", "b"}, "ge");  // false
  Node("Equal", {"a", "a"}, "eq");           // true
  Node("LessOrEqual", {"b", "a"}, "le");     // false
  Node("Greater", {"b", "a"}, "gt");         // true
  Node("Or", {"ge", "le"}, "or");            // false
  Node("Xor", {"lt", "or"}, "xor");          // true
  Node("And", {"xor", "eq"}, "and1");        // true
  Node("And", {"and1", "gt"}, "cond");       // true
  ShapeFromCondition("cond");
  EXPECT_EQ(ReshapedTo(), (std::vector<int64_t>{2, 12}));
}

TEST_F(Known, AFalseConditionTakesTheOtherSide) {
  Bools("t", {}, {true});
  Bools("f", {}, {false});
  Node("And", {"t", "f"}, "cond");
  ShapeFromCondition("cond");
  EXPECT_EQ(ReshapedTo(), (std::vector<int64_t>{3, 8}));
}

TEST_F(Known, TransposeGatherAndSliceOfA2dValue) {
  Ints("m", {2, 2}, {2, 3, 12, 8});          // ((2, 3), (12, 8))
  auto& t = Node("Transpose", {"m"}, "mt");  // ((2, 12), (3, 8))
  SetInts(t, "perm", {1, 0});
  Ints("row1", {}, {1});
  Node("Gather", {"mt", "row1"}, "r1");  // (3, 8)
  Ints("s", {1}, {0});
  Ints("e", {1}, {1});
  Ints("ax1", {1}, {1});
  Node("Slice", {"mt", "s", "e", "ax1"}, "col0");  // ((2,), (3,))
  Ints("flat", {1}, {-1});
  Node("Reshape", {"col0", "flat"}, "c0");  // (2, 3)
  Ints("four", {1}, {4});
  Node("Concat", {"c0", "four"}, "target");  // (2, 3, 4)
  SetInt(*g.graph()->mutable_node(g.graph()->node_size() - 1), "axis", 0);
  EXPECT_EQ(ReshapedTo(), (std::vector<int64_t>{2, 3, 4}));
}

TEST_F(Known, GatherAlongAxis1AndUnsqueezeSqueezeFlatten) {
  Ints("m", {2, 3}, {6, 4, 1, 2, 2, 3});
  Ints("cols", {2}, {0, 1});
  auto& ga = Node("Gather", {"m", "cols"}, "g");  // ((6, 4), (2, 2))
  SetInt(ga, "axis", 1);
  Ints("ax0", {1}, {0});
  Node("Unsqueeze", {"g", "ax0"}, "u");     // (1, 2, 2)
  Node("Squeeze", {"u", "ax0"}, "sq");      // (2, 2)
  auto& f = Node("Flatten", {"sq"}, "fl");  // (1, 4): 6, 4, 2, 2
  SetInt(f, "axis", 0);
  Ints("s", {1}, {0});
  Ints("e", {1}, {2});
  Ints("one", {1}, {1});
  Node("Slice", {"fl", "s", "e", "one", "one"}, "first2");  // (1, 2): 6, 4
  Ints("flat", {1}, {-1});
  Node("Reshape", {"first2", "flat"}, "target");  // (6, 4)
  EXPECT_EQ(ReshapedTo(), (std::vector<int64_t>{6, 4}));
}

TEST_F(Known, ExpandTileAndReductions) {
  Ints("two", {1}, {2});
  Node("Expand", {"two", "two"}, "e");  // (2, 2)
  Ints("one", {1}, {1});
  Node("Tile", {"one", "two"}, "t");  // (1, 1)
  Ints("m", {2, 2}, {1, 2, 3, 4});
  Ints("ax0", {1}, {0});
  auto& r = Node("ReduceSum", {"m", "ax0"}, "col_sums");  // (4, 6)
  SetInt(r, "keepdims", 0);
  Node("ReduceProd", {"e"}, "prod");             // (4,), all axes, keepdims
  Node("ReduceMin", {"col_sums"}, "mn");         // (4,)
  Node("ReduceMax", {"col_sums"}, "mx");         // (6,)
  auto& c = Node("Concat", {"mn", "mx"}, "mm");  // (4, 6)
  SetInt(c, "axis", 0);
  Node("Mul", {"mm", "t"}, "mm1");      // (4, 6)
  Node("Div", {"mm1", "prod"}, "q");    // (1, 1)
  Node("Mul", {"mm1", "q"}, "target");  // (4, 6)
  EXPECT_EQ(ReshapedTo(), (std::vector<int64_t>{4, 6}));
}

TEST_F(Known, SymbolicDimsCarryThroughArithmeticAndWhere) {
  // x: (n, 4); target = (Where(n == n and true, n * 2, n), 2): the symbolic dim carries.
  OnnxGraph h(17);
  h.Input("x", TensorProto::FLOAT, {std::string("n"), int64_t{4}});
  h.Initializer<int64_t>("zero", TensorProto::INT64, {1}, {0});
  h.Initializer<int64_t>("two", TensorProto::INT64, {1}, {2});
  h.Initializer<bool>("t", TensorProto::BOOL, {1}, {true});
  h.Node("Shape", {"x"}, {"s"}, "shape");
  h.Node("Gather", {"s", "zero"}, {"n"}, "gather");
  h.Node("Mul", {"n", "two"}, {"n2"}, "mul");
  h.Node("Equal", {"n", "n"}, {"same"}, "equal");  // true whatever n is
  h.Node("And", {"same", "t"}, {"cond"}, "and");
  h.Node("Where", {"cond", "n2", "n"}, {"rows"}, "where");
  h.Node("Concat", {"rows", "two"}, {"target"}, "concat");
  SetInt(*h.graph()->mutable_node(h.graph()->node_size() - 1), "axis", 0);
  h.Node("Reshape", {"x", "target"}, {"y"}, "reshape");
  h.Output("y", TensorProto::FLOAT);
  ir::StructInfo s = ImportedResult(h);
  ASSERT_TRUE(s && s->shape);
  ASSERT_EQ(s->shape->size(), 2u);
  EXPECT_EQ(ir::ToString((*s->shape)[0]), "n * 2");
  EXPECT_EQ(ir::AsInt((*s->shape)[1]), 2);
}

// A dim is never negative, so it compares against a negative constant: a vision transformer
// broadcasts its class token to Where(Equal([n, -1, -1], -1), 1, [n, -1, -1]) = (n, 1, 1), and
// with that known the token and the patches it is concatenated with have a static width.
TEST_F(Known, ADimComparesAgainstANegativeConstant) {
  OnnxGraph h(17);
  h.Input("x", TensorProto::FLOAT, {std::string("n"), int64_t{4}});
  h.Initializer<int64_t>("zero", TensorProto::INT64, {1}, {0});
  h.Initializer<int64_t>("minus", TensorProto::INT64, {2}, {-1, -1});
  h.Initializer<int64_t>("minus3", TensorProto::INT64, {3}, {-1, -1, -1});
  h.Initializer<int64_t>("ones", TensorProto::INT64, {3}, {1, 1, 1});
  h.Initializer<int64_t>("m3", TensorProto::INT64, {3}, {-3, -3, -3});
  h.Initializer<float>("token", TensorProto::FLOAT, {1, 1, 4}, {1, 2, 3, 4});
  h.Node("Shape", {"x"}, {"s"}, "shape");
  h.Node("Gather", {"s", "zero"}, {"n"}, "gather");
  h.Node("Concat", {"n", "minus"}, {"want"}, "concat");  // (n, -1, -1)
  SetInt(*h.graph()->mutable_node(h.graph()->node_size() - 1), "axis", 0);
  h.Node("Equal", {"want", "minus3"}, {"eq"}, "equal");         // (false, true, true)
  h.Node("Where", {"eq", "ones", "want"}, {"shape"}, "where");  // (n, 1, 1)
  // The other comparisons, each of n + 2 (a sum of a dim) against -3, decide a Where that keeps
  // the shape where it is right: (n > -3), (n >= -3), not (n < -3), not (n <= -3), not (-3 >= n).
  h.Initializer<int64_t>("two", TensorProto::INT64, {1}, {2});
  h.Node("Add", {"n", "two"}, {"n2"}, "add");
  std::string kept = "shape";
  const char* ops[] = {"Greater", "GreaterOrEqual", "Less", "LessOrEqual", "Swapped"};
  for (int k = 0; k < 5; ++k) {
    std::string o = ops[k], cmp = "cmp" + std::to_string(k), next = "kept" + std::to_string(k);
    std::vector<std::string> in = {"n2", "m3"};
    if (o == "Swapped") {
      o = "GreaterOrEqual";
      in = {"m3", "n2"};
    }
    h.Node(o, in, {cmp}, "cmp_" + std::to_string(k));
    bool keeps = k < 2;  // Greater and GreaterOrEqual hold; the others do not
    h.Node("Where", {cmp, keeps ? kept : "ones", keeps ? "ones" : kept}, {next},
           "where_" + std::to_string(k));
    kept = next;
  }
  h.Node("Expand", {"token", kept}, {"y"}, "expand");
  h.Output("y", TensorProto::FLOAT);
  ir::StructInfo s = ImportedResult(h);
  ASSERT_TRUE(s && s->shape);
  ASSERT_EQ(s->shape->size(), 3u);
  EXPECT_EQ(ir::ToString((*s->shape)[0]), "n");
  EXPECT_EQ(ir::AsInt((*s->shape)[1]), 1);
  EXPECT_EQ(ir::AsInt((*s->shape)[2]), 4);
}

// Float arithmetic on constants is folded, so a Cast of it to an integer is known: a vision
// transformer's grid side, Cast(Pow(1369.0, 0.5)) = 37, sizes its position table's Reshape.
TEST_F(Known, FloatConstantsFoldIntoAShape) {
  g.Initializer<float>("sq", TensorProto::FLOAT, {2}, {16.0f, 36.0f});
  g.Initializer<float>("half", TensorProto::FLOAT, {}, {0.5f});
  Node("Pow", {"sq", "half"}, "roots");  // (4, 6)
  auto& c = Node("Cast", {"roots"}, "target");
  SetInt(c, "to", TensorProto::INT64);
  EXPECT_EQ(ReshapedTo(), (std::vector<int64_t>{4, 6}));
}

TEST_F(Known, FloatFoldsRoundHalvesToEvenAndCastsTowardZero) {
  g.Initializer<float>("halves", TensorProto::FLOAT, {2}, {2.5f, 5.5f});
  g.Initializer<float>("k", TensorProto::FLOAT, {2}, {2.0f, 1.0f});
  g.Initializer<float>("frac", TensorProto::FLOAT, {2}, {-0.9f, -0.25f});
  Node("Round", {"halves"}, "r");     // (2, 6): halves to even
  Node("Mul", {"r", "k"}, "m");       // (4, 6)
  Node("Sub", {"m", "frac"}, "f");    // (4.9, 6.25)
  Node("Sqrt", {"f"}, "sq");          // (2.21, 2.5)
  Node("Mul", {"sq", "sq"}, "back");  // (4.9, 6.25), near enough
  Node("Floor", {"back"}, "fl");      // (4, 6)
  Node("Neg", {"fl"}, "n");           // (-4, -6)
  Node("Abs", {"n"}, "a");            // (4, 6)
  Node("Reciprocal", {"a"}, "inv");   // (0.25, 0.1667)
  Node("Div", {"a", "inv"}, "sq2");   // (16, 36)
  Node("Sqrt", {"sq2"}, "s");         // (4, 6)
  Node("Sub", {"s", "frac"}, "up");   // (4.9, 6.25): toward zero gives (4, 6)
  auto& c = Node("Cast", {"up"}, "target");
  SetInt(c, "to", TensorProto::INT64);
  EXPECT_EQ(ReshapedTo(), (std::vector<int64_t>{4, 6}));
}

// A value beyond int64 is left to the kernel (its cast saturates): not known at import.
TEST_F(Known, AFloatBeyondTheIntegerTypeIsNotFolded) {
  g.Initializer<float>("big", TensorProto::FLOAT, {2}, {1e30f, 24.0f});
  g.Initializer<float>("one", TensorProto::FLOAT, {}, {1.0f});
  Node("Mul", {"big", "one"}, "m");
  auto& c = Node("Cast", {"m"}, "target");
  SetInt(c, "to", TensorProto::INT64);
  EXPECT_EQ(ReshapedTo(), std::vector<int64_t>{});
}

// A Shape's dims cast to float, float arithmetic, and back to an integer: d's 24 elements / 6.0
// gives the 4 rows of the Reshape.
TEST_F(Known, IntegersCastToFloatAreConstants) {
  Node("Shape", {"d"}, "s");  // (24)
  auto& f = Node("Cast", {"s"}, "sf");
  SetInt(f, "to", TensorProto::FLOAT);
  g.Initializer<float>("six", TensorProto::FLOAT, {1}, {6.0f});
  Node("Div", {"sf", "six"}, "rows_f");  // (4.0)
  auto& r = Node("Cast", {"rows_f"}, "rows");
  SetInt(r, "to", TensorProto::INT64);
  Ints("cols", {1}, {6});
  SetInt(Node("Concat", {"rows", "cols"}, "target"), "axis", 0);
  EXPECT_EQ(ReshapedTo(), (std::vector<int64_t>{4, 6}));
}

// A detector's anchor grid: Range(0.0, Cast(Gather(Shape(x), 2)), 1.0) + 0.5 over an image of
// width 20 has 20 elements, not a length known only at run time.
TEST_F(Known, ARangeToAShapesDimCastToFloatHasAStaticLength) {
  OnnxGraph h(17);
  h.Input("x", TensorProto::FLOAT, {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{20}});
  h.Initializer<int64_t>("w_axis", TensorProto::INT64, {}, {3});
  h.Initializer<float>("start", TensorProto::FLOAT, {}, {0.0f});
  h.Initializer<float>("step", TensorProto::FLOAT, {}, {1.0f});
  h.Initializer<float>("half", TensorProto::FLOAT, {}, {0.5f});
  h.Node("Shape", {"x"}, {"s"}, "shape");
  h.Node("Gather", {"s", "w_axis"}, {"w"}, "gather");
  SetInt(h.Node("Cast", {"w"}, {"wf"}, "cast"), "to", TensorProto::FLOAT);
  h.Node("Range", {"start", "wf", "step"}, {"r"}, "range");
  h.Node("Add", {"r", "half"}, {"y"}, "add");
  h.Output("y", TensorProto::FLOAT);
  ir::StructInfo s = ImportedResult(h);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->StaticShape(), (std::optional<std::vector<int64_t>>{std::vector<int64_t>{20}}));
}

}  // namespace
}  // namespace quilt::importers::onnx
