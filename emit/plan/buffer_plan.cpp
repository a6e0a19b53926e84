#include "emit/plan/buffer_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>

namespace graphc::emit {

namespace {
int64_t align_up(int64_t x) {
  return (x + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

// Elementwise kernels read element i before writing element i, so their
// output may overwrite an input of the same size that dies here. A group that
// reads through index maps (fuse-index-maps) reads other elements: never.
bool can_run_in_place(const ir::Node& n) {
  if (n.op == ir::OpKind::FusedGroup) {
    if (n.fusion != ir::FusionKind::kElementwise || n.outputs.size() != 1 || !n.body) return false;
    for (const auto& inner : n.body->nodes)
      if (!inner.dead && !ir::is_elementwise(inner.op)) return false;
    return true;
  }
  return ir::is_elementwise(n.op);
}

// The first rule `plan` breaks, with the buffers involved (indices into
// plan.buffers; a == b where one buffer breaks it alone).
struct PlanFault {
  std::string what;
  size_t a = 0, b = 0;
};

std::optional<PlanFault> find_plan_fault(const BufferPlan& plan) {
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const auto& a = plan.buffers[i];
    if (a.offset < 0 || a.size < 0 || a.offset + a.size > plan.arena_bytes)
      return PlanFault{fmt::format("buffer for value {} [{}, +{}) lies outside the {}-byte arena",
                                   a.value, a.offset, a.size, plan.arena_bytes),
                       i, i};
    if (a.offset % kArenaAlignment != 0)
      return PlanFault{
          fmt::format("buffer for value {} is not {}-byte aligned", a.value, kArenaAlignment), i, i};
    for (size_t j = i + 1; j < plan.buffers.size(); ++j) {
      const auto& b = plan.buffers[j];
      bool related = a.alias_of == b.value || b.alias_of == a.value ||
                     (a.alias_of != ir::kNoValue && a.alias_of == b.alias_of);
      if (related) continue;
      bool time_overlap = a.first_step <= b.last_step && b.first_step <= a.last_step;
      bool space_overlap = a.offset < b.offset + b.size && b.offset < a.offset + a.size;
      if (time_overlap && space_overlap)
        return PlanFault{fmt::format("values {} and {} are live together but share arena bytes",
                                     a.value, b.value),
                         i, j};
    }
  }
  return std::nullopt;
}

}  // namespace

const BufferAssignment* BufferPlan::find(ir::ValueId v) const {
  for (const auto& b : buffers)
    if (b.value == v) return &b;
  return nullptr;
}

Expected<BufferPlan> plan_buffers(const ir::Graph& g, const Schedule& schedule,
                                  const ValueSizes* sizes) {
  BufferPlan plan;
  auto bytes_of = [&](ir::ValueId v) { return sizes ? sizes->bytes(v) : value_bytes(g, v); };
  auto planned = [&](ir::ValueId v) {
    const auto& val = g.value(v);
    return val.producer >= 0 && !val.constant && !g.is_graph_output(v) && !g.is_graph_input(v);
  };
  // 1. Lifetimes, with views and in-place outputs merged into their root buffer.
  std::unordered_map<ir::ValueId, size_t> index;      // value -> buffers[] slot
  std::unordered_map<ir::ValueId, ir::ValueId> root;  // value -> value owning the bytes
  auto root_of = [&](ir::ValueId v) {
    while (root.count(v) && root[v] != v) v = root[v];
    return v;
  };
  std::vector<ir::ValueId> last_reader_done;
  for (size_t step = 0; step < schedule.kernels.size(); ++step) {
    const ir::Node& n = g.node(schedule.kernels[step].node);
    for (ir::ValueId in : n.inputs)
      if (in != ir::kNoValue && index.count(root_of(in)))
        plan.buffers[index[root_of(in)]].last_step = static_cast<int>(step);
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      ir::ValueId out = n.outputs[o];
      if (out == ir::kNoValue || !planned(out)) continue;
      plan.naive_bytes += align_up(bytes_of(out));
      ir::ValueId alias = ir::kNoValue;
      if (o == 0 && ir::op_info(n.op).traits.view && n.inputs[0] != ir::kNoValue &&
          index.count(root_of(n.inputs[0])))
        alias = root_of(n.inputs[0]);
      if (alias == ir::kNoValue && o == 0 && can_run_in_place(n)) {
        for (ir::ValueId in : n.inputs) {
          if (in == ir::kNoValue || !index.count(root_of(in))) continue;
          ir::ValueId r = root_of(in);
          const auto& b = plan.buffers[index[r]];
          // The input must die at this kernel: no later reader of it or its aliases.
          bool dies_here = true;
          for (size_t later = step + 1; later < schedule.kernels.size() && dies_here; ++later)
            for (ir::ValueId x : g.node(schedule.kernels[later].node).inputs)
              if (x != ir::kNoValue && index.count(root_of(x)) && root_of(x) == r)
                dies_here = false;
          const bool same = sizes ? sizes->same_size(b.value, out) : b.size == value_bytes(g, out);
          if (dies_here && same &&
              g.value(in).dtype == g.value(out).dtype) {
            alias = r;
            break;
          }
        }
      }
      if (alias != ir::kNoValue) {
        root[out] = alias;
        auto& b = plan.buffers[index[alias]];
        b.last_step = std::max(b.last_step, static_cast<int>(step));
        // A view holds as many bytes as its root at every shape, but over a
        // range the two sizes' largest values come from different
        // expressions (Swin's window counts: floor divisions that do not
        // cancel) and may disagree: the root covers the larger.
        b.size = std::max(b.size, bytes_of(out));
        continue;
      }
      root[out] = out;
      index[out] = plan.buffers.size();
      BufferAssignment a;
      a.value = out;
      a.size = bytes_of(out);
      a.first_step = a.last_step = static_cast<int>(step);
      plan.buffers.push_back(a);
    }
  }
  // 2. Lower bound: peak of live bytes over steps.
  for (size_t step = 0; step < schedule.kernels.size(); ++step) {
    int64_t live = 0;
    for (const auto& b : plan.buffers)
      if (b.first_step <= static_cast<int>(step) && static_cast<int>(step) <= b.last_step)
        live += align_up(b.size);
    plan.lower_bound_bytes = std::max(plan.lower_bound_bytes, live);
  }
  // 3. Offsets: largest first, each at the lowest offset free over its lifetime.
  std::vector<size_t> order(plan.buffers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return plan.buffers[a].size > plan.buffers[b].size; });
  std::vector<size_t> placed;
  for (size_t i : order) {
    auto& cur = plan.buffers[i];
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t j : placed) {
      const auto& o = plan.buffers[j];
      if (o.first_step <= cur.last_step && cur.first_step <= o.last_step)
        busy.emplace_back(o.offset, o.offset + align_up(o.size));
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [lo, hi] : busy) {
      if (offset + align_up(cur.size) <= lo) break;
      offset = std::max(offset, hi);
    }
    cur.offset = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + align_up(cur.size));
    placed.push_back(i);
  }
  // 4. Aliased values take their root's offset.
  for (const auto& [v, r] : root) {
    if (v == r) continue;
    ir::ValueId rr = root_of(v);
    const auto& rb = plan.buffers[index[rr]];
    BufferAssignment a;
    a.value = v;
    a.offset = rb.offset;
    a.size = bytes_of(v);
    a.first_step = rb.first_step;
    a.last_step = rb.last_step;
    a.alias_of = rr;
    plan.buffers.push_back(a);
  }
  if (auto fault = find_plan_fault(plan)) {
    // Name the values (the check itself knows only ids).
    std::string named = fault->what;
    for (size_t k : {fault->a, fault->b}) {
      const auto& b = plan.buffers[k];
      named += fmt::format("; value {} is '{}' [{}, +{}) steps {}-{}{}", b.value,
                           g.value(b.value).name, b.offset, b.size, b.first_step, b.last_step,
                           b.alias_of == ir::kNoValue
                               ? std::string()
                               : fmt::format(", a view of '{}'", g.value(b.alias_of).name));
      if (fault->a == fault->b) break;
    }
    return internal_error("{}", named);
  }
  return plan;
}

Status validate_buffer_plan(const BufferPlan& plan) {
  if (auto fault = find_plan_fault(plan)) return internal_error("{}", fault->what);
  return Status::ok_status();
}

}  // namespace graphc::emit
