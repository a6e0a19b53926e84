// What `graphc run` reports: the text on stdout, the --json report, and the
// trtexec-style exports (--exportTimes: every timed iteration; --exportProfile:
// the per-launch profile). Built from plain data, so no GPU is needed to test
// the formatting; every JSON document is written by support/json.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cmd/run_profile.h"
#include "cmd/run_support.h"
#include "runtime/engine.h"
#include "support/json.h"

namespace graphc::cli {

// The timed loop's measurements, one entry per iteration. h2d_ms and d2h_ms
// stay empty with --noDataTransfers (no copies in the loop).
struct IterationTimes {
  std::vector<double> compute_ms, h2d_ms, d2h_ms, enqueue_ms;
  double wall_s = 0;
};

struct RunInputLine {
  std::string name, dtype, shape, source;  // source: the .npy path, or "random data (seed N)"
};

struct RunReport {
  std::string engine;  // the path given
  int device = 0;
  std::string device_name;
  std::vector<RunInputLine> inputs;
  std::vector<RunInputLine> outputs;  // source empty: the shape this run produced
  int kernels = 0;
  bool cuda_graph = true;
  bool data_transfers = true;  // false: --noDataTransfers
  uint32_t seed = 1;
  double warmup_ms = 0;
  // Host wall time of loading, as trtexec reports it: reading the engine
  // file's manifest and code, loading onto the device (driver, modules, the
  // weights streamed and checksummed, libraries), creating the context.
  double open_ms = 0, device_load_ms = 0, context_ms = 0;
  runtime::LoadTimeline load_timeline;  // inside device_load_ms
  // The first run (CUDA graph capture included, outputs copied back), and the
  // time from the command's start to its outputs: a cold start's cost.
  double first_run_ms = 0, first_result_ms = 0;
  // The first result's wall-clock time (ms since the Unix epoch): a process
  // that starts graphc measures its cold start, process start-up included.
  double first_result_unix_ms = 0;
  IterationTimes times;
  // context: arena + library workspaces + I/O buffers
  int64_t weights_bytes = 0, arena_bytes = 0, workspace_bytes = 0, context_bytes = 0;
  std::vector<CheckResult> checks;
  double check_rtol = 0;
  std::optional<runtime::LaunchProfile> profile;
  ProfileRooflineGpu roofline_gpu;  // the profile's roofline peaks
  std::vector<std::string> written;  // --output-dir files
};

// The report printed on stdout (the profile table included).
std::string run_report_text(const RunReport& r);
// The --json document.
std::string run_report_json(const RunReport& r);
// --exportTimes: every timed iteration (h2d/d2h null without data transfers).
std::string run_times_json(const RunReport& r);
// --exportProfile: the per-launch profile (r.profile must be set).
std::string run_profile_json(const RunReport& r);

}  // namespace graphc::cli
