#include "ir/pool_resize_params.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace graphc::ir {

namespace {

// Attribute values beyond this are rejected so that window arithmetic
// ((k-1)*d, o*s, in+pads) cannot overflow int64.
constexpr int64_t kMaxPoolAttr = (int64_t{1} << 31) - 1;

Expected<std::vector<int64_t>> ints_attr(const char* op, const AttributeMap& attrs,
                                         const char* name, size_t expected_len, int64_t fill,
                                         int64_t min_value) {
  const Attribute* a = attrs.find(name);
  if (!a) return std::vector<int64_t>(expected_len, fill);
  if (a->kind != Attribute::Kind::kInts)
    return invalid_model("{}: attribute '{}' must be a list of ints", op, name);
  if (a->ints.size() != expected_len)
    return invalid_model("{}: attribute '{}' has {} values, expected {}", op, name, a->ints.size(),
                         expected_len);
  for (size_t i = 0; i < a->ints.size(); ++i) {
    int64_t v = a->ints[i];
    if (v < min_value || v > kMaxPoolAttr)
      return invalid_model("{}: {}[{}] = {} is out of range (must be in [{}, {}])", op, name, i, v,
                           min_value, kMaxPoolAttr);
  }
  return a->ints;
}

Expected<bool> bool_attr(const char* op, const AttributeMap& attrs, const char* name) {
  int64_t v = attrs.get_int(name, 0);
  if (v != 0 && v != 1)
    return invalid_model("{}: attribute '{}' must be 0 or 1, got {}", op, name, v);
  return v == 1;
}

// Rounding divisions for b > 0 and any sign of a.
int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

}  // namespace

Expected<PoolParams> pool_params(const char* op, const AttributeMap& attrs, const Shape& x,
                                 bool require_nonempty_windows) {
  if (x.size() < 3)
    return invalid_model("{}: input X must have rank >= 3 (N x C x spatial dims), got rank {} ({})",
                         op, x.size(), shape_to_string(x));
  PoolParams p;
  const auto sr = static_cast<int64_t>(x.size()) - 2;
  const auto n = static_cast<size_t>(sr);
  p.spatial_rank = sr;
  if (!attrs.has("kernel_shape"))
    return invalid_model("{}: required attribute 'kernel_shape' is missing", op);
  ASSIGN_OR_RETURN(p.kernel, ints_attr(op, attrs, "kernel_shape", n, 1, 1));
  ASSIGN_OR_RETURN(p.strides, ints_attr(op, attrs, "strides", n, 1, 1));
  ASSIGN_OR_RETURN(p.dilations, ints_attr(op, attrs, "dilations", n, 1, 1));
  ASSIGN_OR_RETURN(auto pads, ints_attr(op, attrs, "pads", 2 * n, 0, 0));
  ASSIGN_OR_RETURN(bool ceil_mode, bool_attr(op, attrs, "ceil_mode"));
  ASSIGN_OR_RETURN(p.count_include_pad, bool_attr(op, attrs, "count_include_pad"));
  ASSIGN_OR_RETURN(bool column_major, bool_attr(op, attrs, "storage_order"));
  p.storage_order = column_major ? 1 : 0;
  std::string auto_pad = attrs.get_string("auto_pad", "NOTSET");
  if (auto_pad.empty()) auto_pad = "NOTSET";
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" &&
      auto_pad != "VALID")
    return invalid_model("{}: auto_pad '{}' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", op,
                         auto_pad);

  p.pad_begin.assign(n, 0);
  p.pad_end.assign(n, 0);
  p.out_spatial.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const int64_t in = x[i + 2], k = p.kernel[i], s = p.strides[i], d = p.dilations[i];
    const int64_t extent = (k - 1) * d + 1;  // dilated window
    int64_t out = 0;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // pads (if any) are ignored: auto_pad decides the padding.
      out = ceil_div(in, s);
      int64_t total = std::max<int64_t>(0, (out - 1) * s + extent - in);
      int64_t small = total / 2, large = total - small;
      p.pad_begin[i] = auto_pad == "SAME_UPPER" ? small : large;
      p.pad_end[i] = auto_pad == "SAME_UPPER" ? large : small;
    } else if (auto_pad == "VALID") {
      out = floor_div(in - extent, s) + 1;
    } else {
      p.pad_begin[i] = pads[i];
      p.pad_end[i] = pads[i + n];
      // The spec's floor/ceil((in + pads - extent) / stride + 1); the span may
      // be negative (kernel larger than the padded input): floor mode then
      // gives 0 (an empty output) and ceil mode may still give one window.
      const int64_t span = in + p.pad_begin[i] + p.pad_end[i] - extent;
      if (ceil_mode) {
        out = ceil_div(span, s) + 1;
        // The last window must start inside the input or the left padding.
        if (out > 0 && (out - 1) * s >= in + p.pad_begin[i]) --out;
      } else {
        out = floor_div(span, s) + 1;
      }
    }
    if (out < 0)
      return invalid_model(
          "{}: spatial dim {} of X is {} (pads {}+{}), too small for the dilated kernel extent {} "
          "with stride {}",
          op, i, in, p.pad_begin[i], p.pad_end[i], extent, s);
    if (require_nonempty_windows) {
      for (int64_t o = 0; o < out; ++o) {
        int64_t start = o * s - p.pad_begin[i];
        int64_t j0 = start >= 0 ? 0 : ceil_div(-start, d);  // first tap at or after 0
        if (j0 >= k || start + j0 * d >= in)
          return invalid_model(
              "{}: pooling window {} along spatial dim {} lies entirely in the padding (input {}, "
              "pads {}+{}, kernel {}, dilation {})",
              op, o, i, in, p.pad_begin[i], p.pad_end[i], k, d);
      }
    }
    p.out_spatial[i] = out;
  }
  p.out_shape = {x[0], x[1]};
  p.out_shape.insert(p.out_shape.end(), p.out_spatial.begin(), p.out_spatial.end());
  return p;
}

Expected<ResizeParams> resize_params(const AttributeMap& attrs, const Shape& x, const Tensor* roi,
                                     const Tensor* scales, const Tensor* sizes) {
  using P = ResizeParams;
  P p;
  const auto r = static_cast<int64_t>(x.size());
  if (r == 0) return invalid_model("Resize: input X must have rank >= 1, got a scalar");

  const std::string mode = attrs.get_string("mode", "nearest");
  if (mode == "nearest") {
    p.mode = P::Mode::kNearest;
  } else if (mode == "linear") {
    p.mode = P::Mode::kLinear;
  } else if (mode == "cubic") {
    p.mode = P::Mode::kCubic;
  } else {
    return invalid_model("Resize: mode '{}' is not nearest, linear or cubic", mode);
  }
  const std::string coord = attrs.get_string("coordinate_transformation_mode", "half_pixel");
  static const std::pair<const char*, P::Coord> kCoords[] = {
      {"half_pixel", P::Coord::kHalfPixel},
      {"half_pixel_symmetric", P::Coord::kHalfPixelSymmetric},
      {"pytorch_half_pixel", P::Coord::kPytorchHalfPixel},
      {"align_corners", P::Coord::kAlignCorners},
      {"asymmetric", P::Coord::kAsymmetric},
      {"tf_crop_and_resize", P::Coord::kTfCropAndResize},
      {"tf_half_pixel_for_nn", P::Coord::kTfHalfPixelForNN},
  };
  bool found = false;
  for (const auto& [name, value] : kCoords)
    if (coord == name) p.coord = value, found = true;
  if (!found) return invalid_model("Resize: coordinate_transformation_mode '{}' is unknown", coord);
  const std::string nearest = attrs.get_string("nearest_mode", "round_prefer_floor");
  if (nearest == "round_prefer_floor") {
    p.nearest = P::Nearest::kRoundPreferFloor;
  } else if (nearest == "round_prefer_ceil") {
    p.nearest = P::Nearest::kRoundPreferCeil;
  } else if (nearest == "floor") {
    p.nearest = P::Nearest::kFloor;
  } else if (nearest == "ceil") {
    p.nearest = P::Nearest::kCeil;
  } else {
    return invalid_model("Resize: nearest_mode '{}' is unknown", nearest);
  }
  ASSIGN_OR_RETURN(p.exclude_outside, bool_attr("Resize", attrs, "exclude_outside"));
  ASSIGN_OR_RETURN(bool antialias, bool_attr("Resize", attrs, "antialias"));
  p.antialias = antialias && p.mode != P::Mode::kNearest;
  p.cubic_coeff_a = attrs.get_float("cubic_coeff_a", -0.75);
  if (!std::isfinite(p.cubic_coeff_a))
    return invalid_model("Resize: attribute 'cubic_coeff_a' must be finite, got {}",
                         p.cubic_coeff_a);
  p.extrapolation_value = attrs.get_float("extrapolation_value", 0.0);
  const std::string policy = attrs.get_string("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    return invalid_model(
        "Resize: keep_aspect_ratio_policy '{}' is not stretch, not_larger or not_smaller", policy);

  if (const Attribute* a = attrs.find("axes")) {
    if (a->kind != Attribute::Kind::kInts)
      return invalid_model("Resize: attribute 'axes' must be a list of ints");
    std::set<int64_t> seen;
    for (int64_t axis : a->ints) {
      if (axis < -r || axis >= r)
        return invalid_model("Resize: axes value {} is out of range for rank {}", axis, r);
      int64_t ax = axis < 0 ? axis + r : axis;
      if (!seen.insert(ax).second)
        return invalid_model("Resize: axis {} is repeated in axes", axis);
      p.axes.push_back(ax);
    }
  } else {
    for (int64_t i = 0; i < r; ++i) p.axes.push_back(i);
  }
  const size_t na = p.axes.size();

  if (scales && scales->numel() == 0) scales = nullptr;
  if (sizes && sizes->numel() == 0) sizes = nullptr;
  if (roi && roi->numel() == 0) roi = nullptr;
  if (scales && sizes)
    return invalid_model("Resize: both scales and sizes are given; give only one");
  if (!scales && !sizes) return invalid_model("Resize: one of scales and sizes must be given");

  p.scales.assign(static_cast<size_t>(r), 1.0);
  p.out_shape = x;
  if (scales) {
    if (!is_float(scales->dtype()))
      return invalid_model("Resize: scales must be a float tensor, got {}",
                           dtype_name(scales->dtype()));
    if (scales->rank() != 1 || static_cast<size_t>(scales->numel()) != na)
      return invalid_model("Resize: scales has shape {}, expected {} values (one per {})",
                           shape_to_string(scales->shape()), na,
                           attrs.has("axes") ? "axis in axes" : "dim of X");
    // keep_aspect_ratio_policy applies to sizes only; with scales it has no effect.
    for (size_t i = 0; i < na; ++i) {
      const double s = scales->get_f64(static_cast<int64_t>(i));
      if (!std::isfinite(s) || s <= 0)
        return invalid_model("Resize: scales[{}] = {} must be a finite value > 0", i, s);
      const auto d = static_cast<size_t>(p.axes[i]);
      const double out = std::floor(static_cast<double>(x[d]) * s);
      if (out > static_cast<double>(int64_t{1} << 40))
        return invalid_model("Resize: scales[{}] = {} gives an output dim that is too large", i, s);
      p.scales[d] = s;
      p.out_shape[d] = static_cast<int64_t>(out);
    }
  } else {
    if (!is_integer(sizes->dtype()))
      return invalid_model("Resize: sizes must be an int64 tensor, got {}",
                           dtype_name(sizes->dtype()));
    if (sizes->rank() != 1 || static_cast<size_t>(sizes->numel()) != na)
      return invalid_model("Resize: sizes has shape {}, expected {} values (one per {})",
                           shape_to_string(sizes->shape()), na,
                           attrs.has("axes") ? "axis in axes" : "dim of X");
    std::vector<double> ratio(na);
    for (size_t i = 0; i < na; ++i) {
      const int64_t sz = sizes->get_i64(static_cast<int64_t>(i));
      const auto d = static_cast<size_t>(p.axes[i]);
      if (sz < 0 || sz > (int64_t{1} << 40))
        return invalid_model("Resize: sizes[{}] = {} is out of range", i, sz);
      if (x[d] == 0 && sz != 0)
        return invalid_model("Resize: dim {} of X is 0 and cannot be resized to {}", d, sz);
      ratio[i] = x[d] == 0 ? 1.0 : static_cast<double>(sz) / static_cast<double>(x[d]);
      p.scales[d] = ratio[i];
      p.out_shape[d] = sz;
    }
    if (policy != "stretch") {
      double s = ratio[0];
      for (double v : ratio) s = policy == "not_larger" ? std::min(s, v) : std::max(s, v);
      for (size_t i = 0; i < na; ++i) {
        const auto d = static_cast<size_t>(p.axes[i]);
        p.scales[d] = s;
        // round_int: nearest integer, halfway cases up.
        p.out_shape[d] = static_cast<int64_t>(std::floor(s * static_cast<double>(x[d]) + 0.5));
      }
    }
  }

  p.roi_start.assign(static_cast<size_t>(r), 0.0);
  p.roi_end.assign(static_cast<size_t>(r), 1.0);
  if (p.coord == P::Coord::kTfCropAndResize) {
    if (!roi)
      return invalid_model("Resize: coordinate_transformation_mode tf_crop_and_resize needs roi");
    if (!is_float(roi->dtype()))
      return invalid_model("Resize: roi must be a float tensor, got {}", dtype_name(roi->dtype()));
    if (roi->rank() != 1 || static_cast<size_t>(roi->numel()) != 2 * na)
      return invalid_model("Resize: roi has shape {}, expected {} values (starts then ends)",
                           shape_to_string(roi->shape()), 2 * na);
    for (size_t i = 0; i < na; ++i) {
      const auto d = static_cast<size_t>(p.axes[i]);
      p.roi_start[d] = roi->get_f64(static_cast<int64_t>(i));
      p.roi_end[d] = roi->get_f64(static_cast<int64_t>(i + na));
      if (!std::isfinite(p.roi_start[d]) || !std::isfinite(p.roi_end[d]))
        return invalid_model("Resize: roi for axis {} is not finite", d);
    }
  }
  return p;
}

}  // namespace graphc::ir
