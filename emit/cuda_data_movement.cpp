// Placeholder until this family is generated: lowering reports the kernel as
// having no GPU lowering yet.
#include "emit/gpu_kernels.h"

namespace graphc::emit {

Expected<GeneratedKernel> generate_data_movement_kernel(const ir::Graph& graph, ir::NodeId node) {
  const ir::Node& n = graph.node(node);
  return unsupported("no GPU lowering yet for node '{}' ({})", n.name, ir::op_name(n.op));
}

}  // namespace graphc::emit
