// Algebraic rewrites exporters need: each test builds the exporter's pattern,
// runs the one pass, checks the pattern became the single op, and checks
// equivalence on fresh random inputs.
#include <catch2/catch.hpp>

#include <cmath>

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
ValueId scalar(GraphBuilder& b, const std::string& name, float v) {
  return b.constant(name, Tensor::from_f32({v}, {}), false);
}
Graph apply(Graph g, optimizer::PassFn pass) {
  optimizer::PassContext ctx;
  REQUIRE(pass(g, ctx).ok());
  REQUIRE(optimizer::eliminate_dead_code(g, ctx).ok());
  g.compact();
  REQUIRE(verify(g, {.require_shapes = true}).ok());
  return g;
}
int count_ops(const Graph& g, OpKind op) {
  int n = 0;
  for (const auto& node : g.nodes)
    if (!node.dead && node.op == op) ++n;
  return n;
}
}  // namespace

TEST_CASE("BatchNormalization folds into the preceding Conv", "[rewrite]") {
  // Rewrite: BN(Conv(x, W, B), s, beta, mean, var)  ==>  Conv(x, W*k, (B-mean)*k+beta)
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {1, 3, 8, 8});
  auto w = b.constant("W", rand_t({6, 3, 3, 3}));
  auto bias = b.constant("B", rand_t({6}));
  auto c = b.node(OpKind::Conv, {x, w, bias}, attrs({{"pads", Attribute::of_ints({1, 1, 1, 1})}}));
  auto s = b.constant("s", rand_t({6}, 0.5, 1.5));
  auto be = b.constant("beta", rand_t({6}));
  auto mean = b.constant("mean", rand_t({6}));
  auto var = b.constant("var", rand_t({6}, 0.1, 2.0));
  b.output(b.node(OpKind::BatchNormalization, {c, s, be, mean, var},
                  attrs({{"epsilon", Attribute::of_float(1e-3)}})));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::fold_batchnorm_into_conv);
  CHECK(count_ops(after, OpKind::BatchNormalization) == 0);
  CHECK(count_ops(after, OpKind::Conv) == 1);
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) < 1e-4);
}

TEST_CASE("the erf GELU formula becomes one Gelu", "[rewrite]") {
  // Rewrite: Mul(Mul(x, Add(Erf(Div(x, sqrt2)), 1)), 0.5)  ==>  Gelu(x)
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {4, 16});
  auto d = b.node(OpKind::Div, {x, scalar(b, "sqrt2", std::sqrt(2.0f))});
  auto e = b.node(OpKind::Erf, {d});
  auto a = b.node(OpKind::Add, {e, scalar(b, "one", 1.0f)});
  auto m = b.node(OpKind::Mul, {x, a});
  b.output(b.node(OpKind::Mul, {m, scalar(b, "half", 0.5f)}));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::recognize_gelu);
  REQUIRE(after.live_node_count() == 1);
  CHECK(count_ops(after, OpKind::Gelu) == 1);
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) < 1e-5);
}

TEST_CASE("the HF-style GELU association (x*0.5)*(1+erf) is recognised", "[rewrite]") {
  // Rewrite: Mul(Mul(x, 0.5), Add(1, Erf(Mul(x, 1/sqrt2))))  ==>  Gelu(x)
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {3, 8});
  auto h = b.node(OpKind::Mul, {x, scalar(b, "half", 0.5f)});
  auto u = b.node(OpKind::Mul, {x, scalar(b, "rsqrt2", 1.0f / std::sqrt(2.0f))});
  auto e = b.node(OpKind::Erf, {u});
  auto a = b.node(OpKind::Add, {scalar(b, "one", 1.0f), e});
  b.output(b.node(OpKind::Mul, {h, a}));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::recognize_gelu);
  CHECK(after.live_node_count() == 1);
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) < 1e-5);
}

TEST_CASE("the tanh GELU formula becomes Gelu(approximate=tanh)", "[rewrite]") {
  // Rewrite: 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3)))  ==>  Gelu(x, approximate="tanh")
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 32});
  auto p = b.node(OpKind::Pow, {x, scalar(b, "three", 3.0f)});
  auto c = b.node(OpKind::Mul, {scalar(b, "k1", 0.044715f), p});
  auto in = b.node(OpKind::Add, {x, c});
  auto s = b.node(OpKind::Mul, {in, scalar(b, "k2", std::sqrt(2.0f / static_cast<float>(M_PI)))});
  auto t = b.node(OpKind::Tanh, {s});
  auto a = b.node(OpKind::Add, {t, scalar(b, "one", 1.0f)});
  auto h = b.node(OpKind::Mul, {x, scalar(b, "half", 0.5f)});
  b.output(b.node(OpKind::Mul, {h, a}));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::recognize_gelu);
  REQUIRE(after.live_node_count() == 1);
  CHECK(after.nodes[0].attrs.get_string("approximate", "") == "tanh");
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) < 1e-5);
}

TEST_CASE("GELU pieces read elsewhere are left alone", "[rewrite]") {
  // Rewrite: none: the Erf output is also a graph output.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {4});
  auto d = b.node(OpKind::Div, {x, scalar(b, "sqrt2", std::sqrt(2.0f))});
  auto e = b.node(OpKind::Erf, {d});
  auto a = b.node(OpKind::Add, {e, scalar(b, "one", 1.0f)});
  auto m = b.node(OpKind::Mul, {x, a});
  b.output(b.node(OpKind::Mul, {m, scalar(b, "half", 0.5f)}));
  b.output(e);
  Graph after = apply(b.build(), &optimizer::recognize_gelu);
  CHECK(count_ops(after, OpKind::Gelu) == 0);
}

TEST_CASE("a decomposed layer norm becomes LayerNormalization", "[rewrite]") {
  // Rewrite: m=ReduceMean(x,[-1]); d=x-m; v=ReduceMean(Pow(d,2)); y=d/Sqrt(v+eps)*g+b
  //          ==>  LayerNormalization(x, g, b, axis=2, epsilon=eps)
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 5, 32});
  auto axes = b.constant("axes", Tensor::from_i64({-1}, {1}), false);
  auto m = b.node(OpKind::ReduceMean, {x, axes});
  auto d = b.node(OpKind::Sub, {x, m});
  auto p = b.node(OpKind::Pow, {d, scalar(b, "two", 2.0f)});
  auto v = b.node(OpKind::ReduceMean, {p, axes});
  auto ve = b.node(OpKind::Add, {v, scalar(b, "eps", 1e-5f)});
  auto s = b.node(OpKind::Sqrt, {ve});
  auto n = b.node(OpKind::Div, {d, s});
  auto gm = b.node(OpKind::Mul, {n, b.constant("gamma", rand_t({32}))});
  b.output(b.node(OpKind::Add, {gm, b.constant("beta", rand_t({32}))}));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::recognize_layernorm);
  REQUIRE(after.live_node_count() == 1);
  CHECK(count_ops(after, OpKind::LayerNormalization) == 1);
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) < 1e-4);
}
