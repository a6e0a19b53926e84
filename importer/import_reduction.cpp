// Importer fixups for reductions: every opset variant becomes the opset-21
// signature.
//   Reduce*      axes attribute (before opset 13 for ReduceSum, 18 for the
//                others) -> constant int64 input 1.
//   TopK         k attribute (before opset 10) -> constant int64 input 1 of shape [1].
//   Softmax, LogSoftmax, Hardmax before opset 13: the input is coerced to 2-D
//                at `axis` (default 1) and the op works over all dims from
//                `axis` on. Opset 13 works over the one dim `axis` (default
//                -1). The old meaning is kept as the IR attribute
//                `_legacy_coerce_2d` = 1 with `axis` written out explicitly;
//                ir::softmax_split (ir/reduction_util.h) honours it.
#include "importer/node_importers.h"

namespace graphc::importer {

namespace {

Status reduce_axes_to_input(NodeImportContext& ctx, int64_t input_since) {
  if (ctx.opset < input_since) {
    if (ctx.node.inputs.size() > 1)
      return invalid_model("opset {} takes axes as an attribute, but the node has {} inputs",
                           ctx.opset, ctx.node.inputs.size());
    ctx.move_ints_attr_to_input("axes", 1);
  } else if (ctx.node.attrs.has("axes")) {
    return invalid_model("opset {} takes axes as input 1; the 'axes' attribute is not allowed",
                         ctx.opset);
  }
  return Status::ok_status();
}

Status import_ReduceSum(NodeImportContext& ctx) { return reduce_axes_to_input(ctx, 13); }
Status import_reduce_18(NodeImportContext& ctx) { return reduce_axes_to_input(ctx, 18); }

Status import_softmax_family(NodeImportContext& ctx) {
  if (ctx.opset < 13) {
    ctx.node.attrs.set("axis", ir::Attribute::of_int(ctx.node.attrs.get_int("axis", 1)));
    ctx.node.attrs.set("_legacy_coerce_2d", ir::Attribute::of_int(1));
  }
  return Status::ok_status();
}

Status import_TopK(NodeImportContext& ctx) {
  if (ctx.opset >= 10) return Status::ok_status();
  const auto* k = ctx.node.attrs.find("k");
  if (k == nullptr || k->kind != ir::Attribute::Kind::kInt)
    return invalid_model("TopK (opset {}) needs an int attribute 'k'", ctx.opset);
  if (ctx.node.inputs.size() > 1)
    return invalid_model("TopK (opset {}) takes k as an attribute, but the node has {} inputs",
                         ctx.opset, ctx.node.inputs.size());
  int64_t kv = k->i;
  ctx.node.attrs.erase("k");
  ctx.set_input(1, ctx.add_constant("k", ir::Tensor::from_i64({kv}, {1})));
  return Status::ok_status();
}

}  // namespace

void register_reduction_importers(ImporterTable& table) {
  using ir::OpKind;
  auto set = [&](OpKind k, OpImporter f) { table[static_cast<size_t>(k)] = f; };
  set(OpKind::ReduceSum, import_ReduceSum);
  for (OpKind k : {OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceMin, OpKind::ReduceProd,
                   OpKind::ReduceL1, OpKind::ReduceL2, OpKind::ReduceLogSum,
                   OpKind::ReduceLogSumExp, OpKind::ReduceSumSquare})
    set(k, import_reduce_18);
  for (OpKind k : {OpKind::Softmax, OpKind::LogSoftmax, OpKind::Hardmax})
    set(k, import_softmax_family);
  set(OpKind::TopK, import_TopK);
}

}  // namespace graphc::importer
