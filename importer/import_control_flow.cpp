// Importer for Scan's opset-8 form (If and Loop need only the sub-graph
// import in import_subgraph.cpp). Opset 8's Scan has a leading
// sequence_lens input and a batch axis on every state and scan input; graphc
// keeps that form as `_batched` (the reference runs one scan per batch row).
#include "importer/node_importers.h"

namespace graphc::importer {

namespace {

Status import_Scan(NodeImportContext& ctx) {
  if (ctx.opset >= 9) return Status::ok_status();
  if (ctx.node.has_input(0))
    return unsupported("Scan (opset 8) with sequence_lens is not supported: every sequence must "
                       "have the full length");
  ctx.node.inputs.erase(ctx.node.inputs.begin());
  ctx.node.attrs.set("_batched", ir::Attribute::of_int(1));
  if (const ir::Attribute* d = ctx.node.attrs.find("directions")) {
    ctx.node.attrs.set("scan_input_directions", *d);
    ctx.node.attrs.erase("directions");
  }
  return Status::ok_status();
}

}  // namespace

void register_control_flow_importers(ImporterTable& table) {
  table[static_cast<size_t>(ir::OpKind::Scan)] = &import_Scan;
}

}  // namespace graphc::importer
