#include "target/cuda/cublaslt_rules.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "ir/shape_inference.h"
#include "target/fp8_gemm_rules.h"

namespace graphc::target {

namespace {

using engine::MatmulEpilogue;
using engine::MatmulParams;
using ir::DType;
using ir::Shape;

// A node's values seen from the outer graph: for a fused group the body's
// inputs map 1:1 to the group node's inputs; a value computed or embedded in
// the body has no outer id.
struct Scope {
  const ir::Graph* body;
  const ir::Node* outer;   // the group node, or nullptr for a plain node
  const ir::Graph* graph;  // the graph `outer` (or the plain node) is in
  ir::ValueId outer_of(ir::ValueId v) const {
    if (!outer) return v;
    for (size_t i = 0; i < body->inputs.size() && i < outer->inputs.size(); ++i)
      if (body->inputs[i] == v) return outer->inputs[i];
    return ir::kNoValue;
  }
  // The one-element constant `v` (body constant or a constant group input).
  std::optional<double> scalar(ir::ValueId v) const {
    const ir::Tensor* t = body->value(v).constant ? &*body->value(v).constant : nullptr;
    const ir::ValueId o = outer_of(v);
    if (!t && o != ir::kNoValue && graph->value(o).constant) t = &*graph->value(o).constant;
    if (!t || t->numel() != 1) return std::nullopt;
    return t->get_f64(0);
  }
};

// One stride per batch for an operand whose batch dims `dims` broadcast to
// `out` (right-aligned), matrices of `matrix` elements; nullopt when the
// batches are not evenly spaced (e.g. [2,1] against [1,3]).
std::optional<int64_t> uniform_batch_stride(const Shape& dims, const Shape& out, int64_t matrix) {
  const size_t lead = out.size() - dims.size();
  std::vector<int64_t> stride(out.size(), 0);
  int64_t inner = matrix;
  for (size_t i = dims.size(); i-- > 0;) {
    if (dims[i] != 1) stride[lead + i] = inner;
    inner *= dims[i];
  }
  int64_t s = -1, count_after = 1;  // batches below dim i of `out`
  for (size_t i = out.size(); i-- > 0;) {
    if (out[i] != 1) {
      if (s < 0) s = stride[i];
      if (stride[i] != s * count_after) return std::nullopt;
    }
    count_after *= out[i];
  }
  return s < 0 ? 0 : s;
}

bool library_dtype(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16;
}

struct Plan {
  MatmulParams p;
  ir::ValueId a = ir::kNoValue, b = ir::kNoValue, c = ir::kNoValue, bias = ir::kNoValue,
              d = ir::kNoValue;
  size_t taken = 0;  // epilogue ops folded into the call
  std::string stop;  // why the chain stops before the group's output ("": it does not)
};

constexpr const char* kWmmaInt8 =
    "int8 tensor-core GEMM (generated WMMA s8, int32 accumulation) with the dequantize fused in "
    "its epilogue";

constexpr const char* kNoFp8Kernel = "no generated float8 GEMM (cuBLASLt's FP8 GEMM only)";

// MatMulInteger(int8 A [..., M, K], int8 B [K, N] or [N, K] with _trans_b)
// -> int32, no zero points (target/int8_gemm_rules.h): A's leading dims fold
// into M. Or the same of float8 e4m3fn operands -> float32 (`_alpha` times the
// product: cuBLASLt's alpha). cuBLASLt's limits are checked by the caller (options).
Expected<Plan> plan_int8_anchor(const ir::Graph& g, const ir::Node& n, const Scope& scope) {
  Plan out;
  MatmulParams& p = out.p;
  if (n.has_input(2) || n.has_input(3)) return unsupported("{}; it has zero points", kWmmaInt8);
  const ir::Value& va = g.value(n.inputs[0]);
  const ir::Value& vb = g.value(n.inputs[1]);
  const ir::Value& vy = g.value(n.outputs[0]);
  const bool fp8 = va.dtype == DType::kFloat8E4M3FN;
  if (fp8) {
    // fuse-qdq-matmul's float8 GEMM: cuBLASLt or nothing.
    if (vb.dtype != DType::kFloat8E4M3FN || vy.dtype != DType::kFloat32 || va.shape.size() < 2 ||
        vb.shape.size() != 2)
      return unsupported("{}; cuBLASLt takes float8e4m3fn A [..., M, K] x B -> float32",
                         kNoFp8Kernel);
    p.dtype = static_cast<int32_t>(DType::kFloat8E4M3FN);
    p.d_type = static_cast<int32_t>(DType::kFloat32);
    p.compute = engine::MatmulCompute::kF32;
    p.alpha = n.attrs.get_float("_alpha", 1.0);
  } else if (va.dtype != DType::kInt8 || vb.dtype != DType::kInt8 || vy.dtype != DType::kInt32 ||
             va.shape.size() < 2 || vb.shape.size() != 2) {
    return unsupported("{}; cuBLASLt takes int8 A [..., M, K] x int8 B -> int32", kWmmaInt8);
  } else {
    p.dtype = static_cast<int32_t>(DType::kInt8);
    p.compute = engine::MatmulCompute::kI32;
  }
  p.trans_b = n.attrs.get_int("_trans_b", 0) != 0;
  p.k = va.shape.back();
  p.n = p.trans_b ? vb.shape[0] : vb.shape[1];
  if ((p.trans_b ? vb.shape[1] : vb.shape[0]) != p.k) return unsupported("contracted dims differ");
  p.m = p.k > 0 ? ir::shape_numel(va.shape) / p.k : 0;
  if (p.m < 1 || p.n < 1 || p.k < 1) return unsupported("an empty dimension");
  if (p.m * p.n != ir::shape_numel(vy.shape))
    return unsupported("output shape does not match the operands");
  out.a = scope.outer_of(n.inputs[0]);
  out.b = scope.outer_of(n.inputs[1]);
  if (out.a == ir::kNoValue || out.b == ir::kNoValue)
    return unsupported("an operand is embedded in the fused group");
  p.lda = p.k;
  p.ldb = p.trans_b ? p.k : p.n;
  p.ldc = p.n;
  p.stride_d = p.m * p.n;
  return out;
}

// The anchor's own operands. Errors are reasons to stay generated.
Expected<Plan> plan_anchor(const ir::Graph& g, const ir::Node& n, const Scope& scope) {
  Plan out;
  MatmulParams& p = out.p;
  if (!n.has_input(0) || !n.has_input(1) || n.outputs.empty())
    return unsupported("operands missing");
  const ir::Value& va = g.value(n.inputs[0]);
  const ir::Value& vb = g.value(n.inputs[1]);
  const ir::Value& vy = g.value(n.outputs[0]);
  if (n.op == ir::OpKind::MatMulInteger) return plan_int8_anchor(g, n, scope);
  if (!library_dtype(va.dtype) || vb.dtype != va.dtype || vy.dtype != va.dtype)
    return unsupported("dtype {} (cuBLASLt path: float32, float16, bfloat16)",
                       ir::dtype_name(va.dtype));
  p.dtype = static_cast<int32_t>(va.dtype);
  out.a = scope.outer_of(n.inputs[0]);
  out.b = scope.outer_of(n.inputs[1]);
  if (out.a == ir::kNoValue || out.b == ir::kNoValue)
    return unsupported("an operand is embedded in the fused group");
  if (n.op == ir::OpKind::MatMul) {
    Shape a = va.shape, b = vb.shape;
    if (a.empty() || b.empty()) return unsupported("scalar operand");
    p.trans_a = n.attrs.get_int("_trans_a", 0) != 0;
    p.trans_b = n.attrs.get_int("_trans_b", 0) != 0;
    if ((p.trans_a && a.size() < 2) || (p.trans_b && b.size() < 2))
      return unsupported("transposed 1-D operand");
    if (p.trans_a) std::swap(a[a.size() - 1], a[a.size() - 2]);
    if (p.trans_b) std::swap(b[b.size() - 1], b[b.size() - 2]);
    if (a.size() == 1) a.insert(a.begin(), 1);
    if (b.size() == 1) b.push_back(1);
    p.m = a[a.size() - 2];
    p.k = a[a.size() - 1];
    p.n = b[b.size() - 1];
    if (b[b.size() - 2] != p.k) return unsupported("contracted dims differ");
    const Shape a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
    auto out_batch = ir::broadcast_shapes(a_batch, b_batch);
    if (!out_batch.ok()) return unsupported("batch dims do not broadcast");
    p.batch = ir::shape_numel(*out_batch);
    if (p.batch * p.m * p.n != ir::shape_numel(vy.shape))
      return unsupported("output shape does not match the operands");
    auto sa = uniform_batch_stride(a_batch, *out_batch, p.m * p.k);
    auto sb = uniform_batch_stride(b_batch, *out_batch, p.k * p.n);
    if (!sa || !sb) return unsupported("broadcast batch dims are not one stride per operand");
    p.stride_a = *sa;
    p.stride_b = *sb;
  } else if (n.op == ir::OpKind::Gemm) {
    const Shape& a = va.shape;
    const Shape& b = vb.shape;
    if (a.size() != 2 || b.size() != 2) return unsupported("Gemm operands are not 2-D");
    p.trans_a = n.attrs.get_int("transA", 0) != 0;
    p.trans_b = n.attrs.get_int("transB", 0) != 0;
    p.m = p.trans_a ? a[1] : a[0];
    p.k = p.trans_a ? a[0] : a[1];
    p.n = p.trans_b ? b[0] : b[1];
    if ((p.trans_b ? b[1] : b[0]) != p.k || vy.shape != Shape{p.m, p.n})
      return unsupported("Gemm shapes are inconsistent");
    p.alpha = n.attrs.get_float("alpha", 1.0);
    const double beta = n.attrs.get_float("beta", 1.0);
    if (n.has_input(2)) {
      const ir::Value& vc = g.value(n.inputs[2]);
      const ir::ValueId c = scope.outer_of(n.inputs[2]);
      if (vc.dtype != va.dtype) return unsupported("C has another dtype");
      if (c == ir::kNoValue) return unsupported("C is embedded in the fused group");
      if (vc.shape == Shape{p.m, p.n}) {
        out.c = c;
        p.has_c = true;
        p.beta = beta;
      } else if ((vc.shape == Shape{p.n} || vc.shape == Shape{1, p.n}) && beta == 1.0) {
        out.bias = c;
        p.has_bias = true;
      } else {
        return unsupported(
            "C of shape {} with beta={} (cuBLASLt: full C, or an N-bias with beta=1)",
            ir::shape_to_string(vc.shape), beta);
      }
    }
  } else {
    return unsupported("{} is not MatMul or Gemm", ir::op_name(n.op));
  }
  if (p.m < 1 || p.n < 1 || p.k < 1) return unsupported("an empty dimension");
  p.lda = p.trans_a ? p.m : p.k;
  p.ldb = p.trans_b ? p.k : p.n;
  p.ldc = p.n;
  p.stride_d = p.m * p.n;
  return out;
}

bool half(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

// The float8 GEMM's chain from `cur` (its product), op by op, as far as
// cuBLASLt's FP8 epilogue computes it (target/fp8_gemm_rules.h): a Cast to
// float16/bfloat16 first, a bias, C, Relu or tanh Gelu, and a QuantizeLinear
// to e4m3fn as expand-quantize writes it ([Cast to float32,] Div by y_scale,
// saturating Cast), which makes D float8. The QuantizeLinear's ops count as
// taken only once its float8 Cast is reached.
void plan_fp8_epilogue(const ir::Graph& body, const ir::Node& group, const Scope& scope,
                       ir::ValueId cur, Plan& plan) {
  MatmulParams& p = plan.p;
  const Shape ys = body.value(cur).shape;
  auto stop = [&](std::string why) { plan.stop = std::move(why); };
  size_t q_ops = 0;  // a QuantizeLinear's ops seen so far, not yet taken
  DType q_from = DType::kUndefined;
  double y_scale = 0;
  for (;;) {
    const auto users = body.consumers(cur);
    if (body.is_graph_output(cur)) {
      if (!users.empty() || body.outputs.size() != 1)
        return stop("an intermediate of the epilogue is read outside the kernel");
      if (q_ops > 0 && y_scale == 0)
        return stop(fmt::format("a Cast from {} to float32 (cuBLASLt writes this D in {})",
                                ir::dtype_name(q_from), ir::dtype_name(q_from)));
      if (q_ops > 0) return stop("a QuantizeLinear's Div without its float8 Cast");
      plan.d = group.outputs[0];
      return;
    }
    if (p.d_type == static_cast<int32_t>(DType::kFloat8E4M3FN))
      return stop("cuBLASLt writes the float8 D; what reads it follows");
    if (users.size() != 1) return stop("the epilogue branches");
    const ir::Node& e = body.node(users[0]);
    if (e.outputs.size() != 1 || body.value(e.outputs[0]).shape != ys)
      return stop(fmt::format("epilogue op {} changes the shape", ir::op_name(e.op)));
    const DType in = body.value(cur).dtype, out = body.value(e.outputs[0]).dtype;
    const ir::ValueId other =
        e.inputs.size() == 2 ? (e.inputs[0] == cur ? e.inputs[1] : e.inputs[0]) : ir::kNoValue;
    if (q_ops > 0 && e.op != ir::OpKind::Div && e.op != ir::OpKind::Cast)
      return stop(fmt::format("epilogue op {} after a Cast to float32", ir::op_name(e.op)));
    switch (e.op) {
      case ir::OpKind::Cast:
        if (out == DType::kFloat8E4M3FN || ir::is_narrow_float(out)) {
          if (y_scale == 0) return stop("a Cast to float8 that is no QuantizeLinear");
          if (Status st = fp8_epilogue_quantize_ok(
                  q_from, out, y_scale, e.attrs.get_int("saturate", 1) != 0, p.has_c || p.has_bias);
              !st.ok())
            return stop(st.message());
          p.d_type = static_cast<int32_t>(DType::kFloat8E4M3FN);
          p.c_type = static_cast<int32_t>(half(q_from) ? q_from : DType::kBFloat16);
          p.d_scale = 1.0 / y_scale;
          plan.taken += q_ops + 1;
          q_ops = 0;
        } else if (plan.taken == 0 && q_ops == 0 && in == DType::kFloat32 && half(out)) {
          // --precision's rounding of the product: cuBLASLt's D dtype.
          p.d_type = static_cast<int32_t>(out);
          ++plan.taken;
        } else if (q_ops == 0 && half(in) && out == DType::kFloat32) {
          q_from = in;  // the QuantizeLinear of a half value, computed in float32
          ++q_ops;
        } else {
          return stop(fmt::format("a Cast from {} to {}", ir::dtype_name(in), ir::dtype_name(out)));
        }
        break;
      case ir::OpKind::Div: {
        const auto s =
            other != ir::kNoValue && e.inputs[0] == cur ? scope.scalar(other) : std::nullopt;
        if (in != DType::kFloat32 || out != DType::kFloat32 || !s || y_scale != 0)
          return stop("a Div that is no per-tensor QuantizeLinear of a float32 value");
        if (q_ops == 0) q_from = in;
        y_scale = *s;
        ++q_ops;
        break;
      }
      case ir::OpKind::Add: {
        if (other == ir::kNoValue || e.inputs[0] == e.inputs[1])
          return stop("an Add of the product with itself");
        if (p.epilogue != MatmulEpilogue::kNone) return stop("Add after the activation");
        const ir::Value& ov = body.value(other);
        const ir::ValueId other_outer = scope.outer_of(other);
        if (other_outer == ir::kNoValue || ov.dtype != in || out != in)
          return stop("an Add operand embedded in the group or of another dtype");
        const bool row_vector = !ov.shape.empty() && ov.shape.back() == p.n &&
                                ir::shape_numel(ov.shape) == p.n && ov.shape.size() <= ys.size();
        if (row_vector && !p.has_bias) {
          if (Status st = fp8_epilogue_bias_ok(in); !st.ok()) return stop(st.message());
          plan.bias = other_outer;
          p.has_bias = true;
        } else if (ov.shape == ys && !p.has_c) {
          plan.c = other_outer;
          p.has_c = true;
          p.beta = 1.0;
        } else {
          return stop(fmt::format("an Add of shape {} (cuBLASLt: one N-bias and one C)",
                                  ir::shape_to_string(ov.shape)));
        }
        ++plan.taken;
        break;
      }
      case ir::OpKind::Relu:
      case ir::OpKind::Gelu:
        if (p.epilogue != MatmulEpilogue::kNone || out != in)
          return stop(fmt::format("{} after the activation", ir::op_name(e.op)));
        if (e.op == ir::OpKind::Gelu && e.attrs.get_string("approximate", "none") != "tanh")
          return stop("erf Gelu (cuBLASLt's GELU epilogue is the tanh approximation)");
        p.epilogue = e.op == ir::OpKind::Relu ? MatmulEpilogue::kRelu : MatmulEpilogue::kGeluTanh;
        ++plan.taken;
        break;
      case ir::OpKind::Mul:
        // Right after the product (and its Cast): fuse-qdq-matmul's per-column scale.
        if (!p.has_bias && !p.has_c && p.epilogue == MatmulEpilogue::kNone &&
            other != ir::kNoValue && ir::shape_numel(body.value(other).shape) == p.n && p.n > 1)
          return stop(kFp8PerColumnScaleReason);
        return stop("epilogue op Mul");
      default: return stop(fmt::format("epilogue op {}", ir::op_name(e.op)));
    }
    cur = e.outputs[0];
  }
}

// Folds the group's epilogue chain (anchor output -> ... -> group output)
// into the plan, op by op, until an op cuBLASLt cannot compute exactly as the
// reference: there the chain stops (plan.stop says why) after plan.taken ops,
// and the rest can only run as a generated kernel after a split.
void plan_epilogue(const ir::Graph& body, const ir::Node& anchor, const ir::Node& group,
                   const Scope& scope, Plan& plan) {
  MatmulParams& p = plan.p;
  ir::ValueId cur = anchor.outputs[0];
  const ir::Value& y = body.value(cur);
  auto stop = [&](std::string why) { plan.stop = std::move(why); };
  for (;;) {
    const auto users = body.consumers(cur);
    if (body.is_graph_output(cur)) {
      if (!users.empty() || body.outputs.size() != 1)
        return stop("an intermediate of the epilogue is read outside the kernel");
      plan.d = group.outputs[0];
      return;
    }
    if (p.int8()) return stop("cuBLASLt writes the int32 accumulator; the dequantize follows");
    if (p.fp8()) return plan_fp8_epilogue(body, group, scope, cur, plan);
    if (users.size() != 1) return stop("the epilogue branches");
    const ir::Node& e = body.node(users[0]);
    if (e.outputs.size() != 1 || body.value(e.outputs[0]).shape != y.shape ||
        body.value(e.outputs[0]).dtype != y.dtype)
      return stop(fmt::format("epilogue op {} changes the shape or dtype", ir::op_name(e.op)));
    if (p.epilogue != MatmulEpilogue::kNone)
      return stop(fmt::format("{} after the activation", ir::op_name(e.op)));
    if (e.op == ir::OpKind::Add) {
      if (e.inputs.size() != 2 || e.inputs[0] == e.inputs[1])
        return stop("an Add of the product with itself");
      const ir::ValueId other_body = e.inputs[0] == cur ? e.inputs[1] : e.inputs[0];
      const ir::Value& other = body.value(other_body);
      const ir::ValueId other_outer = scope.outer_of(other_body);
      if (other_outer == ir::kNoValue || other.dtype != y.dtype)
        return stop("an Add operand embedded in the group or of another dtype");
      const bool row_vector = !other.shape.empty() && other.shape.back() == p.n &&
                              ir::shape_numel(other.shape) == p.n &&
                              other.shape.size() <= y.shape.size();
      if (row_vector && !p.has_bias) {
        plan.bias = other_outer;
        p.has_bias = true;
      } else if (other.shape == y.shape && !p.has_c) {
        plan.c = other_outer;
        p.has_c = true;
        p.beta = 1.0;
        p.stride_c = p.batch > 1 ? p.m * p.n : 0;
      } else {
        return stop(fmt::format("an Add of shape {} (cuBLASLt: one N-bias and one output-shaped C)",
                                ir::shape_to_string(other.shape)));
      }
    } else if (e.op == ir::OpKind::Relu) {
      p.epilogue = MatmulEpilogue::kRelu;
    } else if (e.op == ir::OpKind::Gelu) {
      if (e.attrs.get_string("approximate", "none") != "tanh")
        return stop("erf Gelu (cuBLASLt's GELU epilogue is the tanh approximation)");
      p.epilogue = MatmulEpilogue::kGeluTanh;
    } else {
      return stop(fmt::format("epilogue op {}", ir::op_name(e.op)));
    }
    ++plan.taken;
    cur = e.outputs[0];
  }
}

Expected<Plan> plan_call(const ir::Graph& g, ir::NodeId id) {
  const ir::Node& n = g.node(id);
  if (n.op != ir::OpKind::FusedGroup) {
    Scope scope{&g, nullptr, &g};
    ASSIGN_OR_RETURN(Plan plan, plan_anchor(g, n, scope));
    plan.d = n.outputs[0];
    return plan;
  }
  if (!n.body) return unsupported("fused group without a body");
  const ir::Graph& body = *n.body;
  const ir::Node* anchor = nullptr;
  for (const ir::Node& bn : body.nodes) {
    if (bn.dead || (bn.op != ir::OpKind::MatMul && bn.op != ir::OpKind::Gemm &&
                    bn.op != ir::OpKind::MatMulInteger))
      continue;
    if (anchor) return unsupported("two products in one group");
    anchor = &bn;
  }
  if (!anchor) return unsupported("no MatMul/Gemm in the group");
  // Several outputs: the epilogue walk stops where an intermediate leaves the
  // group, and the group can only split there.
  Scope scope{&body, &n, &g};
  ASSIGN_OR_RETURN(Plan plan, plan_anchor(body, *anchor, scope));
  plan_epilogue(body, *anchor, n, scope, plan);
  return plan;
}

}  // namespace

Status cublaslt_int8_takes(int64_t n, int64_t k, bool b_transposed, bool a_transposed) {
  if (a_transposed || !b_transposed)
    return unsupported("B is stored K x N (cuBLASLt's int8 IMMA kernels take B as N x K, \"TN\")");
  if (n % 4 != 0 || k % 4 != 0)
    return unsupported("N = {} and K = {} must be multiples of 4 (cuBLASLt's int8 IMMA kernels)", n,
                       k);
  return Status::ok_status();
}

Status cublaslt_fp8_takes(int64_t m, int64_t n, int64_t k, const GemmOptions& options) {
  if (options.mode == GemmMode::kGenerated)
    return unsupported("--gemm generated (graphc has no generated float8 GEMM)");
  if (n % 16 != 0 || k % 16 != 0)
    return unsupported("N = {} and K = {} must be multiples of 16 (cuBLASLt's FP8 GEMM)", n, k);
  if (options.mode == GemmMode::kAuto &&
      static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) <
          static_cast<double>(kCublasLtMinVolume))
    return unsupported("M*N*K = {} < 2^20 (a float GEMM is as fast)", m * n * k);
  return Status::ok_status();
}

Status cublaslt_fp8_arch_ok(int min_sm) {
  if (min_sm < kFp8MinSm)
    return unsupported("cuBLASLt's FP8 GEMM needs sm_89 or newer (the oldest --arch is sm_{})",
                       min_sm);
  return Status::ok_status();
}

Expected<GemmMode> parse_gemm_mode(std::string_view flag) {
  if (flag == "auto") return GemmMode::kAuto;
  if (flag == "cublaslt" || flag == "cublasLt") return GemmMode::kCublasLt;
  if (flag == "generated") return GemmMode::kGenerated;
  return invalid_argument("--gemm '{}': expected auto, cublaslt or generated", flag);
}

std::string_view gemm_mode_name(GemmMode mode) {
  switch (mode) {
    case GemmMode::kAuto: return "auto";
    case GemmMode::kCublasLt: return "cublaslt";
    case GemmMode::kGenerated: return "generated";
  }
  return "?";
}

// "matmul+bias+gelu_tanh": what the call computes, for reports.
std::string call_text(const MatmulParams& p) {
  if (p.int8()) return "int8 tensor-core GEMM (IMMA, int8 x int8 -> int32)";
  if (p.fp8()) {
    std::string epi;
    if (p.has_bias) epi += "+bias";
    if (p.has_c) epi += "+C";
    if (p.epilogue != MatmulEpilogue::kNone)
      epi += "+" + std::string(engine::matmul_epilogue_name(p.epilogue));
    if (p.d_type == static_cast<int32_t>(DType::kFloat8E4M3FN))
      epi += fmt::format(" -> QuantizeLinear (d_scale = {:.6g})", p.d_scale);
    if (!epi.empty() && epi[0] == '+') epi.erase(0, 1);
    return fmt::format("float8 tensor-core GEMM (e4m3 x e4m3 -> {}, alpha = {:.6g}{}{})",
                       ir::dtype_name(static_cast<DType>(p.d_type)), p.alpha,
                       epi.empty() ? "" : ", epilogue ", epi);
  }
  std::string out = "matmul";
  if (p.alpha != 1.0) out += "*alpha";
  if (p.has_c) out += "+C";
  if (p.has_bias) out += "+bias";
  if (p.epilogue != MatmulEpilogue::kNone)
    out += "+" + std::string(engine::matmul_epilogue_name(p.epilogue));
  return out;
}

GemmChoice choose_gemm_lowering(const ir::Graph& graph, ir::NodeId node,
                                const GemmOptions& options) {
  GemmChoice out;
  if (options.mode == GemmMode::kGenerated) {
    out.reason = "generated (--gemm generated)";
    return out;
  }
  auto plan = plan_call(graph, node);
  if (!plan.ok()) {
    out.reason = "generated: " + plan.status().message();
    return out;
  }
  MatmulParams& p = plan->p;
  if (p.int8()) {
    // The int8 GEMM: cuBLASLt with --int8-gemm where its IMMA kernels take it.
    std::string why;
    if (!options.int8) why = "cuBLASLt's int8 GEMM needs --int8-gemm";
    else if (Status st = cublaslt_int8_takes(p.n, p.k, p.trans_b, p.trans_a); !st.ok())
      why = "cuBLASLt: " + st.message();
    if (why.empty() && options.mode == GemmMode::kAuto &&
        static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k) <
            static_cast<double>(kCublasLtMinVolume))
      why = fmt::format("M*N*K = {} < 2^20", p.m * p.n * p.k);
    if (!why.empty()) {
      out.reason = fmt::format("generated: {} ({})", kWmmaInt8, why);
      return out;
    }
  }
  if (p.fp8()) {
    if (Status st = cublaslt_fp8_takes(p.m, p.n, p.k, options); !st.ok()) {
      out.reason = fmt::format("generated: {} (cuBLASLt: {})", kNoFp8Kernel, st.message());
      return out;
    }
  }
  // A shared B under contiguous row-major A (and C, D) batches is one taller
  // matrix: M*batch rows in a single call, which cuBLASLt tiles better.
  if (p.batch > 1 && p.stride_b == 0 && !p.trans_a && p.stride_a == p.m * p.k &&
      p.stride_d == p.m * p.n && (!p.has_c || p.stride_c == p.m * p.n)) {
    p.m *= p.batch;
    p.batch = 1;
    p.stride_a = p.stride_c = p.stride_d = 0;
  }
  const double volume = static_cast<double>(p.m) * static_cast<double>(p.n) *
                        static_cast<double>(p.k) * static_cast<double>(p.batch);
  if (options.mode == GemmMode::kAuto && volume < static_cast<double>(kCublasLtMinVolume)) {
    out.reason = fmt::format("generated: M*N*K*batch = {} < 2^20", static_cast<int64_t>(volume));
    return out;
  }
  const ir::Node& n = graph.node(node);
  if (!plan->stop.empty()) {
    // cuBLASLt takes only a prefix of the epilogue: split the group (library_split.h) when
    // that is exact, and in auto mode when it pays.
    auto split = find_split(n, plan->taken);
    if (!split.ok()) {
      out.reason =
          fmt::format("generated: {}; no exact split: {}", plan->stop, split.status().message());
      return out;
    }
    const std::string rest = fmt::format("{}", fmt::join(split->generated_ops, ", "));
    if (options.mode == GemmMode::kAuto && p.k < kSplitMinDepth && !p.int8() && !p.fp8()) {
      out.reason = fmt::format(
          "generated: {}; a split (cuBLASLt, then a generated epilogue: {}) needs K >= {}, "
          "K = {}",
          plan->stop, rest, kSplitMinDepth, p.k);
      return out;
    }
    out.split_after = plan->taken;
    if (p.fp8()) out.split_stop = plan->stop;
    out.reason = fmt::format("cuBLASLt {}, then generated epilogue: {} ({})", call_text(p), rest,
                             plan->stop);
    if (p.int8())
      out.reason = fmt::format("cuBLASLt {}, then generated epilogue: {}", call_text(p), rest);
    return out;
  }
  if (p.dtype == static_cast<int32_t>(DType::kFloat32) && options.allow_tf32)
    p.compute = engine::MatmulCompute::kF32FastTf32;
  CublasLtCall call;
  call.params = p;
  call.args = {plan->a, plan->b};
  if (p.has_c) call.args.push_back(plan->c);
  if (p.has_bias) call.args.push_back(plan->bias);
  call.args.push_back(plan->d);
  out.call = std::move(call);
  out.reason = "cuBLASLt " + call_text(p);
  // Part (a) of a split group: name the generated epilogue that follows.
  const std::string after = n.attrs.get_string(kSplitEpilogueAttr, "");
  if (!after.empty()) out.reason += ", then generated epilogue: " + after;
  return out;
}

}  // namespace graphc::target
