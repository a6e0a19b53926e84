// The kernel schedule of an optimized graph: one entry per launched kernel in
// execution order, its kind for reports, and the HBM traffic model.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "target/kernel_kind.h"

namespace graphc::emit {

using target::kernel_kind_name;
using target::KernelKind;

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

// Bytes of a value (numel * dtype size).
int64_t value_bytes(const ir::Graph& g, ir::ValueId id);
}  // namespace graphc::emit
