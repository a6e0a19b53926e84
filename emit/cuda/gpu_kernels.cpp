#include "emit/cuda/gpu_kernels.h"

namespace graphc::emit {

namespace {

// Over a shape range, a family whose generator still bakes sizes in is
// refused for a kernel whose tensors vary (docs/dynamic-shapes.md says which
// families take run-time sizes).
Status check_static_over_range(const ir::Graph& graph, ir::NodeId node, KernelKind kind,
                               const ir::SymbolicShapes& range) {
  const ir::Node& n = graph.node(node);
  for (const auto* list : {&n.inputs, &n.outputs})
    for (ir::ValueId v : *list)
      if (v != ir::kNoValue && range.values[static_cast<size_t>(v)].depends_on_symbols())
        return unsupported(
            "{} kernels do not take run-time sizes yet, and '{}' is {} over the shape range",
            kernel_kind_name(kind), graph.value(v).name, range.shape_string(v));
  return Status::ok_status();
}

}  // namespace

Expected<GeneratedKernel> generate_gpu_kernel(const ir::Graph& graph, ir::NodeId node,
                                              KernelKind kind, const KernelOptions& options) {
  const bool elementwise = kind == KernelKind::kElementwise || kind == KernelKind::kFusedElementwise;
  const bool own_check = kind == KernelKind::kReduction || kind == KernelKind::kGemm;
  if (options.range && !elementwise && !own_check)
    RETURN_IF_ERROR(check_static_over_range(graph, node, kind, *options.range));
  switch (kind) {
    case KernelKind::kElementwise:
    case KernelKind::kFusedElementwise:
      return generate_elementwise_kernel(graph, node, options.range);
    case KernelKind::kReduction: return generate_reduction_kernel(graph, node, options.range);
    case KernelKind::kDataMovement: return generate_data_movement_kernel(graph, node);
    case KernelKind::kPool: return generate_pool_kernel(graph, node);
    case KernelKind::kGemm: return generate_contraction_kernel(graph, node, options.range);
    case KernelKind::kConv: return generate_contraction_kernel(graph, node);
    case KernelKind::kAttention: return generate_attention_kernel(graph, node, options);
    case KernelKind::kView:
    case KernelKind::kCopy: break;
  }
  return internal_error("a view has no kernel");
}

}  // namespace graphc::emit
