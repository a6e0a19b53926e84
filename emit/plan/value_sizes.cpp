#include "emit/plan/value_sizes.h"

#include "emit/cuda/range_bounds.h"
#include "emit/plan/schedule.h"

namespace graphc::emit {

namespace {

ir::DimExpr byte_expr(const ir::Graph& g, const ir::SymbolicShapes& range, ir::ValueId v) {
  ir::DimExpr n(static_cast<int64_t>(ir::dtype_size(g.value(v).dtype)));
  for (const auto& d : range.values[static_cast<size_t>(v)].shape) n = n * d;
  return n;
}

}  // namespace

Expected<ValueSizes> ValueSizes::make(const ir::Graph& g, const ir::SymbolicShapes* range) {
  ValueSizes s;
  s.g_ = &g;
  s.range_ = range;
  s.bytes_.resize(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) {
    const auto v = static_cast<ir::ValueId>(i);
    if (!s.varies(v)) {
      s.bytes_[i] = g.values[i].has_shape ? value_bytes(g, v) : 0;
      continue;
    }
    const ir::DimExpr e = byte_expr(g, *range, v);
    if (!monotone_from(e, range->symbol_min))
      return unsupported("value '{}' is {} over the shape range, whose largest size graphc "
                         "cannot bound yet",
                         g.values[i].name, range->shape_string(v));
    auto most = e.evaluate(range->symbol_max);
    if (!most.ok()) return most.status().with_context(fmt::format("value '{}'", g.values[i].name));
    s.bytes_[i] = *most;
  }
  return s;
}

bool ValueSizes::varies(ir::ValueId v) const {
  return range_ && static_cast<size_t>(v) < range_->values.size() &&
         range_->values[static_cast<size_t>(v)].depends_on_symbols();
}

bool ValueSizes::same_size(ir::ValueId a, ir::ValueId b) const {
  if (!varies(a) && !varies(b)) return bytes(a) == bytes(b);
  return byte_expr(*g_, *range_, a) == byte_expr(*g_, *range_, b);
}

}  // namespace graphc::emit
