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
#include <string_view>
#include <vector>

#include "emit/plan/buffer_plan.h"
#include "ir/dim_expr.h"
#include "ir/graph.h"
#include "ir/symbolic_shapes.h"
#include "target/cuda/cuda_target.h"

namespace graphc::emit {

enum class SlotLocation { kArena, kWeights, kInput, kOutput };

struct SlotPlan {
  std::string name;
  ir::DType dtype = ir::DType::kUndefined;
  ir::Shape shape;  // over a shape range: at the opt shapes
  // Over a shape range, for a value that varies: each dim's size program
  // (index into RangePlan::sizes; -1: `shape[d]` at every shape). `bytes` is
  // then the most the range takes.
  std::vector<int32_t> dim_sizes;
  SlotLocation location = SlotLocation::kArena;
  int64_t offset = 0;  // arena or weights offset
  int64_t bytes = 0;
};

// A library call instead of generated code.
enum class LibraryOp : uint8_t {
  kCublasLtMatmul,  // params: engine::encode_matmul_params
  kCudnnConv,       // params: engine::encode_conv_params
  kCudnnSdpa,       // params: engine::encode_sdpa_params
};
// The engine manifest's words for it: ("cublasLt", "matmul"), ("cudnn", "conv"), ("cudnn", "sdpa").
std::string_view library_call_library(LibraryOp op);
std::string_view library_call_op(LibraryOp op);

struct LibraryCallPlan {
  LibraryOp op = LibraryOp::kCublasLtMatmul;
  std::string params;
  int64_t algorithm = -1;  // -1: the runtime's first heuristic result (cudnn: = params' algorithm)
  uint64_t workspace_bytes = 0;
  // Over a shape range, the call's sizes that vary (RangePlan::sizes
  // indices): a cuBLASLt matmul's M.
  std::vector<int32_t> sizes;
};

struct LaunchPlan {
  std::string name;                            // for reports and `graphc run --profile`
  KernelKind kind = KernelKind::kElementwise;  // as in `graphc inspect`
  // The kernel function; "" for a copy (kind kCopy, args {src, dst}) or a library call.
  std::string entry;
  int32_t module = -1;  // index into GpuPlan::sources (-1 for a copy or library call)
  std::array<uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  uint32_t shared_bytes = 0;               // dynamic shared memory
  std::vector<int32_t> args;               // slot indices: inputs then outputs
  std::string params;                      // by-value parameter block after the pointers
  std::vector<std::string> onnx_nodes;     // source ONNX nodes it covers
  std::optional<LibraryCallPlan> library;  // set: a library call (entry "", module -1)
  // A generated kernel over a shape range that cuDNN's SDPA may run instead
  // at each shape (engine Kernel.preferred_call; its `sizes` have
  // engine::kSdpaRangeFields entries, -1 where fixed).
  std::optional<LibraryCallPlan> preferred;
  // Over a shape range: the kernel's size block (RangePlan::sizes indices;
  // the runtime passes their values as int64s after the pointers, in place of
  // `params`), and grid.x's size program when it varies (-1: `grid`). A copy
  // moves its destination's bytes at the shape.
  std::vector<int32_t> size_block;
  int32_t grid_x_size = -1;
  int32_t grid_y_size = -1, grid_z_size = -1;  // the same for grid.y and grid.z
  // The roofline model (kernel_flops.h, target/roofline.h), recorded in the
  // engine for `graphc run --profile`: modelled FLOPs, HBM bytes and the math
  // the FLOPs run on.
  int64_t flops = 0, hbm_bytes = 0;
  target::Math math = target::Math::kNone;
  // A Loop (kind kLoop, emit/plan/loop_plan.h): this launch is its control
  // kernel (args: [trip count], [condition], body condition, iteration,
  // condition state, flag; a LoopLaunchParams by value after them) and the
  // next `loop_body` launches are its body, run while the control kernel says
  // so. -1: not a loop.
  int32_t loop_body = -1;
};

// One row per scheduled kernel (views included), in execution order: what
// `graphc inspect` reports, from the same plan the engine is built from.
struct KernelRecord {
  KernelKind kind = KernelKind::kElementwise;
  std::string name;  // the node's name
  std::vector<std::string> onnx_nodes;
  std::vector<std::string> onnx_ops;  // op type of each covered node
  std::string output;                 // "float32[1x64x56x56]" (first output), "-" for none
  int64_t bytes_fused = 0, bytes_unfused = 0;
  // Modelled contraction FLOPs (kernel_flops.h) and what they run on.
  int64_t flops = 0;
  target::Math math = target::Math::kNone;
  target::Lowering lowering;  // gemm/conv kernels: the library, or why generated
  int32_t launch =
      -1;  // index into GpuPlan::launches; -1: nothing runs (a view, or known at build)
  std::string unlowered;  // set: no GPU lowering exists, and why (the build fails)
};

// What a plan that serves a range of shapes adds (PlanOptions::range): the
// range's symbols (its free dims) and the distinct size programs the runtime
// evaluates when a shape is set (support/size_program.h).
struct RangePlan {
  std::vector<std::string> symbol_names;
  std::vector<int64_t> symbol_min, symbol_max;
  std::vector<SizeProgram> sizes;
  // The index of `e`'s program in `sizes` (added on first use).
  int32_t intern(const ir::DimExpr& e);
};

struct GpuPlan {
  std::optional<RangePlan> range;
  std::vector<SlotPlan> slots;
  std::vector<LaunchPlan> launches;
  std::vector<int32_t> inputs, outputs;  // slot per graph input / output, in graph order
  int64_t arena_bytes = 0;
  // The packed constants: each constant's bytes at its span's offset (256-byte
  // aligned), zeros between. `weights` holds them unless the plan was made
  // with PlanOptions::pack_weights off; then only the spans say where they
  // go, and fill_weights copies any range (an engine writer streams them).
  struct WeightSpan {
    int64_t offset = 0;
    const ir::Tensor* tensor = nullptr;  // the graph's constant: valid while the graph lives
  };
  std::string weights;
  std::vector<WeightSpan> weight_spans;  // by offset
  int64_t weights_bytes = 0;
  std::vector<std::string> sources;  // one translation unit per distinct kernel
  std::vector<KernelRecord> kernels;
  // The buffer plan: every intermediate in its own buffer, and the peak bytes
  // live at one step (arena_bytes is what was planned).
  int64_t arena_naive_bytes = 0, arena_lower_bound_bytes = 0;
  std::vector<std::string> unlowered;  // one line per kernel without a GPU lowering
};

// Requires a shape-inferred, optimized graph in topological order, with the
// target's split-library-epilogues pass run (the emitter lowers the graph as
// it is and never rewrites it). Gemm kernels go to cuBLASLt and conv kernels
// to cuDNN where the target says so, the rest to generated CUDA kernels. A
// kernel without a GPU lowering yet is an error naming it, its kind and its
// ops, unless `allow_unlowered` (for reports): then its record says why and
// the plan has no launch for it.
struct PlanOptions {
  bool allow_unlowered = false;
  bool pack_weights = true;  // off: GpuPlan::weights stays empty (see weight_spans)
  // Set: a plan that serves every shape of this range (the graph's symbolic
  // shapes over it, from ir::infer_symbolic_shapes on this graph). Kernels
  // take the sizes that vary at run time; the arena is planned for the most.
  const ir::SymbolicShapes* range = nullptr;
};

// Weights bytes [offset, offset + n) of `plan` into `dst`, from its spans.
void fill_weights(const std::vector<GpuPlan::WeightSpan>& spans, uint64_t offset, char* dst,
                  size_t n);
Expected<GpuPlan> lower_for_gpu(const ir::Graph& graph, const target::CudaTarget& target,
                                const PlanOptions& options = {});

// The same with a CUDA target of these options (graphc build's --gemm, --conv, --allow-tf32).
using LowerOptions = target::CudaOptions;
Expected<GpuPlan> lower_for_gpu(const ir::Graph& graph, const LowerOptions& options = {});

}  // namespace graphc::emit
