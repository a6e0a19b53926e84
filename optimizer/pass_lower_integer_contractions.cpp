// MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv become an int32
// MatMul/Conv on zero-point-shifted operands, which the generated GEMM/conv
// runs with exact integer accumulation; for the QLinear ops the
// requantization follows as elementwise ops that fuse-epilogues puts into the
// GEMM/conv kernel:
//   acc = MatMul|Conv(Cast(x, int32) - x_zp, Cast(w, int32) - w_zp) [+ bias]
//   y   = Cast(Round(Clip(Cast(acc, f64) * multiplier + y_zp, lo, hi)), T)
// with multiplier = x_scale * w_scale / y_scale rounded in the scales' float
// type, the arithmetic of the reference kernels (reference/kernels_quantize.cpp).
// Runs before fold-constants, so shifted weights fold to int32 constants.
// MatMulInteger(int8, int8) without zero points stays (static shapes): the
// int8 tensor-core GEMM takes it as it is (target/int8_gemm_rules.h). With
// --int8-gemm, ConvInteger/QLinearConv whose weights fit int8 after their zero
// points become the int8 tensor-core conv instead (target/int8_conv_rules.h).
#include "ir/conv_geometry.h"
#include "ir/quantize_params.h"
#include "optimizer/node_builder.h"
#include "target/int8_conv_rules.h"
#include "target/int8_gemm_rules.h"
#include "optimizer/passes.h"

namespace graphc::optimizer {

namespace {

using ir::DType;
using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::Shape;
using ir::ValueId;

bool is_integer_contraction(OpKind op) {
  return op == OpKind::MatMulInteger || op == OpKind::ConvInteger ||
         op == OpKind::QLinearMatMul || op == OpKind::QLinearConv;
}

// fuse-qdq-matmul's float8 GEMM (a MatMulInteger of float8 operands): cuBLASLt
// runs it as it is.
bool is_fp8_gemm(const Graph& g, const Node& n) {
  return n.op == OpKind::MatMulInteger && n.has_input(0) &&
         g.value(n.inputs[0]).dtype == DType::kFloat8E4M3FN;
}

bool shapes_known(const Graph& g, const Node& n) {
  for (ValueId v : n.inputs)
    if (v != ir::kNoValue && !g.value(v).has_shape) return false;
  for (ValueId v : n.outputs)
    if (!g.value(v).has_shape) return false;
  return true;
}

// A per-channel parameter `p` (one value per index of x's axis `axis`, or one
// value) shaped to broadcast against a tensor of rank `rank` at `axis`.
ValueId along_axis(NodeBuilder& b, const std::string& hint, ValueId p, size_t rank, size_t axis,
                   DType dtype) {
  const int64_t count = ir::shape_numel(b.shape(p));
  ValueId v = b.dtype(p) == dtype ? p : b.cast(hint + "_cast", p, dtype);
  if (count == 1) return b.reshape(hint + "_scalar", v, {});
  Shape s(rank - axis, 1);
  s[0] = count;
  return b.reshape(hint + "_axis", v, s);
}

// Cast(x, int32) - zero_point, the zero point along `axis` of x.
ValueId shifted(NodeBuilder& b, const std::string& hint, ValueId x, ValueId zp, size_t axis) {
  ValueId v = b.cast(hint + "_i32", x, DType::kInt32);
  if (zp == ir::kNoValue) return v;
  const Shape s = b.shape(x);
  ValueId z = along_axis(b, hint + "_zero_point", zp, s.size(), axis, DType::kInt32);
  return b.emit(OpKind::Sub, hint + "_shift", {v, z}, DType::kInt32, s);
}

// y = saturate(round(acc * x_scale * w_scale / y_scale + y_zp)) into `y`; the
// w scale runs along `channel_axis` of acc.
void requantize(NodeBuilder& b, ValueId acc, ValueId xs, ValueId ws, ValueId ys, ValueId yzp,
                ValueId y, size_t channel_axis) {
  const Shape s = b.shape(acc);
  const DType f64 = DType::kFloat64;
  // The multiplier in the scales' common float type, as the reference rounds it.
  DType t = b.dtype(xs);
  if (b.dtype(ws) != t || b.dtype(ys) != t) t = DType::kFloat32;
  ValueId xs_t = b.reshape("x_scale_scalar", b.dtype(xs) == t ? xs : b.cast("x_scale_cast", xs, t), {});
  ValueId ys_t = b.reshape("y_scale_scalar", b.dtype(ys) == t ? ys : b.cast("y_scale_cast", ys, t), {});
  ValueId ws_t = along_axis(b, "w_scale", ws, s.size(), channel_axis, t);
  const Shape ms = b.shape(ws_t);
  ValueId m = b.emit(OpKind::Mul, "scale_product", {xs_t, ws_t}, t, ms);
  m = b.emit(OpKind::Div, "multiplier", {m, ys_t}, t, ms);
  m = b.cast("multiplier_f64", m, f64);
  ValueId r = b.emit(OpKind::Mul, "rescale", {b.cast("acc_f64", acc, f64), m}, f64, s);
  ValueId z = b.reshape("y_zero_point_scalar", b.cast("y_zero_point_f64", yzp, f64), {});
  r = b.emit(OpKind::Add, "add_zero_point", {r, z}, f64, s);
  auto [lo, hi] = ir::quantized_range(b.dtype(y));
  ir::Tensor lo_t(f64, {}), hi_t(f64, {});
  lo_t.set_f64(0, static_cast<double>(lo));
  hi_t.set_f64(0, static_cast<double>(hi));
  r = b.emit(OpKind::Clip, "saturate", {r, b.constant("lo", lo_t), b.constant("hi", hi_t)}, f64, s);
  r = b.emit(OpKind::Round, "round", {r}, f64, s);
  b.cast("to_quantized", r, b.dtype(y), y);
}

// The int8 conv form of ConvInteger/QLinearConv (--int8-gemm, static shapes):
// x int8/uint8 with a constant scalar zero point, w a constant whose values
// minus their zero points fit int8, a geometry the int8 conv takes. Then
//   acc = ConvInteger(x8, w - w_zp, _pad_value = x_zp)   (int8 tensor cores)
//   acc - x_zp * wsum[oc] [+ bias]                         (the exact ONNX sum)
// uint8 x (and its zero point) shifted by 128 as in fuse-qdq-conv.
struct Int8Conv {
  ir::Tensor w8;  // [OC, C, KH, KW] int8
  int64_t xzp = 0;
};

std::optional<Int8Conv> int8_conv_form(const Graph& g, const Node& n) {
  const bool qlinear = n.op == OpKind::QLinearConv;
  const ValueId x = n.inputs[0], w = qlinear ? n.inputs[3] : n.inputs[1];
  const ValueId xzp = n.input(2), wzp = qlinear ? n.input(5) : n.input(3);
  const DType xt = g.value(x).dtype;
  if ((xt != DType::kInt8 && xt != DType::kUInt8) || !g.value(w).constant) return std::nullopt;
  if (target::int8_conv_geometry_ok(n.attrs, g.value(x).shape, g.value(w).shape).ok() == false)
    return std::nullopt;
  Int8Conv c;
  if (xzp != ir::kNoValue) {
    const ir::Value& z = g.value(xzp);
    if (!z.constant || z.constant->numel() != 1) return std::nullopt;
    c.xzp = z.constant->get_i64(0);
  }
  const ir::Tensor& wt = *g.value(w).constant;
  const int64_t oc = wt.shape()[0], per_oc = wt.numel() / std::max<int64_t>(oc, 1);
  const ir::Tensor* wz = wzp != ir::kNoValue && g.value(wzp).constant ? &*g.value(wzp).constant : nullptr;
  if (wzp != ir::kNoValue && (!wz || (wz->numel() != 1 && wz->numel() != oc))) return std::nullopt;
  c.w8 = ir::Tensor(DType::kInt8, wt.shape());
  for (int64_t i = 0; i < wt.numel(); ++i) {
    const int64_t z = wz ? wz->get_i64(wz->numel() == 1 ? 0 : i / per_oc) : 0;
    const int64_t v = wt.get_i64(i) - z;
    if (v < -128 || v > 127) return std::nullopt;
    c.w8.set_i64(i, v);
  }
  if (xt == DType::kUInt8) c.xzp -= 128;
  return c;
}

void lower_to_int8_conv(Graph& g, const Node& n, Int8Conv c, std::vector<Node>& out) {
  NodeBuilder b{g, out, n.name};
  const bool qlinear = n.op == OpKind::QLinearConv;
  const ValueId y = n.outputs[0];
  const Shape ys = b.shape(y);
  ValueId x8 = n.inputs[0];
  if (b.dtype(x8) == DType::kUInt8) {
    ir::Tensor c128(DType::kInt32, {});
    c128.set_i64(0, 128);
    ValueId shifted = b.emit(OpKind::Sub, "x_minus_128",
                             {b.cast("x_i32", x8, DType::kInt32), b.constant("c128", c128)},
                             DType::kInt32, b.shape(x8));
    x8 = b.cast("x_i8", shifted, DType::kInt8);
  }
  ir::AttributeMap attrs = n.attrs;
  if (c.xzp != 0) attrs.set(ir::kPadValueAttr, ir::Attribute::of_int(c.xzp));
  const int64_t oc = c.w8.shape()[0], per_oc = c.w8.numel() / std::max<int64_t>(oc, 1);
  const bool bias = qlinear && n.has_input(8);
  const bool correct = c.xzp != 0;
  ValueId acc = b.emit(OpKind::ConvInteger, "conv_int8", {x8, b.constant("weight_i8", c.w8)},
                       DType::kInt32, ys, qlinear || correct ? ir::kNoValue : y, std::move(attrs));
  Shape cs(ys.size() - 1, 1);
  cs[0] = oc;
  if (correct) {
    ir::Tensor corr(DType::kInt32, cs);
    for (int64_t j = 0; j < oc; ++j) {
      int64_t wsum = 0;
      for (int64_t kk = 0; kk < per_oc; ++kk) wsum += c.w8.get_i64(j * per_oc + kk);
      corr.set_i64(j, c.xzp * wsum);
    }
    acc = b.emit(OpKind::Sub, "zero_point_correction", {acc, b.constant("x_zp_times_wsum", corr)},
                 DType::kInt32, ys, qlinear ? ir::kNoValue : y);
  }
  if (!qlinear) return;
  if (bias) {
    ValueId bv = along_axis(b, "bias", n.inputs[8], ys.size(), 1, DType::kInt32);
    acc = b.emit(OpKind::Add, "add_bias", {acc, bv}, DType::kInt32, ys);
  }
  requantize(b, acc, n.inputs[1], n.inputs[4], n.inputs[6], n.inputs[7], y, 1);
}

Status lower(Graph& g, const Node& n, std::vector<Node>& out) {
  NodeBuilder b{g, out, n.name};
  const ValueId y = n.outputs[0];
  const bool matmul = n.op == OpKind::MatMulInteger || n.op == OpKind::QLinearMatMul;
  const bool qlinear = n.op == OpKind::QLinearMatMul || n.op == OpKind::QLinearConv;
  // Operand positions: x, x_zp, w, w_zp.
  const ValueId x = n.inputs[0];
  const ValueId w = qlinear ? n.inputs[3] : n.inputs[1];
  const ValueId xzp = qlinear ? n.input(2) : n.input(2);
  const ValueId wzp = qlinear ? n.input(5) : n.input(3);
  const size_t xr = b.shape(x).size(), wr = b.shape(w).size();
  if (xr == 0 || wr == 0) return invalid_model("{}: operands must have rank >= 1", ir::op_name(n.op));
  // MatMul: x's zero point runs along its rows (axis -2), w's along its
  // columns (-1); Conv: x's along channels (1), w's along output channels (0).
  const size_t x_axis = matmul ? (xr >= 2 ? xr - 2 : 0) : 1;
  // graphc's _trans_b (an int8 GEMM's weights stored [N, K]): w's columns are axis -2.
  const bool trans_b = matmul && n.attrs.get_int("_trans_b", 0) != 0;
  const size_t w_axis = matmul ? (trans_b && wr >= 2 ? wr - 2 : wr - 1) : 0;
  ValueId xi = shifted(b, "x", x, xzp, x_axis);
  ValueId wi = shifted(b, "w", w, wzp, w_axis);
  const Shape ys = b.shape(y);
  const ValueId acc_result = qlinear ? ir::kNoValue : y;
  ValueId acc;
  if (matmul) {
    ir::AttributeMap mm_attrs;
    if (trans_b) mm_attrs.set("_trans_b", ir::Attribute::of_int(1));
    acc = b.emit(OpKind::MatMul, "matmul_i32", {xi, wi}, DType::kInt32, ys, acc_result,
                 std::move(mm_attrs));
  } else {
    ir::AttributeMap attrs = n.attrs;
    const bool bias = n.op == OpKind::QLinearConv && n.has_input(8);
    acc = b.emit(OpKind::Conv, "conv_i32", {xi, wi}, DType::kInt32, ys,
                 bias ? ir::kNoValue : acc_result, std::move(attrs));
    if (bias) {
      ValueId bv = along_axis(b, "bias", n.inputs[8], ys.size(), 1, DType::kInt32);
      acc = b.emit(OpKind::Add, "add_bias", {acc, bv}, DType::kInt32, ys);
    }
  }
  if (qlinear)
    requantize(b, acc, n.inputs[1], n.inputs[4], n.inputs[6], n.inputs[7], y,
               matmul ? ys.size() - 1 : 1);
  return Status::ok_status();
}

}  // namespace

Status lower_integer_contractions(Graph& g, PassContext& ctx) {
  // The int8 conv: opt-in with the int8 GEMMs (--int8-gemm), static shapes.
  const bool int8_convs =
      ctx.int8_gemm && !ctx.shape_range && target::int8_conv_target_ok(ctx.target.get()).ok();
  auto wanted = [&](const Node& n) {
    return !n.dead && is_integer_contraction(n.op) && !is_fp8_gemm(g, n) && shapes_known(g, n) &&
           !(n.op == OpKind::MatMulInteger && !ctx.shape_range && target::int8_gemm_takes(g, n).ok()) &&
           !(n.op == OpKind::ConvInteger && int8_convs && target::int8_conv_takes(g, n).ok());
  };
  bool any = false;
  for (const Node& n : g.nodes) any = any || wanted(n);
  if (!any) return Status::ok_status();
  std::vector<Node> out;
  const std::vector<Node> old = g.nodes;
  for (const Node& n : old) {
    if (!wanted(n)) {
      out.push_back(n);
      continue;
    }
    const bool conv = n.op == OpKind::ConvInteger || n.op == OpKind::QLinearConv;
    if (auto c = conv && int8_convs ? int8_conv_form(g, n) : std::nullopt) {
      lower_to_int8_conv(g, n, std::move(*c), out);
      ctx.count(fmt::format("lower-integer-contractions: {} becomes an int8 tensor-core conv",
                            ir::op_name(n.op)));
      continue;
    }
    RETURN_IF_ERROR(lower(g, n, out).with_context(fmt::format("node '{}'", n.name)));
    ctx.count(fmt::format("lower-integer-contractions: {} becomes an int32 {}", ir::op_name(n.op),
                          n.op == OpKind::MatMulInteger || n.op == OpKind::QLinearMatMul
                              ? "MatMul"
                              : "Conv"));
  }
  g.nodes = std::move(out);
  g.rebuild_producers();
  return Status::ok_status();
}

}  // namespace graphc::optimizer
