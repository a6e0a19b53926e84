// Importers for the pooling/resampling group. Pooling needs none (its
// signature is the same from opset 7 to 21). Resize-10 and Upsample (opsets
// 7-9, imported as Resize through op_aliases()) are rewritten into the
// canonical opset-19 Resize form: inputs (X, roi, scales, sizes) and explicit
// attributes.
#include "importer/node_importers.h"

namespace graphc::importer {

namespace {

// Before opset 11 the only coordinate mapping was "asymmetric"
// (x_original = x_resized / scale), and nearest picked floor(x_original):
// the ONNX reference implementation of Upsample repeats each element `scale`
// times, which is exactly floor. (onnxruntime rounds up on downsampling axes
// of Resize-10; graphc follows the reference and TensorRT: floor.)
void set_pre11_resize_semantics(NodeImportContext& ctx) {
  ctx.node.attrs.set("coordinate_transformation_mode", ir::Attribute::of_string("asymmetric"));
  if (ctx.node.attrs.get_string("mode", "nearest") == "nearest")
    ctx.node.attrs.set("nearest_mode", ir::Attribute::of_string("floor"));
}

// Moves the scales input from slot 1 (opsets 9/10: X, scales) to slot 2.
void move_scales_to_slot2(NodeImportContext& ctx) {
  ir::ValueId scales = ctx.node.input(1);
  ctx.node.inputs.resize(1);
  ctx.set_input(2, scales);
}

Status import_resize(NodeImportContext& ctx) {
  if (ctx.opset >= 11) return Status::ok_status();  // already (X, roi, scales, sizes)
  if (ctx.node.inputs.size() != 2)
    return invalid_model("Resize-10 takes 2 inputs (X, scales), got {}", ctx.node.inputs.size());
  move_scales_to_slot2(ctx);
  set_pre11_resize_semantics(ctx);
  return Status::ok_status();
}

Status import_upsample(NodeImportContext& ctx) {
  if (ctx.opset >= 10)
    return invalid_model("Upsample was removed in opset 10 (this model is opset {}); use Resize",
                         ctx.opset);
  if (ctx.opset >= 9) {
    if (ctx.node.inputs.size() != 2 || ctx.node.inputs[1] == ir::kNoValue)
      return invalid_model("Upsample-9 takes 2 inputs (X, scales), got {}", ctx.node.inputs.size());
    move_scales_to_slot2(ctx);
  } else {
    // Opsets 7-8: scales is a required float attribute.
    const ir::Attribute* a = ctx.node.attrs.find("scales");
    if (!a || a->kind != ir::Attribute::Kind::kFloats)
      return invalid_model("Upsample-{} needs the 'scales' attribute (a list of floats)",
                           ctx.opset);
    if (ctx.node.inputs.size() != 1)
      return invalid_model("Upsample-{} takes 1 input, got {}", ctx.opset, ctx.node.inputs.size());
    for (size_t i = 0; i < a->floats.size(); ++i)
      if (!(a->floats[i] >= 1.0))
        return invalid_model("Upsample: scales[{}] = {} must be >= 1", i, a->floats[i]);
    std::vector<float> values(a->floats.begin(), a->floats.end());
    ir::ValueId id = ctx.add_constant(
        "scales", ir::Tensor::from_f32(values, {static_cast<int64_t>(values.size())}));
    ctx.node.attrs.erase("scales");
    ctx.set_input(2, id);
  }
  set_pre11_resize_semantics(ctx);
  return Status::ok_status();
}

}  // namespace

void register_pool_resize_importers(ImporterTable& table) {
  table[static_cast<size_t>(ir::OpKind::Resize)] = &import_resize;
}

const std::vector<OpAlias>& op_aliases() {
  // Upsample (opsets 7-9) is Resize with asymmetric coordinates.
  static const std::vector<OpAlias> aliases = {
      {"Upsample", ir::OpKind::Resize, &import_upsample},
      {"Scatter", ir::OpKind::ScatterElements, &import_legacy_scatter},
  };
  return aliases;
}

}  // namespace graphc::importer
