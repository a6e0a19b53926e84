// Shape rules of the shape ops (Shape, Size) and the layout ops that only move
// bytes: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split,
// Slice, Expand, Tile, Pad. Gather/Scatter and the generators are in
// shape_rules_gather_scatter.cpp; the parameter logic shared with the
// reference kernels is in data_movement_params.cpp.
#include <fmt/ranges.h>

#include "ir/data_movement_params.h"
#include "ir/shape_rules.h"
#include "ir/shape_rules_data_movement_util.h"
#include "support/checked_math.h"

namespace graphc::ir::shape_rules {

Expected<std::optional<std::vector<int64_t>>> optional_ints(const ShapeContext& ctx, size_t i,
                                                            const char* what) {
  if (!ctx.has_input(i)) return std::optional<std::vector<int64_t>>{};
  if (ctx.rank(i) > 1)
    return ctx.error("input {} ({}) must be 1-D, got shape {}", i, what,
                     shape_to_string(ctx.shape(i)));
  ASSIGN_OR_RETURN(auto v, ctx.constant_ints(i, what));
  return std::optional<std::vector<int64_t>>(std::move(v));
}

Expected<std::vector<int64_t>> shape_input(const ShapeContext& ctx, size_t i, const char* what) {
  if (ctx.dtype(i) != DType::kInt64)
    return ctx.error("input {} ({}) must be int64, got {}", i, what, dtype_name(ctx.dtype(i)));
  if (ctx.rank(i) != 1)
    return ctx.error("input {} ({}) must be 1-D, got shape {}", i, what,
                     shape_to_string(ctx.shape(i)));
  return ctx.constant_ints(i, what);
}

Expected<int64_t> scalar_int_input(const ShapeContext& ctx, size_t i, const char* what) {
  if (shape_numel(ctx.shape(i)) != 1)
    return ctx.error("input {} ({}) must hold exactly one value, got shape {}", i, what,
                     shape_to_string(ctx.shape(i)));
  ASSIGN_OR_RETURN(auto v, ctx.constant_ints(i, what));
  return v[0];
}

Status infer_Shape(ShapeContext& ctx) {
  const Shape& in = ctx.shape(0);
  for (int64_t d : in)
    if (d < 0) return unsupported("Shape of {} needs static dims", shape_to_string(in));
  std::optional<int64_t> end;
  if (ctx.attrs().has("end")) end = ctx.attrs().get_int("end", 0);
  auto [s, e] = dm::shape_range(ctx.rank(0), ctx.attrs().get_int("start", 0), end);
  std::vector<int64_t> dims(in.begin() + s, in.begin() + e);
  auto n = static_cast<int64_t>(dims.size());
  ctx.set_output_constant(0, Tensor::from_i64(dims, {n}));
  return Status::ok_status();
}

Status infer_Size(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(int64_t n, checked_shape_numel(ctx.shape(0)));
  ctx.set_output_constant(0, Tensor::scalar_i64(n));
  return Status::ok_status();
}

Status infer_Reshape(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(auto target, shape_input(ctx, 1, "shape"));
  int64_t allowzero = ctx.attrs().get_int("allowzero", 0);
  if (allowzero != 0 && allowzero != 1)
    return ctx.error("allowzero must be 0 or 1, got {}", allowzero);
  ASSIGN_OR_RETURN(Shape out, dm::reshape_shape(ctx.shape(0), target, allowzero == 1));
  ctx.set_output(0, ctx.dtype(0), out);
  return Status::ok_status();
}

Status infer_Flatten(ShapeContext& ctx) {
  int64_t r = ctx.rank(0);
  int64_t axis = ctx.attrs().get_int("axis", 1);
  if (axis < -r || axis > r)
    return ctx.error("axis {} is out of range for rank {} (valid: [{}, {}])", axis, r, -r, r);
  if (axis < 0) axis += r;
  const Shape& in = ctx.shape(0);
  Shape lead(in.begin(), in.begin() + axis), tail(in.begin() + axis, in.end());
  ASSIGN_OR_RETURN(int64_t a, checked_shape_numel(lead));
  ASSIGN_OR_RETURN(int64_t b, checked_shape_numel(tail));
  ctx.set_output(0, ctx.dtype(0), {a, b});
  return Status::ok_status();
}

Status infer_Squeeze(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(auto axes, optional_ints(ctx, 1, "axes"));
  ASSIGN_OR_RETURN(Shape out, dm::squeeze_shape(ctx.shape(0), axes));
  ctx.set_output(0, ctx.dtype(0), out);
  return Status::ok_status();
}

Status infer_Unsqueeze(ShapeContext& ctx) {
  if (!ctx.has_input(1)) return ctx.error("Unsqueeze needs axes (input 1)");
  ASSIGN_OR_RETURN(auto axes, optional_ints(ctx, 1, "axes"));
  ASSIGN_OR_RETURN(Shape out, dm::unsqueeze_shape(ctx.shape(0), *axes));
  ctx.set_output(0, ctx.dtype(0), out);
  return Status::ok_status();
}

Status infer_Transpose(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(auto perm, dm::transpose_perm(ctx.attrs().get_ints("perm"),
                                                 ctx.attrs().has("perm"), ctx.rank(0)));
  Shape out;
  for (int64_t p : perm) out.push_back(ctx.shape(0)[static_cast<size_t>(p)]);
  ctx.set_output(0, ctx.dtype(0), out);
  return Status::ok_status();
}

Status infer_Concat(ShapeContext& ctx) {
  if (!ctx.attrs().has("axis")) return ctx.error("Concat needs the 'axis' attribute");
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (!ctx.has_input(i)) return ctx.error("input {} is empty", i);
  int64_t r = ctx.rank(0);
  if (r == 0) return ctx.error("cannot concatenate scalars (input 0 has rank 0)");
  auto axis = normalize_axis(ctx.attrs().get_int("axis", 0), r);
  if (!axis.ok()) return axis.status();
  auto ax = static_cast<size_t>(*axis);
  Shape out = ctx.shape(0);
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    const Shape& s = ctx.shape(i);
    if (ctx.dtype(i) != ctx.dtype(0))
      return ctx.error("input {} is {}, input 0 is {}", i, dtype_name(ctx.dtype(i)),
                       dtype_name(ctx.dtype(0)));
    if (s.size() != out.size())
      return ctx.error("input {} has rank {}, input 0 has rank {}", i, s.size(), out.size());
    for (size_t d = 0; d < s.size(); ++d)
      if (d != ax && s[d] != out[d])
        return ctx.error("input {} has shape {}, which differs from input 0 ({}) on dim {}", i,
                         shape_to_string(s), shape_to_string(ctx.shape(0)), d);
    auto sum = checked_add(out[ax], s[ax]);
    if (!sum) return ctx.error("concatenated dim overflows int64");
    out[ax] = *sum;
  }
  ctx.set_output(0, ctx.dtype(0), out);
  return Status::ok_status();
}

Status infer_Split(ShapeContext& ctx) {
  int64_t r = ctx.rank(0);
  if (r == 0) return ctx.error("cannot split a scalar");
  ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.attrs().get_int("axis", 0), r));
  ASSIGN_OR_RETURN(auto split, optional_ints(ctx, 1, "split"));
  const Shape& in = ctx.shape(0);
  ASSIGN_OR_RETURN(auto sizes, dm::split_sizes(in[static_cast<size_t>(axis)], split,
                                               ctx.attrs().get_int("num_outputs", -1),
                                               static_cast<int64_t>(ctx.num_outputs())));
  for (size_t o = 0; o < ctx.num_outputs(); ++o) {
    Shape s = in;
    s[static_cast<size_t>(axis)] = sizes[o];
    ctx.set_output(o, ctx.dtype(0), s);
  }
  return Status::ok_status();
}

Status infer_Slice(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(auto starts, optional_ints(ctx, 1, "starts"));
  ASSIGN_OR_RETURN(auto ends, optional_ints(ctx, 2, "ends"));
  ASSIGN_OR_RETURN(auto axes, optional_ints(ctx, 3, "axes"));
  ASSIGN_OR_RETURN(auto steps, optional_ints(ctx, 4, "steps"));
  ASSIGN_OR_RETURN(auto p, dm::slice_params(ctx.shape(0), *starts, *ends, axes, steps));
  ctx.set_output(0, ctx.dtype(0), p.out);
  return Status::ok_status();
}

Status infer_Expand(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(auto target, shape_input(ctx, 1, "shape"));
  for (int64_t d : target)
    if (d < 0) return ctx.error("shape [{}] has a negative dim", fmt::join(target, ", "));
  ASSIGN_OR_RETURN(Shape out, broadcast_shapes(ctx.shape(0), target));
  ctx.set_output(0, ctx.dtype(0), out);
  return Status::ok_status();
}

Status infer_Tile(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(auto repeats, shape_input(ctx, 1, "repeats"));
  if (static_cast<int64_t>(repeats.size()) != ctx.rank(0))
    return ctx.error("repeats has {} entries, the input has rank {}", repeats.size(), ctx.rank(0));
  Shape out = ctx.shape(0);
  for (size_t d = 0; d < out.size(); ++d) {
    if (repeats[d] < 0) return ctx.error("repeats[{}] = {} is negative", d, repeats[d]);
    auto m = checked_mul(out[d], repeats[d]);
    if (!m) return ctx.error("tiled dim {} overflows int64", d);
    out[d] = *m;
  }
  ctx.set_output(0, ctx.dtype(0), out);
  return Status::ok_status();
}

// Pad (opset 11+ form). Models of opset < 11 carry the pad value in the IR
// attribute `_value` (float), set by the importer; see import_data_movement.cpp.
Status infer_Pad(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(auto mode, dm::pad_mode(ctx.attrs().get_string("mode", "constant")));
  if (!ctx.has_input(1)) return ctx.error("Pad needs pads (input 1)");
  ASSIGN_OR_RETURN(auto pads, optional_ints(ctx, 1, "pads"));
  ASSIGN_OR_RETURN(auto axes, optional_ints(ctx, 3, "axes"));
  if (ctx.has_input(2)) {
    if (ctx.dtype(2) != ctx.dtype(0))
      return ctx.error("constant_value is {}, the data is {}: they must match",
                       dtype_name(ctx.dtype(2)), dtype_name(ctx.dtype(0)));
    if (shape_numel(ctx.shape(2)) != 1)
      return ctx.error("constant_value must hold one value, got shape {}",
                       shape_to_string(ctx.shape(2)));
  }
  ASSIGN_OR_RETURN(auto p, dm::pad_params(ctx.shape(0), *pads, axes, mode));
  ctx.set_output(0, ctx.dtype(0), p.out);
  return Status::ok_status();
}

}  // namespace graphc::ir::shape_rules
