// Symbolic shape inference: every value's shape as dim expressions over a
// profile's symbols (ir/dim_expr.h), with the small integer tensors of shape
// arithmetic (Shape -> Gather -> Concat -> Reshape, Range lengths, Slice ends)
// kept symbolic too. It is what an engine serving a shape range needs to size
// each kernel at run time, and the build checks it against the concrete shape
// inference at every point of the range (driver/shape_profiles.h).
//
// Input: the graph after concrete inference at one point of the range (so
// every value has its dtype, and build-time constants are known), plus each
// runtime input's symbolic shape. A node none of whose inputs depends on a
// symbol keeps its concrete shape; a node that does is inferred by its op's
// symbolic rule (ir/symbolic_rules.cpp). An op without one is an error naming
// the node, so what a dynamic engine cannot take yet is said at build time.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/dim_expr.h"
#include "ir/graph.h"

namespace graphc::ir {

struct SymValue {
  SymShape shape;
  // A 0-D/1-D integer tensor of shape arithmetic: its elements. Empty
  // otherwise (data, or integers graphc does not follow).
  std::optional<std::vector<DimExpr>> elements;
  bool depends_on_symbols() const;
};

struct SymbolicShapes {
  std::vector<std::string> symbol_names;   // symbol i prints as symbol_names[i]
  std::vector<int64_t> symbol_min, symbol_max;  // the range of each symbol
  std::vector<SymValue> values;            // by ValueId
  std::string shape_string(ValueId id) const;
};

struct SymbolTable {
  std::vector<std::string> names;
  std::vector<int64_t> min, max;
};

// A build for a range of shapes: the profile's symbols and each runtime
// input's shape over them (driver::profile_symbolic_inputs makes it).
struct SymbolicInputs {
  SymbolTable symbols;
  std::map<std::string, SymShape> inputs;
};

// `inputs`: the symbolic shape of each runtime input (by name); inputs not
// given keep their concrete shapes. A FusedGroup's outputs come from its
// body, inferred with the group's inputs' symbolic shapes.
Expected<SymbolicShapes> infer_symbolic_shapes(const Graph& typed,
                                               const std::map<std::string, SymShape>& inputs,
                                               const SymbolTable& symbols);
inline Expected<SymbolicShapes> infer_symbolic_shapes(const Graph& typed,
                                                      const SymbolicInputs& in) {
  return infer_symbolic_shapes(typed, in.inputs, in.symbols);
}

// Checks the symbolic shapes at one point of the range against the graph
// inferred concretely there (same nodes and value ids): every value's
// symbolic shape, evaluated at `point` (symbol values), must equal its
// concrete shape. An error names the first value and node that differ.
Status check_symbolic_shapes_at(const SymbolicShapes& sym, const Graph& concrete,
                                const std::vector<int64_t>& point);

}  // namespace graphc::ir
