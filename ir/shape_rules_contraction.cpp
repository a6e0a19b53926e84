// Shape rules for contractions and convolution: MatMul, Gemm, Einsum, Conv,
// ConvTranspose. Conv geometry and Einsum parsing live in conv_geometry.cpp
// and einsum_equation.cpp, shared with the reference kernels.
#include <algorithm>
#include <utility>

#include "ir/conv_geometry.h"
#include "ir/einsum_equation.h"
#include "ir/shape_rules.h"

namespace graphc::ir::shape_rules {

namespace {

// MatMul / Gemm element types (ONNX: float16, float, double, bfloat16,
// int32, int64, uint32, uint64).
bool matmul_dtype(DType t) {
  return is_float(t) || t == DType::kInt32 || t == DType::kInt64 || t == DType::kUInt32 ||
         t == DType::kUInt64;
}

// Required inputs must be present (the importer checks arity for models;
// this guards hand-built graphs).
Status require_inputs(ShapeContext& ctx, size_t count, const char* what) {
  if (ctx.num_inputs() < count)
    return ctx.error("{} needs at least {} inputs, has {}", what, count, ctx.num_inputs());
  for (size_t i = 0; i < count; ++i)
    if (!ctx.has_input(i)) return ctx.error("{} input {} is required but empty", what, i);
  return Status::ok_status();
}

Status same_dtypes(ShapeContext& ctx, const char* what) {
  DType first = DType::kUndefined;
  size_t first_index = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    if (first == DType::kUndefined) {
      first = ctx.dtype(i);
      first_index = i;
    } else if (ctx.dtype(i) != first) {
      return ctx.error("input {} is {} but input {} is {}; {} inputs must have one element type", i,
                       dtype_name(ctx.dtype(i)), first_index, dtype_name(first), what);
    }
  }
  return Status::ok_status();
}

}  // namespace

Status infer_MatMul(ShapeContext& ctx) {
  RETURN_IF_ERROR(require_inputs(ctx, 2, "MatMul"));
  RETURN_IF_ERROR(same_dtypes(ctx, "MatMul"));
  DType dt = ctx.dtype(0);
  if (!matmul_dtype(dt))
    return ctx.error(
        "MatMul does not accept element type {} (float types, int32, int64, uint32, "
        "uint64 only; use MatMulInteger for 8-bit)",
        dtype_name(dt));
  Shape a = ctx.shape(0), b = ctx.shape(1);
  if (a.empty() || b.empty())
    return ctx.error("MatMul inputs must have rank >= 1, got shapes {} and {}", shape_to_string(a),
                     shape_to_string(b));
  // graphc-internal (fold-transpose-into-matmul): the operand is stored with
  // its last two axes swapped.
  const bool trans_a = ctx.attrs().get_int("_trans_a", 0) != 0;
  const bool trans_b = ctx.attrs().get_int("_trans_b", 0) != 0;
  if ((trans_a && a.size() < 2) || (trans_b && b.size() < 2))
    return ctx.error("MatMul: _trans_a/_trans_b need an operand of rank >= 2, got shapes {} and {}",
                     shape_to_string(a), shape_to_string(b));
  if (trans_a) std::swap(a[a.size() - 1], a[a.size() - 2]);
  if (trans_b) std::swap(b[b.size() - 1], b[b.size() - 2]);
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  int64_t k_a = a[a.size() - 1], k_b = b[b.size() - 2];
  if (k_a != k_b)
    return ctx.error(
        "MatMul: A has shape {} and B has shape {}: the contracted dims differ ({} vs "
        "{})",
        shape_to_string(ctx.shape(0)), shape_to_string(ctx.shape(1)), k_a, k_b);
  Shape batch_a(a.begin(), a.end() - 2), batch_b(b.begin(), b.end() - 2);
  auto batch = broadcast_shapes(batch_a, batch_b);
  if (!batch.ok())
    return ctx.error("MatMul: the batch dims of A {} and B {} cannot be broadcast",
                     shape_to_string(ctx.shape(0)), shape_to_string(ctx.shape(1)));
  Shape out = *batch;
  if (!a_vec) out.push_back(a[a.size() - 2]);
  if (!b_vec) out.push_back(b[b.size() - 1]);
  ctx.set_output(0, dt, out);
  return Status::ok_status();
}

Status infer_Gemm(ShapeContext& ctx) {
  RETURN_IF_ERROR(require_inputs(ctx, 2, "Gemm"));
  RETURN_IF_ERROR(same_dtypes(ctx, "Gemm"));
  DType dt = ctx.dtype(0);
  if (!matmul_dtype(dt))
    return ctx.error(
        "Gemm does not accept element type {} (float types, int32, int64, uint32, "
        "uint64 only)",
        dtype_name(dt));
  const Shape& a = ctx.shape(0);
  const Shape& b = ctx.shape(1);
  if (a.size() != 2 || b.size() != 2)
    return ctx.error("Gemm inputs A and B must be 2-D, got shapes {} and {}", shape_to_string(a),
                     shape_to_string(b));
  bool trans_a = ctx.attrs().get_int("transA", 0) != 0;
  bool trans_b = ctx.attrs().get_int("transB", 0) != 0;
  int64_t m = trans_a ? a[1] : a[0], k = trans_a ? a[0] : a[1];
  int64_t k2 = trans_b ? b[1] : b[0], n = trans_b ? b[0] : b[1];
  if (k != k2)
    return ctx.error(
        "Gemm: A {} (transA={}) and B {} (transB={}) have different inner dims ({} vs "
        "{})",
        shape_to_string(a), trans_a ? 1 : 0, shape_to_string(b), trans_b ? 1 : 0, k, k2);
  if (ctx.has_input(2)) {
    const Shape& c = ctx.shape(2);
    bool ok = c.size() <= 2;
    if (ok && c.size() >= 1) ok = c.back() == 1 || c.back() == n;
    if (ok && c.size() == 2) ok = c[0] == 1 || c[0] == m;
    if (!ok)
      return ctx.error("Gemm: C has shape {}, which cannot be broadcast to the output {}x{}",
                       shape_to_string(c), m, n);
  }
  ctx.set_output(0, dt, {m, n});
  return Status::ok_status();
}

Status infer_Einsum(ShapeContext& ctx) {
  RETURN_IF_ERROR(require_inputs(ctx, 1, "Einsum"));
  RETURN_IF_ERROR(same_dtypes(ctx, "Einsum"));
  DType dt = ctx.dtype(0);
  if (!is_float(dt) && !is_integer(dt))
    return ctx.error("Einsum does not accept element type {} (numeric types only)", dtype_name(dt));
  const Attribute* eq = ctx.attrs().find("equation");
  if (!eq || eq->kind != Attribute::Kind::kString)
    return ctx.error("Einsum needs the string attribute 'equation'");
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.error("Einsum input {} is empty; all inputs are required", i);
    shapes.push_back(ctx.shape(i));
  }
  ASSIGN_OR_RETURN(EinsumPlan plan, plan_einsum(eq->s, shapes));
  ctx.set_output(0, dt, plan.output_shape);
  return Status::ok_status();
}

namespace {
Status infer_conv_common(ShapeContext& ctx, bool transpose) {
  const char* op = transpose ? "ConvTranspose" : "Conv";
  RETURN_IF_ERROR(require_inputs(ctx, 2, op));
  RETURN_IF_ERROR(same_dtypes(ctx, op));
  DType dt = ctx.dtype(0);
  if (!is_float(dt))
    return ctx.error(
        "{} does not accept element type {} (float types only; use ConvInteger for "
        "8-bit)",
        op, dtype_name(dt));
  const Shape* bias = ctx.has_input(2) ? &ctx.shape(2) : nullptr;
  ASSIGN_OR_RETURN(ConvGeometry g,
                   resolve_conv_geometry(ctx.attrs(), ctx.shape(0), ctx.shape(1), bias, transpose));
  ctx.set_output(0, dt, g.output_shape());
  return Status::ok_status();
}
}  // namespace

Status infer_Conv(ShapeContext& ctx) { return infer_conv_common(ctx, false); }
Status infer_ConvTranspose(ShapeContext& ctx) { return infer_conv_common(ctx, true); }

}  // namespace graphc::ir::shape_rules
