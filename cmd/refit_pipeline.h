// The work of `graphc refit ENGINE MODEL.onnx -o NEW.engine` without its
// terminal output: the engine's refit record gives the build options; the
// model is imported with them, its structure checked against the record
// (before the optimizer runs), optimized and planned exactly as graphc build
// would, but not compiled; the plan must be the engine's (driver/refit.h).
// The result is the engine's manifest and code with the new model's weights:
// the bytes a fresh `graphc build` of the new model with the engine's options
// writes (same graphc, same NVRTC), in the time of a build without NVRTC.
#pragma once

#include <memory>
#include <string>

#include "cmd/build_pipeline.h"

namespace graphc::cli {

struct RefitFlags {
  std::string engine;  // the engine to refit
  std::string model;   // the model with the new weights
  std::string output;  // checked before any work when set
};

struct RefitEngine {
  engine::EngineContents contents;   // the engine's manifest and code, no weights
  std::unique_ptr<ir::Graph> graph;  // the new model's optimized graph `weights` reads
  engine::WeightsSource weights;     // the new weights section
  std::string structure_hash;        // as graphc inspect prints it
};

// Reads the engine (its manifest and code; not its weights), refuses one
// without a refit record, then imports, checks, optimizes and plans the model.
Expected<RefitEngine> refit_engine_from_files(const RefitFlags& f, const BuildHooks& hooks);

}  // namespace graphc::cli
