// The kind of kernel a node of an optimized graph becomes: decides which
// generator family renders it (or which library call may take it), and is the
// word `graphc inspect`, the engine's kernel list and `graphc run --profile` show.
#pragma once

#include <string_view>

#include "ir/graph.h"

namespace graphc::target {

enum class KernelKind : uint8_t {
  kFusedElementwise,  // generated kernel over one iteration shape
  kElementwise,       // a single elementwise op
  kReduction,         // softmax, layernorm, Reduce*, ArgMax, TopK (with fused prologue/epilogue)
  kGemm,              // MatMul/Gemm (library call, with epilogue)
  kConv,              // Conv/ConvTranspose (library call, with epilogue)
  kPool,              // pooling (with epilogue)
  kAttention,         // one fused attention (ONNX Attention): scores never reach HBM
  kDataMovement,      // transpose, concat, gather, pad, resize ...
  kView,              // reshape-like: no kernel, the output aliases the input bytes
  kCopy,              // a device-to-device copy (a view that is a graph output)
  kLoop,              // a Loop on a run-time count/condition: its control kernel, then its body
};
// "fused elementwise", "gemm", ...: the engine manifest records these words.
std::string_view kernel_kind_name(KernelKind kind);

// The kind of kernel node `n` (plain or a FusedGroup) becomes.
KernelKind kernel_kind_of(const ir::Node& n);
// The kind of kernel a single (unfused) node of `op` becomes.
KernelKind kernel_kind_for_op(ir::OpKind op);

}  // namespace graphc::target
