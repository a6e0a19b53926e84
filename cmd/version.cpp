#include "cmd/version.h"

#include <cuda.h>
#include <fmt/format.h>
#ifdef GRAPHC_HAVE_NVRTC
#include <nvrtc.h>
#endif

#include <cstdlib>

#include "driver/engine_build.h"
#include "engine_format/engine_file.h"
#include "graphc_build_info.h"
#include "runtime/cublaslt_tuning.h"
#include "runtime/cuda_driver.h"
#include "runtime/cudnn.h"
#include "support/version.h"

namespace graphc::cli {

namespace {

// cuBLASLt 130100 -> "13.1.0"; cuDNN 9 uses the same major*10000 + minor*100 + patch.
std::string dotted(uint64_t v) {
  return fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
}

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

}  // namespace

std::string version_text() {
  std::string out = fmt::format("graphc {} (commit {})\n", kVersion, GRAPHC_GIT_COMMIT);
  out += fmt::format("engine format {}\n", engine::kFormatVersion);
  std::string nvrtc = "not built in";
#ifdef GRAPHC_HAVE_NVRTC
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) == NVRTC_SUCCESS) nvrtc = fmt::format("{}.{}", major, minor);
#endif
  out += fmt::format("built with CUDA {}.{} headers, NVRTC {}\n", CUDA_VERSION / 1000,
                     CUDA_VERSION % 1000 / 10, nvrtc);
  // What this machine has, as `graphc run` would load it.
  std::string driver = "not found (libcuda.so.1)";
  if (runtime::load_driver().ok()) {
    auto sm = driver::device_sm();
    driver = sm.ok() ? fmt::format("found, GPU 0 is sm_{}", *sm)
                     : fmt::format("found, no usable GPU ({})", sm.status().message());
  }
  out += "CUDA driver: " + driver + "\n";
  auto lt = runtime::cublaslt_version();
  out += lt.ok() ? fmt::format("cuBLASLt: {}\n", dotted(*lt))
                 : fmt::format("cuBLASLt: not found ({})\n",
                               env_or("GRAPHC_CUBLASLT_PATH", "libcublasLt.so.13"));
  auto dnn = runtime::load_cudnn();
  out += dnn.ok()
             ? fmt::format("cuDNN: {} ({})\n", dotted((*dnn)->cudnnGetVersion()), (*dnn)->path)
             : fmt::format("cuDNN: not found ({})\n", env_or("GRAPHC_CUDNN_PATH", "libcudnn.so.9"));
  return out;
}

}  // namespace graphc::cli
