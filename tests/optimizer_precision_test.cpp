// convert-precision: weights and compute retyped to float16/bfloat16, IO kept,
// overflow-prone ops kept in float32 with a note, shape subgraphs untouched.
// Equivalence is checked against the float32 graph on fresh random inputs via
// the reference executor, within a relative L2 error per precision.
#include <catch2/catch.hpp>
#include <cmath>
#include <iterator>
#include <limits>

#include "driver/load_model.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "optimizer/passes.h"
#include "support/half.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::optimizer::Precision;
using graphc::testing::attrs;
using graphc::testing::GraphBuilder;

namespace {

Tensor rand_t(Shape s, double lo = -1, double hi = 1) {
  return testing::random_tensor(DType::kFloat32, s, testing::test_rng(), lo, hi);
}
// Weights scaled by 1/sqrt(fan_in) so activations stay O(1), as trained nets do.
Tensor weight(Shape s, int64_t fan_in) {
  double a = 1.0 / std::sqrt(static_cast<double>(fan_in));
  return rand_t(std::move(s), -a, a);
}
DType dtype_of(Precision p) { return p == Precision::kFp16 ? DType::kFloat16 : DType::kBFloat16; }
// Stated tolerances (relative L2 over each output): float16 keeps 11
// significant bits, bfloat16 8.
double tolerance(Precision p) { return p == Precision::kFp16 ? 1e-2 : 3e-2; }

struct Converted {
  Graph graph;
  std::vector<std::string> notes;
};

Converted convert(Graph g, Precision p, bool keep_io = true) {
  optimizer::PassContext ctx;
  ctx.precision = p;
  ctx.keep_io_dtype = keep_io;
  Status st = optimizer::convert_precision(g, ctx);
  INFO(st.message());
  REQUIRE(st.ok());
  g.compact();
  Status v = verify(g, {.require_shapes = true});
  INFO(v.message());
  REQUIRE(v.ok());
  return {std::move(g), ctx.precision_notes};
}

int count_ops(const Graph& g, OpKind op) {
  int n = 0;
  for (const auto& node : g.nodes)
    if (!node.dead && node.op == op) ++n;
  return n;
}

const Node* find_node(const Graph& g, OpKind op) {
  for (const auto& node : g.nodes)
    if (!node.dead && node.op == op) return &node;
  return nullptr;
}

double rel_l2(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape()) return INFINITY;
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double d = got.get_f64(i) - want.get_f64(i);
    num += d * d;
    den += want.get_f64(i) * want.get_f64(i);
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

// Runs both graphs on the same fresh inputs (cast to each graph's input
// dtypes); returns the worst relative L2 error over the outputs, matched by name.
double worst_rel_error(const Graph& ref, const Graph& got,
                       std::map<std::string, Tensor> inputs = {}) {
  if (inputs.empty()) inputs = testing::random_inputs(ref, testing::test_rng());
  std::map<std::string, Tensor> got_inputs;
  for (ValueId id : got.inputs) {
    const auto& v = got.value(id);
    got_inputs[v.name] = inputs.at(v.name).cast_to(v.dtype);
  }
  auto a = reference::execute(ref, inputs);
  auto b = reference::execute(got, got_inputs);
  REQUIRE(a.ok());
  INFO(b.status().message());
  REQUIRE(b.ok());
  REQUIRE(a->size() == b->size());
  double worst = 0;
  for (const auto& [name, t] : *a) {
    REQUIRE(b->count(name));
    worst = std::max(worst, rel_l2(b->at(name), t));
  }
  return worst;
}

// No float32 initializer is left, and none was duplicated.
void check_weights_converted(const Graph& before, const Graph& after, DType target) {
  int before_weights = 0, after_weights = 0;
  for (const auto& v : before.values)
    if (v.constant && v.is_initializer && v.dtype == DType::kFloat32) ++before_weights;
  for (const auto& v : after.values) {
    if (!v.constant || !v.is_initializer) continue;
    CHECK(v.dtype != DType::kFloat32);
    if (v.dtype == target) ++after_weights;
  }
  CHECK(after_weights == before_weights);
}

// Inputs and outputs keep their names and float32 dtype.
void check_io_kept(const Graph& before, const Graph& after) {
  REQUIRE(before.inputs.size() == after.inputs.size());
  REQUIRE(before.outputs.size() == after.outputs.size());
  for (size_t i = 0; i < before.inputs.size(); ++i) {
    CHECK(after.value(after.inputs[i]).name == before.value(before.inputs[i]).name);
    CHECK(after.value(after.inputs[i]).dtype == DType::kFloat32);
  }
  for (size_t i = 0; i < before.outputs.size(); ++i) {
    CHECK(after.value(after.outputs[i]).name == before.value(before.outputs[i]).name);
    CHECK(after.value(after.outputs[i]).dtype == DType::kFloat32);
  }
}

// No Cast undoes the Cast feeding it (half -> float32 -> the same half).
void check_no_cancelling_casts(const Graph& g) {
  for (const auto& n : g.nodes) {
    if (n.dead || n.op != OpKind::Cast) continue;
    CHECK(g.value(n.inputs[0]).dtype != g.value(n.outputs[0]).dtype);
    NodeId p = g.value(n.inputs[0]).producer;
    if (p < 0 || g.node(p).op != OpKind::Cast || g.value(n.inputs[0]).dtype != DType::kFloat32)
      continue;
    CHECK(g.value(g.node(p).inputs[0]).dtype != g.value(n.outputs[0]).dtype);
  }
}

// x[8,32] -> MatMul W1 + b1 -> Relu -> MatMul W2 -> Gelu -> MatMul W2 (shared)
// -> LayerNormalization -> Gemm W3 + b3 = logits -> Softmax = probs.
Graph mlp() {
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {8, 32});
  auto h = b.node(OpKind::MatMul, {x, b.constant("W1", weight({32, 64}, 32))});
  h = b.node(OpKind::Add, {h, b.constant("b1", rand_t({64}, -0.1, 0.1))});
  h = b.node(OpKind::Relu, {h});
  auto w2 = b.constant("W2", weight({64, 64}, 64));
  h = b.node(OpKind::MatMul, {h, w2});
  h = b.node(OpKind::Gelu, {h});
  h = b.node(OpKind::MatMul, {h, w2});
  h = b.node(OpKind::LayerNormalization,
             {h, b.constant("ln_g", rand_t({64}, 0.5, 1.5)), b.constant("ln_b", rand_t({64}))},
             attrs({{"axis", Attribute::of_int(-1)}}));
  auto logits =
      b.node(OpKind::Gemm,
             {h, b.constant("W3", weight({64, 10}, 64)), b.constant("b3", rand_t({10}, -0.1, 0.1))},
             {}, 1, "logits");
  b.output(logits);
  b.output(b.node(OpKind::Softmax, {logits}, attrs({{"axis", Attribute::of_int(-1)}}), 1, "probs"));
  return b.build();
}

// x[2,3,16,16] -> Conv+B -> BatchNorm -> Relu -> MaxPool -> Conv (+residual)
// -> GlobalAveragePool -> Flatten -> Gemm.
Graph conv_block() {
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 3, 16, 16});
  auto pads = attrs({{"pads", Attribute::of_ints({1, 1, 1, 1})}});
  auto c = b.node(OpKind::Conv,
                  {x, b.constant("conv1_W", weight({8, 3, 3, 3}, 27)),
                   b.constant("conv1_B", rand_t({8}, -0.1, 0.1))},
                  pads);
  c = b.node(OpKind::BatchNormalization,
             {c, b.constant("bn_s", rand_t({8}, 0.5, 1.5)), b.constant("bn_b", rand_t({8})),
              b.constant("bn_mean", rand_t({8})), b.constant("bn_var", rand_t({8}, 0.5, 2.0))});
  c = b.node(OpKind::Relu, {c});
  c = b.node(OpKind::MaxPool, {c},
             attrs({{"kernel_shape", Attribute::of_ints({2, 2})},
                    {"strides", Attribute::of_ints({2, 2})}}));
  auto d = b.node(OpKind::Conv, {c, b.constant("conv2_W", weight({8, 8, 3, 3}, 72))}, pads);
  d = b.node(OpKind::Add, {d, c});
  d = b.node(OpKind::GlobalAveragePool, {d});
  d = b.node(OpKind::Flatten, {d});
  b.output(b.node(OpKind::Gemm, {d, b.constant("fc_W", weight({8, 10}, 8)),
                                 b.constant("fc_B", rand_t({10}, -0.1, 0.1))}));
  return b.build();
}

}  // namespace

TEST_CASE("an MLP and a conv block convert to fp16 and bf16 and still match float32",
          "[precision]") {
  // Checks: verify passes; every float32 weight is now the target dtype (the
  // shared W2 converted once); IO names and float32 dtypes kept; nothing kept
  // in float32; outputs within rel L2 1e-2 (fp16) / 3e-2 (bf16) on fresh inputs.
  for (Precision p : {Precision::kFp16, Precision::kBf16}) {
    for (bool use_conv : {false, true}) {
      INFO((p == Precision::kFp16 ? "fp16 " : "bf16 ") << (use_conv ? "conv block" : "mlp"));
      Graph before = use_conv ? conv_block() : mlp();
      Converted after = convert(before, p);
      check_weights_converted(before, after.graph, dtype_of(p));
      check_io_kept(before, after.graph);
      check_no_cancelling_casts(after.graph);
      CHECK(after.notes.empty());
      // One Cast after the input, one before each output.
      CHECK(count_ops(after.graph, OpKind::Cast) == 1 + static_cast<int>(before.outputs.size()));
      if (!use_conv) {
        const Node* mm = find_node(after.graph, OpKind::MatMul);
        REQUIRE(mm);
        CHECK(after.graph.value(mm->outputs[0]).dtype == dtype_of(p));
      }
      for (int trial = 0; trial < 3; ++trial)
        CHECK(worst_rel_error(before, after.graph) < tolerance(p));
    }
  }
}

TEST_CASE("keep_io_dtype=false retypes graph inputs and outputs", "[precision]") {
  // Checks: with keep_io_dtype false the float32 inputs and outputs become the
  // target dtype under their own names, with no edge Casts, and still match.
  for (Precision p : {Precision::kFp16, Precision::kBf16}) {
    Graph before = mlp();
    Converted after = convert(before, p, /*keep_io=*/false);
    for (ValueId id : after.graph.inputs) CHECK(after.graph.value(id).dtype == dtype_of(p));
    for (ValueId id : after.graph.outputs) CHECK(after.graph.value(id).dtype == dtype_of(p));
    CHECK(after.graph.value(after.graph.inputs[0]).name == "x");
    CHECK(after.graph.value(after.graph.outputs[0]).name == "logits:0");
    CHECK(count_ops(after.graph, OpKind::Cast) == 0);
    CHECK(worst_rel_error(before, after.graph) < tolerance(p));
  }
}

TEST_CASE("a ReduceSum stays float32 with a note, even where its sum exceeds 65504",
          "[precision]") {
  // Checks: ReduceSum reads and writes float32 (a Cast before it), one note
  // "node 'sum' (ReduceSum): kept in float32: ..." for fp16 and bf16, its
  // neighbours converted; the sum (~80000, beyond float16) matches float32.
  for (Precision p : {Precision::kFp16, Precision::kBf16}) {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {2, 2048});
    auto m = b.node(OpKind::Mul, {x, b.constant("w", rand_t({2048}, 0.5, 1.5))});
    b.output(b.node(OpKind::ReduceSum, {m, b.constant("axes", Tensor::from_i64({1}, {1}), false)},
                    attrs({{"keepdims", Attribute::of_int(1)}}), 1, "sum"));
    b.output(b.node(OpKind::Relu, {m}));
    Graph before = b.build();
    Converted after = convert(before, p);
    const Node* sum = find_node(after.graph, OpKind::ReduceSum);
    REQUIRE(sum);
    CHECK(after.graph.value(sum->inputs[0]).dtype == DType::kFloat32);
    CHECK(after.graph.value(sum->outputs[0]).dtype == DType::kFloat32);
    CHECK(after.graph.value(find_node(after.graph, OpKind::Mul)->outputs[0]).dtype == dtype_of(p));
    CHECK(after.graph.value(find_node(after.graph, OpKind::Relu)->outputs[0]).dtype == dtype_of(p));
    REQUIRE(after.notes.size() == 1);
    CHECK(after.notes[0].rfind("node 'sum' (ReduceSum): kept in float32: ", 0) == 0);
    check_io_kept(before, after.graph);
    check_no_cancelling_casts(after.graph);
    std::map<std::string, Tensor> inputs = {
        {"x", testing::random_tensor(DType::kFloat32, {2, 2048}, testing::test_rng(), 20, 60)}};
    CHECK(worst_rel_error(before, after.graph, inputs) < tolerance(p));
  }
}

TEST_CASE("a -1e9 attention mask is clamped for fp16 and softmax still matches", "[precision]") {
  // Checks: fp16 clamps the Add's -1e9 mask constant to -65504 (noted) and
  // keeps the Add and Softmax in fp16; a -1e9 constant not before a Softmax
  // keeps its node float32 (noted); bf16 clamps nothing; probabilities match.
  for (Precision p : {Precision::kFp16, Precision::kBf16}) {
    GraphBuilder b;
    auto x = b.input("scores", DType::kFloat32, {2, 4, 8});
    Tensor mask(DType::kFloat32, {1, 1, 8});
    for (int64_t i = 0; i < 8; ++i) mask.set_f64(i, i % 3 == 1 ? -1e9 : 0.0);
    auto masked = b.node(OpKind::Add, {x, b.constant("mask", mask)}, {}, 1, "add_mask");
    b.output(b.node(OpKind::Softmax, {masked}, attrs({{"axis", Attribute::of_int(-1)}})));
    b.output(b.node(OpKind::Mul, {x, b.constant("big", Tensor::from_f32({-1e9f}, {}), false)}, {},
                    1, "mul_big"));
    Graph before = b.build();
    Converted after = convert(before, p);
    const Graph& g = after.graph;
    const Node* add = find_node(g, OpKind::Add);
    REQUIRE(add);
    CHECK(g.value(add->outputs[0]).dtype == dtype_of(p));
    CHECK(g.value(find_node(g, OpKind::Softmax)->outputs[0]).dtype == dtype_of(p));
    const Value& m = g.value(add->inputs[1]);
    REQUIRE(m.constant);
    CHECK(m.dtype == dtype_of(p));
    if (p == Precision::kFp16) {
      CHECK(m.constant->get_f64(1) == -65504.0);
      CHECK(g.value(find_node(g, OpKind::Mul)->outputs[0]).dtype == DType::kFloat32);
      REQUIRE(after.notes.size() == 2);
      CHECK(after.notes[0] ==
            "node 'add_mask' (Add): constant 'mask' clamped to +-65504 for float16: additive "
            "attention mask before Softmax");
      CHECK(after.notes[1].rfind("node 'mul_big' (Mul): kept in float32: constant input 'big'",
                                 0) == 0);
    } else {
      CHECK(m.constant->get_f64(1) == Approx(-1e9).epsilon(1e-2));
      CHECK(after.notes.empty());
    }
    check_io_kept(before, g);
    CHECK(worst_rel_error(before, g) < tolerance(p));
  }
}

TEST_CASE("int64 shape subgraphs are left unchanged", "[precision]") {
  // Checks: Shape -> Gather -> Unsqueeze -> Concat -> Reshape keeps every node,
  // its int64 values and their readers; no Cast touches an integer value.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 3, 4});
  auto shape = b.node(OpKind::Shape, {x});
  auto n = b.node(OpKind::Gather, {shape, b.constant("zero", Tensor::scalar_i64(0), false)});
  n = b.node(OpKind::Unsqueeze, {n, b.constant("ax0", Tensor::from_i64({0}, {1}), false)});
  auto target =
      b.node(OpKind::Concat, {n, b.constant("minus1", Tensor::from_i64({-1}, {1}), false)},
             attrs({{"axis", Attribute::of_int(0)}}));
  auto y = b.node(OpKind::Mul, {x, b.constant("w", rand_t({4}))});
  b.output(b.node(OpKind::Reshape, {y, target}));
  Graph before = b.build();
  Converted after = convert(before, Precision::kFp16);
  const Graph& g = after.graph;
  for (const auto& bn : before.nodes) {
    if (bn.op == OpKind::Mul || bn.op == OpKind::Reshape) continue;
    const Node* an = nullptr;
    for (const auto& cand : g.nodes)
      if (cand.name == bn.name) an = &cand;
    REQUIRE(an);
    REQUIRE(an->inputs.size() == bn.inputs.size());
    for (size_t i = 0; i < bn.inputs.size(); ++i) {
      CHECK(g.value(an->inputs[i]).name == before.value(bn.inputs[i]).name);
      CHECK(g.value(an->inputs[i]).dtype == before.value(bn.inputs[i]).dtype);
    }
    CHECK(g.value(an->outputs[0]).dtype == DType::kInt64);
  }
  const Node* reshape = find_node(g, OpKind::Reshape);
  REQUIRE(reshape);
  CHECK(g.value(reshape->inputs[1]).name == before.value(target).name);
  CHECK(g.value(reshape->inputs[1]).dtype == DType::kInt64);
  CHECK(g.value(reshape->inputs[0]).dtype == DType::kFloat16);
  for (const auto& node : g.nodes)
    if (node.op == OpKind::Cast) CHECK(is_float(g.value(node.inputs[0]).dtype));
  CHECK(after.notes.empty());
  CHECK(worst_rel_error(before, g) < tolerance(Precision::kFp16));
}

TEST_CASE("kFp32 is a no-op", "[precision]") {
  // Checks: with precision fp32 the printed graph is byte-identical and no
  // note is written.
  for (bool use_conv : {false, true}) {
    Graph g = use_conv ? conv_block() : mlp();
    std::string text = print_graph(g);
    optimizer::PassContext ctx;
    REQUIRE(optimizer::convert_precision(g, ctx).ok());
    CHECK(print_graph(g) == text);
    CHECK(ctx.precision_notes.empty());
  }
}

TEST_CASE("Exp and Pow stay float32 for fp16 unless inside a normalization", "[precision]") {
  // Checks: a bare Exp and Pow(x, 3) are kept in float32 for fp16 (noted) and
  // converted for bf16; Exp(x - ReduceMax(x)) and Pow(x - mean, 2) -> ReduceMean
  // convert for fp16; all outputs match float32.
  for (Precision p : {Precision::kFp16, Precision::kBf16}) {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {4, 16});
    auto axes = b.constant("axes", Tensor::from_i64({1}, {1}), false);
    auto keep = attrs({{"keepdims", Attribute::of_int(1)}});
    b.output(b.node(OpKind::Exp, {x}, {}, 1, "bare_exp"));
    auto mx = b.node(OpKind::ReduceMax, {x, axes}, keep);
    auto e = b.node(OpKind::Exp, {b.node(OpKind::Sub, {x, mx})}, {}, 1, "stable_exp");
    b.output(b.node(OpKind::Mul, {e, b.constant("half", Tensor::from_f32({0.5f}, {}), false)}));
    b.output(b.node(OpKind::Pow, {x, b.constant("three", Tensor::from_f32({3.f}, {}), false)}, {},
                    1, "cube"));
    auto d = b.node(OpKind::Sub, {x, b.node(OpKind::ReduceMean, {x, axes}, keep)});
    auto sq = b.node(OpKind::Pow, {d, b.constant("two", Tensor::from_f32({2.f}, {}), false)}, {}, 1,
                     "square");
    b.output(b.node(OpKind::ReduceMean, {sq, axes}, keep));
    Graph before = b.build();
    Converted after = convert(before, p);
    for (const auto& n : after.graph.nodes) {
      if (n.op != OpKind::Exp && n.op != OpKind::Pow) continue;
      bool kept = p == Precision::kFp16 && (n.name == "bare_exp" || n.name == "cube");
      INFO(n.name);
      CHECK(after.graph.value(n.outputs[0]).dtype == (kept ? DType::kFloat32 : dtype_of(p)));
    }
    if (p == Precision::kFp16) {
      REQUIRE(after.notes.size() == 2);
      CHECK(after.notes[0].rfind("node 'bare_exp' (Exp): kept in float32: ", 0) == 0);
      CHECK(after.notes[1].rfind("node 'cube' (Pow): kept in float32: ", 0) == 0);
    } else {
      CHECK(after.notes.empty());
    }
    check_no_cancelling_casts(after.graph);
    CHECK(worst_rel_error(before, after.graph) < tolerance(p));
  }
}

TEST_CASE("Casts the conversion makes redundant are removed", "[precision]") {
  // Checks: an exported fp16 round trip Cast(to=fp16) -> Cast(to=fp32) between
  // converted ops disappears in fp16 (only the two edge Casts stay) and
  // becomes a bf16 -> fp16 -> bf16 rounding (kept: it is not lossless) in bf16.
  for (Precision p : {Precision::kFp16, Precision::kBf16}) {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {4, 8});
    auto r = b.node(OpKind::Relu, {x});
    auto h = b.node(OpKind::Cast, {r}, attrs({{"to", Attribute::of_int(10)}}));
    auto f = b.node(OpKind::Cast, {h}, attrs({{"to", Attribute::of_int(1)}}));
    b.output(b.node(OpKind::Mul, {f, b.constant("w", rand_t({8}))}));
    Graph before = b.build();
    Converted after = convert(before, p);
    CHECK(count_ops(after.graph, OpKind::Cast) == (p == Precision::kFp16 ? 2 : 4));
    check_no_cancelling_casts(after.graph);
    check_io_kept(before, after.graph);
    CHECK(worst_rel_error(before, after.graph) < tolerance(p));
  }
}

TEST_CASE("the default pipeline with fp16 verifies after every pass and matches float32",
          "[precision]") {
  // Checks: convert-precision sits before fusion; the whole default pipeline
  // (fusion included) verifies after each pass on the fp16 graphs and the
  // fused result still matches the float32 original.
  for (bool use_conv : {false, true}) {
    Graph before = use_conv ? conv_block() : mlp();
    Graph g = before;
    optimizer::PassContext ctx;
    ctx.precision = Precision::kFp16;
    ctx.verify_after_all = true;
    Status st = optimizer::run_passes(g, ctx);
    INFO(st.message());
    REQUIRE(st.ok());
    check_io_kept(before, g);
    CHECK(worst_rel_error(before, g) < tolerance(Precision::kFp16));
  }
}
TEST_CASE("the shipped models through the default pipeline in fp16 and bf16", "[precision]") {
  // Checks: models/*.onnx (the transformer block's Shape->Gather->Reshape head
  // split included) run the whole default pipeline with verify-after-all in
  // fp16 and bf16, keep float32 IO, and match their float32 outputs.
  for (const char* name : {"mlp", "conv_block", "transformer_block"}) {
    driver::LoadOptions opts;
    opts.input_shapes = {{"x", {2, 16, 64}}};
    auto loaded =
        driver::load_model(testing::source_path(std::string("models/") + name + ".onnx"),
                           std::string(name) == "transformer_block" ? opts : driver::LoadOptions{});
    INFO(name << ": " << loaded.status().message());
    REQUIRE(loaded.ok());
    for (Precision p : {Precision::kFp16, Precision::kBf16}) {
      Graph g = *loaded;
      optimizer::PassContext ctx;
      ctx.precision = p;
      ctx.verify_after_all = true;
      Status st = optimizer::run_passes(g, ctx);
      INFO(st.message());
      REQUIRE(st.ok());
      check_io_kept(*loaded, g);
      CHECK(ctx.precision_notes.empty());
      CHECK(worst_rel_error(*loaded, g) < tolerance(p));
    }
  }
}

TEST_CASE("a multi-million-element weight converts over all cores, bit for bit per element",
          "[precision]") {
  // 2^21 + 3 elements (several parallel pieces and a ragged end) of random
  // values with NaN, infinities, values beyond each range and below float16's
  // smallest subnormal planted: every converted element equals the scalar
  // rule (saturate, keep tiny values at the smallest subnormal, round to even).
  constexpr int64_t kN = (int64_t{1} << 21) + 3;
  Tensor w = rand_t({1, kN}, -4, 4);
  const float planted[] = {std::numeric_limits<float>::quiet_NaN(),
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           1e5f, -7e4f, 3e38f, -3.4e38f, 1e-9f, -2e-8f, 0.0f, -0.0f, 65519.0f};
  for (size_t i = 0; i < std::size(planted); ++i)
    w.set_f64(static_cast<int64_t>(i * 99991 % kN), planted[i]);
  for (Precision p : {Precision::kFp16, Precision::kBf16}) {
    INFO((p == Precision::kFp16 ? "fp16" : "bf16"));
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {1, kN});
    // Added before a Softmax, as a mask is: beyond-range values are clamped, not kept fp32.
    b.output(b.node(OpKind::Softmax, {b.node(OpKind::Add, {x, b.constant("w", w)})}));
    Converted c = convert(b.build(), p);
    const Tensor* converted = nullptr;
    for (const auto& v : c.graph.values)
      if (v.name == "w" && v.constant) converted = &*v.constant;
    REQUIRE(converted);
    REQUIRE(converted->dtype() == dtype_of(p));
    const auto* bits = converted->data_as<uint16_t>();
    const double max = p == Precision::kFp16 ? 65504.0 : 0x1.fep127;
    int64_t mismatches = 0;
    for (int64_t i = 0; i < kN; ++i) {
      double v = w.get_f64(i);
      if (std::isfinite(v) && std::abs(v) > max) v = std::copysign(max, v);
      if (p == Precision::kFp16 && v != 0 && std::abs(v) < 0x1p-24) v = std::copysign(0x1p-24, v);
      const uint16_t want = p == Precision::kFp16 ? float_to_half_bits(static_cast<float>(v))
                                                  : float_to_bf16_bits(static_cast<float>(v));
      mismatches += bits[i] != want;
    }
    CHECK(mismatches == 0);
  }
}
