// Reference kernels of the quantization ops: QuantizeLinear, DequantizeLinear
// (per-tensor, per-axis and blocked scales), DynamicQuantizeLinear, and the
// integer contractions MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv.
// Rounding follows ONNX's reference: the quotient x / scale in the inputs'
// float type, then round half to even; requantization in float64 with the
// multiplier x_scale * w_scale / y_scale rounded in the scales' type. The
// integer contractions run the float64 MatMul/Conv kernels on zero-point-
// shifted values, exact while |sum| < 2^53.
#include <cmath>
#include <cstring>

#include "ir/conv_geometry.h"
#include "ir/quantize_params.h"
#include "reference/kernels.h"
#include "support/half.h"

namespace graphc::reference::kernels {

namespace {

using ir::DType;
using ir::Shape;
using ir::Tensor;

// v rounded to the precision of the float type t (numpy's result type).
double round_to(DType t, double v) {
  switch (t) {
    case DType::kFloat32: return static_cast<float>(v);
    case DType::kFloat16: return half_bits_to_float(float_to_half_bits(static_cast<float>(v)));
    case DType::kBFloat16: return bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(v)));
    default: return v;
  }
}

// numpy's result type of two float operands (same type, else the wider one).
DType float_result(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::kFloat64 || b == DType::kFloat64) return DType::kFloat64;
  return DType::kFloat32;
}

// The flat scale/zero-point index of every element of x.
std::vector<int64_t> param_offsets(const Shape& x, const Shape& param,
                                   const ir::QuantizeLayout& layout) {
  const int64_t n = ir::shape_numel(x);
  std::vector<int64_t> offs(static_cast<size_t>(n), 0);
  if (layout.per_tensor || n == 0) return offs;
  auto xs = strides_of(x);
  auto ps = strides_of(param);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, off = 0;
    for (size_t d = 0; d < x.size(); ++d) {
      int64_t idx = rem / xs[d];
      rem %= xs[d];
      if (layout.block_size > 0) {
        off += (static_cast<int64_t>(d) == layout.axis ? idx / layout.block_size : idx) * ps[d];
      } else if (static_cast<int64_t>(d) == layout.axis) {
        off = idx;
      }
    }
    offs[static_cast<size_t>(i)] = off;
  }
  return offs;
}

// Stores the rounded value q (+ zero point) into the quantized type.
void store_quantized(Tensor& y, int64_t i, double q, bool saturate) {
  const DType t = y.dtype();
  if (auto mf = ir::minifloat_of(t)) {
    y.mutable_data()[i] = double_to_minifloat(*mf, q, saturate || t == DType::kFloat4E2M1);
    return;
  }
  auto [lo, hi] = ir::quantized_range(t);
  q = std::isnan(q) ? 0 : std::min(std::max(q, static_cast<double>(lo)), static_cast<double>(hi));
  y.set_i64(i, static_cast<int64_t>(q));
}

}  // namespace

Status run_QuantizeLinear(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& scale = ctx.in(1);
  const Tensor* zp = ctx.has_input(2) ? &ctx.in(2) : nullptr;
  Tensor& y = ctx.out(0);
  ASSIGN_OR_RETURN(auto layout, ir::quantize_layout(ctx.attrs(), x.shape(), scale.shape(),
                                                    "QuantizeLinear"));
  const auto offs = param_offsets(x.shape(), scale.shape(), layout);
  const bool saturate = ctx.attrs().get_int("saturate", 1) != 0;
  DType qt = float_result(x.dtype(), scale.dtype());
  if (const auto* p = ctx.attrs().find("precision"); p && p->i != 0)
    qt = static_cast<DType>(p->i);
  const bool is_fp = ir::is_narrow_float(y.dtype());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t o = offs[static_cast<size_t>(i)];
    double v = round_to(qt, x.get_f64(i) / round_to(qt, scale.get_f64(o)));
    double z = zp ? zp->get_f64(o) : 0.0;
    if (is_fp) {
      // float8: no zero point (it must be 0); float4: added before the cast.
      store_quantized(y, i, y.dtype() == DType::kFloat4E2M1 ? v + z : v, saturate);
    } else {
      store_quantized(y, i, std::nearbyint(v) + z, saturate);  // round half to even
    }
  }
  return Status::ok_status();
}

Status run_DequantizeLinear(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& scale = ctx.in(1);
  const Tensor* zp = ctx.has_input(2) ? &ctx.in(2) : nullptr;
  Tensor& y = ctx.out(0);
  ASSIGN_OR_RETURN(auto layout, ir::quantize_layout(ctx.attrs(), x.shape(), scale.shape(),
                                                    "DequantizeLinear"));
  const auto offs = param_offsets(x.shape(), scale.shape(), layout);
  const bool use_zp = zp && !ir::is_narrow_float(x.dtype());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t o = offs[static_cast<size_t>(i)];
    // ONNX computes in float32: (float(x) - zp) * scale.
    float dx = static_cast<float>(x.get_f64(i));
    if (use_zp) dx = dx - static_cast<float>(zp->get_f64(o));
    y.set_f64(i, static_cast<double>(dx * static_cast<float>(scale.get_f64(o))));
  }
  return Status::ok_status();
}

Status run_DynamicQuantizeLinear(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  Tensor& y_scale = ctx.out(1);
  Tensor& y_zp = ctx.out(2);
  // Range includes 0; computed in float32 as ONNX's reference does.
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    float v = static_cast<float>(x.get_f64(i));
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  const float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
  const float zp_f = std::nearbyint(std::min(255.0f, std::max(0.0f, 0.0f - lo / scale)));
  y_scale.set_f64(0, scale);
  y_zp.set_i64(0, static_cast<int64_t>(zp_f));
  for (int64_t i = 0; i < x.numel(); ++i) {
    float q = std::nearbyint(static_cast<float>(x.get_f64(i)) / scale) + zp_f;
    y.set_i64(i, static_cast<int64_t>(std::min(255.0f, std::max(0.0f, q))));
  }
  return Status::ok_status();
}

namespace {

// x - zero_point as float64, the zero point per tensor or along `axis` of x
// (a 1-D zero point of that axis's length).
Expected<Tensor> shifted(const Tensor& x, const Tensor* zp, int64_t axis, const char* op,
                         const char* what) {
  Tensor out(DType::kFloat64, x.shape());
  const int64_t n = x.numel();
  if (!zp || zp->numel() == 1) {
    double z = zp ? zp->get_f64(0) : 0.0;
    for (int64_t i = 0; i < n; ++i) out.set_f64(i, x.get_f64(i) - z);
    return out;
  }
  if (axis < 0 || axis >= x.rank() || zp->numel() != x.shape()[static_cast<size_t>(axis)])
    return invalid_model("{}: {} zero point of shape {} does not match input shape {}", op, what,
                         ir::shape_to_string(zp->shape()), ir::shape_to_string(x.shape()));
  auto st = strides_of(x.shape());
  const int64_t extent = x.shape()[static_cast<size_t>(axis)];
  for (int64_t i = 0; i < n; ++i)
    out.set_f64(i, x.get_f64(i) - zp->get_f64((i / st[static_cast<size_t>(axis)]) % extent));
  return out;
}

// Runs the float64 reference kernel `op` on (a, b) into a float64 tensor of `shape`.
Expected<Tensor> run_f64(ir::OpKind op, const ir::AttributeMap& attrs, const Tensor& a,
                         const Tensor& b, const Shape& shape) {
  ir::Node node;
  node.op = op;
  node.attrs = attrs;
  KernelContext sub{node, {&a, &b}, {}};
  sub.outputs.emplace_back(DType::kFloat64, shape);
  Status st = op == ir::OpKind::Conv ? run_Conv(sub) : run_MatMul(sub);
  RETURN_IF_ERROR(st);
  return std::move(sub.outputs[0]);
}

// Requantizes an exact integer accumulator: round(acc * multiplier) + zp, clipped.
void requantize(const Tensor& acc, const std::vector<double>& multiplier, int64_t channel_stride,
                int64_t channels, double zp, Tensor& y) {
  auto [lo, hi] = ir::quantized_range(y.dtype());
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t c = multiplier.size() == 1 ? 0 : (i / channel_stride) % channels;
    double r = acc.get_f64(i) * multiplier[static_cast<size_t>(c)] + zp;
    r = std::min(std::max(r, static_cast<double>(lo)), static_cast<double>(hi));
    y.set_i64(i, static_cast<int64_t>(std::nearbyint(r)));
  }
}

// x_scale * w_scale / y_scale, rounded in the scales' float type, per w channel.
std::vector<double> multipliers(const Tensor& xs, const Tensor& ws, const Tensor& ys) {
  const DType t = float_result(float_result(xs.dtype(), ws.dtype()), ys.dtype());
  std::vector<double> m(static_cast<size_t>(ws.numel()));
  for (int64_t c = 0; c < ws.numel(); ++c)
    m[static_cast<size_t>(c)] =
        round_to(t, round_to(t, xs.get_f64(0) * ws.get_f64(c)) / ys.get_f64(0));
  return m;
}

}  // namespace

Status run_MatMulInteger(KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  // a's zero point runs along its rows (axis -2), b's along its columns (-1;
  // -2 for a b stored transposed: graphc's _trans_b).
  const bool trans_b = ctx.attrs().get_int("_trans_b", 0) != 0;
  if (trans_b && b.rank() < 2) return invalid_model("MatMulInteger: _trans_b needs B of rank >= 2");
  ASSIGN_OR_RETURN(Tensor af, shifted(a, ctx.has_input(2) ? &ctx.in(2) : nullptr,
                                      a.rank() >= 2 ? a.rank() - 2 : 0, "MatMulInteger", "a"));
  ASSIGN_OR_RETURN(Tensor bf, shifted(b, ctx.has_input(3) ? &ctx.in(3) : nullptr,
                                      b.rank() - (trans_b ? 2 : 1), "MatMulInteger", "b"));
  ir::AttributeMap mm;
  if (trans_b) mm.set("_trans_b", ir::Attribute::of_int(1));
  ASSIGN_OR_RETURN(Tensor acc, run_f64(ir::OpKind::MatMul, mm, af, bf, ctx.out(0).shape()));
  if (ir::is_float(ctx.out(0).dtype())) {
    // float8 operands (shifted() decoded them): the float64 sum times _alpha.
    const double alpha = ctx.attrs().get_float("_alpha", 1.0);
    for (int64_t i = 0; i < acc.numel(); ++i) ctx.out(0).set_f64(i, alpha * acc.get_f64(i));
    return Status::ok_status();
  }
  for (int64_t i = 0; i < acc.numel(); ++i) ctx.out(0).set_i64(i, static_cast<int64_t>(acc.get_f64(i)));
  return Status::ok_status();
}

Status run_ConvInteger(KernelContext& ctx) {
  // graphc's _pad_value p (the int8 conv's border value): the sum over valid
  // taps of (x - p) * w, plus p times every tap's weight, is the sum with the
  // border holding p.
  const int64_t pad = ctx.attrs().get_int(ir::kPadValueAttr, 0);
  if (pad != 0 && (ctx.has_input(2) || ir::is_channels_last(ctx.attrs())))
    return unsupported("ConvInteger: {} with an x zero point or channels-last", ir::kPadValueAttr);
  Tensor pad_t(DType::kFloat64, {});
  pad_t.set_f64(0, static_cast<double>(pad));
  ASSIGN_OR_RETURN(Tensor xf, shifted(ctx.in(0), ctx.has_input(2) ? &ctx.in(2) : (pad ? &pad_t : nullptr),
                                      1, "ConvInteger", "x"));
  ASSIGN_OR_RETURN(Tensor wf, shifted(ctx.in(1), ctx.has_input(3) ? &ctx.in(3) : nullptr, 0,
                                      "ConvInteger", "w"));
  ASSIGN_OR_RETURN(Tensor acc, run_f64(ir::OpKind::Conv, ctx.attrs(), xf, wf, ctx.out(0).shape()));
  if (pad != 0 && acc.rank() >= 2 && wf.rank() >= 1 && wf.shape()[0] > 0) {
    const int64_t channels = acc.shape()[1], per_channel = wf.numel() / wf.shape()[0];
    const int64_t plane = channels > 0 ? acc.numel() / std::max<int64_t>(1, acc.shape()[0]) / channels : 1;
    std::vector<double> wsum(static_cast<size_t>(wf.shape()[0]), 0.0);
    for (int64_t i = 0; i < wf.numel(); ++i) wsum[static_cast<size_t>(i / per_channel)] += wf.get_f64(i);
    for (int64_t i = 0; i < acc.numel(); ++i)
      acc.set_f64(i, acc.get_f64(i) + static_cast<double>(pad) * wsum[static_cast<size_t>((i / plane) % channels)]);
  }
  for (int64_t i = 0; i < acc.numel(); ++i) ctx.out(0).set_i64(i, static_cast<int64_t>(acc.get_f64(i)));
  return Status::ok_status();
}

// QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp).
Status run_QLinearMatMul(KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(3);
  ASSIGN_OR_RETURN(Tensor af, shifted(a, &ctx.in(2), a.rank() >= 2 ? a.rank() - 2 : 0,
                                      "QLinearMatMul", "a"));
  ASSIGN_OR_RETURN(Tensor bf, shifted(b, &ctx.in(5), b.rank() - 1, "QLinearMatMul", "b"));
  Tensor& y = ctx.out(0);
  ASSIGN_OR_RETURN(Tensor acc, run_f64(ir::OpKind::MatMul, {}, af, bf, y.shape()));
  const Tensor &as = ctx.in(1), &bs = ctx.in(4), &ys = ctx.in(6);
  if (as.numel() != 1 || ys.numel() != 1)
    return unsupported("QLinearMatMul: a_scale and y_scale must be per-tensor (one value)");
  const int64_t n = y.rank() >= 1 ? y.shape().back() : 1;
  if (bs.numel() != 1 && bs.numel() != n)
    return invalid_model("QLinearMatMul: b_scale has {} values, expected 1 or {}", bs.numel(), n);
  requantize(acc, multipliers(as, bs, ys), 1, n, ctx.in(7).get_f64(0), y);
  return Status::ok_status();
}

// QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B?).
Status run_QLinearConv(KernelContext& ctx) {
  const Tensor& w = ctx.in(3);
  ASSIGN_OR_RETURN(Tensor xf, shifted(ctx.in(0), &ctx.in(2), 1, "QLinearConv", "x"));
  ASSIGN_OR_RETURN(Tensor wf, shifted(w, &ctx.in(5), 0, "QLinearConv", "w"));
  Tensor& y = ctx.out(0);
  ASSIGN_OR_RETURN(Tensor acc, run_f64(ir::OpKind::Conv, ctx.attrs(), xf, wf, y.shape()));
  const int64_t channels = y.rank() >= 2 ? y.shape()[1] : 1;
  const int64_t plane = channels > 0 ? y.numel() / std::max<int64_t>(1, y.shape()[0]) / channels : 1;
  if (ctx.has_input(8)) {  // int32 bias, added to the accumulator
    const Tensor& bias = ctx.in(8);
    if (bias.numel() != channels)
      return invalid_model("QLinearConv: bias has {} values, expected {}", bias.numel(), channels);
    for (int64_t i = 0; i < acc.numel(); ++i)
      acc.set_f64(i, acc.get_f64(i) + bias.get_f64((i / plane) % channels));
  }
  const Tensor &xs = ctx.in(1), &ws = ctx.in(4), &ys = ctx.in(6);
  if (xs.numel() != 1 || ys.numel() != 1)
    return unsupported("QLinearConv: x_scale and y_scale must be per-tensor (one value)");
  if (ws.numel() != 1 && ws.numel() != channels)
    return invalid_model("QLinearConv: w_scale has {} values, expected 1 or {}", ws.numel(), channels);
  requantize(acc, multipliers(xs, ws, ys), plane, channels, ctx.in(7).get_f64(0), y);
  return Status::ok_status();
}

}  // namespace graphc::reference::kernels
