#include "emit/plan/gpu_plan.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "emit/cuda/fused_range.h"
#include "emit/cuda/gpu_kernels.h"
#include "emit/library/library_calls.h"
#include "emit/plan/kernel_flops.h"
#include "emit/plan/loop_plan.h"
#include "emit/plan/slot_table.h"
#include "ir/printer.h"

namespace graphc::emit {

void fill_weights(const std::vector<GpuPlan::WeightSpan>& spans, uint64_t offset, char* dst,
                  size_t n) {
  std::memset(dst, 0, n);  // the alignment gaps
  const uint64_t end = offset + n;
  // The first span that ends after `offset` (spans are sorted and disjoint).
  auto it = std::partition_point(spans.begin(), spans.end(), [&](const GpuPlan::WeightSpan& s) {
    return static_cast<uint64_t>(s.offset) + s.tensor->byte_size() <= offset;
  });
  for (; it != spans.end() && static_cast<uint64_t>(it->offset) < end; ++it) {
    const uint64_t from = std::max<uint64_t>(offset, static_cast<uint64_t>(it->offset));
    const uint64_t to = std::min<uint64_t>(end, it->offset + it->tensor->byte_size());
    std::memcpy(dst + (from - offset),
                reinterpret_cast<const char*>(it->tensor->data()) + (from - it->offset),
                static_cast<size_t>(to - from));
    // The engine writer streams each weight once: a mapped one's pages can go.
    if (to == it->offset + it->tensor->byte_size()) it->tensor->release_resident();
  }
}

int32_t RangePlan::intern(const ir::DimExpr& e) {
  SizeProgram p = e.to_program();
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] == p) return static_cast<int32_t>(i);
  sizes.push_back(std::move(p));
  return static_cast<int32_t>(sizes.size() - 1);
}

Expected<GpuPlan> lower_for_gpu(const ir::Graph& graph, const LowerOptions& options) {
  return lower_for_gpu(graph, target::CudaTarget(options));
}

Expected<GpuPlan> lower_for_gpu(const ir::Graph& graph, const target::CudaTarget& target,
                                const PlanOptions& options) {
  GpuPlan out;
  const ir::SymbolicShapes* range = options.range;
  if (range) {
    if (range->values.size() != graph.values.size())
      return internal_error("symbolic shapes of {} values for a graph of {}", range->values.size(),
                            graph.values.size());
    out.range.emplace();
    out.range->symbol_names = range->symbol_names;
    out.range->symbol_min = range->symbol_min;
    out.range->symbol_max = range->symbol_max;
  }
  Schedule schedule = make_schedule(graph);
  ASSIGN_OR_RETURN(const ValueSizes sizes, ValueSizes::make(graph, range));
  ASSIGN_OR_RETURN(BufferPlan plan, plan_buffers(graph, schedule, &sizes));
  out.arena_bytes = plan.arena_bytes;
  out.arena_naive_bytes = plan.naive_bytes;
  out.arena_lower_bound_bytes = plan.lower_bound_bytes;
  SlotTable slots(graph, plan, out, sizes, range);
  std::map<std::string, int32_t> module_of;  // identical kernels share one module
  for (const auto& k : schedule.kernels) {
    const ir::Node& n = graph.node(k.node);
    KernelRecord& record = out.kernels.emplace_back();
    record.kind = k.kind;
    record.name = n.name;
    record.onnx_nodes = k.onnx_nodes;
    record.onnx_ops = k.onnx_ops;
    record.output = n.outputs.empty() || n.outputs[0] == ir::kNoValue
                        ? "-"
                        : ir::value_type_string(graph.value(n.outputs[0]));
    record.bytes_fused = k.bytes_fused;
    record.bytes_unfused = k.bytes_unfused;
    auto add_launch = [&](LaunchPlan launch) {
      record.launch = static_cast<int32_t>(out.launches.size());
      launch.flops = record.flops;
      launch.math = record.math;
      launch.hbm_bytes = launch.kind == KernelKind::kCopy && !launch.args.empty()
                             ? 2 * out.slots[static_cast<size_t>(launch.args[0])].bytes
                             : record.bytes_fused;
      out.launches.push_back(std::move(launch));
    };
    if (k.kind == KernelKind::kLoop) {
      auto loop = lower_loop(graph, n, k.onnx_nodes, target, options, slots, out);
      if (!loop.ok() && loop.status().code() == ErrorCode::kUnsupported) {
        record.unlowered = loop.status().message();
        out.unlowered.push_back(fmt::format("loop '{}' (Loop): {}", n.name, record.unlowered));
        continue;
      }
      if (!loop.ok()) return loop.status();
      record.launch = loop->launch;  // before the body's records move `record`
      for (auto& r : loop->body_records) out.kernels.push_back(std::move(r));
      continue;
    }
    // Every output known at build time (unoptimized graphs keep such nodes):
    // their values go into the weights and nothing runs.
    bool all_known = true;
    for (ir::ValueId o : n.outputs)
      all_known &= o == ir::kNoValue || graph.value(o).constant.has_value();
    ASSIGN_OR_RETURN(LibraryLowering library,
                     lower_library_call(graph, k, target, slots, /*make_launch=*/!all_known, range));
    record.lowering = std::move(library.lowering);
    const KernelArithmetic arithmetic = kernel_arithmetic(graph, n);
    record.flops = arithmetic.flops;
    if (arithmetic.flops > 0)
      record.math =
          target.contraction_math(arithmetic.dtype, record.lowering.library, arithmetic.depthwise);
    if (library.launch && range && !library.sizes.empty())
      for (const ir::DimExpr& e : library.sizes)
        library.launch->library->sizes.push_back(out.range->intern(e));
    else if (library.launch && range)
      if (ir::ValueId v = first_varying_value(n, *range); v != ir::kNoValue)
        return unsupported(
            "kernel '{}': {} calls do not take run-time shapes yet, and '{}' is {} over the "
            "shape range",
            n.name, target::library_name(record.lowering.library), graph.value(v).name,
            range->shape_string(v));
    if (library.launch) {
      add_launch(std::move(*library.launch));
      continue;
    }
    if (all_known) continue;
    if (k.kind == KernelKind::kView) {
      // A view that is a graph output gets its own output buffer, filled by a
      // device-to-device copy at this point (the input's bytes may be reused later).
      if (!graph.is_graph_output(n.outputs[0])) continue;
      LaunchPlan copy;
      copy.name = "copy/" + n.name;
      copy.kind = KernelKind::kCopy;
      copy.onnx_nodes = k.onnx_nodes;
      ASSIGN_OR_RETURN(int32_t src, slots.slot_of(n.inputs[0]));
      ASSIGN_OR_RETURN(int32_t dst, slots.slot_of(n.outputs[0]));
      copy.args = {src, dst};
      add_launch(std::move(copy));
      continue;
    }
    auto gen = generate_gpu_kernel(graph, k.node, k.kind, {target.options().min_sm, range});
    if (!gen.ok() && gen.status().code() == ErrorCode::kUnsupported) {
      // Collected, so one build lists every kernel that cannot run yet.
      record.unlowered = gen.status().message();
      out.unlowered.push_back(fmt::format("{} kernel '{}' ({}): {}", kernel_kind_name(k.kind),
                                          n.name, fmt::join(k.onnx_ops, ", "), record.unlowered));
      continue;
    }
    if (!gen.ok()) return gen.status().with_context(fmt::format("kernel '{}'", n.name));
    LaunchPlan launch;
    launch.name = gen->name;
    launch.kind = k.kind;
    launch.entry = gen->entry;
    launch.grid = {static_cast<uint32_t>(gen->blocks), static_cast<uint32_t>(gen->grid_y),
                   static_cast<uint32_t>(gen->grid_z)};
    launch.block = {static_cast<uint32_t>(gen->threads_per_block),
                    static_cast<uint32_t>(gen->block_y), static_cast<uint32_t>(gen->block_z)};
    launch.shared_bytes = static_cast<uint32_t>(gen->shared_bytes);
    launch.params = std::move(gen->params);
    for (const auto& e : gen->sizes) launch.size_block.push_back(out.range->intern(e));
    if (gen->grid_x) launch.grid_x_size = out.range->intern(*gen->grid_x);
    if (gen->grid_y_at_run_time) launch.grid_y_size = out.range->intern(*gen->grid_y_at_run_time);
    if (gen->grid_z_at_run_time) launch.grid_z_size = out.range->intern(*gen->grid_z_at_run_time);
    launch.onnx_nodes = k.onnx_nodes;
    for (ir::ValueId v : gen->args) {
      ASSIGN_OR_RETURN(int32_t s, slots.slot_of(v));
      launch.args.push_back(s);
    }
    // cuDNN's SDPA over the range, on the kernel's own operands.
    if (library.preferred && library.preferred->args == gen->args && !launch.size_block.empty()) {
      LibraryCallPlan call = std::move(library.preferred->call);
      for (const auto& e : library.preferred->fields)
        call.sizes.push_back(e ? out.range->intern(*e) : -1);
      launch.preferred = std::move(call);
    } else if (library.preferred) {
      record.lowering = {target::Library::kNone,
                         "generated: its kernel's operands are not cuDNN SDPA's"};
    }
    auto [it, fresh] = module_of.emplace(gen->entry, static_cast<int32_t>(out.sources.size()));
    if (fresh) out.sources.push_back(std::move(gen->source));
    launch.module = it->second;
    add_launch(std::move(launch));
  }
  if (!out.unlowered.empty() && !options.allow_unlowered) {
    std::string list;
    for (const auto& m : out.unlowered) list += "\n  " + m;
    return unsupported("no GPU lowering for {} of the model's kernels:{}", out.unlowered.size(),
                       list);
  }
  for (ir::ValueId v : graph.inputs) {
    ASSIGN_OR_RETURN(int32_t s, slots.slot_of(v));
    out.inputs.push_back(s);
  }
  for (ir::ValueId v : graph.outputs) {
    ASSIGN_OR_RETURN(int32_t s, slots.slot_of(v));
    out.outputs.push_back(s);
  }
  if (options.pack_weights) {  // one allocation of the exact size, no regrowth
    out.weights.assign(static_cast<size_t>(out.weights_bytes), '\0');
    fill_weights(out.weight_spans, 0, out.weights.data(), out.weights.size());
  }
  return out;
}

}  // namespace graphc::emit
