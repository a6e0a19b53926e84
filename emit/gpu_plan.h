// Lowering an optimized graph to what a GPU engine holds: one launch per
// scheduled kernel (generated CUDA: see gpu_kernels.h for the families), the device location of
// every tensor the launches touch (arena offsets from the buffer plan, weights packed 256-byte
// aligned, user-bound inputs and outputs; views share their input's bytes), and the CUDA source of
// each distinct kernel (one module each: compiled in parallel and cached one by one).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "emit/buffer_plan.h"
#include "emit/cublaslt_gemm.h"
#include "emit/cudnn_conv.h"
#include "ir/graph.h"

namespace graphc::emit {

enum class SlotLocation { kArena, kWeights, kInput, kOutput };

struct SlotPlan {
  std::string name;
  ir::DType dtype = ir::DType::kUndefined;
  ir::Shape shape;
  SlotLocation location = SlotLocation::kArena;
  int64_t offset = 0;  // arena or weights offset
  int64_t bytes = 0;
};

struct LaunchPlan {
  std::string name;  // for reports and `graphc run --profile`
  std::string kind;  // kernel kind, as in `graphc inspect`
  std::string
      entry;  // the kernel function; "" for a device-to-device copy (kind "copy", args {src, dst})
  int32_t module = -1;  // index into GpuPlan::sources (-1 for a copy)
  std::array<uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  uint32_t shared_bytes = 0;            // dynamic shared memory
  std::vector<int32_t> args;            // slot indices: inputs then outputs
  std::vector<std::string> onnx_nodes;  // source ONNX nodes it covers
  // A library call instead of generated code (entry "", module -1): library
  // "cublasLt", op "matmul", params engine::encode_matmul_params; or library
  // "cudnn", op "conv", params engine::encode_conv_params.
  struct Library {
    std::string library, op, params;
    int64_t algorithm =
        -1;  // -1: the runtime's first heuristic result (cudnn: = params' algorithm)
    uint64_t workspace_bytes = 0;
  };
  std::optional<Library> library;
};

struct GpuPlan {
  std::vector<SlotPlan> slots;
  std::vector<LaunchPlan> launches;
  std::vector<int32_t> inputs, outputs;  // slot per graph input / output, in graph order
  int64_t arena_bytes = 0;
  std::string weights;               // packed constants
  std::vector<std::string> sources;  // one translation unit per distinct kernel
};

// Requires a shape-inferred, optimized graph in topological order. A kernel
// without a GPU lowering yet is an error naming it, its kind and its ops.
// Gemm kernels go to cuBLASLt or stay generated per `gemm` (cublaslt_gemm.h),
// conv kernels to cuDNN per `conv` (cudnn_conv.h); a gemm or conv group whose
// epilogue the library takes only in part is split first (library_split.h):
// the library call, then a generated epilogue kernel.
struct LowerOptions {
  GemmOptions gemm;
  ConvOptions conv;
};
Expected<GpuPlan> lower_for_gpu(const ir::Graph& graph, const LowerOptions& options = {});

// Which groups a library takes only in part (cuBLASLt gemm groups, then cuDNN
// conv groups): what lower_for_gpu and the fusion report split.
EpilogueTakes library_epilogue_takes(const GemmOptions& gemm, const ConvOptions& conv);

}  // namespace graphc::emit
