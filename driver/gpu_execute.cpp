#include "driver/gpu_execute.h"

#include <cstring>

#include "driver/engine_load.h"
#include "emit/gpu_plan.h"
#include "emit/nvrtc_compiler.h"
#include "runtime/cuda_driver.h"
#include "runtime/session.h"

namespace graphc::driver {

Expected<std::string> device_arch() {
  ASSIGN_OR_RETURN(int sm, device_compute_capability(0));
  return fmt::format("sm_{}", sm);
}

namespace {
runtime::TensorSlot::Location to_runtime(emit::SlotLocation l) {
  switch (l) {
    case emit::SlotLocation::kArena: return runtime::TensorSlot::Location::kArena;
    case emit::SlotLocation::kWeights: return runtime::TensorSlot::Location::kWeights;
    case emit::SlotLocation::kInput: return runtime::TensorSlot::Location::kInput;
    case emit::SlotLocation::kOutput: return runtime::TensorSlot::Location::kOutput;
  }
  return runtime::TensorSlot::Location::kArena;
}
}  // namespace

Expected<std::map<std::string, ir::Tensor>> execute_on_gpu(
    const ir::Graph& graph, const std::map<std::string, ir::Tensor>& feeds,
    const emit::LowerOptions& options) {
  ASSIGN_OR_RETURN(std::string arch, device_arch());
  ASSIGN_OR_RETURN(emit::GpuPlan plan, emit::lower_for_gpu(graph, options));
  runtime::Executable exe;
  // One module per distinct kernel, exactly as an engine stores its code;
  // each compiled once per source through the cache.
  if (!plan.sources.empty()) {
    std::vector<emit::CudaSource> sources;
    for (size_t i = 0; i < plan.sources.size(); ++i)
      sources.push_back({fmt::format("module{}", i), plan.sources[i]});
    for (const auto& l : plan.launches)
      if (l.module >= 0) sources[static_cast<size_t>(l.module)].name = l.entry;
    emit::CompileOptions copts;
    copts.cache_dir = emit::default_cache_dir();
    copts.stop_on_error = true;
    auto compiled = emit::compile_cuda_many(sources, {arch}, copts);
    for (auto& mod : compiled) {
      if (!mod.ok()) return mod.status();
      const auto& bin = mod->binaries.at(0);
      exe.images.emplace_back(bin.cubin.begin(), bin.cubin.end());
    }
  }
  for (const auto& s : plan.slots)
    exe.tensors.push_back({s.name, to_runtime(s.location), s.offset, s.bytes,
                           static_cast<int32_t>(s.dtype), s.shape});
  for (const auto& l : plan.launches) {
    runtime::Launch launch{
        l.entry.empty() ? -1 : l.module, l.entry, l.grid, l.block, l.shared_bytes, l.args};
    if (l.library) {
      if (l.library->library == "cudnn" && l.library->op == "sdpa") {
        ASSIGN_OR_RETURN(launch.sdpa, engine::decode_sdpa_params(l.library->params));
      } else if (l.library->library == "cudnn") {
        ASSIGN_OR_RETURN(launch.conv, engine::decode_conv_params(l.library->params));
      } else {
        ASSIGN_OR_RETURN(launch.matmul, engine::decode_matmul_params(l.library->params));
      }
      launch.algorithm = l.library->algorithm;
      launch.workspace_bytes = l.library->workspace_bytes;
    }
    exe.launches.push_back(std::move(launch));
  }
  exe.arena_bytes = plan.arena_bytes;
  exe.weights = plan.weights;
  exe.inputs = plan.inputs;
  exe.outputs = plan.outputs;
  ASSIGN_OR_RETURN(auto session, runtime::Session::create(exe));
  std::vector<std::string> in_bytes;
  for (ir::ValueId v : graph.inputs) {
    const auto& name = graph.value(v).name;
    auto it = feeds.find(name);
    if (it == feeds.end()) return invalid_argument("no data for input '{}'", name);
    in_bytes.emplace_back(reinterpret_cast<const char*>(it->second.data()), it->second.byte_size());
  }
  std::vector<std::string> out_bytes;
  RETURN_IF_ERROR(session->run(in_bytes, out_bytes));
  std::map<std::string, ir::Tensor> outputs;
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const ir::Value& v = graph.value(graph.outputs[i]);
    ir::Tensor t(v.dtype, v.shape);
    if (t.byte_size() != out_bytes[i].size())
      return internal_error("output '{}': {} bytes from the GPU, {} expected", v.name,
                            out_bytes[i].size(), t.byte_size());
    if (t.byte_size()) std::memcpy(t.mutable_data(), out_bytes[i].data(), t.byte_size());
    outputs[v.name] = std::move(t);
  }
  return outputs;
}

}  // namespace graphc::driver
