// Shape rules for reductions: Reduce*, ArgMax/ArgMin, Softmax/LogSoftmax/
// Hardmax and TopK (canonical opset-21 signatures; see ir/reduction_util.h).
#include "ir/reduction_util.h"
#include "ir/shape_rules.h"

namespace graphc::ir::shape_rules {

namespace {

enum class Allow { kNumeric, kNumericOrBool, kFloat };

Status check_dtype(ShapeContext& ctx, Allow allow) {
  DType t = ctx.dtype(0);
  bool ok = is_float(t) || (allow != Allow::kFloat && is_integer(t)) ||
            (allow == Allow::kNumericOrBool && t == DType::kBool);
  if (!ok)
    return ctx.error("input 0 has dtype {}, which {} does not accept", dtype_name(t),
                     op_name(ctx.node().op));
  return Status::ok_status();
}

Status reduce_rule(ShapeContext& ctx, Allow allow) {
  RETURN_IF_ERROR(check_dtype(ctx, allow));
  std::vector<int64_t> axes;
  bool have_axes = ctx.has_input(1);
  if (have_axes) {
    const Tensor* t = ctx.constant(1);
    if (t && t->rank() > 1)
      return ctx.error("input 1 (axes) must be 1-D, got shape {}", shape_to_string(t->shape()));
    ASSIGN_OR_RETURN(axes, ctx.constant_ints(1, "axes"));
  }
  ASSIGN_OR_RETURN(auto mask,
                   reduce_axes_mask(ctx.attrs(), have_axes ? &axes : nullptr, ctx.rank(0)));
  bool keepdims = ctx.attrs().get_int("keepdims", 1) != 0;
  ctx.set_output(0, ctx.dtype(0), reduced_shape(ctx.shape(0), mask, keepdims));
  return Status::ok_status();
}

Status arg_rule(ShapeContext& ctx) {
  RETURN_IF_ERROR(check_dtype(ctx, Allow::kNumeric));
  ASSIGN_OR_RETURN(int64_t axis, single_axis(ctx.attrs(), 0, ctx.rank(0)));
  if (ctx.shape(0)[static_cast<size_t>(axis)] == 0)
    return ctx.error("cannot take the arg of an empty axis {} (shape {})", axis,
                     shape_to_string(ctx.shape(0)));
  std::vector<bool> mask(static_cast<size_t>(ctx.rank(0)), false);
  mask[static_cast<size_t>(axis)] = true;
  bool keepdims = ctx.attrs().get_int("keepdims", 1) != 0;
  ctx.set_output(0, DType::kInt64, reduced_shape(ctx.shape(0), mask, keepdims));
  return Status::ok_status();
}

Status softmax_rule(ShapeContext& ctx) {
  RETURN_IF_ERROR(check_dtype(ctx, Allow::kFloat));
  auto split = softmax_split(ctx.attrs(), ctx.shape(0));
  if (!split.ok()) return ctx.error("{}", split.status().message());
  return same_as_input(ctx);
}

}  // namespace

Status infer_ReduceSum(ShapeContext& ctx) { return reduce_rule(ctx, Allow::kNumeric); }
Status infer_ReduceMean(ShapeContext& ctx) { return reduce_rule(ctx, Allow::kNumeric); }
Status infer_ReduceMax(ShapeContext& ctx) { return reduce_rule(ctx, Allow::kNumericOrBool); }
Status infer_ReduceMin(ShapeContext& ctx) { return reduce_rule(ctx, Allow::kNumericOrBool); }
Status infer_ReduceProd(ShapeContext& ctx) { return reduce_rule(ctx, Allow::kNumeric); }
Status infer_ReduceL1(ShapeContext& ctx) { return reduce_rule(ctx, Allow::kNumeric); }
Status infer_ReduceL2(ShapeContext& ctx) { return reduce_rule(ctx, Allow::kNumeric); }
Status infer_ReduceLogSum(ShapeContext& ctx) { return reduce_rule(ctx, Allow::kNumeric); }
Status infer_ReduceLogSumExp(ShapeContext& ctx) { return reduce_rule(ctx, Allow::kNumeric); }
Status infer_ReduceSumSquare(ShapeContext& ctx) { return reduce_rule(ctx, Allow::kNumeric); }

Status infer_ArgMax(ShapeContext& ctx) { return arg_rule(ctx); }
Status infer_ArgMin(ShapeContext& ctx) { return arg_rule(ctx); }

Status infer_Softmax(ShapeContext& ctx) { return softmax_rule(ctx); }
Status infer_LogSoftmax(ShapeContext& ctx) { return softmax_rule(ctx); }
Status infer_Hardmax(ShapeContext& ctx) { return softmax_rule(ctx); }

// TopK(X, K) -> Values, Indices (int64). K: a build-time int64 tensor of one
// element, 0 <= K <= X.shape[axis]. Attributes axis (-1), largest (1), sorted (1).
Status infer_TopK(ShapeContext& ctx) {
  RETURN_IF_ERROR(check_dtype(ctx, Allow::kNumeric));
  ASSIGN_OR_RETURN(int64_t axis, single_axis(ctx.attrs(), -1, ctx.rank(0)));
  ASSIGN_OR_RETURN(auto k, ctx.constant_ints(1, "K"));
  if (k.size() != 1 || ctx.rank(1) > 1)
    return ctx.error("input 1 (K) must be a 1-D tensor with one value, got shape {}",
                     shape_to_string(ctx.shape(1)));
  int64_t dim = ctx.shape(0)[static_cast<size_t>(axis)];
  if (k[0] < 0 || k[0] > dim)
    return ctx.error("K = {} is out of range: axis {} of input shape {} has {} elements", k[0],
                     axis, shape_to_string(ctx.shape(0)), dim);
  Shape out = ctx.shape(0);
  out[static_cast<size_t>(axis)] = k[0];
  ctx.set_output(0, ctx.dtype(0), out);
  if (ctx.num_outputs() > 1) ctx.set_output(1, DType::kInt64, out);
  return Status::ok_status();
}

}  // namespace graphc::ir::shape_rules
