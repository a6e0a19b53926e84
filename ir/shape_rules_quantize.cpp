// Shape rules of the quantization ops: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul,
// QLinearConv. Scales are float tensors; quantized values are 8-bit (and for
// Q/DQ 16-bit, 4-bit, 2-bit, float8 and float4) per ONNX's type constraints.
#include "ir/conv_geometry.h"
#include "ir/quantize_params.h"
#include "ir/shape_rules.h"

namespace graphc::ir::shape_rules {

namespace {

bool quantized_type(DType t) {
  return quantized_range(t).second != 0 || is_narrow_float(t);
}

bool eight_bit(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }

Status require_float_input(ShapeContext& ctx, size_t i, const char* op, const char* what) {
  if (!is_float(ctx.dtype(i)))
    return ctx.error("{}: {} (input {}) must be a float tensor, got {}", op, what, i,
                     dtype_name(ctx.dtype(i)));
  return Status::ok_status();
}

Status require_eight_bit(ShapeContext& ctx, size_t i, const char* op, const char* what) {
  if (ctx.has_input(i) && !eight_bit(ctx.dtype(i)))
    return ctx.error("{}: {} (input {}) must be int8 or uint8, got {}", op, what, i,
                     dtype_name(ctx.dtype(i)));
  return Status::ok_status();
}

Expected<DType> attr_dtype(ShapeContext& ctx, const char* name, const char* op) {
  int64_t v = ctx.attrs().get_int(name, 0);
  if (v == 0) return DType::kUndefined;
  auto dt = v > 0 && v <= INT32_MAX ? dtype_from_onnx(static_cast<int32_t>(v)) : std::nullopt;
  if (!dt) return unsupported("{}: {} = {} is not a type graphc supports", op, name, v);
  return *dt;
}

// Scale (and zero point, same shape) against x for the layout attributes.
Status check_params(ShapeContext& ctx, const char* op) {
  ASSIGN_OR_RETURN(auto layout, quantize_layout(ctx.attrs(), ctx.shape(0), ctx.shape(1), op));
  // Per tensor, a scalar and a one-element 1-D tensor are the same.
  if (!ctx.has_input(2)) return Status::ok_status();
  const bool same = layout.per_tensor ? shape_numel(ctx.shape(2)) == 1 : ctx.shape(2) == ctx.shape(1);
  if (!same)
    return ctx.error("{}: zero point shape {} differs from the scale's {}", op,
                     shape_to_string(ctx.shape(2)), shape_to_string(ctx.shape(1)));
  return Status::ok_status();
}

}  // namespace

// y = saturate(round(x / scale) + zero_point); y's type is the zero point's,
// else `output_dtype`, else uint8.
Status infer_QuantizeLinear(ShapeContext& ctx) {
  const char* op = "QuantizeLinear";
  RETURN_IF_ERROR(require_float_input(ctx, 0, op, "x"));
  RETURN_IF_ERROR(require_float_input(ctx, 1, op, "y_scale"));
  RETURN_IF_ERROR(check_params(ctx, op));
  ASSIGN_OR_RETURN(DType out, attr_dtype(ctx, "output_dtype", op));
  if (ctx.has_input(2)) {
    if (out != DType::kUndefined && out != ctx.dtype(2))
      return ctx.error("{}: output_dtype {} differs from the zero point's type {}", op,
                       dtype_name(out), dtype_name(ctx.dtype(2)));
    out = ctx.dtype(2);
  }
  if (out == DType::kUndefined) out = DType::kUInt8;
  if (!quantized_type(out) || out == DType::kInt32)
    return ctx.error("{}: {} is not a quantized type", op, dtype_name(out));
  ctx.set_output(0, out, ctx.shape(0));
  return Status::ok_status();
}

// y = (x - zero_point) * scale in the scale's type (or `output_dtype`).
Status infer_DequantizeLinear(ShapeContext& ctx) {
  const char* op = "DequantizeLinear";
  if (!quantized_type(ctx.dtype(0)))
    return ctx.error("{}: x has type {}, not a quantized type", op, dtype_name(ctx.dtype(0)));
  RETURN_IF_ERROR(require_float_input(ctx, 1, op, "x_scale"));
  if (ctx.has_input(2) && ctx.dtype(2) != ctx.dtype(0))
    return ctx.error("{}: zero point type {} differs from x's {}", op, dtype_name(ctx.dtype(2)),
                     dtype_name(ctx.dtype(0)));
  RETURN_IF_ERROR(check_params(ctx, op));
  ASSIGN_OR_RETURN(DType out, attr_dtype(ctx, "output_dtype", op));
  ctx.set_output(0, out == DType::kUndefined ? ctx.dtype(1) : out, ctx.shape(0));
  return Status::ok_status();
}

// x (float32) -> y (uint8), y_scale (float32 scalar), y_zero_point (uint8 scalar).
Status infer_DynamicQuantizeLinear(ShapeContext& ctx) {
  if (ctx.dtype(0) != DType::kFloat32)
    return ctx.error("DynamicQuantizeLinear: x must be float32, got {}", dtype_name(ctx.dtype(0)));
  ctx.set_output(0, DType::kUInt8, ctx.shape(0));
  ctx.set_output(1, DType::kFloat32, {});
  ctx.set_output(2, DType::kUInt8, {});
  return Status::ok_status();
}

namespace {

// The MatMul shape of a (input ia) and b (input ib), numpy rules; b stored
// with its last two axes swapped when `trans_b` (graphc's _trans_b).
Expected<Shape> matmul_shape(ShapeContext& ctx, size_t ia, size_t ib, const char* op,
                             bool trans_b = false) {
  Shape a = ctx.shape(ia), b = ctx.shape(ib);
  if (a.empty() || b.empty()) return ctx.error("{}: inputs must have rank >= 1", op);
  if (trans_b) {
    if (b.size() < 2) return ctx.error("{}: _trans_b needs B of rank >= 2", op);
    std::swap(b[b.size() - 1], b[b.size() - 2]);
  }
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  if (a.back() != b[b.size() - 2])
    return ctx.error("{}: A {} and B {} have different contracted dims", op,
                     shape_to_string(ctx.shape(ia)), shape_to_string(ctx.shape(ib)));
  auto batch = broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  if (!batch.ok())
    return ctx.error("{}: batch dims of {} and {} do not broadcast", op,
                     shape_to_string(ctx.shape(ia)), shape_to_string(ctx.shape(ib)));
  Shape out = *batch;
  if (!a_vec) out.push_back(a[a.size() - 2]);
  if (!b_vec) out.push_back(b.back());
  return out;
}

Expected<Shape> conv_shape(ShapeContext& ctx, size_t ix, size_t iw, const char* op) {
  if (ctx.rank(ix) < 3) return ctx.error("{}: x must have rank >= 3", op);
  auto g = resolve_conv_geometry(ctx.attrs(), ctx.shape(ix), ctx.shape(iw), nullptr, false);
  if (!g.ok()) return g.status().with_context(op);
  return g->output_shape();
}

}  // namespace

// (a - a_zero_point) x (b - b_zero_point) in int32. graphc's _trans_b: b is
// stored [..., N, K] (the int8 GEMM's weights in cuBLASLt's "TN" form).
// graphc-internal: float8 e4m3fn a and b without zero points (fuse-qdq-matmul's
// fp8 GEMM) give float32, `_alpha` times the sum of the decoded products.
Status infer_MatMulInteger(ShapeContext& ctx) {
  const char* op = "MatMulInteger";
  const bool fp8 = ctx.num_inputs() >= 2 && ctx.has_input(0) && ctx.has_input(1) &&
                   (ctx.dtype(0) == DType::kFloat8E4M3FN || ctx.dtype(1) == DType::kFloat8E4M3FN);
  if (fp8) {
    if (ctx.dtype(0) != DType::kFloat8E4M3FN || ctx.dtype(1) != DType::kFloat8E4M3FN ||
        ctx.num_inputs() > 2)
      return ctx.error("{}: a float8 product takes two float8e4m3fn operands, no zero points", op);
  } else {
    for (size_t i = 0; i < 4; ++i) RETURN_IF_ERROR(require_eight_bit(ctx, i, op, "operand"));
  }
  ASSIGN_OR_RETURN(Shape out,
                   matmul_shape(ctx, 0, 1, op, ctx.attrs().get_int("_trans_b", 0) != 0));
  ctx.set_output(0, fp8 ? DType::kFloat32 : DType::kInt32, out);
  return Status::ok_status();
}

Status infer_ConvInteger(ShapeContext& ctx) {
  const char* op = "ConvInteger";
  for (size_t i = 0; i < 4; ++i) RETURN_IF_ERROR(require_eight_bit(ctx, i, op, "operand"));
  ASSIGN_OR_RETURN(Shape out, conv_shape(ctx, 0, 1, op));
  ctx.set_output(0, DType::kInt32, out);
  return Status::ok_status();
}

// (a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp) -> y of y_zp's type.
Status infer_QLinearMatMul(ShapeContext& ctx) {
  const char* op = "QLinearMatMul";
  for (size_t i : {0, 2, 3, 5, 7}) RETURN_IF_ERROR(require_eight_bit(ctx, i, op, "operand"));
  for (size_t i : {1, 4, 6}) RETURN_IF_ERROR(require_float_input(ctx, i, op, "scale"));
  ASSIGN_OR_RETURN(Shape out, matmul_shape(ctx, 0, 3, op));
  ctx.set_output(0, ctx.dtype(7), out);
  return Status::ok_status();
}

// (x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B?) -> y of y_zp's type.
Status infer_QLinearConv(ShapeContext& ctx) {
  const char* op = "QLinearConv";
  for (size_t i : {0, 2, 3, 5, 7}) RETURN_IF_ERROR(require_eight_bit(ctx, i, op, "operand"));
  for (size_t i : {1, 4, 6}) RETURN_IF_ERROR(require_float_input(ctx, i, op, "scale"));
  if (ctx.has_input(8) && ctx.dtype(8) != DType::kInt32)
    return ctx.error("{}: bias must be int32, got {}", op, dtype_name(ctx.dtype(8)));
  ASSIGN_OR_RETURN(Shape out, conv_shape(ctx, 0, 3, op));
  ctx.set_output(0, ctx.dtype(7), out);
  return Status::ok_status();
}

}  // namespace graphc::ir::shape_rules
