// The frame every generated kernel that is not plain elementwise is written
// in. A kernel is built around one "anchor" node (Softmax, Transpose,
// MaxPool, MatMul ...), either alone or as a FusedGroup: the anchor plus an
// elementwise prologue computing its inputs and an elementwise epilogue on
// its output (optimizer/pass_fuse.cpp). Family generators (reductions, data
// movement, pooling, contractions) write only the anchor's loops and read and
// write element by element through the frame's `load` / `store`: the
// prologue and epilogue are evaluated there, so fusion costs them nothing.
//
// Generated code layout (finish_anchor_kernel):
//   <includes> <device prelude> <constant arrays> <family helpers>
//   extern "C" __global__ void <entry>(<params>) {
//     <setup: one lambda per anchor input and output>
//     <family body>
//   }
// Inside the body, `load_in<k>(i)` returns element i (flat, row-major over
// anchor input k's shape; long long) in the compute type of that input, and
// `store_out<k>(i, v)` stores v (compute type of anchor output k) at flat
// index i of output k, running the epilogue. An omitted optional input has
// no lambda (check has_input); an omitted output's store does nothing.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "emit/cuda/cuda_elementwise.h"
#include "emit/cuda/kernel_sizes.h"
#include "ir/graph.h"
#include "support/status.h"

namespace graphc::emit {

struct AnchorFrame {
  const ir::Graph* graph = nullptr;  // holds `anchor`: a group's body, or the outer graph
  const ir::Node* anchor = nullptr;
  // The graph and node the kernel is built for: the FusedGroup (whose body is
  // `graph`) or the anchor itself. An anchor input that is a group parameter
  // is read from the outer node's matching input.
  const ir::Graph* outer_graph = nullptr;
  const ir::Node* outer_node = nullptr;
  std::string node_name;          // the outer node's name (group or anchor), for names and errors
  std::vector<ir::ValueId> args;  // outer value ids of the kernel parameters, inputs then outputs
  std::string params;             // the parameter list, "const float* __restrict__ p0, ..."
  std::string preamble;           // file scope: #includes, device prelude, constant arrays
  std::string setup;              // kernel-body statements defining load_in<k> / store_out<k>
  // Per anchor input: the kernel parameter it is read from unchanged (no
  // prologue, not an embedded constant), else empty. Lets a family read
  // several neighbouring elements in one vector load.
  std::vector<std::string> input_params;
  // Set by a family that takes sizes at run time over a shape range: its
  // sizes (kernel_sizes.h); finish_anchor_kernel adds the size block.
  KernelSizes* sizes = nullptr;

  size_t num_inputs() const { return anchor->inputs.size(); }
  size_t num_outputs() const { return anchor->outputs.size(); }
  bool has_input(size_t k) const { return anchor->has_input(k); }
  bool has_output(size_t k) const {
    return k < anchor->outputs.size() && anchor->outputs[k] != ir::kNoValue;
  }
  const ir::Value& input(size_t k) const { return graph->value(anchor->inputs[k]); }
  const ir::Value& output(size_t k) const { return graph->value(anchor->outputs[k]); }
  // Build-time value of input k (axes, pads, shapes ...), or nullptr. Looks
  // through a group parameter to the outer constant it is bound to, so an
  // anchor fused with a prologue still sees its constant axes.
  const ir::Tensor* constant_input(size_t k) const;

  std::string load(size_t k, const std::string& idx) const;
  std::string store(size_t k, const std::string& idx, const std::string& value) const;
};

// The frame of node `node` of `outer`: a plain non-elementwise node, or a
// FusedGroup whose body holds exactly one non-elementwise node (the anchor).
Expected<AnchorFrame> make_anchor_frame(const ir::Graph& outer, ir::NodeId node);

struct LaunchShape {
  std::array<int64_t, 3> grid{1, 1, 1};  // grid.x: the most over a shape range
  std::array<int64_t, 3> block{1, 1, 1};
  int64_t shared_bytes = 0;  // dynamic shared memory
  std::optional<ir::DimExpr> grid_x;  // set: grid.x at run time (a shape range)
};

// Assembles the kernel: `helpers` go at file scope after the preamble (device
// functions, templates), `body` inside the kernel after the setup. The entry
// name is `<prefix>_<hash of the code>` (kernel_entry_name). Checks the launch shape
// (block <= 1024 threads, grid within CUDA limits, shared memory <= 227 KiB).
Expected<GeneratedKernel> finish_anchor_kernel(const AnchorFrame& frame, const std::string& prefix,
                                               const std::string& helpers, const std::string& body,
                                               const LaunchShape& launch);

}  // namespace graphc::emit
