#include "emit/plan/schedule.h"

#include <set>

#include "ir/attention_params.h"

namespace graphc::emit {

using ir::OpKind;

int64_t value_bytes(const ir::Graph& g, ir::ValueId id) {
  const auto& v = g.value(id);
  return ir::shape_numel(v.shape) * static_cast<int64_t>(ir::dtype_size(v.dtype));
}

namespace {

// Traffic of one unfused node: reads each input, writes each output. Views move nothing.
int64_t node_traffic(const ir::Graph& g, const ir::Node& n) {
  if (ir::op_info(n.op).traits.view) return 0;
  int64_t bytes = 0;
  for (ir::ValueId in : n.inputs)
    if (in != ir::kNoValue) bytes += value_bytes(g, in);
  for (ir::ValueId out : n.outputs)
    if (out != ir::kNoValue) bytes += value_bytes(g, out);
  return bytes;
}

void collect(const ir::Graph& g, const ir::Node& n, ScheduledKernel& k) {
  if (n.body) {
    for (const auto& inner : n.body->nodes)
      if (!inner.dead) collect(*n.body, inner, k);
    return;
  }
  k.onnx_nodes.push_back(n.name);
  k.onnx_ops.emplace_back(ir::op_name(n.op));
  // Nodes a rewrite merged into this one (their op types are not kept).
  for (const auto& name : n.absorbed) {
    k.onnx_nodes.push_back(name);
    k.onnx_ops.emplace_back("(merged)");
  }
  k.bytes_unfused += node_traffic(g, n);
}

// Bytes of an Attention node's B·Hq·Lq·(P+Lkv) scores (0 if it does not check).
int64_t score_bytes(const ir::Graph& g, const ir::Node& n) {
  auto p = ir::attention_params_of(g, n);
  if (!p.ok()) return 0;
  return ir::shape_numel(p->qk_output_shape()) * static_cast<int64_t>(ir::dtype_size(p->dtype));
}

}  // namespace

int64_t Schedule::launched() const {
  int64_t n = 0;
  for (const auto& k : kernels)
    if (k.kind != KernelKind::kView) ++n;
  return n;
}

Schedule make_schedule(const ir::Graph& graph) {
  Schedule s;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& n = graph.nodes[i];
    if (n.dead) continue;
    ScheduledKernel k;
    k.node = static_cast<ir::NodeId>(i);
    k.kind = target::kernel_kind_of(n);
    collect(graph, n, k);
    if (k.kind != KernelKind::kView) {
      std::set<ir::ValueId> distinct(n.inputs.begin(), n.inputs.end());
      distinct.erase(ir::kNoValue);
      for (ir::ValueId in : distinct) k.bytes_fused += value_bytes(graph, in);
      for (ir::ValueId out : n.outputs)
        if (out != ir::kNoValue) k.bytes_fused += value_bytes(graph, out);
    }
    // Unfused, attention (MatMul, Softmax, MatMul) writes the B·H·Lq·Lk scores
    // and reads them back, and the same for the probabilities.
    if (k.kind == KernelKind::kAttention)
      k.bytes_unfused = k.bytes_fused + 4 * score_bytes(graph, n);
    s.kernels.push_back(std::move(k));
  }
  return s;
}

}  // namespace graphc::emit
