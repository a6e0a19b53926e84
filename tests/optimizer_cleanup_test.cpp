// Cleanup passes: each test states the rewrite, checks the graph changed as
// intended and that outputs are unchanged on fresh random inputs.
#include <catch2/catch.hpp>

#include "ir/verifier.h"
#include "optimizer/pass.h"
#include "optimizer/passes.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::attrs;
using graphc::testing::GraphBuilder;

namespace {
int count_ops(const Graph& g, OpKind op) {
  int n = 0;
  for (const auto& node : g.nodes)
    if (!node.dead && node.op == op) ++n;
  return n;
}

Graph run_one(Graph g, optimizer::PassFn pass) {
  optimizer::PassContext ctx;
  REQUIRE(pass(g, ctx).ok());
  g.compact();
  REQUIRE(verify(g, {.require_shapes = true}).ok());
  return g;
}
}  // namespace

TEST_CASE("dce removes a branch no output reads", "[optimizer]") {
  // Rewrite: y = Relu(x); unused = Exp(x)  ==>  y = Relu(x)
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {4, 8});
  auto y = b.node(OpKind::Relu, {x});
  b.node(OpKind::Exp, {x});
  b.output(y);
  Graph before = b.build();
  Graph after = run_one(before, &optimizer::eliminate_dead_code);
  CHECK(count_ops(after, OpKind::Exp) == 0);
  CHECK(count_ops(after, OpKind::Relu) == 1);
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) == 0.0);
}

TEST_CASE("cse merges identical nodes and keeps output names", "[optimizer]") {
  // Rewrite: a = Relu(x); b = Relu(x); y = Add(a, b)  ==>  a = Relu(x); y = Add(a, a)
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {3, 5});
  auto r1 = b.node(OpKind::Relu, {x});
  auto r2 = b.node(OpKind::Relu, {x});
  auto y = b.node(OpKind::Add, {r1, r2});
  b.output(y);
  Graph before = b.build();
  Graph after = run_one(before, &optimizer::eliminate_common_subexpressions);
  CHECK(count_ops(after, OpKind::Relu) == 1);
  CHECK(after.value(after.outputs[0]).name == before.value(before.outputs[0]).name);
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) == 0.0);
}

TEST_CASE("cse does not merge nodes with different attributes", "[optimizer]") {
  // Rewrite: none: LeakyRelu(alpha=0.1) and LeakyRelu(alpha=0.2) differ.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {6});
  auto a = b.node(OpKind::LeakyRelu, {x}, attrs({{"alpha", Attribute::of_float(0.1)}}));
  auto c = b.node(OpKind::LeakyRelu, {x}, attrs({{"alpha", Attribute::of_float(0.2)}}));
  b.output(b.node(OpKind::Add, {a, c}));
  Graph after = run_one(b.build(), &optimizer::eliminate_common_subexpressions);
  CHECK(count_ops(after, OpKind::LeakyRelu) == 2);
}

TEST_CASE("remove-noops drops Identity, same-type Cast and no-op Reshape", "[optimizer]") {
  // Rewrite: y = Reshape(Cast<float>(Identity(Relu(x))), [2,3])  with x: 2x3  ==>  y = Relu(x)
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 3});
  auto r = b.node(OpKind::Relu, {x});
  auto i = b.node(OpKind::Identity, {r});
  auto c = b.node(OpKind::Cast, {i}, attrs({{"to", Attribute::of_int(1)}}));
  auto shape = b.constant("shape", Tensor::from_i64({2, 3}, {2}), false);
  auto y = b.node(OpKind::Reshape, {c, shape}, {}, 1, "final");
  b.output(y);
  Graph before = b.build();
  std::string out_name = before.value(y).name;
  Graph after = run_one(before, &optimizer::remove_noops);
  CHECK(after.live_node_count() == 1);
  CHECK(after.value(after.outputs[0]).name == out_name);
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) == 0.0);
}

TEST_CASE("remove-noops keeps an Identity that maps a graph input to an output", "[optimizer]") {
  // Rewrite: none: y = Identity(x) must keep distinct input and output names.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2});
  b.output(b.node(OpKind::Identity, {x}));
  Graph after = run_one(b.build(), &optimizer::remove_noops);
  CHECK(after.live_node_count() == 1);
}

TEST_CASE("fold-constants evaluates a shape subgraph into a constant", "[optimizer]") {
  // Rewrite: s = Shape(x); d = Gather(s, 0); ... y = Reshape(x, Concat(Unsqueeze(d), [-1]))
  //          ==>  y = Reshape(x, const[4, 6])
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {4, 2, 3});
  auto s = b.node(OpKind::Shape, {x});
  auto idx = b.constant("idx", Tensor::scalar_i64(0), false);
  auto d = b.node(OpKind::Gather, {s, idx});
  auto axes = b.constant("axes", Tensor::from_i64({0}, {1}), false);
  auto du = b.node(OpKind::Unsqueeze, {d, axes});
  auto minus1 = b.constant("m1", Tensor::from_i64({-1}, {1}), false);
  auto cat = b.node(OpKind::Concat, {du, minus1}, attrs({{"axis", Attribute::of_int(0)}}));
  auto y = b.node(OpKind::Reshape, {x, cat});
  b.output(y);
  Graph before = b.build();
  CHECK(before.value(y).shape == Shape{4, 6});
  Graph after = run_one(before, &optimizer::fold_constants);
  CHECK(after.live_node_count() == 1);
  CHECK(count_ops(after, OpKind::Reshape) == 1);
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) == 0.0);
}

TEST_CASE("fold-constants does not duplicate a large weight read twice", "[optimizer]") {
  // Rewrite: wt = Transpose(W) where W (2 MiB) is also read by another node: left as a node.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {1, 512});
  auto w =
      b.constant("W", testing::random_tensor(DType::kFloat32, {512, 1024}, testing::test_rng()));
  auto wt = b.node(OpKind::Transpose, {w});
  auto y1 = b.node(OpKind::MatMul, {x, w});
  auto y2 = b.node(OpKind::ReduceSum, {wt});
  b.output(y1);
  b.output(y2);
  Graph before = b.build();
  Graph after = run_one(before, &optimizer::fold_constants);
  CHECK(count_ops(after, OpKind::Transpose) == 1);
}

TEST_CASE("pipeline runs with verification after every pass", "[optimizer]") {
  // Rewrite: the default pipeline on Relu(Identity(x)) + dead Exp leaves one Relu.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {8});
  auto i = b.node(OpKind::Identity, {x});
  b.node(OpKind::Exp, {x});
  b.output(b.node(OpKind::Relu, {i}));
  Graph before = b.build();
  Graph after = before;
  optimizer::PassContext ctx;
  ctx.verify_after_all = true;
  std::vector<std::string> dumped;
  ctx.dump_after = {"all"};
  ctx.dump_sink = [&](const std::string& pass, const std::string&) { dumped.push_back(pass); };
  REQUIRE(optimizer::run_passes(after, ctx).ok());
  CHECK(after.live_node_count() == 1);
  CHECK(dumped.size() == optimizer::default_pipeline().size());
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) == 0.0);
  CHECK(!optimizer::validate_pass_names({"no-such-pass"}, false).ok());
}

TEST_CASE("remove-noops turns CastLike into Cast to the like input's dtype", "[optimizer]") {
  // Rewrite: CastLike(x: float32[3x4], like: float16[5]) ==> Cast(x, to=float16);
  // CastLike to x's own dtype disappears.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {3, 4});
  auto like = b.input("like", DType::kFloat16, {5});
  auto same = b.input("same", DType::kFloat32, {1});
  b.output(b.node(OpKind::CastLike, {x, like}));
  b.output(b.node(OpKind::Relu, {b.node(OpKind::CastLike, {x, same})}));
  Graph before = b.build();
  Graph after = run_one(before, &optimizer::remove_noops);
  CHECK(count_ops(after, OpKind::CastLike) == 0);
  CHECK(count_ops(after, OpKind::Cast) == 1);
  for (const auto& n : after.nodes)
    if (n.op == OpKind::Cast) CHECK(n.inputs.size() == 1);
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) == 0.0);
}
