// The symbolic shape rules (ir/symbolic_rules.cpp), one per op family, and
// what a rule sees. Internal to ir/symbolic_shapes.cpp.
#pragma once

#include <vector>

#include "ir/symbolic_shapes.h"

namespace graphc::ir::symbolic {

class SymContext {
 public:
  SymContext(const Graph& g, const Node& n, const std::vector<SymValue>& values,
             const SymbolTable& symbols)
      : outputs(n.outputs.size()), graph_(g), node_(n), values_(values), symbols_(symbols) {}

  const Node& node() const { return node_; }
  const AttributeMap& attrs() const { return node_.attrs; }
  size_t num_inputs() const { return node_.inputs.size(); }
  bool has_input(size_t i) const { return node_.has_input(i); }
  const SymValue& input(size_t i) const { return values_[static_cast<size_t>(node_.inputs[i])]; }
  const SymShape& shape(size_t i) const { return input(i).shape; }
  const Value& typed_input(size_t i) const { return graph_.value(node_.inputs[i]); }
  // The input's elements when known (a constant, or tracked shape arithmetic).
  const std::vector<DimExpr>* elements(size_t i) const {
    return has_input(i) && input(i).elements ? &*input(i).elements : nullptr;
  }
  // The input's elements as int64s; an error naming the input when they are
  // not constants (e.g. a Slice end that depends on a symbol).
  Expected<std::vector<int64_t>> constant_ints(size_t i, const char* what) const;
  // Bounds of an expression over the range, where it is monotone in its
  // symbols (non-negative coefficients, symbols only); nothing otherwise.
  std::optional<int64_t> lower_bound(const DimExpr& e) const;
  std::optional<int64_t> upper_bound(const DimExpr& e) const;

  std::vector<SymValue> outputs;

 private:
  const Graph& graph_;
  const Node& node_;
  const std::vector<SymValue>& values_;
  const SymbolTable& symbols_;
};

// Fills ctx.outputs for a node with a symbolic input; an error when the op
// has no symbolic rule or its arguments are out of what the rule takes.
Status infer_node(SymContext& ctx);

// Broadcast of two symbolic shapes (numpy rules): equal dims, or one is 1; a
// symbolic dim against a constant other than 1 takes the constant.
Expected<SymShape> broadcast(const SymShape& a, const SymShape& b);

}  // namespace graphc::ir::symbolic
