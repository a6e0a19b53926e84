// The kernel schedule of an optimized graph: one entry per launched kernel in
// execution order, its kind for reports, and the HBM traffic model.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace graphc::emit {

enum class KernelKind {
  kFusedElementwise,  // generated kernel over one iteration shape
  kElementwise,       // a single elementwise op
  kReduction,         // softmax, layernorm, Reduce*, ArgMax, TopK (with fused prologue/epilogue)
  kGemm,              // MatMul/Gemm (library call, with epilogue)
  kConv,              // Conv/ConvTranspose (library call, with epilogue)
  kPool,              // pooling (with epilogue)
  kAttention,         // one fused attention (ONNX Attention): scores never reach HBM
  kDataMovement,      // transpose, concat, gather, pad, resize ...
  kView,              // reshape-like: no kernel, the output aliases the input bytes
};
const char* kernel_kind_name(KernelKind k);

struct ScheduledKernel {
  ir::NodeId node;
  KernelKind kind;
  std::vector<std::string> onnx_nodes;  // source ONNX node names it covers
  std::vector<std::string> onnx_ops;    // their op types (after rewrites: Gelu, LayerNormalization)
  int64_t bytes_fused = 0;              // distinct inputs read once + outputs written once
  int64_t bytes_unfused = 0;            // sum over covered nodes of their inputs + outputs
};

struct Schedule {
  std::vector<ScheduledKernel> kernels;  // execution order
  int64_t launched() const;              // kernels that are not views
};

// Requires a shape-inferred graph in topological order.
Schedule make_schedule(const ir::Graph& graph);

// The kind of kernel a single (unfused) node of `op` becomes.
KernelKind kernel_kind_for_op(ir::OpKind op);

// Bytes of a value (numel * dtype size).
int64_t value_bytes(const ir::Graph& g, ir::ValueId id);
// True for ops whose output can alias the input bytes (Reshape, Flatten, Squeeze, Unsqueeze,
// Identity).
bool is_view_op(ir::OpKind op);

}  // namespace graphc::emit
