#include "target/cuda/attention_rules.h"

#include <fmt/format.h>

#include "ir/attention_params.h"

namespace graphc::target {

namespace {

using ir::DType;

// Why cuDNN does not take this attention, or "".
std::string refusal(const ir::Graph& g, const ir::Node& n, const ir::AttentionParams& a) {
  if (a.dtype != DType::kFloat16 && a.dtype != DType::kBFloat16)
    return fmt::format("{} (cuDNN's fused attention takes float16 and bfloat16)",
                       ir::dtype_name(a.dtype));
  for (size_t o = 1; o < n.outputs.size(); ++o)
    if (n.outputs[o] != ir::kNoValue) return "present or qk_matmul outputs are needed";
  if (a.has_past) return "a KV cache (past_key/past_value)";
  if (a.has_nonpad) return "nonpad_kv_seqlen";
  if (a.softcap > 0) return "softcap";
  if (a.left_window >= 0 || a.right_window >= 0) return "a sliding window";
  if (a.has_mask) {
    if (a.mask_is_bool) return "a boolean mask (cuDNN takes an additive bias)";
    if (g.value(n.inputs[ir::kAttnMask]).dtype != a.dtype) return "a mask of another dtype";
    if (a.mask_shape.empty() || a.mask_shape.back() != a.total_len)
      return "a mask without one value per key";
  }
  return "";
}

}  // namespace

Expected<AttentionMode> parse_attention_mode(std::string_view flag) {
  if (flag == "auto") return AttentionMode::kAuto;
  if (flag == "cudnn") return AttentionMode::kCudnn;
  if (flag == "generated") return AttentionMode::kGenerated;
  return invalid_argument("--attention '{}': expected auto, cudnn or generated", flag);
}

std::string_view attention_mode_name(AttentionMode mode) {
  switch (mode) {
    case AttentionMode::kAuto: return "auto";
    case AttentionMode::kCudnn: return "cudnn";
    case AttentionMode::kGenerated: return "generated";
  }
  return "?";
}

AttentionChoice choose_attention_lowering(const ir::Graph& graph, ir::NodeId node,
                                          const AttentionOptions& options) {
  AttentionChoice out;
  const ir::Node& n = graph.node(node);
  if (n.op != ir::OpKind::Attention) {
    out.reason = "generated: not an Attention node";
    return out;
  }
  auto resolved = ir::attention_params_of(graph, n);
  if (!resolved.ok()) {
    out.reason = "generated: " + resolved.status().message();
    return out;
  }
  const ir::AttentionParams& a = *resolved;
  if (options.mode == AttentionMode::kGenerated) {
    out.reason = "generated (--attention generated)";
    return out;
  }
  if (std::string why = refusal(graph, n, a); !why.empty()) {
    out.reason = "generated: " + why;
    return out;
  }
  engine::SdpaParams p;
  p.dtype = static_cast<int32_t>(a.dtype);
  p.batch = a.batch;
  p.heads = a.q_heads;
  p.kv_heads = a.kv_heads;
  p.seq_q = a.q_len;
  p.seq_kv = a.total_len;
  p.head_dim = a.head_size;
  p.value_dim = a.v_head_size;
  auto strides = [&](int64_t heads, int64_t len, int64_t dim) {
    return a.three_d ? engine::packed_bshd_strides(heads, len, dim)
                     : engine::packed_bhsd_strides(heads, len, dim);
  };
  p.q_strides = strides(a.q_heads, a.q_len, a.head_size);
  p.k_strides = strides(a.kv_heads, a.kv_len, a.head_size);
  p.v_strides = strides(a.kv_heads, a.kv_len, a.v_head_size);
  p.o_strides = strides(a.q_heads, a.q_len, a.v_head_size);
  p.scale = static_cast<float>(a.scale);
  p.causal = a.is_causal;
  if (a.has_mask) {
    p.has_bias = true;
    p.bias_strides = ir::attention_mask_strides(a.mask_shape);
  }
  if (std::string why = engine::sdpa_cudnn_refusal(p); !why.empty()) {
    out.reason = "generated: " + why;
    return out;
  }
  CudnnSdpaCall call;
  call.params = p;
  call.args = {n.inputs[ir::kAttnQ], n.inputs[ir::kAttnK], n.inputs[ir::kAttnV]};
  if (a.has_mask) call.args.push_back(n.inputs[ir::kAttnMask]);
  call.args.push_back(n.outputs[ir::kAttnY]);
  out.call = std::move(call);
  out.reason = fmt::format("cuDNN fused SDPA{}{}", p.causal ? ", causal" : "",
                           p.has_bias ? ", with bias" : "");
  return out;
}

}  // namespace graphc::target
