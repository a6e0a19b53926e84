// What the runtime executes, independent of how it was stored: one code image
// for this device, where every tensor lives, and the launch list. The engine
// reader (engine_format/) fills it from a validated engine file; tests can
// build one directly.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "engine_format/conv_params.h"
#include "engine_format/library_algorithm.h"
#include "engine_format/matmul_params.h"
#include "engine_format/sdpa_params.h"
#include "support/size_program.h"

namespace graphc::engine {
class EngineFile;
class Manifest;
}

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
  // An engine with shape ranges, a tensor whose shape varies: per dim an
  // index into ShapeRanges::sizes, or -1 where the dim is `shape[d]`. `shape`
  // and `bytes` are then the largest the ranges give.
  std::vector<int32_t> dim_sizes{};
};

// What an engine that serves shape ranges adds: its symbols (the free dims),
// the size programs the runtime evaluates when the input shapes are set, and
// per profile each input's min/opt/max shape.
struct ShapeRanges {
  struct InputRange {
    std::vector<int64_t> min, opt, max;
  };
  std::vector<std::string> symbols;
  std::vector<SizeProgram> sizes;
  std::vector<std::vector<InputRange>> profiles;  // [profile][input binding]
};

// What one step of the launch sequence does: exactly one of these.
// A generated kernel: `entry` in code module `module` (an index into
// Executable::images), the Launch's args passed as device pointers in order.
struct KernelLaunch {
  int32_t module = -1;
  std::string entry;
  std::array<uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  uint32_t shared_bytes = 0;  // dynamic shared memory
  // A by-value parameter block passed after the pointer arguments (empty: none).
  std::string params{};
  // With shape ranges: the sizes (ShapeRanges::sizes indices) passed as
  // int64s after the pointers, and per grid dim its size or -1 for `grid`
  // (then the most the ranges give).
  std::vector<int32_t> size_block{};
  std::array<int32_t, 3> grid_sizes{-1, -1, -1};
  // Over a shape range, attention that cuDNN's fused SDPA runs instead of
  // this kernel at each shape where cuDNN takes it (engine
  // Kernel.preferred_call; the same args): the params at the shape the engine
  // was built at, and per engine::sdpa_range_fields field a ShapeRanges::sizes
  // index or -1 (as built). The runtime plans it per shape (cudnn_sdpa.h).
  struct PreferredSdpa {
    engine::SdpaParams params;
    uint64_t workspace_bytes = 0;  // the most a plan may use
    std::vector<int32_t> sizes;
  };
  std::optional<PreferredSdpa> preferred_sdpa{};
  // A Loop's control kernel (runtime/loop_launch.h): the next `loop_body`
  // launches are its body. -1: an ordinary kernel. Its args end with the
  // iteration, condition and flag tensors; the runtime passes a
  // LoopLaunchParams block by value after them.
  int32_t loop_body = -1;
};
// A device-to-device copy: args[0] -> args[1] (the destination's bytes).
struct CopyLaunch {};
// A cuBLASLt matmul: args are A, B, [C], [bias], D (engine::MatmulParams::num_args).
struct MatmulLaunch {
  engine::MatmulParams params;
  // The engine's recorded (tuned) algorithm; without one, `heuristic_index`
  // picks among cuBLASLt's heuristic results (-1: the first).
  std::optional<engine::CublasLtAlgorithm> recorded = std::nullopt;
  int64_t heuristic_index = -1;
  uint64_t workspace_bytes = 0;  // the most the call may use
  // Over a shape range: the size (ShapeRanges sizes index) that is M at run
  // time, or -1. `params` then hold M at the shape the engine was built at.
  int32_t m_size = -1;
};
// A cuDNN convolution: args are x, w, [bias], [residual], y
// (engine::ConvParams::num_args); params.algorithm is the recorded one or -1
// (cuDNN's heuristic).
struct ConvLaunch {
  engine::ConvParams params;
  uint64_t workspace_bytes = 0;  // a limit for its algorithm
  // Over a shape range: N, x's and y's spatial dims as ShapeRanges sizes
  // indices (engine::conv_range_sizes), or empty. `params` then hold them at
  // the shape the engine was built at.
  std::vector<int32_t> sizes{};
};

// Attention through cuDNN's graph API: args are Q, K, V, [bias], [seq_len_q,
// seq_len_kv], O (engine::SdpaParams::num_args); params.engine is the recorded
// cuDNN engine or -1 (cuDNN's heuristic at load).
struct SdpaLaunch {
  engine::SdpaParams params;
  uint64_t workspace_bytes = 0;  // the most its plan may use
};

struct Launch {
  std::variant<KernelLaunch, CopyLaunch, MatmulLaunch, ConvLaunch, SdpaLaunch> op;
  std::vector<int32_t> args;  // tensor slot indices, in the order `op` takes them
  // For profiles and reports only (from the engine manifest; may be empty):
  // the kernel's name, what runs it ("generated fused elementwise",
  // "cublasLt matmul", "copy") and the ONNX nodes it computes.
  std::string name{};
  std::string kind{};
  std::vector<std::string> onnx_nodes{};
  // The build's roofline model (engine manifest): FLOPs, HBM bytes and what
  // the FLOPs run on ("fp16-tc", ...); 0 / empty when not recorded.
  uint64_t flops = 0, hbm_bytes = 0;
  std::string math{};

  const KernelLaunch* kernel() const { return std::get_if<KernelLaunch>(&op); }
  const MatmulLaunch* matmul() const { return std::get_if<MatmulLaunch>(&op); }
  const ConvLaunch* conv() const { return std::get_if<ConvLaunch>(&op); }
  const SdpaLaunch* sdpa() const { return std::get_if<SdpaLaunch>(&op); }
  bool is_copy() const { return std::holds_alternative<CopyLaunch>(op); }
  // The kernel's entry, else its name: for messages.
  const std::string& label() const { return kernel() && name.empty() ? kernel()->entry : name; }
};

struct Executable {
  std::vector<std::string> images;  // CUBIN or PTX text for this device, one per module
  std::vector<TensorSlot> tensors;
  std::vector<Launch> launches;
  int64_t arena_bytes = 0;
  std::string weights;                   // copied to the device once
  // Or the engine file the weights are streamed from at upload (through
  // pinned staging, checksummed on the way; `weights` is empty then).
  std::shared_ptr<const engine::EngineFile> weights_file;
  uint64_t weights_size() const;
  std::vector<int32_t> inputs, outputs;  // slot indices, in binding order
  // Binding names (the ONNX graph's); empty: the slots' names.
  std::vector<std::string> input_names, output_names;
  std::optional<ShapeRanges> shape_ranges;  // set: the engine serves shape ranges
  // The engine file's manifest when it has a refit record (graphc build's
  // engines): what Engine::refit_weights compares a new engine file with.
  std::shared_ptr<const engine::Manifest> refit_manifest;
};

}  // namespace graphc::runtime
