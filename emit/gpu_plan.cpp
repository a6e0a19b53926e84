#include "emit/gpu_plan.h"

#include <map>

#include "emit/gpu_kernels.h"

namespace graphc::emit {

namespace {

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
      if (is_view_op(p.op)) {
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

}  // namespace

EpilogueTakes library_epilogue_takes(const GemmOptions& gemm, const ConvOptions& conv) {
  return [g_takes = gemm_epilogue_takes(gemm), c_takes = conv_epilogue_takes(conv)](
             const ir::Graph& g, ir::NodeId id) -> std::optional<size_t> {
    if (auto t = g_takes(g, id)) return t;
    return c_takes(g, id);
  };
}

Expected<GpuPlan> lower_for_gpu(const ir::Graph& optimized, const LowerOptions& options) {
  GpuPlan out;
  // Gemm/conv groups whose epilogue cuBLASLt/cuDNN takes only in part become
  // a library call and a generated epilogue kernel; the schedule and buffer
  // plan see both.
  ASSIGN_OR_RETURN(
      const ir::Graph graph,
      split_library_epilogues(optimized, library_epilogue_takes(options.gemm, options.conv)));
  Schedule schedule = make_schedule(graph);
  ASSIGN_OR_RETURN(BufferPlan plan, plan_buffers(graph, schedule));
  out.arena_bytes = plan.arena_bytes;
  SlotTable slots(graph, plan, out);
  std::map<std::string, int32_t> module_of;  // identical kernels share one module
  std::vector<std::string> missing;
  for (const auto& k : schedule.kernels) {
    const ir::Node& n = graph.node(k.node);
    // Every output known at build time (unoptimized graphs keep such nodes):
    // their values go into the weights and nothing runs.
    bool all_known = true;
    for (ir::ValueId o : n.outputs)
      all_known &= o == ir::kNoValue || graph.value(o).constant.has_value();
    if (all_known) continue;
    if (k.kind == KernelKind::kView) {
      // A view that is a graph output gets its own output buffer, filled by a
      // device-to-device copy at this point (the input's bytes may be reused later).
      if (!graph.is_graph_output(n.outputs[0])) continue;
      LaunchPlan copy;
      copy.name = "copy/" + n.name;
      copy.kind = "copy";
      copy.onnx_nodes = k.onnx_nodes;
      ASSIGN_OR_RETURN(int32_t src, slots.slot_of(n.inputs[0]));
      ASSIGN_OR_RETURN(int32_t dst, slots.slot_of(n.outputs[0]));
      copy.args = {src, dst};
      out.launches.push_back(std::move(copy));
      continue;
    }
    // A library call instead of generated code: its arguments' slots, then the call.
    auto library_launch = [&](const std::string& prefix, std::vector<int32_t> args,
                              LaunchPlan::Library call) {
      LaunchPlan launch;
      launch.name = prefix + n.name;
      launch.kind = kernel_kind_name(k.kind);
      launch.onnx_nodes = k.onnx_nodes;
      launch.args = std::move(args);
      launch.library = std::move(call);
      out.launches.push_back(std::move(launch));
    };
    if (k.kind == KernelKind::kGemm) {
      GemmChoice choice = choose_gemm_lowering(graph, k.node, options.gemm);
      if (choice.call) {
        std::vector<int32_t> args;
        for (ir::ValueId v : choice.call->args) {
          ASSIGN_OR_RETURN(int32_t s, slots.slot_of(v));
          args.push_back(s);
        }
        library_launch("cublaslt_matmul/", std::move(args),
                       {"cublasLt", "matmul", engine::encode_matmul_params(choice.call->params), -1,
                        kCublasLtWorkspaceBytes});
        continue;
      }
    }
    if (k.kind == KernelKind::kConv) {
      ConvChoice choice = choose_conv_lowering(graph, k.node, options.conv);
      if (choice.call) {
        std::vector<int32_t> args;
        for (const CallOperand& a : choice.call->args) {
          if (a.embedded) {
            args.push_back(slots.embedded_slot(*a.embedded));
            continue;
          }
          ASSIGN_OR_RETURN(int32_t s, slots.slot_of(a.value));
          args.push_back(s);
        }
        library_launch("cudnn_conv/", std::move(args),
                       {"cudnn", "conv", engine::encode_conv_params(choice.call->params),
                        choice.call->params.algorithm, kCudnnWorkspaceLimitBytes});
        continue;
      }
    }
    auto gen = generate_gpu_kernel(graph, k.node, k.kind);
    if (!gen.ok() && gen.status().code() == ErrorCode::kUnsupported) {
      // Collected, so one build lists every kernel that cannot run yet.
      std::string ops;
      for (size_t i = 0; i < k.onnx_ops.size(); ++i) ops += (i ? ", " : "") + k.onnx_ops[i];
      missing.push_back(fmt::format("{} kernel '{}' ({}): {}", kernel_kind_name(k.kind), n.name,
                                    ops, gen.status().message()));
      continue;
    }
    if (!gen.ok()) return gen.status().with_context(fmt::format("kernel '{}'", n.name));
    LaunchPlan launch;
    launch.name = gen->name;
    launch.kind = kernel_kind_name(k.kind);
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
    out.launches.push_back(std::move(launch));
  }
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += "\n  " + m;
    return unsupported("no GPU lowering for {} of the model's kernels:{}", missing.size(), list);
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
