#include "emit/plan/loop_plan.h"

#include <algorithm>
#include <map>

#include "emit/cuda/cuda_loop_control.h"
#include "ir/control_flow.h"

namespace graphc::emit {

namespace {

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

// The loop's part of the outer arena: after everything the outer plan placed,
// so nothing else lives there while the loop runs (the body's intermediates
// are not shared with the outer graph's: simple and safe, at the cost of the
// body's arena on top of the outer peak).
struct Region {
  GpuPlan& out;
  int64_t end;
  int32_t slot(const std::string& name, ir::DType dtype, const ir::Shape& shape) {
    SlotPlan s;
    s.name = name;
    s.dtype = dtype;
    s.shape = shape;
    s.bytes = ir::shape_numel(shape) * static_cast<int64_t>(ir::dtype_size(dtype));
    s.location = SlotLocation::kArena;
    s.offset = end;
    end = align_up(end + std::max<int64_t>(s.bytes, 1), kArenaAlignment);
    out.slots.push_back(std::move(s));
    return static_cast<int32_t>(out.slots.size() - 1);
  }
};

// The module of `entry` (one per distinct entry: entries name their source).
int32_t module_for(GpuPlan& out, const std::string& entry, const std::string& source) {
  for (const auto& l : out.launches)
    if (l.module >= 0 && l.entry == entry) return l.module;
  out.sources.push_back(source);
  return static_cast<int32_t>(out.sources.size() - 1);
}

LaunchPlan copy_launch(const std::string& name, int32_t src, int32_t dst,
                       const std::vector<std::string>& onnx_nodes, const GpuPlan& out) {
  LaunchPlan c;
  c.name = name;
  c.kind = KernelKind::kCopy;
  c.args = {src, dst};
  c.onnx_nodes = onnx_nodes;
  c.hbm_bytes = 2 * out.slots[static_cast<size_t>(dst)].bytes;
  return c;
}

Status check_binding(const GpuPlan& out, int32_t outer, const SlotPlan& inner, const ir::Node& n) {
  const SlotPlan& o = out.slots[static_cast<size_t>(outer)];
  if (o.dtype != inner.dtype || o.bytes != inner.bytes)
    return internal_error("Loop '{}': body input '{}' is {}[{}], bound to '{}' {}[{}]", n.name,
                          inner.name, ir::dtype_name(inner.dtype), ir::shape_to_string(inner.shape),
                          o.name, ir::dtype_name(o.dtype), ir::shape_to_string(o.shape));
  return Status::ok_status();
}

}  // namespace

Expected<LoweredLoop> lower_loop(const ir::Graph& graph, const ir::Node& n,
                                 const std::vector<std::string>& onnx_nodes,
                                 const target::CudaTarget& target, const PlanOptions& options,
                                 SlotTable& slots, GpuPlan& out) {
  if (n.subgraphs.size() != 1 || !n.attrs.has("_body_typed"))
    return unsupported("Loop '{}': its body was not prepared for the GPU (the "
                       "optimize-loop-bodies pass did not run)",
                       n.name);
  if (out.range)
    return unsupported("Loop '{}' on a run-time trip count or condition in an engine for a "
                       "shape range (not supported yet: build for fixed shapes)",
                       n.name);
  const ir::Graph& body = *n.subgraphs[0];
  const auto c = static_cast<size_t>(ir::captured_count(n));
  const size_t formal = n.inputs.size() - c;
  const size_t carried = formal > 2 ? formal - 2 : 0;
  if (body.outputs.size() != 1 + carried || n.outputs.size() != carried)
    return unsupported("Loop '{}' has {} scan output(s): their length is the trip count, known "
                       "only at run time (graphc needs static shapes)",
                       n.name, body.outputs.size() - 1 - carried);
  const bool has_m = n.has_input(0), has_cond = n.has_input(1);
  ASSIGN_OR_RETURN(LoopControlKernel control,
                   loop_control_kernel(has_m ? graph.value(n.inputs[0]).dtype : ir::DType::kUndefined,
                                       has_cond));
  PlanOptions sub_options;
  sub_options.allow_unlowered = options.allow_unlowered;
  sub_options.pack_weights = false;  // the outer plan packs the body's constants with its own
  auto lowered = lower_for_gpu(body, target, sub_options);
  if (!lowered.ok()) return lowered.status().with_context(fmt::format("Loop '{}' body", n.name));
  GpuPlan& sub = *lowered;

  Region region{out, align_up(out.arena_bytes, kArenaAlignment)};
  const int32_t iter = region.slot(n.name + "/iteration", ir::DType::kInt64, {});
  const int32_t cond_state = region.slot(n.name + "/condition", ir::DType::kBool, {});
  const int32_t flag = region.slot(n.name + "/continue", ir::DType::kInt32, {});
  std::vector<int32_t> state(carried);
  for (size_t k = 0; k < carried; ++k) {
    if (n.outputs[k] != ir::kNoValue) {
      ASSIGN_OR_RETURN(state[k], slots.slot_of(n.outputs[k]));
    } else {  // a result nobody reads still needs its state
      const ir::Value& v = graph.value(n.inputs[2 + k]);
      state[k] = region.slot(n.name + "/state" + std::to_string(k), v.dtype, v.shape);
    }
  }
  // Body inputs: iteration, condition, loop-carried state, captured values.
  std::vector<int32_t> bound{iter, cond_state};
  bound.insert(bound.end(), state.begin(), state.end());
  for (size_t i = formal; i < n.inputs.size(); ++i) {
    ASSIGN_OR_RETURN(int32_t s, slots.slot_of(n.inputs[i]));
    bound.push_back(s);
  }
  if (bound.size() != sub.inputs.size())
    return internal_error("Loop '{}': the body plan has {} inputs, the node binds {}", n.name,
                          sub.inputs.size(), bound.size());

  // The body's slots as outer slots.
  std::vector<int32_t> map(sub.slots.size(), -1);
  for (size_t i = 0; i < bound.size(); ++i) {
    const auto s = static_cast<size_t>(sub.inputs[i]);
    RETURN_IF_ERROR(check_binding(out, bound[i], sub.slots[s], n));
    map[s] = bound[i];
  }
  const int64_t sub_arena = region.end;
  region.end = align_up(region.end + sub.arena_bytes, kArenaAlignment);
  const int64_t sub_weights = align_up(out.weights_bytes, kArenaAlignment);
  for (const auto& span : sub.weight_spans)
    out.weight_spans.push_back({sub_weights + span.offset, span.tensor});
  if (sub.weights_bytes > 0) out.weights_bytes = sub_weights + sub.weights_bytes;
  for (size_t s = 0; s < sub.slots.size(); ++s) {
    if (map[s] >= 0) continue;
    SlotPlan slot = sub.slots[s];
    slot.name = n.name + "/" + slot.name;
    switch (slot.location) {
      case SlotLocation::kArena: slot.offset += sub_arena; break;
      case SlotLocation::kWeights: slot.offset += sub_weights; break;
      case SlotLocation::kOutput:  // the body's results live in the loop's region
        map[s] = region.slot(slot.name, slot.dtype, slot.shape);
        continue;
      case SlotLocation::kInput:
        return internal_error("Loop '{}': body input slot '{}' is not bound", n.name, slot.name);
    }
    out.slots.push_back(std::move(slot));
    map[s] = static_cast<int32_t>(out.slots.size() - 1);
  }
  auto outer = [&](int32_t s) { return map[static_cast<size_t>(s)]; };

  LoweredLoop result;
  // Initial values into the state.
  for (size_t k = 0; k < carried; ++k) {
    ASSIGN_OR_RETURN(int32_t init, slots.slot_of(n.inputs[2 + k]));
    if (init != state[k])
      out.launches.push_back(copy_launch(fmt::format("copy/{}/initial{}", n.name, k), init,
                                         state[k], onnx_nodes, out));
  }
  LaunchPlan loop;
  loop.name = n.name;
  loop.kind = KernelKind::kLoop;
  loop.entry = control.entry;
  loop.module = module_for(out, control.entry, control.source);
  loop.onnx_nodes = onnx_nodes;
  if (has_m) {
    ASSIGN_OR_RETURN(int32_t m, slots.slot_of(n.inputs[0]));
    loop.args.push_back(m);
  }
  if (has_cond) {
    ASSIGN_OR_RETURN(int32_t cond_in, slots.slot_of(n.inputs[1]));
    loop.args.push_back(cond_in);
  }
  loop.args.insert(loop.args.end(), {outer(sub.outputs[0]), iter, cond_state, flag});
  result.launch = static_cast<int32_t>(out.launches.size());
  out.launches.push_back(std::move(loop));
  const size_t body_first = out.launches.size();

  for (LaunchPlan l : sub.launches) {
    for (auto& a : l.args) a = outer(a);
    if (l.module >= 0) l.module = module_for(out, l.entry, sub.sources[static_cast<size_t>(l.module)]);
    out.launches.push_back(std::move(l));
  }
  // Loop-carried results into the state. A result that is another value's
  // state (a swap) goes through a temporary first, so no copy overwrites a
  // state a later copy reads.
  std::vector<int32_t> result_slot(carried);
  for (size_t k = 0; k < carried; ++k) {
    result_slot[k] = outer(sub.outputs[1 + k]);
    const bool is_other_state = std::find(state.begin(), state.end(), result_slot[k]) != state.end() &&
                                result_slot[k] != state[k];
    if (!is_other_state) continue;
    const SlotPlan& like = out.slots[static_cast<size_t>(state[k])];
    const ir::DType dtype = like.dtype;
    const ir::Shape shape = like.shape;
    const int32_t temp = region.slot(fmt::format("{}/carried{}", n.name, k), dtype, shape);
    out.launches.push_back(
        copy_launch(fmt::format("copy/{}/carried{}", n.name, k), result_slot[k], temp, onnx_nodes, out));
    result_slot[k] = temp;
  }
  for (size_t k = 0; k < carried; ++k)
    if (result_slot[k] != state[k])
      out.launches.push_back(copy_launch(fmt::format("copy/{}/next{}", n.name, k), result_slot[k],
                                         state[k], onnx_nodes, out));
  out.launches[static_cast<size_t>(result.launch)].loop_body =
      static_cast<int32_t>(out.launches.size() - body_first);

  const int64_t region_bytes = region.end - align_up(out.arena_bytes, kArenaAlignment);
  out.arena_bytes = region.end;
  out.arena_naive_bytes += region_bytes;
  out.arena_lower_bound_bytes += region_bytes;
  for (KernelRecord r : sub.kernels) {
    r.name = n.name + "/" + r.name;
    if (r.launch >= 0) r.launch += static_cast<int32_t>(body_first);
    result.body_records.push_back(std::move(r));
  }
  for (const auto& u : sub.unlowered) out.unlowered.push_back(fmt::format("Loop '{}' body: {}", n.name, u));
  return result;
}

}  // namespace graphc::emit
