// Attention (ONNX opsets 23-25): the node's attributes resolved against the
// shapes of its inputs, with every check the spec implies. Shared by the shape
// rule (ir/), the reference kernel (reference/), the fuse-attention pass and
// the GPU lowering, so all of them read one geometry. docs/attention.md
// states the semantics.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "ir/attribute.h"
#include "ir/tensor.h"
#include "support/status.h"

namespace graphc::ir {

// Input and output positions of the Attention node.
enum AttentionInput : size_t {
  kAttnQ = 0,
  kAttnK = 1,
  kAttnV = 2,
  kAttnMask = 3,
  kAttnPastKey = 4,
  kAttnPastValue = 5,
  kAttnNonpadKvSeqlen = 6,  // opset 24+
};
enum AttentionOutput : size_t {
  kAttnY = 0,
  kAttnPresentKey = 1,
  kAttnPresentValue = 2,
  kAttnQkMatmulOutput = 3,
};

// What qk_matmul_output holds (attribute qk_matmul_output_mode).
enum class QkOutputMode : int64_t {
  kScores = 0,        // scale * Q·Kᵀ (ONNX's reference: after softcap too, as mode 1)
  kSoftcapped = 1,    // after softcap, before the mask
  kMasked = 2,        // after softcap and the mask bias
  kProbabilities = 3  // after softmax (fully masked rows zero)
};

struct AttentionParams {
  bool three_d = false;             // Q/K/V are [B, L, heads*D]; else [B, heads, L, D]
  DType dtype = DType::kUndefined;  // of Q, K, V (and past, present, Y)
  int64_t batch = 0;
  int64_t q_heads = 0, kv_heads = 0;  // q_heads % kv_heads == 0 (GQA/MQA)
  int64_t q_len = 0;
  int64_t kv_len = 0;     // of K and V (new keys)
  int64_t past_len = 0;   // of past_key/past_value (0 when absent)
  int64_t total_len = 0;  // past_len + kv_len: keys attended
  int64_t head_size = 0;  // of Q and K
  int64_t v_head_size = 0;
  double scale = 0;  // applied to Q·Kᵀ: the attribute, else 1/sqrt(head_size)
  bool is_causal = false;
  double softcap = 0;  // <= 0: none
  QkOutputMode qk_mode = QkOutputMode::kScores;
  int64_t left_window = -1, right_window = -1;  // -1: unbounded (opset 25)
  bool has_mask = false;
  bool mask_is_bool = false;  // else additive, Q's dtype
  Shape mask_shape;           // rank <= 4, right-aligned to [B, q_heads, q_len, <= total_len]
  bool has_past = false;
  bool has_nonpad = false;  // nonpad_kv_seqlen, int64 [B]

  // Query heads per key/value head.
  int64_t group() const { return q_heads / kv_heads; }
  Shape y_shape() const;              // [B, Hq, Lq, Dv] or [B, Lq, Hq*Dv]
  Shape present_key_shape() const;    // [B, Hkv, T, D] (always 4-D)
  Shape present_value_shape() const;  // [B, Hkv, T, Dv]
  Shape qk_output_shape() const;      // [B, Hq, Lq, T]
};

// Shapes and dtypes of the node's inputs, nullptr / kUndefined for an absent
// optional input (size: the node's input count).
Expected<AttentionParams> attention_params(const AttributeMap& attrs,
                                           const std::vector<const Shape*>& shapes,
                                           const std::vector<DType>& dtypes);

// Element strides of a (row-major) mask of `shape` broadcast right-aligned to
// [B, Hq, Lq, T]: 0 along a missing or size-1 dim. Kernels and library calls
// address the mask with them.
std::array<int64_t, 4> attention_mask_strides(const Shape& shape);

// The same for Attention node `n` of shape-inferred graph `g`.
class Graph;
struct Node;
Expected<AttentionParams> attention_params_of(const Graph& g, const Node& n);

}  // namespace graphc::ir
