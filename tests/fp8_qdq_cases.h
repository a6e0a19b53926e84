// float8 e4m3fn QDQ linear layers, shared by the CPU test (tests/fp8_gemm_test.cpp)
// and the GPU test (tests/gpu/fp8_gemm_gpu_test.cpp):
//   x -> QuantizeLinear(sa, 0 e4m3fn) -> DequantizeLinear -> MatMul|Gemm
//        <- DequantizeLinear(W e4m3fn, sw)  [-> + bias [+ residual] -> Relu|Gelu]
//        [-> Q -> DQ (e4m3fn) [-> a second float8 layer]]
// with random weights (never zero), per-tensor or per-column scales.
// fuse-qdq-matmul makes each one cuBLASLt's FP8 GEMM where cuBLASLt takes it
// (N and K multiples of 16); check_fp8_outputs compares a run with the
// reference executor on the unoptimized graph.
#pragma once

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "tests/qdq_cases.h"
#include "tests/test_util.h"

namespace graphc::testing {

struct Fp8Case {
  std::string label;
  int64_t batch = 1, m = 0, k = 0, n = 0;
  bool gemm = false;        // Gemm(transB=1, C, alpha) instead of MatMul + Add + Relu
  bool per_channel = true;  // weight scale per output column (else per tensor)
  bool requantize = false;  // an e4m3fn Q -> DQ pair after the layer
  bool bias = true;         // MatMul only: + bias -> Relu after it
  bool cublaslt = true;     // N and K multiples of 16: cuBLASLt's FP8 GEMM takes it
  bool residual = false;    // MatMul only: + bias + a residual input r, no activation
  bool chain = false;       // requantized: the DQ also feeds a second float8 layer (output 2)
  std::string act = "relu";  // after the bias: relu, gelu_tanh or gelu (erf)
};

// The second layer's dequantized weights are at most this in magnitude
// (e4m3 values up to 240 times a scale of at most 2e-3).
inline constexpr double kFp8MaxWeight = 0.48;

inline std::vector<Fp8Case> fp8_cases() {
  return {
      {"fp8 matmul per-tensor 2x32x64x48, no epilogue", 2, 32, 64, 48, false, false, false, false},
      {"fp8 matmul per-channel 1x64x128x96 bias relu", 1, 64, 128, 96, false, true, false, true},
      {"fp8 gemm per-channel 48x96x64 alpha C", 1, 48, 96, 64, true, true, false, true},
      {"fp8 matmul per-tensor 3x17x80x32 requantized", 3, 17, 80, 32, false, false, true, true},
      {"fp8 matmul per-channel 2x33x72x40 (N not a multiple of 16)", 2, 33, 72, 40, false, true,
       false, true, false},
      // cuBLASLt's own epilogue (version 4): bias, Relu and the next layer's
      // QuantizeLinear in the call, its float8 D read by the second GEMM.
      {"fp8 matmul per-tensor 2x32x96x64 bias relu requantized chained", 2, 32, 96, 64, false,
       false, true, true, true, false, true},
      {"fp8 matmul per-tensor 2x16x64x48 bias tanh gelu requantized chained", 2, 16, 64, 48, false,
       false, true, true, true, false, true, "gelu_tanh"},
      {"fp8 matmul per-tensor 1x64x128x96 bias residual", 1, 64, 128, 96, false, false, false, true,
       true, true},
      {"fp8 matmul per-tensor 1x32x64x64 bias erf gelu requantized", 1, 32, 64, 64, false, false,
       true, true, true, false, false, "gelu"},
  };
}

inline ir::Tensor zy_zero() { return ir::Tensor(ir::DType::kFloat8E4M3FN, {}); }

inline ir::Graph build_fp8_graph(const Fp8Case& c, uint32_t seed = 7) {
  using ir::Attribute;
  using ir::DType;
  using ir::OpKind;
  using ir::Tensor;
  std::mt19937 rng(seed);
  GraphBuilder b;
  const bool mm = !c.gemm;
  auto x = b.input("x", DType::kFloat32, mm ? ir::Shape{c.batch, c.m, c.k} : ir::Shape{c.m, c.k});
  // x in [-4, 4] over 1/64: up to 256 of e4m3fn's 448.
  Tensor sa = Tensor::from_f32({1.0f / 64.0f}, {});
  Tensor za(DType::kFloat8E4M3FN, {});  // float8 zero points are 0
  const ir::ValueId dqx = add_qdq(b, x, "a", sa, za).second;
  // W e4m3fn, never zero: stored [K, N] for MatMul, [N, K] for Gemm transB=1.
  Tensor w(DType::kFloat8E4M3FN, mm ? ir::Shape{c.k, c.n} : ir::Shape{c.n, c.k});
  std::uniform_real_distribution<double> wd(0.05, 1.0);
  std::uniform_int_distribution<int> sign(0, 1);
  for (int64_t i = 0; i < w.numel(); ++i) w.set_f64(i, (sign(rng) ? 1 : -1) * wd(rng) * 240.0);
  Tensor ws(DType::kFloat32, c.per_channel ? ir::Shape{c.n} : ir::Shape{});
  std::uniform_real_distribution<double> sd(0.5e-3, 2e-3);
  for (int64_t i = 0; i < ws.numel(); ++i) ws.set_f64(i, sd(rng));
  Tensor wz(DType::kFloat8E4M3FN, ws.shape());
  auto dqw = b.node(OpKind::DequantizeLinear,
                    {b.constant("w", w), b.constant("ws", ws), b.constant("wz", wz)},
                    attrs({{"axis", Attribute::of_int(mm ? 1 : 0)}}));
  Tensor bias(DType::kFloat32, {c.n});
  std::uniform_real_distribution<double> bd(-0.5, 0.5);
  for (int64_t i = 0; i < c.n; ++i) bias.set_f64(i, bd(rng) + (bd(rng) > 0 ? 0.01 : -0.01));
  ir::ValueId y;
  if (mm) {
    y = b.node(OpKind::MatMul, {dqx, dqw});
    if (c.bias) {
      y = b.node(OpKind::Add, {y, b.constant("bias", bias)});
      if (c.residual) {
        y = b.node(OpKind::Add, {y, b.input("r", DType::kFloat32, {c.batch, c.m, c.n})});
      } else if (c.act == "relu") {
        y = b.node(OpKind::Relu, {y});
      } else {
        const std::string approx = c.act == "gelu_tanh" ? "tanh" : "none";
        y = b.node(OpKind::Gelu, {y}, attrs({{"approximate", Attribute::of_string(approx)}}));
      }
    }
  } else {
    y = b.node(OpKind::Gemm, {dqx, dqw, b.constant("bias", bias)},
               attrs({{"transB", Attribute::of_int(1)}, {"alpha", Attribute::of_float(0.75)}}));
  }
  if (c.requantize) {
    Tensor sy = Tensor::from_f32({0.02f}, {});
    Tensor zy(DType::kFloat8E4M3FN, {});
    y = add_qdq(b, y, "y", sy, zy).second;
  }
  b.output(y);
  if (c.chain) {
    Tensor w2(DType::kFloat8E4M3FN, {c.n, 32});
    for (int64_t i = 0; i < w2.numel(); ++i) w2.set_f64(i, (sign(rng) ? 1 : -1) * wd(rng) * 240.0);
    Tensor ws2 = Tensor::from_f32({static_cast<float>(sd(rng))}, {});
    auto dqw2 = b.node(OpKind::DequantizeLinear, {b.constant("w2", w2), b.constant("ws2", ws2),
                                                  b.constant("wz2", zy_zero())});
    b.output(b.node(OpKind::MatMul, {y, dqw2}));
  }
  return b.build();
}

// Inputs: qdq_inputs (tests/qdq_cases.h), x uniform in [-4, 4].

// "" when `got` matches `want` (the reference on the unoptimized graph):
// float8 products are exact in float32, so without requantization every
// element is within `rel` * max|want| + 1e-5 (float32 sums in another order:
// rel 1e-4 on the CPU and the GPU in fp32; the caller widens it for fp16).
// Requantized to e4m3fn (3 mantissa bits), a sum that rounds the other way
// at a tie moves an element by one float8 step, 1/8 of its magnitude: each
// element within that plus `rel` * peak, and at most 2% of them past `rel`.
inline std::string check_fp8_outputs(const Fp8Case& c, const ir::Tensor& want,
                                     const ir::Tensor& got, double rel = 1e-4) {
  if (want.shape() != got.shape() || want.dtype() != got.dtype()) return "shape or dtype differs";
  double peak = 0;
  for (int64_t i = 0; i < want.numel(); ++i) peak = std::max(peak, std::fabs(want.get_f64(i)));
  int64_t off = 0, far = 0;
  double worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = want.get_f64(i), d = std::fabs(w - got.get_f64(i));
    if (!(d == d)) return "NaN in the result";
    worst = std::max(worst, d);
    const double tol = rel * peak + 1e-5;
    if (d > tol) ++off;
    if (d > tol + std::fabs(w) / 8 + 0.02 / 512) ++far;  // one e4m3 step (subnormal: sy * 2^-9)
  }
  const bool ok = c.requantize ? far == 0 && off * 50 <= want.numel() : off == 0;
  if (ok) return "";
  return "max |diff| " + std::to_string(worst) + ", " + std::to_string(off) + " of " +
         std::to_string(want.numel()) + " elements off (peak |want| " + std::to_string(peak) + ")";
}

// The chained cases' second output (`want2`, `got2` [..., M, 32]): it reads
// the first output's float8 values, so an element of the first that rounded
// the other way (checked by check_fp8_outputs) moves each of its row's second
// outputs by at most its difference times the largest dequantized weight:
// |got2 - want2| <= sum_k |got1 - want1|[row, k] * kFp8MaxWeight + rel * peak + 1e-5.
inline std::string check_fp8_chain(const ir::Tensor& want1, const ir::Tensor& got1,
                                   const ir::Tensor& want2, const ir::Tensor& got2,
                                   double rel = 1e-4) {
  if (want2.shape() != got2.shape() || want2.dtype() != got2.dtype())
    return "second output: shape or dtype differs";
  const int64_t n = want1.shape().back(), n2 = want2.shape().back();
  double peak = 0;
  for (int64_t i = 0; i < want2.numel(); ++i) peak = std::max(peak, std::fabs(want2.get_f64(i)));
  for (int64_t row = 0; row < want2.numel() / n2; ++row) {
    double moved = 0;
    for (int64_t k = 0; k < n; ++k)
      moved += std::fabs(want1.get_f64(row * n + k) - got1.get_f64(row * n + k));
    for (int64_t j = 0; j < n2; ++j) {
      const double d = std::fabs(want2.get_f64(row * n2 + j) - got2.get_f64(row * n2 + j));
      if (!(d <= moved * kFp8MaxWeight + rel * peak + 1e-5))
        return "second output row " + std::to_string(row) + ": |diff| " + std::to_string(d) +
               " past " + std::to_string(moved * kFp8MaxWeight + rel * peak + 1e-5);
    }
  }
  return "";
}

// Both outputs of a case checked: `want` and `got` by the graph's output
// names (`outputs`, in order).
inline std::string check_fp8_case(const Fp8Case& c, const std::vector<std::string>& outputs,
                                  const std::map<std::string, ir::Tensor>& want,
                                  const std::map<std::string, ir::Tensor>& got, double rel = 1e-4) {
  const ir::Tensor& w1 = want.at(outputs[0]);
  const ir::Tensor& g1 = got.at(outputs[0]);
  std::string d = check_fp8_outputs(c, w1, g1, rel);
  if (!d.empty() || !c.chain) return d;
  return check_fp8_chain(w1, g1, want.at(outputs[1]), got.at(outputs[1]), rel);
}

}  // namespace graphc::testing
