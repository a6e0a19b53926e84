#include "driver/range_graph.h"

#include "driver/load_model.h"

namespace graphc::driver {

Expected<RangeGraph> optimize_for_range(const ir::Graph& imported, const ShapeProfile& profile,
                                        size_t index, optimizer::PassContext passes, bool optimize,
                                        const BeforePasses& before_passes) {
  // The whole range first: every op at every check point, and the model's
  // own output shapes over it.
  ASSIGN_OR_RETURN(const ir::SymbolicShapes model, symbolic_shapes(imported, profile, index));
  RangeGraph out;
  out.inputs = profile_symbolic_inputs(imported, profile, &out.opt);
  out.optimized = imported;
  const std::string where = fmt::format("profile {} at its opt shapes", index);
  RETURN_IF_ERROR(bind_input_shapes(out.optimized, profile.at_opt()).with_context(where));
  RETURN_IF_ERROR(infer_graph_shapes(out.optimized).with_context(where));
  if (before_passes) RETURN_IF_ERROR(before_passes(out.optimized));
  if (optimize) {
    passes.shape_range = std::make_shared<const ir::SymbolicInputs>(out.inputs);
    RETURN_IF_ERROR(optimizer::run_passes(out.optimized, passes));
  }
  auto sym = ir::infer_symbolic_shapes(out.optimized, out.inputs);
  if (!sym.ok())
    return sym.status().with_context(fmt::format("profile {}: the optimized graph", index));
  out.symbolic = std::move(*sym);
  if (out.optimized.outputs.size() != imported.outputs.size())
    return internal_error("the optimized graph has {} outputs, the model {}",
                          out.optimized.outputs.size(), imported.outputs.size());
  for (size_t i = 0; i < imported.outputs.size(); ++i) {
    const ir::SymShape& want = model.values[static_cast<size_t>(imported.outputs[i])].shape;
    const ir::SymShape& got =
        out.symbolic.values[static_cast<size_t>(out.optimized.outputs[i])].shape;
    if (want != got)
      return internal_error(
          "profile {}: output '{}' is {} over the range, but the optimized graph makes it {}: an "
          "optimization specialised it to the opt shapes",
          index, imported.value(imported.outputs[i]).name, model.shape_string(imported.outputs[i]),
          out.symbolic.shape_string(out.optimized.outputs[i]));
  }
  return out;
}

}  // namespace graphc::driver
