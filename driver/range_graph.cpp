#include "driver/range_graph.h"

#include "driver/load_model.h"
#include "emit/cuda/cuda_dm_range.h"

namespace graphc::driver {

namespace {

// Values that vary over the range but were computed at the opt shapes (shape
// arithmetic, a Range of the sequence length, masks built from them) must be
// computed at run time where a kernel reads them as data, and always where
// their shape varies (the weights hold one shape): their opt values are
// dropped. Shape arithmetic only read as shapes (a Reshape's target, a
// Slice's ends) keeps its values, which no kernel reads.
void compute_varying_values_at_run_time(ir::Graph& g, const ir::SymbolicShapes& sym) {
  std::vector<char> needed(g.values.size(), 0);
  for (ir::ValueId o : g.outputs) needed[static_cast<size_t>(o)] = 1;
  // Walked back (consumers mostly come after producers) until nothing
  // changes, so a view's output is settled before its input.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = g.nodes.size(); i-- > 0;) {
      const ir::Node& n = g.nodes[i];
      if (n.dead) continue;
      bool outputs_needed = false;
      for (ir::ValueId o : n.outputs)
        outputs_needed |= o != ir::kNoValue && needed[static_cast<size_t>(o)];
      // A view's output is its input's bytes; a shape values node writes its
      // outputs from sizes, reading nothing.
      const bool view = ir::op_info(n.op).traits.view;
      if (!view && emit::is_shape_values_node(n, sym)) continue;
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        if (n.inputs[k] == ir::kNoValue || emit::reads_as_shape(n.op, k)) continue;
        if (view && k == 0 && !outputs_needed) continue;
        char& need = needed[static_cast<size_t>(n.inputs[k])];
        changed |= !need;
        need = 1;
      }
    }
  }
  for (size_t v = 0; v < g.values.size(); ++v) {
    ir::Value& val = g.values[v];
    if (!val.constant || val.producer < 0 || !sym.values[v].depends_on_symbols()) continue;
    bool shape_varies = false;
    for (const auto& d : sym.values[v].shape) shape_varies |= !d.is_constant();
    if (shape_varies || needed[v]) val.constant.reset();
  }
}

}  // namespace

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
  compute_varying_values_at_run_time(out.optimized, out.symbolic);
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
