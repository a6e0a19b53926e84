// graphc's own shape inference: dtype and static shape for every value, with
// constant propagation so shape arithmetic (Shape -> Gather -> Concat ->
// Reshape) resolves at build time. One shape rule per op (ir/shape_rules_*.cpp).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace graphc::ir {

// Evaluates one node on constant inputs (the reference executor provides it;
// ir/ does not depend on reference/). Outputs are in node-output order.
using ConstantEvaluator =
    std::function<Expected<std::vector<Tensor>>(const Graph&, const Node&,
                                                const std::vector<const Tensor*>&)>;

struct ShapeInferenceOptions {
  ConstantEvaluator evaluator;  // empty: no propagation beyond what rules compute
  // A node whose inputs are all constant is evaluated when its outputs have at
  // most this many elements in total (shape arithmetic is tiny; weights are not copied).
  int64_t propagate_max_elements = 4096;
  // Largest tensor a shape rule may declare (guards hostile shapes).
  int64_t max_tensor_elements = int64_t{1} << 40;
  // Called with each value whose constant a shape rule reads (ShapeContext::
  // constant, constant_ints) and the graph it is in (a sub-graph's rules
  // report their own graph's values): the constants that decide shapes or a
  // branch, which `graphc refit` must not let change (driver/model_structure.h).
  std::function<void(const Graph&, ValueId)> on_constant_read;
};

// What a shape rule sees and fills in.
class ShapeContext {
 public:
  ShapeContext(const Graph& g, const Node& n, const ShapeInferenceOptions* options = nullptr)
      : graph_(g), node_(n), options_(options) {}

  const Node& node() const { return node_; }
  // The options inference runs with (control flow infers its sub-graphs with them).
  const ShapeInferenceOptions& options() const {
    static const ShapeInferenceOptions kDefaults;
    return options_ ? *options_ : kDefaults;
  }
  const AttributeMap& attrs() const { return node_.attrs; }
  size_t num_inputs() const { return node_.inputs.size(); }
  size_t num_outputs() const { return node_.outputs.size(); }
  bool has_input(size_t i) const { return node_.has_input(i); }
  DType dtype(size_t i) const { return graph_.value(node_.inputs[i]).dtype; }
  const Shape& shape(size_t i) const { return graph_.value(node_.inputs[i]).shape; }
  int64_t rank(size_t i) const { return static_cast<int64_t>(shape(i).size()); }
  // The input's build-time value, or nullptr when it is only known at run time.
  // Reported to ShapeInferenceOptions::on_constant_read.
  const Tensor* constant(size_t i) const;
  // The same, not reported: a value handed on to a sub-graph's inference
  // (whose rules report their own reads), not read by this rule.
  const Tensor* constant_for_subgraph(size_t i) const;
  // The input's value as int64s; an error naming the input when not constant.
  Expected<std::vector<int64_t>> constant_ints(size_t i, const char* what) const;

  // Results: one entry per node output.
  void set_output(size_t i, DType dtype, Shape shape);
  void set_output_constant(size_t i, Tensor value);  // also sets dtype/shape

  // An error that names the node and op.
  template <typename... Args>
  Status error(fmt::format_string<Args...> format, Args&&... args) const {
    return invalid_model("{}", fmt::format(format, std::forward<Args>(args)...));
  }

  std::vector<DType> out_dtypes;
  std::vector<Shape> out_shapes;
  std::vector<std::optional<Tensor>> out_constants;

 private:
  const Graph& graph_;
  const Node& node_;
  const ShapeInferenceOptions* options_;
};

using ShapeRule = Status (*)(ShapeContext&);

// Runs the rule of every node in order; fills dtype/shape of every value and
// `constant` where known. Errors carry the node name and op type.
Status infer_shapes(Graph& graph, const ShapeInferenceOptions& options = {});

// Binds symbolic input dims, e.g. {"x": 1x3x224x224}. An input with an
// unbound symbolic dim is an error listing every such input and its dims.
Status bind_input_shapes(Graph& graph, const std::map<std::string, Shape>& shapes);

// Helpers for rules.
Expected<Shape> broadcast_shapes(const Shape& a, const Shape& b);
Expected<int64_t> normalize_axis(int64_t axis, int64_t rank);  // [-rank, rank) -> [0, rank)

}  // namespace graphc::ir
