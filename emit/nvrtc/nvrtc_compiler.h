// CUDA C++ -> CUBIN + PTX per architecture with NVRTC (no GPU or driver
// needed), in parallel, behind a content-addressed on-disk cache.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "support/status.h"

namespace graphc::emit {

struct ArchBinary {
  std::string arch;            // "sm_90"
  std::vector<uint8_t> cubin;  // for exactly this SM
  std::string ptx;             // .target of the same arch: JIT-able on newer GPUs
  bool from_cache = false;
};

struct CompiledModule {
  std::string name;
  std::vector<ArchBinary> binaries;  // in the order of the requested archs
};

enum class CacheEvent { kHit, kMiss, kCorrupt, kStored };

struct CompileOptions {
  // Cache folder; "" disables the cache. default_cache_dir() is the usual one.
  std::string cache_dir;
  // Off by default: fast math changes results (flush-to-zero, approximate
  // division/exp/tanh) so kernels would no longer match the reference executor.
  bool fast_math = false;
  int jobs = 0;  // parallel NVRTC compilations; 0: every core
  // Called once per (source, arch) cache lookup/store, from worker threads.
  std::function<void(CacheEvent, const std::string& name, const std::string& arch)> on_cache;
  // compile_cuda_many: called after each (source, arch) compilation finishes
  // (cache hits included) with the count done so far and the total. Calls are
  // serialized (never concurrent) and `done` increases by one each time.
  std::function<void(size_t done, size_t total)> on_progress;
  // compile_cuda_many: after the first failure start no further compilation;
  // the results of the ones never started say so. The first error in source
  // order is always a real one (everything before it was compiled).
  bool stop_on_error = false;
};

// $XDG_CACHE_HOME/graphc/nvrtc, else $HOME/.cache/graphc/nvrtc, else "".
std::string default_cache_dir();

// False when graphc was built without the CUDA toolkit (then every compile
// returns an "NVRTC not available" Status).
bool nvrtc_available();
Expected<std::string> nvrtc_version();  // "13.0"

// The SM versions this NVRTC can compile for (75, 80, 86, ... 120), ascending.
Expected<std::vector<int>> nvrtc_supported_archs();

// Checks that `arch` is sm_<digits>[a] and that this NVRTC supports it; the
// error names the supported architectures.
Status check_nvrtc_arch(const std::string& arch);

// Compiles one source for each arch ("sm_80", "sm_90", "sm_90a"). An NVRTC
// error returns a Status with the NVRTC log and the numbered source.
Expected<CompiledModule> compile_cuda(const std::string& source, const std::string& name,
                                      const std::vector<std::string>& archs,
                                      const CompileOptions& options = {});

struct CudaSource {
  std::string name;
  std::string source;
};

// Compiles every source for every arch on a thread pool. Results are in the
// order of `sources`, whatever order the compilations finish in.
std::vector<Expected<CompiledModule>> compile_cuda_many(const std::vector<CudaSource>& sources,
                                                        const std::vector<std::string>& archs,
                                                        const CompileOptions& options = {});

}  // namespace graphc::emit
