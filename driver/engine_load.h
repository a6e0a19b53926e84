// From an engine file to a loaded runtime::Engine: read and validate the file,
// pick the code for the device's SM, describe every binding (name, dtype,
// shape) from the manifest, load. Binding descriptions need no GPU, so callers
// can check their inputs before touching the driver.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine_format/engine_file.h"
#include "runtime/engine.h"

namespace graphc::driver {

// Inputs then outputs, as runtime::Engine::bindings() lists them.
std::vector<runtime::BindingInfo> engine_bindings(const engine::EngineContents& contents);

// Compute capability of CUDA device `device` (90 for sm_90).
Expected<int> device_compute_capability(int device);

// executable_from_engine for `device`'s SM, with binding names, dtypes and shapes.
Expected<runtime::Executable> executable_for_device(const engine::EngineContents& contents,
                                                    int device = 0);

Expected<std::shared_ptr<runtime::Engine>> load_engine(const engine::EngineContents& contents,
                                                       const runtime::EngineOptions& options = {});
Expected<std::shared_ptr<runtime::Engine>> load_engine_file(
    const std::string& path, const runtime::EngineOptions& options = {});

}  // namespace graphc::driver
