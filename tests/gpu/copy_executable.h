// A hand-made Executable of copies only (no kernels), so runtime tests run on
// the stand-in driver (tests/fake_cuda) as well as on a GPU. Header-only.
#pragma once

#include "runtime/executable.h"

namespace graphc::testing {

constexpr int64_t kCopyExecutableBytes = 64;

// y = copy of x through the arena, w_out = a weight output (an output copy
// at the end of the sequence): weights, arena and three own I/O buffers are
// allocated (5 device allocations).
inline runtime::Executable small_copy_executable() {
  using Loc = runtime::TensorSlot::Location;
  constexpr int64_t n = kCopyExecutableBytes;
  runtime::Executable exe;
  exe.tensors = {{"x", Loc::kInput, 0, n, 1, {16}},
                 {"t", Loc::kArena, 0, n, 1, {16}},
                 {"y", Loc::kOutput, 0, n, 1, {16}},
                 {"w", Loc::kWeights, 0, n, 1, {16}}};
  exe.arena_bytes = 256;
  exe.weights.assign(256, '\x5a');
  exe.launches = {{runtime::CopyLaunch{}, {0, 1}}, {runtime::CopyLaunch{}, {1, 2}}};
  exe.launches[0].name = "copy_x_to_t";
  exe.launches[0].kind = "copy";
  exe.launches[0].onnx_nodes = {"/stage/Identity"};
  exe.launches[1].name = "copy_t_to_y";
  exe.launches[1].kind = "copy";
  exe.launches[1].onnx_nodes = {"/out/Identity", "/out/Reshape"};
  exe.inputs = {0};
  exe.outputs = {2, 3};
  exe.input_names = {"x"};
  exe.output_names = {"y", "w_out"};
  return exe;
}

}  // namespace graphc::testing
