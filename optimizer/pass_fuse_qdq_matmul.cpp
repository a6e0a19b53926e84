// The QDQ form of a quantized linear layer (what onnxruntime's quantize_static
// writes and TensorRT consumes):
//   MatMul|Gemm(DequantizeLinear(xq, sa, za), DequantizeLinear(Wq, sw, 0) [, C])
// with xq int8/uint8 (per-tensor scale and zero point, constant) and Wq an
// int8 constant (scale per tensor or per output column, zero point 0) becomes
// one int8 GEMM with int32 accumulation and the dequantize after it:
//   acc = MatMulInteger(x8, W8) (W8 stored [N, K])    (int8 tensor cores)
//   y   = DequantizeLinear(acc, sa * sw[n], za * colsum(W8)[n], axis = -1) [+ beta C]
// since sa * sw[n] * sum_k (x[k] - za) * W[k, n] = sa * sw[n] * (acc - za * colsum[n]).
// uint8 activations are shifted by 128 into int8 (the zero point with them).
// The DequantizeLinear (and a QuantizeLinear after it) become elementwise ops
// in expand-quantize that fuse-epilogues puts into the GEMM kernel. Products
// of int8 values summed in int32 are exact, so the result differs from the
// float QDQ graph only by the final rounding of the scale.
// Runs before fold-constants, which would otherwise fold DQ(W) to float.
// With float8 e4m3fn Q/DQ pairs the same layer becomes cuBLASLt's FP8 GEMM
// where the target runs it (qdq_matmul_fp8.h); else it stays float, and the
// pass's counters say why (graphc inspect's "quantized layers").
#include "ir/quantize_params.h"
#include "optimizer/node_builder.h"
#include "optimizer/passes.h"
#include "optimizer/qdq_matmul_fp8.h"
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


struct Weight {
  Tensor w;                   // int8 [N, K] (the MatMul's [K, N] transposed, Gemm's transB as is)
  std::vector<double> scale;  // one, or one per column n
};

// DequantizeLinear(Wq int8 constant 2-D, scale per tensor or per output
// column, zero point absent or 0). `n_axis`: the axis of N in the stored Wq.
std::optional<Weight> match_weight(const Graph& g, ValueId v, int64_t n_axis) {
  const Node* dq = producer_if(g, v, OpKind::DequantizeLinear);
  if (!dq || !ir::is_float(g.value(v).dtype) || !is_constant(g, dq->inputs[0]) ||
      !is_constant(g, dq->inputs[1]))
    return std::nullopt;
  const Tensor& wq = *g.value(dq->inputs[0]).constant;
  if (wq.dtype() != DType::kInt8 || wq.rank() != 2) return std::nullopt;
  if (!zero_points_are_zero(g, *dq, "weight").ok()) return std::nullopt;
  const Tensor& s = *g.value(dq->inputs[1]).constant;
  auto layout = ir::quantize_layout(dq->attrs, wq.shape(), s.shape(), "DequantizeLinear");
  if (!layout.ok() || layout->block_size != 0) return std::nullopt;
  if (!layout->per_tensor && layout->axis != n_axis) return std::nullopt;  // per K: no factoring
  const int64_t k = wq.shape()[static_cast<size_t>(1 - n_axis)];
  const int64_t n = wq.shape()[static_cast<size_t>(n_axis)];
  Weight out{Tensor(DType::kInt8, {n, k}), {}};
  for (int64_t kk = 0; kk < k; ++kk)
    for (int64_t nn = 0; nn < n; ++nn)
      out.w.set_i64(nn * k + kk, wq.get_i64(n_axis == 1 ? kk * n + nn : nn * k + kk));
  for (int64_t i = 0; i < s.numel(); ++i) {
    if (!(s.get_f64(i) > 0)) return std::nullopt;
    out.scale.push_back(s.get_f64(i));
  }
  return out;
}

struct Match {
  QdqActivation x;
  Weight w;
  double alpha = 1, beta = 1;
  ValueId c = ir::kNoValue;
};

std::optional<Match> match(const Graph& g, const Node& n) {
  if (n.dead || n.inputs.size() < 2 || n.outputs.size() != 1) return std::nullopt;
  const ir::Value& y = g.value(n.outputs[0]);
  if (!y.has_shape || (y.dtype != DType::kFloat32 && y.dtype != DType::kFloat16)) return std::nullopt;
  Match m;
  int64_t n_axis = 1;
  if (n.op == OpKind::MatMul) {
    if (n.attrs.get_int("_trans_a", 0) || n.attrs.get_int("_trans_b", 0)) return std::nullopt;
    if (!g.value(n.inputs[0]).has_shape || g.value(n.inputs[0]).shape.size() < 2) return std::nullopt;
  } else if (n.op == OpKind::Gemm) {
    if (n.attrs.get_int("transA", 0)) return std::nullopt;
    n_axis = n.attrs.get_int("transB", 0) ? 0 : 1;
    m.alpha = n.attrs.get_float("alpha", 1.0);
    m.beta = n.attrs.get_float("beta", 1.0);
    m.c = n.input(2);
    if (m.c != ir::kNoValue && g.value(m.c).dtype != y.dtype) return std::nullopt;
  } else {
    return std::nullopt;
  }
  auto x = match_int8_activation(g, n.inputs[0]);
  if (!x.ok()) return std::nullopt;
  auto w = match_weight(g, n.inputs[1], n_axis);
  if (!w) return std::nullopt;
  m.x = *x;
  m.w = std::move(*w);
  return m;
}

void rewrite(Graph& g, const Node& n, Match m, std::vector<Node>& out) {
  NodeBuilder b{g, out, n.name};
  const ValueId y = n.outputs[0];
  const Shape ys = g.value(y).shape;
  const int64_t nn = m.w.w.shape()[0], k = m.w.w.shape()[1];
  // uint8 x becomes int8 x - 128, its zero point with it.
  ValueId x8 = m.x.xq;
  int64_t za = m.x.zero_point;
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
  ValueId w8 = b.constant("weight_i8", m.w.w);
  // W stored [N, K] (_trans_b): cuBLASLt's int8 IMMA kernels take only that
  // ("TN"); the generated WMMA GEMM reads either.
  ir::AttributeMap mm_attrs;
  mm_attrs.set("_trans_b", ir::Attribute::of_int(1));
  ValueId acc = b.emit(OpKind::MatMulInteger, "matmul_int8", {x8, w8}, DType::kInt32, ys,
                       ir::kNoValue, std::move(mm_attrs));
  // acc - za * colsum[n], times sa * sw[n]: a DequantizeLinear along the last axis.
  const bool per_column = m.w.scale.size() > 1 || za != 0;
  const int64_t count = per_column ? nn : 1;
  Tensor scale(DType::kFloat32, per_column ? Shape{nn} : Shape{});
  for (int64_t i = 0; i < count; ++i)
    scale.set_f64(i, m.x.scale * m.w.scale[m.w.scale.size() > 1 ? static_cast<size_t>(i) : 0] * m.alpha);
  std::vector<ValueId> dq_in = {acc, b.constant("dequantize_scale", scale)};
  if (za != 0) {
    Tensor corr(DType::kInt32, {nn});
    for (int64_t j = 0; j < nn; ++j) {
      int64_t colsum = 0;
      for (int64_t kk = 0; kk < k; ++kk) colsum += m.w.w.get_i64(j * k + kk);
      corr.set_i64(j, za * colsum);
    }
    dq_in.push_back(b.constant("zero_point_correction", corr));
  }
  ir::AttributeMap attrs;
  attrs.set("axis", ir::Attribute::of_int(static_cast<int64_t>(ys.size()) - 1));
  const DType yd = g.value(y).dtype;
  const bool add_c = m.c != ir::kNoValue && m.beta != 0;
  ValueId deq = b.emit(OpKind::DequantizeLinear, "dequantize", dq_in, DType::kFloat32, ys,
                       !add_c && yd == DType::kFloat32 ? y : ir::kNoValue, std::move(attrs));
  if (yd != DType::kFloat32) deq = b.cast("to_output", deq, yd, add_c ? ir::kNoValue : y);
  if (add_c) {
    ValueId c = m.c;
    if (m.beta != 1) {
      Tensor beta(yd, {});
      beta.set_f64(0, m.beta);
      c = b.emit(OpKind::Mul, "beta_c", {c, b.constant("beta", beta)}, yd, b.shape(c));
    }
    b.emit(OpKind::Add, "add_c", {deq, c}, yd, ys, y);
  }
}

}  // namespace

Status fuse_qdq_matmul(Graph& g, PassContext& ctx) {
  // The int8 GEMM takes static shapes only yet: over a shape range the QDQ
  // layers stay float GEMMs (expand-quantize still fuses the Q/DQ).
  if (!ctx.int8_gemm) return Status::ok_status();
  if (ctx.shape_range) {
    for (const Node& n : g.nodes)
      if ((n.op == OpKind::MatMul || n.op == OpKind::Gemm) &&
          match_fp8_qdq_matmul(g, n, nullptr).has_value())
        ctx.count(fmt::format("fuse-qdq-matmul: float8 {} '{}' stays a float GEMM: the engine "
                              "serves a shape range (the float8 GEMM takes static shapes)",
                              ir::op_name(n.op), n.name));
    return Status::ok_status();
  }
  std::vector<std::optional<Match>> found(g.nodes.size());
  std::vector<std::optional<Fp8Match>> found_fp8(g.nodes.size());
  bool any = false;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.op != OpKind::MatMul && n.op != OpKind::Gemm) continue;
    if (auto fp8 = match_fp8_qdq_matmul(g, n, ctx.target.get())) {
      if (fp8->ok()) {
        found_fp8[i] = std::move(**fp8);
        any = true;
      } else {
        ctx.count(fmt::format("fuse-qdq-matmul: float8 {} '{}' stays a float GEMM: {}",
                              ir::op_name(n.op), n.name, fp8->status().message()));
      }
      continue;
    }
    found[i] = match(g, n);
    any = any || found[i].has_value();
  }
  if (!any) return Status::ok_status();
  std::vector<Node> out;
  const std::vector<Node> old = g.nodes;
  for (size_t i = 0; i < old.size(); ++i) {
    if (found_fp8[i]) {
      rewrite_fp8_qdq_matmul(g, old[i], std::move(*found_fp8[i]), out);
      ctx.count(fmt::format("fuse-qdq-matmul: DQ -> {} <- DQ(float8 weight) becomes a cuBLASLt "
                            "float8 GEMM (e4m3, scales in alpha) with the rest in its epilogue",
                            ir::op_name(old[i].op)));
      continue;
    }
    if (!found[i]) {
      out.push_back(old[i]);
      continue;
    }
    rewrite(g, old[i], std::move(*found[i]), out);
    ctx.count(fmt::format("fuse-qdq-matmul: DQ -> {} <- DQ(int8 weight) becomes an int8 GEMM "
                          "with the dequantize in its epilogue",
                          ir::op_name(old[i].op)));
  }
  g.nodes = std::move(out);
  g.rebuild_producers();
  return Status::ok_status();
}

}  // namespace graphc::optimizer
