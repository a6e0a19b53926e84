#include "driver/engine_build.h"

#include "emit/gpu_plan.h"
#include "runtime/cuda_driver.h"
#include "support/version.h"

namespace graphc::driver {

namespace {

engine::Tensor::Location to_manifest(emit::SlotLocation l) {
  switch (l) {
    case emit::SlotLocation::kArena: return engine::Tensor::ARENA;
    case emit::SlotLocation::kWeights: return engine::Tensor::WEIGHTS;
    case emit::SlotLocation::kInput: return engine::Tensor::INPUT;
    case emit::SlotLocation::kOutput: return engine::Tensor::OUTPUT;
  }
  return engine::Tensor::ARENA;
}

runtime::TensorSlot::Location to_runtime(engine::Tensor::Location l) {
  switch (l) {
    case engine::Tensor::WEIGHTS: return runtime::TensorSlot::Location::kWeights;
    case engine::Tensor::INPUT: return runtime::TensorSlot::Location::kInput;
    case engine::Tensor::OUTPUT: return runtime::TensorSlot::Location::kOutput;
    default: return runtime::TensorSlot::Location::kArena;
  }
}

}  // namespace

Expected<engine::EngineContents> build_engine(const ir::Graph& graph, const BuildOptions& options) {
  if (options.archs.empty()) return invalid_argument("no target architecture (--arch sm_90 ...)");
  ASSIGN_OR_RETURN(emit::GpuPlan plan, emit::lower_for_gpu(graph));
  engine::EngineContents out;
  engine::Manifest& m = out.manifest;
  m.set_producer(std::string("graphc ") + kVersion);
  m.set_graph_name(graph.name);
  m.set_precision(options.precision);
  for (const auto& s : plan.slots) {
    engine::Tensor* t = m.add_tensors();
    t->set_name(s.name);
    t->set_dtype(static_cast<int32_t>(s.dtype));
    for (int64_t d : s.shape) t->add_shape(d);
    t->set_location(to_manifest(s.location));
    t->set_offset(static_cast<uint64_t>(s.offset));
    t->set_bytes(static_cast<uint64_t>(s.bytes));
  }
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    engine::Binding* b = m.add_inputs();
    b->set_name(graph.value(graph.inputs[i]).name);
    b->set_tensor(plan.inputs[i]);
  }
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    engine::Binding* b = m.add_outputs();
    b->set_name(graph.value(graph.outputs[i]).name);
    b->set_tensor(plan.outputs[i]);
  }
  m.set_arena_bytes(static_cast<uint64_t>(plan.arena_bytes));
  m.set_weights_bytes(plan.weights.size());
  out.weights = plan.weights;
  for (const auto& l : plan.launches) {
    engine::Kernel* k = m.add_kernels();
    k->set_name(l.name);
    k->set_kind(l.kind);
    k->set_module_entry(l.entry);
    for (uint32_t g : l.grid) k->add_grid(g);
    for (uint32_t b : l.block) k->add_block(b);
    k->set_shared_mem_bytes(l.shared_bytes);
    for (int32_t a : l.args) k->add_args(a);
    for (const auto& n : l.onnx_nodes) k->add_onnx_nodes(n);
  }
  // One module per architecture: CUBIN for exactly that SM and PTX the
  // driver can JIT on newer GPUs.
  const std::string source = emit::combined_source(plan);
  for (size_t i = 0; i < options.archs.size(); ++i) {
    const std::string& arch = options.archs[i];
    ASSIGN_OR_RETURN(emit::CompiledModule mod,
                     emit::compile_cuda(source, graph.name.empty() ? "engine" : graph.name, {arch},
                                        options.compile));
    const emit::ArchBinary& bin = mod.binaries.at(0);
    engine::CodeModule* cm = m.add_code_modules();
    cm->set_arch(arch);
    out.code.push_back({arch, engine::CodeBlob::Kind::kPtx, bin.ptx});
    cm->set_ptx_section(engine::code_section_index(out.code.size() - 1));
    out.code.push_back(
        {arch, engine::CodeBlob::Kind::kCubin, std::string(bin.cubin.begin(), bin.cubin.end())});
    cm->set_cubin_section(engine::code_section_index(out.code.size() - 1));
    if (options.on_compiled) options.on_compiled(i + 1, options.archs.size());
  }
  return out;
}

Expected<runtime::Executable> executable_from_engine(const engine::EngineContents& e, int sm) {
  ASSIGN_OR_RETURN(const engine::CodeBlob* blob, engine::select_code(e, sm));
  runtime::Executable exe;
  const engine::Manifest& m = e.manifest;
  if (m.kernels_size() > 0) exe.images.push_back(blob->bytes);
  for (const auto& t : m.tensors())
    exe.tensors.push_back({t.name(), to_runtime(t.location()), static_cast<int64_t>(t.offset()),
                           static_cast<int64_t>(t.bytes())});
  for (const auto& k : m.kernels()) {
    if (k.has_library_call())
      return unsupported("kernel '{}' is a library call; this runtime has none yet", k.name());
    runtime::Launch l;
    l.entry = k.module_entry();
    l.module = l.entry.empty() ? -1 : 0;
    for (int d = 0; d < 3 && d < k.grid_size(); ++d) l.grid[static_cast<size_t>(d)] = k.grid(d);
    for (int d = 0; d < 3 && d < k.block_size(); ++d) l.block[static_cast<size_t>(d)] = k.block(d);
    l.shared_bytes = k.shared_mem_bytes();
    l.args.assign(k.args().begin(), k.args().end());
    exe.launches.push_back(std::move(l));
  }
  exe.arena_bytes = static_cast<int64_t>(m.arena_bytes());
  exe.weights = e.weights;
  for (const auto& b : m.inputs()) exe.inputs.push_back(b.tensor());
  for (const auto& b : m.outputs()) exe.outputs.push_back(b.tensor());
  return exe;
}

Expected<int> device_sm() {
  ASSIGN_OR_RETURN(const runtime::DriverApi* api, runtime::load_driver());
  CUdevice dev;
  GRAPHC_CU(*api, cuDeviceGet(&dev, 0), "cuDeviceGet");
  int major = 0, minor = 0;
  GRAPHC_CU(*api, cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
            "compute capability");
  GRAPHC_CU(*api, cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
            "compute capability");
  return major * 10 + minor;
}

}  // namespace graphc::driver
