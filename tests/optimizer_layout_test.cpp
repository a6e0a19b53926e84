// Layout rewrites: cancel-transposes, fold-transpose-into-matmul,
// merge-matmul-bias, the MatMul _trans_a/_trans_b attributes they rely on, and
// the softmax scale/mask prologue. Each test builds the pattern, runs the
// pass, counts what is left, verifies the IR and compares outputs before and
// after through the reference executor on fresh random inputs.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "driver/load_model.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "optimizer/passes.h"
#include "reference/executor.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::attrs;
using graphc::testing::GraphBuilder;

namespace {
Tensor rand_t(Shape s) { return testing::random_tensor(DType::kFloat32, s, testing::test_rng()); }
Attribute I(int64_t v) { return Attribute::of_int(v); }
AttributeMap perm(std::vector<int64_t> p) {
  return attrs({{"perm", Attribute::of_ints(std::move(p))}});
}
ValueId axes(GraphBuilder& b, const std::string& name, std::vector<int64_t> a) {
  auto n = static_cast<int64_t>(a.size());
  return b.constant(name, Tensor::from_i64(a, {n}), false);
}

// Runs `passes` in order, then DCE, and checks the result verifies.
Graph apply(Graph g, std::vector<optimizer::PassFn> passes) {
  optimizer::PassContext ctx;
  for (auto pass : passes) REQUIRE(pass(g, ctx).ok());
  REQUIRE(optimizer::eliminate_dead_code(g, ctx).ok());
  g.compact();
  REQUIRE(verify(g, {.require_shapes = true}).ok());
  return g;
}
Graph apply(Graph g, optimizer::PassFn pass) { return apply(std::move(g), std::vector{pass}); }

int count_ops(const Graph& g, OpKind op) {
  int n = 0;
  for (const auto& node : g.nodes)
    if (!node.dead && node.op == op) ++n;
  return n;
}
const Node* first(const Graph& g, OpKind op) {
  for (const auto& node : g.nodes)
    if (!node.dead && node.op == op) return &node;
  return nullptr;
}
double diff(const Graph& before, const Graph& after) {
  return testing::max_output_diff(before, after, testing::test_rng());
}
}  // namespace

// ---- cancel-transposes ---------------------------------------------------

TEST_CASE("two transposes that undo each other disappear", "[rewrite]") {
  // Rewrite: Relu(Transpose(Transpose(x, [1,2,0]), [2,0,1]))  ==>  Relu(x)
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 3, 4});
  auto t1 = b.node(OpKind::Transpose, {x}, perm({1, 2, 0}));
  auto t2 = b.node(OpKind::Transpose, {t1}, perm({2, 0, 1}));
  b.output(b.node(OpKind::Relu, {t2}));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::cancel_transposes);
  CHECK(count_ops(after, OpKind::Transpose) == 0);
  CHECK(after.live_node_count() == 1);
  CHECK(diff(before, after) == 0.0);  // pure data movement: bit-exact
}

TEST_CASE("two transposes compose into one", "[rewrite]") {
  // Rewrite: Transpose(Transpose(x, p1=[0,2,1,3]), p2=[1,0,3,2])  ==>  Transpose(x,
  // p1[p2[i]]=[2,0,3,1])
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 3, 4, 5});
  auto t1 = b.node(OpKind::Transpose, {x}, perm({0, 2, 1, 3}));
  b.output(b.node(OpKind::Transpose, {t1}, perm({1, 0, 3, 2})));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::cancel_transposes);
  REQUIRE(count_ops(after, OpKind::Transpose) == 1);
  CHECK(first(after, OpKind::Transpose)->attrs.get_ints("perm") ==
        std::vector<int64_t>{2, 0, 3, 1});
  CHECK(after.value(after.outputs[0]).name == before.value(before.outputs[0]).name);
  CHECK(diff(before, after) == 0.0);
}

TEST_CASE("a chain of three transposes collapses in one sweep", "[rewrite]") {
  // Rewrite: T(T(T(x, [1,0,2]), [0,2,1]), [2,1,0])  ==>  T(x, [2,0,1])
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 3, 4});
  auto t1 = b.node(OpKind::Transpose, {x}, perm({1, 0, 2}));
  auto t2 = b.node(OpKind::Transpose, {t1}, perm({0, 2, 1}));
  b.output(b.node(OpKind::Transpose, {t2}, perm({2, 1, 0})));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::cancel_transposes);
  CHECK(count_ops(after, OpKind::Transpose) == 1);
  CHECK(diff(before, after) == 0.0);
}

TEST_CASE("an identity-perm Transpose is removed and the output keeps its name", "[rewrite]") {
  // Rewrite: Transpose(Relu(x), [0,1,2]) as graph output  ==>  Relu(x), renamed to the output
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 3, 4});
  auto r = b.node(OpKind::Relu, {x});
  b.output(b.node(OpKind::Transpose, {r}, perm({0, 1, 2}), 1, "t"));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::cancel_transposes);
  CHECK(count_ops(after, OpKind::Transpose) == 0);
  CHECK(after.value(after.outputs[0]).name == "t:0");
  CHECK(diff(before, after) == 0.0);
}

TEST_CASE("a cancelling pair between a graph input and output keeps one node", "[rewrite]") {
  // Rewrite: output = T(T(x, [1,0]), [1,0]), x a graph input  ==>  output = T(x, [0,1])
  // (the output name cannot move onto the graph input, so one identity copy stays)
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {3, 4});
  auto t1 = b.node(OpKind::Transpose, {x}, perm({1, 0}));
  b.output(b.node(OpKind::Transpose, {t1}, perm({1, 0})));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::cancel_transposes);
  CHECK(after.live_node_count() == 1);
  CHECK(after.value(after.outputs[0]).name == before.value(before.outputs[0]).name);
  CHECK(diff(before, after) == 0.0);
}

TEST_CASE("a transpose read elsewhere stays for that reader only", "[rewrite]") {
  // Rewrite: y1 = Relu(T(T(x,[1,0]),[1,0])); y2 = Exp(T(x,[1,0]))
  //          ==>  y1 = Relu(x); y2 = Exp(T(x,[1,0]))   (the op count never grows)
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {3, 4});
  auto t1 = b.node(OpKind::Transpose, {x}, perm({1, 0}));
  auto t2 = b.node(OpKind::Transpose, {t1}, perm({1, 0}));
  b.output(b.node(OpKind::Relu, {t2}));
  b.output(b.node(OpKind::Exp, {t1}));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::cancel_transposes);
  CHECK(count_ops(after, OpKind::Transpose) == 1);
  CHECK(first(after, OpKind::Relu)->inputs[0] == after.inputs[0]);
  CHECK(diff(before, after) == 0.0);
}

TEST_CASE("Unsqueeze then Squeeze of the same axis cancels", "[rewrite]") {
  // Rewrite: Exp(Squeeze(Unsqueeze(x, [1]), [1]))  ==>  Exp(x)
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {3, 4});
  auto u = b.node(OpKind::Unsqueeze, {x, axes(b, "ax_u", {1})});
  auto s = b.node(OpKind::Squeeze, {u, axes(b, "ax_s", {1})});
  b.output(b.node(OpKind::Exp, {s}));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::cancel_transposes);
  CHECK(count_ops(after, OpKind::Unsqueeze) == 0);
  CHECK(count_ops(after, OpKind::Squeeze) == 0);
  CHECK(after.live_node_count() == 1);
  CHECK(diff(before, after) == 0.0);
}

TEST_CASE("Reshape/Flatten/Unsqueeze chains become one Reshape", "[rewrite]") {
  // Rewrite: Unsqueeze(Flatten(Reshape(x[2,3,4], [6,4]), 1), [0])  ==>  Reshape(x, [1,6,4])
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 3, 4});
  auto r = b.node(OpKind::Reshape, {x, axes(b, "shape", {6, -1})});
  auto f = b.node(OpKind::Flatten, {r}, attrs({{"axis", I(1)}}));
  b.output(b.node(OpKind::Unsqueeze, {f, axes(b, "ax", {0})}));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::cancel_transposes);
  REQUIRE(after.live_node_count() == 1);
  const Node* only = first(after, OpKind::Reshape);
  REQUIRE(only != nullptr);
  CHECK(only->inputs[0] == after.inputs[0]);
  CHECK(after.value(only->inputs[1]).constant->to_i64_vector() == std::vector<int64_t>{1, 6, 4});
  CHECK(diff(before, after) == 0.0);
}

TEST_CASE("a Reshape chain with an empty dim keeps the zero (allowzero)", "[rewrite]") {
  // Rewrite: Reshape(Reshape(x[0,6], [0,2,3]), [3,0,2])  ==>  Reshape(x, [3,0,2], allowzero=1)
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {0, 6});
  auto r = b.node(OpKind::Reshape, {x, axes(b, "s1", {0, 2, 3})});
  b.output(b.node(OpKind::Reshape, {r, axes(b, "s2", {3, 0, 2})}, attrs({{"allowzero", I(1)}})));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::cancel_transposes);
  REQUIRE(count_ops(after, OpKind::Reshape) == 1);
  CHECK(first(after, OpKind::Reshape)->attrs.get_int("allowzero", 0) == 1);
  CHECK(infer_shapes(after).ok());
  CHECK(after.value(after.outputs[0]).shape == Shape{3, 0, 2});
}

TEST_CASE("a Transpose feeding a Reshape is not merged across kinds", "[rewrite]") {
  // Rewrite: none: Reshape(Transpose(x)) changes element order, it is not a reshape chain.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {3, 4});
  auto t = b.node(OpKind::Transpose, {x}, perm({1, 0}));
  b.output(b.node(OpKind::Reshape, {t, axes(b, "shape", {12})}));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::cancel_transposes);
  CHECK(count_ops(after, OpKind::Transpose) == 1);
  CHECK(count_ops(after, OpKind::Reshape) == 1);
  CHECK(diff(before, after) == 0.0);
}

// ---- MatMul _trans_a / _trans_b ------------------------------------------

TEST_CASE("MatMul _trans_a/_trans_b read operands with the last two axes swapped", "[rewrite]") {
  // Rewrite (by hand): MatMul(Transpose(a), Transpose(b))  ==  MatMul(a, b, _trans_a=1,
  // _trans_b=1), with batch broadcasting: a[2,1,5,3] b[3,4,5] -> [2,3,3,4].
  auto inputs =
      std::map<std::string, Tensor>{{"a", rand_t({2, 1, 5, 3})}, {"b", rand_t({3, 4, 5})}};
  GraphBuilder e;
  auto ea = e.input("a", DType::kFloat32, {2, 1, 5, 3});
  auto eb = e.input("b", DType::kFloat32, {3, 4, 5});
  auto ta = e.node(OpKind::Transpose, {ea}, perm({0, 1, 3, 2}));
  auto tb = e.node(OpKind::Transpose, {eb}, perm({0, 2, 1}));
  e.output(e.node(OpKind::MatMul, {ta, tb}, {}, 1, "mm"));
  Graph explicit_t = e.build();
  GraphBuilder f;
  auto fa = f.input("a", DType::kFloat32, {2, 1, 5, 3});
  auto fb = f.input("b", DType::kFloat32, {3, 4, 5});
  f.output(
      f.node(OpKind::MatMul, {fa, fb}, attrs({{"_trans_a", I(1)}, {"_trans_b", I(1)}}), 1, "mm"));
  Graph flagged = f.build();
  CHECK(flagged.value(flagged.outputs[0]).shape == Shape{2, 3, 3, 4});
  CHECK(verify(flagged, {.require_shapes = true}).ok());
  auto want = reference::execute(explicit_t, inputs);
  auto got = reference::execute(flagged, inputs);
  REQUIRE(want.ok());
  REQUIRE(got.ok());
  CHECK(testing::max_abs_diff(want->at("mm:0"), got->at("mm:0")) == 0.0);
}

TEST_CASE("MatMul _trans_a with a vector B and integer elements", "[rewrite]") {
  // Rewrite (by hand): MatMul(Transpose(a[4,3]), v[4]) == MatMul(a, v, _trans_a=1) -> [3], int64
  // exact.
  std::mt19937& rng = testing::test_rng();
  auto inputs = std::map<std::string, Tensor>{
      {"a", testing::random_tensor(DType::kInt64, {4, 3}, rng, -9, 9)},
      {"v", testing::random_tensor(DType::kInt64, {4}, rng, -9, 9)}};
  GraphBuilder e;
  auto t = e.node(OpKind::Transpose, {e.input("a", DType::kInt64, {4, 3})}, perm({1, 0}));
  e.output(e.node(OpKind::MatMul, {t, e.input("v", DType::kInt64, {4})}, {}, 1, "mm"));
  GraphBuilder f;
  auto fa = f.input("a", DType::kInt64, {4, 3});
  f.output(f.node(OpKind::MatMul, {fa, f.input("v", DType::kInt64, {4})},
                  attrs({{"_trans_a", I(1)}}), 1, "mm"));
  Graph flagged = f.build();
  CHECK(flagged.value(flagged.outputs[0]).shape == Shape{3});
  auto want = reference::execute(e.build(), inputs);
  auto got = reference::execute(flagged, inputs);
  REQUIRE(want.ok());
  REQUIRE(got.ok());
  CHECK(testing::max_abs_diff(want->at("mm:0"), got->at("mm:0")) == 0.0);
}

TEST_CASE("MatMul _trans_b on a 1-D operand is a shape error", "[rewrite]") {
  // Rewrite: none: the attribute needs rank >= 2; shape inference reports it (no throw/abort).
  GraphBuilder b;
  auto a = b.input("a", DType::kFloat32, {3, 4});
  auto v = b.input("v", DType::kFloat32, {4});
  b.output(b.node(OpKind::MatMul, {a, v}, attrs({{"_trans_b", I(1)}})));
  Status st = infer_shapes(b.graph());
  CHECK_FALSE(st.ok());
  CHECK(st.message().find("_trans") != std::string::npos);
}

// ---- fold-transpose-into-matmul -------------------------------------------

TEST_CASE("a last-two-axes Transpose becomes MatMul's _trans_a", "[rewrite]") {
  // Rewrite: MatMul(Transpose(a[2,3,8,5], [0,1,3,2]), b[2,3,8,4])  ==>  MatMul(a, b, _trans_a=1)
  GraphBuilder b;
  auto a = b.input("a", DType::kFloat32, {2, 3, 8, 5});
  auto w = b.input("b", DType::kFloat32, {2, 3, 8, 4});
  auto t = b.node(OpKind::Transpose, {a}, perm({0, 1, 3, 2}));
  b.output(b.node(OpKind::MatMul, {t, w}));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::fold_transpose_into_matmul);
  CHECK(count_ops(after, OpKind::Transpose) == 0);
  const Node* mm = first(after, OpKind::MatMul);
  REQUIRE(mm != nullptr);
  CHECK(mm->attrs.get_int("_trans_a", 0) == 1);
  CHECK_FALSE(mm->attrs.has("_trans_b"));
  CHECK(diff(before, after) == 0.0);  // same products in the same order
}

TEST_CASE("K^T in attention becomes MatMul's _trans_b", "[rewrite]") {
  // Rewrite: MatMul(q[2,4,8,16], Transpose(k[2,4,8,16], [0,1,3,2]))  ==>  MatMul(q, k, _trans_b=1)
  GraphBuilder b;
  auto q = b.input("q", DType::kFloat32, {2, 4, 8, 16});
  auto k = b.input("k", DType::kFloat32, {2, 4, 8, 16});
  b.output(b.node(OpKind::MatMul, {q, b.node(OpKind::Transpose, {k}, perm({0, 1, 3, 2}))}));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::fold_transpose_into_matmul);
  CHECK(count_ops(after, OpKind::Transpose) == 0);
  CHECK(first(after, OpKind::MatMul)->attrs.get_int("_trans_b", 0) == 1);
  CHECK(diff(before, after) == 0.0);
}

TEST_CASE("Transposes feeding Gemm flip transA and transB", "[rewrite]") {
  // Rewrite: Gemm(Transpose(a[8,4]), Transpose(b[8,6]), c, transB=1)  ==>  Gemm(a, b, c, transA=1)
  GraphBuilder b;
  auto a = b.input("a", DType::kFloat32, {8, 4});
  auto w = b.input("b", DType::kFloat32, {8, 6});
  auto c = b.input("c", DType::kFloat32, {6});
  auto ta = b.node(OpKind::Transpose, {a}, perm({1, 0}));
  auto tb = b.node(OpKind::Transpose, {w});  // default perm reverses: [1, 0]
  b.output(b.node(OpKind::Gemm, {ta, tb, c},
                  attrs({{"transB", I(1)}, {"alpha", Attribute::of_float(0.5)}})));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::fold_transpose_into_matmul);
  CHECK(count_ops(after, OpKind::Transpose) == 0);
  const Node* g = first(after, OpKind::Gemm);
  REQUIRE(g != nullptr);
  CHECK(g->attrs.get_int("transA", 0) == 1);
  CHECK(g->attrs.get_int("transB", 0) == 0);
  CHECK(diff(before, after) == 0.0);
}

TEST_CASE("one Transpose read twice by MatMul flips both operands", "[rewrite]") {
  // Rewrite: MatMul(t, t), t = Transpose(x[3,5,5], [0,2,1])  ==>  MatMul(x, x, _trans_a=1,
  // _trans_b=1)
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {3, 5, 5});
  auto t = b.node(OpKind::Transpose, {x}, perm({0, 2, 1}));
  b.output(b.node(OpKind::MatMul, {t, t}));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::fold_transpose_into_matmul);
  CHECK(count_ops(after, OpKind::Transpose) == 0);
  const Node* mm = first(after, OpKind::MatMul);
  CHECK(mm->attrs.get_int("_trans_a", 0) == 1);
  CHECK(mm->attrs.get_int("_trans_b", 0) == 1);
  CHECK(diff(before, after) == 0.0);
}

TEST_CASE("a transposed constant weight is folded by fold-constants, not flagged", "[rewrite]") {
  // Rewrite: MatMul(x, Transpose(W const)) --fold-constants-->  MatMul(x, W^T const); nothing left
  // to flag
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {4, 8});
  auto w = b.constant("W", rand_t({16, 8}));
  b.output(b.node(OpKind::MatMul, {x, b.node(OpKind::Transpose, {w}, perm({1, 0}))}));
  Graph before = b.build();
  Graph after = apply(before, {&optimizer::fold_constants, &optimizer::fold_transpose_into_matmul});
  CHECK(count_ops(after, OpKind::Transpose) == 0);
  const Node* mm = first(after, OpKind::MatMul);
  REQUIRE(mm != nullptr);
  CHECK(after.value(mm->inputs[1]).constant.has_value());
  CHECK_FALSE(mm->attrs.has("_trans_b"));
  CHECK(diff(before, after) == 0.0);
}

TEST_CASE("Transposes into MatMul that must stay", "[rewrite]") {
  // Rewrite: none: (a) the Transpose output has another reader; (b) the perm
  // moves batch axes; (c) a rank-3 perm [2,1,0] swaps the first and last axes.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 3, 4, 4});
  auto y = b.input("y", DType::kFloat32, {4, 4, 4});
  auto shared = b.node(OpKind::Transpose, {x}, perm({0, 1, 3, 2}));
  b.output(b.node(OpKind::MatMul, {shared, x}));
  b.output(b.node(OpKind::Relu, {shared}));
  auto batch = b.node(OpKind::Transpose, {x}, perm({1, 0, 2, 3}));
  b.output(b.node(OpKind::MatMul, {batch, batch}));
  auto outer = b.node(OpKind::Transpose, {y}, perm({2, 1, 0}));
  b.output(b.node(OpKind::MatMul, {outer, y}));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::fold_transpose_into_matmul);
  CHECK(count_ops(after, OpKind::Transpose) == 3);
  for (const auto& n : after.nodes)
    if (n.op == OpKind::MatMul) CHECK(n.attrs.items().empty());
  CHECK(diff(before, after) == 0.0);
}

// ---- merge-matmul-bias -----------------------------------------------------

TEST_CASE("2-D MatMul plus a bias becomes Gemm", "[rewrite]") {
  // Rewrite: Add(MatMul(x[4,8], W[8,16]), bias[16])  ==>  Gemm(x, W, bias)
  //          and Add(bias2[1,16], MatMul(...)) (bias first)  ==>  Gemm(x, W2, bias2)
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {4, 8});
  auto mm = b.node(OpKind::MatMul, {x, b.constant("W", rand_t({8, 16}))});
  b.output(b.node(OpKind::Add, {mm, b.constant("bias", rand_t({16}))}, {}, 1, "y1"));
  auto mm2 = b.node(OpKind::MatMul, {x, b.input("W2", DType::kFloat32, {8, 16})});
  b.output(b.node(OpKind::Add, {b.constant("bias2", rand_t({1, 16})), mm2}, {}, 1, "y2"));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::merge_matmul_bias);
  CHECK(count_ops(after, OpKind::MatMul) == 0);
  CHECK(count_ops(after, OpKind::Add) == 0);
  CHECK(count_ops(after, OpKind::Gemm) == 2);
  CHECK(after.value(after.outputs[0]).name == "y1:0");
  CHECK(after.value(after.outputs[1]).name == "y2:0");
  // Gemm adds the bias before rounding the product to float: within an ulp or so.
  CHECK(diff(before, after) < 1e-5);
}

TEST_CASE("MatMul transposes become Gemm transA/transB", "[rewrite]") {
  // Rewrite: Add(MatMul(T(a[8,4]), T(b[16,8])), bias[16])
  //          ==>  fold-transpose-into-matmul, merge-matmul-bias  ==>  Gemm(a, b, bias, transA=1,
  //          transB=1)
  GraphBuilder b;
  auto a = b.input("a", DType::kFloat32, {8, 4});
  auto w = b.input("b", DType::kFloat32, {16, 8});
  auto mm = b.node(OpKind::MatMul, {b.node(OpKind::Transpose, {a}, perm({1, 0})),
                                    b.node(OpKind::Transpose, {w}, perm({1, 0}))});
  b.output(b.node(OpKind::Add, {mm, b.constant("bias", rand_t({16}))}));
  Graph before = b.build();
  Graph after =
      apply(before, {&optimizer::fold_transpose_into_matmul, &optimizer::merge_matmul_bias});
  REQUIRE(after.live_node_count() == 1);
  const Node* g = first(after, OpKind::Gemm);
  REQUIRE(g != nullptr);
  CHECK(g->attrs.get_int("transA", 0) == 1);
  CHECK(g->attrs.get_int("transB", 0) == 1);
  CHECK(diff(before, after) < 1e-5);
}

TEST_CASE("MatMul plus Add that must stay", "[rewrite]") {
  // Rewrite: none: (a) batched MatMul (left to fuse-epilogues); (b) a bias that
  // broadcasts the product to [3,4,16]; (c) the MatMul output has another reader;
  // (d) a 1-D B (the product is a vector, not a Gemm).
  GraphBuilder b;
  auto x3 = b.input("x3", DType::kFloat32, {2, 4, 8});
  auto x = b.input("x", DType::kFloat32, {4, 8});
  auto w = b.constant("W", rand_t({8, 16}));
  auto bias = b.constant("bias", rand_t({16}));
  b.output(b.node(OpKind::Add, {b.node(OpKind::MatMul, {x3, w}), bias}));
  b.output(b.node(OpKind::Add,
                  {b.node(OpKind::MatMul, {x, w}), b.constant("wide", rand_t({3, 1, 16}))}));
  auto shared = b.node(OpKind::MatMul, {x, b.input("W2", DType::kFloat32, {8, 16})});
  b.output(b.node(OpKind::Add, {shared, bias}));
  b.output(b.node(OpKind::Relu, {shared}));
  b.output(b.node(OpKind::Add, {b.node(OpKind::MatMul, {x, b.input("v", DType::kFloat32, {8})}),
                                b.constant("s", rand_t({4}))}));
  Graph before = b.build();
  Graph after = apply(before, &optimizer::merge_matmul_bias);
  CHECK(count_ops(after, OpKind::Gemm) == 0);
  CHECK(count_ops(after, OpKind::MatMul) == 4);
  CHECK(count_ops(after, OpKind::Add) == 4);
  CHECK(diff(before, after) == 0.0);
}

// ---- softmax scale and mask --------------------------------------------------

namespace {
// Attention: softmax(scale(q k^T) + mask) v, the scale as Div(sqrt d) or Mul(1/sqrt d).
Graph attention(bool divide) {
  GraphBuilder b;
  auto q = b.input("q", DType::kFloat32, {2, 4, 8, 16});
  auto k = b.input("k", DType::kFloat32, {2, 4, 8, 16});
  auto v = b.input("v", DType::kFloat32, {2, 4, 8, 16});
  auto mask = b.input("mask", DType::kFloat32, {2, 1, 1, 8});
  auto kt = b.node(OpKind::Transpose, {k}, perm({0, 1, 3, 2}));
  auto s = b.node(OpKind::MatMul, {q, kt});
  auto scaled =
      divide
          ? b.node(OpKind::Div, {s, b.constant("sqrt_d", Tensor::from_f32({4.0f}, {}), false)})
          : b.node(OpKind::Mul, {s, b.constant("rsqrt_d", Tensor::from_f32({0.25f}, {}), false)});
  auto masked = b.node(OpKind::Add, {scaled, mask});
  auto p = b.node(OpKind::Softmax, {masked}, attrs({{"axis", I(-1)}}));
  b.output(b.node(OpKind::MatMul, {p, v}));
  return b.build();
}
}  // namespace

TEST_CASE("attention scale, mask and softmax land in one reduction kernel", "[rewrite]") {
  // Rewrite (default pipeline without fuse-attention, which would make it one
  // Attention): MatMul(Softmax(Add(Div|Mul(MatMul(q, T(k)), s), mask[2,1,1,8])), v)
  //          ==>  MatMul(q, k, _trans_b=1); FusedGroup(reduction){Div|Mul, Add, Softmax}; MatMul(.,
  //          v)
  for (bool divide : {true, false}) {
    CAPTURE(divide);
    Graph before = attention(divide);
    Graph after = before;
    optimizer::PassContext ctx;
    ctx.verify_after_all = true;
    ctx.disabled.insert("fuse-attention");
    REQUIRE(optimizer::run_passes(after, ctx).ok());
    REQUIRE(verify(after, {.require_shapes = true}).ok());
    CHECK(count_ops(after, OpKind::Transpose) == 0);
    CHECK(count_ops(after, OpKind::MatMul) == 2);
    CHECK(first(after, OpKind::MatMul)->attrs.get_int("_trans_b", 0) == 1);
    int groups = 0;
    for (const auto& n : after.nodes) {
      if (n.dead || n.op != OpKind::FusedGroup) continue;
      ++groups;
      CHECK(n.fusion == ir::FusionKind::kReduction);
      std::vector<OpKind> ops;
      for (const auto& inner : n.body->nodes)
        if (!inner.dead) ops.push_back(inner.op);
      std::sort(ops.begin(), ops.end());
      std::vector<OpKind> want{divide ? OpKind::Div : OpKind::Mul, OpKind::Add, OpKind::Softmax};
      std::sort(want.begin(), want.end());
      CHECK(ops == want);
      // The mask enters the kernel as an input, broadcast inside it.
      bool mask_in = false;
      for (ValueId in : n.inputs) mask_in = mask_in || after.value(in).name == "mask";
      CHECK(mask_in);
    }
    CHECK(groups == 1);
    CHECK(diff(before, after) < 1e-6);
  }
}

TEST_CASE("the shipped models keep their outputs through the default pipeline", "[rewrite]") {
  // Rewrite (default pipeline) on models/*.onnx: mlp's three 2-D MatMul+bias become Gemm;
  // every model computes the same outputs (tolerance 1e-5: Gemm rounds once, not twice).
  for (std::string name : {"mlp", "conv_block", "transformer_block"}) {
    CAPTURE(name);
    driver::LoadOptions opts;
    if (name == "transformer_block") opts.input_shapes = {{"x", {2, 16, 64}}};
    auto before = driver::load_model(testing::source_path("models/" + name + ".onnx"), opts);
    REQUIRE(before.ok());
    Graph after = *before;
    optimizer::PassContext ctx;
    ctx.verify_after_all = true;
    REQUIRE(optimizer::run_passes(after, ctx).ok());
    if (name == "mlp") {
      CHECK(ctx.counters["merge-matmul-bias: MatMul+Add became Gemm"] == 3);
      CHECK(count_ops(after, OpKind::MatMul) == 0);
    }
    CHECK(diff(*before, after) < 1e-5);
  }
}
