#include "emit/cuda/gpu_kernels.h"

namespace graphc::emit {

Expected<GeneratedKernel> generate_gpu_kernel(const ir::Graph& graph, ir::NodeId node,
                                              KernelKind kind, const KernelOptions& options) {
  switch (kind) {
    case KernelKind::kElementwise:
    case KernelKind::kFusedElementwise: return generate_elementwise_kernel(graph, node);
    case KernelKind::kReduction: return generate_reduction_kernel(graph, node);
    case KernelKind::kDataMovement: return generate_data_movement_kernel(graph, node);
    case KernelKind::kPool: return generate_pool_kernel(graph, node);
    case KernelKind::kGemm:
    case KernelKind::kConv: return generate_contraction_kernel(graph, node);
    case KernelKind::kAttention: return generate_attention_kernel(graph, node, options);
    case KernelKind::kView:
    case KernelKind::kCopy: break;
  }
  return internal_error("a view has no kernel");
}

}  // namespace graphc::emit
