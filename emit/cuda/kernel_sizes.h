// Sizes in generated kernels, static or over a shape range. A static build
// prints every size as a literal (the kernel is specialised to one shape). A
// build for a range (docs/dynamic-shapes.md) prints each size that varies as
// a local read from the kernel's size block — an array of int64 the runtime
// fills per shape and passes by value after the pointers — and records the
// size's expression, which the plan turns into a size program
// (support/size_program.h). Choices a generator makes from sizes (vector
// widths, index widths) must hold over the whole range: the helpers here
// answer for every shape in it, not for one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/dim_expr.h"
#include "ir/graph.h"
#include "ir/symbolic_shapes.h"

namespace graphc::emit {

class KernelSizes {
 public:
  // `sym`: the lowered graph's symbolic shapes (by ValueId), or null for a
  // static build. It must outlive this object.
  explicit KernelSizes(const ir::SymbolicShapes* sym = nullptr) : sym_(sym) {}

  bool dynamic() const { return sym_ != nullptr; }
  // The value's shape: over the range, or its concrete shape.
  ir::SymShape shape(const ir::Graph& g, ir::ValueId id) const;
  // A fused group's body and its values' shapes over the range
  // (fused_range.h): shape() then answers for the body's values too.
  void set_body(const ir::Graph* body, const ir::SymbolicShapes* shapes) {
    body_ = body;
    body_shapes_ = shapes;
  }
  // C++ text for a size: a literal when it is constant over the range, else
  // a local of the kernel's index type ("z3") read from the size block.
  std::string code(const ir::DimExpr& e);
  // The most it reaches over the range; an error when graphc cannot bound it.
  Expected<int64_t> upper_bound(const ir::DimExpr& e) const;
  // The least it reaches over the range (same conditions).
  Expected<int64_t> lower_bound(const ir::DimExpr& e) const;
  // Whether it is 1 at every point (a dim a generator may skip).
  static bool is_one(const ir::DimExpr& e) { return e.constant() == 1; }
  std::string shape_string(const ir::SymShape& s) const;

  // The size block (empty for static kernels): its expressions in order.
  const std::vector<ir::DimExpr>& block() const { return block_; }
  // The kernel's last parameter (", const graphc_sizes sz") and the struct it
  // needs before the kernel, and the locals to put first in its body (of
  // type `index_type`); all empty for a kernel without run-time sizes.
  std::string parameter() const;
  std::string declaration() const;
  std::string locals(const std::string& index_type) const;

 private:
  Expected<int64_t> bound(const ir::DimExpr& e, bool most) const;
  const ir::SymbolicShapes* sym_;
  const ir::Graph* body_ = nullptr;
  const ir::SymbolicShapes* body_shapes_ = nullptr;
  std::vector<ir::DimExpr> block_;
};

// The product of dims [from, to) of a shape over the range (1 for none), and
// of all its dims.
ir::DimExpr dims_product(const ir::SymShape& s, size_t from, size_t to);
inline ir::DimExpr dims_product(const ir::SymShape& s) { return dims_product(s, 0, s.size()); }
// Whether no dim of `s` varies over the range.
bool fixed_over_range(const ir::SymShape& s);

// Byte size of the block the runtime passes: one int64 per size.
inline int64_t size_block_bytes(size_t sizes) { return static_cast<int64_t>(sizes) * 8; }

}  // namespace graphc::emit
