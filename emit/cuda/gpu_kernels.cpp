#include "emit/cuda/gpu_kernels.h"

#include "emit/cuda/cuda_contraction.h"
#include "emit/cuda/cuda_dm_range.h"
#include "emit/cuda/fused_range.h"

namespace graphc::emit {

Expected<GeneratedKernel> generate_gpu_kernel(const ir::Graph& graph, ir::NodeId node,
                                              KernelKind kind, const KernelOptions& options) {
  // Shape arithmetic a kernel reads as data: written from the size block.
  if (options.range && kind != KernelKind::kView && kind != KernelKind::kCopy &&
      is_shape_values_node(graph.node(node), *options.range))
    return generate_shape_values_kernel(graph, node, *options.range);
  const bool elementwise = kind == KernelKind::kElementwise || kind == KernelKind::kFusedElementwise;
  const bool own_check = kind == KernelKind::kReduction || kind == KernelKind::kGemm ||
                         kind == KernelKind::kAttention || kind == KernelKind::kDataMovement ||
                         kind == KernelKind::kPool || kind == KernelKind::kConv;
  // Over a shape range, a family whose generator still bakes sizes in is
  // refused for a kernel whose tensors vary (docs/dynamic-shapes.md).
  if (options.range && !elementwise && !own_check)
    if (ir::ValueId v = first_varying_value(graph.node(node), *options.range); v != ir::kNoValue)
      return no_run_time_sizes(fmt::format("{} kernels", kernel_kind_name(kind)), graph, v,
                               *options.range);
  switch (kind) {
    case KernelKind::kElementwise:
    case KernelKind::kFusedElementwise:
      return generate_elementwise_kernel(graph, node, options.range);
    case KernelKind::kReduction: return generate_reduction_kernel(graph, node, options.range);
    case KernelKind::kDataMovement:
      // Over a range, a kernel whose tensors vary takes its sizes at run time.
      if (options.range && first_varying_value(graph.node(node), *options.range) != ir::kNoValue)
        return generate_data_movement_range(graph, node, *options.range);
      return generate_data_movement_kernel(graph, node);
    case KernelKind::kPool: return generate_pool_kernel(graph, node, options.range);
    case KernelKind::kGemm:
      return generate_contraction_kernel_for_sm(graph, node, options.range, options.min_sm);
    case KernelKind::kConv:
      return generate_contraction_kernel_for_sm(graph, node, options.range, options.min_sm);
    case KernelKind::kAttention: return generate_attention_kernel(graph, node, options);
    case KernelKind::kView:
    case KernelKind::kCopy:
    case KernelKind::kLoop: break;  // a loop is planned by emit/plan/loop_plan.cpp
  }
  return internal_error("a view has no kernel");
}

}  // namespace graphc::emit
