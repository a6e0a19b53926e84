// unflatten-gemm and hoist-matmul-scale: each test builds the exporter's
// pattern, runs the pass, checks the rewrite happened (or not, when a
// condition fails) and checks equivalence on fresh random inputs.
#include <catch2/catch.hpp>

#include "ir/verifier.h"
#include "optimizer/passes.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::attrs;
using graphc::testing::GraphBuilder;

namespace {
Tensor rand_t(Shape s, double lo = -1, double hi = 1) {
  return testing::random_tensor(DType::kFloat32, s, testing::test_rng(), lo, hi);
}
Graph apply(Graph g, optimizer::PassFn pass) {
  optimizer::PassContext ctx;
  REQUIRE(pass(g, ctx).ok());
  REQUIRE(optimizer::eliminate_dead_code(g, ctx).ok());
  g.compact();
  Status v = verify(g, {.require_shapes = true});
  INFO(v.message());
  REQUIRE(v.ok());
  return g;
}
int count_ops(const Graph& g, OpKind op) {
  int n = 0;
  for (const auto& node : g.nodes)
    if (!node.dead && node.op == op) ++n;
  return n;
}
ValueId shape_const(GraphBuilder& b, const std::string& name, std::vector<int64_t> dims) {
  const auto rank = static_cast<int64_t>(dims.size());
  return b.constant(name, Tensor::from_i64(dims, {rank}), false);
}
// Reshape([2,5,8] -> [10,8]) -> Gemm(W, C) -> Reshape([2,5,N]) -> Relu
Graph linear_on_3d(bool trans_b, bool bias, Shape bias_shape = {6}) {
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 5, 8});
  auto flat = b.node(OpKind::Reshape, {x, shape_const(b, "s1", {-1, 8})});
  auto w = b.constant("W", rand_t(trans_b ? Shape{6, 8} : Shape{8, 6}));
  std::vector<ValueId> ins{flat, w};
  if (bias) ins.push_back(b.constant("C", rand_t(bias_shape)));
  auto gemm = b.node(OpKind::Gemm, ins, attrs({{"transB", Attribute::of_int(trans_b ? 1 : 0)}}));
  auto y = b.node(OpKind::Reshape, {gemm, shape_const(b, "s2", {2, 5, 6})});
  b.output(b.node(OpKind::Relu, {y}));
  return b.build();
}
}  // namespace

TEST_CASE("unflatten-gemm turns Reshape/Gemm/Reshape into MatMul + Add", "[rewrite]") {
  // Rewrite: Reshape(Gemm(Reshape(x,[M,K]), W^T, C), [..,N]) ==> Add(MatMul(x, W), C)
  for (bool trans_b : {false, true}) {
    Graph before = linear_on_3d(trans_b, true);
    Graph after = apply(before, &optimizer::unflatten_gemm);
    CHECK(count_ops(after, OpKind::Gemm) == 0);
    CHECK(count_ops(after, OpKind::Reshape) == 0);
    CHECK(count_ops(after, OpKind::MatMul) == 1);
    CHECK(count_ops(after, OpKind::Add) == 1);
    CHECK(testing::max_output_diff(before, after, testing::test_rng()) < 1e-5);
  }
  // Without a bias the MatMul writes the reshaped value directly.
  Graph before = linear_on_3d(false, false);
  Graph after = apply(before, &optimizer::unflatten_gemm);
  CHECK(count_ops(after, OpKind::MatMul) == 1);
  CHECK(count_ops(after, OpKind::Add) == 0);
  CHECK(count_ops(after, OpKind::Reshape) == 0);
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) < 1e-5);
}

TEST_CASE("unflatten-gemm leaves other Gemms alone", "[rewrite]") {
  // A [1,N] bias is fine; a full [M,N] C, alpha != 1, a non-constant
  // transposed B or a reshape read elsewhere keep the Gemm.
  Graph row = apply(linear_on_3d(false, true, {1, 6}), &optimizer::unflatten_gemm);
  CHECK(count_ops(row, OpKind::Gemm) == 0);
  Graph full = apply(linear_on_3d(false, true, {10, 6}), &optimizer::unflatten_gemm);
  CHECK(count_ops(full, OpKind::Gemm) == 1);
  {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {2, 5, 8});
    auto w = b.input("w", DType::kFloat32, {6, 8});
    auto flat = b.node(OpKind::Reshape, {x, shape_const(b, "s1", {10, 8})});
    auto gemm = b.node(OpKind::Gemm, {flat, w}, attrs({{"transB", Attribute::of_int(1)}}));
    b.output(b.node(OpKind::Reshape, {gemm, shape_const(b, "s2", {2, 5, 6})}));
    Graph g = apply(b.build(), &optimizer::unflatten_gemm);
    CHECK(count_ops(g, OpKind::Gemm) == 1);
  }
  {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {2, 5, 8});
    auto flat = b.node(OpKind::Reshape, {x, shape_const(b, "s1", {10, 8})});
    auto gemm = b.node(OpKind::Gemm, {flat, b.constant("W", rand_t({8, 6}))},
                       attrs({{"alpha", Attribute::of_float(0.5f)}}));
    b.output(b.node(OpKind::Reshape, {gemm, shape_const(b, "s2", {2, 5, 6})}));
    b.output(flat);  // the flat view is read elsewhere too
    Graph g = apply(b.build(), &optimizer::unflatten_gemm);
    CHECK(count_ops(g, OpKind::Gemm) == 1);
  }
}

TEST_CASE("hoist-matmul-scale moves operand scales after the MatMul", "[rewrite]") {
  // Rewrite: MatMul(q * s1, Transpose(k * s2)) ==> MatMul(q, Transpose(k)) * (s1*s2);
  // Div by a scalar counts as its inverse. The softmax after it is unchanged.
  GraphBuilder b;
  auto q = b.input("q", DType::kFloat32, {2, 3, 7, 4});
  auto k = b.input("k", DType::kFloat32, {2, 3, 7, 4});
  auto qs = b.node(OpKind::Mul, {q, b.constant("s1", Tensor::from_f32({0.7f}, {}), false)});
  auto ks = b.node(OpKind::Div, {k, b.constant("s2", Tensor::from_f32({1.6f}, {}), false)});
  auto kt = b.node(OpKind::Transpose, {ks}, attrs({{"perm", Attribute::of_ints({0, 1, 3, 2})}}));
  auto scores = b.node(OpKind::MatMul, {qs, kt});
  b.output(b.node(OpKind::Softmax, {scores}));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::hoist_matmul_scale);
  CHECK(count_ops(after, OpKind::Div) == 0);
  CHECK(count_ops(after, OpKind::Mul) == 1);
  // The remaining Mul reads the MatMul's output.
  for (const auto& n : after.nodes)
    if (n.op == OpKind::Mul)
      CHECK(after.node(after.value(n.inputs[0]).producer).op == OpKind::MatMul);
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) < 1e-5);
}

TEST_CASE("hoist-matmul-scale keeps scales that are not scalars or are shared", "[rewrite]") {
  // A per-channel scale does not commute with the product; a scaled operand
  // read by another node must stay computed.
  GraphBuilder b;
  auto q = b.input("q", DType::kFloat32, {4, 5});
  auto k = b.input("k", DType::kFloat32, {5, 3});
  auto qs = b.node(OpKind::Mul, {q, b.constant("s", rand_t({5}, 0.5, 1.5))});
  auto ks = b.node(OpKind::Mul, {k, b.constant("t", Tensor::from_f32({2.0f}, {}), false)});
  b.output(b.node(OpKind::MatMul, {qs, ks}));
  b.output(ks);
  Graph before = b.build();
  Graph after = apply(before, &optimizer::hoist_matmul_scale);
  CHECK(count_ops(after, OpKind::Mul) == 2);
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) < 1e-6);
}

TEST_CASE("unflatten-gemm handles K split over trailing dims", "[rewrite]") {
  // Rewrite: Reshape([2,5,3,4] -> [10,12]) -> Gemm -> Reshape([2,5,N])
  //   ==> Add(MatMul(Reshape(x, [2,5,12]), W), C): the flattening view stays a view.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 5, 3, 4});
  auto flat = b.node(OpKind::Reshape, {x, shape_const(b, "s1", {10, 12})});
  auto gemm =
      b.node(OpKind::Gemm, {flat, b.constant("W", rand_t({12, 6})), b.constant("C", rand_t({6}))});
  auto y = b.node(OpKind::Reshape, {gemm, shape_const(b, "s2", {2, 5, 6})});
  b.output(b.node(OpKind::Relu, {y}));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::unflatten_gemm);
  CHECK(count_ops(after, OpKind::Gemm) == 0);
  CHECK(count_ops(after, OpKind::Reshape) == 1);
  CHECK(count_ops(after, OpKind::MatMul) == 1);
  for (const auto& n : after.nodes)
    if (n.op == OpKind::MatMul) CHECK(after.value(n.inputs[0]).shape == Shape{2, 5, 12});
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) < 1e-5);
}

TEST_CASE("a Transpose that moves only size-1 dims becomes a view", "[rewrite]") {
  // Rewrite: Transpose([197,1,768], perm [1,0,2]) ==> Reshape(x, [1,197,768]);
  // a perm that reorders two non-1 dims stays a Transpose.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {7, 1, 6});
  auto t = b.node(OpKind::Transpose, {x}, attrs({{"perm", Attribute::of_ints({1, 0, 2})}}));
  b.output(b.node(OpKind::Relu, {t}));
  auto u = b.node(OpKind::Transpose, {x}, attrs({{"perm", Attribute::of_ints({2, 1, 0})}}));
  b.output(b.node(OpKind::Relu, {u}));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::cancel_transposes);
  CHECK(count_ops(after, OpKind::Transpose) == 1);
  CHECK(count_ops(after, OpKind::Reshape) == 1);
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) == 0);
}
