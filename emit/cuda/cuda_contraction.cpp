// generate_contraction_kernel: the portable (generated) path for MatMul,
// Gemm, Einsum, Conv and ConvTranspose, dispatched on the anchor's op.
#include "emit/cuda/cuda_contraction.h"

#include "emit/cuda/gpu_kernels.h"

namespace graphc::emit {

namespace {

// Over a shape range, a fused group's other inputs must read the same element
// at every shape: the output's own shape, or a fixed shape broadcast only
// along leading dims (a bias row), whose offsets never see a varying dim.
Status check_fused_inputs(const ir::Graph& graph, const ir::Node& n, const ir::SymbolicShapes& r) {
  if (n.op != ir::OpKind::FusedGroup || !n.body) return Status::ok_status();
  const ir::Graph& body = *n.body;
  const ir::SymShape& out = r.values[static_cast<size_t>(n.outputs[0])].shape;
  for (ir::ValueId o : n.outputs)
    if (o != ir::kNoValue && r.values[static_cast<size_t>(o)].shape != out)
      return unsupported("fused kernel '{}': outputs of different shapes over a shape range",
                         n.name);
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!n.has_input(i)) continue;
    // Read by the anchor alone (its A or B): the GEMM indexes it itself.
    bool read_elementwise = false;
    for (const auto& c : body.nodes) {
      if (c.dead || !ir::is_elementwise(c.op)) continue;
      for (ir::ValueId in : c.inputs) read_elementwise |= in == body.inputs[i];
    }
    if (!read_elementwise) continue;
    const ir::SymShape& s = r.values[static_cast<size_t>(n.inputs[i])].shape;
    if (s == out) continue;
    bool fixed = s.size() <= out.size();
    for (const auto& d : s) fixed &= d.is_constant();
    size_t first = 0;  // the first dim of `s` that is not 1
    while (first < s.size() && s[first].constant() == 1) ++first;
    for (size_t d = out.size() - (s.size() - first); fixed && d < out.size(); ++d)
      fixed &= out[d].is_constant();
    if (!fixed)
      return unsupported("fused kernel '{}': '{}' ({}) is broadcast along a dim that varies over "
                         "the shape range, which fused kernels do not take at run time yet",
                         n.name, graph.value(n.inputs[i]).name, r.shape_string(n.inputs[i]));
  }
  return Status::ok_status();
}

}  // namespace

Expected<GeneratedKernel> generate_contraction_kernel(const ir::Graph& graph, ir::NodeId node,
                                                      const ir::SymbolicShapes* range) {
  ASSIGN_OR_RETURN(AnchorFrame frame, make_anchor_frame(graph, node));
  // Over a shape range: a MatMul whose rows vary takes M at run time
  // (cuda_gemm.cpp); every other contraction is refused where a tensor varies.
  KernelSizes sizes(range);
  if (range) {
    const ir::Node& n = graph.node(node);
    for (const auto* list : {&n.inputs, &n.outputs})
      for (ir::ValueId v : *list) {
        if (v == ir::kNoValue || !range->values[static_cast<size_t>(v)].depends_on_symbols())
          continue;
        if (frame.anchor->op != ir::OpKind::MatMul)
          return unsupported("{} kernels do not take run-time sizes yet, and '{}' is {} over the "
                             "shape range",
                             ir::op_name(frame.anchor->op), graph.value(v).name,
                             range->shape_string(v));
        RETURN_IF_ERROR(check_fused_inputs(graph, n, *range));
        frame.sizes = &sizes;
      }
  }
  switch (frame.anchor->op) {
    case ir::OpKind::MatMul: return generate_matmul_kernel(frame);
    case ir::OpKind::Gemm: return generate_gemm_kernel(frame);
    case ir::OpKind::Einsum: return generate_einsum_kernel(frame);
    case ir::OpKind::Conv:
    case ir::OpKind::ConvTranspose: return generate_conv_kernel(frame);
    default: break;
  }
  return unsupported("no generated GPU contraction for node '{}' ({})", frame.node_name,
                     ir::op_name(frame.anchor->op));
}

}  // namespace graphc::emit
