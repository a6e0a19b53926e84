// generate_data_movement_kernel: builds the anchor frame of the node and
// hands it to the generator of its op (cuda_dm_ops.h).
#include "emit/cuda/cuda_dm_common.h"
#include "emit/cuda/cuda_dm_ops.h"

namespace graphc::emit {

using ir::OpKind;

Expected<GeneratedKernel> generate_data_movement_kernel(const ir::Graph& graph, ir::NodeId node) {
  if (node < 0 || static_cast<size_t>(node) >= graph.nodes.size())
    return invalid_argument("generate_data_movement_kernel: node id {} out of range", node);
  const ir::Node& n = graph.node(node);
  ASSIGN_OR_RETURN(AnchorFrame f, make_anchor_frame(graph, node));
  // Nothing to write: an empty launch (no generator has to guard its index
  // math against zero-size dims).
  bool empty = true;
  for (size_t k = 0; k < f.num_outputs(); ++k)
    empty &= !f.has_output(k) || ir::shape_numel(f.output(k).shape) == 0;
  if (empty) return dm::finish_flat_kernel(f, "empty", 0, "");
  switch (f.anchor->op) {
    case OpKind::Transpose: return dm::transpose_kernel(f);
    case OpKind::Concat: return dm::concat_kernel(f);
    case OpKind::Split: return dm::split_kernel(f);
    case OpKind::Slice: return dm::slice_kernel(f);
    case OpKind::Expand: return dm::expand_kernel(f);
    case OpKind::Tile: return dm::tile_kernel(f);
    case OpKind::Pad: return dm::pad_kernel(f);
    case OpKind::DepthToSpace:
    case OpKind::SpaceToDepth: return dm::depth_space_kernel(f);
    case OpKind::Gather: return dm::gather_kernel(f);
    case OpKind::GatherElements: return dm::gather_elements_kernel(f);
    case OpKind::GatherND: return dm::gather_nd_kernel(f);
    case OpKind::ScatterElements: return dm::scatter_elements_kernel(f);
    case OpKind::ScatterND: return dm::scatter_nd_kernel(f);
    case OpKind::ConstantOfShape: return dm::constant_of_shape_kernel(f);
    case OpKind::Range: return dm::range_kernel(f);
    case OpKind::Trilu: return dm::trilu_kernel(f);
    case OpKind::OneHot: return dm::one_hot_kernel(f);
    case OpKind::EyeLike: return dm::eye_like_kernel(f);
    case OpKind::Shape:
    case OpKind::Size: return dm::shape_size_kernel(f);
    case OpKind::CumSum: return dm::cumsum_kernel(f);
    case OpKind::Resize: return dm::resize_kernel(f);
    case OpKind::Dropout: return dm::dropout_kernel(f);
    case OpKind::RotaryEmbedding: return dm::rotary_embedding_kernel(f);
    case OpKind::GridSample: return dm::grid_sample_kernel(f);
    case OpKind::Col2Im: return dm::col2im_kernel(f);
    case OpKind::DFT: return dm::dft_kernel(f);
    case OpKind::STFT: return dm::stft_kernel(f);
    case OpKind::Det: return dm::det_kernel(f);
    case OpKind::ReverseSequence: return dm::reverse_sequence_kernel(f);
    case OpKind::RoiAlign: return dm::roi_align_kernel(f);
    case OpKind::HannWindow:
    case OpKind::HammingWindow:
    case OpKind::BlackmanWindow:
    case OpKind::MelWeightMatrix:
      // All their inputs are build-time sizes, so fold-constants replaces
      // them by their values; reaching here means folding was disabled.
      return unsupported("node '{}' ({}): has no kernel; it runs as a constant (enable the "
                         "fold-constants pass)", n.name, ir::op_name(f.anchor->op));
    default: break;
  }
  return unsupported("no GPU lowering for node '{}' ({})", n.name, ir::op_name(f.anchor->op));
}

}  // namespace graphc::emit
