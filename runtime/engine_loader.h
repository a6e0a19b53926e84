// From a validated engine file to what the runtime executes on this device:
// pick each code module for the device's SM, resolve every tensor, launch and
// binding, decode library-call parameters, and load. Lives in runtime/ so an
// application that runs engines links only runtime/, engine_format/ and
// support/ (no importer, optimizer, emitter or NVRTC). Binding descriptions
// need no GPU, so callers can check their inputs before touching the driver.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine_format/engine_file.h"
#include "runtime/engine.h"

namespace graphc::runtime {

// Inputs then outputs, as Engine::bindings() lists them.
std::vector<BindingInfo> engine_bindings(const engine::EngineContents& contents);

// Compute capability of CUDA device `device` (90 for sm_90); an error without a GPU.
Expected<int> device_compute_capability(int device);

// Every module's code for `device_sm` (engine::select_code per module) and
// every tensor, launch and binding, with binding names, dtypes and shapes.
Expected<Executable> executable_from_engine(const engine::EngineContents& contents, int device_sm);
// The same without the code (no images): tensors, launches, bindings and
// shape ranges, for what a host checks before it has a device.
Expected<Executable> executable_layout(const engine::EngineContents& contents);

// executable_from_engine for `device`'s SM.
Expected<Executable> executable_for_device(const engine::EngineContents& contents, int device = 0);

Expected<std::shared_ptr<Engine>> load_engine(const engine::EngineContents& contents,
                                              const EngineOptions& options = {});
// The weights stay in the file until they are streamed to the device through
// pinned staging buffers (runtime/weights_upload.h): host memory holds the
// manifest, the code and the staging, never the weights.
Expected<std::shared_ptr<Engine>> load_engine_file(const std::string& path,
                                                   const EngineOptions& options = {});
// The same for a file already open (its manifest and code validated).
Expected<std::shared_ptr<Engine>> load_engine(std::shared_ptr<const engine::EngineFile> file,
                                              const EngineOptions& options = {});

}  // namespace graphc::runtime
