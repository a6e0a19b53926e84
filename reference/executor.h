// The CPU reference executor: runs any ir::Graph on the host, one simple
// kernel per op. It is the oracle for tests, constant folding and
// `graphc compare`: obviously right beats fast.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/shape_inference.h"

namespace graphc::reference {

struct ExecuteOptions {
  // Keep every intermediate (for debugging/compare); otherwise values are
  // freed after their last use.
  bool keep_intermediates = false;
};

// Runs the graph. `inputs` are matched by name to graph inputs, with dtype
// and shape checked against the (bound) graph. Returns graph outputs by name.
Expected<std::map<std::string, ir::Tensor>> execute(
    const ir::Graph& graph, const std::map<std::string, ir::Tensor>& inputs,
    const ExecuteOptions& options = {});

// Runs a single node on the given inputs (nullptr = omitted optional input).
// Output dtypes/shapes come from the graph's values.
Expected<std::vector<ir::Tensor>> evaluate_node(const ir::Graph& graph, const ir::Node& node,
                                                const std::vector<const ir::Tensor*>& inputs);

// An evaluator for ir::infer_shapes constant propagation.
ir::ConstantEvaluator constant_evaluator();

}  // namespace graphc::reference
