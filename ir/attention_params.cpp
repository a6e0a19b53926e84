#include "ir/attention_params.h"

#include <cmath>

#include "ir/dtype.h"
#include "ir/graph.h"

namespace graphc::ir {

namespace {

bool is_attention_float(DType t) {
  return t == DType::kFloat16 || t == DType::kBFloat16 || t == DType::kFloat32 ||
         t == DType::kFloat64;
}

// The float types softmax_precision may name (ONNX TensorProto codes).
bool is_softmax_precision(int64_t code) {
  return code == 1 /*float*/ || code == 10 /*float16*/ || code == 11 /*double*/ ||
         code == 16 /*bfloat16*/;
}

}  // namespace

Shape AttentionParams::y_shape() const {
  if (three_d) return {batch, q_len, q_heads * v_head_size};
  return {batch, q_heads, q_len, v_head_size};
}
Shape AttentionParams::present_key_shape() const { return {batch, kv_heads, total_len, head_size}; }
Shape AttentionParams::present_value_shape() const {
  return {batch, kv_heads, total_len, v_head_size};
}
Shape AttentionParams::qk_output_shape() const { return {batch, q_heads, q_len, total_len}; }

Expected<AttentionParams> attention_params(const AttributeMap& attrs,
                                           const std::vector<const Shape*>& shapes,
                                           const std::vector<DType>& dtypes) {
  auto has = [&](size_t i) { return i < shapes.size() && shapes[i] != nullptr; };
  for (size_t i : {kAttnQ, kAttnK, kAttnV})
    if (!has(i)) return invalid_model("Attention needs inputs Q, K and V (input {} is missing)", i);
  const Shape& q = *shapes[kAttnQ];
  const Shape& k = *shapes[kAttnK];
  const Shape& v = *shapes[kAttnV];
  AttentionParams p;
  p.dtype = dtypes[kAttnQ];
  if (!is_attention_float(p.dtype))
    return invalid_model("Q must be float16, bfloat16, float32 or float64, got {}",
                         dtype_name(p.dtype));
  for (size_t i : {kAttnK, kAttnV})
    if (dtypes[i] != p.dtype)
      return unsupported(
          "input {} ({}) is {} but Q is {}; graphc needs one dtype for "
          "Q, K and V",
          i, i == kAttnK ? "K" : "V", dtype_name(dtypes[i]), dtype_name(p.dtype));
  if (q.size() != k.size() || q.size() != v.size() || (q.size() != 3 && q.size() != 4))
    return invalid_model(
        "Q, K and V must all be 3-D [B, L, heads*D] or all 4-D [B, heads, L, D], "
        "got shapes {}, {} and {}",
        shape_to_string(q), shape_to_string(k), shape_to_string(v));
  p.three_d = q.size() == 3;
  const int64_t q_heads_attr = attrs.get_int("q_num_heads", 0);
  const int64_t kv_heads_attr = attrs.get_int("kv_num_heads", 0);
  p.batch = q[0];
  if (k[0] != p.batch || v[0] != p.batch)
    return invalid_model("Q, K and V must have the same batch size, got {}, {} and {}", q[0], k[0],
                         v[0]);
  if (p.three_d) {
    if (q_heads_attr <= 0 || kv_heads_attr <= 0)
      return invalid_model(
          "Attention with 3-D Q, K, V needs attributes q_num_heads and kv_num_heads > 0, got {} "
          "and {}",
          q_heads_attr, kv_heads_attr);
    p.q_heads = q_heads_attr;
    p.kv_heads = kv_heads_attr;
    if (q[2] % p.q_heads || k[2] % p.kv_heads || v[2] % p.kv_heads)
      return invalid_model(
          "hidden sizes of Q ({}), K ({}) and V ({}) must divide by q_num_heads ({}) "
          "and kv_num_heads ({})",
          q[2], k[2], v[2], p.q_heads, p.kv_heads);
    p.q_len = q[1];
    p.kv_len = k[1];
    p.head_size = q[2] / p.q_heads;
    if (k[2] / p.kv_heads != p.head_size)
      return invalid_model("K's head size {} differs from Q's {}", k[2] / p.kv_heads, p.head_size);
    p.v_head_size = v[2] / p.kv_heads;
    if (v[1] != p.kv_len) return invalid_model("K has {} keys but V has {} values", p.kv_len, v[1]);
  } else {
    p.q_heads = q[1];
    p.kv_heads = k[1];
    if ((q_heads_attr && q_heads_attr != p.q_heads) ||
        (kv_heads_attr && kv_heads_attr != p.kv_heads))
      return invalid_model(
          "q_num_heads/kv_num_heads ({}, {}) disagree with the 4-D Q and K shapes {} "
          "and {}",
          q_heads_attr, kv_heads_attr, shape_to_string(q), shape_to_string(k));
    if (v[1] != p.kv_heads) return invalid_model("K has {} heads but V has {}", p.kv_heads, v[1]);
    p.q_len = q[2];
    p.kv_len = k[2];
    p.head_size = q[3];
    if (k[3] != p.head_size)
      return invalid_model("K's head size {} differs from Q's {}", k[3], p.head_size);
    if (v[2] != p.kv_len) return invalid_model("K has {} keys but V has {} values", p.kv_len, v[2]);
    p.v_head_size = v[3];
  }
  if (p.kv_heads <= 0 || p.q_heads % p.kv_heads != 0)
    return invalid_model(
        "q_num_heads ({}) must be a multiple of kv_num_heads ({}) (MHA, GQA or MQA)", p.q_heads,
        p.kv_heads);

  // Attributes.
  const int64_t causal = attrs.get_int("is_causal", 0);
  if (causal != 0 && causal != 1) return invalid_model("is_causal must be 0 or 1, got {}", causal);
  p.is_causal = causal == 1;
  p.scale = attrs.has("scale") ? attrs.get_float("scale", 1.0)
                               : 1.0 / std::sqrt(static_cast<double>(p.head_size));
  p.softcap = attrs.get_float("softcap", 0.0);
  const int64_t mode = attrs.get_int("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3)
    return invalid_model("qk_matmul_output_mode must be 0..3, got {}", mode);
  p.qk_mode = static_cast<QkOutputMode>(mode);
  if (attrs.has("softmax_precision") &&
      !is_softmax_precision(attrs.get_int("softmax_precision", 1)))
    return invalid_model("softmax_precision must name a float type (1, 10, 11 or 16), got {}",
                         attrs.get_int("softmax_precision", 1));
  p.left_window = attrs.get_int("left_window_size", -1);
  p.right_window = attrs.get_int("right_window_size", -1);
  if (p.left_window < -1 || p.right_window < -1)
    return invalid_model("left/right_window_size must be -1 or >= 0, got {} and {}", p.left_window,
                         p.right_window);

  // Key/value cache.
  if (has(kAttnPastKey) != has(kAttnPastValue))
    return invalid_model("past_key and past_value must be given together");
  if (has(kAttnPastKey)) {
    p.has_past = true;
    const Shape& pk = *shapes[kAttnPastKey];
    const Shape& pv = *shapes[kAttnPastValue];
    if (dtypes[kAttnPastKey] != p.dtype || dtypes[kAttnPastValue] != p.dtype)
      return invalid_model("past_key and past_value must be {} like Q", dtype_name(p.dtype));
    if (pk.size() != 4 || pv.size() != 4 || pk[0] != p.batch || pk[1] != p.kv_heads ||
        pk[3] != p.head_size || pv[0] != p.batch || pv[1] != p.kv_heads || pv[2] != pk[2] ||
        pv[3] != p.v_head_size)
      return invalid_model(
          "past_key {} and past_value {} must be [B={}, kv_heads={}, P, {}] and "
          "[B, kv_heads, P, {}]",
          shape_to_string(pk), shape_to_string(pv), p.batch, p.kv_heads, p.head_size,
          p.v_head_size);
    p.past_len = pk[2];
  }
  p.total_len = p.past_len + p.kv_len;
  if (has(kAttnNonpadKvSeqlen)) {
    p.has_nonpad = true;
    if (p.has_past) return invalid_model("nonpad_kv_seqlen cannot be combined with past_key/value");
    if (dtypes[kAttnNonpadKvSeqlen] != DType::kInt64 ||
        *shapes[kAttnNonpadKvSeqlen] != Shape{p.batch})
      return invalid_model("nonpad_kv_seqlen must be int64 [{}], got {}[{}]", p.batch,
                           dtype_name(dtypes[kAttnNonpadKvSeqlen]),
                           shape_to_string(*shapes[kAttnNonpadKvSeqlen]));
  }

  // Mask: right-aligned broadcast to [B, Hq, Lq, T]; a last dim shorter than T
  // is padded with masked keys (ONNX's reference pads, it does not broadcast).
  if (has(kAttnMask)) {
    p.has_mask = true;
    p.mask_shape = *shapes[kAttnMask];
    p.mask_is_bool = dtypes[kAttnMask] == DType::kBool;
    if (!p.mask_is_bool && dtypes[kAttnMask] != p.dtype)
      return invalid_model("attn_mask must be bool or {} like Q, got {}", dtype_name(p.dtype),
                           dtype_name(dtypes[kAttnMask]));
    const Shape& m = p.mask_shape;
    const Shape full{p.batch, p.q_heads, p.q_len, p.total_len};
    bool ok = !m.empty() && m.size() <= 4 && m.back() <= p.total_len;
    for (size_t d = 0; ok && d + 1 < m.size(); ++d) {
      int64_t want = full[4 - m.size() + d];
      ok = m[d] == 1 || m[d] == want;
    }
    if (!ok)
      return invalid_model(
          "attn_mask {} must broadcast to [B, q_heads, q_len, total_len] = {} (rank "
          "1 to 4; its last dim at most total_len)",
          shape_to_string(m), shape_to_string(full));
  }
  return p;
}

std::array<int64_t, 4> attention_mask_strides(const Shape& shape) {
  std::array<int64_t, 4> out{0, 0, 0, 0};
  int64_t stride = 1;
  for (size_t i = 0; i < shape.size() && i < 4; ++i) {
    const size_t dim = shape.size() - 1 - i;  // from the last, right-aligned into 4 dims
    out[3 - i] = shape[dim] == 1 ? 0 : stride;
    stride *= shape[dim];
  }
  return out;
}

Expected<AttentionParams> attention_params_of(const Graph& g, const Node& n) {
  std::vector<const Shape*> shapes;
  std::vector<DType> dtypes;
  for (ValueId v : n.inputs) {
    shapes.push_back(v == kNoValue ? nullptr : &g.value(v).shape);
    dtypes.push_back(v == kNoValue ? DType::kUndefined : g.value(v).dtype);
  }
  return attention_params(n.attrs, shapes, dtypes);
}

}  // namespace graphc::ir
