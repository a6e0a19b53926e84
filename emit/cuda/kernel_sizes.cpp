#include "emit/cuda/kernel_sizes.h"

#include <fmt/format.h>

#include "emit/cuda/range_bounds.h"

namespace graphc::emit {

ir::SymShape KernelSizes::shape(const ir::Graph& g, ir::ValueId id) const {
  if (body_shapes_ && &g == body_) return body_shapes_->values[static_cast<size_t>(id)].shape;
  if (sym_ && static_cast<size_t>(id) < sym_->values.size())
    return sym_->values[static_cast<size_t>(id)].shape;
  const ir::Shape& s = g.value(id).shape;
  return ir::SymShape(s.begin(), s.end());
}

std::string KernelSizes::code(const ir::DimExpr& e) {
  if (auto c = e.constant()) return std::to_string(*c);
  for (size_t k = 0; k < block_.size(); ++k)
    if (block_[k] == e) return fmt::format("z{}", k);
  block_.push_back(e);
  return fmt::format("z{}", block_.size() - 1);
}

Expected<int64_t> KernelSizes::upper_bound(const ir::DimExpr& e) const { return bound(e, true); }

Expected<int64_t> KernelSizes::lower_bound(const ir::DimExpr& e) const { return bound(e, false); }

// A monotone size takes its extremes at the range's corners.
Expected<int64_t> KernelSizes::bound(const ir::DimExpr& e, bool most) const {
  if (auto c = e.constant()) return *c;
  if (!sym_) return internal_error("size {} varies in a static kernel", e.to_string());
  if (!monotone_from(e, sym_->symbol_min))
    return unsupported("size {} is not monotone in the range's dims, so graphc cannot bound it",
                       e.to_string(sym_->symbol_names));
  return e.evaluate(most ? sym_->symbol_max : sym_->symbol_min);
}

std::string KernelSizes::shape_string(const ir::SymShape& s) const {
  return sym_ ? ir::sym_shape_to_string(s, sym_->symbol_names) : ir::sym_shape_to_string(s, {});
}

std::string KernelSizes::parameter() const {
  return block_.empty() ? std::string() : ", const graphc_sizes sz";
}

std::string KernelSizes::declaration() const {
  if (block_.empty()) return {};
  return fmt::format("struct graphc_sizes {{ long long v[{}]; }};\n", block_.size());
}

std::string KernelSizes::locals(const std::string& index_type) const {
  std::string s;
  for (size_t k = 0; k < block_.size(); ++k)
    s += fmt::format("  const {0} z{1} = ({0})sz.v[{1}];\n", index_type, k);
  return s;
}

ir::DimExpr dims_product(const ir::SymShape& s, size_t from, size_t to) {
  ir::DimExpr out(1);
  for (size_t i = from; i < to; ++i) out = out * s[i];
  return out;
}

bool fixed_over_range(const ir::SymShape& s) {
  for (const ir::DimExpr& d : s)
    if (!d.is_constant()) return false;
  return true;
}

}  // namespace graphc::emit
