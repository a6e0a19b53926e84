// Helpers for tests: a small graph builder, random tensors, running a graph
// through shape inference and the reference executor.
#pragma once

#include <map>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/shape_inference.h"
#include "reference/executor.h"

namespace graphc::testing {

// Builds small graphs op by op: inputs, constants, nodes.
class GraphBuilder {
 public:
  GraphBuilder() { graph_.opset = 21; }

  ir::ValueId input(const std::string& name, ir::DType dtype, ir::Shape shape) {
    ir::Value v;
    v.name = name;
    v.dtype = dtype;
    v.shape = std::move(shape);
    v.has_shape = true;
    ir::ValueId id = graph_.add_value(std::move(v));
    graph_.inputs.push_back(id);
    return id;
  }
  ir::ValueId constant(const std::string& name, ir::Tensor t, bool initializer = true) {
    ir::ValueId id = graph_.add_constant(name, std::move(t));
    graph_.value(id).is_initializer = initializer;
    return id;
  }
  // Adds a node with `num_outputs` fresh outputs; returns the first output.
  ir::ValueId node(ir::OpKind op, std::vector<ir::ValueId> inputs, ir::AttributeMap attrs = {},
                   int num_outputs = 1, const std::string& name = "") {
    ir::Node n;
    n.op = op;
    n.name = name.empty() ? std::string(ir::op_name(op)) + "_" + std::to_string(graph_.nodes.size())
                          : name;
    n.inputs = std::move(inputs);
    n.attrs = std::move(attrs);
    for (int o = 0; o < num_outputs; ++o) {
      ir::Value v;
      v.name = n.name + ":" + std::to_string(o);
      n.outputs.push_back(graph_.add_value(std::move(v)));
    }
    ir::ValueId first = n.outputs[0];
    graph_.add_node(std::move(n));
    return first;
  }
  void output(ir::ValueId id) { graph_.outputs.push_back(id); }
  ir::Graph& graph() { return graph_; }
  // Runs shape inference (with constant propagation) and returns the graph.
  ir::Graph build();

 private:
  ir::Graph graph_;
};

ir::AttributeMap attrs(std::initializer_list<std::pair<std::string, ir::Attribute>> items);

// Fresh random values (never all zeros): uniform in [lo, hi] for floats,
// integers in [lo, hi].
ir::Tensor random_tensor(ir::DType dtype, const ir::Shape& shape, std::mt19937& rng,
                         double lo = -2.0, double hi = 2.0);
std::mt19937& test_rng();  // seeded per process from the clock; seed printed once

// Random inputs for every graph input.
std::map<std::string, ir::Tensor> random_inputs(const ir::Graph& g, std::mt19937& rng);

// Max |a-b| over elements (shapes/dtypes must match; +inf if they don't).
double max_abs_diff(const ir::Tensor& a, const ir::Tensor& b);

std::string source_path(const std::string& relative);  // path under the repo root

}  // namespace graphc::testing

namespace graphc::testing {
// Runs `before` and `after` on the same fresh random inputs through the
// reference executor; returns the max abs difference over all outputs
// (matched by name). Throws if either run fails.
double max_output_diff(const ir::Graph& before, const ir::Graph& after, std::mt19937& rng);
}  // namespace graphc::testing
