// Library vs generated for conv kernels (DESIGN principle 6): a Conv or
// ConvTranspose, alone or as a fused "conv" group with its epilogue, becomes
// one cuDNN convolution (engine_format/conv_params.h) when
//   - the mode allows it (--conv auto|cudnn|generated),
//   - X, W and Y are float32/float16/bfloat16 (accumulating in fp32; fp32 in
//     fp32 FMA math, TF32 only with --allow-tf32),
//   - it has 1 to 3 spatial dims (1-D runs as 2-D with H = 1) and symmetric,
//     non-negative pads (cuDNN takes one pad per dim),
//   - and the epilogue is what cuDNN's cudnnConvolutionBiasActivationForward
//     computes, y = act(conv(x, w) + z + bias): any of a per-channel bias Add
//     (or the Conv's own B) and a residual Add of the output's shape (z with
//     alpha2 = 1), then at most one Relu.
// In auto mode every expressible conv goes to cuDNN (unlike small GEMMs, no
// conv of a real model is too small for it to win: its implicit-GEMM and
// Winograd kernels use tensor cores and pick tiles per shape, where the
// generated kernel is one tiled implicit GEMM, and the launch overhead that
// makes tiny library calls lose disappears in the CUDA graph), except
// depthwise convs, where cuDNN is slow: those go to the generated direct
// kernel when its modelled time is lower (direct_conv_rules.h).
// Anything else keeps the generated kernel, and the choice says why.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine_format/conv_params.h"
#include "ir/graph.h"
#include "target/epilogue_split.h"
#include "target/roofline.h"

namespace graphc::target {

enum class ConvMode { kAuto, kCudnn, kGenerated };
Expected<ConvMode> parse_conv_mode(std::string_view flag);  // "auto", "cudnn", "generated"
std::string_view conv_mode_name(ConvMode mode);

// The most workspace a conv's algorithm may use (the heuristic skips greedier
// ones); each execution context allocates what its chosen algorithms need.
inline constexpr uint64_t kCudnnWorkspaceLimitBytes = 256ull << 20;

struct ConvOptions {
  ConvMode mode = ConvMode::kAuto;
  bool allow_tf32 = false;  // fp32 convs may use TF32 tensor cores
  // The GPU whose roofline the depthwise cost model uses (direct_conv_rules.h);
  // CudaTarget sets it from the oldest --arch.
  Gpu gpu = Gpu::kH100;
};

// An operand of the call: a value of the outer graph, or a constant embedded
// in the fused group's body (small constants such as a bias live there),
// which the engine stores with the weights.
struct CallOperand {
  ir::ValueId value = ir::kNoValue;     // set for an outer value
  const ir::Value* embedded = nullptr;  // set for a body constant (points into the graph)
};

struct CudnnConvCall {
  engine::ConvParams params;
  std::vector<CallOperand> args;  // x, w, [bias], [residual], y
};

struct ConvChoice {
  std::optional<CudnnConvCall> call;  // set: the whole kernel runs through cuDNN
  std::string reason;                 // why generated (or "cuDNN"), for reports
  // Leading ops of the group's epilogue chain that cuDNN absorbs (bias, residual,
  // Relu), also when a later op keeps the whole kernel generated: a split
  // into "library call + generated epilogue kernel" takes these.
  size_t epilogue_ops_taken = 0;
  // Set when cuDNN takes the convolution but not its whole epilogue: the group
  // splits after this many epilogue ops (library_split.h).
  std::optional<size_t> split_after;
};

// Requires a shape-inferred graph; `node` is a scheduled conv kernel.
ConvChoice choose_conv_lowering(const ir::Graph& graph, ir::NodeId node,
                                const ConvOptions& options);

// Whether cuDNN takes plain Conv/ConvTranspose node `n` (not a fused group)
// as it stands: the same checks as choose_conv_lowering's anchor. For the
// optimizer's channels-last pass (PassContext::conv_library_takes).
bool cudnn_takes_conv(const ir::Graph& g, const ir::Node& n);

// Whether plain Conv node `n` is a float32/float16/bfloat16 depthwise conv
// that the generated direct kernel runs in either layout
// (direct_conv_rules.h): the channels-last pass converts those too.
bool direct_depthwise_takes_conv(const ir::Graph& g, const ir::Node& n);

}  // namespace graphc::target
