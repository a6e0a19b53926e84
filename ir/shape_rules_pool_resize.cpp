// Shape rules for pooling (MaxPool, AveragePool, GlobalAveragePool,
// GlobalMaxPool) and Resize. Attribute validation and the output-size
// formulas live in ir/pool_resize_params.cpp, shared with the kernels.
#include "ir/pool_resize_params.h"
#include "ir/shape_rules.h"

namespace graphc::ir::shape_rules {

namespace {

bool is_pool_float(DType t) { return is_float(t); }

Status check_global(ShapeContext& ctx, const char* op) {
  if (!is_pool_float(ctx.dtype(0)))
    return ctx.error("{}: input X must be a float tensor, got {}", op, dtype_name(ctx.dtype(0)));
  if (ctx.rank(0) < 2)
    return ctx.error("{}: input X must have rank >= 2 (N x C x spatial dims), got rank {}", op,
                     ctx.rank(0));
  Shape out = ctx.shape(0);
  for (size_t i = 2; i < out.size(); ++i) {
    if (out[i] == 0) return ctx.error("{}: spatial dim {} of X is 0; nothing to pool", op, i - 2);
    out[i] = 1;
  }
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return Status::ok_status();
}

}  // namespace

Status infer_MaxPool(ShapeContext& ctx) {
  DType t = ctx.dtype(0);
  // ONNX allows float types, int8 and uint8; graphc accepts every integer type.
  if (!is_float(t) && !is_integer(t))
    return ctx.error("MaxPool: input X must be a float or integer tensor, got {}", dtype_name(t));
  ASSIGN_OR_RETURN(PoolParams p, pool_params("MaxPool", ctx.attrs(), ctx.shape(0), true));
  ctx.set_output(0, t, p.out_shape);
  if (ctx.num_outputs() > 1) ctx.set_output(1, DType::kInt64, p.out_shape);
  return Status::ok_status();
}

Status infer_AveragePool(ShapeContext& ctx) {
  DType t = ctx.dtype(0);
  if (!is_pool_float(t))
    return ctx.error("AveragePool: input X must be a float tensor, got {}", dtype_name(t));
  bool include_pad = ctx.attrs().get_int("count_include_pad", 0) != 0;
  ASSIGN_OR_RETURN(PoolParams p,
                   pool_params("AveragePool", ctx.attrs(), ctx.shape(0), !include_pad));
  ctx.set_output(0, t, p.out_shape);
  return Status::ok_status();
}

Status infer_GlobalAveragePool(ShapeContext& ctx) { return check_global(ctx, "GlobalAveragePool"); }

Status infer_GlobalMaxPool(ShapeContext& ctx) { return check_global(ctx, "GlobalMaxPool"); }

Status infer_Resize(ShapeContext& ctx) {
  // Inputs: X, roi, scales, sizes (the importer maps opset 10 and Upsample
  // onto this form). roi is read only for tf_crop_and_resize, so a roi known
  // only at run time is fine for the other modes.
  const Tensor* roi = ctx.constant(1);
  const Tensor* scales = ctx.constant(2);
  const Tensor* sizes = ctx.constant(3);
  if (ctx.has_input(2) && !scales)
    return unsupported(
        "Resize: input 2 (scales) must be known at build time; graphc needs static shapes");
  if (ctx.has_input(3) && !sizes)
    return unsupported(
        "Resize: input 3 (sizes) must be known at build time; graphc needs static shapes");
  if (ctx.has_input(1) && !roi &&
      ctx.attrs().get_string("coordinate_transformation_mode", "") == "tf_crop_and_resize")
    return unsupported("Resize: input 1 (roi) must be known at build time for tf_crop_and_resize");
  ASSIGN_OR_RETURN(ResizeParams p, resize_params(ctx.attrs(), ctx.shape(0), roi, scales, sizes));
  if (p.mode != ResizeParams::Mode::kNearest && ctx.dtype(0) == DType::kBool)
    return ctx.error("Resize: mode {} needs a numeric input, got bool",
                     p.mode == ResizeParams::Mode::kLinear ? "linear" : "cubic");
  ctx.set_output(0, ctx.dtype(0), p.out_shape);
  return Status::ok_status();
}

}  // namespace graphc::ir::shape_rules
