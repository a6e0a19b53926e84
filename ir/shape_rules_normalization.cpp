// Shape rules for normalizations: BatchNormalization (inference only),
// LayerNormalization, InstanceNormalization, LRN, MeanVarianceNormalization.
#include "ir/shape_rules.h"

namespace graphc::ir::shape_rules {

namespace {

Status require_float(ShapeContext& ctx, size_t i, const char* what) {
  if (!is_float(ctx.dtype(i)))
    return ctx.error("input {} ({}) must be a float tensor, got {}", i, what,
                     dtype_name(ctx.dtype(i)));
  return Status::ok_status();
}

Status require_rank_at_least(ShapeContext& ctx, int64_t min_rank, const char* layout) {
  if (ctx.rank(0) < min_rank)
    return ctx.error("input 0 must have rank >= {} ({}), got shape {}", min_rank, layout,
                     shape_to_string(ctx.shape(0)));
  return Status::ok_status();
}

// Per-channel parameter: a 1-D tensor of C floats.
Status require_channel_vector(ShapeContext& ctx, size_t i, const char* what, int64_t channels) {
  RETURN_IF_ERROR(require_float(ctx, i, what));
  if (ctx.shape(i) != Shape{channels})
    return ctx.error(
        "input {} ({}) must have shape [{}] (the channel count of input 0, shape {}), "
        "got {}",
        i, what, channels, shape_to_string(ctx.shape(0)), shape_to_string(ctx.shape(i)));
  return Status::ok_status();
}

}  // namespace

// BatchNormalization(X, scale, B, input_mean, input_var) -> Y, inference mode:
// Y = scale * (X - mean) / sqrt(var + epsilon) + B per channel (dim 1).
// training_mode = 1 and the training-only outputs are not supported.
// `_spatial` = 0 (set by the importer for opset < 9 spatial=0, per-activation
// statistics) is accepted only where it means the same as per-channel: every
// dim after the channel dim is 1.
Status infer_BatchNormalization(ShapeContext& ctx) {
  if (ctx.attrs().get_int("training_mode", 0) != 0)
    return unsupported(
        "BatchNormalization with training_mode=1 is not supported: graphc compiles inference "
        "graphs (export the model in eval mode)");
  for (size_t o = 1; o < ctx.num_outputs(); ++o)
    if (ctx.node().outputs[o] != kNoValue)
      return unsupported(
          "BatchNormalization output {} (running or saved statistics) exists only in training "
          "mode, which graphc does not support",
          o);
  RETURN_IF_ERROR(require_float(ctx, 0, "X"));
  RETURN_IF_ERROR(require_rank_at_least(ctx, 2, "N x C x D1 ... Dn"));
  int64_t channels = ctx.shape(0)[1];
  const char* names[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i < 5; ++i)
    RETURN_IF_ERROR(require_channel_vector(ctx, i, names[i], channels));
  if (ctx.attrs().get_int("_spatial", 1) == 0) {
    int64_t per_channel = 1;
    for (size_t d = 2; d < ctx.shape(0).size(); ++d) per_channel *= ctx.shape(0)[d];
    if (per_channel != 1)
      return unsupported(
          "BatchNormalization with spatial=0 (per-activation statistics, opset < 9) on input "
          "shape {} is not supported; only inputs whose dims after the channel dim are all 1",
          shape_to_string(ctx.shape(0)));
  }
  if (ctx.attrs().get_float("epsilon", 1e-5) < 0)
    return ctx.error("attribute 'epsilon' must be >= 0, got {}",
                     ctx.attrs().get_float("epsilon", 1e-5));
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
  return Status::ok_status();
}

// LayerNormalization(X, Scale, B?) -> Y, Mean?, InvStdDev?. Normalises over
// dims [axis, rank). Scale and B broadcast (numpy, one-directional) to X's
// shape. Mean/InvStdDev: X's shape with the normalised dims set to 1, dtype
// given by stash_type (an ONNX float dtype, default 1 = float32).
Status infer_LayerNormalization(ShapeContext& ctx) {
  RETURN_IF_ERROR(require_float(ctx, 0, "X"));
  RETURN_IF_ERROR(require_rank_at_least(ctx, 1, "any shape"));
  int64_t axis_attr = ctx.attrs().get_int("axis", -1);
  auto axis = normalize_axis(axis_attr, ctx.rank(0));
  if (!axis.ok())
    return ctx.error("attribute 'axis' = {} is out of range for input rank {}", axis_attr,
                     ctx.rank(0));
  const char* names[] = {"X", "Scale", "B"};
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    RETURN_IF_ERROR(require_float(ctx, i, names[i]));
    auto b = broadcast_shapes(ctx.shape(0), ctx.shape(i));
    if (!b.ok() || *b != ctx.shape(0))
      return ctx.error("input {} ({}) of shape {} does not broadcast to input 0's shape {}", i,
                       names[i], shape_to_string(ctx.shape(i)), shape_to_string(ctx.shape(0)));
  }
  int64_t stash = ctx.attrs().get_int("stash_type", 1);
  auto stash_dtype = stash >= INT32_MIN && stash <= INT32_MAX
                         ? dtype_from_onnx(static_cast<int32_t>(stash))
                         : std::nullopt;
  if (!stash_dtype || !is_float(*stash_dtype))
    return ctx.error("attribute 'stash_type' = {} is not an ONNX float dtype", stash);
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
  Shape stats = ctx.shape(0);
  for (size_t d = static_cast<size_t>(*axis); d < stats.size(); ++d) stats[d] = 1;
  for (size_t o = 1; o < ctx.num_outputs() && o < 3; ++o) ctx.set_output(o, *stash_dtype, stats);
  return Status::ok_status();
}

// InstanceNormalization(input, scale, B) -> output: per (n, c), normalise over
// the spatial dims; scale and B are per channel.
Status infer_InstanceNormalization(ShapeContext& ctx) {
  RETURN_IF_ERROR(require_float(ctx, 0, "input"));
  RETURN_IF_ERROR(require_rank_at_least(ctx, 3, "N x C x D1 ... Dn"));
  int64_t channels = ctx.shape(0)[1];
  RETURN_IF_ERROR(require_channel_vector(ctx, 1, "scale", channels));
  RETURN_IF_ERROR(require_channel_vector(ctx, 2, "B", channels));
  return same_as_input(ctx);
}

// LRN(X) -> Y: X is N x C x D1 ... Dn (rank >= 2); attribute size >= 1 required.
Status infer_LRN(ShapeContext& ctx) {
  RETURN_IF_ERROR(require_float(ctx, 0, "X"));
  RETURN_IF_ERROR(require_rank_at_least(ctx, 2, "N x C x D1 ... Dn"));
  const Attribute* size = ctx.attrs().find("size");
  if (size == nullptr || size->kind != Attribute::Kind::kInt)
    return ctx.error("LRN needs the int attribute 'size'");
  if (size->i < 1) return ctx.error("attribute 'size' must be >= 1, got {}", size->i);
  return same_as_input(ctx);
}

// MeanVarianceNormalization(X) -> Y: (X - mean) / (std + 1e-9) over `axes`
// (default [0, 2, 3]).
Status infer_MeanVarianceNormalization(ShapeContext& ctx) {
  RETURN_IF_ERROR(require_float(ctx, 0, "X"));
  auto axes = ctx.attrs().get_ints("axes", {0, 2, 3});
  std::vector<bool> seen(static_cast<size_t>(ctx.rank(0)), false);
  for (int64_t a : axes) {
    auto d = normalize_axis(a, ctx.rank(0));
    if (!d.ok())
      return ctx.error("attribute 'axes' value {} is out of range for input rank {}", a,
                       ctx.rank(0));
    if (seen[static_cast<size_t>(*d)]) return ctx.error("attribute 'axes' lists dim {} twice", *d);
    seen[static_cast<size_t>(*d)] = true;
  }
  return same_as_input(ctx);
}

}  // namespace graphc::ir::shape_rules
