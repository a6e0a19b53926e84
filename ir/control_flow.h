// If, Loop and Scan: how a node's inputs and outputs map onto its
// sub-graphs' (Node::subgraphs), and shape inference of a sub-graph for given
// input types. Shared by the shape rules (ir/), the reference kernels
// (reference/) and the lowering pass (optimizer/pass_inline_control_flow.cpp).
//
//   If   inputs: cond, captures[C]                   sub-graphs: then, else (inputs: captures)
//   Loop inputs: M?, cond?, v[N], captures[C]        body inputs: iter, cond, v[N], captures
//        body outputs: cond, v[N], scan[K]           node outputs: v_final[N], scan[K] ([M, ...])
//   Scan inputs: states[N], scans[S], captures[C]    body inputs: states[N], slices[S], captures
//        body outputs: states[N], scan[K]            node outputs: states_final[N], scan[K]
#pragma once

#include <optional>
#include <vector>

#include "ir/graph.h"
#include "ir/shape_inference.h"

namespace graphc::ir {

// The number of captured outer values (attribute `_captures`).
int64_t captured_count(const Node& n);

// One sub-graph input's type, and its value where known at build time.
struct SubgraphInput {
  DType dtype = DType::kUndefined;
  Shape shape;
  const Tensor* constant = nullptr;
};

// A copy of `sub` with its inputs typed as given and shapes inferred
// (constants propagate with options.evaluator).
Expected<Graph> infer_subgraph(const Graph& sub, const std::vector<SubgraphInput>& inputs,
                               const ShapeInferenceOptions& options);

// Scan's geometry, checked against its input shapes.
struct ScanParams {
  int64_t states = 0, scans = 0, captures = 0, outputs = 0;  // outputs: K
  bool batched = false;  // opset 8: a leading batch axis on every state and scan tensor
  int64_t batch = 1;
  int64_t seq_len = 0;
  std::vector<int64_t> input_axes, input_reverse;    // per scan input (axis without batch)
  std::vector<int64_t> output_axes, output_reverse;  // per scan output
};
Expected<ScanParams> scan_params(const Node& n, const std::vector<const Shape*>& input_shapes);

// Shape of `s` without axis `axis`, and with `n` inserted at `axis`.
Shape shape_without_axis(const Shape& s, int64_t axis);
Shape shape_with_axis(const Shape& s, int64_t axis, int64_t n);

}  // namespace graphc::ir
