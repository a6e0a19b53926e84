// Importers of the shape and data-movement ops: each converts an older-opset
// node into the opset-21 signature the IR uses.
//
//   Squeeze / Unsqueeze < 13   `axes` attribute        -> input 1
//   Split < 13                 `split` attribute       -> input 1
//   Slice < 10                 `starts`/`ends`/`axes`  -> inputs 1, 2, 3
//   Pad < 11                   `pads` attribute        -> input 1;
//                              `value` (float)         -> IR attribute `_value`
//
// Pad's `_value`: opset 11 made the pad value an input (`constant_value`) that
// must have the data's dtype. The importer does not know that dtype yet, so it
// keeps the old float `value` as the IR attribute `_value`; the Pad kernel
// converts it to the data dtype when input 2 is absent.
//
// Every other op of the group (Shape start/end, Split num_outputs, Pad axes,
// Scatter* reduction ...) only gained optional attributes/inputs whose
// defaults reproduce the older behaviour, so the generic path suffices.
#include "importer/node_importers.h"

namespace graphc::importer {

namespace {

Status import_axes_attr(NodeImportContext& ctx) {
  if (ctx.opset < 13) ctx.move_ints_attr_to_input("axes", 1);
  return Status::ok_status();
}

Status import_Split(NodeImportContext& ctx) {
  if (ctx.opset < 13) ctx.move_ints_attr_to_input("split", 1);
  return Status::ok_status();
}

Status import_Slice(NodeImportContext& ctx) {
  if (ctx.opset >= 10) return Status::ok_status();
  if (!ctx.node.attrs.has("starts") || !ctx.node.attrs.has("ends"))
    return invalid_model("Slice (opset {}) needs the 'starts' and 'ends' attributes", ctx.opset);
  if (ctx.node.inputs.size() > 1)
    return invalid_model("Slice (opset {}) takes one input, has {}", ctx.opset,
                         ctx.node.inputs.size());
  ctx.move_ints_attr_to_input("starts", 1);
  ctx.move_ints_attr_to_input("ends", 2);
  ctx.move_ints_attr_to_input("axes", 3);
  return Status::ok_status();
}

Status import_Pad(NodeImportContext& ctx) {
  if (ctx.opset >= 11) return Status::ok_status();
  if (!ctx.node.attrs.has("pads"))
    return invalid_model("Pad (opset {}) needs the 'pads' attribute", ctx.opset);
  if (ctx.node.inputs.size() > 1)
    return invalid_model("Pad (opset {}) takes one input, has {}", ctx.opset,
                         ctx.node.inputs.size());
  ctx.move_ints_attr_to_input("pads", 1);
  if (const ir::Attribute* v = ctx.node.attrs.find("value")) {
    double value = v->kind == ir::Attribute::Kind::kInt ? static_cast<double>(v->i) : v->f;
    ctx.node.attrs.erase("value");
    ctx.node.attrs.set("_value", ir::Attribute::of_float(value));
  }
  return Status::ok_status();
}

}  // namespace

void register_data_movement_importers(ImporterTable& table) {
  auto set = [&](ir::OpKind k, OpImporter f) { table[static_cast<size_t>(k)] = f; };
  set(ir::OpKind::Squeeze, import_axes_attr);
  set(ir::OpKind::Unsqueeze, import_axes_attr);
  set(ir::OpKind::Split, import_Split);
  set(ir::OpKind::Slice, import_Slice);
  set(ir::OpKind::Pad, import_Pad);
}

Status import_legacy_scatter(NodeImportContext& ctx) {
  if (ctx.opset > 10)
    return invalid_model("Scatter was removed in opset 11 (this model is opset {}); use ScatterElements",
                         ctx.opset);
  return Status::ok_status();
}

}  // namespace graphc::importer
