#include "driver/engine_load.h"

#include "driver/engine_build.h"
#include "runtime/cuda_driver.h"

namespace graphc::driver {

namespace {
runtime::BindingInfo describe(const engine::EngineContents& e, const engine::Binding& b,
                              bool is_input) {
  const engine::Tensor& t = e.manifest.tensors(b.tensor());  // index validated by the reader
  runtime::BindingInfo info;
  info.name = b.name();
  info.is_input = is_input;
  info.dtype = t.dtype();
  info.shape.assign(t.shape().begin(), t.shape().end());
  info.bytes = static_cast<int64_t>(t.bytes());
  return info;
}
}  // namespace

std::vector<runtime::BindingInfo> engine_bindings(const engine::EngineContents& contents) {
  std::vector<runtime::BindingInfo> out;
  for (const auto& b : contents.manifest.inputs()) out.push_back(describe(contents, b, true));
  for (const auto& b : contents.manifest.outputs()) out.push_back(describe(contents, b, false));
  return out;
}

Expected<int> device_compute_capability(int device) {
  ASSIGN_OR_RETURN(const runtime::DriverApi* api, runtime::load_driver());
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

Expected<runtime::Executable> executable_for_device(const engine::EngineContents& contents,
                                                    int device) {
  ASSIGN_OR_RETURN(int sm, device_compute_capability(device));
  ASSIGN_OR_RETURN(runtime::Executable exe, executable_from_engine(contents, sm));
  const auto& tensors = contents.manifest.tensors();
  for (size_t i = 0; i < exe.tensors.size() && i < static_cast<size_t>(tensors.size()); ++i) {
    const engine::Tensor& t = tensors[static_cast<int>(i)];
    exe.tensors[i].dtype = t.dtype();
    exe.tensors[i].shape.assign(t.shape().begin(), t.shape().end());
  }
  exe.input_names.clear();
  exe.output_names.clear();
  for (const auto& b : contents.manifest.inputs()) exe.input_names.push_back(b.name());
  for (const auto& b : contents.manifest.outputs()) exe.output_names.push_back(b.name());
  return exe;
}

Expected<std::shared_ptr<runtime::Engine>> load_engine(const engine::EngineContents& contents,
                                                       const runtime::EngineOptions& options) {
  ASSIGN_OR_RETURN(runtime::Executable exe, executable_for_device(contents, options.device));
  return runtime::Engine::create(exe, options);
}

Expected<std::shared_ptr<runtime::Engine>> load_engine_file(const std::string& path,
                                                            const runtime::EngineOptions& options) {
  ASSIGN_OR_RETURN(engine::EngineContents contents, engine::read_engine_file(path));
  auto loaded = load_engine(contents, options);
  if (!loaded.ok()) return loaded.status().with_context(path);
  return loaded;
}

}  // namespace graphc::driver
