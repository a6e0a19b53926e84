#include "runtime/cublaslt_tuning.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "runtime/cublaslt.h"
#include "runtime/cublaslt_algorithm.h"
#include "runtime/cuda_driver.h"
#include "support/half.h"
#include "support/minifloat.h"

namespace graphc::runtime {

namespace {

// Owns what a tuning session allocates; frees it in reverse on every path.
struct Session {
  const DriverApi* cu = nullptr;
  const CublasLtApi* lt = nullptr;
  CUdevice device = 0;
  bool retained = false;
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  CUstream stream = nullptr;
  CUevent start = nullptr, stop = nullptr;
  std::vector<CUdeviceptr> buffers;

  ~Session() {
    if (stream) cu->cuStreamSynchronize(stream);
    if (start) cu->cuEventDestroy(start);
    if (stop) cu->cuEventDestroy(stop);
    for (CUdeviceptr b : buffers) cu->cuMemFree(b);
    if (stream) cu->cuStreamDestroy(stream);
    if (desc) lt->cublasLtMatmulDescDestroy(desc);
    if (handle) lt->cublasLtDestroy(handle);
    if (retained) cu->cuDevicePrimaryCtxRelease(device);
  }

  Expected<CUdeviceptr> alloc(size_t bytes, const char* what) {
    CUdeviceptr p = 0;
    RETURN_IF_ERROR(device_alloc(*cu, &p, std::max<size_t>(bytes, 1), what));
    buffers.push_back(p);
    return p;
  }
};

size_t element_bytes(int32_t dtype) {
  return dtype == 1 || dtype == 6 ? 4 : dtype == 3 || dtype == 17 ? 1 : 2;
}

// `elements` values uniform in [-1, 1] in the matmul's dtype.
std::string random_bytes(int32_t dtype, int64_t elements, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::string out(static_cast<size_t>(elements) * element_bytes(dtype), '\0');
  for (int64_t i = 0; i < elements; ++i) {
    const float v = dist(rng);
    if (dtype == 3) {  // int8 operands: uniform in [-127, 127]
      out[static_cast<size_t>(i)] = static_cast<char>(static_cast<int8_t>(std::lround(v * 127)));
    } else if (dtype == 17) {  // float8 e4m3fn operands
      out[static_cast<size_t>(i)] =
          static_cast<char>(double_to_minifloat(MiniFloat::kE4M3FN, v, /*saturate=*/true));
    } else if (dtype == 1) {
      std::memcpy(out.data() + i * 4, &v, 4);
    } else {
      const uint16_t h = dtype == 10 ? float_to_half_bits(v) : float_to_bf16_bits(v);
      std::memcpy(out.data() + i * 2, &h, 2);
    }
  }
  return out;
}

std::vector<float> to_floats(int32_t dtype, const std::string& bytes) {
  const size_t n = bytes.size() / element_bytes(dtype);
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) {
    if (dtype == 17) {  // a float8 D
      out[i] = static_cast<float>(
          minifloat_to_double(MiniFloat::kE4M3FN, static_cast<uint8_t>(bytes[i])));
    } else if (dtype == 6) {  // an int8 matmul's int32 D
      int32_t v;
      std::memcpy(&v, bytes.data() + i * 4, 4);
      out[i] = static_cast<float>(v);
    } else if (dtype == 1) {
      std::memcpy(&out[i], bytes.data() + i * 4, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, bytes.data() + i * 2, 2);
      out[i] = dtype == 10 ? half_bits_to_float(h) : bf16_bits_to_float(h);
    }
  }
  return out;
}

// Relative to the output's largest magnitude: candidates differ only in
// summation order (split-K, tile shapes), which moves the last bits.
double output_tolerance(const engine::MatmulParams& p) {
  if (p.int8()) return 0;  // integer sums: every algorithm gives the same bits
  // Exact products; Hopper's FP8 tensor cores keep fewer than float32's bits
  // between cuBLASLt's promotions of the sums.
  // A float8 D: a sum that rounds the other way at a tie moves by one e4m3
  // step, at most 1/8 of the largest magnitude.
  if (p.fp8_output()) return 0.125;
  if (p.fp8()) return 1e-3;
  if (p.dtype != 1) return 2e-2;
  return p.compute == engine::MatmulCompute::kF32FastTf32 ? 1e-2 : 1e-4;
}

}  // namespace

Expected<uint32_t> cublaslt_version() {
  ASSIGN_OR_RETURN(const CublasLtApi* lt, load_cublaslt());
  return static_cast<uint32_t>(lt->cublasLtGetVersion());
}

Expected<MatmulTuning> tune_cublaslt_matmul(const engine::MatmulParams& p, uint64_t workspace_limit,
                                            const MatmulTimingOptions& o) {
  if (o.max_candidates < 1 || o.iterations < 1 || o.warmup < 0)
    return invalid_argument("tuning needs at least one candidate and one timed launch");
  Session s;
  ASSIGN_OR_RETURN(s.cu, load_driver());
  ASSIGN_OR_RETURN(s.lt, load_cublaslt());
  const DriverApi& cu = *s.cu;
  const CublasLtApi& lt = *s.lt;
  RETURN_IF_ERROR(device_usable());
  GRAPHC_CU(cu, cuDeviceGet(&s.device, o.device), "cuDeviceGet");
  CUcontext ctx = nullptr;
  GRAPHC_CU(cu, cuDevicePrimaryCtxRetain(&ctx, s.device), "cuDevicePrimaryCtxRetain");
  s.retained = true;
  GRAPHC_CU(cu, cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  int major = 0, minor = 0;
  GRAPHC_CU(cu,
            cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, s.device),
            "compute capability");
  GRAPHC_CU(cu,
            cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, s.device),
            "compute capability");
  const auto cc = static_cast<uint32_t>(major * 10 + minor);
  GRAPHC_CU(cu, cuStreamCreate(&s.stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  GRAPHC_CU(cu, cuEventCreate(&s.start, CU_EVENT_DEFAULT), "cuEventCreate");
  GRAPHC_CU(cu, cuEventCreate(&s.stop, CU_EVENT_DEFAULT), "cuEventCreate");
  RETURN_IF_ERROR(check_cublaslt(lt, lt.cublasLtCreate(&s.handle), "cublasLtCreate"));

  // Operands of the matmul's exact extents (strides, leading dims, shared
  // batches), random, uploaded once; D is what every candidate overwrites.
  std::mt19937 rng(0x6a7c);
  auto upload = [&](int64_t elements, const char* what, int32_t dtype) -> Expected<CUdeviceptr> {
    const std::string host = random_bytes(dtype, elements, rng);
    ASSIGN_OR_RETURN(CUdeviceptr d, s.alloc(host.size(), what));
    GRAPHC_CU(cu, cuMemcpyHtoD(d, host.data(), host.size()), what);
    return d;
  };
  ASSIGN_OR_RETURN(CUdeviceptr a, upload(p.a_extent(), "the tuning A operand", p.dtype));
  ASSIGN_OR_RETURN(CUdeviceptr b, upload(p.b_extent(), "the tuning B operand", p.dtype));
  CUdeviceptr c = 0, bias = 0, d_scale = 0;
  if (p.has_c) {
    ASSIGN_OR_RETURN(c, upload(p.c_extent(), "the tuning C operand", p.c_dtype()));
  }
  if (p.has_bias) {
    ASSIGN_OR_RETURN(bias, upload(p.n, "the tuning bias", p.c_dtype()));
  }
  if (p.fp8_output()) {
    const auto scale = static_cast<float>(p.d_scale);
    ASSIGN_OR_RETURN(d_scale, s.alloc(sizeof scale, "the tuning D scale"));
    GRAPHC_CU(cu, cuMemcpyHtoD(d_scale, &scale, sizeof scale), "the tuning D scale");
  }
  const size_t d_bytes = static_cast<size_t>(p.d_extent()) * element_bytes(p.d_dtype());
  ASSIGN_OR_RETURN(CUdeviceptr d, s.alloc(d_bytes, "the tuning D output"));
  CUdeviceptr workspace = 0;
  if (workspace_limit > 0) {
    ASSIGN_OR_RETURN(workspace, s.alloc(workspace_limit, "the tuning workspace"));
  }

  ASSIGN_OR_RETURN(std::unique_ptr<MatmulSetup> setup, make_matmul_setup(lt, p));
  ASSIGN_OR_RETURN(s.desc, make_matmul_desc(lt, p, bias ? bias : 256, d_scale));
  ASSIGN_OR_RETURN(auto results, matmul_heuristics(lt, s.handle, *setup, s.desc, workspace_limit,
                                                   o.max_candidates));

  auto ptr = [](CUdeviceptr v) { return reinterpret_cast<void*>(static_cast<uintptr_t>(v)); };
  auto launch = [&](const cublasLtMatmulAlgo_t& algo) {
    // cuBLASLt's A is graphc's B (see cublaslt.h); beta is 0 without C.
    return check_cublaslt(
        lt,
        lt.cublasLtMatmul(s.handle, s.desc, setup->alpha_ptr(), ptr(b), setup->a, ptr(a), setup->b,
                          setup->beta_ptr(), setup->c_address(ptr(c), ptr(d)),
                          setup->c_layout(), ptr(d),
                          setup->d, &algo, ptr(workspace), workspace_limit,
                          reinterpret_cast<cudaStream_t>(s.stream)),
        "cublasLtMatmul");
  };
  // One candidate: output check first (D poisoned with NaNs so a launch that
  // writes nothing cannot pass), then warm-up and timed launches.
  std::vector<float> reference;
  auto run_candidate = [&](const cublasLtMatmulHeuristicResult_t& r,
                           MatmulCandidate& out) -> Status {
    ASSIGN_OR_RETURN(out.algorithm, read_cublaslt_algorithm(lt, r.algo, r.workspaceSize, cc));
    GRAPHC_CU(cu, cuMemsetD8(d, 0xff, d_bytes), "poisoning D");
    // cuMemsetD8 and cuMemcpyHtoD run on the legacy stream, which a
    // non-blocking stream does not wait for.
    GRAPHC_CU(cu, cuCtxSynchronize(), "poisoning D");
    RETURN_IF_ERROR(launch(r.algo));
    std::string host(d_bytes, '\0');
    GRAPHC_CU(cu, cuStreamSynchronize(s.stream), "running the candidate");
    GRAPHC_CU(cu, cuMemcpyDtoH(host.data(), d, d_bytes), "reading D back");
    std::vector<float> got = to_floats(p.d_dtype(), host);
    if (reference.empty()) {
      for (size_t i = 0; i < got.size(); ++i)
        if (!std::isfinite(got[i]))
          return device_error("output element {} is {} (random inputs in [-1, 1])", i, got[i]);
      reference = got;
    }
    double scale = 0;
    for (float v : reference) scale = std::max(scale, std::fabs(static_cast<double>(v)));
    for (size_t i = 0; i < got.size(); ++i) {
      const double diff = std::fabs(static_cast<double>(got[i]) - reference[i]);
      if (!(diff <= out.max_abs_diff)) out.max_abs_diff = std::isnan(diff) ? INFINITY : diff;
    }
    if (!(out.max_abs_diff <= output_tolerance(p) * std::max(scale, 1e-6)))
      return device_error("its output differs from the heuristic's first choice by {} (max |D| {})",
                          out.max_abs_diff, scale);
    for (int i = 0; i < o.warmup; ++i) RETURN_IF_ERROR(launch(r.algo));
    std::vector<float> times;
    for (int i = 0; i < o.iterations; ++i) {
      GRAPHC_CU(cu, cuEventRecord(s.start, s.stream), "cuEventRecord");
      RETURN_IF_ERROR(launch(r.algo));
      GRAPHC_CU(cu, cuEventRecord(s.stop, s.stream), "cuEventRecord");
      GRAPHC_CU(cu, cuEventSynchronize(s.stop), "timing the candidate");
      float ms = 0;
      GRAPHC_CU(cu, cuEventElapsedTime(&ms, s.start, s.stop), "cuEventElapsedTime");
      times.push_back(ms);
    }
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    out.median_ms = times[times.size() / 2];
    return Status::ok_status();
  };

  MatmulTuning tuning;
  for (size_t i = 0; i < results.size(); ++i) {
    MatmulCandidate cand;
    cand.rank = static_cast<int>(i);
    cand.status = run_candidate(results[i], cand);
    // A sticky error poisons the context: no later candidate could run.
    RETURN_IF_ERROR(device_usable());
    if (!cand.status.ok()) cu.cuStreamSynchronize(s.stream);
    if (i == 0 && !cand.status.ok())
      return cand.status.with_context(
          "cuBLASLt's first heuristic choice failed; nothing to compare");
    tuning.candidates.push_back(std::move(cand));
  }
  for (size_t i = 0; i < tuning.candidates.size(); ++i) {
    const MatmulCandidate& c = tuning.candidates[i];
    if (c.status.ok() &&
        (tuning.best < 0 ||
         c.median_ms < tuning.candidates[static_cast<size_t>(tuning.best)].median_ms))
      tuning.best = static_cast<int>(i);
  }
  return tuning;
}

}  // namespace graphc::runtime
