// fuse-attention on the attention graphs exporters write (tests/attention_graphs.h
// says which exporter and which PyTorch code each reproduces). Each test runs
// the default pipeline up to fuse-attention (as a build does), checks that the
// pattern became one Attention node with the expected attributes, and checks
// the outputs before and after on the reference executor on fresh random
// inputs: relative L2 error < 1e-5 (fp32).
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "driver/fusion_report.h"
#include <nlohmann/json.hpp>

#include "support/json.h"
#include "emit/plan/buffer_plan.h"
#include "emit/plan/schedule.h"
#include "ir/attention_params.h"
#include "ir/verifier.h"
#include "optimizer/passes.h"
#include "reference/executor.h"
#include "tests/attention_graphs.h"

using namespace graphc;
using namespace graphc::testing;
using namespace graphc::testing::attn;
using ir::Node;

namespace {

constexpr double kTol = 1e-5;  // relative L2, fp32

// The default pipeline up to and including fuse-attention, then dce.
Graph fuse(Graph g, optimizer::PassContext& ctx) {
  std::vector<optimizer::Pass> passes;
  for (const auto& p : optimizer::default_pipeline()) {
    passes.push_back(p);
    if (std::string(p.name) == "fuse-attention") break;
  }
  passes.push_back(*optimizer::find_pass("dce"));
  ctx.verify_after_all = true;
  Status st = optimizer::run_passes(g, ctx, &passes);
  INFO(st.message());
  REQUIRE(st.ok());
  return g;
}
Graph fuse(Graph g) {
  optimizer::PassContext ctx;
  return fuse(std::move(g), ctx);
}

int count_ops(const Graph& g, OpKind op) {
  int n = 0;
  for (const auto& node : g.nodes) n += !node.dead && node.op == op;
  return n;
}

const Node& attention(const Graph& g) {
  for (const auto& n : g.nodes)
    if (!n.dead && n.op == OpKind::Attention) return n;
  FAIL("no Attention node");
  return g.nodes[0];
}

// Fresh random inputs; `fixed` replaces some (masks with chosen rows).
std::map<std::string, Tensor> inputs_for(const Graph& g, std::map<std::string, Tensor> fixed = {}) {
  auto in = random_inputs(g, test_rng());
  for (auto& [k, v] : fixed) in[k] = v;
  return in;
}

// Relative L2 error of `after` against `before` over every output.
double rel_l2(const Graph& before, const Graph& after, const std::map<std::string, Tensor>& in) {
  auto a = reference::execute(before, in);
  auto b = reference::execute(after, in);
  INFO((a.ok() ? "" : a.status().message()) << (b.ok() ? "" : b.status().message()));
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  double num = 0, den = 0;
  for (const auto& [name, t] : *a) {
    REQUIRE(b->count(name));
    const Tensor& u = b->at(name);
    REQUIRE(u.shape() == t.shape());
    for (int64_t i = 0; i < t.numel(); ++i) {
      double x = t.get_f64(i), y = u.get_f64(i);
      if (!std::isfinite(x) || !std::isfinite(y)) return std::numeric_limits<double>::infinity();
      num += (x - y) * (x - y);
      den += x * x;
    }
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}
double rel_l2(const Graph& before, const Graph& after) {
  return rel_l2(before, after, inputs_for(before));
}

// A random bool mask that keeps at least one key per row (so no row is fully
// masked by -inf, where the unfused graph gives NaN).
Tensor keep_some(Shape shape) {
  Tensor t = random_tensor(DType::kBool, shape, test_rng());
  int64_t cols = shape.back();
  for (int64_t r = 0; r < t.numel() / cols; ++r) t.set_i64(r * cols + r % cols, 1);
  return t;
}

// An int64 HF attention_mask [B, L]: random 0/1 keeping key 0, batch 1 all
// padding (every row of it fully masked).
Tensor padding_mask(int64_t b, int64_t l) {
  Tensor t = random_tensor(DType::kInt64, {b, l}, test_rng(), 0, 1);
  for (int64_t i = 0; i < b; ++i) t.set_i64(i * l, 1);
  if (b > 1)
    for (int64_t j = 0; j < l; ++j) t.set_i64(l + j, 0);
  return t;
}

bool has_attr(const Node& n, const char* name) { return n.attrs.has(name); }

const std::vector<Dims> kDims = {
    {2, 4, 4, 7, 7, 32, 32},      // self attention, odd length
    {1, 2, 2, 5, 9, 64, 64},      // cross attention, Lq < Lk
    {2, 3, 3, 17, 11, 128, 128},  // Lq > Lk, head dim 128
    {1, 2, 2, 3, 5, 256, 256},    // head dim 256
};

}  // namespace

TEST_CASE("SDPA legacy export: every mask form fuses into one Attention", "[fuse-attention]") {
  for (const Dims& d : kDims) {
    CAPTURE(d.b, d.h, d.lq, d.lk, d.d);
    struct Case {
      SdpaMask mask;
      Shape shape;
    };
    const std::vector<Case> cases = {{SdpaMask::kNone, {}},
                                     {SdpaMask::kFloat, {d.b, 1, 1, d.lk}},
                                     {SdpaMask::kFloat, {d.b, 1, d.lq, d.lk}},
                                     {SdpaMask::kFloat, {d.b, d.h, d.lq, d.lk}},
                                     {SdpaMask::kFloat, {1, 1, d.lq, d.lk}},
                                     {SdpaMask::kFloat, {d.lq, d.lk}},
                                     {SdpaMask::kBool, {d.b, 1, d.lq, d.lk}},
                                     {SdpaMask::kBool, {d.lq, d.lk}},
                                     {SdpaMask::kCausal, {}}};
    for (const auto& c : cases) {
      CAPTURE(static_cast<int>(c.mask), ir::shape_to_string(c.shape));
      Graph before = sdpa_legacy(d, c.mask, c.shape);
      Graph after = fuse(before);
      REQUIRE(count_ops(after, OpKind::Attention) == 1);
      CHECK(count_ops(after, OpKind::Softmax) == 0);
      CHECK(count_ops(after, OpKind::MatMul) == 0);
      const Node& a = attention(after);
      CHECK(a.attrs.get_float("scale", 0) == Approx(1.0 / std::sqrt(double(d.d))).epsilon(1e-6));
      CHECK(a.attrs.get_int("is_causal", 0) == (c.mask == SdpaMask::kCausal ? 1 : 0));
      // The causal triangle goes; other masks stay as the attn_mask input.
      CHECK(a.has_input(ir::kAttnMask) ==
            (c.mask == SdpaMask::kFloat || c.mask == SdpaMask::kBool));
      if (c.mask == SdpaMask::kBool)  // Where(m, 0, -inf) + scores: the bool itself
        CHECK(after.value(a.inputs[ir::kAttnMask]).name == "attn_mask");
      std::map<std::string, Tensor> fixed;
      if (c.mask == SdpaMask::kBool) fixed["attn_mask"] = keep_some(c.shape);
      CHECK(rel_l2(before, after, inputs_for(before, fixed)) < kTol);
    }
  }
}

TEST_CASE("SDPA dynamo export (onnxscript) fuses, enable_gqa drops the K/V repeat",
          "[fuse-attention]") {
  for (const Dims& d : kDims) {
    CAPTURE(d.b, d.h, d.lq, d.lk, d.d);
    for (SdpaMask m : {SdpaMask::kNone, SdpaMask::kFloat, SdpaMask::kBool, SdpaMask::kCausal}) {
      CAPTURE(static_cast<int>(m));
      Shape ms{d.b, 1, d.lq, d.lk};
      Graph before = sdpa_dynamo(d, m, ms);
      Graph after = fuse(before);
      REQUIRE(count_ops(after, OpKind::Attention) == 1);
      CHECK(count_ops(after, OpKind::Softmax) == 0);
      CHECK(count_ops(after, OpKind::Transpose) == 0);  // Kᵀ's Reshape/Transpose/Reshape went
      CHECK(attention(after).attrs.get_int("is_causal", 0) == (m == SdpaMask::kCausal));
      std::map<std::string, Tensor> fixed;
      if (m == SdpaMask::kBool) fixed["attn_mask"] = keep_some(ms);
      CHECK(rel_l2(before, after, inputs_for(before, fixed)) < kTol);
    }
  }
  SECTION("enable_gqa: 8 query heads over 2 and 1 key/value heads") {
    for (int64_t hkv : {2, 1}) {
      Dims d{2, 8, hkv, 9, 9, 64, 64};
      Graph before = sdpa_dynamo(d, SdpaMask::kCausal, {}, true);
      optimizer::PassContext ctx;
      Graph after = fuse(before, ctx);
      REQUIRE(count_ops(after, OpKind::Attention) == 1);
      CHECK(count_ops(after, OpKind::Expand) == 0);
      const Node& a = attention(after);
      CHECK(after.value(a.inputs[ir::kAttnK]).name == "key");
      CHECK(after.value(a.inputs[ir::kAttnV]).name == "value");
      CHECK(ctx.counters["fuse-attention: GQA/MQA repeats removed"] == 1);
      CHECK(rel_l2(before, after) < kTol);
    }
  }
}

TEST_CASE("HF BERT eager attention becomes the 3-D form, the padding mask stays",
          "[fuse-attention]") {
  // Q/K/V come straight from the projections ([B, L, H*D]) and the output
  // goes straight to the output projection: no head split/merge left. A fully
  // padded sequence (every key masked by finfo.min) averages V, fused or not.
  // (With the older -10000 fill a fully padded row is softmax(s - 10000): the
  // unfused graph rounds s - 10000 to float, 1e-3 absolute, so that case has
  // every sequence keep some keys.)
  for (Dims d : {Dims{2, 4, 4, 11, 11, 32, 32}, Dims{3, 12, 12, 16, 16, 64, 64}}) {
    for (float fill : {kFloatMin, -10000.0f}) {
      CAPTURE(d.h, d.lq, fill);
      Graph before = hf_bert(d, fill);
      optimizer::PassContext ctx;
      Graph after = fuse(before, ctx);
      REQUIRE(count_ops(after, OpKind::Attention) == 1);
      CHECK(count_ops(after, OpKind::Transpose) == 0);
      const Node& a = attention(after);
      CHECK(a.attrs.get_int("q_num_heads", 0) == d.h);
      CHECK(a.attrs.get_int("kv_num_heads", 0) == d.h);
      CHECK(after.value(a.inputs[ir::kAttnQ]).shape == Shape{d.b, d.lq, d.e()});
      CHECK(after.value(a.outputs[0]).shape == Shape{d.b, d.lq, d.e()});
      for (size_t i = 0; i < 3; ++i)  // the projections' bias Adds
        CHECK(after.node(after.value(a.inputs[i]).producer).op == OpKind::Add);
      REQUIRE(a.has_input(ir::kAttnMask));  // (1 - mask) * fill, as ordinary nodes
      CHECK(after.value(a.inputs[ir::kAttnMask]).shape == Shape{d.b, 1, 1, d.lq});
      CHECK(ctx.counters["fuse-attention: 3-D form (head split/merge removed)"] == 1);
      Tensor am = padding_mask(d.b, d.lq);
      if (fill != kFloatMin) am.set_i64(d.lq, 1);  // batch 1 keeps key 0
      CHECK(rel_l2(before, after, inputs_for(before, {{"attention_mask", am}})) < kTol);
    }
  }
}

TEST_CASE("HF GPT-2 eager attention: the causal bias buffer becomes is_causal",
          "[fuse-attention]") {
  // Where(bias[.., :L, :L], w, finfo.min) is the lower triangle: is_causal=1
  // and the Where/Slice go; the padding mask stays. A fully padded sequence
  // still attends its allowed keys uniformly, as unfused.
  for (Dims d : {Dims{2, 4, 4, 9, 9, 16, 16}, Dims{2, 2, 2, 15, 15, 64, 64}}) {
    Graph before = hf_gpt2(d);
    optimizer::PassContext ctx;
    Graph after = fuse(before, ctx);
    REQUIRE(count_ops(after, OpKind::Attention) == 1);
    CHECK(count_ops(after, OpKind::Where) == 0);
    CHECK(count_ops(after, OpKind::Slice) == 0);
    const Node& a = attention(after);
    CHECK(a.attrs.get_int("is_causal", 0) == 1);
    CHECK(a.attrs.get_int("q_num_heads", 0) == d.h);
    CHECK(a.has_input(ir::kAttnMask));
    CHECK(ctx.counters["fuse-attention: causal masks folded into is_causal"] == 1);
    auto in = inputs_for(before, {{"attention_mask", padding_mask(d.b, d.lq)}});
    CHECK(rel_l2(before, after, in) < kTol);
  }
}

TEST_CASE("HF T5 attention: scale 1, position bias and mask, cross attention", "[fuse-attention]") {
  for (bool cross : {false, true}) {
    CAPTURE(cross);
    Dims d{2, 4, 4, 6, 13, 32, 32};
    Graph before = hf_t5(d, cross);
    Graph after = fuse(before);
    REQUIRE(count_ops(after, OpKind::Attention) == 1);
    const Node& a = attention(after);
    CHECK(a.attrs.get_float("scale", 0) == 1.0);
    CHECK(a.has_input(ir::kAttnMask));
    CHECK(after.value(a.inputs[ir::kAttnK]).shape[1] == (cross ? d.lk : d.lq));
    auto in = inputs_for(before, {{"attention_mask", padding_mask(d.b, cross ? d.lk : d.lq)}});
    CHECK(rel_l2(before, after, in) < kTol);
  }
}

TEST_CASE("HF Whisper attention: Q scaled before the split, the bmm form with heads in the batch",
          "[fuse-attention]") {
  Dims d{2, 4, 4, 15, 15, 64, 64};
  SECTION("4-D heads: the 3-D form, the scaling moves into scale") {
    Graph before = hf_whisper(d, false);
    Graph after = fuse(before);
    REQUIRE(count_ops(after, OpKind::Attention) == 1);
    CHECK(count_ops(after, OpKind::Mul) == 0);  // q_proj(x) * scaling went into `scale`
    CHECK(attention(after).attrs.get_float("scale", 0) == Approx(0.125).epsilon(1e-6));
    CHECK(rel_l2(before, after) < kTol);
  }
  SECTION("bmm on [B*H, L, D]: one head per batch entry") {
    Graph before = hf_whisper(d, true);
    Graph after = fuse(before);
    REQUIRE(count_ops(after, OpKind::Attention) == 1);
    const Node& a = attention(after);
    CHECK(a.attrs.get_int("q_num_heads", 0) == 1);
    CHECK(after.value(a.inputs[ir::kAttnQ]).shape == Shape{d.b * d.h, d.lq, d.d});
    CHECK(a.attrs.get_float("scale", 0) == 1.0);  // the scaling stays on q_proj
    CHECK(rel_l2(before, after) < kTol);
  }
}

TEST_CASE("HF Llama attention: repeat_kv and Tile repeats of K/V heads", "[fuse-attention]") {
  SECTION("GQA 8 over 2 heads without RoPE: 3-D form, kv_num_heads 2") {
    Dims d{2, 8, 2, 9, 9, 32, 32};
    Graph before = hf_llama(d, false);
    Graph after = fuse(before);
    REQUIRE(count_ops(after, OpKind::Attention) == 1);
    CHECK(count_ops(after, OpKind::Expand) == 0);
    const Node& a = attention(after);
    CHECK(a.attrs.get_int("kv_num_heads", 0) == 2);
    CHECK(after.value(a.inputs[ir::kAttnK]).shape == Shape{d.b, d.lq, 2 * d.d});
    CHECK(rel_l2(before, after) < kTol);
  }
  SECTION("with RoPE between the split and the attention: 4-D form, K with 2 heads") {
    Dims d{2, 8, 2, 9, 9, 32, 32};
    Graph before = hf_llama(d, true);
    Graph after = fuse(before);
    REQUIRE(count_ops(after, OpKind::Attention) == 1);
    const Node& a = attention(after);
    CHECK_FALSE(has_attr(a, "q_num_heads"));
    CHECK(after.value(a.inputs[ir::kAttnK]).shape == Shape{d.b, 2, d.lq, d.d});
    CHECK(rel_l2(before, after) < kTol);
  }
  SECTION("MQA by Tile of one head") {
    Dims d{1, 4, 1, 7, 7, 64, 64};
    Graph before = hf_llama(d, true, true);
    Graph after = fuse(before);
    REQUIRE(count_ops(after, OpKind::Attention) == 1);
    CHECK(count_ops(after, OpKind::Tile) == 0);
    CHECK(after.value(attention(after).inputs[ir::kAttnK]).shape[1] == 1);
    CHECK(rel_l2(before, after) < kTol);
  }
  SECTION("Tile of 2 heads on the head axis (head h reads kv h mod 2): the repeat stays") {
    Dims d{1, 4, 2, 7, 7, 32, 32};
    Graph before = hf_llama(d, true, true);
    Graph after = fuse(before);
    REQUIRE(count_ops(after, OpKind::Attention) == 1);
    CHECK(count_ops(after, OpKind::Tile) == 2);
    CHECK(after.value(attention(after).inputs[ir::kAttnK]).shape[1] == 4);
    CHECK(rel_l2(before, after) < kTol);
  }
}

namespace {
// q/k/v [B, H, L, D] inputs, MatMul(q, Transpose(k)) * 1/sqrt(D), then
// `mask_op` on the scores, Softmax, MatMul by v.
template <typename MaskOp>
Graph generic(const Dims& d, MaskOp mask_op) {
  GraphBuilder gb;
  Ops o{gb};
  auto q = gb.input("q", DType::kFloat32, {d.b, d.h, d.lq, d.d});
  auto k = gb.input("k", DType::kFloat32, {d.b, d.h, d.lk, d.d});
  auto v = gb.input("v", DType::kFloat32, {d.b, d.h, d.lk, d.dv});
  auto s = o.op(OpKind::MatMul, {q, o.transpose(k, {0, 1, 3, 2})});
  s = o.op(OpKind::Mul, {s, o.f32(1.0f / std::sqrt(static_cast<float>(d.d)))});
  s = mask_op(gb, o, s);
  gb.output(o.op(OpKind::MatMul, {o.softmax(s), v}));
  return gb.build();
}
}  // namespace

TEST_CASE("masks: Where fills, inverted Where, causal triangles of every construction",
          "[fuse-attention]") {
  Dims d{2, 2, 2, 9, 9, 32, 32};
  auto range = [](Ops& o, int64_t n) {
    return o.b.node(OpKind::Range,
                    {o.b.constant(o.b.graph().unique_name("r0"), Tensor::scalar_i64(0), false),
                     o.b.constant(o.b.graph().unique_name("rn"), Tensor::scalar_i64(n), false),
                     o.b.constant(o.b.graph().unique_name("r1"), Tensor::scalar_i64(1), false)});
  };
  SECTION("Where(mask, scores, -1e9) becomes the bias Where(mask, 0, -1e9)") {
    Shape ms{d.b, 1, d.lq, d.lk};
    Graph before = generic(d, [&](GraphBuilder& gb, Ops& o, ValueId s) {
      return o.op(OpKind::Where, {gb.input("keep", DType::kBool, ms), s, o.f32(-1e9f)});
    });
    Graph after = fuse(before);
    REQUIRE(count_ops(after, OpKind::Attention) == 1);
    const Node& a = attention(after);
    REQUIRE(a.has_input(ir::kAttnMask));
    CHECK(after.value(a.inputs[ir::kAttnMask]).dtype == DType::kFloat32);
    CHECK(rel_l2(before, after, inputs_for(before, {{"keep", keep_some(ms)}})) < kTol);
  }
  SECTION("Where(mask, scores, finfo.min) keeps fully masked rows (they average V)") {
    Shape ms{d.b, 1, d.lq, d.lk};
    Graph before = generic(d, [&](GraphBuilder& gb, Ops& o, ValueId s) {
      return o.op(OpKind::Where, {gb.input("keep", DType::kBool, ms), s, o.f32(kFloatMin)});
    });
    Graph after = fuse(before);
    REQUIRE(count_ops(after, OpKind::Attention) == 1);
    Tensor keep = random_tensor(DType::kBool, ms, test_rng());
    for (int64_t j = 0; j < d.lk; ++j) keep.set_i64(3 * d.lk + j, 0);  // row 3 fully masked
    CHECK(rel_l2(before, after, inputs_for(before, {{"keep", keep}})) < kTol);
  }
  SECTION("Where(masked, -inf, scores) becomes attn_mask = Not(masked)") {
    Shape ms{d.lq, d.lk};
    Graph before = generic(d, [&](GraphBuilder& gb, Ops& o, ValueId s) {
      return o.op(OpKind::Where, {gb.input("masked", DType::kBool, ms), o.f32(-kInf), s});
    });
    Graph after = fuse(before);
    REQUIRE(count_ops(after, OpKind::Attention) == 1);
    const Node& a = attention(after);
    CHECK(after.node(after.value(a.inputs[ir::kAttnMask]).producer).op == OpKind::Not);
    Tensor masked = keep_some(ms);  // "keep some" of the masked flags: negate so one key stays
    for (int64_t i = 0; i < masked.numel(); ++i) masked.set_i64(i, 1 - masked.get_i64(i));
    CHECK(rel_l2(before, after, inputs_for(before, {{"masked", masked}})) < kTol);
  }
  SECTION("causal triangles: constant, Trilu, Range/Less, Range/Greater, LessOrEqual") {
    using Build = std::function<ValueId(GraphBuilder&, Ops&, ValueId)>;
    std::vector<std::pair<std::string, Build>> forms = {
        {"constant additive triangle",
         [&](GraphBuilder& gb, Ops& o, ValueId s) {
           Tensor t(DType::kFloat32, {d.lq, d.lk});
           for (int64_t i = 0; i < d.lq; ++i)
             for (int64_t j = 0; j < d.lk; ++j) t.set_f64(i * d.lk + j, j <= i ? 0.0 : -kInf);
           return o.op(OpKind::Add, {s, gb.constant("tri", t)});
         }},
        {"Trilu of ones as bool, Where finfo.min",
         [&](GraphBuilder& gb, Ops& o, ValueId s) {
           auto ones = gb.node(OpKind::Expand, {o.f32(1.0f, {1}), o.i64({d.lq, d.lk})});
           auto tri = gb.node(OpKind::Trilu, {ones}, attrs({{"upper", Attribute::of_int(0)}}));
           auto c = gb.node(OpKind::Cast, {tri}, attrs({{"to", Attribute::of_int(9)}}));
           return o.op(OpKind::Where, {c, s, o.f32(kFloatMin)});
         }},
        {"HF _make_causal_mask: Range/Less + masked_fill of finfo.min",
         [&](GraphBuilder& gb, Ops& o, ValueId s) {
           auto cond = range(o, d.lk);
           auto rows = o.reshape(o.op(OpKind::Add, {cond, o.i64({1})}), {d.lq, 1});
           auto lt = o.op(OpKind::Less, {cond, rows});
           auto full = gb.node(OpKind::Expand, {o.f32(kFloatMin), o.i64({d.lq, d.lk})});
           auto m = o.op(OpKind::Where, {lt, o.f32(0.0f), full});
           return o.op(OpKind::Add, {s, o.unsqueeze(m, {0, 1})});
         }},
        {"Range/Greater: Where(j > i, -inf, scores)",
         [&](GraphBuilder& gb, Ops& o, ValueId s) {
           auto j = range(o, d.lk);
           auto i = o.reshape(range(o, d.lq), {d.lq, 1});
           return o.op(OpKind::Where, {o.op(OpKind::Greater, {j, i}), o.f32(-kInf), s});
         }},
        {"LessOrEqual: Where(j <= i, scores, -1e4)",
         [&](GraphBuilder& gb, Ops& o, ValueId s) {
           auto j = range(o, d.lk);
           auto i = o.reshape(range(o, d.lq), {d.lq, 1});
           return o.op(OpKind::Where, {o.op(OpKind::LessOrEqual, {j, i}), s, o.f32(-1e4f)});
         }},
    };
    for (const auto& [what, build] : forms) {
      CAPTURE(what);
      Graph before = generic(d, build);
      Graph after = fuse(before);
      REQUIRE(count_ops(after, OpKind::Attention) == 1);
      const Node& a = attention(after);
      CHECK(a.attrs.get_int("is_causal", 0) == 1);
      CHECK_FALSE(a.has_input(ir::kAttnMask));
      CHECK(after.live_node_count() == 1);  // the construction went with the pattern
      CHECK(rel_l2(before, after) < kTol);
    }
  }
  SECTION("a bottom-right triangle (Lq < Lk) is not ONNX's causal: it stays a mask") {
    Dims c{1, 2, 2, 4, 7, 32, 32};
    Graph before = generic(c, [&](GraphBuilder&, Ops& o, ValueId s) {
      auto m = o.bool_grid({c.lq, c.lk}, [&](int64_t i, int64_t j) { return j <= i + 3; });
      return o.op(OpKind::Where, {m, s, o.f32(-kInf)});
    });
    Graph after = fuse(before);
    REQUIRE(count_ops(after, OpKind::Attention) == 1);
    CHECK(attention(after).attrs.get_int("is_causal", 0) == 0);
    CHECK(attention(after).has_input(ir::kAttnMask));
    CHECK(rel_l2(before, after) < kTol);
  }
  SECTION("an upper-left triangle with Lq > Lk is causal") {
    Dims c{1, 2, 2, 8, 5, 32, 32};
    Graph before = generic(c, [&](GraphBuilder&, Ops& o, ValueId s) {
      auto m = o.bool_grid({1, 1, c.lq, c.lk}, [](int64_t i, int64_t j) { return j <= i; });
      return o.op(OpKind::Where, {m, s, o.f32(kFloatMin)});
    });
    Graph after = fuse(before);
    CHECK(attention(after).attrs.get_int("is_causal", 0) == 1);
    CHECK(rel_l2(before, after) < kTol);
  }
  SECTION("a causal Where and an additive mask: is_causal plus the bias") {
    Graph before = generic(d, [&](GraphBuilder& gb, Ops& o, ValueId s) {
      auto m = o.bool_grid({d.lq, d.lk}, [](int64_t i, int64_t j) { return j <= i; });
      auto w = o.op(OpKind::Where, {m, s, o.f32(kFloatMin)});
      return o.op(OpKind::Add, {w, gb.input("bias", DType::kFloat32, {d.b, 1, 1, d.lk})});
    });
    Graph after = fuse(before);
    const Node& a = attention(after);
    CHECK(a.attrs.get_int("is_causal", 0) == 1);
    CHECK(after.value(a.inputs[ir::kAttnMask]).name == "bias");
    CHECK(rel_l2(before, after) < kTol);
  }
  SECTION("a bias the same for every key (a scalar, or last dim 1) is expanded to Lk") {
    // Attention pads a short mask with masked keys; it does not broadcast the last dim.
    for (Shape bs : {Shape{}, Shape{d.b, 1, d.lq, 1}}) {
      CAPTURE(ir::shape_to_string(bs));
      Graph before = generic(d, [&](GraphBuilder& gb, Ops& o, ValueId s) {
        return o.op(OpKind::Add, {s, gb.input("bias", DType::kFloat32, bs)});
      });
      Graph after = fuse(before);
      const Node& a = attention(after);
      CHECK(after.value(a.inputs[ir::kAttnMask]).shape.back() == d.lk);
      CHECK(rel_l2(before, after) < kTol);
    }
  }
  SECTION("a bool Where and an additive mask sum into one bias") {
    Shape ms{d.b, 1, d.lq, d.lk};
    Graph before = generic(d, [&](GraphBuilder& gb, Ops& o, ValueId s) {
      auto w = o.op(OpKind::Where, {gb.input("keep", DType::kBool, ms), s, o.f32(-kInf)});
      return o.op(OpKind::Add, {w, gb.input("bias", DType::kFloat32, {d.lq, d.lk})});
    });
    Graph after = fuse(before);
    const Node& a = attention(after);
    CHECK(after.value(a.inputs[ir::kAttnMask]).shape == ms);
    CHECK(rel_l2(before, after, inputs_for(before, {{"keep", keep_some(ms)}})) < kTol);
  }
}

TEST_CASE("ONNX's own Attention passes fuse-attention unchanged", "[fuse-attention]") {
  GraphBuilder gb;
  auto q = gb.input("Q", DType::kFloat32, {2, 5, 24});
  auto k = gb.input("K", DType::kFloat32, {2, 7, 12});
  auto v = gb.input("V", DType::kFloat32, {2, 7, 12});
  auto m = gb.input("mask", DType::kBool, {5, 7});
  gb.output(gb.node(OpKind::Attention, {q, k, v, m},
                    attrs({{"q_num_heads", Attribute::of_int(4)},
                           {"kv_num_heads", Attribute::of_int(2)},
                           {"is_causal", Attribute::of_int(1)},
                           {"softcap", Attribute::of_float(3.0)}})));
  Graph before = gb.build();
  optimizer::PassContext ctx;
  Graph after = before;
  REQUIRE(optimizer::fuse_attention(after, ctx).ok());
  REQUIRE(after.live_node_count() == 1);
  CHECK(after.nodes[0].attrs == before.nodes[0].attrs);
  CHECK(after.nodes[0].inputs == before.nodes[0].inputs);
  CHECK(ctx.attention_notes.empty());
  CHECK(ctx.counters.empty());
}

TEST_CASE("a Softmax left unfused says which part of the pattern did not match",
          "[fuse-attention]") {
  auto note_of = [](Graph g) {
    optimizer::PassContext ctx;
    Graph after = fuse(std::move(g), ctx);
    CHECK(count_ops(after, OpKind::Attention) == 0);
    REQUIRE(ctx.attention_notes.size() == 1);
    return ctx.attention_notes[0];
  };
  Dims d{1, 2, 2, 5, 5, 16, 16};
  SECTION("a classifier's softmax over logits") {
    GraphBuilder gb;
    Ops o{gb};
    auto x = gb.input("x", DType::kFloat32, {4, 16});
    gb.output(o.softmax(
        o.op(OpKind::Add, {o.op(OpKind::MatMul, {x, o.weight({16, 10}, 1)}), o.weight({10}, 1)})));
    auto note = note_of(gb.build());
    CHECK_THAT(note, Catch::Contains("rank 2"));
  }
  SECTION("the probabilities are also a model output") {
    Graph g = sdpa_legacy(d, SdpaMask::kNone);
    for (const auto& n : g.nodes)
      if (n.op == OpKind::Softmax) g.outputs.push_back(n.outputs[0]);
    CHECK_THAT(note_of(g), Catch::Contains("not by MatMul(probabilities, V) alone"));
  }
  SECTION("the mask is added before the scale") {
    GraphBuilder gb;
    Ops o{gb};
    auto q = gb.input("q", DType::kFloat32, {1, 2, 5, 16});
    auto k = gb.input("k", DType::kFloat32, {1, 2, 5, 16});
    auto v = gb.input("v", DType::kFloat32, {1, 2, 5, 16});
    auto s = o.op(OpKind::MatMul, {q, o.transpose(k, {0, 1, 3, 2})});
    s = o.op(OpKind::Add, {s, gb.input("m", DType::kFloat32, {5, 5})});
    s = o.op(OpKind::Div, {s, o.f32(4.0f)});
    gb.output(o.op(OpKind::MatMul, {o.softmax(s), v}));
    CHECK_THAT(note_of(gb.build()), Catch::Contains("before they are scaled"));
  }
  SECTION("a Where fill that is not a large negative") {
    Graph g = generic(d, [](GraphBuilder& gb, Ops& o, ValueId s) {
      return o.op(OpKind::Where, {gb.input("keep", DType::kBool, {5, 5}), s, o.f32(-1.0f)});
    });
    CHECK_THAT(note_of(g), Catch::Contains("not a large negative"));
  }
  SECTION("a negative scale (Attention scales Q and K by its square root)") {
    Graph g = generic(d, [](GraphBuilder&, Ops& o, ValueId s) {
      return o.op(OpKind::Mul, {s, o.f32(-1.0f)});
    });
    CHECK_THAT(note_of(g), Catch::Contains("must be >= 0"));
  }
  SECTION("softcapped scores (Tanh between the MatMul and the Softmax)") {
    Graph g = generic(d, [](GraphBuilder&, Ops& o, ValueId s) {
      return o.op(OpKind::Mul,
                  {o.op(OpKind::Tanh, {o.op(OpKind::Div, {s, o.f32(30.0f)})}), o.f32(30.0f)});
    });
    CHECK_THAT(note_of(g), Catch::Contains("Tanh"));
  }
}

TEST_CASE(
    "the default pipeline keeps every attention model's outputs; inspect shows one "
    "attention kernel and no score tensor",
    "[fuse-attention]") {
  struct Model {
    std::string name;
    Graph g;
    std::map<std::string, Tensor> fixed;
  };
  Dims d{2, 4, 4, 12, 12, 32, 32};
  std::vector<Model> models;
  models.push_back({"bert", hf_bert(d), {{"attention_mask", padding_mask(d.b, d.lq)}}});
  models.push_back({"gpt2", hf_gpt2(d), {{"attention_mask", padding_mask(d.b, d.lq)}}});
  models.push_back({"llama", hf_llama(Dims{2, 8, 2, 12, 12, 32, 32}, true), {}});
  models.push_back({"sdpa", sdpa_dynamo(d, SdpaMask::kCausal), {}});
  for (auto& m : models) {
    CAPTURE(m.name);
    Graph optimized = m.g;
    optimizer::PassContext ctx;
    ctx.verify_after_all = true;
    auto report = driver::optimize_and_report(optimized, ctx);
    INFO((report.ok() ? "" : report.status().message()));
    REQUIRE(report.ok());
    CHECK(rel_l2(m.g, optimized, inputs_for(m.g, m.fixed)) < kTol);
    int attention_rows = 0;
    for (const auto& row : report->rows) {
      if (row.kind != "attention") continue;
      ++attention_rows;
      // The ONNX nodes it covers: both MatMuls and the Softmax among them.
      int matmuls = 0, softmaxes = 0;
      for (const auto& name : row.onnx_nodes) {
        if (name.find("/attention") != std::string::npos) continue;  // the node itself
        matmuls += name.rfind("MatMul_", 0) == 0;
        softmaxes += name.rfind("Softmax_", 0) == 0;
      }
      CHECK(matmuls >= 2);
      CHECK(softmaxes == 1);
    }
    CHECK(attention_rows == 1);
    CHECK(report->attention_notes.empty());
    // No B·H·Lq·Lk value is left anywhere in the optimized graph.
    for (const auto& v : optimized.values)
      CHECK(v.shape != Shape{d.b, m.name == "llama" ? 8 : d.h, d.lq, d.lq});
    CHECK_THAT(driver::report_text(*report), Catch::Contains("attention"));
  }
}

TEST_CASE("inspect's report lists the softmaxes left unfused", "[fuse-attention]") {
  Graph g = sdpa_legacy(Dims{1, 2, 2, 5, 5, 16, 16}, SdpaMask::kNone);
  for (const auto& n : g.nodes)
    if (n.op == OpKind::Softmax) g.outputs.push_back(n.outputs[0]);
  optimizer::PassContext ctx;
  auto report = driver::optimize_and_report(g, ctx);
  REQUIRE(report.ok());
  REQUIRE(report->attention_notes.size() == 1);
  std::string text = driver::report_text(*report);
  CHECK_THAT(text, Catch::Contains("attention not fused:\n  Softmax 'Softmax_"));
  const Json json = driver::report_json(*report);
  REQUIRE(json["attention_notes"].size() == 1);
  CHECK_THAT(json["attention_notes"][0].get<std::string>(), Catch::StartsWith("Softmax '"));
}

TEST_CASE("fp16: attention converts with the model and stays close to fp32", "[fuse-attention]") {
  Dims d{2, 4, 4, 12, 12, 32, 32};
  Graph before = sdpa_legacy(d, SdpaMask::kFloat, {d.b, 1, 1, d.lk});
  Graph after = before;
  optimizer::PassContext ctx;
  ctx.precision = optimizer::Precision::kFp16;
  ctx.verify_after_all = true;
  REQUIRE(optimizer::run_passes(after, ctx).ok());
  REQUIRE(count_ops(after, OpKind::Attention) == 1);
  const Node& a = attention(after);
  CHECK(after.value(a.inputs[ir::kAttnQ]).dtype == DType::kFloat16);
  CHECK(rel_l2(before, after) < 1e-2);
}

TEST_CASE("Kᵀ given already transposed, K/V shared by every head through MatMul broadcasting",
          "[fuse-attention]") {
  // q [B, H, Lq, D] @ kt [B, Hk, D, Lk] with kt a model input (a cache stored
  // transposed): Attention reads K as a Transpose of it. Hk = 1: MQA by
  // broadcasting, kv_num_heads 1 with no repeat at all.
  for (int64_t hk : {4, 1}) {
    CAPTURE(hk);
    Dims d{2, 4, hk, 6, 11, 64, 32};
    GraphBuilder gb;
    Ops o{gb};
    auto q = gb.input("q", DType::kFloat32, {d.b, d.h, d.lq, d.d});
    auto kt = gb.input("kt", DType::kFloat32, {d.b, hk, d.d, d.lk});
    auto v = gb.input("v", DType::kFloat32, {d.b, hk, d.lk, d.dv});
    auto s = o.op(OpKind::Div, {o.op(OpKind::MatMul, {q, kt}), o.f32(8.0f)});
    gb.output(o.op(OpKind::MatMul, {o.softmax(s), v}));
    Graph before = gb.build();
    Graph after = fuse(before);
    REQUIRE(count_ops(after, OpKind::Attention) == 1);
    const Node& a = attention(after);
    CHECK(after.value(a.inputs[ir::kAttnK]).shape == Shape{d.b, hk, d.lk, d.d});
    CHECK(after.node(after.value(a.inputs[ir::kAttnK]).producer).op == OpKind::Transpose);
    CHECK(after.value(a.outputs[0]).shape == Shape{d.b, d.h, d.lq, d.dv});
    CHECK(rel_l2(before, after) < kTol);
  }
}
