// Library vs generated for attention kernels (DESIGN principle 6). An
// Attention node (ONNX opsets 23-25; what fuse-attention writes) becomes one
// cuDNN fused SDPA call (engine_format/sdpa_params.h, cuDNN 9's graph API) when
//   - the mode allows it (--attention auto|cudnn|generated),
//   - Q/K/V are float16 or bfloat16 and the head dims are ones cuDNN takes
//     (multiples of 8, at most 256),
//   - it needs only Y (no KV cache, present or qk_matmul outputs, no softcap,
//     sliding window or nonpad_kv_seqlen),
//   - its mask is absent or additive with one value per key (a bias cuDNN
//     broadcasts over batch, heads and queries); a boolean mask stays
//     generated,
//   - and causal masking is top-left (ONNX's, with no cache).
// In auto mode every call cuDNN takes goes to cuDNN: on an H100 (fp16,
// bench/results) its SDPA was faster than the generated flash kernel at every
// point of the attention sweep (batch 1-32, lengths 128-8192, head dims 64 and
// 128, causal or not), 1.2-2x at lengths >= 1024. Everything else runs the
// generated kernel (emit/cuda/cuda_attention_lowering.cpp), and the choice says why.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine_format/sdpa_params.h"
#include "ir/graph.h"

namespace graphc::target {

enum class AttentionMode { kAuto, kCudnn, kGenerated };
Expected<AttentionMode> parse_attention_mode(std::string_view flag);  // auto, cudnn, generated
std::string_view attention_mode_name(AttentionMode mode);

// The most workspace a cuDNN attention plan may use (its heuristics skip greedier plans).
inline constexpr uint64_t kCudnnSdpaWorkspaceLimitBytes = 256ull << 20;

struct AttentionOptions {
  AttentionMode mode = AttentionMode::kAuto;
};

struct CudnnSdpaCall {
  engine::SdpaParams params;
  std::vector<ir::ValueId> args;  // Q, K, V, [bias], O
};

struct AttentionChoice {
  std::optional<CudnnSdpaCall> call;  // set: cuDNN's fused SDPA runs it
  std::string reason;                 // what cuDNN computes, or why generated
};

// Requires a shape-inferred graph; `node` is an Attention node.
AttentionChoice choose_attention_lowering(const ir::Graph& graph, ir::NodeId node,
                                          const AttentionOptions& options);

}  // namespace graphc::target
