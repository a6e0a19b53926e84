// The work of `graphc build` without its terminal output: flags in, engine
// contents out. The CLI (cmd/build_cmd.cpp) and the Python package
// (python/src/core) both call it, so a build from Python is the CLI's build.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cmd/cli_common.h"
#include "cmd/optimizer_flags.h"
#include "cmd/trtexec_flags.h"
#include "driver/engine_build.h"
#include "driver/timing_cache.h"

namespace graphc::cli {

struct BuildFlags {
  std::string model;        // the ONNX file (or, with model_bytes set, its display name)
  std::string model_bytes;  // non-empty: the serialized model itself (no external data)
  std::string output;
  std::vector<std::string> archs;
  ShapeFlags shapes;
  OptimizerFlags opt;
  TrtexecFlags trtexec;
  bool no_cache = false;
  int jobs = 0;
  LoweringFlags lowering;
  bool tune = false;
  std::string timing_cache;
  // The CLI streams the weights from the graph into the file (BuiltEngine::weights);
  // otherwise they are in BuiltEngine::contents (Python returns the engine's bytes).
  bool stream_weights = false;
  // Set: plan a refit of the engine with this record (cmd/refit_pipeline.h):
  // the archs and shape profiles are the record's (the other flags come from
  // flags_from_recipe), the model's structure must equal the record's (checked
  // before the optimizer runs) and nothing is compiled or tuned.
  const engine::Refit* refit_of = nullptr;
};

// Where a build reports progress; every member may be empty.
struct BuildHooks {
  std::function<void(std::string_view phase)> on_phase;  // "import", "optimize", ...
  std::function<void(size_t done, size_t total)> on_compiled;
  std::function<void(driver::TuneLogLevel, const std::string&)> log;  // warnings, info, debug
};

struct BuiltEngine {
  engine::EngineContents contents;  // its weights are empty when `weights` is set
  std::unique_ptr<ir::Graph> graph;  // the optimized graph `weights` reads from
  std::optional<engine::WeightsSource> weights;
  driver::BuildStats stats;
  std::vector<std::string> archs;  // as built: sorted sm_NN
  std::string cache_dir;           // the NVRTC cache used; "" with --no-cache
  driver::LoadedTimingCache timing_cache;
  bool tuning = false;  // a timing cache or --tune took part
  // A build for shape ranges: the graph's symbolic shapes and the profiles.
  std::unique_ptr<ir::SymbolicShapes> range;
  std::vector<driver::ShapeProfile> profiles;
};

// Checked before any work, so a typo in -o does not cost a whole build.
// write_engine_file checks again at the end (the folder may change meanwhile).
Status check_output_path(const std::string& model, const std::string& output);

// Checks the flags, imports, optimizes, lowers and compiles; writes nothing.
// Flags are checked before any work (f.output too, when set).
Expected<BuiltEngine> build_engine_from_flags(const BuildFlags& f, const BuildHooks& hooks);

// Writes the timing cache back (atomically) when the build added timings or
// replaced a damaged file; `written` says whether it did.
Status write_back_timing_cache(const BuildFlags& f, const BuiltEngine& built, bool* written);

}  // namespace graphc::cli
