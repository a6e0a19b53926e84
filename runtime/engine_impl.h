// Internal to runtime/: what an Engine holds once loaded, shared by
// engine.cpp (loading) and execution_context.cpp (running).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cublaslt.h"
#include "runtime/cuda_driver.h"
#include "runtime/cudnn.h"
#include "runtime/cudnn_sdpa.h"
#include "runtime/engine.h"

namespace graphc::runtime {

struct Engine::Impl {
  const DriverApi* api = nullptr;
  int ordinal = 0;
  CUdevice device = 0;
  CUcontext context = nullptr;  // the device's primary context, retained
  std::string device_name;      // "NVIDIA H100 80GB HBM3 (sm_90)"
  std::vector<CUmodule> modules;
  CUdeviceptr weights = 0;
  int64_t weights_bytes = 0;
  Executable exe;                          // weights dropped after the upload
  std::vector<CUfunction> functions;       // per launch; nullptr for a copy or library call
  std::unique_ptr<EngineMatmuls> matmuls;  // cuBLASLt set-up of the matmul launches
  std::unique_ptr<EngineConvs> convs;      // cuDNN set-up of the conv launches
  std::unique_ptr<EngineSdpas> sdpas;      // cuDNN set-up of the attention launches
  std::vector<BindingInfo> bindings;       // inputs, then outputs
  LoadTimeline load_timeline;
  int num_inputs = 0;
  std::vector<int32_t> binding_slot;  // per binding
  // Per slot: the binding whose address it is (inputs, and outputs written in
  // place), or -1 for arena and weights slots.
  std::vector<int> slot_binding;
  // Outputs whose slot is not theirs alone (an input, a weight, or another
  // output's): copied from the slot into the binding after the launches.
  std::vector<std::pair<int32_t, int>> output_copies;  // (slot, binding)
  // Engine::refit_weights (runtime/engine_refit.cpp): one refit at a time,
  // and set while the device's weights are part old, part new (from the
  // first byte a refit overwrites until it has checked the last), so that no
  // context runs on them (ExecutionContext::prepare refuses).
  std::mutex refit_mutex;
  std::atomic<bool> weights_incomplete{false};

  ~Impl();
};

}  // namespace graphc::runtime
