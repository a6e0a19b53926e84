// Shared by the GPU tests: run a graph on the GPU (driver::execute_on_gpu)
// and on the reference executor with the same fresh random inputs, and
// compare every output. Tolerances: float32/float64 |d| <= 1e-5 + 1e-4|ref|
// (CUDA's single-precision math differs from the host's by ulps),
// float16/bfloat16 one storage ulp (2^-10 / 2^-7 relative), integers and
// bools exact. `half_atol`: an extra absolute tolerance for float16/bfloat16
// results of fused chains or reductions, whose kernel keeps intermediates in
// float and rounds once where the reference rounds after every op.
// `rtol_f32` overrides the float32 relative tolerance (long reductions);
// `options` picks library or generated gemms and convs. `half_ulps` scales the
// float16/bfloat16 relative tolerance: a fused GEMM epilogue rounds once where
// the reference rounds after the product, the bias and the activation, so its
// results may sit two storage ulps from the reference's.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <string>
#include <string_view>

#include "driver/gpu_execute.h"
#include "reference/executor.h"
#include "tests/test_util.h"

namespace graphc::testing {

inline double gpu_tolerance_for(ir::DType dt, double rtol_f32 = 1e-4) {
  if (dt == ir::DType::kFloat16) return 1.0 / 1024;
  if (dt == ir::DType::kBFloat16) return 1.0 / 128;
  if (dt == ir::DType::kFloat32 || dt == ir::DType::kFloat64) return rtol_f32;
  return 0;
}

inline void check_gpu_matches_reference(const ir::Graph& g, std::string_view what, double lo = -2,
                                        double hi = 2, double half_atol = 0, double rtol_f32 = 1e-4,
                                        const emit::LowerOptions& options = {},
                                        double half_ulps = 1) {
  INFO(what);
  std::map<std::string, ir::Tensor> feeds;
  for (ir::ValueId id : g.inputs)
    feeds[g.value(id).name] =
        random_tensor(g.value(id).dtype, g.value(id).shape, test_rng(), lo, hi);
  auto want = reference::execute(g, feeds);
  REQUIRE(want.ok());
  auto got = driver::execute_on_gpu(g, feeds, options);
  INFO((got.ok() ? "" : got.status().message()));
  REQUIRE(got.ok());
  for (const auto& [name, t] : *want) {
    REQUIRE(got->count(name));
    const ir::Tensor& o = got->at(name);
    REQUIRE(o.dtype() == t.dtype());
    REQUIRE(o.numel() == t.numel());
    const bool half = t.dtype() == ir::DType::kFloat16 || t.dtype() == ir::DType::kBFloat16;
    const double rtol = gpu_tolerance_for(t.dtype(), rtol_f32) * (half ? half_ulps : 1);
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < t.numel(); ++i) {
      double a = t.get_f64(i), b = o.get_f64(i);
      if (std::isnan(a) && std::isnan(b)) continue;
      if (std::isinf(a) && a == b) continue;
      bool ok = rtol == 0 ? a == b
                          : std::fabs(a - b) <=
                                std::max(1e-5 + rtol * std::fabs(a), half ? half_atol : 0.0);
      if (!ok && bad++ == 0) first = i;
    }
    INFO(name << ": " << bad << " of " << t.numel() << " differ; first at " << first
              << ": reference " << (first >= 0 ? t.get_f64(first) : 0) << ", gpu "
              << (first >= 0 ? o.get_f64(first) : 0));
    CHECK(bad == 0);
  }
}

// Integer results: the GPU's outputs of `optimized` (the graph as the
// passes left it) on `feeds` are the reference's outputs of `g`, byte for byte.
inline void check_gpu_bit_exact(const ir::Graph& g, const ir::Graph& optimized,
                                const std::map<std::string, ir::Tensor>& feeds,
                                const emit::LowerOptions& options = {}) {
  auto want = reference::execute(g, feeds);
  REQUIRE(want.ok());
  auto got = driver::execute_on_gpu(optimized, feeds, options);
  INFO((got.ok() ? "" : got.status().message()));
  REQUIRE(got.ok());
  for (const auto& [name, t] : *want) CHECK(t.same_bytes(got->at(name)));
}

// Library GEMM/conv results: per element |gpu - ref| <= rtol * (|ref| + sqrt(terms)),
// `terms` the products in one output sum (fp16/bf16/TF32 rounding of a sum of
// K products grows with sqrt(K)). Returns the worst scaled error
// |gpu - ref| / (|ref| + sqrt(terms)) (inf when one is NaN), for the tests' logs.
inline double check_within_terms(const ir::Tensor& ref, const ir::Tensor& got, double rtol,
                                 int64_t terms, const std::string& what) {
  REQUIRE(ref.numel() == got.numel());
  const double scale = std::sqrt(static_cast<double>(terms));
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double a = ref.get_f64(i), b = got.get_f64(i);
    const double err = std::fabs(a - b) / (std::fabs(a) + scale);
    worst = std::isnan(err) ? INFINITY : std::max(worst, err);
    if (!(std::fabs(a - b) <= rtol * (std::fabs(a) + scale)) && bad++ == 0) first = i;
  }
  INFO(what << ": " << bad << " of " << ref.numel() << " differ; first at " << first
            << ": reference " << (first >= 0 ? ref.get_f64(first) : 0) << ", gpu "
            << (first >= 0 ? got.get_f64(first) : 0) << "; worst scaled error " << worst
            << " (rtol " << rtol << ")");
  CHECK(bad == 0);
  return worst;
}

}  // namespace graphc::testing
