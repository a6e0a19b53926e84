#include "runtime/engine_loader.h"

#include "engine_format/shape_range.h"
#include "runtime/cuda_driver.h"

namespace graphc::runtime {

namespace {

TensorSlot::Location to_runtime(engine::Tensor::Location l) {
  switch (l) {
    case engine::Tensor::WEIGHTS: return TensorSlot::Location::kWeights;
    case engine::Tensor::INPUT: return TensorSlot::Location::kInput;
    case engine::Tensor::OUTPUT: return TensorSlot::Location::kOutput;
    default: return TensorSlot::Location::kArena;
  }
}

BindingInfo describe(const engine::EngineContents& e, const engine::Binding& b, bool is_input) {
  const engine::Tensor& t = e.manifest.tensors(b.tensor());  // index validated by the reader
  BindingInfo info;
  info.name = b.name();
  info.is_input = is_input;
  info.dtype = t.dtype();
  info.shape.assign(t.shape().begin(), t.shape().end());
  info.bytes = static_cast<int64_t>(t.bytes());
  return info;
}
}  // namespace

std::vector<BindingInfo> engine_bindings(const engine::EngineContents& contents) {
  std::vector<BindingInfo> out;
  for (const auto& b : contents.manifest.inputs()) out.push_back(describe(contents, b, true));
  for (const auto& b : contents.manifest.outputs()) out.push_back(describe(contents, b, false));
  return out;
}

Expected<int> device_compute_capability(int device) {
  ASSIGN_OR_RETURN(const DriverApi* api, load_driver());
  int count = 0;
  GRAPHC_CU(*api, cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (device < 0 || device >= count)
    return invalid_argument("CUDA device {} does not exist ({} device(s))", device, count);
  CUdevice dev;
  GRAPHC_CU(*api, cuDeviceGet(&dev, device), "cuDeviceGet");
  int major = 0, minor = 0;
  GRAPHC_CU(*api, cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
            "compute capability");
  GRAPHC_CU(*api, cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
            "compute capability");
  return major * 10 + minor;
}

Expected<Executable> executable_for_device(const engine::EngineContents& contents, int device) {
  ASSIGN_OR_RETURN(int sm, device_compute_capability(device));
  return executable_from_engine(contents, sm);
}

Expected<std::shared_ptr<Engine>> load_engine(const engine::EngineContents& contents,
                                              const EngineOptions& options) {
  ASSIGN_OR_RETURN(Executable exe, executable_for_device(contents, options.device));
  return Engine::create(exe, options);
}

Expected<std::shared_ptr<Engine>> load_engine_file(const std::string& path,
                                                   const EngineOptions& options) {
  // The manifest and code are read; the weights stay in the file until they
  // are streamed to the device.
  ASSIGN_OR_RETURN(std::unique_ptr<engine::EngineFile> file, engine::EngineFile::open(path));
  auto loaded = load_engine(std::move(file), options);
  if (!loaded.ok()) return loaded.status().with_context(path);
  return loaded;
}

Expected<std::shared_ptr<Engine>> load_engine(std::shared_ptr<const engine::EngineFile> file,
                                              const EngineOptions& options) {
  auto exe = executable_for_device(file->contents(), options.device);
  if (!exe.ok()) {
    // No usable device: a corrupted file is still reported as such, so the
    // weights are checked (streamed, not kept) before the device's error.
    RETURN_IF_ERROR(file->for_each_weights_chunk(
        engine::kWeightsChunk, [](uint64_t, std::string_view) { return Status::ok_status(); }));
    return exe.status();
  }
  exe->weights_file = std::move(file);
  return Engine::create(*exe, options);
}

Expected<Executable> executable_from_engine(const engine::EngineContents& e, int sm) {
  ASSIGN_OR_RETURN(Executable exe, executable_layout(e));
  const int32_t modules = engine::module_count(e.manifest);
  for (int32_t i = 0; i < modules; ++i) {
    ASSIGN_OR_RETURN(const engine::CodeBlob* blob, engine::select_code(e, sm, i));
    exe.images.push_back(blob->bytes);
  }
  return exe;
}

Expected<Executable> executable_layout(const engine::EngineContents& e) {
  Executable exe;
  const engine::Manifest& m = e.manifest;
  const int32_t modules = engine::module_count(m);
  for (const auto& t : m.tensors())
    exe.tensors.push_back({t.name(), to_runtime(t.location()), static_cast<int64_t>(t.offset()),
                           static_cast<int64_t>(t.bytes())});
  for (const auto& k : m.kernels()) {
    Launch l;
    l.args.assign(k.args().begin(), k.args().end());
    l.name = k.name();
    l.onnx_nodes.assign(k.onnx_nodes().begin(), k.onnx_nodes().end());
    l.flops = k.flops();
    l.hbm_bytes = k.hbm_bytes();
    l.math = k.math();
    if (k.has_library_call())
      l.kind = k.library_call().library() + " " + k.library_call().op();
    else if (k.copy())
      l.kind = "copy";
    else
      l.kind = k.kind().empty() ? std::string("generated") : "generated " + k.kind();
    if (k.has_library_call()) {
      const engine::LibraryCall& call = k.library_call();
      auto in_kernel = [&](const Status& st) {
        return st.with_context(fmt::format("kernel '{}'", k.name()));
      };
      std::optional<engine::CublasLtAlgorithm> recorded;
      if (!call.algorithm_config().empty()) {
        auto decoded = engine::decode_cublaslt_algorithm(call.algorithm_config());
        if (!decoded.ok()) return in_kernel(decoded.status());
        recorded = *decoded;
      }
      if (call.library() == "cublasLt" && call.op() == "matmul") {
        auto params = engine::decode_matmul_params(call.params());
        if (!params.ok()) return in_kernel(params.status());
        MatmulLaunch mm{*params, recorded, call.algorithm(), call.workspace_bytes()};
        if (call.sizes_size() > 0) mm.m_size = call.sizes(0);  // validated with the shape range
        l.op = std::move(mm);
      } else if (call.library() == "cudnn" && call.op() == "conv") {
        auto params = engine::decode_conv_params(call.params());
        if (!params.ok()) return in_kernel(params.status());
        ConvLaunch conv{*params, call.workspace_bytes()};
        conv.sizes.assign(call.sizes().begin(), call.sizes().end());  // validated with the range
        l.op = std::move(conv);
      } else if (call.library() == "cudnn" && call.op() == "sdpa") {
        auto params = engine::decode_sdpa_params(call.params());
        if (!params.ok()) return in_kernel(params.status());
        l.op = SdpaLaunch{*params, call.workspace_bytes()};
      } else {
        return unsupported("kernel '{}' calls {} {}, which this runtime cannot run", k.name(),
                           call.library(), call.op());
      }
      exe.launches.push_back(std::move(l));
      continue;
    }
    if (k.copy()) {  // entry "" and module -1: a device-to-device copy
      l.op = CopyLaunch{};
      exe.launches.push_back(std::move(l));
      continue;
    }
    if (k.module() < 0 || k.module() >= modules)
      return invalid_engine("kernel '{}': module {} of {}", k.name(), k.module(), modules);
    KernelLaunch kl;
    kl.entry = k.module_entry();
    kl.module = k.module();
    for (int d = 0; d < 3 && d < k.grid_size(); ++d) kl.grid[static_cast<size_t>(d)] = k.grid(d);
    for (int d = 0; d < 3 && d < k.block_size(); ++d) kl.block[static_cast<size_t>(d)] = k.block(d);
    kl.shared_bytes = k.shared_mem_bytes();
    kl.params = k.params();
    kl.size_block.assign(k.size_block().begin(), k.size_block().end());
    for (int d = 0; d < 3 && d < k.grid_sizes_size(); ++d)
      kl.grid_sizes[static_cast<size_t>(d)] = k.grid_sizes(d);
    if (k.has_preferred_call()) {  // validated: cudnn sdpa with its run-time fields
      auto params = engine::decode_sdpa_params(k.preferred_call().params());
      if (!params.ok()) return params.status().with_context(fmt::format("kernel '{}'", k.name()));
      kl.preferred_sdpa = KernelLaunch::PreferredSdpa{
          *params, k.preferred_call().workspace_bytes(),
          {k.preferred_call().sizes().begin(), k.preferred_call().sizes().end()}};
    }
    if (k.has_loop()) kl.loop_body = static_cast<int32_t>(k.loop().body_kernels());
    l.op = std::move(kl);
    exe.launches.push_back(std::move(l));
  }
  exe.arena_bytes = static_cast<int64_t>(m.arena_bytes());
  exe.weights = e.weights;
  if (m.has_refit()) exe.refit_manifest = std::make_shared<const engine::Manifest>(m);
  for (const auto& b : m.inputs()) exe.inputs.push_back(b.tensor());
  for (const auto& b : m.outputs()) exe.outputs.push_back(b.tensor());
  // Bindings are described by name, dtype and shape (BindingInfo).
  for (size_t i = 0; i < exe.tensors.size(); ++i) {
    const engine::Tensor& t = m.tensors(static_cast<int>(i));
    exe.tensors[i].dtype = t.dtype();
    exe.tensors[i].shape.assign(t.shape().begin(), t.shape().end());
    exe.tensors[i].dim_sizes.assign(t.dim_sizes().begin(), t.dim_sizes().end());
  }
  if (m.has_shape_range()) {
    const engine::ShapeRange& r = m.shape_range();
    ShapeRanges ranges;
    ranges.symbols.assign(r.symbols().begin(), r.symbols().end());
    ranges.sizes = engine::size_programs(r);
    for (const auto& p : r.profiles()) {
      std::vector<ShapeRanges::InputRange> inputs;
      for (const auto& in : p.inputs())
        inputs.push_back({{in.min().begin(), in.min().end()},
                          {in.opt().begin(), in.opt().end()},
                          {in.max().begin(), in.max().end()}});
      ranges.profiles.push_back(std::move(inputs));
    }
    exe.shape_ranges = std::move(ranges);
  }
  for (const auto& b : m.inputs()) exe.input_names.push_back(b.name());
  for (const auto& b : m.outputs()) exe.output_names.push_back(b.name());
  return exe;
}

}  // namespace graphc::runtime
