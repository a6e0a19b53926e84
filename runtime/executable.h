// What the runtime executes, independent of how it was stored: one code image
// for this device, where every tensor lives, and the launch list. The engine
// reader (engine_format/) fills it from a validated engine file; tests can
// build one directly.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine_format/conv_params.h"
#include "engine_format/library_algorithm.h"
#include "engine_format/matmul_params.h"
#include "engine_format/sdpa_params.h"

namespace graphc::runtime {

struct TensorSlot {
  enum class Location { kArena, kWeights, kInput, kOutput };
  std::string name;
  Location location = Location::kArena;
  int64_t offset = 0;  // into the arena or the weights; unused for inputs/outputs
  int64_t bytes = 0;
  // Described for bindings (BindingInfo); optional for other slots.
  int32_t dtype = 0;  // ONNX TensorProto numbering (= ir::DType)
  std::vector<int64_t> shape{};
};

struct Launch {
  int32_t module = -1;  // index into Executable::images (-1 for a copy)
  std::string
      entry;  // kernel function name in the module; "" = copy args[0] -> args[1] (dst's bytes)
  std::array<uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  uint32_t shared_bytes = 0;
  std::vector<int32_t> args;  // tensor slot indices, passed as device pointers in order
  // A cuBLASLt matmul instead of a kernel (module -1, entry ""): args are A,
  // B, [C], [bias], D (engine::MatmulParams::num_args).
  std::optional<engine::MatmulParams> matmul = std::nullopt;
  // A cuDNN convolution instead of a kernel (module -1, entry ""): args are x,
  // w, [bias], [residual], y (engine::ConvParams::num_args).
  std::optional<engine::ConvParams> conv = std::nullopt;
  // Attention through cuDNN's graph API (module -1, entry ""): args are Q, K,
  // V, [bias], [seq_len_q, seq_len_kv], O (engine::SdpaParams::num_args);
  // workspace_bytes is the most its plan may use.
  std::optional<engine::SdpaParams> sdpa = std::nullopt;
  // The engine's recorded (tuned) cuBLASLt algorithm; without one, `algorithm`
  // is for a matmul an index into cuBLASLt's heuristic results (-1: the
  // first), for a conv the params' algorithm (cuDNN's enum value, -1: cuDNN's
  // heuristic).
  std::optional<engine::CublasLtAlgorithm> matmul_algorithm = std::nullopt;
  int64_t algorithm = -1;
  uint64_t workspace_bytes = 0;  // the most the call may use (conv: a limit for its algorithm)
  // For profiles and reports only (from the engine manifest; may be empty):
  // the kernel's name, what runs it ("generated fused elementwise",
  // "cublasLt matmul", "copy") and the ONNX nodes it computes.
  std::string name{};
  std::string kind{};
  std::vector<std::string> onnx_nodes{};
};

struct Executable {
  std::vector<std::string> images;  // CUBIN or PTX text for this device, one per module
  std::vector<TensorSlot> tensors;
  std::vector<Launch> launches;
  int64_t arena_bytes = 0;
  std::string weights;                   // copied to the device once
  std::vector<int32_t> inputs, outputs;  // slot indices, in binding order
  // Binding names (the ONNX graph's); empty: the slots' names.
  std::vector<std::string> input_names, output_names;
};

}  // namespace graphc::runtime
