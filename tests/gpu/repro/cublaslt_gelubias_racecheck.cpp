// Standalone (no graphc) repro for docs/reports/gpu-sanitizers.md: racecheck
// reported shared-memory hazards inside cuBLASLt's Hopper kernels
// nvjet_sm90_hsh_*_gelubias_* when graphc's tuner ran an fp16 GELU+bias
// matmul (512x1024x1024). This runs the same kind of call with plain
// cuBLASLt, once per heuristic candidate (up to 16, as the tuner does):
// candidate 0 is checked against a CPU reference, every other candidate
// against candidate 0, and each candidate is repeated REPEATS times and must
// give the same bits every time (a shared-memory race that really happened
// would show as a run that differs). EPILOGUE (gelubias, bias, gelu, none)
// tells which part of the fused call the hazards come with.
//   nvcc -O2 -arch=sm_90 -o /tmp/lt_race tests/gpu/repro/cublaslt_gelubias_racecheck.cpp -lcublasLt
//   /tmp/lt_race [EPILOGUE] [REPEATS]   # plain: one line per candidate, exit 0 when all agree
//   compute-sanitizer --tool racecheck --racecheck-report analysis /tmp/lt_race gelubias 1
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
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

// The CPU reference of column-major D = epilogue(A * B + bias), in double.
static double reference_at(const std::vector<__half>& a, const std::vector<__half>& b,
                           const std::vector<__half>& bias, int m, int k, int row, int col,
                           bool add_bias, bool gelu) {
  double acc = 0;
  for (int p = 0; p < k; ++p)
    acc += double(__half2float(a[size_t(p) * m + row])) * __half2float(b[size_t(col) * k + p]);
  if (add_bias) acc += __half2float(bias[row]);
  // cuBLASLt's GELU is the tanh approximation.
  if (gelu)
    acc = 0.5 * acc * (1 + std::tanh(0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)));
  return acc;
}

int main(int argc, char** argv) {
  const std::string epilogue_name = argc > 1 ? argv[1] : "gelubias";
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 1;
  cublasLtEpilogue_t epi;
  if (epilogue_name == "gelubias")
    epi = CUBLASLT_EPILOGUE_GELU_BIAS;
  else if (epilogue_name == "bias")
    epi = CUBLASLT_EPILOGUE_BIAS;
  else if (epilogue_name == "gelu")
    epi = CUBLASLT_EPILOGUE_GELU;
  else if (epilogue_name == "none")
    epi = CUBLASLT_EPILOGUE_DEFAULT;
  else {
    std::printf("unknown epilogue '%s' (gelubias, bias, gelu, none)\n", epilogue_name.c_str());
    return 2;
  }
  const bool add_bias = epi == CUBLASLT_EPILOGUE_GELU_BIAS || epi == CUBLASLT_EPILOGUE_BIAS;
  const bool gelu = epi == CUBLASLT_EPILOGUE_GELU_BIAS || epi == CUBLASLT_EPILOGUE_GELU;
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
  CHECK_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
  if (add_bias)
    CHECK_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias,
                                            sizeof dbias));
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
  std::printf("%s: %d candidates, %d run(s) each\n", epilogue_name.c_str(), found, repeats);
  const float alpha = 1.0f, beta = 0.0f;
  std::vector<__half> first, got(size_t(m) * n), again(got.size());
  int bad = 0;
  for (int i = 0; i < found; ++i) {
    int differing_runs = 0;
    for (int r = 0; r < repeats; ++r) {
      // Poison the output each run: a run that leaves any of it unwritten differs.
      CHECK_CUDA(cudaMemset(dd, 0xff, got.size() * 2));
      CHECK_LT(cublasLtMatmul(lt, op, &alpha, da, la, db, lb, &beta, dd, ld, dd, ld,
                              &results[i].algo, ws, ws_bytes, nullptr));
      CHECK_CUDA(cudaMemcpy(r == 0 ? got.data() : again.data(), dd, got.size() * 2,
                            cudaMemcpyDeviceToHost));
      if (r > 0 && std::memcmp(got.data(), again.data(), got.size() * 2) != 0) ++differing_runs;
    }
    double worst = 0;
    bool finite = true;
    if (first.empty()) {
      first = got;
      // Candidate 0 against the CPU: every 7th row and column (the full product is 0.5 G MACs).
      double worst_ref = 0;
      for (int col = 0; col < n; col += 7)
        for (int row = 0; row < m; row += 7) {
          const double want = reference_at(a, b, bias, m, k, row, col, add_bias, gelu);
          const double have = __half2float(got[size_t(col) * m + row]);
          worst_ref = std::fmax(worst_ref, std::fabs(have - want) / (1.0 + std::fabs(want)));
        }
      const bool ref_ok = worst_ref < 1e-2;
      bad += ref_ok ? 0 : 1;
      std::printf("candidate 0 against the CPU reference: max scaled difference %.3g%s\n",
                  worst_ref, ref_ok ? "" : "  <- WRONG");
    }
    for (size_t j = 0; j < got.size(); ++j) {
      const float g = __half2float(got[j]), f = __half2float(first[j]);
      finite = finite && std::isfinite(g);
      worst = std::fmax(worst, std::fabs(g - f) / (1.0f + std::fabs(f)));
    }
    const bool ok = finite && worst < 1e-2 && differing_runs == 0;
    bad += ok ? 0 : 1;
    std::printf(
        "candidate %d: workspace %zu B, max scaled difference to candidate 0 %.3g, "
        "runs differing from its first %d of %d%s\n",
        i, results[i].workspaceSize, worst, differing_runs, repeats - 1, ok ? "" : "  <- WRONG");
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
