// Engine: validating an Executable, loading its modules and weights on a device.
#include <algorithm>
#include <chrono>
#include <climits>
#include <future>
#include <optional>

#include "engine_format/engine_file.h"
#include "runtime/engine_impl.h"
#include "runtime/shape_state.h"
#include "runtime/weights_upload.h"

namespace graphc::runtime {

namespace {

using Location = TensorSlot::Location;

// Everything an Executable refers to is checked before the driver is loaded:
// the engine reader validated files already, a hand-built Executable is
// checked here, and a bad one is an error on a machine without a GPU too.
Status validate(const Executable& exe) {
  const size_t n = exe.tensors.size();
  for (const TensorSlot& t : exe.tensors) {
    const int64_t limit = t.location == Location::kArena ? exe.arena_bytes
                          : t.location == Location::kWeights
                              ? static_cast<int64_t>(exe.weights_size())
                              : INT64_MAX;
    if (t.bytes < 0 || t.offset < 0 || t.offset > limit || t.bytes > limit - t.offset)
      return invalid_argument("tensor '{}' ({} bytes at {}) lies outside its buffer", t.name,
                              t.bytes, t.offset);
  }
  for (const auto* list : {&exe.inputs, &exe.outputs})
    for (int32_t s : *list)
      if (s < 0 || static_cast<size_t>(s) >= n)
        return invalid_argument("binding refers to tensor slot {} of {}", s, n);
  if (!exe.input_names.empty() && exe.input_names.size() != exe.inputs.size())
    return invalid_argument("{} input names for {} inputs", exe.input_names.size(),
                            exe.inputs.size());
  if (!exe.output_names.empty() && exe.output_names.size() != exe.outputs.size())
    return invalid_argument("{} output names for {} outputs", exe.output_names.size(),
                            exe.outputs.size());
  for (const Launch& l : exe.launches) {
    for (int32_t s : l.args)
      if (s < 0 || static_cast<size_t>(s) >= n)
        return invalid_argument("launch '{}' reads tensor slot {} of {}", l.label(), s, n);
    if (const MatmulLaunch* mm = l.matmul()) {
      const engine::MatmulParams& p = mm->params;
      if (l.args.size() != static_cast<size_t>(p.num_args()))
        return invalid_argument("matmul launch takes {} slots, got {}", p.num_args(),
                                l.args.size());
      // A run-time M: one matrix, A not transposed (the M rows of A, C and D
      // fit at every shape: the shape range's validation and ShapeState).
      if (mm->m_size >= 0 && (!exe.shape_ranges || p.batch != 1 || p.trans_a ||
                              static_cast<size_t>(mm->m_size) >= exe.shape_ranges->sizes.size()))
        return invalid_argument("matmul launch '{}': a run-time M needs a shape range, one matrix "
                                "and A not transposed",
                                l.label());
      // Bytes per element: float32 and int32 4, int8 and float8 1, fp16/bf16 2.
      auto elem_of = [](int32_t t) -> int64_t {
        return t == 1 || t == 6 ? 4 : t == 3 || t == 17 ? 1 : 2;
      };
      const std::pair<int, int64_t> needs[] = {{0, p.a_extent()},
                                               {1, p.b_extent()},
                                               {p.c_arg(), p.c_extent()},
                                               {p.bias_arg(), p.n},
                                               {p.d_arg(), p.d_extent()}};
      for (auto [arg, elements] : needs) {
        if (arg < 0) continue;
        const TensorSlot& t = exe.tensors[static_cast<size_t>(l.args[static_cast<size_t>(arg)])];
        const int64_t elem = elem_of(arg <= 1           ? p.dtype
                                     : arg == p.d_arg() ? p.d_dtype()
                                                        : p.c_dtype());
        if (elements < 0 || elements > t.bytes / elem)
          return invalid_argument("matmul operand '{}' ({} bytes) is smaller than {} elements",
                                  t.name, t.bytes, elements);
      }
      continue;
    }
    if (const ConvLaunch* conv = l.conv()) {
      const engine::ConvParams& p = conv->params;
      if (l.args.size() != static_cast<size_t>(p.num_args()))
        return invalid_argument("conv launch takes {} slots, got {}", p.num_args(), l.args.size());
      // Run-time sizes (a shape range): the operands at each shape are
      // checked when it runs (conv_shapes.h); here at the built shape.
      if (!conv->sizes.empty() && !exe.shape_ranges)
        return invalid_argument("conv launch '{}' has run-time sizes but the engine no shape range",
                                l.label());
      const int64_t elem = p.dtype == 1 ? 4 : 2;
      const std::pair<int, int64_t> needs[] = {{0, p.x_elements()},
                                               {1, p.w_elements()},
                                               {p.bias_arg(), p.k},
                                               {p.residual_arg(), p.y_elements()},
                                               {p.y_arg(), p.y_elements()}};
      for (auto [arg, elements] : needs) {
        if (arg < 0) continue;
        const TensorSlot& t = exe.tensors[static_cast<size_t>(l.args[static_cast<size_t>(arg)])];
        if (elements < 0 || elements > t.bytes / elem)
          return invalid_argument("conv operand '{}' ({} bytes) is smaller than {} elements",
                                  t.name, t.bytes, elements);
      }
      continue;
    }
    if (const SdpaLaunch* attn = l.sdpa()) {
      const engine::SdpaParams& p = attn->params;
      if (l.args.size() != static_cast<size_t>(p.num_args()))
        return invalid_argument("attention launch takes {} slots, got {}", p.num_args(),
                                l.args.size());
      for (const engine::SdpaOperand& o : engine::sdpa_operands(p)) {
        const TensorSlot& t = exe.tensors[static_cast<size_t>(l.args[static_cast<size_t>(o.arg)])];
        const int64_t elem = o.dtype == 6 ? 4 : 2;
        if (o.elements < 0 || o.elements > t.bytes / elem)
          return invalid_argument(
              "attention operand {} '{}' ({} bytes) is smaller than {} elements", o.role, t.name,
              t.bytes, o.elements);
      }
      continue;
    }
    if (l.is_copy()) {
      if (l.args.size() != 2)
        return invalid_argument("a copy launch needs 2 slots, got {}", l.args.size());
      const TensorSlot& src = exe.tensors[static_cast<size_t>(l.args[0])];
      const TensorSlot& dst = exe.tensors[static_cast<size_t>(l.args[1])];
      if (src.bytes < dst.bytes)
        return invalid_argument("copy from '{}' ({} bytes) to '{}' ({} bytes) reads too far",
                                src.name, src.bytes, dst.name, dst.bytes);
      continue;
    }
    const KernelLaunch& k = *l.kernel();
    if (k.entry.empty()) return invalid_argument("launch '{}' has no kernel entry", l.label());
    if (k.module < 0 || static_cast<size_t>(k.module) >= exe.images.size())
      return invalid_argument("launch '{}' names module {} of {}", k.entry, k.module,
                              exe.images.size());
    for (size_t d = 0; d < 3; ++d)
      if (k.grid[d] == 0 || k.block[d] == 0)
        return invalid_argument("launch '{}' has an empty grid or block", k.entry);
    // CUDA takes at most 4 KiB of kernel parameters, the pointers included.
    if (k.params.size() + 8 * l.args.size() > 4096)
      return invalid_argument("launch '{}' has {} bytes of parameters and {} pointers (> 4 KiB)",
                              k.entry, k.params.size(), l.args.size());
    // A preferred cuDNN SDPA runs on the kernel's arguments (its sizes per
    // shape: validate_shape_ranges; each operand's reach at a shape is checked
    // before its plan is used: EngineSdpas::setup_at).
    if (k.preferred_sdpa && l.args.size() != static_cast<size_t>(k.preferred_sdpa->params.num_args()))
      return invalid_argument("launch '{}': its preferred attention takes {} slots, it has {}",
                              k.entry, k.preferred_sdpa->params.num_args(), l.args.size());
  }
  for (const std::string& img : exe.images)
    if (img.empty()) return invalid_argument("the engine has an empty code module for this device");
  return validate_shape_ranges(exe);
}

// Binding descriptions and which slot address each binding provides.
Status plan_bindings(const Executable& exe, Engine::Impl& m) {
  m.slot_binding.assign(exe.tensors.size(), -1);
  auto describe = [&](int32_t slot, const std::vector<std::string>& names, size_t i,
                      bool is_input) {
    const TensorSlot& t = exe.tensors[static_cast<size_t>(slot)];
    BindingInfo b;
    b.name = names.empty() ? t.name : names[i];
    b.is_input = is_input;
    b.dtype = t.dtype;
    b.shape = t.shape;
    b.bytes = t.bytes;
    m.bindings.push_back(std::move(b));
    m.binding_slot.push_back(slot);
  };
  for (size_t i = 0; i < exe.inputs.size(); ++i) {
    const int32_t s = exe.inputs[i];
    const TensorSlot& t = exe.tensors[static_cast<size_t>(s)];
    if (t.location != Location::kInput)
      return invalid_argument("input binding {} refers to tensor '{}', which is not an input", i,
                              t.name);
    if (m.slot_binding[static_cast<size_t>(s)] >= 0)
      return invalid_argument("two input bindings refer to tensor '{}'", t.name);
    m.slot_binding[static_cast<size_t>(s)] = static_cast<int>(m.bindings.size());
    describe(s, exe.input_names, i, true);
  }
  m.num_inputs = static_cast<int>(m.bindings.size());
  for (size_t i = 0; i < exe.outputs.size(); ++i) {
    const int32_t s = exe.outputs[i];
    const auto b = static_cast<int>(m.bindings.size());
    if (exe.tensors[static_cast<size_t>(s)].location == Location::kOutput &&
        m.slot_binding[static_cast<size_t>(s)] < 0)
      m.slot_binding[static_cast<size_t>(s)] = b;  // kernels write it in place
    else
      m.output_copies.emplace_back(s, b);
    describe(s, exe.output_names, i, false);
  }
  for (size_t s = 0; s < exe.tensors.size(); ++s) {
    const Location loc = exe.tensors[s].location;
    if ((loc == Location::kInput || loc == Location::kOutput) && m.slot_binding[s] < 0)
      return invalid_argument("tensor '{}' is an engine input/output but no binding names it",
                              exe.tensors[s].name);
  }
  return Status::ok_status();
}

// Streams the weights from the engine file to the device, checksumming them
// as they pass: a corrupted section is an error before anything runs.
Status upload_weights_from_file(const DriverApi& a, const engine::EngineFile& file,
                                const EngineOptions& options, Engine::Impl& impl,
                                PageCacheWarmer* warmer, UploadWaits& waits) {
  const uint64_t bytes = file.weights_bytes();
  RETURN_IF_ERROR(
      device_alloc(a, &impl.weights, static_cast<size_t>(bytes), "allocating the weights"));
  uint32_t crc = 0;
  RETURN_IF_ERROR(upload_streamed(
      a, impl.weights, bytes,
      [&](uint64_t offset, char* dst, size_t n) -> Status {
        if (warmer) warmer->advance(offset);
        RETURN_IF_ERROR(file.read_weights(offset, dst, n));
        crc = engine::crc32_update(crc, std::string_view(dst, n));
        return Status::ok_status();
      },
      options.upload_chunk_bytes, &waits));
  return file.check_weights_crc(crc);
}

}  // namespace

uint64_t Executable::weights_size() const {
  return weights_file ? weights_file->weights_bytes() : weights.size();
}

Engine::Impl::~Impl() {
  if (!api || !context) return;
  api->cuCtxSetCurrent(context);
  matmuls.reset();
  convs.reset();
  sdpas.reset();
  for (CUmodule mod : modules)
    if (mod) api->cuModuleUnload(mod);
  if (weights) api->cuMemFree(weights);
  api->cuDevicePrimaryCtxRelease(device);
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

Expected<std::shared_ptr<Engine>> Engine::create(const Executable& exe,
                                                 const EngineOptions& options) {
  RETURN_IF_ERROR(validate(exe));
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto ms_at = [start](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(t - start).count();
  };
  auto impl = std::make_unique<Impl>();
  LoadTimeline& timeline = impl->load_timeline;
  const auto step_done = [&timeline, &ms_at](const char* name) {
    timeline.steps.emplace_back(name, ms_at(Clock::now()));
  };
  RETURN_IF_ERROR(plan_bindings(exe, *impl));
  // The disk starts on the weights before CUDA does (starting the driver and
  // the context takes a few hundred ms, as long as reading a GB); measured on
  // the H100 machine, a cold engine otherwise loads at ~60% of disk speed.
  std::optional<PageCacheWarmer> warmer;
  if (exe.weights_file && exe.weights_size() > 0 && options.read_ahead_bytes > 0) {
    const engine::EngineFile& file = *exe.weights_file;
    warmer.emplace(file.weights_bytes(), options.read_ahead_bytes,
                   [&file](uint64_t offset, char* dst, size_t n) {
                     return file.read_weights(offset, dst, n);
                   });
  }
  ASSIGN_OR_RETURN(const DriverApi* api, load_driver());
  RETURN_IF_ERROR(device_usable());
  step_done("driver");
  const DriverApi& a = *api;
  int count = 0;
  GRAPHC_CU(a, cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (options.device < 0 || options.device >= count)
    return invalid_argument("CUDA device {} does not exist ({} device(s))", options.device, count);
  impl->ordinal = options.device;
  GRAPHC_CU(a, cuDeviceGet(&impl->device, options.device), "cuDeviceGet");
  impl->api = api;  // from here on ~Impl releases what was acquired
  GRAPHC_CU(a, cuDevicePrimaryCtxRetain(&impl->context, impl->device),
            "retaining the primary context");
  GRAPHC_CU(a, cuCtxSetCurrent(impl->context), "cuCtxSetCurrent");
  step_done("context");
  char name[256] = {};
  int major = 0, minor = 0;
  GRAPHC_CU(a, cuDeviceGetName(name, sizeof name - 1, impl->device), "cuDeviceGetName");
  GRAPHC_CU(
      a, cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, impl->device),
      "compute capability");
  GRAPHC_CU(
      a, cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, impl->device),
      "compute capability");
  impl->device_name = fmt::format("{} (sm_{}{})", name, major, minor);
  for (const std::string& img : exe.images) {
    std::string image = img;
    image.push_back('\0');  // PTX is text: the loader reads up to the NUL
    CUmodule mod = nullptr;
    GRAPHC_CU(a, cuModuleLoadDataEx(&mod, image.data(), 0, nullptr, nullptr),
              "loading a kernel module");
    impl->modules.push_back(mod);
  }
  for (const Launch& l : exe.launches) {
    CUfunction fn = nullptr;
    if (const KernelLaunch* k = l.kernel()) {
      GRAPHC_CU(
          a,
          cuModuleGetFunction(&fn, impl->modules[static_cast<size_t>(k->module)], k->entry.c_str()),
          ("finding kernel " + k->entry).c_str());
      // Over 48 KiB of dynamic shared memory must be opted into per function.
      if (k->shared_bytes > 48 * 1024)
        GRAPHC_CU(a,
                  cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     static_cast<int>(k->shared_bytes)),
                  ("allowing dynamic shared memory for " + k->entry).c_str());
    }
    impl->functions.push_back(fn);
  }
  step_done("modules");
  // The libraries' set-up (loading cuBLASLt/cuDNN, handles, each call's
  // algorithm) is host work that runs while the weights stream to the device.
  Impl& m = *impl;
  Clock::time_point libraries_done{};
  std::future<Status> libraries =
      std::async(std::launch::async, [&a, &m, &exe, &libraries_done]() -> Status {
        GRAPHC_CU(a, cuCtxSetCurrent(m.context), "cuCtxSetCurrent");
        ASSIGN_OR_RETURN(m.matmuls, EngineMatmuls::create(exe.launches));
        ASSIGN_OR_RETURN(m.convs, EngineConvs::create(exe.launches, &exe));
        // The attention planning thread works in the engine's context.
        ASSIGN_OR_RETURN(m.sdpas,
                         EngineSdpas::create(exe, [api = &a, context = m.context]() -> Status {
                           GRAPHC_CU(*api, cuCtxSetCurrent(context), "cuCtxSetCurrent");
                           return Status::ok_status();
                         }));
        libraries_done = Clock::now();
        return Status::ok_status();
      });
  if (exe.weights_file && exe.weights_size() > 0) {
    UploadWaits waits;
    Status uploaded = upload_weights_from_file(a, *exe.weights_file, options, *impl,
                                               warmer ? &*warmer : nullptr, waits);
    step_done("weights uploaded");
    timeline.upload_read_ms = waits.read_ms;
    timeline.upload_copy_wait_ms = waits.copy_ms;
    if (warmer)
      if (auto read_at = warmer->finished_at())
        timeline.steps.emplace_back("weights read", ms_at(*read_at));
    Status set_up = libraries.get();
    RETURN_IF_ERROR(uploaded);
    RETURN_IF_ERROR(set_up);
  } else if (!exe.weights.empty()) {
    RETURN_IF_ERROR(device_alloc(a, &impl->weights, exe.weights.size(), "allocating the weights"));
    GRAPHC_CU(a, cuMemcpyHtoD(impl->weights, exe.weights.data(), exe.weights.size()),
              "uploading the weights");
    // From pageable memory cuMemcpyHtoD returns once the bytes are staged, with
    // the DMA still in flight on the legacy stream, which the contexts'
    // non-blocking streams do not wait for: under load the first run read
    // half-uploaded weights (mlp all zeros, transformer_block wrong; 5 of 277
    // runs on the H100 with other GPU processes busy). Wait for it here, once.
    GRAPHC_CU(a, cuCtxSynchronize(), "finishing the weights upload");
  }
  if (libraries.valid()) RETURN_IF_ERROR(libraries.get());
  timeline.steps.emplace_back("libraries", ms_at(libraries_done));
  std::stable_sort(timeline.steps.begin(), timeline.steps.end(),
                   [](const auto& x, const auto& y) { return x.second < y.second; });
  impl->weights_bytes = static_cast<int64_t>(exe.weights_size());
  // What running needs; code and weights are on the device now.
  Executable& kept = impl->exe;
  kept.tensors = exe.tensors;
  kept.launches = exe.launches;
  kept.arena_bytes = exe.arena_bytes;
  kept.inputs = exe.inputs;
  kept.outputs = exe.outputs;
  kept.shape_ranges = exe.shape_ranges;
  kept.refit_manifest = exe.refit_manifest;
  return std::shared_ptr<Engine>(new Engine(std::move(impl)));
}

const std::vector<BindingInfo>& Engine::bindings() const { return impl_->bindings; }
int Engine::num_inputs() const { return impl_->num_inputs; }

bool Engine::has_shape_ranges() const { return impl_->exe.shape_ranges.has_value(); }

int Engine::num_profiles() const {
  return has_shape_ranges() ? static_cast<int>(impl_->exe.shape_ranges->profiles.size()) : 1;
}

Expected<ShapeRanges::InputRange> Engine::input_range(std::string_view name, int profile) const {
  auto index = binding_index(name);
  if (!index || *index >= impl_->num_inputs) return not_found("the engine has no input '{}'", name);
  if (profile < 0 || profile >= num_profiles())
    return invalid_argument("shape profile {} does not exist (the engine has {})", profile,
                            num_profiles());
  if (!has_shape_ranges()) {
    const auto& shape = impl_->bindings[static_cast<size_t>(*index)].shape;
    return ShapeRanges::InputRange{shape, shape, shape};
  }
  return impl_->exe.shape_ranges->profiles[static_cast<size_t>(profile)][static_cast<size_t>(*index)];
}
int Engine::num_outputs() const {
  return static_cast<int>(impl_->bindings.size()) - impl_->num_inputs;
}
std::optional<int> Engine::binding_index(std::string_view name) const {
  // Inputs first: an ONNX output that is also an input has the input's name.
  for (size_t i = 0; i < impl_->bindings.size(); ++i)
    if (impl_->bindings[i].name == name) return static_cast<int>(i);
  return std::nullopt;
}
int Engine::device() const { return impl_->ordinal; }
const std::string& Engine::device_name() const { return impl_->device_name; }
int64_t Engine::weights_bytes() const { return impl_->weights_bytes; }
int64_t Engine::arena_bytes() const { return impl_->exe.arena_bytes; }
const LoadTimeline& Engine::load_timeline() const { return impl_->load_timeline; }
int64_t Engine::io_bytes() const {
  int64_t total = 0;
  for (const auto& b : impl_->bindings) total += std::max<int64_t>(b.bytes, 1);
  return total;
}

}  // namespace graphc::runtime
