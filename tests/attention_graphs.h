// Attention as exporters write it, built op by op for the fuse-attention
// tests. torch is not installed here, so each builder reproduces, node for
// node, what the named exporter writes for the named PyTorch code (after
// graphc's constant folding has turned the Shape/Gather/Concat arithmetic
// into constants, which the pipeline does before fuse-attention):
//   sdpa_legacy   torch.onnx.export (TorchScript, opset 17) of
//                 F.scaled_dot_product_attention (symbolic_opset14)
//   sdpa_dynamo   torch.onnx.export(dynamo=True, opset 18) via onnxscript's
//                 aten_scaled_dot_product_attention
//   hf_bert       HF BertSelfAttention (eager), legacy exporter
//   hf_gpt2       HF GPT2Attention._attn (eager), legacy exporter
//   hf_t5         HF T5Attention (eager): no scale, position bias + mask
//   hf_whisper    HF WhisperAttention (eager): Q scaled before the head split;
//                 the older bmm form folds heads into the batch
//   hf_llama      HF LlamaAttention (eager): RoPE, repeat_kv (GQA)
// Header-only (tests/CMakeLists.txt compiles only *_test.cpp files).
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace graphc::testing::attn {

using ir::Attribute;
using ir::DType;
using ir::Graph;
using ir::OpKind;
using ir::Shape;
using ir::Tensor;
using ir::ValueId;

inline constexpr float kFloatMin = -3.4028234663852886e38f;  // torch.finfo(float32).min
inline const float kInf = std::numeric_limits<float>::infinity();

struct Dims {
  int64_t b = 2, h = 4, hkv = 4, lq = 7, lk = 7, d = 32, dv = 32;
  int64_t e() const { return h * d; }
};

// Small helpers over GraphBuilder.
struct Ops {
  GraphBuilder& b;
  std::mt19937& rng = test_rng();

  ValueId i64(const std::vector<int64_t>& v) {
    return b.constant(b.graph().unique_name("c"),
                      Tensor::from_i64(v, {static_cast<int64_t>(v.size())}), false);
  }
  ValueId f32(float v, Shape shape = {}) {
    Tensor t(DType::kFloat32, shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.set_f64(i, v);
    return b.constant(b.graph().unique_name("f"), t, false);
  }
  ValueId weight(Shape s, double scale) {
    return b.constant(b.graph().unique_name("w"),
                      random_tensor(DType::kFloat32, s, rng, -scale, scale));
  }
  ValueId reshape(ValueId x, const std::vector<int64_t>& s) {
    return b.node(OpKind::Reshape, {x, i64(s)});
  }
  ValueId transpose(ValueId x, std::vector<int64_t> perm) {
    return b.node(OpKind::Transpose, {x}, attrs({{"perm", Attribute::of_ints(std::move(perm))}}));
  }
  ValueId unsqueeze(ValueId x, std::vector<int64_t> axes) {
    return b.node(OpKind::Unsqueeze, {x, i64(axes)});
  }
  ValueId op(OpKind k, std::vector<ValueId> in) { return b.node(k, std::move(in)); }
  ValueId softmax(ValueId x) {
    return b.node(OpKind::Softmax, {x}, attrs({{"axis", Attribute::of_int(-1)}}));
  }
  // nn.Linear on [B, L, in]: MatMul by the weight, Add the bias.
  ValueId linear(ValueId x, int64_t in, int64_t out) {
    double s = 1.0 / std::sqrt(static_cast<double>(in));
    return op(OpKind::Add, {op(OpKind::MatMul, {x, weight({in, out}, s)}), weight({out}, s)});
  }
  // x.view(B, L, H, D).transpose(1, 2)  (permute(0, 2, 1, 3))
  ValueId split_heads(ValueId x, int64_t b_, int64_t l, int64_t h, int64_t d) {
    return transpose(reshape(x, {b_, l, h, d}), {0, 2, 1, 3});
  }
  // y.transpose(1, 2).reshape(B, L, H*D)
  ValueId merge_heads(ValueId y, int64_t b_, int64_t l, int64_t e) {
    return reshape(transpose(y, {0, 2, 1, 3}), {b_, l, e});
  }
  // HF get_extended_attention_mask: (1.0 - mask[:, None, None, :].to(float)) * fill
  ValueId extended_mask(ValueId mask_i64, float fill) {
    ValueId m = unsqueeze(unsqueeze(mask_i64, {1}), {2});
    ValueId f = b.node(OpKind::Cast, {m},
                       attrs({{"to", Attribute::of_int(static_cast<int64_t>(DType::kFloat32))}}));
    return op(OpKind::Mul, {op(OpKind::Sub, {f32(1.0f), f}), f32(fill)});
  }
  // A [rows, cols] bool constant, true where allowed(i, j).
  template <typename F>
  ValueId bool_grid(Shape shape, F allowed) {
    Tensor t(DType::kBool, shape);
    int64_t rows = shape[shape.size() - 2], cols = shape.back();
    for (int64_t k = 0; k < t.numel(); ++k)
      t.set_i64(k, allowed((k / cols) % rows, k % cols) ? 1 : 0);
    return b.constant(b.graph().unique_name("grid"), t);
  }
};

enum class SdpaMask { kNone, kFloat, kBool, kCausal };

// F.scaled_dot_product_attention(q, k, v, attn_mask, is_causal) with q [B, H, Lq, D],
// k/v [B, H, Lk, D] model inputs; legacy exporter (symbolic_opset14).
inline Graph sdpa_legacy(const Dims& d, SdpaMask mask, Shape mask_shape = {}) {
  GraphBuilder gb;
  Ops o{gb};
  auto q = gb.input("q", DType::kFloat32, {d.b, d.h, d.lq, d.d});
  auto k = gb.input("k", DType::kFloat32, {d.b, d.h, d.lk, d.d});
  auto v = gb.input("v", DType::kFloat32, {d.b, d.h, d.lk, d.dv});
  // _attention_scale: Div(1.0, Sqrt(Cast(Shape(q)[-1]))) -> Cast, folded to [1];
  // Sqrt(scale) folded too.
  float root = std::sqrt(1.0f / std::sqrt(static_cast<float>(d.d)));
  auto kt = o.transpose(k, {0, 1, 3, 2});
  auto qs = o.op(OpKind::Mul, {q, o.f32(root, {1})});
  auto ks = o.op(OpKind::Mul, {kt, o.f32(root, {1})});
  ValueId s = o.op(OpKind::MatMul, {qs, ks});
  if (mask == SdpaMask::kFloat) {
    s = o.op(OpKind::Add, {s, gb.input("attn_mask", DType::kFloat32, mask_shape)});
  } else if (mask == SdpaMask::kBool) {
    auto m = gb.input("attn_mask", DType::kBool, mask_shape);
    s = o.op(OpKind::Add, {s, o.op(OpKind::Where, {m, o.f32(0.0f, {1}), o.f32(-kInf, {1})})});
  } else if (mask == SdpaMask::kCausal) {
    // _causal_attention_mask: Expand(1.0, [L, S]) -> Trilu(upper=0) -> Equal 0 -> Where(-inf, 0)
    auto ones = gb.node(OpKind::Expand, {o.f32(1.0f, {1}), o.i64({d.lq, d.lk})});
    auto tri = gb.node(OpKind::Trilu, {ones}, attrs({{"upper", Attribute::of_int(0)}}));
    auto eq = o.op(OpKind::Equal, {tri, o.f32(0.0f, {1})});
    s = o.op(OpKind::Add, {s, o.op(OpKind::Where, {eq, o.f32(-kInf, {1}), o.f32(0.0f, {1})})});
  }
  gb.output(o.op(OpKind::MatMul, {o.softmax(s), v}));
  return gb.build();
}

// onnxscript's aten_scaled_dot_product_attention (dynamo exporter, opset 18):
// Kᵀ by Reshape/Transpose/Reshape, sqrt(scale) Muls on Q and Kᵀ (the
// exporter's scale is [1]-shaped, folded; a rank-0 one here, sdpa_legacy has
// [1]), a Dropout(ratio 0) after the Softmax, the causal mask CastLike'd to
// Q; enable_gqa repeats K/V with Unsqueeze/Expand/Reshape.
inline Graph sdpa_dynamo(const Dims& d, SdpaMask mask, Shape mask_shape = {}, bool gqa = false) {
  GraphBuilder gb;
  Ops o{gb};
  auto q = gb.input("query", DType::kFloat32, {d.b, d.h, d.lq, d.d});
  auto k = gb.input("key", DType::kFloat32, {d.b, gqa ? d.hkv : d.h, d.lk, d.d});
  auto v = gb.input("value", DType::kFloat32, {d.b, gqa ? d.hkv : d.h, d.lk, d.dv});
  if (gqa) {
    int64_t n = d.h / d.hkv;
    auto rep = [&](ValueId x, int64_t dd) {
      auto e = gb.node(OpKind::Expand, {o.unsqueeze(x, {2}), o.i64({d.b, d.hkv, n, d.lk, dd})});
      return o.reshape(e, {d.b, d.h, d.lk, dd});
    };
    k = rep(k, d.d);
    v = rep(v, d.dv);
  }
  float root = std::sqrt(1.0f / std::sqrt(static_cast<float>(d.d)));
  auto k3 = o.reshape(k, {-1, d.lk, d.d});
  auto kt = o.reshape(o.transpose(k3, {0, 2, 1}), {d.b, d.h, d.d, d.lk});
  auto qs = o.op(OpKind::Mul, {q, o.f32(root)});
  auto ks = o.op(OpKind::Mul, {kt, o.f32(root)});
  ValueId s = o.op(OpKind::MatMul, {qs, ks});
  if (mask == SdpaMask::kFloat) {
    s = o.op(OpKind::Add, {s, gb.input("attn_mask", DType::kFloat32, mask_shape)});
  } else if (mask == SdpaMask::kBool) {
    auto m = gb.input("attn_mask", DType::kBool, mask_shape);
    s = o.op(OpKind::Add, {s, o.op(OpKind::Where, {m, o.f32(0.0f), o.f32(-kInf)})});
  } else if (mask == SdpaMask::kCausal) {
    auto ones = gb.node(OpKind::Expand, {o.f32(1.0f), o.i64({d.lq, d.lk})});
    auto tri = gb.node(OpKind::Trilu, {ones}, attrs({{"upper", Attribute::of_int(0)}}));
    auto w =
        o.op(OpKind::Where, {o.op(OpKind::Equal, {tri, o.f32(0.0f)}), o.f32(-kInf), o.f32(0.0f)});
    s = o.op(OpKind::Add, {s, o.op(OpKind::CastLike, {w, q})});
  }
  auto p = gb.node(OpKind::Dropout, {o.softmax(s), o.f32(0.0f)});
  gb.output(o.op(OpKind::MatMul, {p, v}));
  return gb.build();
}

// HF BertSelfAttention (eager) on hidden_states [B, L, E] with the int64
// attention_mask [B, L] through get_extended_attention_mask (finfo.min).
inline Graph hf_bert(const Dims& d, float fill = kFloatMin) {
  GraphBuilder gb;
  Ops o{gb};
  auto x = gb.input("hidden_states", DType::kFloat32, {d.b, d.lq, d.e()});
  auto am = gb.input("attention_mask", DType::kInt64, {d.b, d.lq});
  auto q = o.split_heads(o.linear(x, d.e(), d.e()), d.b, d.lq, d.h, d.d);
  auto k = o.split_heads(o.linear(x, d.e(), d.e()), d.b, d.lq, d.h, d.d);
  auto v = o.split_heads(o.linear(x, d.e(), d.e()), d.b, d.lq, d.h, d.d);
  auto s = o.op(OpKind::MatMul, {q, o.transpose(k, {0, 1, 3, 2})});
  s = o.op(OpKind::Div, {s, o.f32(std::sqrt(static_cast<float>(d.d)))});
  s = o.op(OpKind::Add, {s, o.extended_mask(am, fill)});
  auto ctx = o.op(OpKind::MatMul, {o.softmax(s), v});
  gb.output(o.linear(o.merge_heads(ctx, d.b, d.lq, d.e()), d.e(), d.e()));
  return gb.build();
}

// HF GPT2Attention._attn (eager): c_attn then split(E, dim=2), the causal
// bias buffer sliced [.., Lk-Lq:Lk, :Lk] and Where(causal, w, finfo.min),
// then the padding mask added.
inline Graph hf_gpt2(const Dims& d, int64_t max_positions = 16) {
  GraphBuilder gb;
  Ops o{gb};
  auto x = gb.input("hidden_states", DType::kFloat32, {d.b, d.lq, d.e()});
  auto am = gb.input("attention_mask", DType::kInt64, {d.b, d.lq});
  auto qkv = o.linear(x, d.e(), 3 * d.e());
  gb.node(OpKind::Split, {qkv, o.i64({d.e(), d.e(), d.e()})},
          attrs({{"axis", Attribute::of_int(2)}}), 3);
  const auto& split = gb.graph().nodes.back().outputs;
  ValueId parts[3] = {split[0], split[1], split[2]};
  auto q = o.split_heads(parts[0], d.b, d.lq, d.h, d.d);
  auto k = o.split_heads(parts[1], d.b, d.lq, d.h, d.d);
  auto v = o.split_heads(parts[2], d.b, d.lq, d.h, d.d);
  auto w = o.op(OpKind::MatMul, {q, o.transpose(k, {0, 1, 3, 2})});
  w = o.op(OpKind::Div, {w, o.f32(std::sqrt(static_cast<float>(d.d)))});
  auto bias = o.bool_grid({1, 1, max_positions, max_positions},
                          [](int64_t i, int64_t j) { return j <= i; });
  auto causal =
      gb.node(OpKind::Slice, {bias, o.i64({d.lq - d.lq, 0}), o.i64({d.lq, d.lq}), o.i64({2, 3})});
  w = o.op(OpKind::Where, {causal, w, o.f32(kFloatMin)});
  w = o.op(OpKind::Add, {w, o.extended_mask(am, kFloatMin)});
  auto a = o.op(OpKind::MatMul, {o.softmax(w), v});
  gb.output(o.merge_heads(a, d.b, d.lq, d.e()));
  return gb.build();
}

// HF T5Attention (eager): scores = q·kᵀ (T5 folds the scale into its init),
// position_bias [1, H, Lq, Lk] (+ the extended mask) added; `cross`: K/V from
// the encoder's states [B, Lk, E] and no position bias, the mask only.
inline Graph hf_t5(const Dims& d, bool cross) {
  GraphBuilder gb;
  Ops o{gb};
  auto x = gb.input("hidden_states", DType::kFloat32, {d.b, d.lq, d.e()});
  auto kv_in = cross ? gb.input("encoder_hidden_states", DType::kFloat32, {d.b, d.lk, d.e()}) : x;
  int64_t lk = cross ? d.lk : d.lq;
  auto am = gb.input("attention_mask", DType::kInt64, {d.b, lk});
  auto q =
      o.split_heads(o.op(OpKind::MatMul, {x, o.weight({d.e(), d.e()}, 0.2)}), d.b, d.lq, d.h, d.d);
  auto k = o.split_heads(o.op(OpKind::MatMul, {kv_in, o.weight({d.e(), d.e()}, 0.2)}), d.b, lk, d.h,
                         d.d);
  auto v = o.split_heads(o.op(OpKind::MatMul, {kv_in, o.weight({d.e(), d.e()}, 0.2)}), d.b, lk, d.h,
                         d.d);
  auto s = o.op(OpKind::MatMul, {q, o.transpose(k, {0, 1, 3, 2})});
  ValueId bias = o.extended_mask(am, kFloatMin);
  if (!cross) bias = o.op(OpKind::Add, {o.weight({1, d.h, d.lq, lk}, 1.0), bias});
  s = o.op(OpKind::Add, {s, bias});
  auto a = o.op(OpKind::MatMul, {o.softmax(s), v});
  gb.output(
      o.op(OpKind::MatMul, {o.merge_heads(a, d.b, d.lq, d.e()), o.weight({d.e(), d.e()}, 0.2)}));
  return gb.build();
}

// HF WhisperAttention (eager): q_proj(x) * scaling before the head split, no
// mask in the encoder. `bmm`: the older form with heads folded into the
// batch, torch.bmm on [B*H, L, D] (rank-3 scores).
inline Graph hf_whisper(const Dims& d, bool bmm) {
  GraphBuilder gb;
  Ops o{gb};
  auto x = gb.input("hidden_states", DType::kFloat32, {d.b, d.lq, d.e()});
  float scaling = 1.0f / std::sqrt(static_cast<float>(d.d));
  auto qp = o.op(OpKind::Mul, {o.linear(x, d.e(), d.e()), o.f32(scaling)});
  auto q = o.split_heads(qp, d.b, d.lq, d.h, d.d);
  auto k =
      o.split_heads(o.op(OpKind::MatMul, {x, o.weight({d.e(), d.e()}, 0.2)}), d.b, d.lq, d.h, d.d);
  auto v = o.split_heads(o.linear(x, d.e(), d.e()), d.b, d.lq, d.h, d.d);
  ValueId a;
  if (bmm) {
    auto q3 = o.reshape(q, {d.b * d.h, -1, d.d});
    auto k3 = o.reshape(k, {d.b * d.h, -1, d.d});
    auto v3 = o.reshape(v, {d.b * d.h, -1, d.d});
    auto w = o.op(OpKind::MatMul, {q3, o.transpose(k3, {0, 2, 1})});
    a = o.reshape(o.op(OpKind::MatMul, {o.softmax(w), v3}), {d.b, d.h, d.lq, d.d});
  } else {
    auto w = o.op(OpKind::MatMul, {q, o.transpose(k, {0, 1, 3, 2})});
    a = o.op(OpKind::MatMul, {o.softmax(w), v});
  }
  gb.output(o.linear(o.merge_heads(a, d.b, d.lq, d.e()), d.e(), d.e()));
  return gb.build();
}

// HF LlamaAttention (eager): q/k/v projections, rotary embedding on Q and K
// (elementwise: x*cos + rotate_half(x)*sin, here as two Muls and an Add),
// repeat_kv (x[:, :, None].expand(B, Hkv, n, L, D).reshape(B, H, L, D)) or
// `tile`: K/V heads repeated by Tile on the head axis, the 4-D mask input
// added, matmul(q, kᵀ) * scaling.
inline Graph hf_llama(const Dims& d, bool rope, bool tile = false) {
  GraphBuilder gb;
  Ops o{gb};
  auto x = gb.input("hidden_states", DType::kFloat32, {d.b, d.lq, d.e()});
  auto mask = gb.input("causal_mask", DType::kFloat32, {d.b, 1, d.lq, d.lq});
  const int64_t ekv = d.hkv * d.d, n = d.h / d.hkv;
  auto q =
      o.split_heads(o.op(OpKind::MatMul, {x, o.weight({d.e(), d.e()}, 0.2)}), d.b, d.lq, d.h, d.d);
  auto k =
      o.split_heads(o.op(OpKind::MatMul, {x, o.weight({d.e(), ekv}, 0.2)}), d.b, d.lq, d.hkv, d.d);
  auto v =
      o.split_heads(o.op(OpKind::MatMul, {x, o.weight({d.e(), ekv}, 0.2)}), d.b, d.lq, d.hkv, d.d);
  if (rope) {
    auto cos = o.weight({d.lq, d.d}, 1.0), sin = o.weight({d.lq, d.d}, 1.0);
    auto rot = [&](ValueId t) {
      return o.op(OpKind::Add,
                  {o.op(OpKind::Mul, {t, cos}), o.op(OpKind::Mul, {o.op(OpKind::Neg, {t}), sin})});
    };
    q = rot(q);
    k = rot(k);
  }
  auto repeat = [&](ValueId t) {
    if (tile) return gb.node(OpKind::Tile, {t, o.i64({1, n, 1, 1})});
    auto e = gb.node(OpKind::Expand, {o.unsqueeze(t, {2}), o.i64({d.b, d.hkv, n, d.lq, d.d})});
    return o.reshape(e, {d.b, d.h, d.lq, d.d});
  };
  k = repeat(k);
  v = repeat(v);
  auto w = o.op(OpKind::MatMul, {q, o.transpose(k, {0, 1, 3, 2})});
  w = o.op(OpKind::Mul, {w, o.f32(1.0f / std::sqrt(static_cast<float>(d.d)))});
  w = o.op(OpKind::Add, {w, mask});
  auto a = o.op(OpKind::MatMul, {o.softmax(w), v});
  gb.output(
      o.op(OpKind::MatMul, {o.merge_heads(a, d.b, d.lq, d.e()), o.weight({d.e(), d.e()}, 0.2)}));
  return gb.build();
}

}  // namespace graphc::testing::attn
