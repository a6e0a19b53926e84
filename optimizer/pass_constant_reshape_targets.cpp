// constant-reshape-targets: over a shape range, a Reshape whose target is
// shape arithmetic (Shape -> Gather -> Mul -> Concat, as exporters write
// `x.view(L, B * H, D)`) gets a constant target that says the same at every
// shape: the number where the output dim is fixed, 0 where it is the input's
// dim at the same position, -1 for the one dim left to infer. Later passes
// then see a view whose parameters are known (index-map fusion takes only
// those), and the shape arithmetic is left unread. A static build has only
// constant targets (fold-constants), so nothing changes there; a target that
// cannot be written so (allowzero=1, a fixed 0, two dims neither fixed nor
// copied) stays.
#include <optional>
#include <vector>

#include "ir/symbolic_shapes.h"
#include "optimizer/passes.h"

namespace graphc::optimizer {

namespace {

// The constant target of a Reshape from `in` to `out` over the range, or
// nothing where none says the same at every shape.
std::optional<std::vector<int64_t>> constant_target(const ir::SymShape& in,
                                                    const ir::SymShape& out) {
  std::vector<int64_t> target;
  bool inferred = false;
  for (size_t d = 0; d < out.size(); ++d) {
    if (auto c = out[d].constant()) {
      if (*c == 0) return std::nullopt;  // 0 would read as "copy the input's dim"
      target.push_back(*c);
    } else if (d < in.size() && in[d] == out[d]) {
      target.push_back(0);
    } else if (!inferred) {
      target.push_back(-1);
      inferred = true;
    } else {
      return std::nullopt;
    }
  }
  // The -1 is numel(in) / the others: it must come out as out's dim when
  // computed as an expression (it may not where numel(in) holds a floor
  // division symbolic inference cannot cancel; the arithmetic then stays).
  for (size_t d = 0; d < out.size(); ++d) {
    if (target[d] != -1) continue;
    ir::DimExpr others(1);
    for (size_t e = 0; e < out.size(); ++e)
      if (e != d) others = others * out[e];
    ir::DimExpr numel(1);
    for (const auto& x : in) numel = numel * x;
    if (ir::DimExpr::floor_div(numel, others) != out[d]) return std::nullopt;
  }
  return target;
}

}  // namespace

Status constant_reshape_targets(ir::Graph& g, PassContext& ctx) {
  if (!ctx.shape_range) return Status::ok_status();
  ASSIGN_OR_RETURN(auto sym, ir::infer_symbolic_shapes(g, *ctx.shape_range));
  auto at = [&](ir::ValueId v) -> const ir::SymValue& { return sym.values[static_cast<size_t>(v)]; };
  bool changed = false;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& n = g.nodes[i];
    if (n.dead || n.op != ir::OpKind::Reshape || !n.has_input(0) || !n.has_input(1) ||
        n.attrs.get_int("allowzero", 0) != 0)
      continue;
    if (!at(n.inputs[1]).depends_on_symbols()) continue;
    const ir::SymShape& in = at(n.inputs[0]).shape;
    const ir::SymShape& out = at(n.outputs[0]).shape;
    auto target = constant_target(in, out);
    if (!target) continue;
    const int64_t rank = static_cast<int64_t>(target->size());
    const ir::ValueId t = g.add_constant(g.unique_name(n.name + "/target"),
                                         ir::Tensor::from_i64(*target, {rank}));
    n.inputs[1] = t;
    changed = true;
    ctx.count("constant-reshape-targets: targets made constant");
  }
  if (!changed) return Status::ok_status();
  return eliminate_dead_code(g, ctx);
}

}  // namespace graphc::optimizer
