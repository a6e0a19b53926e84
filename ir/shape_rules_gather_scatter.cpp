// Shape rules of the indexing ops (Gather, GatherElements, GatherND,
// ScatterElements, ScatterND) and the generators and per-axis ops of the
// data-movement group: ConstantOfShape, Range, Trilu, DepthToSpace,
// SpaceToDepth, OneHot, EyeLike, CumSum.
#include <cmath>

#include "ir/shape_rules.h"
#include "ir/shape_rules_data_movement_util.h"
#include "support/checked_math.h"

namespace graphc::ir::shape_rules {

namespace {

Status check_index_dtype(const ShapeContext& ctx, size_t i) {
  DType t = ctx.dtype(i);
  if (t != DType::kInt32 && t != DType::kInt64)
    return ctx.error("input {} (indices) must be int32 or int64, got {}", i, dtype_name(t));
  return Status::ok_status();
}

Status check_reduction(const ShapeContext& ctx) {
  std::string r = ctx.attrs().get_string("reduction", "none");
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    return ctx.error("reduction '{}' is not one of none, add, mul, max, min", r);
  return Status::ok_status();
}

bool is_numeric(DType t) { return is_float(t) || is_integer(t); }

}  // namespace

Status infer_Gather(ShapeContext& ctx) {
  RETURN_IF_ERROR(check_index_dtype(ctx, 1));
  int64_t r = ctx.rank(0);
  if (r == 0) return ctx.error("cannot gather from a scalar");
  ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.attrs().get_int("axis", 0), r));
  const Shape& data = ctx.shape(0);
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), ctx.shape(1).begin(), ctx.shape(1).end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  ctx.set_output(0, ctx.dtype(0), out);
  return Status::ok_status();
}

Status infer_GatherElements(ShapeContext& ctx) {
  RETURN_IF_ERROR(check_index_dtype(ctx, 1));
  int64_t r = ctx.rank(0);
  if (r == 0) return ctx.error("cannot gather from a scalar");
  ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.attrs().get_int("axis", 0), r));
  const Shape &data = ctx.shape(0), &idx = ctx.shape(1);
  if (idx.size() != data.size())
    return ctx.error("indices have rank {}, data has rank {}: they must match", idx.size(),
                     data.size());
  for (size_t d = 0; d < idx.size(); ++d)
    if (static_cast<int64_t>(d) != axis && idx[d] > data[d])
      return ctx.error("indices shape {} exceeds data shape {} on dim {}", shape_to_string(idx),
                       shape_to_string(data), d);
  ctx.set_output(0, ctx.dtype(0), idx);
  return Status::ok_status();
}

Status infer_GatherND(ShapeContext& ctx) {
  if (ctx.dtype(1) != DType::kInt64)
    return ctx.error("indices must be int64, got {}", dtype_name(ctx.dtype(1)));
  const Shape &data = ctx.shape(0), &idx = ctx.shape(1);
  auto r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(idx.size());
  int64_t b = ctx.attrs().get_int("batch_dims", 0);
  if (r < 1 || q < 1) return ctx.error("data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(r, q))
    return ctx.error("batch_dims {} must be in [0, min(data rank {}, indices rank {}))", b, r, q);
  for (int64_t d = 0; d < b; ++d)
    if (data[static_cast<size_t>(d)] != idx[static_cast<size_t>(d)])
      return ctx.error("batch dim {} differs: data {} vs indices {}", d, shape_to_string(data),
                       shape_to_string(idx));
  int64_t last = idx.back();
  if (last < 1 || last > r - b)
    return ctx.error("indices' last dim {} must be in [1, {}] (data rank {} - batch_dims {})", last,
                     r - b, r, b);
  Shape out(idx.begin(), idx.end() - 1);
  out.insert(out.end(), data.begin() + b + last, data.end());
  ctx.set_output(0, ctx.dtype(0), out);
  return Status::ok_status();
}

Status infer_ScatterElements(ShapeContext& ctx) {
  RETURN_IF_ERROR(check_index_dtype(ctx, 1));
  RETURN_IF_ERROR(check_reduction(ctx));
  int64_t r = ctx.rank(0);
  if (r == 0) return ctx.error("cannot scatter into a scalar");
  ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.attrs().get_int("axis", 0), r));
  const Shape &data = ctx.shape(0), &idx = ctx.shape(1);
  if (ctx.dtype(2) != ctx.dtype(0))
    return ctx.error("updates are {}, data is {}", dtype_name(ctx.dtype(2)),
                     dtype_name(ctx.dtype(0)));
  if (ctx.shape(2) != idx)
    return ctx.error("updates shape {} differs from indices shape {}",
                     shape_to_string(ctx.shape(2)), shape_to_string(idx));
  if (idx.size() != data.size())
    return ctx.error("indices have rank {}, data has rank {}", idx.size(), data.size());
  for (size_t d = 0; d < idx.size(); ++d)
    if (static_cast<int64_t>(d) != axis && idx[d] > data[d])
      return ctx.error("indices shape {} exceeds data shape {} on dim {}", shape_to_string(idx),
                       shape_to_string(data), d);
  ctx.set_output(0, ctx.dtype(0), data);
  return Status::ok_status();
}

Status infer_ScatterND(ShapeContext& ctx) {
  if (ctx.dtype(1) != DType::kInt64)
    return ctx.error("indices must be int64, got {}", dtype_name(ctx.dtype(1)));
  RETURN_IF_ERROR(check_reduction(ctx));
  const Shape &data = ctx.shape(0), &idx = ctx.shape(1), &upd = ctx.shape(2);
  if (ctx.dtype(2) != ctx.dtype(0))
    return ctx.error("updates are {}, data is {}", dtype_name(ctx.dtype(2)),
                     dtype_name(ctx.dtype(0)));
  if (data.empty() || idx.empty()) return ctx.error("data and indices must have rank >= 1");
  int64_t k = idx.back();
  if (k < 1 || k > static_cast<int64_t>(data.size()))
    return ctx.error("indices' last dim {} must be in [1, data rank {}]", k, data.size());
  Shape want(idx.begin(), idx.end() - 1);
  want.insert(want.end(), data.begin() + k, data.end());
  if (upd != want)
    return ctx.error("updates shape {} must be {} (indices {} with data {})", shape_to_string(upd),
                     shape_to_string(want), shape_to_string(idx), shape_to_string(data));
  ctx.set_output(0, ctx.dtype(0), data);
  return Status::ok_status();
}

Status infer_ConstantOfShape(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(auto shape, shape_input(ctx, 0, "shape"));
  for (int64_t d : shape)
    if (d < 0) return ctx.error("shape has a negative dim {}", d);
  DType dt = DType::kFloat32;
  if (const Attribute* a = ctx.attrs().find("value")) {
    if (a->kind != Attribute::Kind::kTensor) return ctx.error("attribute 'value' must be a tensor");
    if (a->t.numel() != 1)
      return ctx.error("attribute 'value' must hold one element, has {}", a->t.numel());
    dt = a->t.dtype();
  }
  ctx.set_output(0, dt, shape);
  return Status::ok_status();
}

Status infer_Range(ShapeContext& ctx) {
  DType dt = ctx.dtype(0);
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.dtype(i) != dt)
      return ctx.error("start, limit and delta must share a dtype; input {} is {}, start is {}", i,
                       dtype_name(ctx.dtype(i)), dtype_name(dt));
    if (shape_numel(ctx.shape(i)) != 1)
      return ctx.error("input {} must be a scalar, got shape {}", i, shape_to_string(ctx.shape(i)));
    if (!ctx.constant(i))
      return unsupported(
          "input {} of Range must be known at build time; graphc needs static shapes", i);
  }
  if (dt == DType::kBool || dt == DType::kUInt64 || !is_numeric(dt))
    return ctx.error("Range does not take {}", dtype_name(dt));
  // Opset 27's stash_type 0 asks for float16/bfloat16 accumulation in the narrow
  // type itself; graphc computes every element as start + i*delta in double.
  if ((dt == DType::kFloat16 || dt == DType::kBFloat16) &&
      ctx.attrs().get_int("stash_type", 1) != 1)
    return unsupported(
        "Range: stash_type {} (accumulate in {}) is not supported; graphc computes "
        "start + i*delta in double (stash_type 1)",
        ctx.attrs().get_int("stash_type", 1), dtype_name(dt));
  int64_t n = 0;
  if (is_integer(dt)) {
    __int128 start = ctx.constant(0)->get_i64(0), limit = ctx.constant(1)->get_i64(0),
             delta = ctx.constant(2)->get_i64(0);
    if (delta == 0) return ctx.error("delta is 0");
    __int128 diff = limit - start, q = diff / delta;
    if (diff % delta != 0 && ((diff > 0) == (delta > 0))) ++q;
    n = static_cast<int64_t>(q < 0 ? 0 : q);
  } else {
    double start = ctx.constant(0)->get_f64(0), limit = ctx.constant(1)->get_f64(0),
           delta = ctx.constant(2)->get_f64(0);
    if (delta == 0) return ctx.error("delta is 0");
    double q = std::ceil((limit - start) / delta);
    if (!std::isfinite(q) || q > 9.0e18)
      return ctx.error("Range({}, {}, {}) has no finite length", start, limit, delta);
    n = q < 0 ? 0 : static_cast<int64_t>(q);
  }
  ctx.set_output(0, dt, {n});
  return Status::ok_status();
}

Status infer_Trilu(ShapeContext& ctx) {
  if (ctx.rank(0) < 2) return ctx.error("input must have rank >= 2, got {}", ctx.rank(0));
  if (ctx.has_input(1)) {
    ASSIGN_OR_RETURN(int64_t k, scalar_int_input(ctx, 1, "k"));
    (void)k;
  }
  int64_t upper = ctx.attrs().get_int("upper", 1);
  if (upper != 0 && upper != 1) return ctx.error("upper must be 0 or 1, got {}", upper);
  return same_as_input(ctx);
}

namespace {
Status check_block_layout(const ShapeContext& ctx, int64_t& b) {
  if (ctx.rank(0) != 4)
    return ctx.error("input must have rank 4 (N, C, H, W), got {}", shape_to_string(ctx.shape(0)));
  if (!ctx.attrs().has("blocksize")) return ctx.error("missing the 'blocksize' attribute");
  b = ctx.attrs().get_int("blocksize", 0);
  if (b <= 0 || b > (int64_t{1} << 20)) return ctx.error("blocksize {} must be positive", b);
  std::string mode = ctx.attrs().get_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") return ctx.error("mode '{}' is not DCR or CRD", mode);
  return Status::ok_status();
}
}  // namespace

Status infer_DepthToSpace(ShapeContext& ctx) {
  int64_t b = 0;
  RETURN_IF_ERROR(check_block_layout(ctx, b));
  const Shape& in = ctx.shape(0);
  if (in[1] % (b * b) != 0)
    return ctx.error("channels {} are not a multiple of blocksize^2 = {}", in[1], b * b);
  auto h = checked_mul(in[2], b), w = checked_mul(in[3], b);
  if (!h || !w) return ctx.error("output dims overflow int64");
  ctx.set_output(0, ctx.dtype(0), {in[0], in[1] / (b * b), *h, *w});
  return Status::ok_status();
}

Status infer_SpaceToDepth(ShapeContext& ctx) {
  int64_t b = 0;
  RETURN_IF_ERROR(check_block_layout(ctx, b));
  const Shape& in = ctx.shape(0);
  if (in[2] % b != 0 || in[3] % b != 0)
    return ctx.error("spatial dims {}x{} are not multiples of blocksize {}", in[2], in[3], b);
  auto c = checked_mul(in[1], b * b);
  if (!c) return ctx.error("output channels overflow int64");
  ctx.set_output(0, ctx.dtype(0), {in[0], *c, in[2] / b, in[3] / b});
  return Status::ok_status();
}

Status infer_OneHot(ShapeContext& ctx) {
  if (!is_numeric(ctx.dtype(0)))
    return ctx.error("indices must be numeric, got {}", dtype_name(ctx.dtype(0)));
  const Tensor* depth_t = ctx.constant(1);
  if (!depth_t)
    return unsupported(
        "input 1 (depth) of OneHot must be known at build time; graphc needs "
        "static shapes");
  if (depth_t->numel() != 1 || !is_numeric(depth_t->dtype()))
    return ctx.error("depth must be one number, got {}[{}]", dtype_name(depth_t->dtype()),
                     shape_to_string(depth_t->shape()));
  double depth_f = depth_t->get_f64(0);
  if (!(depth_f >= 0) || depth_f > 9.0e18) return ctx.error("depth {} is invalid", depth_f);
  int64_t depth = depth_t->get_i64(0);
  if (shape_numel(ctx.shape(2)) != 2 || ctx.rank(2) != 1)
    return ctx.error("values must be [off_value, on_value], got shape {}",
                     shape_to_string(ctx.shape(2)));
  int64_t r = ctx.rank(0);
  int64_t axis = ctx.attrs().get_int("axis", -1);
  if (axis < -r - 1 || axis > r)
    return ctx.error("axis {} is out of range for output rank {}", axis, r + 1);
  if (axis < 0) axis += r + 1;
  Shape out = ctx.shape(0);
  out.insert(out.begin() + axis, depth);
  ctx.set_output(0, ctx.dtype(2), out);
  return Status::ok_status();
}

Status infer_EyeLike(ShapeContext& ctx) {
  if (ctx.rank(0) != 2)
    return ctx.error("input must be 2-D, got {}", shape_to_string(ctx.shape(0)));
  DType dt = ctx.dtype(0);
  if (ctx.attrs().has("dtype")) {
    int64_t code = ctx.attrs().get_int("dtype", 1);
    auto d = dtype_from_onnx(static_cast<int32_t>(code));
    if (!d || code != static_cast<int32_t>(code))
      return unsupported("EyeLike dtype {} is not supported", code);
    dt = *d;
  }
  ctx.set_output(0, dt, ctx.shape(0));
  return Status::ok_status();
}

Status infer_CumSum(ShapeContext& ctx) {
  if (!is_numeric(ctx.dtype(0)))
    return ctx.error("CumSum does not take {}", dtype_name(ctx.dtype(0)));
  if (ctx.rank(0) == 0) return ctx.error("CumSum needs an input of rank >= 1");
  ASSIGN_OR_RETURN(int64_t axis, scalar_int_input(ctx, 1, "axis"));
  ASSIGN_OR_RETURN(int64_t a, normalize_axis(axis, ctx.rank(0)));
  (void)a;
  return same_as_input(ctx);
}

}  // namespace graphc::ir::shape_rules
