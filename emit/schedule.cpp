#include "emit/schedule.h"

#include <set>

#include "ir/attention_params.h"

namespace graphc::emit {

using ir::OpKind;

const char* kernel_kind_name(KernelKind k) {
  switch (k) {
    case KernelKind::kFusedElementwise: return "fused elementwise";
    case KernelKind::kElementwise: return "elementwise";
    case KernelKind::kReduction: return "reduction";
    case KernelKind::kGemm: return "gemm";
    case KernelKind::kConv: return "conv";
    case KernelKind::kPool: return "pool";
    case KernelKind::kAttention: return "attention";
    case KernelKind::kDataMovement: return "data movement";
    case KernelKind::kView: return "view (no kernel)";
  }
  return "?";
}

int64_t value_bytes(const ir::Graph& g, ir::ValueId id) {
  const auto& v = g.value(id);
  return ir::shape_numel(v.shape) * static_cast<int64_t>(ir::dtype_size(v.dtype));
}

bool is_view_op(OpKind op) {
  return op == OpKind::Reshape || op == OpKind::Flatten || op == OpKind::Squeeze ||
         op == OpKind::Unsqueeze || op == OpKind::Identity;
}

namespace {

KernelKind kind_of(const ir::Node& n);

}  // namespace

KernelKind kernel_kind_for_op(ir::OpKind op) {
  ir::Node n;
  n.op = op;
  return kind_of(n);
}

namespace {

KernelKind kind_of(const ir::Node& n) {
  if (n.op == OpKind::FusedGroup) {
    std::string k = n.attrs.get_string("kind", "elementwise");
    if (k == "gemm") return KernelKind::kGemm;
    if (k == "conv") return KernelKind::kConv;
    if (k == "reduction") return KernelKind::kReduction;
    if (k == "pool") return KernelKind::kPool;
    return KernelKind::kFusedElementwise;
  }
  if (is_view_op(n.op)) return KernelKind::kView;
  if (ir::is_elementwise(n.op)) return KernelKind::kElementwise;
  switch (ir::op_info(n.op).category) {
    case ir::OpCategory::kReduction:
    case ir::OpCategory::kNormalization: return KernelKind::kReduction;
    case ir::OpCategory::kContraction: return KernelKind::kGemm;
    case ir::OpCategory::kConvolution: return KernelKind::kConv;
    case ir::OpCategory::kPooling: return KernelKind::kPool;
    case ir::OpCategory::kAttention: return KernelKind::kAttention;
    default: return KernelKind::kDataMovement;
  }
}

// Traffic of one unfused node: reads each input, writes each output. Views move nothing.
int64_t node_traffic(const ir::Graph& g, const ir::Node& n) {
  if (is_view_op(n.op)) return 0;
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
  std::vector<const ir::Shape*> shapes;
  std::vector<ir::DType> dtypes;
  for (ir::ValueId in : n.inputs) {
    shapes.push_back(in == ir::kNoValue ? nullptr : &g.value(in).shape);
    dtypes.push_back(in == ir::kNoValue ? ir::DType::kUndefined : g.value(in).dtype);
  }
  auto p = ir::attention_params(n.attrs, shapes, dtypes);
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
    k.kind = kind_of(n);
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
