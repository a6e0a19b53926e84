// The Attention operator (ONNX opsets 23-25): the reference kernel against an
// independent, spelled-out implementation of ONNX's semantics on fresh random
// inputs (tolerance 1e-9 relative: both compute in double, the kernel's
// inputs and outputs are float64 here), fully masked rows, the shape rule's
// errors and the importer's opset checks. The ONNX node tests
// (test_attention_*) run in the conformance suite.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "importer/importer.h"
#include "ir/attention_params.h"
#include "reference/executor.h"
#include "tests/onnx_builder.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::testing;
using ir::Attribute;
using ir::DType;
using ir::OpKind;
using ir::Shape;
using ir::Tensor;

namespace {

struct Config {
  int64_t b = 2, hq = 4, hkv = 4, lq = 5, lkv = 7, past = 0, d = 8, dv = 8;
  bool three_d = false, causal = false, mask_bool = false, nonpad = false;
  Shape mask;        // empty: none
  double scale = 0;  // 0: default
  double softcap = 0;
  int64_t left = -1, right = -1;
};

Shape q_shape(const Config& c) {
  return c.three_d ? Shape{c.b, c.lq, c.hq * c.d} : Shape{c.b, c.hq, c.lq, c.d};
}
Shape kv_shape(const Config& c, int64_t d) {
  return c.three_d ? Shape{c.b, c.lkv, c.hkv * d} : Shape{c.b, c.hkv, c.lkv, d};
}

// Q/K/V element (b, h, l, e) in either layout.
double at(const Tensor& t, bool three_d, int64_t heads, int64_t len, int64_t d, int64_t b,
          int64_t h, int64_t l, int64_t e) {
  return three_d ? t.get_f64(((b * len + l) * heads + h) * d + e)
                 : t.get_f64(((b * heads + h) * len + l) * d + e);
}

// ONNX's Attention spelled out with explicit loops over a materialized bias
// [B, Hq, Lq, T] (independent of reference/kernels_attention.cpp).
Tensor expected_y(const Config& c, const std::map<std::string, Tensor>& in) {
  const Tensor &q = in.at("Q"), &k = in.at("K"), &v = in.at("V");
  const int64_t T = c.past + c.lkv, group = c.hq / c.hkv;
  const double scale = c.scale > 0 ? c.scale : 1 / std::sqrt(double(c.d));
  const double ninf = -std::numeric_limits<double>::infinity();
  auto key = [&](int64_t b, int64_t h, int64_t t, int64_t e) {
    return t < c.past ? in.at("past_key").get_f64(((b * c.hkv + h) * c.past + t) * c.d + e)
                      : at(k, c.three_d, c.hkv, c.lkv, c.d, b, h, t - c.past, e);
  };
  auto val = [&](int64_t b, int64_t h, int64_t t, int64_t e) {
    return t < c.past ? in.at("past_value").get_f64(((b * c.hkv + h) * c.past + t) * c.dv + e)
                      : at(v, c.three_d, c.hkv, c.lkv, c.dv, b, h, t - c.past, e);
  };
  std::vector<int64_t> nonpad(static_cast<size_t>(c.b), T);
  if (c.nonpad) nonpad = in.at("nonpad").to_i64_vector();
  Tensor y(DType::kFloat64,
           c.three_d ? Shape{c.b, c.lq, c.hq * c.dv} : Shape{c.b, c.hq, c.lq, c.dv});
  for (int64_t b = 0; b < c.b; ++b)
    for (int64_t h = 0; h < c.hq; ++h)
      for (int64_t i = 0; i < c.lq; ++i) {
        std::vector<double> x(static_cast<size_t>(T)), bias(static_cast<size_t>(T), 0.0);
        for (int64_t j = 0; j < T; ++j) {
          double& bj = bias[static_cast<size_t>(j)];
          if (!c.mask.empty()) {
            // Right-aligned broadcast; keys past the mask's last dim are masked.
            const Shape& m = c.mask;
            if (j >= m.back()) {
              bj = ninf;
            } else {
              int64_t coord[4] = {b, h, i, j}, off = 0, stride = 1;
              for (int64_t dd = static_cast<int64_t>(m.size()) - 1; dd >= 0; --dd) {
                int64_t dim = m[static_cast<size_t>(dd)];
                if (dim != 1) off += coord[4 - m.size() + static_cast<size_t>(dd)] * stride;
                stride *= dim;
              }
              double mv = in.at("mask").get_f64(off);
              bj = c.mask_bool ? (mv != 0 ? 0.0 : ninf) : mv;
            }
          }
          int64_t offset = c.nonpad ? nonpad[static_cast<size_t>(b)] - c.lq : c.past;
          if (c.causal && j > i + offset) bj += ninf;
          int64_t diff = i + offset - j;
          if ((c.left >= 0 && diff > c.left) || (c.right >= 0 && -diff > c.right)) bj += ninf;
          if (j >= nonpad[static_cast<size_t>(b)]) bj += ninf;
          double s = 0;
          for (int64_t e = 0; e < c.d; ++e)
            s += at(q, c.three_d, c.hq, c.lq, c.d, b, h, i, e) * key(b, h / group, j, e);
          s *= scale;
          if (c.softcap > 0) s = c.softcap * std::tanh(s / c.softcap);
          x[static_cast<size_t>(j)] = s + bj;
        }
        bool all_masked = true;
        double mx = ninf;
        for (int64_t j = 0; j < T; ++j) {
          all_masked = all_masked && bias[static_cast<size_t>(j)] == ninf;
          mx = std::max(mx, x[static_cast<size_t>(j)]);
        }
        double sum = 0;
        for (auto& e : x) sum += (e = all_masked ? 0.0 : std::exp(e - mx));
        for (int64_t e = 0; e < c.dv; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < T; ++j)
            if (!all_masked) acc += x[static_cast<size_t>(j)] / sum * val(b, h / group, j, e);
          int64_t off = c.three_d ? ((b * c.lq + i) * c.hq + h) * c.dv + e
                                  : ((b * c.hq + h) * c.lq + i) * c.dv + e;
          y.set_f64(off, acc);
        }
      }
  return y;
}

struct Built {
  ir::Graph g;
  std::map<std::string, Tensor> in;
};

Built build(const Config& c) {
  GraphBuilder gb;
  auto& rng = test_rng();
  std::map<std::string, Tensor> in;
  auto input = [&](const std::string& name, DType dt, Shape s) {
    in[name] = random_tensor(dt, s, rng);
    return gb.input(name, dt, s);
  };
  std::vector<ir::ValueId> ins = {input("Q", DType::kFloat64, q_shape(c)),
                                  input("K", DType::kFloat64, kv_shape(c, c.d)),
                                  input("V", DType::kFloat64, kv_shape(c, c.dv))};
  ins.push_back(c.mask.empty()
                    ? ir::kNoValue
                    : input("mask", c.mask_bool ? DType::kBool : DType::kFloat64, c.mask));
  if (c.past) {
    ins.push_back(input("past_key", DType::kFloat64, {c.b, c.hkv, c.past, c.d}));
    ins.push_back(input("past_value", DType::kFloat64, {c.b, c.hkv, c.past, c.dv}));
  } else {
    ins.push_back(ir::kNoValue);
    ins.push_back(ir::kNoValue);
  }
  if (c.nonpad) {
    ins.push_back(gb.input("nonpad", DType::kInt64, {c.b}));
    Tensor n(DType::kInt64, {c.b});
    for (int64_t b = 0; b < c.b; ++b)
      n.set_i64(b, std::uniform_int_distribution<int64_t>(1, c.lkv)(rng));
    in["nonpad"] = n;
  }
  while (!ins.empty() && ins.back() == ir::kNoValue) ins.pop_back();
  ir::AttributeMap a;
  if (c.three_d) {
    a.set("q_num_heads", Attribute::of_int(c.hq));
    a.set("kv_num_heads", Attribute::of_int(c.hkv));
  }
  if (c.causal) a.set("is_causal", Attribute::of_int(1));
  if (c.scale > 0) a.set("scale", Attribute::of_float(c.scale));
  if (c.softcap > 0) a.set("softcap", Attribute::of_float(c.softcap));
  if (c.left >= 0) a.set("left_window_size", Attribute::of_int(c.left));
  if (c.right >= 0) a.set("right_window_size", Attribute::of_int(c.right));
  gb.output(gb.node(OpKind::Attention, ins, a, 1, "attention"));
  return {gb.build(), std::move(in)};
}

double rel_err(const Tensor& got, const Tensor& want) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double d = got.get_f64(i) - want.get_f64(i);
    num += d * d;
    den += want.get_f64(i) * want.get_f64(i);
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

}  // namespace

TEST_CASE("Attention's reference kernel follows ONNX's semantics on random inputs",
          "[attention-op]") {
  std::vector<std::pair<std::string, Config>> cases;
  auto add = [&](std::string what, auto edit) {
    Config c;
    edit(c);
    cases.emplace_back(std::move(what), c);
  };
  add("4-D MHA", [](Config&) {});
  add("3-D cross attention", [](Config& c) { c.three_d = true; });
  add("GQA 4 over 2, causal", [](Config& c) {
    c.hkv = 2;
    c.causal = true;
  });
  add("MQA 3-D, scale and softcap", [](Config& c) {
    c.three_d = true;
    c.hkv = 1;
    c.scale = 0.3;
    c.softcap = 2.5;
  });
  add("bool mask [B, 1, Lq, Lkv]", [](Config& c) {
    c.mask = {c.b, 1, c.lq, c.lkv};
    c.mask_bool = true;
  });
  add("float mask [Lkv] with causal", [](Config& c) {
    c.mask = {c.lkv};
    c.causal = true;
  });
  add("float mask [Hq, Lq, Lkv], Lq > Lkv", [](Config& c) {
    c.lq = 9;
    c.mask = {c.hq, c.lq, c.lkv};
  });
  add("short mask: missing keys are masked", [](Config& c) { c.mask = {c.lq, c.lkv - 3}; });
  add("past and present, causal offset by the past", [](Config& c) {
    c.past = 6;
    c.causal = true;
    c.mask = {c.b, 1, c.lq, 13};
  });
  add("3-D with past, GQA, Dv != D", [](Config& c) {
    c.three_d = true;
    c.past = 3;
    c.hkv = 2;
    c.dv = 5;
  });
  add("nonpad_kv_seqlen with causal", [](Config& c) {
    c.nonpad = true;
    c.causal = true;
  });
  add("local window with causal", [](Config& c) {
    c.left = 2;
    c.causal = true;
  });
  add("bidirectional window", [](Config& c) {
    c.left = 1;
    c.right = 2;
  });
  for (const auto& [what, c] : cases) {
    CAPTURE(what);
    Built b = build(c);
    auto out = reference::execute(b.g, b.in);
    INFO((out.ok() ? "" : out.status().message()));
    REQUIRE(out.ok());
    const Tensor& y = out->begin()->second;
    Tensor want = expected_y(c, b.in);
    REQUIRE(y.shape() == want.shape());
    CHECK(rel_err(y, want) < 1e-9);
  }
}

TEST_CASE("Attention: fully masked rows are zero, qk_matmul_output modes, present outputs",
          "[attention-op]") {
  GraphBuilder gb;
  auto q = gb.input("Q", DType::kFloat32, {1, 2, 3, 4});
  auto k = gb.input("K", DType::kFloat32, {1, 2, 5, 4});
  auto v = gb.input("V", DType::kFloat32, {1, 2, 5, 4});
  auto m = gb.input("M", DType::kBool, {3, 5});
  auto pk = gb.input("PK", DType::kFloat32, {1, 2, 0, 4});
  auto pv = gb.input("PV", DType::kFloat32, {1, 2, 0, 4});
  std::vector<ir::ValueId> outs;
  for (int64_t mode : {0, 2, 3}) {
    gb.node(OpKind::Attention, {q, k, v, m, pk, pv},
            testing::attrs({{"qk_matmul_output_mode", Attribute::of_int(mode)}}), 4,
            "attention_mode" + std::to_string(mode));
    const auto& o = gb.graph().nodes.back().outputs;
    if (mode == 0)
      outs.insert(outs.end(), o.begin(), o.end());
    else
      outs.push_back(o[3]);
  }
  for (auto o : outs) gb.output(o);
  auto g = gb.build();
  std::map<std::string, Tensor> in;
  for (auto [name, s] :
       {std::pair{"Q", Shape{1, 2, 3, 4}}, {"K", Shape{1, 2, 5, 4}}, {"V", Shape{1, 2, 5, 4}}})
    in[name] = random_tensor(DType::kFloat32, s, test_rng());
  in["PK"] = Tensor(DType::kFloat32, {1, 2, 0, 4});
  in["PV"] = Tensor(DType::kFloat32, {1, 2, 0, 4});
  Tensor mask(DType::kBool, {3, 5});
  for (int64_t j = 0; j < 5; ++j) {
    mask.set_i64(0 * 5 + j, 1);  // row 0: every key
    mask.set_i64(1 * 5 + j, 0);  // row 1: no key
    mask.set_i64(2 * 5 + j, j == 4);
  }
  in["M"] = mask;
  auto r = reference::execute(g, in);
  REQUIRE(r.ok());
  auto out = [&](size_t i) { return r->at(g.value(g.outputs[i]).name); };
  const Tensor y = out(0), present_k = out(1), scores = out(3), masked = out(4), probs = out(5);
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t e = 0; e < 4; ++e) {
      CHECK(y.get_f64(((h * 3) + 1) * 4 + e) == 0.0);  // fully masked: 0, not NaN
      // Row 2 attends key 4 alone: exactly V's row 4.
      CHECK(y.get_f64(((h * 3) + 2) * 4 + e) == Approx(in["V"].get_f64((h * 5 + 4) * 4 + e)));
    }
    double sum0 = 0;
    for (int64_t j = 0; j < 5; ++j) {
      CHECK(probs.get_f64((h * 3 + 1) * 5 + j) == 0.0);
      CHECK(std::isinf(masked.get_f64((h * 3 + 1) * 5 + j)));
      CHECK(masked.get_f64((h * 3) * 5 + j) == Approx(scores.get_f64((h * 3) * 5 + j)));
      sum0 += probs.get_f64((h * 3) * 5 + j);
    }
    CHECK(sum0 == Approx(1.0));
  }
  CHECK(max_abs_diff(present_k, in["K"]) == 0.0);  // empty past: present is K
}

TEST_CASE("Attention's shape rule refuses bad inputs with clear errors", "[attention-op]") {
  struct Bad {
    std::string why;
    std::vector<std::pair<DType, Shape>> inputs;  // kUndefined: omitted
    ir::AttributeMap attrs;
    std::string message;
  };
  const DType f = DType::kFloat32, u = DType::kUndefined;
  auto heads = [](int64_t q, int64_t kv) {
    return testing::attrs(
        {{"q_num_heads", Attribute::of_int(q)}, {"kv_num_heads", Attribute::of_int(kv)}});
  };
  std::vector<Bad> cases = {
      {"3-D without heads",
       {{f, {1, 4, 8}}, {f, {1, 4, 8}}, {f, {1, 4, 8}}},
       {},
       "needs attributes q_num_heads"},
      {"heads do not divide",
       {{f, {1, 4, 9}}, {f, {1, 4, 8}}, {f, {1, 4, 8}}},
       heads(2, 2),
       "must divide"},
      {"Hq not a multiple of Hkv",
       {{f, {1, 3, 4, 8}}, {f, {1, 2, 4, 8}}, {f, {1, 2, 4, 8}}},
       {},
       "multiple of kv_num_heads"},
      {"mixed ranks",
       {{f, {1, 4, 8}}, {f, {1, 1, 4, 8}}, {f, {1, 1, 4, 8}}},
       {},
       "must all be 3-D"},
      {"K head size", {{f, {1, 1, 4, 8}}, {f, {1, 1, 4, 6}}, {f, {1, 1, 4, 8}}}, {}, "head size"},
      {"V length", {{f, {1, 1, 4, 8}}, {f, {1, 1, 5, 8}}, {f, {1, 1, 4, 8}}}, {}, "values"},
      {"V dtype",
       {{f, {1, 1, 4, 8}}, {f, {1, 1, 5, 8}}, {DType::kFloat16, {1, 1, 5, 8}}},
       {},
       "one dtype"},
      {"mask too long",
       {{f, {1, 1, 4, 8}}, {f, {1, 1, 5, 8}}, {f, {1, 1, 5, 8}}, {f, {4, 6}}},
       {},
       "attn_mask"},
      {"mask int",
       {{f, {1, 1, 4, 8}}, {f, {1, 1, 5, 8}}, {f, {1, 1, 5, 8}}, {DType::kInt32, {4, 5}}},
       {},
       "bool or"},
      {"past_key alone",
       {{f, {1, 1, 4, 8}}, {f, {1, 1, 5, 8}}, {f, {1, 1, 5, 8}}, {u, {}}, {f, {1, 1, 2, 8}}},
       {},
       "together"},
      {"is_causal 2",
       {{f, {1, 1, 4, 8}}, {f, {1, 1, 5, 8}}, {f, {1, 1, 5, 8}}},
       testing::attrs({{"is_causal", Attribute::of_int(2)}}),
       "is_causal"},
      {"qk mode 4",
       {{f, {1, 1, 4, 8}}, {f, {1, 1, 5, 8}}, {f, {1, 1, 5, 8}}},
       testing::attrs({{"qk_matmul_output_mode", Attribute::of_int(4)}}),
       "qk_matmul_output_mode"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.why);
    GraphBuilder gb;
    std::vector<ir::ValueId> ins;
    for (size_t i = 0; i < c.inputs.size(); ++i)
      ins.push_back(c.inputs[i].first == u ? ir::kNoValue
                                           : gb.input("in" + std::to_string(i), c.inputs[i].first,
                                                      c.inputs[i].second));
    gb.node(OpKind::Attention, ins, c.attrs, 1, "attn");
    Status st = ir::infer_shapes(gb.graph());
    REQUIRE_FALSE(st.ok());
    CHECK_THAT(st.message(), Catch::Contains(c.message));
    CHECK_THAT(st.message(), Catch::Contains("node 'attn' (Attention)"));
  }
}

TEST_CASE("Attention import: opset additions are refused in older opsets", "[attention-op]") {
  auto model = [](int64_t opset, bool nonpad, bool window, const std::string& domain = "") {
    OnnxModel m(opset);
    if (!domain.empty()) m.set_opset(domain, 1);
    for (const char* n : {"Q", "K", "V"}) m.input(n, onnx::TensorProto::FLOAT, {1, 2, 3, 4});
    std::vector<std::string> ins = {"Q", "K", "V"};
    if (nonpad) {
      m.input("n", onnx::TensorProto::INT64, {1});
      ins.insert(ins.end(), {"", "", "", "n"});
    }
    auto* node = m.node("Attention", ins, {"Y"}, "attn", domain);
    if (window) attr_int(node, "left_window_size", 1);
    m.output("Y");
    return importer::import_model_bytes(m.bytes(), ".", "m.onnx");
  };
  CHECK(model(23, false, false).ok());
  CHECK(model(25, true, true).ok());
  auto nonpad23 = model(23, true, false);
  REQUIRE_FALSE(nonpad23.ok());
  CHECK_THAT(nonpad23.status().message(), Catch::Contains("exists from opset 24"));
  auto window24 = model(24, false, true);
  REQUIRE_FALSE(window24.ok());
  CHECK_THAT(window24.status().message(),
             Catch::Contains("'left_window_size' exists from opset 25"));
  auto old = model(22, false, false);
  REQUIRE_FALSE(old.ok());
  CHECK_THAT(old.status().message(), Catch::Contains("introduced in opset 23"));
  auto ms = model(23, false, false, "com.microsoft");
  REQUIRE_FALSE(ms.ok());
  CHECK(ms.status().code() == ErrorCode::kUnsupported);
  OnnxModel bad_kind(23);
  for (const char* n : {"Q", "K", "V"}) bad_kind.input(n, onnx::TensorProto::FLOAT, {1, 2, 3, 4});
  attr_float(bad_kind.node("Attention", {"Q", "K", "V"}, {"Y"}, "attn"), "is_causal", 1.0f);
  bad_kind.output("Y");
  auto k = importer::import_model_bytes(bad_kind.bytes(), ".", "m.onnx");
  REQUIRE_FALSE(k.ok());
  CHECK_THAT(k.status().message(), Catch::Contains("'is_causal' must be of type int"));
}
