// The graph an engine that serves a shape range is lowered from: the model
// typed at the profile's opt shapes and optimized knowing the range (nothing
// that varies over it is folded into the opt shape's numbers), with every
// value's shape over the range inferred symbolically on the optimized graph —
// which must give each model output the shape the imported model gives it at
// every point (checked there by driver::symbolic_shapes).
#pragma once

#include <functional>
#include <vector>

#include "driver/shape_profiles.h"
#include "ir/graph.h"
#include "ir/symbolic_shapes.h"
#include "optimizer/pass.h"

namespace graphc::driver {

struct RangeGraph {
  ir::Graph optimized;           // typed at the opt shapes
  ir::SymbolicShapes symbolic;   // of `optimized`, by ValueId
  ir::SymbolicInputs inputs;     // the profile's symbols and input shapes
  std::vector<int64_t> opt;      // symbol values at the opt shapes
};

// Called with the model typed at the opt shapes, before any pass (what
// graphc refit describes and compares: driver/model_structure.h).
using BeforePasses = std::function<Status(const ir::Graph& typed)>;

// `imported`: the model with its symbolic dims unbound (load_model with
// infer off). `passes`: the optimizer's context (its shape_range is set
// here); with `optimize` off the graph is lowered as imported.
Expected<RangeGraph> optimize_for_range(const ir::Graph& imported, const ShapeProfile& profile,
                                        size_t index, optimizer::PassContext passes,
                                        bool optimize = true,
                                        const BeforePasses& before_passes = {});

}  // namespace graphc::driver
