// MatMul and Gemm reference kernels. Float types accumulate in double;
// integer types in wrapping uint64 arithmetic (exact modulo 2^bits, as numpy).
#include <algorithm>
#include <cmath>

#include "ir/shape_inference.h"
#include "reference/contraction_util.h"
#include "reference/kernels.h"

namespace graphc::reference::kernels {

namespace {

using ir::DType;
using ir::Shape;
using ir::Tensor;

// c (M x N) += a (M x K) * b (K x N), row-major; i-k-j order so the inner
// loop runs over contiguous rows of b and c, in column blocks so the block of
// b stays in cache across rows. Each c element sums over k in order.
template <typename T>
[[gnu::always_inline]] inline void matmul_body(const T* a, const T* b, T* c, int64_t m, int64_t k,
                                               int64_t n) {
  constexpr int64_t kBlock = 256;
  for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
    const int64_t j1 = std::min(n, j0 + kBlock);
    for (int64_t i = 0; i < m; ++i) {
      T* crow = c + i * n;
      for (int64_t p = 0; p < k; ++p) {
        const T av = a[i * k + p];
        const T* brow = b + p * n;
        for (int64_t j = j0; j < j1; ++j) crow[j] += av * brow[j];
      }
    }
  }
}

GRAPHC_SIMD_CLONES
void matmul_accumulate(const double* a, const double* b, double* c, int64_t m, int64_t k,
                       int64_t n) {
  matmul_body(a, b, c, m, k, n);
}

GRAPHC_SIMD_CLONES
void matmul_accumulate(const uint64_t* a, const uint64_t* b, uint64_t* c, int64_t m, int64_t k,
                       int64_t n) {
  matmul_body(a, b, c, m, k, n);
}

// Batched numpy matmul on already-promoted operands: a is a_batch x M x K,
// b is b_batch x K x N, out is out_batch x M x N (out_batch the broadcast).
template <typename T>
std::vector<T> batched_matmul(const std::vector<T>& a, const Shape& a_batch,
                              const std::vector<T>& b, const Shape& b_batch, const Shape& out_batch,
                              int64_t m, int64_t k, int64_t n) {
  const int64_t batches = ir::shape_numel(out_batch);
  std::vector<T> out(static_cast<size_t>(batches * m * n), T{0});
  const auto a_strides = strides_of(a_batch), b_strides = strides_of(b_batch);
  std::vector<int64_t> idx(out_batch.size(), 0);
  for (int64_t bi = 0; bi < batches; ++bi) {
    const int64_t ao = broadcast_offset(idx, a_batch, a_strides);
    const int64_t bo = broadcast_offset(idx, b_batch, b_strides);
    matmul_accumulate(a.data() + ao * m * k, b.data() + bo * k * n, out.data() + bi * m * n, m, k,
                      n);
    next_index(idx, out_batch);
  }
  return out;
}

// Transposes each of `batches` row-major rows x cols matrices when asked.
template <typename T>
std::vector<T> maybe_transpose(std::vector<T> v, int64_t rows, int64_t cols, bool transpose,
                               int64_t batches = 1) {
  if (!transpose) return v;
  std::vector<T> t(v.size());
  for (int64_t bi = 0; bi < batches; ++bi) {
    const int64_t base = bi * rows * cols;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        t[static_cast<size_t>(base + c * rows + r)] = v[static_cast<size_t>(base + r * cols + c)];
  }
  return t;
}

}  // namespace

Status run_MatMul(KernelContext& ctx) {
  const Tensor& A = ctx.in(0);
  const Tensor& B = ctx.in(1);
  Shape a = A.shape(), b = B.shape();
  if (a.empty() || b.empty()) return invalid_model("MatMul inputs must have rank >= 1");
  // graphc-internal: an operand stored with its last two axes swapped
  // (fold-transpose-into-matmul). a and b become the logical shapes.
  const bool trans_a = ctx.attrs().get_int("_trans_a", 0) != 0;
  const bool trans_b = ctx.attrs().get_int("_trans_b", 0) != 0;
  if ((trans_a && a.size() < 2) || (trans_b && b.size() < 2))
    return invalid_model("MatMul: _trans_a/_trans_b need an operand of rank >= 2");
  if (trans_a) std::swap(a[a.size() - 1], a[a.size() - 2]);
  if (trans_b) std::swap(b[b.size() - 1], b[b.size() - 2]);
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  const int64_t m = a[a.size() - 2], k = a[a.size() - 1], n = b[b.size() - 1];
  if (b[b.size() - 2] != k)
    return invalid_model("MatMul: contracted dims differ ({} vs {})", k, b[b.size() - 2]);
  Shape a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  ASSIGN_OR_RETURN(Shape out_batch, ir::broadcast_shapes(a_batch, b_batch));
  Tensor& Y = ctx.out(0);
  if (ir::shape_numel(out_batch) * m * n != Y.numel())
    return internal_error("MatMul: output has {} elements, expected {}", Y.numel(),
                          ir::shape_numel(out_batch) * m * n);
  // Stored matrices are k x m (A) and n x k (B) when transposed.
  const int64_t a_mats = ir::shape_numel(a_batch), b_mats = ir::shape_numel(b_batch);
  if (ir::is_float(A.dtype())) {
    auto out = batched_matmul(maybe_transpose(detail::load_f64(A), k, m, trans_a, a_mats), a_batch,
                              maybe_transpose(detail::load_f64(B), n, k, trans_b, b_mats), b_batch,
                              out_batch, m, k, n);
    detail::store_f64(Y, out.data());
  } else if (ir::is_integer(A.dtype())) {
    auto out =
        batched_matmul(maybe_transpose(detail::load_wrapped(A), k, m, trans_a, a_mats), a_batch,
                       maybe_transpose(detail::load_wrapped(B), n, k, trans_b, b_mats), b_batch,
                       out_batch, m, k, n);
    detail::store_wrapped(Y, out.data());
  } else {
    return unsupported("MatMul: element type {} is not supported", ir::dtype_name(A.dtype()));
  }
  return Status::ok_status();
}

namespace {

// Offset into C (rank 0..2, unidirectionally broadcast to M x N) for (i, j).
struct BiasIndex {
  int64_t row_stride = 0, col_stride = 0;
  explicit BiasIndex(const Shape& c) {
    if (c.size() >= 1 && c.back() != 1) col_stride = 1;
    if (c.size() == 2 && c[0] != 1) row_stride = c[1];
  }
  int64_t at(int64_t i, int64_t j) const { return i * row_stride + j * col_stride; }
};

}  // namespace

Status run_Gemm(KernelContext& ctx) {
  const Tensor& A = ctx.in(0);
  const Tensor& B = ctx.in(1);
  const Tensor* C = ctx.has_input(2) ? &ctx.in(2) : nullptr;
  if (A.rank() != 2 || B.rank() != 2) return invalid_model("Gemm inputs A and B must be 2-D");
  const bool trans_a = ctx.attrs().get_int("transA", 0) != 0;
  const bool trans_b = ctx.attrs().get_int("transB", 0) != 0;
  const double alpha = ctx.attrs().get_float("alpha", 1.0);
  const double beta = ctx.attrs().get_float("beta", 1.0);
  const int64_t m = trans_a ? A.shape()[1] : A.shape()[0];
  const int64_t k = trans_a ? A.shape()[0] : A.shape()[1];
  const int64_t n = trans_b ? B.shape()[0] : B.shape()[1];
  if ((trans_b ? B.shape()[1] : B.shape()[0]) != k)
    return invalid_model("Gemm: inner dims of A and B differ");
  Tensor& Y = ctx.out(0);
  if (Y.numel() != m * n) return internal_error("Gemm: output has the wrong size");
  const BiasIndex ci(C ? C->shape() : Shape{});

  if (ir::is_float(A.dtype())) {
    auto a = maybe_transpose(detail::load_f64(A), A.shape()[0], A.shape()[1], trans_a);
    auto b = maybe_transpose(detail::load_f64(B), B.shape()[0], B.shape()[1], trans_b);
    std::vector<double> y(static_cast<size_t>(m * n), 0.0);
    matmul_accumulate(a.data(), b.data(), y.data(), m, k, n);
    std::vector<double> c = C ? detail::load_f64(*C) : std::vector<double>{};
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double& v = y[static_cast<size_t>(i * n + j)];
        v *= alpha;
        if (C) v += beta * c[static_cast<size_t>(ci.at(i, j))];
      }
    detail::store_f64(Y, y.data());
  } else if (ir::is_integer(A.dtype())) {
    // Integer Gemm stays exact: alpha and beta must be whole numbers.
    if (alpha != std::trunc(alpha) || beta != std::trunc(beta) || std::fabs(alpha) > 9e18 ||
        std::fabs(beta) > 9e18)
      return unsupported("Gemm on {} with non-integer alpha={} or beta={} is not supported",
                         ir::dtype_name(A.dtype()), alpha, beta);
    const auto alpha_w = static_cast<uint64_t>(static_cast<int64_t>(alpha));
    const auto beta_w = static_cast<uint64_t>(static_cast<int64_t>(beta));
    auto a = maybe_transpose(detail::load_wrapped(A), A.shape()[0], A.shape()[1], trans_a);
    auto b = maybe_transpose(detail::load_wrapped(B), B.shape()[0], B.shape()[1], trans_b);
    std::vector<uint64_t> y(static_cast<size_t>(m * n), 0);
    matmul_accumulate(a.data(), b.data(), y.data(), m, k, n);
    std::vector<uint64_t> c = C ? detail::load_wrapped(*C) : std::vector<uint64_t>{};
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        uint64_t& v = y[static_cast<size_t>(i * n + j)];
        v *= alpha_w;
        if (C) v += beta_w * c[static_cast<size_t>(ci.at(i, j))];
      }
    detail::store_wrapped(Y, y.data());
  } else {
    return unsupported("Gemm: element type {} is not supported", ir::dtype_name(A.dtype()));
  }
  return Status::ok_status();
}

}  // namespace graphc::reference::kernels
