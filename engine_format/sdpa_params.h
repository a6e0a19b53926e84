// The cuDNN fused attention an engine records in LibraryCall.params (library
// "cudnn", op "sdpa"): scaled-dot-product attention forward, inference (no
// softmax statistics), through cuDNN 9's graph API (runtime/cudnn_sdpa.h).
// Everything the runtime needs to build the cuDNN graph without the model: the
// dtype, the sizes, every operand's strides, the scale, the masks and a
// recorded engine. A fixed little-endian layout with a version in front,
// checked field by field on read (like conv_params.h).
//
// Semantics, per batch b and query head h (kv head g = h / (heads / kv_heads)):
//   S[i, j] = scale * sum_d Q[b, h, i, d] * K[b, g, j, d]
//           + bias[b, h, i, j]                        (has_bias)
//   S[i, j] = -inf where j > i                        (causal: top-left aligned,
//                                                      PyTorch's is_causal)
//   S[i, j] = -inf where i >= seq_len_q[b] or j >= seq_len_kv[b]  (has_seq_lens)
//   O[b, h, i, :] = sum_j softmax_j(S[i, :]) * V[b, g, j, :]
// Every operand is addressed by 4 strides in elements, in the logical order
// (batch, head, sequence, feature), so [B, H, L, D] (packed_bhsd_strides) and
// [B, L, H*D] (packed_bshd_strides, the layout around a Transpose-free
// attention) are the same call with other strides. The feature dim's stride is
// 1 (cuDNN needs it). Q is [B, heads, seq_q, head_dim], K [B, kv_heads, seq_kv,
// head_dim], V [B, kv_heads, seq_kv, value_dim], O [B, heads, seq_q,
// value_dim] (its strides may not make two elements share memory). The bias is
// [B, heads, seq_q, seq_kv] in the same dtype, its last stride 1; a stride 0 on
// the batch, head or query dim broadcasts it along that dim ([1, 1, Lq, Lk],
// [B, 1, 1, Lk] masks). seq_len_q / seq_len_kv are int32 [B] with values in
// [1, seq_q] and [1, seq_kv] (padding masks; rows of O at or past
// seq_len_q[b] are not defined; lengths outside those ranges are the
// caller's error: cuDNN bounds its loops by them).
//
// Kernel args, in order: Q, K, V, [bias], [seq_len_q, seq_len_kv], O.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "support/status.h"

namespace graphc::engine {

struct SdpaParams {
  static constexpr uint32_t kVersion = 1;
  static constexpr int32_t kMaxEngineIndex = 1 << 16;  // cuDNN engine global indexes are small
  using Strides = std::array<int64_t, 4>;              // elements: batch, head, sequence, feature

  int32_t dtype = 10;  // Q, K, V, O, bias: ONNX 10 (float16) or 16 (bfloat16)
  int64_t batch = 1;
  int64_t heads = 1;     // query and output heads
  int64_t kv_heads = 1;  // key and value heads; divides heads (grouped-/multi-query attention)
  int64_t seq_q = 1, seq_kv = 1;
  int64_t head_dim = 64;   // the Q·K feature size
  int64_t value_dim = 64;  // V's and O's feature size
  Strides q_strides{}, k_strides{}, v_strides{}, o_strides{};
  float scale = 1.0f;         // multiplies Q·Kᵀ (before the bias and the masks)
  bool causal = false;        // top-left: query i sees keys j <= i
  bool has_bias = false;      // an additive bias after the scale
  Strides bias_strides{};     // all 0 without a bias
  bool has_seq_lens = false;  // padding masks from seq_len_q and seq_len_kv
  // cuDNN's engine (CUDNN_ATTR_ENGINE_GLOBAL_INDEX) chosen by a tuner; -1:
  // cuDNN's heuristics at load (mode A, then the fallback list).
  int32_t engine = -1;

  int num_args() const { return 4 + (has_bias ? 1 : 0) + (has_seq_lens ? 2 : 0); }
  int bias_arg() const { return has_bias ? 3 : -1; }
  int seq_len_q_arg() const { return has_seq_lens ? 3 + (has_bias ? 1 : 0) : -1; }
  int seq_len_kv_arg() const { return has_seq_lens ? seq_len_q_arg() + 1 : -1; }
  int o_arg() const { return num_args() - 1; }

  // Elements each operand spans from its base address (the largest offset
  // its strides reach, plus one; -1 on overflow).
  int64_t q_extent() const;
  int64_t k_extent() const;
  int64_t v_extent() const;
  int64_t o_extent() const;
  int64_t bias_extent() const;  // 0 without a bias

  bool operator==(const SdpaParams&) const = default;
};

// [B, H, L, D] and [B, L, H*D] (then viewed as [B, L, H, D]) in the order
// the params take: batch, head, sequence, feature.
SdpaParams::Strides packed_bhsd_strides(int64_t heads, int64_t seq, int64_t dim);
SdpaParams::Strides packed_bshd_strides(int64_t heads, int64_t seq, int64_t dim);

std::string encode_sdpa_params(const SdpaParams& p);
// Checks version, size and every field (dtype, flags, reserved bytes, a
// finite scale, positive sizes with heads a multiple of kv_heads, strides >= 0
// with a unit feature stride, an output that overlaps nowhere, extents and
// the score matrix within int64, bias strides only with a bias, an engine
// index in range); an invalid_engine error names the field.
Expected<SdpaParams> decode_sdpa_params(std::string_view bytes);

// What each argument of the call is, in argument order: the element count its
// tensor must hold at least (its extent) and its ONNX dtype, for validators.
struct SdpaOperand {
  const char* role;  // "Q", "K", "V", "bias", "seq_len_q", "seq_len_kv", "O"
  int arg;
  int32_t dtype;
  int64_t elements;
  bool output;
};
std::vector<SdpaOperand> sdpa_operands(const SdpaParams& p);

// The reason cuDNN's fused attention is documented not to take `p` (head dims
// that are not multiples of 8 or exceed 256), or "" when it may; cuDNN on the
// GPU can still refuse a call (the runtime's set-up then says why).
std::string sdpa_cudnn_refusal(const SdpaParams& p);

// 4·B·H·Lq·Lk·D (D the mean of head_dim and value_dim), halved when causal:
// the FLOP count attention benchmarks report TFLOP/s with.
double sdpa_flops(const SdpaParams& p);

// Over a shape range (LibraryCall.sizes of a kernel's preferred_call, format
// 6), the fields that may follow the run-time shape, in this order: batch,
// heads, kv_heads, seq_q, seq_kv, then q, k, v, o and bias strides (4 each).
// The rest (dtype, head dims, scale, masks, engine) stay as built.
inline constexpr int kSdpaRangeFields = 25;
std::array<int64_t, kSdpaRangeFields> sdpa_range_fields(const SdpaParams& p);
// "batch", "q_strides[2]", ...
std::string sdpa_range_field_name(int field);

// `built` with field f set to values[sizes[f]] wherever sizes[f] >= 0 (an
// index into `values`, the engine's sizes at one shape; -1: as built), checked
// as decode_sdpa_params checks untrusted params (invalid_engine naming the
// field otherwise). sizes must have kSdpaRangeFields entries.
Expected<SdpaParams> sdpa_params_at(const SdpaParams& built, const std::vector<int32_t>& sizes,
                                    const std::vector<int64_t>& values);

// "sdpa fp16 B=2 H=16 (kv 4) Lq=4096 Lk=4096 D=128 Dv=128 scale=0.0883883 causal
// bias[b,1,q,k] seqlens layout q=bhsd k=bhsd v=bhsd o=bshd engine=heuristic"
std::string describe_sdpa(const SdpaParams& p);

}  // namespace graphc::engine
