// Shape rules of the signal-processing ops (HannWindow, HammingWindow,
// BlackmanWindow, MelWeightMatrix, DFT, STFT), Det, ReverseSequence and
// RoiAlign. Sizes that decide shapes must be build-time constants; every
// malformed size, rank or attribute is refused here, naming the op.
#include "ir/shape_rules.h"
#include "ir/signal_params.h"

namespace graphc::ir::shape_rules {

namespace {

Status require_float(ShapeContext& ctx, size_t i, const char* op, const char* what) {
  if (!is_float(ctx.dtype(i)))
    return ctx.error("{}: {} must be a float tensor, got {}", op, what, dtype_name(ctx.dtype(i)));
  return Status::ok_status();
}

// One integer from a constant scalar (or one-element) size input.
Expected<int64_t> scalar_size(ShapeContext& ctx, size_t i, const char* op, const char* what) {
  if (!is_integer(ctx.dtype(i)))
    return ctx.error("{}: {} must be an integer, got {}", op, what, dtype_name(ctx.dtype(i)));
  ASSIGN_OR_RETURN(auto v, ctx.constant_ints(i, what));
  if (v.size() != 1)
    return ctx.error("{}: {} must be a scalar, got {} values", op, what, v.size());
  return v[0];
}

Expected<DType> output_datatype(ShapeContext& ctx, const char* op) {
  const int64_t code = ctx.attrs().get_int("output_datatype", 1);
  auto dt = code >= 0 && code <= INT32_MAX ? dtype_from_onnx(static_cast<int32_t>(code))
                                           : std::nullopt;
  if (!dt || !(is_float(*dt) || is_integer(*dt)))
    return ctx.error("{}: output_datatype {} is not a numeric type graphc supports", op, code);
  return *dt;
}

Status infer_window(ShapeContext& ctx, const char* op) {
  ASSIGN_OR_RETURN(int64_t size, scalar_size(ctx, 0, op, "size"));
  if (size < 0 || size > ctx.options().max_tensor_elements)
    return ctx.error("{}: size {} is negative or too large", op, size);
  ASSIGN_OR_RETURN(DType dt, output_datatype(ctx, op));
  ctx.set_output(0, dt, {size});
  return Status::ok_status();
}

}  // namespace

Status infer_HannWindow(ShapeContext& ctx) { return infer_window(ctx, "HannWindow"); }
Status infer_HammingWindow(ShapeContext& ctx) { return infer_window(ctx, "HammingWindow"); }
Status infer_BlackmanWindow(ShapeContext& ctx) { return infer_window(ctx, "BlackmanWindow"); }

// [dft_length / 2 + 1, num_mel_bins]
Status infer_MelWeightMatrix(ShapeContext& ctx) {
  const char* op = "MelWeightMatrix";
  ASSIGN_OR_RETURN(int64_t bins, scalar_size(ctx, 0, op, "num_mel_bins"));
  ASSIGN_OR_RETURN(int64_t dft_length, scalar_size(ctx, 1, op, "dft_length"));
  ASSIGN_OR_RETURN(int64_t rate, scalar_size(ctx, 2, op, "sample_rate"));
  for (size_t i : {size_t{3}, size_t{4}}) {
    RETURN_IF_ERROR(require_float(ctx, i, op, i == 3 ? "lower_edge_hertz" : "upper_edge_hertz"));
    if (!ctx.constant(i) || ctx.constant(i)->numel() != 1)
      return ctx.error("{}: input {} must be a build-time constant scalar", op, i);
  }
  const double lower = ctx.constant(3)->get_f64(0), upper = ctx.constant(4)->get_f64(0);
  const int64_t cap = int64_t{1} << 24;
  if (bins <= 0 || dft_length <= 0 || rate <= 0 || bins > cap || dft_length > cap)
    return ctx.error("{}: num_mel_bins {}, dft_length {} and sample_rate {} must be positive "
                     "(and at most 2^24)", op, bins, dft_length, rate);
  if (!(lower >= 0) || !(upper > lower) || !(upper <= rate / 2.0))
    return ctx.error("{}: need 0 <= lower_edge_hertz ({}) < upper_edge_hertz ({}) <= "
                     "sample_rate / 2 ({})", op, lower, upper, rate / 2.0);
  ASSIGN_OR_RETURN(DType dt, output_datatype(ctx, op));
  ctx.set_output(0, dt, {dft_length / 2 + 1, bins});
  return Status::ok_status();
}

Status infer_DFT(ShapeContext& ctx) {
  const char* op = "DFT";
  RETURN_IF_ERROR(require_float(ctx, 0, op, "input"));
  const Shape& x = ctx.shape(0);
  std::optional<int64_t> length;
  if (ctx.has_input(1)) {
    ASSIGN_OR_RETURN(int64_t n, scalar_size(ctx, 1, op, "dft_length"));
    length = n;
  }
  if (!ctx.has_input(2)) return ctx.error("{}: the axis input is missing", op);
  ASSIGN_OR_RETURN(int64_t axis, scalar_size(ctx, 2, op, "axis"));
  ASSIGN_OR_RETURN(DftGeometry geo,
                   dft_geometry(x, axis, length, ctx.attrs().get_int("inverse", 0) != 0,
                                ctx.attrs().get_int("onesided", 0) != 0));
  Shape out = x;
  out[geo.axis] = geo.out_len;
  out.back() = geo.out_complex ? 2 : 1;
  ctx.set_output(0, ctx.dtype(0), out);
  return Status::ok_status();
}

Status infer_STFT(ShapeContext& ctx) {
  const char* op = "STFT";
  RETURN_IF_ERROR(require_float(ctx, 0, op, "signal"));
  ASSIGN_OR_RETURN(int64_t step, scalar_size(ctx, 1, op, "frame_step"));
  std::optional<int64_t> window_len, frame_len;
  if (ctx.has_input(2)) {
    RETURN_IF_ERROR(require_float(ctx, 2, op, "window"));
    if (ctx.rank(2) != 1) return ctx.error("{}: window must be 1-D, got rank {}", op, ctx.rank(2));
    window_len = ctx.shape(2)[0];
  }
  if (ctx.has_input(3)) {
    ASSIGN_OR_RETURN(int64_t n, scalar_size(ctx, 3, op, "frame_length"));
    frame_len = n;
  }
  ASSIGN_OR_RETURN(StftGeometry geo, stft_geometry(ctx.shape(0), step, window_len, frame_len,
                                                   ctx.attrs().get_int("onesided", 1) != 0));
  ctx.set_output(0, ctx.dtype(0), {geo.batch, geo.frames, geo.bins, 2});
  return Status::ok_status();
}

// [..., M, M] -> [...]
Status infer_Det(ShapeContext& ctx) {
  RETURN_IF_ERROR(require_float(ctx, 0, "Det", "X"));
  const Shape& x = ctx.shape(0);
  if (x.size() < 2 || x[x.size() - 1] != x[x.size() - 2])
    return ctx.error("Det: X must be [..., M, M], got {}", shape_to_string(x));
  ctx.set_output(0, ctx.dtype(0), Shape(x.begin(), x.end() - 2));
  return Status::ok_status();
}

Status infer_ReverseSequence(ShapeContext& ctx) {
  const char* op = "ReverseSequence";
  const Shape& x = ctx.shape(0);
  const int64_t batch_axis = ctx.attrs().get_int("batch_axis", 1);
  const int64_t time_axis = ctx.attrs().get_int("time_axis", 0);
  if (x.size() < 2) return ctx.error("{}: input must have rank >= 2, got {}", op, x.size());
  if ((batch_axis != 0 && batch_axis != 1) || (time_axis != 0 && time_axis != 1) ||
      batch_axis == time_axis)
    return ctx.error("{}: batch_axis ({}) and time_axis ({}) must be 0 and 1 in some order", op,
                     batch_axis, time_axis);
  const DType lt = ctx.dtype(1);
  if (lt != DType::kInt64 && lt != DType::kInt32)
    return ctx.error("{}: sequence_lens must be int64, got {}", op, dtype_name(lt));
  const Shape& lens = ctx.shape(1);
  if (lens.size() != 1 || lens[0] != x[static_cast<size_t>(batch_axis)])
    return ctx.error("{}: sequence_lens {} must be 1-D with the batch size {}", op,
                     shape_to_string(lens), x[static_cast<size_t>(batch_axis)]);
  if (const Tensor* c = ctx.constant(1))
    for (int64_t i = 0; i < c->numel(); ++i)
      if (c->get_i64(i) < 0 || c->get_i64(i) > x[static_cast<size_t>(time_axis)])
        return ctx.error("{}: sequence_lens[{}] = {} is outside [0, {}]", op, i, c->get_i64(i),
                         x[static_cast<size_t>(time_axis)]);
  return same_as_input(ctx, 0);
}

// X [N, C, H, W], rois [R, 4], batch_indices [R] -> [R, C, output_height, output_width]
Status infer_RoiAlign(ShapeContext& ctx) {
  const char* op = "RoiAlign";
  RETURN_IF_ERROR(require_float(ctx, 0, op, "X"));
  RETURN_IF_ERROR(require_float(ctx, 1, op, "rois"));
  ASSIGN_OR_RETURN(RoiAlignParams p, roi_align_params(ctx.attrs()));
  const Shape& x = ctx.shape(0);
  const Shape& rois = ctx.shape(1);
  const Shape& idx = ctx.shape(2);
  if (x.size() != 4) return ctx.error("{}: X must be [N, C, H, W], got {}", op, shape_to_string(x));
  if (rois.size() != 2 || rois[1] != 4)
    return ctx.error("{}: rois must be [num_rois, 4], got {}", op, shape_to_string(rois));
  if (!is_integer(ctx.dtype(2)) || idx.size() != 1 || idx[0] != rois[0])
    return ctx.error("{}: batch_indices must be integers of shape [{}], got {} {}", op, rois[0],
                     dtype_name(ctx.dtype(2)), shape_to_string(idx));
  if (const Tensor* c = ctx.constant(2))
    for (int64_t i = 0; i < c->numel(); ++i)
      if (c->get_i64(i) < 0 || c->get_i64(i) >= x[0])
        return ctx.error("{}: batch_indices[{}] = {} is outside [0, {})", op, i, c->get_i64(i), x[0]);
  ctx.set_output(0, ctx.dtype(0), {rois[0], x[1], p.output_height, p.output_width});
  return Status::ok_status();
}

}  // namespace graphc::ir::shape_rules
