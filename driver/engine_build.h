// The engine path: an optimized graph becomes an engine file's contents
// (manifest, code per architecture, weights), and a validated engine becomes
// what the runtime executes on this device.
#pragma once

#include <string>
#include <vector>

#include "emit/nvrtc_compiler.h"
#include "engine_format/engine_file.h"
#include "ir/graph.h"
#include "runtime/executable.h"

namespace graphc::driver {

struct BuildOptions {
  std::vector<std::string> archs;  // "sm_80", "sm_90" ...
  std::string precision = "fp32";
  emit::CompileOptions compile;
  // Called after each architecture's module compiles (done, total), for progress.
  std::function<void(size_t, size_t)> on_compiled;
};

// Lowers, compiles for every arch (CUBIN + PTX each) and fills the engine.
Expected<engine::EngineContents> build_engine(const ir::Graph& optimized, const BuildOptions& options);

// The module for `device_sm` (select_code) and every tensor, launch and binding.
Expected<runtime::Executable> executable_from_engine(const engine::EngineContents& engine, int device_sm);

// Compute capability of device 0 (90 for sm_90); an error without a GPU.
Expected<int> device_sm();

}  // namespace graphc::driver
