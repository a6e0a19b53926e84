// The cuDNN attention runtime (see cudnn_sdpa.h): enqueueing one call (its
// variant pack on a plan), an engine's setups (equal calls share one),
// each context's handle, workspace, warm-up sequence lengths and fallback
// plans, and probe_sdpa. The operation graph is built in
// cudnn_sdpa_graph.cpp, the execution plans chosen in cudnn_sdpa_plan.cpp.
#include "runtime/cudnn_sdpa.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cudnn_sdpa_internal.h"
#include "runtime/warnings.h"

namespace graphc::runtime {

namespace {

using engine::SdpaParams;

void* ptr(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

void* operand(const SdpaOperands& o, int slot) {
  switch (slot) {
    case kSlotQ: return o.q;
    case kSlotK: return o.k;
    case kSlotV: return o.v;
    case kSlotBias: return o.bias;
    case kSlotSeqQ: return o.seq_len_q;
    case kSlotSeqKv: return o.seq_len_kv;
    default: return o.o;
  }
}

}  // namespace

Status enqueue_sdpa(const CudnnApi& api, cudnnHandle_t handle, const SdpaSetup& setup,
                    const SdpaOperands& operands, cudnnBackendDescriptor_t own_plan) {
  const SdpaPlan& plan = *setup.plan;
  std::vector<void*> pointers;
  pointers.reserve(plan.uids.size());
  for (int source : plan.sources)
    pointers.push_back(source >= 0
                           ? operand(operands, source)
                           : const_cast<float*>(&plan.scalars[static_cast<size_t>(-1 - source)]));
  void* workspace = operands.workspace;
  cudnnBackendDescriptor_t vp = nullptr;
  RETURN_IF_ERROR(
      sdpa_status(api, api.cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp),
                  "variant pack: cudnnBackendCreateDescriptor"));
  Desc owner(&api, vp);
  const auto n = static_cast<int64_t>(plan.uids.size());
  RETURN_IF_ERROR(
      sdpa_status(api,
                  api.cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                                               CUDNN_TYPE_INT64, n, plan.uids.data()),
                  "variant pack: cudnnBackendSetAttribute(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS)"));
  RETURN_IF_ERROR(
      sdpa_status(api,
                  api.cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                               CUDNN_TYPE_VOID_PTR, n, pointers.data()),
                  "variant pack: cudnnBackendSetAttribute(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS)"));
  RETURN_IF_ERROR(
      sdpa_status(api,
                  api.cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                               CUDNN_TYPE_VOID_PTR, 1, &workspace),
                  "variant pack: cudnnBackendSetAttribute(CUDNN_ATTR_VARIANT_PACK_WORKSPACE)"));
  RETURN_IF_ERROR(
      sdpa_status(api, api.cudnnBackendFinalize(vp), "variant pack: cudnnBackendFinalize"));
  if (own_plan)  // a context's own plan: only its thread executes it
    return sdpa_status(api, api.cudnnBackendExecute(handle, own_plan, vp),
                       "cudnnBackendExecute (the context's own plan)");
  std::lock_guard<std::mutex> lock(plan.execute_mutex);
  return sdpa_status(api, api.cudnnBackendExecute(handle, plan.plan.get(), vp),
                     "cudnnBackendExecute");
}

namespace {

// A plan of `setup`'s engine configuration made with a context's `handle`
// (the caller destroys it).
Expected<cudnnBackendDescriptor_t> make_context_plan(const CudnnApi& api, cudnnHandle_t handle,
                                                     const SdpaSetup& setup) {
  ASSIGN_OR_RETURN(PlanTry made, try_plan(api, Target{handle, nullptr}, setup.plan->config.get(),
                                          setup.workspace_bytes,
                                          "the engine's configuration on a context's handle"));
  return made.plan.release();
}

}  // namespace

Expected<std::unique_ptr<EngineSdpas>> EngineSdpas::create(const Executable& exe,
                                                           std::function<Status()> bind_worker) {
  const std::vector<Launch>& launches = exe.launches;
  auto out = std::unique_ptr<EngineSdpas>(new EngineSdpas());
  out->setups_.resize(launches.size());
  auto where = [&](size_t i) {
    const Launch& l = launches[i];
    return fmt::format("cuDNN attention (launch {}{}: {})", i,
                       l.name.empty() ? std::string() : " '" + l.name + "'",
                       engine::describe_sdpa(l.sdpa()->params));
  };
  bool any = false;
  for (size_t i = 0; i < launches.size(); ++i) {
    if (!launches[i].sdpa()) continue;
    any = true;
    // What cuDNN is documented not to take fails before cuDNN is loaded.
    if (std::string why = engine::sdpa_cudnn_refusal(launches[i].sdpa()->params); !why.empty())
      return unsupported("{}: {}", where(i), why);
  }
  bool preferred = false;
  for (const Launch& l : launches) preferred |= l.kernel() && l.kernel()->preferred_sdpa;
  if (!any && !preferred) return out;
  // With only preferred calls, an engine runs its attention kernels where
  // cuDNN is missing or unusable rather than failing to load.
  auto usable = [&]() -> Status {
    ASSIGN_OR_RETURN(out->api_, load_cudnn());
    return check_cudnn(*out->api_, out->api_->cudnnCreate(&out->handle_),
                       "cudnnCreate (attention)");
  };
  if (Status st = usable(); !st.ok()) {
    if (any) return st;
    warn(fmt::format("cuDNN attention over the shape range: {}; the generated attention kernels "
                     "run at every shape",
                     st.message()));
    out->api_ = nullptr;
    return out;
  }
  const CudnnApi& api = *out->api_;
  // Equal calls (the layers of a transformer) share one graph and plan.
  std::map<std::pair<std::string, uint64_t>, std::shared_ptr<SdpaSetup>> built;
  for (size_t i = 0; i < launches.size(); ++i) {
    const Launch& l = launches[i];
    const SdpaLaunch* attn = l.sdpa();
    if (!attn) continue;
    auto key = std::make_pair(engine::encode_sdpa_params(attn->params), attn->workspace_bytes);
    auto it = built.find(key);
    if (it == built.end()) {
      auto made = make_sdpa_setup(api, out->handle_, attn->params, attn->workspace_bytes);
      if (!made.ok()) return made.status().with_context(where(i));
      it = built.emplace(std::move(key), std::shared_ptr<SdpaSetup>(std::move(*made))).first;
    }
    out->setups_[i] = it->second;
    out->workspace_bytes_ = std::max<uint64_t>(out->workspace_bytes_, it->second->workspace_bytes);
  }
  if (preferred) {
    // The worker thread binds the engine's context and makes a handle of its
    // own there (a cuDNN handle is used by one thread at a time).
    EngineSdpas* self = out.get();
    out->plans_ = std::make_unique<BackgroundPlans<SdpaSetup>>([self, bind = std::move(bind_worker)]() -> Status {
      Status st = bind ? bind() : Status::ok_status();
      if (st.ok())
        st = check_cudnn(*self->api_, self->api_->cudnnCreate(&self->worker_handle_),
                         "cudnnCreate (attention planning thread)");
      if (!st.ok())
        warn(fmt::format("cuDNN attention planning thread: {}; the generated kernels run at the "
                         "shapes not planned at load",
                         st.message()));
      return st;
    });
    RETURN_IF_ERROR(out->create_preferred(exe));
  }
  return out;
}

EngineSdpas::~EngineSdpas() {
  // The worker builds with the handles and plans below: it is joined first.
  if (plans_) plans_->stop();
  setups_.clear();  // plans before the handles
  if (plans_) plans_->clear();
  if (api_ && worker_handle_) api_->cudnnDestroy(worker_handle_);
  if (api_ && handle_) api_->cudnnDestroy(handle_);
}

Expected<std::unique_ptr<ContextSdpas>> ContextSdpas::create(const EngineSdpas& engine,
                                                             const DriverApi& driver) {
  auto out = std::unique_ptr<ContextSdpas>(new ContextSdpas());
  out->engine_ = &engine;
  if (!engine.api()) return out;  // no attention calls
  out->driver_ = &driver;
  const CudnnApi& api = *engine.api();
  RETURN_IF_ERROR(
      check_cudnn(api, api.cudnnCreate(&out->handle_), "cudnnCreate (a context's attention)"));
  if (engine.workspace_bytes() > 0)
    RETURN_IF_ERROR(device_alloc(driver, &out->workspace_, engine.workspace_bytes(),
                                 "allocating the cuDNN attention workspace"));
  for (size_t i = 0; i < engine.launches(); ++i) {
    const SdpaSetup* s = engine.setup(i);
    if (!s || !s->params.has_seq_lens || out->full_lengths_.count(s)) continue;
    const SdpaParams& p = s->params;
    std::vector<int32_t> lengths(static_cast<size_t>(p.batch), static_cast<int32_t>(p.seq_q));
    lengths.resize(static_cast<size_t>(2 * p.batch), static_cast<int32_t>(p.seq_kv));
    CUdeviceptr d = 0;
    RETURN_IF_ERROR(device_alloc(driver, &d, lengths.size() * sizeof(int32_t),
                                 "allocating the attention warm-up's sequence lengths"));
    out->full_lengths_.emplace(s, d);
    GRAPHC_CU(driver, cuMemcpyHtoD(d, lengths.data(), lengths.size() * sizeof(int32_t)),
              "writing the attention warm-up's sequence lengths");
  }
  return out;
}

ContextSdpas::~ContextSdpas() {
  if (!engine_ || !engine_->api()) return;
  for (auto& [setup, plan] : own_plans_) engine_->api()->cudnnBackendDestroyDescriptor(plan);
  for (auto& [setup, lengths] : full_lengths_) driver_->cuMemFree(lengths);
  if (handle_) engine_->api()->cudnnDestroy(handle_);
  if (workspace_) driver_->cuMemFree(workspace_);
}

Status ContextSdpas::run(size_t launch, const std::vector<CUdeviceptr>& args,
                         CUstream stream) const {
  const SdpaSetup* s = engine_ ? engine_->setup(launch) : nullptr;
  if (!s || !handle_) return internal_error("attention launch {} is not set up", launch);
  return run_setup(launch, *s, args, stream, !warmed_up_);
}

Status ContextSdpas::run_setup(size_t launch, const SdpaSetup& setup,
                               const std::vector<CUdeviceptr>& args, CUstream stream,
                               bool first) const {
  const SdpaSetup* s = &setup;
  const SdpaParams& p = s->params;
  if (args.size() != static_cast<size_t>(p.num_args()))
    return internal_error("attention launch {} got {} arguments, not {}", launch, args.size(),
                          p.num_args());
  const CudnnApi& api = *engine_->api();
  const std::string where = fmt::format("cuDNN attention (launch {})", launch);
  RETURN_IF_ERROR(check_cudnn(api,
                              api.cudnnSetStream(handle_, reinterpret_cast<cudaStream_t>(stream)),
                              "cudnnSetStream")
                      .with_context(where));
  SdpaOperands o;
  o.q = ptr(args[0]);
  o.k = ptr(args[1]);
  o.v = ptr(args[2]);
  if (p.has_bias) o.bias = ptr(args[static_cast<size_t>(p.bias_arg())]);
  if (p.has_seq_lens) {
    o.seq_len_q = ptr(args[static_cast<size_t>(p.seq_len_q_arg())]);
    o.seq_len_kv = ptr(args[static_cast<size_t>(p.seq_len_kv_arg())]);
  }
  o.o = ptr(args[static_cast<size_t>(p.o_arg())]);
  o.workspace = ptr(workspace_);
  auto own = own_plans_.find(s);
  Status st = enqueue_sdpa(api, handle_, *s, o, own == own_plans_.end() ? nullptr : own->second);
  // cuDNN executes a plan with any handle of its device; should it refuse the
  // engine's plan on this context's handle (on the first, eager call: never
  // inside a capture), the context makes its own plan of the same engine
  // configuration and keeps it.
  if (!st.ok() && st.code() == ErrorCode::kUnsupported && own == own_plans_.end() && first) {
    auto made = make_context_plan(api, handle_, *s);
    if (!made.ok())
      return st.with_context(
          where + fmt::format(" (and a plan of its own failed too: {})", made.status().message()));
    own_plans_.emplace(s, *made);
    warn(
        fmt::format("{}: cuDNN refused the engine's plan on this context's handle ({}); the "
                    "context uses a plan of its own",
                    where, st.message()));
    st = enqueue_sdpa(api, handle_, *s, o, *made);
  }
  return st.with_context(where);
}

Status ContextSdpas::warm_up(size_t launch, const std::vector<CUdeviceptr>& args,
                             CUstream stream) const {
  const SdpaSetup* s = engine_ ? engine_->setup(launch) : nullptr;
  const int q_arg = s ? s->params.seq_len_q_arg() : -1;
  const int kv_arg = s ? s->params.seq_len_kv_arg() : -1;
  if (q_arg < 0 || kv_arg < 0 || static_cast<size_t>(kv_arg) >= args.size())
    return run(launch, args, stream);
  auto lengths = full_lengths_.find(s);
  if (lengths == full_lengths_.end())
    return internal_error("attention launch {} has no warm-up sequence lengths", launch);
  std::vector<CUdeviceptr> safe = args;
  safe[static_cast<size_t>(q_arg)] = lengths->second;
  safe[static_cast<size_t>(kv_arg)] =
      lengths->second + static_cast<CUdeviceptr>(s->params.batch) * sizeof(int32_t);
  return run(launch, safe, stream);
}

Expected<std::string> probe_sdpa(const SdpaParams& p, uint64_t workspace_limit, int device) {
  ASSIGN_OR_RETURN(const DriverApi* driver, load_driver());
  RETURN_IF_ERROR(device_usable());
  const DriverApi& a = *driver;
  ASSIGN_OR_RETURN(const CudnnApi* api, load_cudnn());
  CUdevice dev = 0;
  GRAPHC_CU(a, cuDeviceGet(&dev, device), "cuDeviceGet");
  CUcontext ctx = nullptr;
  GRAPHC_CU(a, cuDevicePrimaryCtxRetain(&ctx, dev), "retaining the primary context");
  cudnnHandle_t h = nullptr;
  auto body = [&]() -> Expected<std::string> {
    GRAPHC_CU(a, cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    RETURN_IF_ERROR(check_cudnn(*api, api->cudnnCreate(&h), "cudnnCreate"));
    ASSIGN_OR_RETURN(auto setup, make_sdpa_setup(*api, h, p, workspace_limit));
    return setup->note;
  };
  auto result = body();
  if (h) api->cudnnDestroy(h);
  a.cuDevicePrimaryCtxRelease(dev);
  return result;
}

}  // namespace graphc::runtime
