// generate_contraction_kernel: the portable (generated) path for MatMul,
// MatMulInteger and ConvInteger (int8), Gemm, Einsum, Conv and ConvTranspose, dispatched on the anchor's op.
#include "emit/cuda/cuda_contraction.h"

#include "emit/cuda/fused_range.h"
#include "emit/cuda/gpu_kernels.h"

namespace graphc::emit {


Expected<GeneratedKernel> generate_contraction_kernel(const ir::Graph& graph, ir::NodeId node,
                                                      const ir::SymbolicShapes* range) {
  return generate_contraction_kernel_for_sm(graph, node, range, 90);
}

Expected<GeneratedKernel> generate_contraction_kernel_for_sm(const ir::Graph& graph, ir::NodeId node,
                                                             const ir::SymbolicShapes* range,
                                                             int min_sm) {
  ASSIGN_OR_RETURN(AnchorFrame frame, make_anchor_frame(graph, node));
  // Over a shape range: a MatMul or Gemm whose rows vary takes M at run time
  // (cuda_gemm.cpp), a depthwise or grouped Conv its batch (batch_range.h);
  // every other contraction is refused where a tensor varies.
  KernelSizes sizes(range);
  ir::SymbolicShapes body_shapes;
  if (range)
    RETURN_IF_ERROR(use_run_time_sizes(graph, node, *range,
                                       frame.anchor->op == ir::OpKind::MatMul ||
                                           frame.anchor->op == ir::OpKind::Gemm ||
                                           frame.anchor->op == ir::OpKind::Conv,
                                       sizes, body_shapes, frame));
  switch (frame.anchor->op) {
    case ir::OpKind::MatMul: return generate_matmul_kernel(frame, min_sm);
    case ir::OpKind::Gemm: return generate_gemm_kernel(frame, min_sm);
    case ir::OpKind::MatMulInteger: return generate_matmul_integer_kernel(frame);
    case ir::OpKind::Einsum: return generate_einsum_kernel(frame, min_sm);
    case ir::OpKind::Conv:
    case ir::OpKind::ConvTranspose: return generate_conv_kernel(frame, min_sm);
    case ir::OpKind::ConvInteger: return generate_conv_integer_kernel(frame, min_sm);
    default: break;
  }
  return unsupported("no generated GPU contraction for node '{}' ({})", frame.node_name,
                     ir::op_name(frame.anchor->op));
}

}  // namespace graphc::emit
