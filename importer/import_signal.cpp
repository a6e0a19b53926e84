// Importers of the signal-processing ops and RoiAlign: each converts an
// older-opset node into the newest signature the IR uses.
//
//   DFT < 20       `axis` attribute (default 1)  -> input 2 (build-time constant)
//   DFT >= 20      no `axis` input               -> input 2 = -2 (the opset-20 default)
//   RoiAlign < 16  no coordinate_transformation_mode: opset 10 behaves as
//                  `output_half_pixel` (no half-pixel shift), which the IR
//                  states explicitly (the opset-16 default is `half_pixel`)
#include "importer/node_importers.h"

namespace graphc::importer {

namespace {

Status import_DFT(NodeImportContext& ctx) {
  if (ctx.opset < 20) {
    if (ctx.node.inputs.size() > 2)
      return invalid_model("node '{}': DFT (opset {}) takes at most 2 inputs, has {}",
                           ctx.node.name, ctx.opset, ctx.node.inputs.size());
    const int64_t axis = ctx.node.attrs.get_int("axis", 1);
    ctx.node.attrs.erase("axis");
    ctx.set_input(2, ctx.add_constant("axis", ir::Tensor::scalar_i64(axis)));
    return Status::ok_status();
  }
  if (ctx.node.attrs.has("axis"))
    return invalid_model("node '{}': DFT (opset {}) takes the axis as input 2, not an attribute",
                         ctx.node.name, ctx.opset);
  if (!ctx.node.has_input(2)) ctx.set_input(2, ctx.add_constant("axis", ir::Tensor::scalar_i64(-2)));
  return Status::ok_status();
}

Status import_RoiAlign(NodeImportContext& ctx) {
  if (ctx.opset < 16) {
    if (ctx.node.attrs.has("coordinate_transformation_mode"))
      return invalid_model("node '{}': RoiAlign (opset {}) has no coordinate_transformation_mode",
                           ctx.node.name, ctx.opset);
    ctx.node.attrs.set("coordinate_transformation_mode",
                       ir::Attribute::of_string("output_half_pixel"));
  }
  return Status::ok_status();
}

}  // namespace

void register_signal_importers(ImporterTable& table) {
  table[static_cast<size_t>(ir::OpKind::DFT)] = import_DFT;
  table[static_cast<size_t>(ir::OpKind::RoiAlign)] = import_RoiAlign;
}

}  // namespace graphc::importer
