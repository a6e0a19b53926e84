// Shape rules for the losses NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss (opsets 12/13; one signature).
//
//   (input [N, C, d1..dk] float, target [N, d1..dk] int32/int64,
//    weight [C] (optional, input's dtype)) -> loss (, log_prob)
//   attributes: reduction "none" | "sum" | "mean" (default), ignore_index (int, optional)
//   loss: the input's dtype; shape [N, d1..dk] for "none", scalar otherwise.
//   log_prob (SoftmaxCrossEntropyLoss only, optional): the input's dtype and shape.
#include "ir/shape_rules.h"

namespace graphc::ir::shape_rules {

namespace {

Status loss_rule(ShapeContext& ctx) {
  DType t = ctx.dtype(0);
  if (!is_float(t))
    return ctx.error("input 0 (input) has dtype {}; {} needs a float type", dtype_name(t),
                     op_name(ctx.node().op));
  const Shape& x = ctx.shape(0);
  if (x.size() < 2)
    return ctx.error("input 0 (input) must have rank >= 2 ([N, C, d1..dk]), got shape {}",
                     shape_to_string(x));

  DType tt = ctx.dtype(1);
  if (tt != DType::kInt32 && tt != DType::kInt64)
    return ctx.error("input 1 (target) has dtype {}; it must be int32 or int64", dtype_name(tt));
  const Shape& target = ctx.shape(1);
  Shape expected{x[0]};
  expected.insert(expected.end(), x.begin() + 2, x.end());
  if (target != expected)
    return ctx.error("input 1 (target) has shape {}; input shape {} needs target shape {}",
                     shape_to_string(target), shape_to_string(x), shape_to_string(expected));

  if (ctx.has_input(2)) {
    if (ctx.dtype(2) != t)
      return ctx.error("input 2 (weight) has dtype {}, the input has {}; they must match",
                       dtype_name(ctx.dtype(2)), dtype_name(t));
    if (ctx.shape(2) != Shape{x[1]})
      return ctx.error("input 2 (weight) has shape {}; it must be [C] = [{}]",
                       shape_to_string(ctx.shape(2)), x[1]);
  }

  std::string reduction = ctx.attrs().get_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return ctx.error("attribute reduction = '{}'; expected 'none', 'sum' or 'mean'", reduction);

  ctx.set_output(0, t, reduction == "none" ? target : Shape{});
  if (ctx.num_outputs() > 1) ctx.set_output(1, t, x);
  return Status::ok_status();
}

}  // namespace

Status infer_NegativeLogLikelihoodLoss(ShapeContext& ctx) { return loss_rule(ctx); }
Status infer_SoftmaxCrossEntropyLoss(ShapeContext& ctx) { return loss_rule(ctx); }

}  // namespace graphc::ir::shape_rules
