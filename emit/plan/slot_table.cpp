#include "emit/plan/slot_table.h"

#include "emit/plan/schedule.h"

namespace graphc::emit {

namespace {
int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }
}  // namespace

Expected<int32_t> SlotTable::slot_of(ir::ValueId v) {
  if (auto it = slots_.find(v); it != slots_.end()) return it->second;
  const ir::Value& val = g_.value(v);
  // A view reads and writes nothing: its output is its input's bytes (a
  // value known at build time is stored in the weights instead).
  if (val.producer >= 0 && !g_.is_graph_output(v) && !val.constant) {
    const ir::Node& p = g_.node(val.producer);
    if (ir::op_info(p.op).traits.view) {
      ASSIGN_OR_RETURN(int32_t s, slot_of(p.inputs[0]));
      slots_[v] = s;
      return s;
    }
  }
  SlotPlan slot;
  slot.name = val.name;
  slot.dtype = val.dtype;
  slot.shape = val.shape;
  slot.bytes = sizes_.bytes(v);
  bool shape_varies = false;
  if (sizes_.varies(v))
    for (const auto& d : range_->values[static_cast<size_t>(v)].shape)
      shape_varies |= !d.is_constant();
  // Shape arithmetic whose values vary but whose shape does not keeps its opt
  // values in the weights: kernels that take it (a Slice's ends, a Range's
  // limit) read its elements from the sizes instead, and driver/range_graph.cpp
  // computes at run time whatever a kernel reads as data.
  if (shape_varies) {
    // The opt shape's numbers are not every shape's: such a value must be
    // computed where it is used.
    if (val.constant && !g_.is_graph_input(v))
      return unsupported("value '{}' is computed from shapes that vary over the range ({}); "
                         "graphc cannot compute it at run time yet",
                         val.name, range_->shape_string(v));
    for (const auto& d : range_->values[static_cast<size_t>(v)].shape)
      slot.dim_sizes.push_back(d.is_constant() ? -1 : out_.range->intern(d));
  }
  // Known at build time (an initializer, or a node output that shape
  // inference computed: its kernel is skipped): stored with the weights.
  if (val.constant && !g_.is_graph_input(v)) {
    slot.location = SlotLocation::kWeights;
    slot.offset = align_up(out_.weights_bytes, kArenaAlignment);
    out_.weight_spans.push_back({slot.offset, &*val.constant});
    out_.weights_bytes = slot.offset + static_cast<int64_t>(val.constant->byte_size());
  } else if (g_.is_graph_input(v)) {
    slot.location = SlotLocation::kInput;
  } else if (g_.is_graph_output(v)) {
    slot.location = SlotLocation::kOutput;
  } else {
    const BufferAssignment* b = plan_.find(v);
    if (!b) return internal_error("value '{}' has no buffer in the plan", val.name);
    slot.location = SlotLocation::kArena;
    slot.offset = b->offset;
  }
  out_.slots.push_back(std::move(slot));
  const auto id = static_cast<int32_t>(out_.slots.size() - 1);
  slots_[v] = id;
  return id;
}

int32_t SlotTable::embedded_slot(const ir::Value& val) {
  if (auto it = embedded_.find(&val); it != embedded_.end()) return it->second;
  SlotPlan slot;
  slot.name = val.name;
  slot.dtype = val.dtype;
  slot.shape = val.shape;
  slot.bytes = static_cast<int64_t>(val.constant->byte_size());
  slot.location = SlotLocation::kWeights;
  slot.offset = align_up(out_.weights_bytes, kArenaAlignment);
  out_.weight_spans.push_back({slot.offset, &*val.constant});
  out_.weights_bytes = slot.offset + static_cast<int64_t>(val.constant->byte_size());
  out_.slots.push_back(std::move(slot));
  const auto id = static_cast<int32_t>(out_.slots.size() - 1);
  embedded_[&val] = id;
  return id;
}

}  // namespace graphc::emit
