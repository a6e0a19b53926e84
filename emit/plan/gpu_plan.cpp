#include "emit/plan/gpu_plan.h"

#include <map>

#include <fmt/ranges.h>

#include "emit/cuda/gpu_kernels.h"
#include "ir/printer.h"

namespace graphc::emit {

namespace {

using target::ConvChoice;
using target::GemmChoice;

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

class SlotTable {
 public:
  SlotTable(const ir::Graph& g, const BufferPlan& plan, GpuPlan& out)
      : g_(g), plan_(plan), out_(out) {}

  // The slot holding `v`'s bytes, created on first use.
  Expected<int32_t> slot_of(ir::ValueId v) {
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
    slot.bytes = value_bytes(g_, v);
    // Known at build time (an initializer, or a node output that shape
    // inference computed: its kernel is skipped): stored with the weights.
    if (val.constant && !g_.is_graph_input(v)) {
      slot.location = SlotLocation::kWeights;
      slot.offset = align_up(static_cast<int64_t>(out_.weights.size()), kArenaAlignment);
      out_.weights.resize(static_cast<size_t>(slot.offset), '\0');
      out_.weights.append(reinterpret_cast<const char*>(val.constant->data()),
                          val.constant->byte_size());
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

  // A weights slot for a constant embedded in a fused group's body (one per constant).
  int32_t embedded_slot(const ir::Value& val) {
    if (auto it = embedded_.find(&val); it != embedded_.end()) return it->second;
    SlotPlan slot;
    slot.name = val.name;
    slot.dtype = val.dtype;
    slot.shape = val.shape;
    slot.bytes = static_cast<int64_t>(val.constant->byte_size());
    slot.location = SlotLocation::kWeights;
    slot.offset = align_up(static_cast<int64_t>(out_.weights.size()), kArenaAlignment);
    out_.weights.resize(static_cast<size_t>(slot.offset), '\0');
    out_.weights.append(reinterpret_cast<const char*>(val.constant->data()),
                        val.constant->byte_size());
    out_.slots.push_back(std::move(slot));
    const auto id = static_cast<int32_t>(out_.slots.size() - 1);
    embedded_[&val] = id;
    return id;
  }

 private:
  const ir::Graph& g_;
  const BufferPlan& plan_;
  GpuPlan& out_;
  std::map<ir::ValueId, int32_t> slots_;
  std::map<const ir::Value*, int32_t> embedded_;
};

// A library call's launch, before its arguments.
LaunchPlan library_launch(const ir::Node& n, const ScheduledKernel& k, KernelKind kind) {
  LaunchPlan launch;
  launch.name = (kind == KernelKind::kGemm ? "cublaslt_matmul/" : "cudnn_conv/") + n.name;
  launch.kind = kind;
  launch.onnx_nodes = k.onnx_nodes;
  return launch;
}

}  // namespace

std::string_view library_call_library(LibraryOp op) {
  return op == LibraryOp::kCudnnConv ? "cudnn" : "cublasLt";
}
std::string_view library_call_op(LibraryOp op) {
  return op == LibraryOp::kCudnnConv ? "conv" : "matmul";
}

Expected<GpuPlan> lower_for_gpu(const ir::Graph& graph, const LowerOptions& options) {
  return lower_for_gpu(graph, target::CudaTarget(options));
}

Expected<GpuPlan> lower_for_gpu(const ir::Graph& graph, const target::CudaTarget& target,
                                const PlanOptions& options) {
  GpuPlan out;
  Schedule schedule = make_schedule(graph);
  ASSIGN_OR_RETURN(BufferPlan plan, plan_buffers(graph, schedule));
  out.arena_bytes = plan.arena_bytes;
  out.arena_naive_bytes = plan.naive_bytes;
  out.arena_lower_bound_bytes = plan.lower_bound_bytes;
  SlotTable slots(graph, plan, out);
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
      out.launches.push_back(std::move(launch));
    };
    // Every output known at build time (unoptimized graphs keep such nodes):
    // their values go into the weights and nothing runs.
    bool all_known = true;
    for (ir::ValueId o : n.outputs)
      all_known &= o == ir::kNoValue || graph.value(o).constant.has_value();
    if (k.kind == KernelKind::kGemm) {
      GemmChoice choice = target.choose_gemm(graph, k.node);
      record.lowering = {choice.call ? target::Library::kCublasLt : target::Library::kNone,
                         choice.reason};
      if (all_known) continue;
      if (choice.call) {
        LaunchPlan launch = library_launch(n, k, KernelKind::kGemm);
        for (ir::ValueId v : choice.call->args) {
          ASSIGN_OR_RETURN(int32_t s, slots.slot_of(v));
          launch.args.push_back(s);
        }
        launch.library = LibraryCallPlan{LibraryOp::kCublasLtMatmul,
                                         engine::encode_matmul_params(choice.call->params), -1,
                                         target::kCublasLtWorkspaceBytes};
        add_launch(std::move(launch));
        continue;
      }
    }
    if (k.kind == KernelKind::kConv) {
      ConvChoice choice = target.choose_conv(graph, k.node);
      record.lowering = {choice.call ? target::Library::kCudnn : target::Library::kNone,
                         choice.reason};
      if (all_known) continue;
      if (choice.call) {
        LaunchPlan launch = library_launch(n, k, KernelKind::kConv);
        for (const target::CallOperand& a : choice.call->args) {
          if (a.embedded) {
            launch.args.push_back(slots.embedded_slot(*a.embedded));
            continue;
          }
          ASSIGN_OR_RETURN(int32_t s, slots.slot_of(a.value));
          launch.args.push_back(s);
        }
        launch.library = LibraryCallPlan{LibraryOp::kCudnnConv,
                                         engine::encode_conv_params(choice.call->params),
                                         choice.call->params.algorithm,
                                         target::kCudnnWorkspaceLimitBytes};
        add_launch(std::move(launch));
        continue;
      }
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
    auto gen = generate_gpu_kernel(graph, k.node, k.kind);
    if (!gen.ok() && gen.status().code() == ErrorCode::kUnsupported) {
      // Collected, so one build lists every kernel that cannot run yet.
      record.unlowered = gen.status().message();
      out.unlowered.push_back(fmt::format("{} kernel '{}' ({}): {}", kernel_kind_name(k.kind),
                                          n.name, fmt::join(k.onnx_ops, ", "),
                                          record.unlowered));
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
    launch.onnx_nodes = k.onnx_nodes;
    for (ir::ValueId v : gen->args) {
      ASSIGN_OR_RETURN(int32_t s, slots.slot_of(v));
      launch.args.push_back(s);
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
  return out;
}

}  // namespace graphc::emit
