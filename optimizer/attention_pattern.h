// The attention pattern fuse-attention looks for, matched without changing
// the graph: from a Softmax over the key axis back through the mask ops and
// the scale to MatMul(Q, Kᵀ), forward to MatMul(P, V), and out along Q, K and
// V through the layout ops exporters write (head split, Kᵀ, GQA repeat) and
// the head merge after the output. pass_fuse_attention.cpp rewrites a match
// into one Attention node; a failed match says which part did not match.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ir/graph.h"

namespace graphc::optimizer {

// One mask op between the scores and the Softmax.
struct MaskTerm {
  enum class Kind {
    kAdditive,  // Add(scores, value): value is a float bias
    kWhere,     // Where(value, scores, fill) or Where(value, fill, scores): value is bool
  };
  Kind kind = Kind::kAdditive;
  ir::ValueId value = ir::kNoValue;
  double fill = 0;              // kWhere: the (large negative) score a masked key gets
  bool fill_when_true = false;  // kWhere: fill where value is true (Where(c, fill, scores))
};

// How the Attention node reads one of Q, K, V.
struct OperandSource {
  // 4-D [B, H, L, D] (or 3-D [B', L, D] for rank-3 scores) as the attention
  // reads it. kNoValue when it must be made: K as Transpose(`transpose_of`,
  // `perm`) of an existing value.
  ir::ValueId v4 = ir::kNoValue;
  ir::Shape shape4;  // what the attention reads; v4 may hold it in another shape (a view)
  ir::ValueId transpose_of = ir::kNoValue;
  std::vector<int64_t> perm;
  // The [B, L, H*D] value the head split started from, when there is one
  // (`split_from`, reshaped to [B, L, H*D] when its shape differs).
  ir::ValueId split_from = ir::kNoValue;
  int64_t heads = 0;
  double factor = 1;        // scalar Mul/Div peeled off the 4-D operand (Q and K only)
  double split_factor = 1;  // ... and off `split_from` (counts in the 3-D form only)
};

struct AttentionMatch {
  ir::NodeId softmax = -1, scores_matmul = -1, output_matmul = -1;
  std::vector<ir::NodeId> chain;  // scale and mask ops between the two MatMuls
  int rank = 4;                   // of the scores: 4 [B, H, Lq, Lk] or 3 [B', Lq, Lk]
  ir::Shape scores_shape;
  ir::DType dtype = ir::DType::kUndefined;
  double score_factor = 1;  // scalar Mul/Div on the scores
  std::vector<MaskTerm> masks;
  OperandSource q, k, v;
  int64_t q_heads = 1, kv_heads = 1;
  bool gqa = false;  // K/V repeat removed: kv_heads < q_heads
  // The head merge after the output (rank 4): Transpose(0,2,1,3) then a
  // Reshape (or a Reshape alone when there is one head).
  ir::NodeId merge_transpose = -1, merge_reshape = -1;
  // Shape ops reading the merge transpose's output (over a shape range):
  // they read a [B, Lq, H, Dv] view of the output instead.
  std::vector<ir::NodeId> merge_shape_readers;
  bool three_d = false;    // Q/K/V/Y in the [B, L, H*D] form
  bool is_causal = false;  // a constant causal triangle among the masks (removed from `masks`)

  double scale() const {
    double s = score_factor * q.factor * k.factor;
    return three_d ? s * q.split_factor * k.split_factor : s;
  }
};

// Matches the attention whose Softmax is `softmax`, or says why not (a line
// for PassContext::attention_notes, without the node name).
std::variant<AttentionMatch, std::string> match_attention(const ir::Graph& g, ir::NodeId softmax);

// Causal-mask recognition: the value, when it is computable from constants
// alone (a constant, or Trilu/Range/Less/... of constants), evaluated with the
// reference executor; nullopt when it depends on a model input or exceeds
// `max_elements`.
std::optional<ir::Tensor> evaluate_constant(const ir::Graph& g, ir::ValueId v,
                                            int64_t max_elements);

// True when `mask`, broadcast to `scores` ([.., Lq, Lk]), allows exactly the
// keys j <= i (ONNX's is_causal without a cache): for a bool mask, true there
// and false elsewhere (`negate`: the opposite); for a float bias, 0 there and
// <= kLargeNegative elsewhere.
bool is_causal_mask(const ir::Tensor& mask, const ir::Shape& scores, bool negate);

// A fill or bias value at or below this masks a key: exp(x - max) is exactly
// 0 in double and float for any realistic score.
inline constexpr double kLargeNegative = -1e4;

}  // namespace graphc::optimizer
