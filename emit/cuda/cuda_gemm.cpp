// MatMul and Gemm as tiled GEMM kernels (cuda_gemm_tile.h), mirroring
// reference/kernels_matmul.cpp: numpy matmul with 1-D operands and broadcast
// batch dims, graphc's _trans_a/_trans_b (an operand stored with its last two
// axes swapped), and Gemm's transA/transB, alpha, beta and unidirectionally
// broadcast C. The output goes through the frame's store, so a fused
// epilogue (bias, activation, residual add) runs in the same kernel.
#include <fmt/format.h>

#include <cmath>

#include "emit/cuda/cuda_contraction.h"
#include "emit/cuda/cuda_gemm_tile.h"
#include "emit/cuda/kernel_sizes.h"
#include "emit/cuda/cuda_ops.h"
#include "ir/shape_inference.h"

namespace graphc::emit {

namespace {

using ir::DType;
using ir::Shape;

// Element strides of a row-major `dims` (a batch shape broadcast to `out`),
// scaled by the matrix size; 0 along broadcast dims.
Expected<std::vector<int64_t>> batch_strides(const Shape& dims, const Shape& out, int64_t matrix) {
  ASSIGN_OR_RETURN(auto s, broadcast_strides(dims, out));
  for (auto& v : s) v *= matrix;
  return s;
}

// Over a shape range: A [..., M', K] times a fixed 2-D B [K, N], A's leading
// dims (which may vary) flattened into one run-time M, so the product is one
// [M, N] GEMM whatever the batch and sequence (the output is [..., N] in the
// same row-major order).
Expected<GeneratedKernel> matmul_with_run_time_m(const AnchorFrame& f, const Shape& a,
                                                 const Shape& b, bool trans_a, bool trans_b,
                                                 DType dt) {
  const ir::Node& n = *f.anchor;
  const ir::SymShape as = f.sizes->shape(*f.graph, n.inputs[0]);
  const ir::SymShape bs = f.sizes->shape(*f.graph, n.inputs[1]);
  if (trans_a || as.size() < 2 || bs.size() != 2 || !fixed_over_range(bs) ||
      !as.back().is_constant())
    return unsupported("node '{}': a MatMul takes run-time sizes only as [..., K] x a fixed [K, N] "
                       "yet (here {} x {})",
                       f.node_name, f.sizes->shape_string(as), f.sizes->shape_string(bs));
  const int64_t k = a.back(), nn = b.back();
  ir::DimExpr m(1);
  int64_t m_opt = 1;
  for (size_t d = 0; d + 1 < as.size(); ++d) {
    m = m * as[d];
    m_opt *= a[d];
  }
  TiledGemmSpec s;
  s.dtype = dt;
  s.m = std::max<int64_t>(m_opt, 1);
  s.n = nn;
  s.k = k;
  s.m_at_run_time = m;
  s.batch_setup = "    (void)b;\n";
  s.a_body = fmt::format("      return {};", f.load(0, fmt::format("(long long)gm * {} + gk", k)));
  s.b_body = fmt::format("      return {};",
                         f.load(1, trans_b ? fmt::format("(long long)gn * {} + gk", k)
                                           : fmt::format("(long long)gk * {} + gn", nn)));
  s.a_contiguous_k = true;
  s.b_contiguous_n = !trans_b;
  s.epilogue = fmt::format("          {}",
                           f.store(0, fmt::format("(long long)gm * {} + gn", nn),
                                   fmt::format("({})(v)", cuda::compute_type(dt))));
  return emit_tiled_gemm(f, "matmul", s);
}

// Operand k read unchanged from its parameter (no prologue), stored with
// leading dim `ld` from `offset` on: the tensor-core kernel may copy it in
// whole chunks (cuda_gemm_tile.h).
std::optional<DirectOperand> direct_operand(const AnchorFrame& f, size_t k,
                                            const std::string& offset, int64_t ld) {
  if (k >= f.input_params.size() || f.input_params[k].empty()) return std::nullopt;
  return DirectOperand{f.input_params[k], offset, ld};
}

// Wrapping-integer literal of a whole-number alpha/beta for the uint64 accumulator.
std::string wrapped_literal(double v) {
  return fmt::format("(acc_t)(long long){}LL", static_cast<int64_t>(v));
}

}  // namespace

Expected<GeneratedKernel> generate_matmul_kernel(const AnchorFrame& f, int min_sm) {
  const ir::Node& n = *f.anchor;
  if (!f.has_input(0) || !f.has_input(1) || !f.has_output(0))
    return invalid_model("MatMul '{}' needs inputs A, B and output Y", n.name);
  const DType dt = f.input(0).dtype;
  if (f.input(1).dtype != dt || f.output(0).dtype != dt)
    return invalid_model("MatMul '{}': A, B and Y must have one element type", n.name);
  Shape a = f.input(0).shape, b = f.input(1).shape;
  if (a.empty() || b.empty())
    return invalid_model("MatMul '{}': inputs must have rank >= 1", n.name);
  const bool trans_a = n.attrs.get_int("_trans_a", 0) != 0;
  const bool trans_b = n.attrs.get_int("_trans_b", 0) != 0;
  if ((trans_a && a.size() < 2) || (trans_b && b.size() < 2))
    return invalid_model("MatMul '{}': _trans_a/_trans_b need an operand of rank >= 2", n.name);
  if (trans_a) std::swap(a[a.size() - 1], a[a.size() - 2]);
  if (trans_b) std::swap(b[b.size() - 1], b[b.size() - 2]);
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  const int64_t m = a[a.size() - 2], k = a[a.size() - 1], nn = b[b.size() - 1];
  if (b[b.size() - 2] != k)
    return invalid_model("MatMul '{}': contracted dims differ ({} vs {})", n.name, k,
                         b[b.size() - 2]);
  if (f.sizes) return matmul_with_run_time_m(f, a, b, trans_a, trans_b, dt);
  const Shape a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  ASSIGN_OR_RETURN(Shape out_batch, ir::broadcast_shapes(a_batch, b_batch));
  const int64_t batches = ir::shape_numel(out_batch);
  if (batches * m * nn != ir::shape_numel(f.output(0).shape))
    return invalid_model("MatMul '{}': output shape {} does not match the operands", n.name,
                         ir::shape_to_string(f.output(0).shape));
  ASSIGN_OR_RETURN(auto sa, batch_strides(a_batch, out_batch, m * k));
  ASSIGN_OR_RETURN(auto sb, batch_strides(b_batch, out_batch, k * nn));

  TiledGemmSpec s;
  s.min_sm = min_sm;
  s.dtype = dt;
  s.batches = batches;
  s.m = m;
  s.n = nn;
  s.k = k;
  s.batch_setup = "    long long a_off = 0, b_off = 0;\n" +
                  decompose_into("b", out_batch, {{sa, "a_off"}, {sb, "b_off"}}, "b");
  // Stored A is M x K, or K x M when transposed; stored B is K x N or N x K.
  s.a_body = fmt::format("      return {};",
                         f.load(0, trans_a ? fmt::format("a_off + (long long)gk * {} + gm", m)
                                           : fmt::format("a_off + (long long)gm * {} + gk", k)));
  s.b_body = fmt::format("      return {};",
                         f.load(1, trans_b ? fmt::format("b_off + (long long)gn * {} + gk", k)
                                           : fmt::format("b_off + (long long)gk * {} + gn", nn)));
  s.a_contiguous_k = !trans_a;
  s.b_contiguous_n = !trans_b;
  s.a_direct = direct_operand(f, 0, "a_off", trans_a ? m : k);
  s.b_direct = direct_operand(f, 1, "b_off", trans_b ? k : nn);
  s.epilogue = fmt::format("          {}",
                           f.store(0, fmt::format("b * {}LL + (long long)gm * {} + gn", m * nn, nn),
                                   fmt::format("({})(v)", cuda::compute_type(dt))));
  return emit_tiled_gemm(f, "matmul", s);
}

Expected<GeneratedKernel> generate_gemm_kernel(const AnchorFrame& f, int min_sm) {
  const ir::Node& n = *f.anchor;
  if (!f.has_input(0) || !f.has_input(1) || !f.has_output(0))
    return invalid_model("Gemm '{}' needs inputs A, B and output Y", n.name);
  const DType dt = f.input(0).dtype;
  const Shape& a = f.input(0).shape;
  const Shape& b = f.input(1).shape;
  if (a.size() != 2 || b.size() != 2)
    return invalid_model("Gemm '{}': inputs A and B must be 2-D", n.name);
  if (f.input(1).dtype != dt || f.output(0).dtype != dt ||
      (f.has_input(2) && f.input(2).dtype != dt))
    return invalid_model("Gemm '{}': A, B, C and Y must have one element type", n.name);
  const bool trans_a = n.attrs.get_int("transA", 0) != 0;
  const bool trans_b = n.attrs.get_int("transB", 0) != 0;
  const double alpha = n.attrs.get_float("alpha", 1.0);
  const double beta = n.attrs.get_float("beta", 1.0);
  const int64_t m = trans_a ? a[1] : a[0], k = trans_a ? a[0] : a[1];
  const int64_t nn = trans_b ? b[0] : b[1];
  if ((trans_b ? b[1] : b[0]) != k) return invalid_model("Gemm '{}': inner dims differ", n.name);
  if (f.output(0).shape != Shape{m, nn})
    return invalid_model("Gemm '{}': output shape {} is not {}x{}", n.name,
                         ir::shape_to_string(f.output(0).shape), m, nn);
  const bool integer = ir::is_integer(dt);
  if (integer && (alpha != std::trunc(alpha) || beta != std::trunc(beta) ||
                  std::fabs(alpha) > 9e18 || std::fabs(beta) > 9e18))
    return unsupported("Gemm '{}' on {} with non-integer alpha={} or beta={}", n.name,
                       ir::dtype_name(dt), alpha, beta);

  TiledGemmSpec s;
  s.min_sm = min_sm;
  s.dtype = dt;
  s.m = m;
  s.n = nn;
  s.k = k;
  if (f.sizes) {
    // Over a range: rows of A that vary against fixed B and C, M at run time.
    const ir::SymShape as = f.sizes->shape(*f.graph, n.inputs[0]);
    if (trans_a || !as[1].is_constant() ||
        !fixed_over_range(f.sizes->shape(*f.graph, n.inputs[1])) ||
        (f.has_input(2) && !fixed_over_range(f.sizes->shape(*f.graph, n.inputs[2]))))
      return unsupported("node '{}': a Gemm takes run-time sizes only as a varying [M, K] (not "
                         "transposed) by a fixed B and C yet (here {})",
                         f.node_name, f.sizes->shape_string(as));
    s.m_at_run_time = as[0];
  }
  s.a_body = fmt::format("      return {};",
                         f.load(0, trans_a ? fmt::format("(long long)gk * {} + gm", m)
                                           : fmt::format("(long long)gm * {} + gk", k)));
  s.b_body = fmt::format("      return {};",
                         f.load(1, trans_b ? fmt::format("(long long)gn * {} + gk", k)
                                           : fmt::format("(long long)gk * {} + gn", nn)));
  s.a_contiguous_k = !trans_a;
  s.b_contiguous_n = !trans_b;
  s.a_direct = direct_operand(f, 0, "0", trans_a ? m : k);
  s.b_direct = direct_operand(f, 1, "0", trans_b ? k : nn);
  // y = alpha * (A B) + beta * C, in the accumulator type as the reference
  // does in double (or wrapping integers).
  auto scalar = [&](double v) {
    if (integer) return wrapped_literal(v);
    return dt == DType::kFloat64 ? cuda::literal(DType::kFloat64, v)
                                 : cuda::literal(DType::kFloat32, v);
  };
  std::string value = alpha == 1.0 ? std::string("v") : fmt::format("{} * v", scalar(alpha));
  if (f.has_input(2)) {
    // Offset into C broadcast to M x N (reference BiasIndex).
    const Shape& c = f.input(2).shape;
    if (c.size() > 2) return invalid_model("Gemm '{}': C has rank {} > 2", n.name, c.size());
    const int64_t col = !c.empty() && c.back() != 1 ? 1 : 0;
    const int64_t row = c.size() == 2 && c[0] != 1 ? c[1] : 0;
    std::string idx = "0";
    if (row && col)
      idx = fmt::format("(long long)gm * {} + gn", row);
    else if (row)
      idx = fmt::format("(long long)gm * {}", row);
    else if (col)
      idx = "(long long)gn";
    const std::string cval = fmt::format("(acc_t)({})", f.load(2, idx));
    value += beta == 1.0 ? " + " + cval : fmt::format(" + {} * {}", scalar(beta), cval);
  }
  s.epilogue =
      fmt::format("          {}", f.store(0, fmt::format("(long long)gm * {} + gn", nn),
                                          fmt::format("({})({})", cuda::compute_type(dt), value)));
  return emit_tiled_gemm(f, "gemm", s);
}

}  // namespace graphc::emit
