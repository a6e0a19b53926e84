// The engine path: an optimized graph becomes an engine file's contents
// (manifest, code per kernel module and architecture, weights), and a
// validated engine becomes what the runtime executes on this device.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "driver/algorithm_tuning.h"
#include "driver/shape_profiles.h"
#include "emit/nvrtc/nvrtc_compiler.h"
#include "emit/plan/gpu_plan.h"
#include "engine_format/engine_file.h"
#include "ir/graph.h"
#include "ir/symbolic_shapes.h"
#include "runtime/executable.h"

namespace graphc::driver {

struct BuildOptions {
  // Target architectures, as resolve_archs returns them (sorted, distinct sm_NN).
  std::vector<std::string> archs;
  std::string precision = "fp32";
  emit::LowerOptions lower;      // --gemm, --allow-tf32
  emit::CompileOptions compile;  // cache folder, jobs; progress and stop_on_error are set here
  TuneOptions tune;              // --tune, --timing-cache: algorithms for library calls
  // Called when a phase starts: "emit" (lowering to kernels), "tune" (only
  // with tuning options), "compile".
  std::function<void(std::string_view phase)> on_phase;
  // Called after each (kernel module, architecture) compilation, cache hits
  // included, with the count done and the total; never concurrently.
  std::function<void(size_t done, size_t total)> on_compiled;
  // Set: the engine serves shape ranges. `range` is the graph's symbolic
  // shapes over the profiles' bounding range (driver::optimize_for_range),
  // `profiles` the ranges the engine records, one profile each (the graph's
  // inputs not in a profile keep their shapes).
  const ir::SymbolicShapes* range = nullptr;
  std::vector<ShapeProfile> profiles;
  // Set: the engine records it (Manifest.refit: the model's structure and the
  // build's recipe), with each code module's source hash filled in here, so
  // that `graphc refit` can give it new weights. graphc build sets it.
  std::optional<engine::Refit> refit;
  // The plan alone, nothing compiled: no code modules or code (what `graphc
  // refit` compares with the engine whose code it keeps).
  bool plan_only = false;
};

// What a build did, for logs and the summary line.
struct BuildStats {
  size_t kernels = 0;       // launches, in the manifest's kernel list
  size_t modules = 0;       // distinct kernel sources, one code module each
  size_t compilations = 0;  // modules x architectures
  size_t cache_hits = 0;    // compilations served from the NVRTC cache
  size_t cache_misses = 0;  // compilations NVRTC ran (corrupt cache entries included)
  double emit_seconds = 0, compile_seconds = 0;
  TuneStats tuning;  // all zero unless BuildOptions::tune is enabled
};

// "sm_90" / "native" flags -> the architectures to build for: each checked
// (sm_NN, supported by this NVRTC; "native" asks device 0), sorted by SM and
// without repeats, so the engine does not depend on the flags' order.
Expected<std::vector<std::string>> resolve_archs(const std::vector<std::string>& flags);

// Lowers, compiles every distinct kernel for every arch (CUBIN + PTX each; in
// parallel, through the cache) and fills the engine. Deterministic: the same
// graph and options give the same contents, cached or not.
Expected<engine::EngineContents> build_engine(const ir::Graph& optimized,
                                              const BuildOptions& options,
                                              BuildStats* stats = nullptr);

// build_engine without the weights in memory: `contents.weights` stays empty
// and `weights` copies them, chunk by chunk, straight from the graph's
// constants (so it is valid while `optimized` lives). For
// engine::write_engine_file(path, contents, weights): same file, no copy.
struct StreamedEngine {
  engine::EngineContents contents;
  engine::WeightsSource weights;
};
Expected<StreamedEngine> build_engine_streamed(const ir::Graph& optimized,
                                               const BuildOptions& options,
                                               BuildStats* stats = nullptr);

// Every module's code for `device_sm` (select_code per module) and every
// tensor, launch and binding.
Expected<runtime::Executable> executable_from_engine(const engine::EngineContents& engine,
                                                     int device_sm);

// Compute capability of device 0 (90 for sm_90); an error without a GPU.
Expected<int> device_sm();

}  // namespace graphc::driver
