// Where each value the launches touch lives on the device: a slot per value
// (arena offset from the buffer plan, weights packed 256-byte aligned, a user
// binding for graph inputs and outputs); views share their input's slot.
#pragma once

#include <cstdint>
#include <map>

#include "emit/plan/buffer_plan.h"
#include "emit/plan/gpu_plan.h"
#include "ir/graph.h"

namespace graphc::emit {

class SlotTable {
 public:
  // `sizes`: the values' sizes (value_sizes.h); over a shape range
  // (out.range set, `range` the graph's symbolic shapes) each slot also gets
  // its dims' size programs.
  SlotTable(const ir::Graph& g, const BufferPlan& plan, GpuPlan& out, const ValueSizes& sizes,
            const ir::SymbolicShapes* range = nullptr)
      : g_(g), plan_(plan), out_(out), sizes_(sizes), range_(range) {}

  // The slot holding `v`'s bytes, created on first use (appended to the plan's slots).
  Expected<int32_t> slot_of(ir::ValueId v);

  // A weights slot for a constant embedded in a fused group's body (one per constant).
  int32_t embedded_slot(const ir::Value& val);

 private:
  const ir::Graph& g_;
  const BufferPlan& plan_;
  GpuPlan& out_;
  const ValueSizes& sizes_;
  const ir::SymbolicShapes* range_;
  std::map<ir::ValueId, int32_t> slots_;
  std::map<const ir::Value*, int32_t> embedded_;
};

}  // namespace graphc::emit
