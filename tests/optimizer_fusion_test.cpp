// Fusion passes: which nodes end up in one FusedGroup, and that the fused
// graph computes the same outputs as the original on fresh random inputs.
#include <catch2/catch.hpp>

#include "ir/verifier.h"
#include "optimizer/fusion_group.h"
#include "optimizer/pass.h"
#include "optimizer/passes.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::attrs;
using graphc::testing::GraphBuilder;

namespace {
std::vector<const Node*> live(const Graph& g) {
  std::vector<const Node*> out;
  for (const auto& n : g.nodes)
    if (!n.dead) out.push_back(&n);
  return out;
}

Graph fused(Graph g) {
  optimizer::PassContext ctx;
  ctx.verify_after_all = true;
  REQUIRE(optimizer::run_passes(g, ctx).ok());
  return g;
}

Tensor rand_t(Shape s) { return testing::random_tensor(DType::kFloat32, s, testing::test_rng()); }
}  // namespace

TEST_CASE("an elementwise chain with side inputs becomes one kernel", "[fusion]") {
  // Rewrite: y = Add(Tanh(Mul(Add(x, bias), scale)), residual)  ==>  one FusedGroup(elementwise)
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {4, 32});
  auto res = b.input("residual", DType::kFloat32, {4, 32});
  auto bias = b.constant("bias", rand_t({32}));
  auto scale = b.constant("scale", Tensor::from_f32({0.7f}, {}), false);
  auto a = b.node(OpKind::Add, {x, bias});
  auto m = b.node(OpKind::Mul, {a, scale});
  auto t = b.node(OpKind::Tanh, {m});
  b.output(b.node(OpKind::Add, {t, res}));
  Graph before = b.build();
  Graph after = fused(before);
  auto nodes = live(after);
  REQUIRE(nodes.size() == 1);
  CHECK(nodes[0]->op == OpKind::FusedGroup);
  CHECK(nodes[0]->fusion == ir::FusionKind::kElementwise);
  CHECK(optimizer::covered_node_names(*nodes[0]).size() == 4);
  // The scalar scale is embedded; x, residual and bias are inputs.
  CHECK(nodes[0]->inputs.size() == 3);
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) < 1e-6);
}

TEST_CASE("a value read outside the group becomes a second output", "[fusion]") {
  // Rewrite: a = Sigmoid(x); y1 = Mul(a, x); y2 = ReduceSum(a)
  //          ==>  {a, y1} = FusedGroup(Sigmoid, Mul); y2 = ReduceSum(a)
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {8, 16});
  auto a = b.node(OpKind::Sigmoid, {x});
  auto y1 = b.node(OpKind::Mul, {a, x});
  auto axes = b.constant("axes", Tensor::from_i64({1}, {1}), false);
  auto y2 = b.node(OpKind::ReduceSum, {a, axes});
  b.output(y1);
  b.output(y2);
  Graph before = b.build();
  optimizer::PassContext ctx;
  Graph after = before;
  REQUIRE(optimizer::fuse_elementwise(after, ctx).ok());
  after.compact();
  REQUIRE(verify(after, {.require_shapes = true}).ok());
  int groups = 0;
  for (const auto* n : live(after))
    if (n->op == OpKind::FusedGroup) {
      ++groups;
      CHECK(n->outputs.size() == 2);
    }
  CHECK(groups == 1);
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) < 1e-6);
}

TEST_CASE("MatMul takes its bias and activation as an epilogue", "[fusion]") {
  // Rewrite: y = Relu(Add(MatMul(x, W), b))  ==>  FusedGroup(gemm){MatMul, Add, Relu}
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 16, 32});
  auto w = b.constant("W", rand_t({32, 24}));
  auto bias = b.constant("b", rand_t({24}));
  auto mm = b.node(OpKind::MatMul, {x, w});
  auto add = b.node(OpKind::Add, {mm, bias});
  b.output(b.node(OpKind::Relu, {add}));
  Graph before = b.build();
  Graph after = fused(before);
  auto nodes = live(after);
  REQUIRE(nodes.size() == 1);
  CHECK(nodes[0]->fusion == ir::FusionKind::kGemm);
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) < 1e-5);
}

TEST_CASE("softmax takes its scale and mask as a prologue", "[fusion]") {
  // Rewrite: p = Softmax(Add(Div(MatMul(q, k), 8), mask))
  //          ==>  s = MatMul(q, k); p = FusedGroup(reduction){Div, Add, Softmax}
  GraphBuilder b;
  auto q = b.input("q", DType::kFloat32, {2, 4, 8, 16});
  auto k = b.input("k", DType::kFloat32, {2, 4, 16, 8});
  auto mask = b.input("mask", DType::kFloat32, {2, 1, 1, 8});
  auto eight = b.constant("eight", Tensor::from_f32({8.0f}, {}), false);
  auto s = b.node(OpKind::MatMul, {q, k});
  auto d = b.node(OpKind::Div, {s, eight});
  auto a = b.node(OpKind::Add, {d, mask});
  b.output(b.node(OpKind::Softmax, {a}, attrs({{"axis", Attribute::of_int(-1)}})));
  Graph before = b.build();
  Graph after = fused(before);
  auto nodes = live(after);
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[0]->op == OpKind::MatMul);
  CHECK(nodes[1]->fusion == ir::FusionKind::kReduction);
  CHECK(optimizer::covered_node_names(*nodes[1]).size() == 3);
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) < 1e-6);
}

TEST_CASE("fusion never creates a cycle through an unfused node", "[fusion]") {
  // Rewrite: a = Relu(x); m = MatMul(a, W); y = Add(a, m): Relu and Add must not
  // form one group (the MatMul sits between them); Add joins MatMul's epilogue.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {4, 8});
  auto w = b.constant("W", rand_t({8, 8}));
  auto a = b.node(OpKind::Relu, {x});
  auto m = b.node(OpKind::MatMul, {a, w});
  b.output(b.node(OpKind::Add, {a, m}));
  Graph before = b.build();
  Graph g = before;
  CHECK(optimizer::fusion_creates_cycle(g, {0, 2}));
  Graph after = fused(before);
  CHECK(live(after).size() == 2);
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) < 1e-6);
}

TEST_CASE("conv takes a residual add and relu, graph output names survive", "[fusion]") {
  // Rewrite: y = Relu(Add(Conv(x, W, B), x))  ==>  FusedGroup(conv){Conv, Add, Relu}, output named y
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {1, 4, 6, 6});
  auto w = b.constant("W", rand_t({4, 4, 3, 3}));
  auto bias = b.constant("B", rand_t({4}));
  auto c = b.node(OpKind::Conv, {x, w, bias}, attrs({{"pads", Attribute::of_ints({1, 1, 1, 1})}}));
  auto add = b.node(OpKind::Add, {c, x});
  auto y = b.node(OpKind::Relu, {add}, {}, 1, "y");
  b.output(y);
  Graph before = b.build();
  std::string name = before.value(y).name;
  Graph after = fused(before);
  REQUIRE(live(after).size() == 1);
  CHECK(after.value(after.outputs[0]).name == name);
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) < 1e-5);
}
