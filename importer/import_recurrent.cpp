// Importer checks for RNN, GRU and LSTM (opsets 7-22). The canonical form is
// the newest signature; opset 14 added `layout`, which an older model must
// not use. Attribute names and kinds are checked here because the IR getters
// fall back to defaults on a kind mismatch, which would change the meaning.
#include "importer/node_importers.h"
#include "ir/recurrent_params.h"

namespace graphc::importer {

namespace {

Status import_recurrent(NodeImportContext& ctx) {
  RETURN_IF_ERROR(ir::check_recurrent_attributes(ctx.node.op, ctx.node.attrs));
  if (ctx.opset < 14 && ctx.node.attrs.has("layout"))
    return invalid_model("{} attribute 'layout' exists from opset 14; the model is opset {}",
                         ir::op_name(ctx.node.op), ctx.opset);
  return Status::ok_status();
}

}  // namespace

void register_recurrent_importers(ImporterTable& table) {
  for (ir::OpKind k : {ir::OpKind::RNN, ir::OpKind::GRU, ir::OpKind::LSTM})
    table[static_cast<size_t>(k)] = &import_recurrent;
}

}  // namespace graphc::importer
