// The QDQ form of a quantized convolution (onnxruntime's quantize_static):
//   Conv(DequantizeLinear(xq, sa, za), DequantizeLinear(Wq, sw, 0) [, B])
// with xq int8/uint8 (per-tensor constant scale and zero point) and Wq an
// int8 constant (scale per tensor or per output channel, zero point 0)
// becomes one int8 convolution with int32 accumulation and the dequantize
// after it:
//   acc = ConvInteger(x8, Wq, _pad_value = za)       (int8 tensor cores)
//   y   = DequantizeLinear(acc, sa * sw[oc], za * wsum[oc], axis 1) [+ B]
// since sa * sw[oc] * sum (x - za) * W = sa * sw[oc] * (acc - za * wsum[oc])
// when the padded border holds za (float 0; wsum sums every tap of oc).
// uint8 activations are shifted by 128 into int8 (the zero point with them).
// The DequantizeLinear, bias, a Relu/Clip and a following QuantizeLinear
// become elementwise ops that fuse-epilogues puts into the conv kernel, so a
// requantized layer writes int8. int32 sums of int8 products are exact: the
// result differs from the float QDQ graph by the rounding of the scale and
// the float epilogue only.
// Only 2-D NCHW convs with groups = 1 (target/int8_conv_rules.h); the others
// (depthwise: K = 9 taps is too short for a 32-deep int8 MMA) stay float, and
// the pass counts why for `graphc inspect`.
// Runs before fold-constants, which would otherwise fold DQ(W) to float.
#include "ir/conv_geometry.h"
#include "ir/quantize_params.h"
#include "optimizer/node_builder.h"
#include "optimizer/passes.h"
#include "optimizer/rewrite_util.h"
#include "target/int8_conv_rules.h"

namespace graphc::optimizer {

namespace {

using ir::DType;
using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::Shape;
using ir::Tensor;
using ir::ValueId;

struct Match {
  ValueId xq = ir::kNoValue;
  double sa = 0;
  int64_t za = 0;
  ValueId wq = ir::kNoValue;   // the int8 constant [OC, C, KH, KW], used as it is
  std::vector<double> sw;      // one, or one per output channel
  ValueId bias = ir::kNoValue;
};

// The match, or why a Conv fed by a DequantizeLinear stays float ("" for a
// Conv that is not a QDQ conv at all: no note).
Expected<Match> match(const Graph& g, const Node& n) {
  if (n.dead || n.inputs.size() < 2 || n.outputs.size() != 1) return unsupported("");
  if (!producer_if(g, n.inputs[0], OpKind::DequantizeLinear)) return unsupported("");
  const ir::Value& y = g.value(n.outputs[0]);
  if (!y.has_shape || (y.dtype != DType::kFloat32 && y.dtype != DType::kFloat16))
    return unsupported("output is not a float32/float16 of known shape");
  Match m;
  ASSIGN_OR_RETURN(const QdqActivation x, match_int8_activation(g, n.inputs[0]));
  m.xq = x.xq;
  m.sa = x.scale;
  m.za = x.zero_point;
  const Node* dqw = producer_if(g, n.inputs[1], OpKind::DequantizeLinear);
  if (!dqw || !is_constant(g, dqw->inputs[0]) || !is_constant(g, dqw->inputs[1]))
    return unsupported("weight is not a DequantizeLinear of constants");
  m.wq = dqw->inputs[0];
  const Tensor& wq = *g.value(m.wq).constant;
  if (wq.dtype() != DType::kInt8) return unsupported("weight is {}, not int8", ir::dtype_name(wq.dtype()));
  RETURN_IF_ERROR(zero_points_are_zero(g, *dqw, "weight"));
  const Tensor& s = *g.value(dqw->inputs[1]).constant;
  auto layout = ir::quantize_layout(dqw->attrs, wq.shape(), s.shape(), "DequantizeLinear");
  if (!layout.ok() || layout->block_size != 0) return unsupported("weight scales are blocked");
  if (!layout->per_tensor && layout->axis != 0)
    return unsupported("weight scales run along axis {}, not the output channels", layout->axis);
  for (int64_t i = 0; i < s.numel(); ++i) {
    if (!(s.get_f64(i) > 0)) return unsupported("a weight scale is not positive");
    m.sw.push_back(s.get_f64(i));
  }
  RETURN_IF_ERROR(target::int8_conv_geometry_ok(n.attrs, g.value(m.xq).shape, wq.shape()));
  m.bias = n.input(2);
  if (m.bias != ir::kNoValue &&
      (g.value(m.bias).dtype != y.dtype || !g.value(m.bias).has_shape ||
       ir::shape_numel(g.value(m.bias).shape) != wq.shape()[0]))
    return unsupported("bias is not a {} vector of the output channels", ir::dtype_name(y.dtype));
  return m;
}

void rewrite(Graph& g, const Node& n, const Match& m, std::vector<Node>& out) {
  NodeBuilder b{g, out, n.name};
  const ValueId y = n.outputs[0];
  const Shape ys = g.value(y).shape;
  // Read the weights before the builder adds values (which moves g's values).
  std::vector<int64_t> wsum;
  {
    const Tensor& wq = *g.value(m.wq).constant;
    const int64_t channels = wq.shape()[0], per_oc = wq.numel() / std::max<int64_t>(channels, 1);
    wsum.assign(static_cast<size_t>(channels), 0);
    for (int64_t i = 0; i < wq.numel(); ++i) wsum[static_cast<size_t>(i / per_oc)] += wq.get_i64(i);
  }
  const int64_t oc = static_cast<int64_t>(wsum.size());
  // uint8 x becomes int8 x - 128, its zero point with it.
  ValueId x8 = m.xq;
  int64_t za = m.za;
  if (b.dtype(x8) == DType::kUInt8) {
    const Shape xs = b.shape(x8);
    ValueId wide = b.cast("x_i32", x8, DType::kInt32);
    Tensor c128(DType::kInt32, {});
    c128.set_i64(0, 128);
    ValueId shifted = b.emit(OpKind::Sub, "x_minus_128", {wide, b.constant("c128", c128)},
                             DType::kInt32, xs);
    x8 = b.cast("x_i8", shifted, DType::kInt8);
    za -= 128;
  }
  ir::AttributeMap conv_attrs = n.attrs;
  if (za != 0) conv_attrs.set(ir::kPadValueAttr, ir::Attribute::of_int(za));
  ValueId acc = b.emit(OpKind::ConvInteger, "conv_int8", {x8, m.wq}, DType::kInt32, ys,
                       ir::kNoValue, std::move(conv_attrs));
  // acc - za * wsum[oc], times sa * sw[oc]: a DequantizeLinear along axis 1.
  const bool per_channel = m.sw.size() > 1 || za != 0;
  const int64_t count = per_channel ? oc : 1;
  Tensor scale(DType::kFloat32, per_channel ? Shape{oc} : Shape{});
  for (int64_t i = 0; i < count; ++i)
    scale.set_f64(i, m.sa * m.sw[m.sw.size() > 1 ? static_cast<size_t>(i) : 0]);
  std::vector<ValueId> dq_in = {acc, b.constant("dequantize_scale", scale)};
  if (za != 0) {
    Tensor corr(DType::kInt32, {oc});
    for (int64_t j = 0; j < oc; ++j) corr.set_i64(j, za * wsum[static_cast<size_t>(j)]);
    dq_in.push_back(b.constant("zero_point_correction", corr));
  }
  ir::AttributeMap attrs;
  attrs.set("axis", ir::Attribute::of_int(1));
  const DType yd = g.value(y).dtype;
  const bool add_b = m.bias != ir::kNoValue;
  ValueId deq = b.emit(OpKind::DequantizeLinear, "dequantize", dq_in, DType::kFloat32, ys,
                       !add_b && yd == DType::kFloat32 ? y : ir::kNoValue, std::move(attrs));
  if (yd != DType::kFloat32) deq = b.cast("to_output", deq, yd, add_b ? ir::kNoValue : y);
  if (add_b) {
    Shape bs(ys.size() - 1, 1);
    bs[0] = oc;
    b.emit(OpKind::Add, "add_bias", {deq, b.reshape("bias_channels", m.bias, bs)}, yd, ys, y);
  }
}

}  // namespace

Status fuse_qdq_conv(Graph& g, PassContext& ctx) {
  // Static shapes only, like the int8 GEMM; --int8-gemm turns both on.
  if (ctx.shape_range || !ctx.int8_gemm) return Status::ok_status();
  const Status arch = target::int8_conv_target_ok(ctx.target.get());
  std::vector<std::optional<Match>> found(g.nodes.size());
  bool any = false;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.op != OpKind::Conv) continue;
    auto m = match(g, n);
    if (m.ok() && !arch.ok()) m = arch;
    if (m.ok()) {
      found[i] = std::move(*m);
      any = true;
    } else if (!m.status().message().empty()) {
      ctx.count(fmt::format("fuse-qdq-conv: Conv '{}' stays float: {}", n.name, m.status().message()));
    }
  }
  if (!any) return Status::ok_status();
  std::vector<Node> out;
  const std::vector<Node> old = g.nodes;
  for (size_t i = 0; i < old.size(); ++i) {
    if (!found[i]) {
      out.push_back(old[i]);
      continue;
    }
    rewrite(g, old[i], *found[i], out);
    ctx.count("fuse-qdq-conv: DQ -> Conv <- DQ(int8 weight) becomes an int8 tensor-core conv "
              "with the dequantize in its epilogue");
  }
  g.nodes = std::move(out);
  g.rebuild_producers();
  return Status::ok_status();
}

}  // namespace graphc::optimizer
