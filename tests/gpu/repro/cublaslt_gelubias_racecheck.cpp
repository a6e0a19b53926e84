// Standalone (no graphc) repro for docs/reports/gpu-sanitizers.md: racecheck
// reported shared-memory hazards inside cuBLASLt's Hopper kernels
// nvjet_sm90_hsh_*_gelubias_* when graphc's tuner ran an fp16 GELU+bias
// matmul (512x1024x1024). This runs the same kind of call with plain
// cuBLASLt, once per heuristic candidate (up to 16, as the tuner does), and
// checks every candidate's output against the first one. If racecheck reports
// the same hazards here, they are not graphc's:
//   nvcc -O2 -o /tmp/lt_race tests/gpu/repro/cublaslt_gelubias_racecheck.cpp -lcublasLt
//   /tmp/lt_race                                  # plain: prints each algorithm, exit 0
//   compute-sanitizer --tool racecheck --racecheck-report analysis /tmp/lt_race
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK_CUDA(x)                                     \
  do {                                                    \
    cudaError_t e = (x);                                  \
    if (e != cudaSuccess) {                               \
      std::printf("%s: %s\n", #x, cudaGetErrorString(e)); \
      std::exit(1);                                       \
    }                                                     \
  } while (0)
#define CHECK_LT(x)                                            \
  do {                                                         \
    cublasStatus_t s = (x);                                    \
    if (s != CUBLAS_STATUS_SUCCESS) {                          \
      std::printf("%s: status %d\n", #x, static_cast<int>(s)); \
      std::exit(1);                                            \
    }                                                          \
  } while (0)

int main() {
  // Column-major D[m x n] = gelu(A[m x k] * B[k x n] + bias[m]), fp16, fp32 accumulation.
  const int m = 1024, n = 512, k = 1024;
  std::vector<__half> a(size_t(m) * k), b(size_t(k) * n), bias(m);
  unsigned seed = 12345;
  auto next = [&] {
    seed = seed * 1664525u + 1013904223u;
    return (static_cast<float>(seed >> 8) / 16777216.0f) * 2.0f - 1.0f;
  };
  for (auto& v : a) v = __float2half(next());
  for (auto& v : b) v = __float2half(next() / 16.0f);
  for (auto& v : bias) v = __float2half(next());
  __half *da, *db, *dbias, *dd;
  void* ws;
  const size_t ws_bytes = size_t(32) << 20;
  CHECK_CUDA(cudaMalloc(&da, a.size() * 2));
  CHECK_CUDA(cudaMalloc(&db, b.size() * 2));
  CHECK_CUDA(cudaMalloc(&dbias, bias.size() * 2));
  CHECK_CUDA(cudaMalloc(&dd, size_t(m) * n * 2));
  CHECK_CUDA(cudaMalloc(&ws, ws_bytes));
  CHECK_CUDA(cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(db, b.data(), b.size() * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dbias, bias.data(), bias.size() * 2, cudaMemcpyHostToDevice));

  cublasLtHandle_t lt;
  CHECK_LT(cublasLtCreate(&lt));
  cublasLtMatmulDesc_t op;
  CHECK_LT(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_GELU_BIAS;
  CHECK_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
  CHECK_LT(
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias, sizeof dbias));
  cublasLtMatrixLayout_t la, lb, ld;
  CHECK_LT(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, m, k, m));
  CHECK_LT(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, k, n, k));
  CHECK_LT(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16F, m, n, m));
  cublasLtMatmulPreference_t pref;
  CHECK_LT(cublasLtMatmulPreferenceCreate(&pref));
  CHECK_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &ws_bytes, sizeof ws_bytes));
  cublasLtMatmulHeuristicResult_t results[16];
  int found = 0;
  CHECK_LT(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, 16, results, &found));
  std::printf("%d candidates\n", found);
  const float alpha = 1.0f, beta = 0.0f;
  std::vector<__half> first, got(size_t(m) * n);
  int bad = 0;
  for (int i = 0; i < found; ++i) {
    CHECK_CUDA(cudaMemset(dd, 0xff, got.size() * 2));
    CHECK_LT(cublasLtMatmul(lt, op, &alpha, da, la, db, lb, &beta, dd, ld, dd, ld, &results[i].algo,
                            ws, ws_bytes, nullptr));
    CHECK_CUDA(cudaMemcpy(got.data(), dd, got.size() * 2, cudaMemcpyDeviceToHost));
    double worst = 0;
    bool finite = true;
    if (first.empty()) first = got;
    for (size_t j = 0; j < got.size(); ++j) {
      const float g = __half2float(got[j]), f = __half2float(first[j]);
      finite = finite && std::isfinite(g);
      worst = std::fmax(worst, std::fabs(g - f) / (1.0f + std::fabs(f)));
    }
    const bool ok = finite && worst < 1e-2;
    bad += ok ? 0 : 1;
    std::printf("candidate %d: workspace %zu B, max scaled difference to candidate 0 %.3g%s\n", i,
                results[i].workspaceSize, worst, ok ? "" : "  <- WRONG");
  }
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatmulDescDestroy(op);
  cublasLtDestroy(lt);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dbias);
  cudaFree(dd);
  cudaFree(ws);
  return bad ? 1 : 0;
}
