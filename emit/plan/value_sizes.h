// How big a value is for the plans that place it. A static build: its bytes.
// A build for a shape range: the most bytes any shape in the range gives it
// (the arena is planned for that, so one layout serves every shape), and two
// values have the same size only when they do at every shape.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "ir/symbolic_shapes.h"

namespace graphc::emit {

class ValueSizes {
 public:
  // An error names a value whose size graphc cannot bound over the range.
  static Expected<ValueSizes> make(const ir::Graph& g, const ir::SymbolicShapes* range);

  int64_t bytes(ir::ValueId v) const { return bytes_[static_cast<size_t>(v)]; }
  bool same_size(ir::ValueId a, ir::ValueId b) const;
  bool varies(ir::ValueId v) const;

 private:
  const ir::Graph* g_ = nullptr;
  const ir::SymbolicShapes* range_ = nullptr;
  std::vector<int64_t> bytes_;
};

}  // namespace graphc::emit
