// cuBLASLt, loaded at run time with dlopen like the driver (DESIGN principle
// 8): an engine without library calls never needs it, graphc links without
// it, and a missing library is a clear error only for engines that use it.
// The library is found at GRAPHC_CUBLASLT_PATH when set, else as
// libcublasLt.so.13 on the loader's path.
//
// Row-major matmuls map onto column-major cuBLASLt by computing D^T = B^T A^T:
// cuBLASLt's A is graphc's B and vice versa, m and n swap, and the bias (one
// value per graphc column) is one value per cuBLASLt row, as its epilogue wants.
#pragma once

#include <cublasLt.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine_format/matmul_params.h"
#include "runtime/cuda_driver.h"
#include "runtime/executable.h"
#include "support/status.h"

namespace graphc::runtime {

#define GRAPHC_CUBLASLT_FUNCTIONS(X)                                                         \
  X(cublasLtCreate)                                                                          \
  X(cublasLtDestroy)                                                                         \
  X(cublasLtGetStatusName)                                                                   \
  X(cublasLtGetStatusString)                                                                 \
  X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) \
      X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy)                           \
          X(cublasLtMatrixLayoutSetAttribute) X(cublasLtMatmulPreferenceCreate)              \
              X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute)     \
                  X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul) X(cublasLtGetVersion)  \
                      X(cublasLtMatmulAlgoInit) X(cublasLtMatmulAlgoCheck)                   \
                          X(cublasLtMatmulAlgoConfigGetAttribute)                            \
                              X(cublasLtMatmulAlgoConfigSetAttribute)

struct CublasLtApi {
#define GRAPHC_LT_FIELD(name) decltype(&::name) name = nullptr;
  GRAPHC_CUBLASLT_FUNCTIONS(GRAPHC_LT_FIELD)
#undef GRAPHC_LT_FIELD
};

// Loads the library once (thread-safe); the error names the path tried.
Expected<const CublasLtApi*> load_cublaslt();
// Loads `path` (uncached; for tests and load_cublaslt). The handle stays open.
Expected<CublasLtApi> load_cublaslt_from(const std::string& path);

// OK for CUBLAS_STATUS_SUCCESS, else "<what>: cuBLASLt error NAME (text)".
Status check_cublaslt(const CublasLtApi& api, cublasStatus_t status, const std::string& what);

// Per engine: one entry per launch (empty for kernels and copies) with the
// matrix layouts and the algorithm chosen at load time. Read-only once built,
// so contexts on several threads share it.
struct MatmulSetup {
  // Where `algo` came from: cuBLASLt's heuristic at load, the algorithm the
  // engine recorded (--tune), or the heuristic because the recorded one cannot
  // run on this GPU/library (`fallback_reason` says why; a warning was logged).
  enum class Source { kHeuristic, kRecorded, kFallback };
  MatmulSetup() = default;
  MatmulSetup(const MatmulSetup&) = delete;
  MatmulSetup& operator=(const MatmulSetup&) = delete;
  ~MatmulSetup();  // destroys the layouts

  const CublasLtApi* api = nullptr;
  engine::MatmulParams params;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;  // cuBLASLt's A, B
  cublasLtMatmulAlgo_t algo{};
  float alpha = 1.0f, beta = 0.0f;
  int32_t alpha_i32 = 1, beta_i32 = 0;  // an int8 matmul's (scale type int32)
  const void* alpha_ptr() const {
    return params.int8() ? static_cast<const void*>(&alpha_i32) : &alpha;
  }
  const void* beta_ptr() const {
    return params.int8() ? static_cast<const void*>(&beta_i32) : &beta;
  }
  // C's layout (D's when C has none of its own) and address: without C beta
  // is 0 and C is unread, so D's address serves, but not where C's layout has
  // another type than D's (a float8 D): cuBLASLt takes C aliasing D as in
  // place and then wants one layout (INVALID_VALUE on an H100), so null
  // there, as PyTorch's scaled_gemm passes.
  cublasLtMatrixLayout_t c_layout() const { return c ? c : d; }
  const void* c_address(const void* c_arg, const void* d_address) const {
    return c_arg ? c_arg : c ? nullptr : d_address;
  }
  Source source = Source::kHeuristic;
  std::string fallback_reason;
  uint64_t workspace_bytes = 0;  // what `algo` needs (at most the call's limit)
};

// The layouts of `params` (alpha/beta too), for the engine and for the tuner.
Expected<std::unique_ptr<MatmulSetup>> make_matmul_setup(const CublasLtApi& api,
                                                         const engine::MatmulParams& params);
// A matmul descriptor (transposes, epilogue, compute type) with `bias` as the
// bias pointer and, for a float8 D, `d_scale` as the address of its float
// scale (only their alignment matters to heuristics: 256 will do).
Expected<cublasLtMatmulDesc_t> make_matmul_desc(const CublasLtApi& api,
                                                const engine::MatmulParams& params,
                                                CUdeviceptr bias, CUdeviceptr d_scale = 0);
// Up to `count` algorithms cuBLASLt's heuristic offers for this matmul within
// `workspace_limit`, best first; an error when it offers none.
Expected<std::vector<cublasLtMatmulHeuristicResult_t>> matmul_heuristics(
    const CublasLtApi& api, cublasLtHandle_t handle, const MatmulSetup& setup,
    cublasLtMatmulDesc_t desc, uint64_t workspace_limit, int count);

class EngineMatmuls {
 public:
  // Sets up every matmul launch of `launches`; nothing is loaded when none is.
  static Expected<std::unique_ptr<EngineMatmuls>> create(const std::vector<Launch>& launches);
  ~EngineMatmuls();
  const CublasLtApi* api() const { return api_; }
  const MatmulSetup* setup(size_t launch) const { return setups_[launch].get(); }
  size_t launches() const { return setups_.size(); }
  // The set-up of a launch whose M varies over the engine's shape range, at
  // M = `m`: the load's own at the M the engine was built at, else made on
  // first use (layouts and cuBLASLt's heuristic, within the workspace every
  // context has) and kept for the engine's life, shared by launches with the
  // same descriptor; thread-safe. A range of M values sets up one entry each
  // (a few hundred bytes), which caching CUDA graphs per shape also bounds.
  Expected<const MatmulSetup*> setup_at(size_t launch, int64_t m) const;
  // The most any call's chosen algorithm needs: what each context allocates.
  uint64_t workspace_bytes() const { return workspace_bytes_; }

 private:
  const CublasLtApi* api_ = nullptr;
  cublasLtHandle_t handle_ = nullptr;  // for the heuristic queries
  std::vector<std::unique_ptr<MatmulSetup>> setups_;
  uint64_t workspace_bytes_ = 0;
  // Launches whose M varies: their calls, and the set-ups made per M, keyed
  // by the encoded parameters at that M.
  std::vector<std::optional<MatmulLaunch>> varying_;
  mutable std::mutex at_rows_mutex_;
  mutable std::map<std::string, std::unique_ptr<MatmulSetup>> at_rows_;
};

// Per execution context: its own handle, matmul descriptors (they hold the
// bias address, which depends on the context's arena) and workspace, so
// contexts run concurrently and a captured CUDA graph allocates nothing.
class ContextMatmuls {
 public:
  static Expected<std::unique_ptr<ContextMatmuls>> create(const EngineMatmuls& engine,
                                                          const DriverApi& driver);
  ~ContextMatmuls();
  // Points launch `i`'s bias at `bias` (0: none). Call before capturing.
  Status set_bias(size_t launch, CUdeviceptr bias);
  // Enqueues launch `i` with its argument addresses (A, B, [C], [bias], D),
  // with the engine's set-up of the launch or `at_shape` (EngineMatmuls::setup_at).
  Status run(size_t launch, const std::vector<CUdeviceptr>& args, CUstream stream,
             const MatmulSetup* at_shape = nullptr) const;

 private:
  const EngineMatmuls* engine_ = nullptr;
  const DriverApi* driver_ = nullptr;
  cublasLtHandle_t handle_ = nullptr;
  std::vector<cublasLtMatmulDesc_t> descs_;  // per launch; nullptr for non-matmuls
  CUdeviceptr workspace_ = 0;
  CUdeviceptr d_scales_ = 0;            // float8 D scales, one float each
  std::vector<int64_t> d_scale_index_;  // per launch: its scale's index, or -1
};

}  // namespace graphc::runtime
