#include "ir/conv_geometry.h"

#include <cstring>
#include <limits>
#include <string>

namespace graphc::ir {

namespace {

using i128 = __int128;

std::string list(const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

const char* op_label(bool transpose) { return transpose ? "ConvTranspose" : "Conv"; }

// Reads an ints attribute that, when present, must have `expected` entries.
Expected<std::vector<int64_t>> per_dim_attr(const AttributeMap& attrs, const char* name,
                                            size_t expected, int64_t def, const char* what) {
  const Attribute* a = attrs.find(name);
  if (!a) return std::vector<int64_t>(expected, def);
  if (a->kind != Attribute::Kind::kInts)
    return invalid_model("attribute '{}' must be a list of ints, got {}", name,
                         attribute_kind_name(a->kind));
  if (a->ints.size() != expected)
    return invalid_model("attribute '{}' = {} has {} entries; expected {} ({})", name,
                         list(a->ints), a->ints.size(), expected, what);
  return a->ints;
}

// Floor division (the spec's total_padding split is written with Python's //).
int64_t floor_div2(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

bool fits(i128 v) {
  return v >= std::numeric_limits<int64_t>::min() && v <= std::numeric_limits<int64_t>::max();
}

}  // namespace

bool is_channels_last(const AttributeMap& attrs) {
  return attrs.get_int(kChannelsLastAttr, 0) != 0;
}

Shape to_channels_last(const Shape& s) {
  if (s.size() < 2) return s;
  Shape out{s[0]};
  out.insert(out.end(), s.begin() + 2, s.end());
  out.push_back(s[1]);
  return out;
}

Shape to_channels_first(const Shape& s) {
  if (s.size() < 2) return s;
  Shape out{s[0], s.back()};
  out.insert(out.end(), s.begin() + 1, s.end() - 1);
  return out;
}

namespace {
// Moves axis 1 of `t` last (to_last) or the last axis to 1, byte for byte.
Tensor move_channel_axis(const Tensor& t, bool to_last) {
  const Shape& s = t.shape();
  Tensor out(t.dtype(), to_last ? to_channels_last(s) : to_channels_first(s));
  const Shape& first = to_last ? s : out.shape();  // the [N, C, D...] view
  const auto n = static_cast<size_t>(first[0]);
  const auto c = static_cast<size_t>(first[1]);
  const size_t plane = n * c == 0 ? 0 : static_cast<size_t>(t.numel()) / (n * c);
  const size_t elem = dtype_size(t.dtype());
  const uint8_t* src = t.data();
  uint8_t* dst = out.mutable_data();
  for (size_t b = 0; b < n; ++b)
    for (size_t ch = 0; ch < c; ++ch)
      for (size_t i = 0; i < plane; ++i) {
        const size_t nchw = (b * c + ch) * plane + i, nhwc = (b * plane + i) * c + ch;
        std::memcpy(dst + (to_last ? nhwc : nchw) * elem, src + (to_last ? nchw : nhwc) * elem,
                    elem);
      }
  return out;
}
}  // namespace

Tensor to_channels_last(const Tensor& t) { return move_channel_axis(t, true); }
Tensor to_channels_first(const Tensor& t) { return move_channel_axis(t, false); }

std::vector<int64_t> channels_last_perm(size_t rank) {
  std::vector<int64_t> p{0};
  for (size_t i = 2; i < rank; ++i) p.push_back(static_cast<int64_t>(i));
  p.push_back(1);
  return p;
}

std::vector<int64_t> channels_first_perm(size_t rank) {
  std::vector<int64_t> p{0, static_cast<int64_t>(rank) - 1};
  for (size_t i = 1; i + 1 < rank; ++i) p.push_back(static_cast<int64_t>(i));
  return p;
}

Shape ConvGeometry::output_shape() const {
  Shape s{batch, out_channels};
  s.insert(s.end(), out_spatial.begin(), out_spatial.end());
  return channels_last ? to_channels_last(s) : s;
}

Expected<ConvGeometry> resolve_conv_geometry(const AttributeMap& attrs, const Shape& x_in,
                                             const Shape& w_in, const Shape* bias, bool transpose) {
  const char* op = op_label(transpose);
  ConvGeometry g;
  g.transpose = transpose;
  g.channels_last = is_channels_last(attrs);
  if (g.channels_last && transpose)
    return invalid_model("{}: '{}' is set on a ConvTranspose (Conv only)", op, kChannelsLastAttr);
  const Shape x = g.channels_last ? to_channels_first(x_in) : x_in;
  const Shape w = g.channels_last ? to_channels_first(w_in) : w_in;
  if (x.size() < 3)
    return invalid_model(
        "{} input X has shape {} (rank {}); it must be N x C x D1 x ... (rank >= 3)", op,
        shape_to_string(x), x.size());
  if (w.size() != x.size())
    return invalid_model(
        "{} weight W has rank {} (shape {}), but X has rank {} (shape {}); "
        "they must be equal",
        op, w.size(), shape_to_string(w), x.size(), shape_to_string(x));
  const size_t S = x.size() - 2;
  g.batch = x[0];
  g.in_channels = x[1];
  g.in_spatial.assign(x.begin() + 2, x.end());
  g.kernel.assign(w.begin() + 2, w.end());
  for (size_t i = 0; i < S; ++i)
    if (g.kernel[i] <= 0)
      return invalid_model("{} weight W has shape {}: kernel dim {} is {}; it must be > 0", op,
                           shape_to_string(w), i, g.kernel[i]);

  // group and channels.
  if (const Attribute* a = attrs.find("group"); a && a->kind != Attribute::Kind::kInt)
    return invalid_model("attribute 'group' must be an int");
  g.group = attrs.get_int("group", 1);
  if (g.group < 1) return invalid_model("attribute 'group' = {} must be >= 1", g.group);
  if (!transpose) {
    // W: M x C/group x k1 x ...
    if (static_cast<i128>(w[1]) * g.group != g.in_channels)
      return invalid_model(
          "Conv: X has {} channels, but W has shape {} and group = {}: W.shape[1] ({}) * group "
          "must equal the input channels",
          g.in_channels, shape_to_string(w), g.group, w[1]);
    g.out_channels = w[0];
    if (g.out_channels % g.group != 0)
      return invalid_model("Conv: W.shape[0] = {} output channels is not divisible by group = {}",
                           w[0], g.group);
  } else {
    // W: C x M/group x k1 x ...
    if (w[0] != g.in_channels)
      return invalid_model(
          "ConvTranspose: X has {} channels, but W has shape {}: W.shape[0] must equal the input "
          "channels",
          g.in_channels, shape_to_string(w));
    if (g.in_channels % g.group != 0)
      return invalid_model("ConvTranspose: input channels {} are not divisible by group = {}",
                           g.in_channels, g.group);
    if (!fits(static_cast<i128>(w[1]) * g.group))
      return invalid_model("ConvTranspose: W.shape[1] * group overflows");
    g.out_channels = w[1] * g.group;
  }
  if (bias) {
    if (bias->size() != 1 || (*bias)[0] != g.out_channels)
      return invalid_model(
          "{} bias B has shape {}; it must be 1-D with {} (output channels) "
          "elements",
          op, shape_to_string(*bias), g.out_channels);
  }

  // kernel_shape, when given, must agree with W.
  if (attrs.has("kernel_shape")) {
    ASSIGN_OR_RETURN(auto ks, per_dim_attr(attrs, "kernel_shape", S, 1, "one per spatial dim"));
    if (ks != g.kernel)
      return invalid_model(
          "attribute 'kernel_shape' = {} does not match W's spatial dims {} "
          "(W has shape {})",
          list(ks), list(g.kernel), shape_to_string(w));
  }
  ASSIGN_OR_RETURN(g.strides, per_dim_attr(attrs, "strides", S, 1, "one per spatial dim"));
  ASSIGN_OR_RETURN(g.dilations, per_dim_attr(attrs, "dilations", S, 1, "one per spatial dim"));
  for (size_t i = 0; i < S; ++i) {
    if (g.strides[i] < 1)
      return invalid_model("attribute 'strides' = {}: entry {} is {}; strides must be >= 1",
                           list(g.strides), i, g.strides[i]);
    if (g.dilations[i] < 1)
      return invalid_model("attribute 'dilations' = {}: entry {} is {}; dilations must be >= 1",
                           list(g.dilations), i, g.dilations[i]);
  }
  ASSIGN_OR_RETURN(auto pads,
                   per_dim_attr(attrs, "pads", 2 * S, 0, "begin and end for each spatial dim"));
  for (size_t i = 0; i < 2 * S; ++i)
    if (pads[i] < 0)
      return invalid_model("attribute 'pads' = {}: entry {} is {}; pads must be >= 0", list(pads),
                           i, pads[i]);
  if (const Attribute* a = attrs.find("auto_pad"); a && a->kind != Attribute::Kind::kString)
    return invalid_model("attribute 'auto_pad' must be a string");
  std::string auto_pad = attrs.get_string("auto_pad", "NOTSET");
  if (auto_pad.empty()) auto_pad = "NOTSET";
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" &&
      auto_pad != "VALID")
    return invalid_model(
        "attribute 'auto_pad' = '{}'; expected NOTSET, SAME_UPPER, SAME_LOWER or VALID", auto_pad);
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (auto_pad == "VALID") pads.assign(2 * S, 0);

  g.pads_begin.assign(S, 0);
  g.pads_end.assign(S, 0);
  g.out_spatial.assign(S, 0);

  std::vector<int64_t> out_pad(S, 0);
  if (transpose) {
    ASSIGN_OR_RETURN(out_pad, per_dim_attr(attrs, "output_padding", S, 0, "one per spatial dim"));
    for (size_t i = 0; i < S; ++i)
      if (out_pad[i] < 0)
        return invalid_model("attribute 'output_padding' = {}: entry {} is {}; it must be >= 0",
                             list(out_pad), i, out_pad[i]);
  }
  std::vector<int64_t> requested_out;  // ConvTranspose output_shape (spatial dims)
  if (transpose && attrs.has("output_shape")) {
    const Attribute* a = attrs.find("output_shape");
    if (a->kind != Attribute::Kind::kInts)
      return invalid_model("attribute 'output_shape' must be a list of ints");
    requested_out = a->ints;
    // Older exporters sometimes write the full N x M x D... shape.
    if (requested_out.size() == S + 2)
      requested_out.erase(requested_out.begin(), requested_out.begin() + 2);
    if (requested_out.size() != S)
      return invalid_model(
          "attribute 'output_shape' = {} has {} entries; expected {} (one per "
          "spatial dim)",
          list(a->ints), a->ints.size(), S);
    for (size_t i = 0; i < S; ++i)
      if (requested_out[i] <= 0)
        return invalid_model("attribute 'output_shape' = {}: entry {} is {}; it must be > 0",
                             list(a->ints), i, requested_out[i]);
  }

  for (size_t i = 0; i < S; ++i) {
    const i128 in = g.in_spatial[i];
    const i128 s = g.strides[i];
    const i128 k_eff = static_cast<i128>(g.kernel[i] - 1) * g.dilations[i] + 1;
    i128 out = 0, pb = pads[i], pe = pads[i + S];
    if (!transpose) {
      if (same) {
        out = (in + s - 1) / s;
        i128 total = (out - 1) * s + k_eff - in;
        if (total < 0) total = 0;
        i128 small = total / 2;
        pb = auto_pad == "SAME_UPPER" ? small : total - small;
        pe = total - pb;
      } else {
        i128 span = in + pb + pe - k_eff;
        out = span < 0 ? 0 : span / s + 1;
      }
    } else {
      if (!requested_out.empty() || same) {
        out = !requested_out.empty() ? static_cast<i128>(requested_out[i]) : in * s;
        i128 total = s * (in - 1) + out_pad[i] + k_eff - out;
        if (!fits(total)) return invalid_model("ConvTranspose: padding arithmetic overflows");
        // Spec: SAME_UPPER puts total/2 at the start, otherwise at the end.
        i128 half = floor_div2(static_cast<int64_t>(total));
        pb = auto_pad == "SAME_UPPER" ? half : total - half;
        pe = total - pb;
      } else {
        out = s * (in - 1) + out_pad[i] + k_eff - pb - pe;
      }
    }
    if (!fits(out) || !fits(pb) || !fits(pe))
      return invalid_model("{}: output size arithmetic overflows for spatial dim {}", op, i);
    if (out <= 0)
      return invalid_model(
          "{}: spatial dim {} of the output would be {} (input {}, kernel {}, dilation {}, stride "
          "{}, pads {}+{}); it must be > 0",
          op, i, static_cast<int64_t>(out), g.in_spatial[i], g.kernel[i], g.dilations[i],
          g.strides[i], static_cast<int64_t>(pb), static_cast<int64_t>(pe));
    g.out_spatial[i] = static_cast<int64_t>(out);
    g.pads_begin[i] = static_cast<int64_t>(pb);
    g.pads_end[i] = static_cast<int64_t>(pe);
  }
  return g;
}

}  // namespace graphc::ir
