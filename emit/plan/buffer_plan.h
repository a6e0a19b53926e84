// One device arena for every intermediate: lifetimes from the schedule,
// aliases for views, in-place reuse where an elementwise kernel allows it,
// and offsets assigned greedy-by-size (largest first, lowest free offset).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "emit/plan/schedule.h"
#include "emit/plan/value_sizes.h"

namespace graphc::emit {

inline constexpr int64_t kArenaAlignment = 256;

struct BufferAssignment {
  ir::ValueId value;
  int64_t offset = 0;                   // bytes into the arena
  int64_t size = 0;                     // bytes (unaligned)
  int first_step = 0;                   // kernel index that writes it
  int last_step = 0;                    // last kernel index that reads it
  ir::ValueId alias_of = ir::kNoValue;  // shares the bytes of this value (view or in-place)
};

struct BufferPlan {
  std::vector<BufferAssignment> buffers;  // one per intermediate value
  int64_t arena_bytes = 0;                // planned arena size
  int64_t naive_bytes = 0;                // every intermediate in its own buffer
  int64_t lower_bound_bytes = 0;          // peak bytes live at one step
  const BufferAssignment* find(ir::ValueId v) const;
};

// Graph inputs, outputs and constants are bound separately (user buffers and
// the weights section); every other value produced by a node is planned.
// `sizes` (optional) sizes each value; over a shape range it gives each its
// largest size, so the one layout serves every shape.
Expected<BufferPlan> plan_buffers(const ir::Graph& graph, const Schedule& schedule,
                                  const ValueSizes* sizes = nullptr);

// Checks that no two values whose lifetimes overlap share bytes (unless one
// aliases the other). Used by tests and, later, the engine validator.
Status validate_buffer_plan(const BufferPlan& plan);

}  // namespace graphc::emit
