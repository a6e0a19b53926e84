#include "python/src/core/graphc_py.h"

#include <chrono>
#include <initializer_list>
#include <string_view>

#include "cmd/build_pipeline.h"
#include "cmd/inspect_model.h"
#include "engine_format/engine_file.h"
#include "runtime/cuda_driver.h"
#include "runtime/engine.h"
#include "runtime/engine_loader.h"

namespace graphc::py {

namespace {

std::string code_name(const Status& st) {
  switch (st.code()) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kInvalidModel: return "invalid_model";
    case ErrorCode::kUnsupported:
      // As the C API: a missing driver or GPU is its own kind of failure.
      return st.message().starts_with("no CUDA") ? "no_device" : "unsupported";
    case ErrorCode::kInvalidEngine: return "invalid_engine";
    case ErrorCode::kIo: return "io";
    case ErrorCode::kOutOfRange: return "out_of_range";
    case ErrorCode::kDevice: return "device";
    case ErrorCode::kInternal: return "internal";
  }
  return "internal";
}

[[noreturn]] void raise(const Status& st) { throw Error(code_name(st), st.message()); }

void check(const Status& st) {
  if (!st.ok()) raise(st);
}

template <typename T>
T take(Expected<T> e) {
  if (!e.ok()) raise(e.status());
  return std::move(*e);
}

// The CLI checks these choices while parsing flags (CLI11's IsMember); here
// they come as plain strings, so they are checked the same way.
void check_choice(const char* what, const std::string& value,
                  std::initializer_list<std::string_view> choices) {
  std::string list;
  for (auto c : choices) {
    if (value == c) return;
    list += (list.empty() ? "" : ", ") + std::string(c);
  }
  throw Error("invalid_argument", std::string(what) + ": '" + value + "' is not one of " + list);
}

void apply(const CompileFlags& in, cli::ShapeFlags& shapes, cli::OptimizerFlags& opt,
           cli::LoweringFlags& lowering) {
  check_choice("precision", in.precision, {"fp32", "fp16", "bf16"});
  check_choice("gemm", in.gemm, {"auto", "cublaslt", "generated"});
  check_choice("conv", in.conv, {"auto", "cudnn", "generated"});
  check_choice("attention", in.attention, {"auto", "cudnn", "generated"});
  shapes.shapes = in.shapes;
  shapes.min = in.min_shapes;
  shapes.opt = in.opt_shapes;
  shapes.max = in.max_shapes;
  shapes.profiles = in.profiles;
  opt.precision = in.precision;
  opt.convert_io = in.convert_io;
  opt.disable_pass = in.disable_passes;
  opt.no_optimize = in.no_optimize;
  lowering.gemm = in.gemm;
  lowering.conv = in.conv;
  lowering.attention = in.attention;
  lowering.allow_tf32 = in.allow_tf32;
}

std::string source_name(const ModelSource& m) { return m.bytes.empty() ? m.path : m.display_name; }

Binding to_binding(const runtime::BindingInfo& b) {
  return Binding{b.name, b.is_input, b.dtype, b.shape, b.bytes};
}

engine::EngineContents read_engine(const ModelSource& source) {
  if (source.bytes.empty()) return take(engine::read_engine_file(source.path));
  auto contents = engine::parse_engine(source.bytes);
  if (!contents.ok()) raise(contents.status().with_context(source.display_name));
  return std::move(*contents);
}

}  // namespace

std::string build(const BuildRequest& r) {
  cli::BuildFlags f;
  f.model = source_name(r.model);
  f.model_bytes = r.model.bytes;
  f.output = r.output;
  f.archs = r.archs;
  apply(r.flags, f.shapes, f.opt, f.lowering);
  f.tune = r.tune;
  f.timing_cache = r.timing_cache;
  f.no_cache = !r.nvrtc_cache;
  f.jobs = r.jobs;
  auto built = take(cli::build_engine_from_flags(f, cli::BuildHooks{}));
  std::string bytes;
  if (r.output.empty())
    bytes = take(engine::serialize_engine(built.contents));
  else
    check(engine::write_engine_file(r.output, built.contents));
  bool written = false;
  check(cli::write_back_timing_cache(f, built, &written));
  return bytes;
}

std::string inspect_json(const ModelSource& model, const CompileFlags& flags) {
  cli::InspectFlags f;
  f.model = source_name(model);
  f.model_bytes = model.bytes;
  f.json = true;
  apply(flags, f.shapes, f.opt, f.lowering);
  return take(cli::inspect_json(f));
}

std::vector<Binding> engine_bindings(const ModelSource& source) {
  std::vector<Binding> out;
  for (const auto& b : runtime::engine_bindings(read_engine(source))) out.push_back(to_binding(b));
  return out;
}

struct Engine::Impl {
  std::shared_ptr<runtime::Engine> engine;
  std::vector<Binding> bindings;
};

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

std::shared_ptr<Engine> Engine::load(const ModelSource& source, int device) {
  if (device < 0) throw Error("invalid_argument", "device must be 0 or more, not " + std::to_string(device));
  // Bad files fail the same way with or without a GPU: read first.
  engine::EngineContents contents = read_engine(source);
  auto impl = std::make_unique<Impl>();
  impl->engine = take(runtime::load_engine(contents, runtime::EngineOptions{.device = device}));
  for (const auto& b : impl->engine->bindings()) impl->bindings.push_back(to_binding(b));
  return std::shared_ptr<Engine>(new Engine(std::move(impl)));
}

const std::vector<Binding>& Engine::bindings() const { return impl_->bindings; }
int Engine::device() const { return impl_->engine->device(); }
std::string Engine::device_name() const { return impl_->engine->device_name(); }
int64_t Engine::weights_bytes() const { return impl_->engine->weights_bytes(); }
int64_t Engine::arena_bytes() const { return impl_->engine->arena_bytes(); }
bool Engine::has_shape_ranges() const { return impl_->engine->has_shape_ranges(); }
int Engine::num_profiles() const { return impl_->engine->num_profiles(); }
std::vector<std::vector<int64_t>> Engine::input_range(const std::string& name, int profile) const {
  auto r = take(impl_->engine->input_range(name, profile));
  return {r.min, r.opt, r.max};
}

struct Context::Impl {
  std::shared_ptr<runtime::Engine> engine;  // outlives the context
  std::unique_ptr<runtime::ExecutionContext> ctx;
  std::vector<std::string> names;      // binding names, binding order
  std::vector<int64_t> bytes;          // binding sizes
  std::vector<uint64_t> bound;         // caller addresses bound now; 0: the context's own
};

Context::Context(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Context::~Context() {
  // The runtime's rule: destroy only after the last enqueue finished.
  if (impl_ && impl_->ctx) (void)impl_->ctx->synchronize();
}

std::unique_ptr<Context> Engine::create_context() const {
  auto impl = std::make_unique<Context::Impl>();
  impl->engine = impl_->engine;
  impl->ctx = take(impl_->engine->create_context());
  for (const auto& b : impl_->bindings) {
    impl->names.push_back(b.name);
    impl->bytes.push_back(b.bytes);
  }
  impl->bound.assign(impl_->bindings.size(), 0);
  // Shape ranges: host runs move the bytes of the shapes set (opt at first).
  if (impl_->engine->has_shape_ranges())
    for (size_t i = 0; i < impl->bytes.size(); ++i)
      impl->bytes[i] = take(impl->ctx->tensor_bytes(static_cast<int>(i)));
  return std::make_unique<Context>(std::move(impl));
}

namespace {

void bind(Context::Impl& m, const std::vector<uint64_t>& addresses) {
  if (addresses.size() != m.names.size())
    throw Error("invalid_argument", "expected " + std::to_string(m.names.size()) +
                                        " device addresses (one per binding), got " +
                                        std::to_string(addresses.size()));
  for (size_t i = 0; i < addresses.size(); ++i) {
    if (addresses[i] == 0)
      throw Error("invalid_argument", "binding '" + m.names[i] + "': a null device address");
    if (m.bound[i] == addresses[i]) continue;  // unchanged: the CUDA graph stays valid
    check(m.ctx->set_tensor_address(m.names[i], static_cast<CUdeviceptr>(addresses[i])));
    m.bound[i] = addresses[i];
  }
}

CUstream as_stream(uint64_t handle) { return reinterpret_cast<CUstream>(static_cast<uintptr_t>(handle)); }

}  // namespace

void Context::run_device(const std::vector<uint64_t>& addresses, uint64_t stream, bool synchronize) {
  Impl& m = *impl_;
  bind(m, addresses);
  check(m.ctx->enqueue(as_stream(stream)));
  if (synchronize) check(m.ctx->synchronize());
}

void Context::run_host(const std::vector<uint64_t>& addresses) {
  Impl& m = *impl_;
  if (addresses.size() != m.names.size())
    throw Error("invalid_argument", "expected " + std::to_string(m.names.size()) +
                                        " host buffers (one per binding), got " +
                                        std::to_string(addresses.size()));
  // Host runs go through the context's own device buffers.
  for (size_t i = 0; i < m.names.size(); ++i) {
    if (m.bound[i] == 0) continue;
    check(m.ctx->set_tensor_address(m.names[i], 0));
    m.bound[i] = 0;
  }
  const auto& bindings = m.engine->bindings();
  for (size_t i = 0; i < bindings.size(); ++i) {
    if (!bindings[i].is_input) continue;
    check(m.ctx->copy_input_from_host(static_cast<int>(i),
                                      reinterpret_cast<const void*>(addresses[i]),
                                      static_cast<size_t>(m.bytes[i])));
  }
  check(m.ctx->enqueue());
  for (size_t i = 0; i < bindings.size(); ++i) {
    if (bindings[i].is_input) continue;
    check(m.ctx->copy_output_to_host(static_cast<int>(i), reinterpret_cast<void*>(addresses[i]),
                                     static_cast<size_t>(m.bytes[i])));
  }
  check(m.ctx->synchronize());
}

void Context::synchronize() { check(impl_->ctx->synchronize()); }

void Context::set_profile(int profile) {
  check(impl_->ctx->set_optimization_profile(profile));
  impl_->bytes = binding_bytes();
}

void Context::set_input_shapes(const std::vector<std::vector<int64_t>>& shapes) {
  Impl& m = *impl_;
  const int inputs = m.engine->num_inputs();
  if (shapes.size() != static_cast<size_t>(inputs))
    throw Error("invalid_argument", "expected " + std::to_string(inputs) +
                                        " input shapes, got " + std::to_string(shapes.size()));
  for (int i = 0; i < inputs; ++i)
    check(m.ctx->set_input_shape(m.names[static_cast<size_t>(i)], shapes[static_cast<size_t>(i)]));
  m.bytes = binding_bytes();  // host runs copy this shape's bytes
}

std::vector<std::vector<int64_t>> Context::binding_shapes() {
  std::vector<std::vector<int64_t>> out;
  for (const auto& name : impl_->names) out.push_back(take(impl_->ctx->tensor_shape(name)));
  return out;
}

std::vector<int64_t> Context::binding_bytes() {
  std::vector<int64_t> out;
  for (size_t i = 0; i < impl_->names.size(); ++i)
    out.push_back(take(impl_->ctx->tensor_bytes(static_cast<int>(i))));
  return out;
}

uint64_t Context::stream() const {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(impl_->ctx->stream()));
}

double Context::time_enqueue_us(const std::vector<uint64_t>& addresses, uint64_t stream,
                                int iterations) {
  if (iterations < 1) throw Error("invalid_argument", "iterations must be 1 or more");
  Impl& m = *impl_;
  bind(m, addresses);
  check(m.ctx->enqueue(as_stream(stream)));  // builds the CUDA graph: not timed
  check(m.ctx->synchronize());
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) check(m.ctx->enqueue(as_stream(stream)));
  auto stop = std::chrono::steady_clock::now();
  check(m.ctx->synchronize());
  return std::chrono::duration<double, std::micro>(stop - start).count() / iterations;
}

}  // namespace graphc::py
