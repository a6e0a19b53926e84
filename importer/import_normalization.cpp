// Importer fixups for normalizations.
//   BatchNormalization: graphc runs inference only. training_mode = 1 (opset
//   14+) or any of the training-only outputs (mean/var/saved_mean/saved_var
//   in opsets 7-13, running_mean/running_var in 14+) -> unsupported. Opset 7/8
//   `spatial` = 0 (per-activation statistics) is kept as the IR attribute
//   `_spatial` = 0, which the shape rule accepts only where it equals the
//   per-channel form (all dims after C are 1); spatial = 1 is dropped.
//   `momentum` only matters in training and is ignored.
#include "importer/node_importers.h"

namespace graphc::importer {

namespace {

Status import_BatchNormalization(NodeImportContext& ctx) {
  if (ctx.node.attrs.get_int("training_mode", 0) != 0)
    return unsupported(
        "BatchNormalization with training_mode=1 is not supported: graphc compiles inference "
        "graphs (export the model in eval mode)");
  for (size_t o = 1; o < ctx.node.outputs.size(); ++o)
    if (ctx.node.outputs[o] != ir::kNoValue)
      return unsupported(
          "BatchNormalization output {} ('{}') holds training statistics; graphc supports "
          "inference mode only (one output)",
          o, ctx.graph.value(ctx.node.outputs[o]).name);
  ctx.node.outputs.resize(1);
  ctx.node.attrs.erase("training_mode");
  if (ctx.opset < 9) {
    if (ctx.node.attrs.get_int("spatial", 1) == 0)
      ctx.node.attrs.set("_spatial", ir::Attribute::of_int(0));
    ctx.node.attrs.erase("spatial");
  }
  return Status::ok_status();
}

}  // namespace

void register_normalization_importers(ImporterTable& table) {
  table[static_cast<size_t>(ir::OpKind::BatchNormalization)] = import_BatchNormalization;
}

}  // namespace graphc::importer
