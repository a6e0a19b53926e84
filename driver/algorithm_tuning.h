// Algorithm choice for library calls (`graphc build --tune`, `--timing-cache`):
// runs on the finished manifest, after lowering, and records in each
// LibraryCall the algorithm to run (algorithm, algorithm_config, tuned_ms).
//
// Each distinct call (same library, op, descriptor bytes and workspace) is
// settled once: with --tune, from the timing cache when it has this device's
// entry, else timed on the GPU by the library's tuner (and added to the cache);
// without --tune, from the cache alone (no GPU needed: an entry measured on a
// device of a target architecture), else left to the heuristic at load.
//
// A library plugs in with one LibraryTuner entry (algorithm_tuning.cpp): its
// version and a function that times one call's candidates.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "driver/timing_cache.h"
#include "engine_format/engine_file.h"
#include "runtime/cublaslt_tuning.h"
#include "support/status.h"

namespace graphc::driver {

enum class TuneLogLevel { kDebug, kInfo, kWarning };

struct TuneOptions {
  bool measure = false;          // --tune: time candidates on device 0
  TimingCache* cache = nullptr;  // --timing-cache: hits skip timing; new timings are added
  // Target architectures ("sm_90"): which cache entries a build without
  // --tune may use.
  std::vector<std::string> archs;
  runtime::MatmulTimingOptions timing;
  std::function<void(TuneLogLevel, const std::string&)> log;
  bool enabled() const { return measure || cache != nullptr; }
};

struct TuneStats {
  size_t calls = 0;        // library calls in the engine
  size_t distinct = 0;     // distinct calls (identical ones are settled once)
  size_t timed = 0;        // distinct calls timed on the GPU
  size_t candidates = 0;   // candidate algorithms timed, over all of them
  size_t cache_hits = 0;   // distinct calls the timing cache answered
  size_t heuristic = 0;    // distinct calls left to the heuristic at load
  size_t cache_added = 0;  // entries added to the timing cache
  double seconds = 0;
};

// What one library's tuner measured for one call.
struct TuneOutcome {
  TimingValue best;                  // algorithm, config and median time to record
  double heuristic_ms = 0;           // the heuristic's first choice, for the log
  size_t candidates = 0;             // candidates timed
  std::vector<std::string> details;  // a line per candidate, for -v
};

struct TuneRequest {
  std::string_view op, params;
  uint64_t workspace_limit = 0;
  const runtime::MatmulTimingOptions* timing = nullptr;
};

struct LibraryTuner {
  std::string_view library;
  Expected<uint32_t> (*version)();                            // of the library on this machine
  Expected<TuneOutcome> (*tune)(const TuneRequest& request);  // on device 0
  std::string (*describe)(std::string_view op, std::string_view params);  // for logs
};

// The tuner of `library`, or null when none is wired in.
const LibraryTuner* find_library_tuner(std::string_view library);

// Device 0's name and compute capability (the timing cache's key).
struct DeviceIdentity {
  std::string name;
  uint32_t compute_capability = 0;
};
Expected<DeviceIdentity> tuning_device();

// Records algorithms in `manifest`'s library calls as described above. Errors:
// --tune without a usable GPU or library, a call whose every candidate failed.
Status tune_library_calls(engine::Manifest& manifest, const TuneOptions& options,
                          TuneStats* stats = nullptr);

}  // namespace graphc::driver
