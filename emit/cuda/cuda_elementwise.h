// CUDA C++ for elementwise kernels: one generated `extern "C" __global__`
// function per single elementwise node or FusedGroup(kind "elementwise"),
// specialised to the static shapes (broadcast strides baked in as constants).
//
// Rules the generated source follows (the runtime relies on them):
//  - one thread per element of the iteration shape (the broadcast of the
//    outputs' shapes), grid-stride loop; the index type is 32-bit unless
//    the largest access index (numel, or the vector accesses of the widest
//    buffer) + blocks * threads exceeds INT32_MAX, then 64-bit;
//  - parameters: inputs then outputs, as device pointers in `args` order;
//  - compute in float (fp16/bf16/fp32), double (fp64), the integer type
//    itself (exact, wrapping like the reference), bool stored as one byte;
//  - vectorised (16-byte accesses by the widest operand; 16 elements when a
//    full-shape buffer is int8, uint8 or float8, the wider ones then in two
//    or four 16-byte accesses) when every output is full-shape, numel is a
//    multiple of the vector width (>= 2), and each buffer is 16-byte aligned
//    (the buffer plan aligns every buffer to 256 bytes); broadcast inputs
//    (a bias row, a per-channel scale) are read
//    element by element inside the vector, which then must not cross a row of
//    the last dim (the width halves until it divides that dim).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/symbolic_shapes.h"
#include "support/status.h"

namespace graphc::emit {

struct GeneratedKernel {
  std::string name;   // for reports: "ew_<node name>"
  std::string entry;  // the extern "C" symbol: family + code hash (codegen_util.h)
  std::string source;
  int64_t threads_per_block = 0;  // block.x
  int64_t blocks = 0;             // grid.x
  int64_t grid_y = 1, grid_z = 1, block_y = 1, block_z = 1;
  int64_t shared_bytes = 0;       // dynamic shared memory per block
  std::vector<ir::ValueId> args;  // inputs then outputs, outer-graph value ids
  int64_t vector_width = 1;       // elements per thread per iteration (1: scalar)
  // Bytes of a POD struct the kernel takes by value after the pointers
  // (run-time sizes and strides); empty for kernels that take pointers only.
  std::string params;
  // For a shape range (kernel_sizes.h): the size block the runtime computes
  // per shape and passes by value after the pointers (one int64 each), and
  // grid.x when it varies (`blocks` is then its most over the range); grid.y
  // and grid.z the same (`grid_y`/`grid_z` their most).
  std::vector<ir::DimExpr> sizes;
  std::optional<ir::DimExpr> grid_x;
  std::optional<ir::DimExpr> grid_y_at_run_time, grid_z_at_run_time;
};

// Generates the kernel of node `node` of `graph`: an elementwise op or a
// FusedGroup of kind "elementwise". Same graph -> same source text. With
// `range` (the graph's symbolic shapes) the kernel serves every shape in it,
// taking its varying sizes at run time.
Expected<GeneratedKernel> generate_elementwise_kernel(const ir::Graph& graph, ir::NodeId node,
                                                      const ir::SymbolicShapes* range = nullptr);

// Per-dimension element strides of a row-major tensor of shape `in` read at
// every index of `out` under numpy broadcasting: result[d] is the step in the
// input's flat offset for a step along out dim d (0 where broadcast).
// Error when `in` does not broadcast to `out`.
Expected<std::vector<int64_t>> broadcast_strides(const ir::Shape& in, const ir::Shape& out);

}  // namespace graphc::emit
