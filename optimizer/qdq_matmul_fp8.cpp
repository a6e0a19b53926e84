#include "optimizer/qdq_matmul_fp8.h"

#include <algorithm>
#include <cmath>

#include "ir/quantize_params.h"
#include "optimizer/node_builder.h"
#include "optimizer/rewrite_util.h"
#include "target/fp8_gemm_rules.h"

namespace graphc::optimizer {

namespace {

using ir::DType;
using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::Shape;
using ir::Tensor;
using ir::ValueId;

bool float8(DType t) {
  return t == DType::kFloat8E4M3FN || t == DType::kFloat8E4M3FNUZ || t == DType::kFloat8E5M2 ||
         t == DType::kFloat8E5M2FNUZ;
}

// The DequantizeLinear of a float8 value feeding `v`, or nullptr.
const Node* float8_dq(const Graph& g, ValueId v) {
  const Node* dq = producer_if(g, v, OpKind::DequantizeLinear);
  return dq && float8(g.value(dq->inputs[0]).dtype) ? dq : nullptr;
}

Status e4m3_operand(const Graph& g, const Node& dq, const char* what) {
  const DType t = g.value(dq.inputs[0]).dtype;
  if (t != DType::kFloat8E4M3FN)
    return unsupported("the {} is {} (cuBLASLt's FP8 GEMM here takes float8e4m3fn)", what,
                       ir::dtype_name(t));
  return zero_points_are_zero(g, dq, what);
}

// The weight DQ(Wq) as [N, K] bits and its scales; `n_axis`: N's axis in Wq.
Status match_weight(const Graph& g, const Node& dq, int64_t n_axis, Fp8Match& m) {
  RETURN_IF_ERROR(e4m3_operand(g, dq, "weight"));
  if (!is_constant(g, dq.inputs[0]) || !is_constant(g, dq.inputs[1]))
    return unsupported("the weight or its scale is not a constant");
  const Tensor& wq = *g.value(dq.inputs[0]).constant;
  if (wq.rank() != 2) return unsupported("the weight has rank {}, not 2", wq.rank());
  const Tensor& s = *g.value(dq.inputs[1]).constant;
  auto layout = ir::quantize_layout(dq.attrs, wq.shape(), s.shape(), "DequantizeLinear");
  if (!layout.ok()) return layout.status();
  if (layout->block_size != 0) return unsupported("blocked weight scales");
  if (!layout->per_tensor && layout->axis != n_axis)
    return unsupported("weight scales along K (only per tensor or per output column factor out)");
  const int64_t k = wq.shape()[static_cast<size_t>(1 - n_axis)];
  const int64_t n = wq.shape()[static_cast<size_t>(n_axis)];
  m.w = Tensor(DType::kFloat8E4M3FN, {n, k});
  const uint8_t* from = wq.data();
  uint8_t* to = m.w.mutable_data();
  for (int64_t kk = 0; kk < k; ++kk)
    for (int64_t nn = 0; nn < n; ++nn)
      to[nn * k + kk] = from[n_axis == 1 ? kk * n + nn : nn * k + kk];
  for (int64_t i = 0; i < s.numel(); ++i) {
    if (!(s.get_f64(i) > 0) || !std::isfinite(s.get_f64(i)))
      return unsupported("a weight scale is not positive and finite");
    m.w_scale.push_back(s.get_f64(i));
  }
  return Status::ok_status();
}

}  // namespace

std::optional<Expected<Fp8Match>> match_fp8_qdq_matmul(const Graph& g, const Node& n,
                                                       const target::Target* target) {
  if (n.dead || n.inputs.size() < 2 || n.outputs.size() != 1) return std::nullopt;
  const Node* x_dq = float8_dq(g, n.inputs[0]);
  const Node* w_dq = float8_dq(g, n.inputs[1]);
  if (!x_dq && !w_dq) return std::nullopt;
  auto run = [&]() -> Expected<Fp8Match> {
    if (!x_dq || !w_dq) return unsupported("only one operand is a float8 DequantizeLinear");
    const ir::Value& y = g.value(n.outputs[0]);
    const ir::Value& x = g.value(n.inputs[0]);
    if (!y.has_shape || !x.has_shape || (y.dtype != DType::kFloat32 && y.dtype != DType::kFloat16))
      return unsupported("output {} of unknown shape or not float32/float16",
                         ir::dtype_name(y.dtype));
    Fp8Match m;
    int64_t n_axis = 1;
    if (n.op == OpKind::MatMul) {
      if (n.attrs.get_int("_trans_a", 0) || n.attrs.get_int("_trans_b", 0))
        return unsupported("a transposed operand");
      if (x.shape.size() < 2) return unsupported("a 1-D activation");
    } else if (n.op == OpKind::Gemm) {
      if (n.attrs.get_int("transA", 0)) return unsupported("transA");
      n_axis = n.attrs.get_int("transB", 0) ? 0 : 1;
      m.alpha = n.attrs.get_float("alpha", 1.0);
      m.beta = n.attrs.get_float("beta", 1.0);
      m.c = n.input(2);
      if (m.c != ir::kNoValue && g.value(m.c).dtype != y.dtype)
        return unsupported("C has another dtype");
      if (!(m.alpha != 0) || !std::isfinite(m.alpha)) return unsupported("alpha {}", m.alpha);
    } else {
      return unsupported("{} is not MatMul or Gemm", ir::op_name(n.op));
    }
    RETURN_IF_ERROR(e4m3_operand(g, *x_dq, "activation"));
    auto sa = scalar_constant(g, x_dq->inputs[1]);
    if (!sa || !(*sa > 0) || !std::isfinite(*sa))
      return unsupported("the activation scale is not one positive constant (per tensor)");
    m.xq = x_dq->inputs[0];
    m.x_scale = *sa;
    RETURN_IF_ERROR(match_weight(g, *w_dq, n_axis, m));
    const int64_t nn = m.w.shape()[0], k = m.w.shape()[1];
    if (x.shape.back() != k) return unsupported("contracted dims differ");
    const int64_t rows = k > 0 ? ir::shape_numel(x.shape) / k : 0;
    if (rows < 1 || nn < 1 || k < 1) return unsupported("an empty dimension");
    if (Status st = target::fp8_gemm_target_takes(target, rows, nn, k); !st.ok()) return st;
    return m;
  };
  return run();
}

void rewrite_fp8_qdq_matmul(Graph& g, const Node& n, Fp8Match m, std::vector<Node>& out) {
  NodeBuilder b{g, out, n.name};
  const ValueId y = n.outputs[0];
  const Shape ys = g.value(y).shape;
  const DType yd = g.value(y).dtype;
  const int64_t nn = m.w.shape()[0];
  // The largest weight scale goes into alpha, the ratios to it (in (0, 1], so
  // well inside fp16's range under --precision fp16) into the epilogue.
  const double s_max = *std::max_element(m.w_scale.begin(), m.w_scale.end());
  const bool per_column =
      std::any_of(m.w_scale.begin(), m.w_scale.end(), [&](double s) { return s != s_max; });
  ir::AttributeMap mm;
  mm.set("_trans_b", ir::Attribute::of_int(1));  // cuBLASLt's FP8 kernels take only "TN"
  mm.set("_alpha", ir::Attribute::of_float(m.x_scale * s_max * m.alpha));
  const bool add_c = m.c != ir::kNoValue && m.beta != 0;
  const bool direct = !per_column && !add_c && yd == DType::kFloat32;
  ValueId acc = b.emit(OpKind::MatMulInteger, "matmul_fp8", {m.xq, b.constant("weight_fp8", m.w)},
                       DType::kFloat32, ys, direct ? y : ir::kNoValue, std::move(mm));
  if (direct) return;
  if (per_column) {
    Tensor ratio(DType::kFloat32, {nn});
    for (int64_t j = 0; j < nn; ++j) ratio.set_f64(j, m.w_scale[static_cast<size_t>(j)] / s_max);
    const bool last = !add_c && yd == DType::kFloat32;
    acc = b.emit(OpKind::Mul, "column_scale", {acc, b.constant("weight_scale_ratio", ratio)},
                 DType::kFloat32, ys, last ? y : ir::kNoValue);
    if (last) return;
  }
  if (yd != DType::kFloat32) acc = b.cast("to_output", acc, yd, add_c ? ir::kNoValue : y);
  if (add_c) {
    ValueId c = m.c;
    if (m.beta != 1) {
      Tensor beta(yd, {});
      beta.set_f64(0, m.beta);
      c = b.emit(OpKind::Mul, "beta_c", {c, b.constant("beta", beta)}, yd, b.shape(c));
    }
    b.emit(OpKind::Add, "add_c", {acc, c}, yd, ys, y);
  }
}

}  // namespace graphc::optimizer
