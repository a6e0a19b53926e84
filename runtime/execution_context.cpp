// ExecutionContext: per-thread arena, binding addresses and CUDA graph over a
// shared Engine; GpuTimer.
#include <algorithm>
#include <atomic>
#include <list>
#include <map>
#include <thread>

#include "runtime/engine_impl.h"
#include "runtime/launch_profile.h"
#include "runtime/loop_launch.h"
#include "runtime/shape_choices.h"
#include "runtime/shape_state.h"

namespace graphc::runtime {

namespace {
// Generated kernels assume cuMemAlloc's alignment (vectorised 16-byte access
// where the shapes allow), so caller pointers must keep it (as TensorRT asks).
constexpr CUdeviceptr kAddressAlignment = 256;

// The thread inside a public method of a context (see Entry), and its nesting depth.
struct ContextOwner {
  std::atomic<std::thread::id> thread{};
  int depth = 0;  // touched only by `thread`
};

// Held by every public method that touches the context's state or the
// device. An ExecutionContext belongs to one thread at a time (one context
// per thread, as TensorRT asks): a second thread entering while the first is
// inside gets an error instead of racing on the arena and the CUDA graph.
// Nested calls from the same thread (run_host -> enqueue) are fine. Also
// refuses all work once the device has reported a sticky error.
class Entry {
 public:
  explicit Entry(ContextOwner& owner);
  ~Entry();
  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;
  const Status& status() const { return status_; }

 private:
  ContextOwner& m_;
  bool held_ = false;
  Status status_ = Status::ok_status();
};
}  // namespace

#define GRAPHC_CONTEXT_ENTRY(impl) \
  Entry entry_guard((impl).owner); \
  RETURN_IF_ERROR(entry_guard.status())

struct ExecutionContext::Impl {
  const Engine::Impl* engine = nullptr;
  const DriverApi* api = nullptr;
  ContextOptions options;
  CUstream own_stream = nullptr;
  CUstream last_stream = nullptr;  // of the last enqueue, for synchronize()
  CUdeviceptr arena = 0;
  std::vector<CUdeviceptr> own_io;  // per binding; 0 where not allocated
  std::vector<CUdeviceptr> bound;   // per binding: the address in use
  std::vector<CUdeviceptr> slot_addr;
  // Kernel parameters: values per launch and pointers to them (sized once,
  // so the pointers stay valid).
  std::vector<std::vector<CUdeviceptr>> arg_values;
  std::vector<std::vector<void*>> arg_ptrs;
  CUgraphExec graph_exec = nullptr;  // the graph of the current shapes (owned by `graphs`)
  // One CUDA graph per set of shapes (the symbols' values; none for fixed
  // shapes), most recently used first in `graph_order`.
  std::map<std::vector<int64_t>, CUgraphExec> graphs;
  std::list<std::vector<int64_t>> graph_order;
  std::unique_ptr<ShapeState> shapes;
  std::vector<std::string> input_names;  // for messages
  std::unique_ptr<ContextMatmuls> matmuls;  // handle, descriptors, workspace
  std::unique_ptr<ContextConvs> convs;      // cuDNN handle, workspace
  std::unique_ptr<ContextSdpas> sdpas;      // cuDNN handle, workspace (attention)
  // Launches that prefer cuDNN attention (EngineSdpas::prefers), each one's
  // slot among them (-1 for the rest), and per set of shapes seen the set-up
  // each runs there (null: its generated kernel): a switch between known
  // shapes costs one lookup (resolve_attention).
  std::vector<size_t> preferred;
  std::vector<int> preferred_slot;
  ShapeChoices<SdpaSetup> sdpa_by_shape;
  const std::vector<const SdpaSetup*>* sdpa_now = nullptr;  // at the current shapes
  bool dirty = true;                        // addresses changed since the parameters were built
  ContextOwner owner;
  // Loops (runtime/loop_launch.h): whether the engine has one, whether the
  // launches are being captured into a CUDA graph, and a stream per nesting
  // depth to capture loop bodies from.
  bool has_loops = false;
  bool capturing = false;
  std::vector<CUstream> loop_streams;

  ~Impl() {
    if (!api) return;
    api->cuCtxSetCurrent(engine->context);
    // cuMemFree waits for the device to finish with the memory; the caller's
    // stream may already be destroyed, so only the own stream is waited on.
    if (own_stream) api->cuStreamSynchronize(own_stream);
    drop_graphs();
    for (CUstream st : loop_streams) api->cuStreamDestroy(st);
    matmuls.reset();
    convs.reset();
    sdpas.reset();
    for (CUdeviceptr p : own_io)
      if (p) api->cuMemFree(p);
    if (arena) api->cuMemFree(arena);
    if (own_stream) api->cuStreamDestroy(own_stream);
  }
  // A graph still running is freed by the driver when it completes.
  void drop_graph(const std::vector<int64_t>& key) {
    auto it = graphs.find(key);
    if (it == graphs.end()) return;
    if (graph_exec == it->second) graph_exec = nullptr;
    api->cuGraphExecDestroy(it->second);
    graphs.erase(it);
    graph_order.remove(key);
  }
  void drop_graphs() {
    for (auto& [key, exec] : graphs) api->cuGraphExecDestroy(exec);
    graphs.clear();
    graph_order.clear();
    graph_exec = nullptr;
  }
};

namespace {
Entry::Entry(ContextOwner& owner) : m_(owner) {
  const std::thread::id self = std::this_thread::get_id();
  std::thread::id expected{};
  if (m_.thread.load() == self || m_.thread.compare_exchange_strong(expected, self)) {
    held_ = true;
    ++m_.depth;
  } else {
    status_ = invalid_argument(
        "an ExecutionContext was used from two threads at once; create one context per thread "
        "(Engine::create_context) or serialise the calls");
    return;
  }
  status_ = device_usable();
}
Entry::~Entry() {
  if (held_ && --m_.depth == 0) m_.thread.store(std::thread::id{});
}
}  // namespace

Expected<std::unique_ptr<ExecutionContext>> Engine::create_context() const {
  return create_context(ContextOptions{});
}

Expected<std::unique_ptr<ExecutionContext>> Engine::create_context(
    const ContextOptions& options) const {
  const Impl& e = *impl_;
  const DriverApi& a = *e.api;
  RETURN_IF_ERROR(device_usable());
  auto m = std::make_unique<ExecutionContext::Impl>();
  m->engine = &e;
  m->options = options;
  GRAPHC_CU(a, cuCtxSetCurrent(e.context), "cuCtxSetCurrent");
  m->api = e.api;  // from here on ~Impl frees what was allocated
  GRAPHC_CU(a, cuStreamCreate(&m->own_stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  if (e.exe.arena_bytes > 0)
    RETURN_IF_ERROR(
        device_alloc(a, &m->arena, static_cast<size_t>(e.exe.arena_bytes), "allocating the arena"));
  m->own_io.assign(e.bindings.size(), 0);
  if (options.allocate_io_buffers)
    for (size_t b = 0; b < e.bindings.size(); ++b)
      RETURN_IF_ERROR(device_alloc(
          a, &m->own_io[b], static_cast<size_t>(std::max<int64_t>(e.bindings[b].bytes, 1)),
          ("allocating the buffer of '" + e.bindings[b].name + "'").c_str()));
  ASSIGN_OR_RETURN(m->matmuls, ContextMatmuls::create(*e.matmuls, a));
  ASSIGN_OR_RETURN(m->convs, ContextConvs::create(*e.convs, a));
  ASSIGN_OR_RETURN(m->sdpas, ContextSdpas::create(*e.sdpas, a));
  m->preferred_slot.assign(e.exe.launches.size(), -1);
  for (size_t i = 0; i < e.exe.launches.size(); ++i)
    if (e.sdpas->prefers(i)) {
      m->preferred_slot[i] = static_cast<int>(m->preferred.size());
      m->preferred.push_back(i);
    }
  m->bound = m->own_io;
  m->slot_addr.assign(e.exe.tensors.size(), 0);
  m->shapes = std::make_unique<ShapeState>(e.exe);
  for (int b = 0; b < e.num_inputs; ++b) m->input_names.push_back(e.bindings[static_cast<size_t>(b)].name);
  if (options.max_cached_graphs < 1)
    return invalid_argument("max_cached_graphs is {}; at least 1", options.max_cached_graphs);
  for (const Launch& l : e.exe.launches) {
    m->arg_values.emplace_back(l.args.size(), 0);
    m->has_loops |= l.kernel() && l.kernel()->loop_body >= 0;
  }
  for (size_t i = 0; i < m->arg_values.size(); ++i) {
    std::vector<void*> ptrs;
    for (auto& v : m->arg_values[i]) ptrs.push_back(&v);
    // A kernel's by-value parameter block follows its pointers; the engine's
    // copy is immutable and outlives the context.
    const KernelLaunch* k = e.exe.launches[i].kernel();
    if (k && !k->params.empty()) ptrs.push_back(const_cast<char*>(k->params.data()));
    // Run-time sizes: one by-value block, refilled in place per shape.
    if (k && !k->size_block.empty()) ptrs.push_back(m->shapes->size_block(i).data());
    m->arg_ptrs.push_back(std::move(ptrs));
  }
  std::unique_ptr<ExecutionContext> ctx(new ExecutionContext(shared_from_this(), std::move(m)));
  // With every address known, build the graph now so its errors show here.
  if (options.allocate_io_buffers) RETURN_IF_ERROR(ctx->prepare());
  return ctx;
}

ExecutionContext::ExecutionContext(std::shared_ptr<const Engine> engine, std::unique_ptr<Impl> impl)
    : engine_(std::move(engine)), impl_(std::move(impl)) {}

// The Impl (which frees device memory) goes before the engine reference, so
// the engine's context is still alive while it does.
ExecutionContext::~ExecutionContext() { impl_.reset(); }

CUstream ExecutionContext::stream() const { return impl_->own_stream; }

int64_t ExecutionContext::workspace_bytes() const {
  return static_cast<int64_t>(impl_->engine->matmuls->workspace_bytes()) +
         static_cast<int64_t>(impl_->engine->convs->workspace_bytes()) +
         static_cast<int64_t>(impl_->engine->sdpas->workspace_bytes());
}

int64_t ExecutionContext::device_bytes() const {
  int64_t total = impl_->engine->exe.arena_bytes + workspace_bytes();
  for (size_t b = 0; b < impl_->own_io.size(); ++b)
    if (impl_->own_io[b]) total += std::max<int64_t>(impl_->engine->bindings[b].bytes, 1);
  return total;
}

Status ExecutionContext::set_tensor_address(std::string_view name, CUdeviceptr address) {
  GRAPHC_CONTEXT_ENTRY(*impl_);
  const Engine::Impl& e = *impl_->engine;
  auto index = engine_->binding_index(name);
  if (!index) {
    std::string names;
    for (const auto& b : e.bindings) names += (names.empty() ? "" : ", ") + b.name;
    return not_found("the engine has no binding '{}' (it has: {})", name, names);
  }
  const auto b = static_cast<size_t>(*index);
  if (address == 0) {
    if (!impl_->own_io[b])
      return invalid_argument(
          "binding '{}': a null address, and the context has no buffer of its own", name);
    address = impl_->own_io[b];
  }
  if (address % kAddressAlignment != 0)
    return invalid_argument("binding '{}': device address {:#x} is not {}-byte aligned", name,
                            address, kAddressAlignment);
  if (impl_->bound[b] != address) impl_->dirty = true;
  impl_->bound[b] = address;
  return Status::ok_status();
}

Expected<CUdeviceptr> ExecutionContext::tensor_address(std::string_view name) const {
  auto index = engine_->binding_index(name);
  if (!index) return not_found("the engine has no binding '{}'", name);
  return impl_->bound[static_cast<size_t>(*index)];
}

CUdeviceptr ExecutionContext::tensor_address(int binding) const {
  if (binding < 0 || static_cast<size_t>(binding) >= impl_->bound.size()) return 0;
  return impl_->bound[static_cast<size_t>(binding)];
}

int ExecutionContext::optimization_profile() const { return impl_->shapes->profile(); }

Status ExecutionContext::set_optimization_profile(int profile) {
  GRAPHC_CONTEXT_ENTRY(*impl_);
  return impl_->shapes->set_profile(profile);
}

Status ExecutionContext::set_input_shape(std::string_view name, std::span<const int64_t> dims) {
  GRAPHC_CONTEXT_ENTRY(*impl_);
  auto index = engine_->binding_index(name);
  if (!index || *index >= impl_->engine->num_inputs) {
    std::string names;
    for (const auto& n : impl_->input_names) names += (names.empty() ? "" : ", ") + n;
    return not_found("the engine has no input '{}' (its inputs: {})", name, names);
  }
  return impl_->shapes->set_input_shape(*index, impl_->input_names[static_cast<size_t>(*index)],
                                        dims);
}

Expected<int64_t> ExecutionContext::tensor_bytes(int binding) {
  GRAPHC_CONTEXT_ENTRY(*impl_);
  Impl& m = *impl_;
  if (binding < 0 || static_cast<size_t>(binding) >= m.engine->bindings.size())
    return invalid_argument("binding {} of {}", binding, m.engine->bindings.size());
  RETURN_IF_ERROR(m.shapes->resolve(m.input_names));
  return m.shapes->slot_bytes(m.engine->binding_slot[static_cast<size_t>(binding)]);
}

Expected<std::vector<int64_t>> ExecutionContext::tensor_shape(std::string_view name) {
  GRAPHC_CONTEXT_ENTRY(*impl_);
  Impl& m = *impl_;
  auto index = engine_->binding_index(name);
  if (!index) return not_found("the engine has no binding '{}'", name);
  RETURN_IF_ERROR(m.shapes->resolve(m.input_names));
  return m.shapes->slot_shape(m.engine->binding_slot[static_cast<size_t>(*index)]);
}

Status ExecutionContext::prepare() {
  Impl& m = *impl_;
  if (m.engine->weights_incomplete.load(std::memory_order_acquire))
    return invalid_engine(
        "the engine's weights are incomplete: a refit failed part-way (Engine::refit_weights); "
        "refit it again or load the engine anew");
  if (m.dirty) RETURN_IF_ERROR(bind_addresses());
  RETURN_IF_ERROR(m.shapes->resolve(m.input_names));
  RETURN_IF_ERROR(resolve_attention());
  // Without conditional nodes a loop runs from the host, outside any graph.
  if (!m.options.cuda_graph || (m.has_loops && !m.api->conditional_nodes))
    return Status::ok_status();
  const std::vector<int64_t>& key = m.shapes->symbols();
  if (auto it = m.graphs.find(key); it != m.graphs.end()) {
    if (m.graph_order.front() != key) {
      m.graph_order.remove(key);
      m.graph_order.push_front(key);
    }
    m.graph_exec = it->second;
    return Status::ok_status();
  }
  CUgraphExec exec = nullptr;
  RETURN_IF_ERROR(capture_graph(&exec));
  m.graphs.emplace(key, exec);
  m.graph_order.push_front(key);
  m.graph_exec = exec;
  while (m.graph_order.size() > static_cast<size_t>(m.options.max_cached_graphs)) {
    auto old = m.graphs.find(m.graph_order.back());
    m.api->cuGraphExecDestroy(old->second);  // freed when it completes, if still running
    m.graphs.erase(old);
    m.graph_order.pop_back();
  }
  return Status::ok_status();
}

// Over a shape range: which attention launches run cuDNN at these shapes.
// A plan not built yet is being built off this thread (EngineSdpas::setup_at)
// and the generated kernel runs meanwhile; once it is ready this context
// runs it once eagerly and drops the shape's CUDA graph, so the next capture
// records the cuDNN call. Plans are never built or first run inside a
// capture. Where the engine has not judged a plan yet, this context times
// it against the generated kernel (pick_attention) and the faster runs. A
// shape whose plans are all settled costs one lookup.
Status ExecutionContext::resolve_attention() {
  Impl& m = *impl_;
  const Engine::Impl& e = *m.engine;
  if (m.preferred.empty() || !m.shapes->dynamic()) return Status::ok_status();
  using Pick = EngineSdpas::Pick;
  auto resolve = [&]() -> Expected<ShapeChoices<SdpaSetup>::Resolved> {
    ShapeChoices<SdpaSetup>::Resolved at;
    at.choices.assign(m.preferred.size(), nullptr);
    bool fresh = false, unpicked = false;
    for (size_t slot = 0; slot < m.preferred.size(); ++slot) {
      ASSIGN_OR_RETURN(const engine::SdpaParams params,
                       m.shapes->preferred_sdpa_params(m.preferred[slot]));
      ASSIGN_OR_RETURN(const EngineSdpas::At got, e.sdpas->setup_at(m.preferred[slot], params));
      at.pending |= got.pending;
      if (!got.setup) continue;
      const Pick pick = e.sdpas->pick(got.setup);
      if (pick == Pick::kKernel) continue;
      at.choices[slot] = got.setup;
      fresh |= !m.sdpas->warmed(got.setup);
      unpicked |= pick == Pick::kUnknown;
    }
    if (!fresh && !unpicked) return at;
    // The eager first runs write the arena: work still queued on it ends
    // first (the caller's last stream may be gone: the whole device context).
    GRAPHC_CU(*m.api, cuCtxSynchronize(), "finishing the previous run");
    for (size_t slot = 0; slot < m.preferred.size(); ++slot) {
      const size_t i = m.preferred[slot];
      if (at.choices[slot])
        RETURN_IF_ERROR(m.sdpas->warm_up_at(i, *at.choices[slot], m.arg_values[i], m.own_stream)
                            .with_context("running cuDNN attention once before graph capture"));
    }
    GRAPHC_CU(*m.api, cuStreamSynchronize(m.own_stream),
              "running cuDNN attention once before graph capture");
    if (unpicked) RETURN_IF_ERROR(pick_attention(at.choices));
    return at;
  };
  const std::vector<int64_t>& key = m.shapes->symbols();
  bool changed = false;
  ASSIGN_OR_RETURN(m.sdpa_now,
                   m.sdpa_by_shape.get(key, e.sdpas->plans_generation(), resolve, &changed));
  // Plans ready since this shape's graph was captured with the kernels.
  if (changed) m.drop_graph(key);
  return Status::ok_status();
}

// Times each cuDNN plan not judged yet against its launch's generated
// kernel at these shapes (on whatever the arena holds: both read the same
// operands and write the same output, so the values do not matter; lengths
// are not read, as range attention has none), keeps the faster for the
// engine, and drops the plans the kernel beat from `choices`.
Status ExecutionContext::pick_attention(std::vector<const SdpaSetup*>& choices) {
  Impl& m = *impl_;
  const EngineSdpas& sdpas = *m.engine->sdpas;
  using Pick = EngineSdpas::Pick;
  constexpr int kReps = 5;  // each ~10 us-1 ms: a shape's first run pays once
  for (size_t slot = 0; slot < choices.size(); ++slot) {
    const SdpaSetup* s = choices[slot];
    if (!s || s->params.has_seq_lens || sdpas.pick(s) != Pick::kUnknown) continue;
    const size_t i = m.preferred[slot];
    auto timed = fastest_runs_ms(
        *m.api, m.own_stream,
        {[&] { return launch_kernel(i, m.own_stream); },
         [&] { return m.sdpas->run_at(i, *s, m.arg_values[i], m.own_stream); }},
        kReps);
    if (!timed.ok())
      return timed.status().with_context("timing cuDNN attention against the generated kernel");
    const std::vector<float>& ms = *timed;
    sdpas.set_pick(s, ms[0] < ms[1] ? Pick::kKernel : Pick::kCudnn);
  }
  for (const SdpaSetup*& s : choices)
    if (s && sdpas.pick(s) == Pick::kKernel) s = nullptr;
  return Status::ok_status();
}

int ExecutionContext::cudnn_attention_launches() const {
  const Impl& m = *impl_;
  if (!m.sdpa_now) return 0;
  return static_cast<int>(
      std::count_if(m.sdpa_now->begin(), m.sdpa_now->end(), [](const SdpaSetup* s) { return s; }));
}

// Recomputes every slot address and kernel parameter from the bound
// addresses; the CUDA graphs captured with the old ones are dropped.
Status ExecutionContext::bind_addresses() {
  Impl& m = *impl_;
  const Engine::Impl& e = *m.engine;
  for (size_t b = 0; b < m.bound.size(); ++b)
    if (!m.bound[b])
      return invalid_argument("binding '{}' has no device address (set_tensor_address)",
                              e.bindings[b].name);
  for (size_t s = 0; s < e.exe.tensors.size(); ++s) {
    const TensorSlot& t = e.exe.tensors[s];
    const auto offset = static_cast<CUdeviceptr>(t.offset);
    if (e.slot_binding[s] >= 0)
      m.slot_addr[s] = m.bound[static_cast<size_t>(e.slot_binding[s])];
    else if (t.location == TensorSlot::Location::kWeights)
      m.slot_addr[s] = e.weights + offset;
    else
      m.slot_addr[s] = m.arena + offset;
  }
  for (size_t i = 0; i < e.exe.launches.size(); ++i) {
    const auto& args = e.exe.launches[i].args;
    for (size_t k = 0; k < args.size(); ++k)
      m.arg_values[i][k] = m.slot_addr[static_cast<size_t>(args[k])];
  }
  // Matmul descriptors hold the bias address: set before any capture.
  for (size_t i = 0; i < e.exe.launches.size(); ++i) {
    const Launch& l = e.exe.launches[i];
    if (!l.matmul()) continue;
    const int bias = l.matmul()->params.bias_arg();
    RETURN_IF_ERROR(
        m.matmuls->set_bias(i, bias < 0 ? 0 : m.arg_values[i][static_cast<size_t>(bias)]));
  }
  m.drop_graphs();
  m.dirty = false;
  return Status::ok_status();
}

// The launch sequence at the current addresses and shapes as a CUDA graph.
Status ExecutionContext::capture_graph(CUgraphExec* out) {
  Impl& m = *impl_;
  const Engine::Impl& e = *m.engine;
  const DriverApi& a = *m.api;
  // cuDNN's first call may load kernels or allocate: not inside a capture.
  // Each conv set-up (one per shape where its sizes vary, chosen here,
  // before the capture) runs once eagerly in this context first.
  bool warmed = false;
  const bool sdpa_warm_up = m.sdpas->needs_warm_up();
  for (size_t i = 0; i < e.exe.launches.size(); ++i) {
    Status warm = Status::ok_status();
    if (e.exe.launches[i].conv()) {
      auto s = conv_setup(i);
      if (!s.ok()) return s.status();
      if (m.convs->warmed(*s)) continue;
      warm = m.convs->run(i, m.arg_values[i], m.own_stream, *s);
      m.convs->mark_warmed(*s);
      warmed = true;
    }
    if (sdpa_warm_up && e.exe.launches[i].sdpa()) {
      warm = m.sdpas->warm_up(i, m.arg_values[i], m.own_stream);
      warmed = true;
    }
    RETURN_IF_ERROR(warm.with_context("warming up cuDNN before graph capture"));
  }
  if (warmed)
    GRAPHC_CU(a, cuStreamSynchronize(m.own_stream), "warming up cuDNN before graph capture");
  m.sdpas->warmed_up();
  // Captured on the context's own stream (nothing runs during capture); the
  // instantiated graph is then launched on whichever stream enqueue gets.
  ASSIGN_OR_RETURN(*out, capture_graph_exec(a, m.own_stream, [&] {
    m.capturing = true;
    Status st = launch_all(m.own_stream);
    m.capturing = false;
    return st;
  }));
  return Status::ok_status();
}

// Conv launch `i`'s set-up at the context's shapes (made on first use of a
// shape where its sizes vary).
Expected<const ConvSetup*> ExecutionContext::conv_setup(size_t i) const {
  const Impl& m = *impl_;
  const Engine::Impl& e = *m.engine;
  const Launch& l = e.exe.launches[i];
  if (l.conv()->sizes.empty()) return e.convs->setup(i);
  ASSIGN_OR_RETURN(const engine::ConvParams at, conv_params_at_shapes(l, *m.shapes));
  return e.convs->setup_at(i, at);
}

Status ExecutionContext::launch_all(CUstream stream) {
  const size_t launches = impl_->engine->exe.launches.size();
  RETURN_IF_ERROR(launch_range(0, launches, stream, 0));
  for (size_t i = launches; i < launch_steps(); ++i) RETURN_IF_ERROR(launch_step(i, stream));
  return Status::ok_status();
}

Status ExecutionContext::launch_range(size_t begin, size_t end, CUstream stream, int depth) {
  Impl& m = *impl_;
  const Engine::Impl& e = *m.engine;
  for (size_t i = begin; i < end; ++i) {
    const KernelLaunch* k = e.exe.launches[i].kernel();
    if (!k || k->loop_body < 0) {
      RETURN_IF_ERROR(launch_step(i, stream));
      continue;
    }
    const auto body_end = i + 1 + static_cast<size_t>(k->loop_body);
    LoopRun run{*m.api, e.context, i + 1, body_end, m.arg_values[i].back(), {}, {}, nullptr};
    run.control = [&, i](CUstream s, const engine::LoopLaunchParams& params) -> Status {
      std::vector<void*> ptrs = m.arg_ptrs[i];
      ptrs.push_back(const_cast<engine::LoopLaunchParams*>(&params));
      GRAPHC_CU(*m.api,
                cuLaunchKernel(e.functions[i], 1, 1, 1, 1, 1, 1, 0, s, ptrs.data(), nullptr),
                ("launching the loop control kernel " + k->entry).c_str());
      return Status::ok_status();
    };
    run.body = [&, depth](size_t b, size_t en, CUstream s) {
      return launch_range(b, en, s, depth + 1);
    };
    if (m.capturing) {
      while (m.loop_streams.size() <= static_cast<size_t>(depth)) {
        CUstream st = nullptr;
        GRAPHC_CU(*m.api, cuStreamCreate(&st, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
        m.loop_streams.push_back(st);
      }
      run.body_stream = m.loop_streams[static_cast<size_t>(depth)];
      RETURN_IF_ERROR(capture_loop(run, stream).with_context(fmt::format("loop '{}'", e.exe.launches[i].label())));
    } else {
      RETURN_IF_ERROR(run_loop_on_host(run, stream).with_context(fmt::format("loop '{}'", e.exe.launches[i].label())));
    }
    i = body_end - 1;
  }
  return Status::ok_status();
}

size_t ExecutionContext::launch_steps() const {
  return impl_->engine->exe.launches.size() + impl_->engine->output_copies.size();
}

Status ExecutionContext::launch_step(size_t i, CUstream stream) {
  Impl& m = *impl_;
  const Engine::Impl& e = *m.engine;
  const DriverApi& a = *m.api;
  if (i >= e.exe.launches.size()) {  // a final output copy
    const auto& [slot, binding] = e.output_copies.at(i - e.exe.launches.size());
    const auto bytes = static_cast<size_t>(m.shapes->slot_bytes(slot));
    if (bytes)
      GRAPHC_CU(a,
                cuMemcpyDtoDAsync(m.bound[static_cast<size_t>(binding)],
                                  m.slot_addr[static_cast<size_t>(slot)], bytes, stream),
                "copying an output");
    return Status::ok_status();
  }
  const Launch& l = e.exe.launches[i];
  if (const MatmulLaunch* mm = l.matmul()) {
    if (mm->m_size < 0) return m.matmuls->run(i, m.arg_values[i], stream);
    ASSIGN_OR_RETURN(const MatmulSetup* at, e.matmuls->setup_at(i, m.shapes->size(mm->m_size)));
    return m.matmuls->run(i, m.arg_values[i], stream, at);
  }
  if (l.conv()) {
    ASSIGN_OR_RETURN(const ConvSetup* s, conv_setup(i));
    return m.convs->run(i, m.arg_values[i], stream, s);
  }
  if (l.sdpa()) return m.sdpas->run(i, m.arg_values[i], stream);
  if (l.is_copy()) {  // device-to-device copy of dst's bytes
    const auto bytes = static_cast<size_t>(m.shapes->slot_bytes(l.args[1]));
    if (bytes)
      GRAPHC_CU(a, cuMemcpyDtoDAsync(m.arg_values[i][1], m.arg_values[i][0], bytes, stream),
                "copying a tensor");
    return Status::ok_status();
  }
  const KernelLaunch& k = *l.kernel();
  // Attention that cuDNN runs at these shapes (resolve_attention).
  if (k.preferred_sdpa && m.sdpa_now && m.preferred_slot[i] >= 0)
    if (const SdpaSetup* s = (*m.sdpa_now)[static_cast<size_t>(m.preferred_slot[i])])
      return m.sdpas->run_at(i, *s, m.arg_values[i], stream);
  return launch_kernel(i, stream);
}

Status ExecutionContext::launch_kernel(size_t i, CUstream stream) {
  Impl& m = *impl_;
  const Engine::Impl& e = *m.engine;
  const KernelLaunch& k = *e.exe.launches[i].kernel();
  const auto& grid = m.shapes->grid(i);
  GRAPHC_CU(*m.api,
            cuLaunchKernel(e.functions[i], grid[0], grid[1], grid[2], k.block[0], k.block[1],
                           k.block[2], k.shared_bytes, stream, m.arg_ptrs[i].data(), nullptr),
            ("launching " + k.entry).c_str());
  return Status::ok_status();
}

Expected<LaunchProfile> ExecutionContext::profile(const ProfileOptions& options, CUstream stream) {
  GRAPHC_CONTEXT_ENTRY(*impl_);
  Impl& m = *impl_;
  GRAPHC_CU(*m.api, cuCtxSetCurrent(m.engine->context), "cuCtxSetCurrent");
  RETURN_IF_ERROR(prepare());
  if (m.has_loops)
    return unsupported("profiling an engine with a run-time Loop is not supported yet (its body "
                       "runs a run-time number of times); run it without profiling");
  CUstream s = stream ? stream : m.own_stream;
  m.last_stream = s;
  return profile_launch_steps(*m.api, profile_step_names(*m.engine), options, s,
                              [&](size_t step) { return launch_step(step, s); });
}

Status ExecutionContext::enqueue(CUstream stream) {
  GRAPHC_CONTEXT_ENTRY(*impl_);
  Impl& m = *impl_;
  const DriverApi& a = *m.api;
  GRAPHC_CU(a, cuCtxSetCurrent(m.engine->context), "cuCtxSetCurrent");
  RETURN_IF_ERROR(prepare());
  CUstream s = stream ? stream : m.own_stream;
  if (m.graph_exec) {
    GRAPHC_CU(a, cuGraphLaunch(m.graph_exec, s), "launching the CUDA graph");
  } else {
    RETURN_IF_ERROR(launch_all(s));
  }
  m.last_stream = s;
  return Status::ok_status();
}

Status ExecutionContext::synchronize() {
  GRAPHC_CONTEXT_ENTRY(*impl_);
  Impl& m = *impl_;
  GRAPHC_CU(*m.api, cuCtxSetCurrent(m.engine->context), "cuCtxSetCurrent");
  GRAPHC_CU(*m.api, cuStreamSynchronize(m.last_stream ? m.last_stream : m.own_stream),
            "running the engine");
  return Status::ok_status();
}

namespace {
// `current`: the binding's bytes at the context's shapes.
Status check_binding(const Engine::Impl& e, int binding, bool input, size_t bytes,
                     const ShapeState& shapes) {
  if (binding < 0 || static_cast<size_t>(binding) >= e.bindings.size())
    return invalid_argument("binding {} of {}", binding, e.bindings.size());
  const BindingInfo& b = e.bindings[static_cast<size_t>(binding)];
  if (b.is_input != input)
    return invalid_argument("'{}' is an {}, not an {}", b.name, b.is_input ? "input" : "output",
                            input ? "input" : "output");
  const int64_t want = shapes.slot_bytes(e.binding_slot[static_cast<size_t>(binding)]);
  if (static_cast<int64_t>(bytes) != want)
    return invalid_argument("{} '{}' has {} bytes{}, got {}", input ? "input" : "output", b.name,
                            want, shapes.dynamic() ? " at the shapes set" : "", bytes);
  return Status::ok_status();
}
}  // namespace

Status ExecutionContext::copy_input_from_host(int binding, const void* data, size_t bytes,
                                              CUstream stream) {
  GRAPHC_CONTEXT_ENTRY(*impl_);
  Impl& m = *impl_;
  RETURN_IF_ERROR(m.shapes->resolve(m.input_names));
  RETURN_IF_ERROR(check_binding(*m.engine, binding, true, bytes, *m.shapes));
  const CUdeviceptr dst = m.bound[static_cast<size_t>(binding)];
  if (!dst)
    return invalid_argument("input '{}' has no device address",
                            m.engine->bindings[static_cast<size_t>(binding)].name);
  if (!bytes) return Status::ok_status();
  GRAPHC_CU(*m.api, cuCtxSetCurrent(m.engine->context), "cuCtxSetCurrent");
  GRAPHC_CU(*m.api, cuMemcpyHtoDAsync(dst, data, bytes, stream ? stream : m.own_stream),
            "copying an input to the device");
  return Status::ok_status();
}

Status ExecutionContext::copy_output_to_host(int binding, void* data, size_t bytes,
                                             CUstream stream) {
  GRAPHC_CONTEXT_ENTRY(*impl_);
  Impl& m = *impl_;
  RETURN_IF_ERROR(m.shapes->resolve(m.input_names));
  RETURN_IF_ERROR(check_binding(*m.engine, binding, false, bytes, *m.shapes));
  const CUdeviceptr src = m.bound[static_cast<size_t>(binding)];
  if (!src)
    return invalid_argument("output '{}' has no device address",
                            m.engine->bindings[static_cast<size_t>(binding)].name);
  if (!bytes) return Status::ok_status();
  GRAPHC_CU(*m.api, cuCtxSetCurrent(m.engine->context), "cuCtxSetCurrent");
  GRAPHC_CU(*m.api, cuMemcpyDtoHAsync(data, src, bytes, stream ? stream : m.own_stream),
            "copying an output to the host");
  return Status::ok_status();
}

Status ExecutionContext::run_host(std::span<const std::string_view> inputs,
                                  std::span<std::string> outputs, CUstream stream) {
  GRAPHC_CONTEXT_ENTRY(*impl_);
  const Engine::Impl& e = *impl_->engine;
  const auto n_out = e.bindings.size() - static_cast<size_t>(e.num_inputs);
  if (inputs.size() != static_cast<size_t>(e.num_inputs) || outputs.size() != n_out)
    return invalid_argument("the engine has {} inputs and {} outputs; got {} and {}", e.num_inputs,
                            n_out, inputs.size(), outputs.size());
  CUstream s = stream ? stream : impl_->own_stream;
  for (size_t i = 0; i < inputs.size(); ++i)
    RETURN_IF_ERROR(
        copy_input_from_host(static_cast<int>(i), inputs[i].data(), inputs[i].size(), s));
  RETURN_IF_ERROR(enqueue(s));
  for (size_t i = 0; i < n_out; ++i) {
    const int b = e.num_inputs + static_cast<int>(i);
    ASSIGN_OR_RETURN(const int64_t bytes, tensor_bytes(b));
    outputs[i].resize(static_cast<size_t>(bytes));
    RETURN_IF_ERROR(copy_output_to_host(b, outputs[i].data(), outputs[i].size(), s));
  }
  return synchronize();
}

Expected<std::unique_ptr<GpuTimer>> GpuTimer::create(const Engine& engine) {
  const Engine::Impl& e = engine.impl();
  std::unique_ptr<GpuTimer> t(new GpuTimer());
  GRAPHC_CU(*e.api, cuCtxSetCurrent(e.context), "cuCtxSetCurrent");
  t->engine_ = engine.shared_from_this();
  t->api_ = e.api;
  t->context_ = e.context;
  GRAPHC_CU(*e.api, cuEventCreate(&t->start_, CU_EVENT_DEFAULT), "cuEventCreate");
  GRAPHC_CU(*e.api, cuEventCreate(&t->stop_, CU_EVENT_DEFAULT), "cuEventCreate");
  return t;
}

GpuTimer::~GpuTimer() {
  if (!api_) return;
  api_->cuCtxSetCurrent(context_);
  if (start_) api_->cuEventDestroy(start_);
  if (stop_) api_->cuEventDestroy(stop_);
}

Status GpuTimer::start(CUstream stream) {
  GRAPHC_CU(*api_, cuCtxSetCurrent(context_), "cuCtxSetCurrent");
  GRAPHC_CU(*api_, cuEventRecord(start_, stream), "cuEventRecord");
  return Status::ok_status();
}

Status GpuTimer::stop(CUstream stream) {
  GRAPHC_CU(*api_, cuEventRecord(stop_, stream), "cuEventRecord");
  return Status::ok_status();
}

Expected<float> GpuTimer::elapsed_ms() {
  GRAPHC_CU(*api_, cuEventSynchronize(stop_), "waiting for the timed work");
  float ms = 0;
  GRAPHC_CU(*api_, cuEventElapsedTime(&ms, start_, stop_), "reading the GPU time");
  return ms;
}

Expected<std::unique_ptr<PinnedBuffer>> PinnedBuffer::create(const Engine& engine, size_t bytes) {
  const Engine::Impl& e = engine.impl();
  std::unique_ptr<PinnedBuffer> b(new PinnedBuffer());
  GRAPHC_CU(*e.api, cuCtxSetCurrent(e.context), "cuCtxSetCurrent");
  b->engine_ = engine.shared_from_this();
  b->api_ = e.api;
  b->context_ = e.context;
  b->size_ = bytes;
  GRAPHC_CU(*e.api, cuMemHostAlloc(&b->data_, std::max<size_t>(bytes, 1), 0),
            "allocating page-locked host memory");
  return b;
}

PinnedBuffer::~PinnedBuffer() {
  if (!api_ || !data_) return;
  api_->cuCtxSetCurrent(context_);
  api_->cuMemFreeHost(data_);
}

}  // namespace graphc::runtime
