// Rewrites QuantizeLinear/DequantizeLinear into the elementwise ops the GPU
// fusion already renders, so a Q/DQ becomes part of a fused elementwise
// kernel (or a MatMul/Conv epilogue) instead of a kernel of its own:
//   DequantizeLinear: y = Cast(Mul(Sub(Cast(x, f32), zp_f32), scale_f32), T)
//   QuantizeLinear:   y = Cast(Clip(Add(Round(Div(x, scale)), zp), lo, hi), Q)
// with the scale and zero point shaped to broadcast against x: folded
// constants (per tensor, per axis, or expanded per block), or for run-time
// values a Reshape (per axis) and a Cast. The arithmetic is the
// reference kernel's: float32 for DequantizeLinear; for QuantizeLinear the
// quotient in x's type, round half to even, exact integer-valued floats after.
// Quantized types: 8-bit (and with float32 x, 16-bit and int4/uint4/int2/
// uint2) integers; float8/float4 with float32 x, where the Cast rounds and
// saturates as the reference's store does (no zero point: ONNX ignores it for
// float8; a float4 one must be a constant 0, since the reference adds it in
// double, not float32). Dequantizing: those and int32, float8/float4 without
// a zero point.
#include "ir/quantize_params.h"
#include "optimizer/passes.h"
#include "optimizer/rewrite_util.h"

namespace graphc::optimizer {

namespace {

using ir::DType;
using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::Shape;
using ir::Tensor;
using ir::ValueId;

// `param` laid out to broadcast against x of shape `x`, converted to `dtype`.
Tensor broadcast_param(const Tensor& param, const Shape& x, const ir::QuantizeLayout& layout,
                       DType dtype) {
  if (layout.per_tensor) {
    Tensor out(dtype, {});
    out.set_f64(0, param.get_f64(0));
    return out;
  }
  if (layout.block_size == 0) {
    Shape s(x.size(), 1);
    s[static_cast<size_t>(layout.axis)] = x[static_cast<size_t>(layout.axis)];
    Tensor out(dtype, s);
    for (int64_t i = 0; i < out.numel(); ++i) out.set_f64(i, param.get_f64(i));
    return out;
  }
  // Blocked: one value per element of x (the block's value repeated).
  Tensor out(dtype, x);
  std::vector<int64_t> xs(x.size()), ps(x.size());
  int64_t a = 1, b = 1;
  for (size_t d = x.size(); d-- > 0;) {
    xs[d] = a;
    ps[d] = b;
    a *= x[d];
    b *= param.shape()[d];
  }
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t rem = i, off = 0;
    for (size_t d = 0; d < x.size(); ++d) {
      int64_t idx = rem / xs[d];
      rem %= xs[d];
      if (static_cast<int64_t>(d) == layout.axis) idx /= layout.block_size;
      off += idx * ps[d];
    }
    out.set_f64(i, param.get_f64(off));
  }
  return out;
}

struct Expander;
ValueId param_operand(Expander& e, ValueId param, const Shape& x, const ir::QuantizeLayout& layout,
                      DType dtype, const std::string& hint);

struct Expander {
  Graph& g;
  std::vector<Node>& out;
  const Node& src;

  ValueId value(const std::string& hint, DType dtype, const Shape& shape) {
    ir::Value v;
    v.name = g.unique_name(src.name + "/" + hint);
    v.dtype = dtype;
    v.shape = shape;
    v.has_shape = true;
    return g.add_value(std::move(v));
  }
  ValueId constant(const std::string& hint, Tensor t) {
    return g.add_constant(g.unique_name(src.name + "/" + hint), std::move(t));
  }
  // Appends a node; `result` kNoValue makes a fresh value of dtype/shape.
  ValueId emit(OpKind op, const std::string& hint, std::vector<ValueId> inputs, DType dtype,
               const Shape& shape, ValueId result = ir::kNoValue, ir::AttributeMap attrs = {}) {
    Node n;
    n.op = op;
    n.name = g.unique_name(src.name + "/" + hint);
    n.inputs = std::move(inputs);
    n.outputs = {result == ir::kNoValue ? value(hint, dtype, shape) : result};
    n.attrs = std::move(attrs);
    n.absorbed = {src.name};
    out.push_back(std::move(n));
    return out.back().outputs[0];
  }
  ValueId cast(const std::string& hint, ValueId in, DType to, const Shape& shape,
               ValueId result = ir::kNoValue) {
    ir::AttributeMap a;
    a.set("to", ir::Attribute::of_int(static_cast<int64_t>(to)));
    return emit(OpKind::Cast, hint, {in}, to, shape, result, std::move(a));
  }
};

// A scale or zero point as an operand that broadcasts against x in `dtype`:
// a folded constant, or for run-time values a reshape (per axis) and a cast.
ValueId param_operand(Expander& e, ValueId param, const Shape& x, const ir::QuantizeLayout& layout,
                      DType dtype, const std::string& hint) {
  Graph& g = e.g;
  if (is_constant(g, param))
    return e.constant(hint, broadcast_param(*g.value(param).constant, x, layout, dtype));
  ValueId v = param;
  Shape shape = g.value(param).shape;
  if (!layout.per_tensor) {
    shape.assign(x.size(), 1);
    shape[static_cast<size_t>(layout.axis)] = x[static_cast<size_t>(layout.axis)];
    ValueId target = e.constant(hint + "_shape", Tensor::from_i64(shape, {static_cast<int64_t>(shape.size())}));
    v = e.emit(OpKind::Reshape, hint + "_reshape", {v, target}, g.value(param).dtype, shape);
  }
  if (g.value(v).dtype != dtype) v = e.cast(hint + "_cast", v, dtype, shape);
  return v;
}

bool expandable(const Graph& g, const Node& n) {
  if (n.op != OpKind::QuantizeLinear && n.op != OpKind::DequantizeLinear) return false;
  const ir::Value& x = g.value(n.inputs[0]);
  const ir::Value& y = g.value(n.outputs[0]);
  const ir::Value& s = g.value(n.inputs[1]);
  if (!x.has_shape || !y.has_shape || !s.has_shape) return false;
  // Run-time scales and zero points: per tensor or per axis (a reshape), not blocked.
  auto layout = ir::quantize_layout(n.attrs, x.shape, s.shape, "");
  if (!layout.ok()) return false;
  const bool runtime_params =
      !is_constant(g, n.inputs[1]) || (n.has_input(2) && !is_constant(g, n.inputs[2]));
  if (runtime_params && layout->block_size > 0) return false;
  auto eight_or_sixteen = [](DType t) {
    return t == DType::kInt8 || t == DType::kUInt8 || t == DType::kInt16 || t == DType::kUInt16;
  };
  if (n.op == OpKind::DequantizeLinear)
    return (eight_or_sixteen(x.dtype) || x.dtype == DType::kInt32 ||
            ir::is_sub_byte_integer(x.dtype) || ir::is_narrow_float(x.dtype)) &&
           ir::is_float(y.dtype);
  const DType sd = g.value(n.inputs[1]).dtype;
  if (n.attrs.get_int("precision", 0) != 0 || sd != x.dtype) return false;
  if (x.dtype == DType::kFloat32 && ir::is_narrow_float(y.dtype)) {
    if (y.dtype != DType::kFloat4E2M1 || !n.has_input(2)) return true;
    if (!is_constant(g, n.inputs[2])) return false;
    const Tensor& z = *g.value(n.inputs[2]).constant;
    for (int64_t i = 0; i < z.numel(); ++i)
      if (z.get_f64(i) != 0.0) return false;
    return true;
  }
  if (x.dtype == DType::kFloat32) return eight_or_sixteen(y.dtype) || ir::is_sub_byte_integer(y.dtype);
  return (x.dtype == DType::kFloat16 || x.dtype == DType::kBFloat16) &&
         (y.dtype == DType::kInt8 || y.dtype == DType::kUInt8);
}

Status expand(Graph& g, const Node& n, std::vector<Node>& out) {
  const Shape xshape = g.value(n.inputs[0]).shape;
  const DType xd = g.value(n.inputs[0]).dtype, yd = g.value(n.outputs[0]).dtype;
  ASSIGN_OR_RETURN(auto layout, ir::quantize_layout(n.attrs, xshape, g.value(n.inputs[1]).shape,
                                                    ir::op_name(n.op).data()));
  // Float8/float4 take no zero point here (ignored, or a constant 0: expandable()).
  const bool zp = n.has_input(2) && !ir::is_narrow_float(xd) && !ir::is_narrow_float(yd);
  Expander e{g, out, n};
  const ValueId y = n.outputs[0];
  if (n.op == OpKind::DequantizeLinear) {
    const DType f32 = DType::kFloat32;
    ValueId v = e.cast("x_f32", n.inputs[0], f32, xshape);
    if (zp) {
      ValueId z = param_operand(e, n.inputs[2], xshape, layout, f32, "zero_point_f32");
      v = e.emit(OpKind::Sub, "shift", {v, z}, f32, xshape);
    }
    ValueId s = param_operand(e, n.inputs[1], xshape, layout, f32, "scale_f32");
    if (yd == f32) {
      e.emit(OpKind::Mul, "scale", {v, s}, f32, xshape, y);
    } else {
      v = e.emit(OpKind::Mul, "scale", {v, s}, f32, xshape);
      e.cast("to_output", v, yd, xshape, y);
    }
    return Status::ok_status();
  }
  ValueId s = param_operand(e, n.inputs[1], xshape, layout, xd, "scale");
  ValueId v = e.emit(OpKind::Div, "divide", {n.inputs[0], s}, xd, xshape);
  if (ir::is_narrow_float(yd)) {  // the Cast rounds to nearest even and saturates (or not)
    ir::AttributeMap a;
    a.set("to", ir::Attribute::of_int(static_cast<int64_t>(yd)));
    a.set("saturate", ir::Attribute::of_int(n.attrs.get_int("saturate", 1)));
    e.emit(OpKind::Cast, "to_quantized", {v}, yd, xshape, y, std::move(a));
    return Status::ok_status();
  }
  v = e.emit(OpKind::Round, "round", {v}, xd, xshape);
  if (zp) {
    ValueId z = param_operand(e, n.inputs[2], xshape, layout, xd, "zero_point");
    v = e.emit(OpKind::Add, "add_zero_point", {v, z}, xd, xshape);
  }
  auto [lo, hi] = ir::quantized_range(yd);
  Tensor lo_t(xd, {}), hi_t(xd, {});
  lo_t.set_f64(0, static_cast<double>(lo));
  hi_t.set_f64(0, static_cast<double>(hi));
  v = e.emit(OpKind::Clip, "saturate", {v, e.constant("lo", lo_t), e.constant("hi", hi_t)}, xd,
             xshape);
  e.cast("to_quantized", v, yd, xshape, y);
  return Status::ok_status();
}

}  // namespace

Status expand_quantize(Graph& g, PassContext& ctx) {
  bool any = false;
  for (const Node& n : g.nodes) any = any || (!n.dead && expandable(g, n));
  if (!any) return Status::ok_status();
  std::vector<Node> out;
  const std::vector<Node> old = g.nodes;
  for (const Node& n : old) {
    if (n.dead || !expandable(g, n)) {
      out.push_back(n);
      continue;
    }
    RETURN_IF_ERROR(expand(g, n, out).with_context(fmt::format("node '{}'", n.name)));
    ctx.count(n.op == OpKind::QuantizeLinear
                  ? "expand-quantize: QuantizeLinear nodes become elementwise ops"
                  : "expand-quantize: DequantizeLinear nodes become elementwise ops");
  }
  g.nodes = std::move(out);
  g.rebuild_producers();
  return Status::ok_status();
}

}  // namespace graphc::optimizer
