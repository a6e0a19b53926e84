// Importers of the elementwise ops whose signature changed across opsets 7..21.
// The canonical IR form is the opset-21 signature; where an older form cannot
// be expressed in it, an IR attribute prefixed with `_` carries the difference.
#include "importer/node_importers.h"

namespace graphc::importer {

namespace {

// Clip-6 (opsets 6..10): min/max are float attributes. Clip-11 made them
// optional inputs of the input's dtype, which is unknown here for values
// computed by earlier nodes, so the bounds stay attributes under the IR names
// `_min` / `_max`; the shape rule and kernel honour them.
Status import_Clip(NodeImportContext& ctx) {
  if (ctx.opset >= 11) return Status::ok_status();
  for (const char* name : {"min", "max"}) {
    if (const ir::Attribute* a = ctx.node.attrs.find(name)) {
      if (a->kind != ir::Attribute::Kind::kFloat)
        return invalid_model("Clip (opset {}): attribute '{}' must be a float, got {}", ctx.opset,
                             name, ir::attribute_kind_name(a->kind));
      ir::Attribute copy = *a;
      ctx.node.attrs.erase(name);
      ctx.node.attrs.set(std::string("_") + name, std::move(copy));
    }
  }
  return Status::ok_status();
}

// Dropout-7/10: `ratio` is an attribute, irrelevant for inference (Dropout-12
// made it an input). Dropout-7 (opsets 7..9) returns its mask in the data's
// dtype rather than bool: recorded as the IR attribute `_mask_like_input`.
Status import_Dropout(NodeImportContext& ctx) {
  if (ctx.opset < 12) {
    if (const ir::Attribute* a = ctx.node.attrs.find("ratio")) {
      if (a->kind != ir::Attribute::Kind::kFloat)
        return invalid_model("Dropout (opset {}): attribute 'ratio' must be a float", ctx.opset);
      ctx.node.attrs.erase("ratio");
    }
    ctx.node.attrs.erase("is_test");  // opset < 7 only; harmless to drop
  }
  if (ctx.opset < 10) ctx.node.attrs.set("_mask_like_input", ir::Attribute::of_int(1));
  return Status::ok_status();
}

}  // namespace

void register_elementwise_importers(ImporterTable& table) {
  table[static_cast<size_t>(ir::OpKind::Clip)] = &import_Clip;
  table[static_cast<size_t>(ir::OpKind::Dropout)] = &import_Dropout;
}

}  // namespace graphc::importer
