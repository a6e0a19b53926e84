// Shape rules of GroupNormalization, RMSNormalization, LpNormalization,
// RotaryEmbedding, Col2Im and GridSample.
#include "ir/shape_rules.h"

namespace graphc::ir::shape_rules {

namespace {
Status require_float_at(ShapeContext& ctx, size_t i, const char* op, const char* what) {
  if (!is_float(ctx.dtype(i)))
    return ctx.error("{}: {} (input {}) must be a float tensor, got {}", op, what, i,
                     dtype_name(ctx.dtype(i)));
  return Status::ok_status();
}
}  // namespace

// X [N, C, ...], scale and bias [num_groups] (opset 18) or [C] (opset 21).
Status infer_GroupNormalization(ShapeContext& ctx) {
  const char* op = "GroupNormalization";
  RETURN_IF_ERROR(require_float_at(ctx, 0, op, "X"));
  if (ctx.rank(0) < 2) return ctx.error("{}: X must have rank >= 2, got {}", op, shape_to_string(ctx.shape(0)));
  const int64_t groups = ctx.attrs().get_int("num_groups", 0);
  const int64_t c = ctx.shape(0)[1];
  if (groups <= 0 || c % groups != 0)
    return ctx.error("{}: num_groups {} must be positive and divide the {} channels", op, groups, c);
  for (size_t i : {1, 2}) {
    if (ctx.shape(i) != Shape{groups} && ctx.shape(i) != Shape{c})
      return ctx.error("{}: input {} has shape {}, expected [{}] or [{}]", op, i,
                       shape_to_string(ctx.shape(i)), groups, c);
  }
  if (ctx.attrs().get_int("stash_type", 1) != 1)
    return unsupported("{}: stash_type {} (only float32 statistics)", op, ctx.attrs().get_int("stash_type", 1));
  return same_as_input(ctx, 0);
}

// X normalized over axes [axis, rank); scale broadcasts to those axes.
Status infer_RMSNormalization(ShapeContext& ctx) {
  const char* op = "RMSNormalization";
  RETURN_IF_ERROR(require_float_at(ctx, 0, op, "X"));
  auto axis = normalize_axis(ctx.attrs().get_int("axis", -1), ctx.rank(0));
  if (!axis.ok()) return ctx.error("{}: axis out of range for shape {}", op, shape_to_string(ctx.shape(0)));
  Shape norm(ctx.shape(0).begin() + *axis, ctx.shape(0).end());
  auto b = broadcast_shapes(norm, ctx.shape(1));
  if (!b.ok() || *b != norm)
    return ctx.error("{}: scale of shape {} does not broadcast to the normalized shape {}", op,
                     shape_to_string(ctx.shape(1)), shape_to_string(norm));
  if (ctx.attrs().get_int("stash_type", 1) != 1)
    return unsupported("{}: stash_type {} (only float32 statistics)", op, ctx.attrs().get_int("stash_type", 1));
  return same_as_input(ctx, 0);
}

Status infer_LpNormalization(ShapeContext& ctx) {
  const char* op = "LpNormalization";
  RETURN_IF_ERROR(require_float_at(ctx, 0, op, "input"));
  const int64_t p = ctx.attrs().get_int("p", 2);
  if (p != 1 && p != 2) return ctx.error("{}: p = {} (1 or 2 only)", op, p);
  if (!normalize_axis(ctx.attrs().get_int("axis", -1), ctx.rank(0)).ok())
    return ctx.error("{}: axis out of range for shape {}", op, shape_to_string(ctx.shape(0)));
  return same_as_input(ctx, 0);
}

// X [B, heads, S, H] or [B, S, heads * H]; caches [max_pos, d/2] with
// position_ids [B, S], or [B, S, d/2] without.
Status infer_RotaryEmbedding(ShapeContext& ctx) {
  const char* op = "RotaryEmbedding";
  RETURN_IF_ERROR(require_float_at(ctx, 0, op, "X"));
  const auto& x = ctx.shape(0);
  if (x.size() != 3 && x.size() != 4)
    return ctx.error("{}: X must be 3-D or 4-D, got {}", op, shape_to_string(x));
  const int64_t heads = ctx.attrs().get_int("num_heads", 0);
  if (x.size() == 3 && (heads <= 0 || x[2] % heads != 0))
    return ctx.error("{}: a 3-D X needs num_heads dividing its hidden size {}", op, x[2]);
  const int64_t b = x[0], s = x.size() == 4 ? x[2] : x[1];
  const int64_t head = x.size() == 4 ? x[3] : x[2] / heads;
  int64_t rot = ctx.attrs().get_int("rotary_embedding_dim", 0);
  if (rot == 0) rot = head;
  if (rot > head || rot % 2 != 0)
    return ctx.error("{}: rotary_embedding_dim {} must be even and at most the head size {}", op, rot, head);
  for (size_t i : {1, 2}) {
    RETURN_IF_ERROR(require_float_at(ctx, i, op, "cache"));
    const auto& c = ctx.shape(i);
    bool ok = ctx.has_input(3) ? c.size() == 2 && c[1] == rot / 2
                               : c == Shape{b, s, rot / 2};
    if (!ok)
      return ctx.error("{}: cache (input {}) has shape {}, which does not fit X {} and rotary dim {}",
                       op, i, shape_to_string(c), shape_to_string(x), rot);
  }
  if (ctx.has_input(3)) {
    if (!is_integer(ctx.dtype(3)) || ctx.shape(3) != Shape{b, s})
      return ctx.error("{}: position_ids must be integer of shape [{}, {}]", op, b, s);
    // Positions index the cache: checked here when known at build time.
    if (const Tensor* pos = ctx.constant(3)) {
      const int64_t rows = ctx.shape(1)[0];
      for (int64_t v : pos->to_i64_vector())
        if (v < 0 || v >= rows)
          return ctx.error("{}: position id {} is outside the {}-row cache", op, v, rows);
    }  // else the kernel checks them
  }
  return same_as_input(ctx, 0);
}

// input [N, C * prod(block_shape), L] -> [N, C, image_shape...].
Status infer_Col2Im(ShapeContext& ctx) {
  const char* op = "Col2Im";
  ASSIGN_OR_RETURN(auto image, ctx.constant_ints(1, "image_shape"));
  ASSIGN_OR_RETURN(auto block, ctx.constant_ints(2, "block_shape"));
  const auto& x = ctx.shape(0);
  const size_t nd = image.size();
  if (x.size() != 3 || block.size() != nd || nd == 0)
    return ctx.error("{}: input {} with image_shape of {} and block_shape of {} dims", op,
                     shape_to_string(x), nd, block.size());
  auto dil = ctx.attrs().get_ints("dilations", std::vector<int64_t>(nd, 1));
  auto strides = ctx.attrs().get_ints("strides", std::vector<int64_t>(nd, 1));
  auto pads = ctx.attrs().get_ints("pads", std::vector<int64_t>(2 * nd, 0));
  if (dil.size() != nd || strides.size() != nd || pads.size() != 2 * nd)
    return ctx.error("{}: dilations, strides and pads must have {}, {} and {} values", op, nd, nd, 2 * nd);
  int64_t kprod = 1, blocks = 1;
  for (size_t d = 0; d < nd; ++d) {
    if (image[d] <= 0 || block[d] <= 0 || dil[d] <= 0 || strides[d] <= 0 || pads[d] < 0 || pads[d + nd] < 0)
      return ctx.error("{}: sizes, dilations and strides must be positive, pads non-negative", op);
    kprod *= block[d];
    int64_t n = (image[d] + pads[d] + pads[d + nd] - dil[d] * (block[d] - 1) - 1) / strides[d] + 1;
    if (n <= 0) return ctx.error("{}: no sliding block fits axis {}", op, d);
    blocks *= n;
  }
  if (x[1] % kprod != 0 || x[2] != blocks)
    return ctx.error("{}: input {} does not hold C * {} rows of {} blocks", op, shape_to_string(x), kprod, blocks);
  Shape out{x[0], x[1] / kprod};
  out.insert(out.end(), image.begin(), image.end());
  ctx.set_output(0, ctx.dtype(0), out);
  return Status::ok_status();
}

// X [N, C, D1..Dk], grid [N, O1..Ok, k] -> [N, C, O1..Ok].
Status infer_GridSample(ShapeContext& ctx) {
  const char* op = "GridSample";
  RETURN_IF_ERROR(require_float_at(ctx, 0, op, "X"));
  RETURN_IF_ERROR(require_float_at(ctx, 1, op, "grid"));
  const auto& x = ctx.shape(0);
  const auto& g = ctx.shape(1);
  if (x.size() < 3 || g.size() != x.size() || g[0] != x[0] ||
      g.back() != static_cast<int64_t>(x.size()) - 2)
    return ctx.error("{}: X {} and grid {} do not match ([N, C, D1..Dk] and [N, O1..Ok, k])", op,
                     shape_to_string(x), shape_to_string(g));
  Shape out{x[0], x[1]};
  out.insert(out.end(), g.begin() + 1, g.end() - 1);
  ctx.set_output(0, ctx.dtype(0), out);
  return Status::ok_status();
}

}  // namespace graphc::ir::shape_rules
