// generate_contraction_kernel: the portable (generated) path for MatMul,
// Gemm, Einsum, Conv and ConvTranspose, dispatched on the anchor's op.
#include "emit/cuda/cuda_contraction.h"

#include "emit/cuda/fused_range.h"
#include "emit/cuda/gpu_kernels.h"

namespace graphc::emit {


Expected<GeneratedKernel> generate_contraction_kernel(const ir::Graph& graph, ir::NodeId node,
                                                      const ir::SymbolicShapes* range) {
  ASSIGN_OR_RETURN(AnchorFrame frame, make_anchor_frame(graph, node));
  // Over a shape range: a MatMul whose rows vary takes M at run time
  // (cuda_gemm.cpp); every other contraction is refused where a tensor varies.
  KernelSizes sizes(range);
  ir::SymbolicShapes body_shapes;
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
        if (!frame.sizes) {
          RETURN_IF_ERROR(check_fused_range(graph, node, *range, &body_shapes));
          if (n.op == ir::OpKind::FusedGroup) sizes.set_body(n.body.get(), &body_shapes);
        }
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
