// Scaled-dot-product attention forward (inference) through cuDNN 9's graph
// (backend) API, loaded with dlopen like the convolutions (runtime/cudnn.h):
// one launch with engine::SdpaParams (engine_format/sdpa_params.h) is one
// cudnnBackendExecute of a fused flash-attention engine.
//
// The operation graph is the one cuDNN's fused attention engines recognise
// (cudnn-frontend's composite SDPA node, inference, no dropout), in this
// order (virtual tensors fp32 unless said, T = the I/O dtype):
//   bmm1    S  = matmul(Q [B,H,Lq,D], Kᵀ [B,Hkv,D,Lk])        (K's strides, last two swapped)
//   scale   S *= scale                                         (a by-value fp32 scalar)
//   bias    S += bias [B|1, H|1, Lq|1, Lk]                     (has_bias)
//   padding S  = row < seq_len_q[b] && col < seq_len_kv[b] ? S : -inf
//                (GEN_INDEX rows/cols, CMP_LT, LOGICAL_AND, BINARY_SELECT; has_seq_lens,
//                 which also gives both matmuls their M/N/K overrides)
//   causal  S  = row >= col ? S : -inf                        (GEN_INDEX, CMP_GE, BINARY_SELECT)
//   softmax M = max_k S, E = exp(S - M), Z = sum_k E, stats = M + log Z (virtual), P = E / Z (T)
//   bmm2    O  = matmul(P, V [B,Hkv,Lk,Dv])                    (O [B,H,Lq,Dv], T)
// Per distinct call (params and workspace limit) the engine builds this graph
// once and one execution plan: heuristics mode A, then the fallback list (or
// the engine the params record, falling back to the heuristics), the first
// engine configuration whose plan finalizes within the workspace limit. Each
// execution context has its own handle (bound to the stream at each run) and
// one workspace for all its attention calls, allocated up front; before the
// first CUDA-graph capture the context runs its attention calls once eagerly
// (as the convolutions; with full sequence lengths of its own, since the
// inputs may not be written yet), so whatever cuDNN does on a first run
// happens outside the capture. Plans are shared by the contexts: cuDNN documents
// shared plans as unsafe to execute from several threads at once, so each
// plan's cudnnBackendExecute (a host-side enqueue; CUDA-graph replays do not
// call it) is serialised by a mutex. cuDNN executes a plan with any handle of
// its device; should it refuse the engine's plan on a context's handle at the
// context's first (eager) call, the context makes a plan of its own from the
// same engine configuration and says so (runtime::warn).
//
// Errors name the step (tensor, operation, operation graph, heuristics,
// engine config, plan, variant pack, execute), the descriptor and attribute,
// cuDNN's status and its last error text. What cuDNN refuses (no engine for
// the graph, a NOT_SUPPORTED or BAD_PARAM finalize, no plan within the
// workspace) is ErrorCode::kUnsupported: a caller can fall back to a
// generated kernel on it; anything else is kDevice (or kInternal).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine_format/sdpa_params.h"
#include "runtime/cudnn.h"
#include "runtime/executable.h"
#include "runtime/background_plans.h"

namespace graphc::runtime {

// The backend descriptors of one call (tensors, operations, operation graph,
// engine configuration, execution plan) and its by-value scalars.
class SdpaPlan;

struct SdpaSetup {
  engine::SdpaParams params;
  std::shared_ptr<SdpaPlan> plan;
  uint64_t workspace_bytes = 0;  // what the plan needs
  int64_t engine_index = -1;     // CUDNN_ATTR_ENGINE_GLOBAL_INDEX of the engine that runs
  bool recorded = false;         // the params' recorded engine (else the heuristics')
  // How it was chosen, for logs, tests and reports: "cuDNN 91300: engine 8
  // (heuristic mode A, candidate 1 of 3; runtime-compiled), 0 B workspace".
  std::string note;
};

// Builds the graph of `p` and an execution plan with `handle` (whose device is
// the current CUDA context's) needing at most `workspace_limit` bytes.
Expected<std::unique_ptr<SdpaSetup>> make_sdpa_setup(const CudnnApi& api, cudnnHandle_t handle,
                                                     const engine::SdpaParams& p,
                                                     uint64_t workspace_limit);

// Builds (and frees) the descriptors of `p`'s operation graph: every tensor
// and operation finalized, then the operation graph (with `handle` when given;
// cuDNN 9.19 finalizes it on the host without one). With no handle it runs on
// the host alone: tests check every attribute's type and count, and that
// cuDNN accepts the graph, on a machine without a GPU.
Status check_sdpa_graph(const CudnnApi& api, cudnnHandle_t handle, const engine::SdpaParams& p,
                        bool finalize_graph = true);

// make_sdpa_setup for a device that cuDNN's device-properties JSON
// (CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, cuDNN >= 9.8) describes instead
// of a handle: heuristics and plan finalization on the host, no GPU needed.
// Returns the note of the plan it made, or why cuDNN refused. Without a CUDA
// driver, cuDNN 9.19's runtime-compiled attention engines (the ones that take
// this graph on sm_90) stop at NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING
// after their graph-pattern checks, so there the answer tells whether the
// graph passes those checks (the host-only test uses it so), not a plan.
Expected<std::string> plan_sdpa_for_device(const CudnnApi& api, const engine::SdpaParams& p,
                                           std::string_view device_json, uint64_t workspace_limit);

// The note of the last setup this thread made (make_sdpa_setup, or an
// engine loading its attention calls): tests, benchmarks and verbose logs
// show which engine cuDNN chose without building the plan again.
std::string last_sdpa_setup_note();

// The device addresses of one call (bias and sequence lengths null when absent).
struct SdpaOperands {
  void *q = nullptr, *k = nullptr, *v = nullptr, *bias = nullptr;
  void *seq_len_q = nullptr, *seq_len_kv = nullptr, *o = nullptr;
  void* workspace = nullptr;  // at least setup.workspace_bytes
};
// Enqueues the call on the handle's stream: the setup's (shared) plan, or
// `own_plan`, a plan of the same engine configuration made for `handle`.
Status enqueue_sdpa(const CudnnApi& api, cudnnHandle_t handle, const SdpaSetup& setup,
                    const SdpaOperands& operands, cudnnBackendDescriptor_t own_plan = nullptr);

// Over a shape range (cudnn_sdpa_range.cpp), a generated attention kernel
// may prefer cuDNN (KernelLaunch::preferred_sdpa): the call's params follow
// the shape, so its graph and plan are built for the actual shape, kept for
// the engine's life keyed by the encoded params (launches and shapes with
// equal calls share one: BackgroundPlans), and the kernel runs at the shapes
// cuDNN refuses (a warning once per refused call). At load, the plans at
// each profile's opt, least and largest shapes are built: the opt shape's
// first run then costs no plan, and the workspace every context allocates is
// the most those plans need; a plan at another shape must fit it (cuDNN's
// candidates that need more are passed over; none left is a refusal), so no
// shape can overrun the workspace.
//
// A plan at any other shape takes ~1.4 s of host time (cuDNN's graph and
// plan finalize compile kernels), so it is built off the critical path: the
// first use of a shape queues its plan on one worker thread (with a cuDNN
// handle of its own, the engine's CUDA context current) and the generated
// kernel runs there meanwhile; a context sees the plan at its next prepare
// (plans_generation() changed), runs it once eagerly and recaptures that
// shape's CUDA graph with it. GRAPHC_SDPA_SYNC_PLANS=1 builds them on the
// caller's thread at first use instead (one stall, cuDNN from the first run).
//
// Plans are static, one per shape: cuDNN 9's dynamic-shape operation graphs
// sharing a kernel cache (CUDNN_ATTR_OPERATIONGRAPH_IS_DYNAMIC_SHAPE_ENABLED,
// CUDNN_ATTR_EXECUTION_PLAN_KERNEL_CACHE) gave wrong results on an H100 at
// every shape but the first one planned (relative L2 1e-2 to 4e-2 against
// 5e-4 with static plans) with params and strides traced correct.
//
// When cuDNN cannot be loaded at all, an engine whose only attention is
// preferred runs its kernels (with a warning) rather than failing.
class EngineSdpas {
 public:
  // Sets up every attention launch of `exe` (calls with equal params and
  // workspace limit share one setup) and the preferred calls' plans at the
  // profiles' opt and corner shapes; nothing is loaded when there is none.
  // Needs the engine's CUDA context current. `bind_worker` runs first on
  // the planning thread: it makes the engine's CUDA context current there.
  static Expected<std::unique_ptr<EngineSdpas>> create(
      const Executable& exe, std::function<Status()> bind_worker = nullptr);
  ~EngineSdpas();
  const CudnnApi* api() const { return api_; }
  const SdpaSetup* setup(size_t launch) const {
    return launch < setups_.size() ? setups_[launch].get() : nullptr;
  }
  size_t launches() const { return setups_.size(); }
  uint64_t workspace_bytes() const { return workspace_bytes_; }  // the largest call's
  // Whether launch `launch` prefers cuDNN and cuDNN is here to take it.
  bool prefers(size_t launch) const {
    return api_ && launch < preferred_.size() && preferred_[launch].has_value();
  }
  // What runs preferred launch `launch` at one shape.
  struct At {
    const SdpaSetup* setup = nullptr;  // null: the generated kernel
    bool pending = false;              // the plan is being built: ask again later
  };
  // The set-up of preferred launch `launch` at `at` (its params at the
  // current shape: ShapeState::preferred_sdpa_params), within
  // workspace_bytes(). A shape not planned yet is queued for the worker
  // (pending; never blocks) unless plans are built synchronously; a shape
  // cuDNN refuses gives no set-up. An operand that would reach past its
  // tensor is an error, as is (synchronously) a cuDNN failure other than a
  // refusal. Thread-safe.
  Expected<At> setup_at(size_t launch, const engine::SdpaParams& at) const;
  // Bumped whenever a background plan is ready (or refused): a context with
  // pending plans looks again when it changed.
  uint64_t plans_generation() const { return plans_ ? plans_->generation() : 0; }
  // Plans queued or being built; waits until there are none (at most
  // `timeout`), for tests and benchmarks.
  size_t pending_plans() const { return plans_ ? plans_->pending() : 0; }
  bool wait_for_plans(std::chrono::milliseconds timeout) const {
    return !plans_ || plans_->wait_idle(timeout);
  }
  // Whether first uses build their plans on the caller's thread
  // (GRAPHC_SDPA_SYNC_PLANS=1).
  bool sync_plans() const { return sync_plans_; }
  // Per-shape set-ups made so far (the load's included), for tests and logs.
  size_t shape_setups() const { return plans_ ? plans_->size() : 0; }

  // Which of a shape's cuDNN plan and the generated kernel runs there. The
  // generated kernel beats cuDNN at small shapes (BERT-base at 3x77 and
  // 1x16 on an H200), so by default the first context to run a plan times
  // both once at that shape (ExecutionContext::resolve_attention) and the
  // engine keeps the verdict for every context. GRAPHC_SDPA_CHOICE=cudnn or
  // =kernel (read at load) fixes it instead, for tests and comparisons.
  enum class Pick { kUnknown, kCudnn, kKernel };
  Pick pick(const SdpaSetup* setup) const;
  void set_pick(const SdpaSetup* setup, Pick pick) const;

 private:
  Status create_preferred(const Executable& exe);
  Expected<std::shared_ptr<const SdpaSetup>> make_at(cudnnHandle_t handle,
                                                     const engine::SdpaParams& at,
                                                     uint64_t limit) const;
  const CudnnApi* api_ = nullptr;
  cudnnHandle_t handle_ = nullptr;         // builds the plans at load and synchronous ones
  cudnnHandle_t worker_handle_ = nullptr;  // the worker's: made and used on its thread only
  std::vector<std::shared_ptr<SdpaSetup>> setups_;
  uint64_t workspace_bytes_ = 0;
  bool sync_plans_ = false;
  Pick fixed_pick_ = Pick::kUnknown;  // GRAPHC_SDPA_CHOICE; kUnknown: measure
  mutable std::mutex picks_mutex_;    // contexts on several threads measure
  mutable std::map<const SdpaSetup*, Pick> picks_;
  // Preferred launches: each operand's bytes (its tensor's, the most the
  // range takes), in argument order.
  std::vector<std::optional<std::vector<int64_t>>> preferred_;
  std::unique_ptr<BackgroundPlans<SdpaSetup>> plans_;  // per-shape plans
};

// Per execution context: its own handle and workspace.
class ContextSdpas {
 public:
  static Expected<std::unique_ptr<ContextSdpas>> create(const EngineSdpas& engine,
                                                        const DriverApi& driver);
  ~ContextSdpas();
  uint64_t workspace_bytes() const { return engine_ ? engine_->workspace_bytes() : 0; }
  // Enqueues launch `i` with its argument addresses (Q, K, V, [bias],
  // [seq_len_q, seq_len_kv], O).
  Status run(size_t launch, const std::vector<CUdeviceptr>& args, CUstream stream) const;
  // The eager call before a CUDA-graph capture: run(), but with full
  // sequence lengths of the context's own (the inputs may not be written yet,
  // and lengths beyond the tensors would make cuDNN read past them).
  Status warm_up(size_t launch, const std::vector<CUdeviceptr>& args, CUstream stream) const;
  // Enqueues preferred launch `launch` with `setup` (EngineSdpas::setup_at at
  // the current shape). `first`: this context's first run of the set-up (an
  // eager run outside any capture: warm_up_at), where a plan refused on the
  // context's handle may be replaced by one of its own.
  Status run_at(size_t launch, const SdpaSetup& setup, const std::vector<CUdeviceptr>& args,
                CUstream stream) const;
  // Runs `setup` once eagerly unless this context has (before a capture
  // records it: whatever cuDNN does on a plan's first run stays outside).
  Status warm_up_at(size_t launch, const SdpaSetup& setup, const std::vector<CUdeviceptr>& args,
                    CUstream stream);
  bool warmed(const SdpaSetup* setup) const { return warmed_setups_.count(setup) > 0; }
  // True until warmed_up() is called: the context has not run its attention calls yet.
  bool needs_warm_up() const { return engine_ && engine_->api() && !warmed_up_; }
  void warmed_up() { warmed_up_ = true; }

 private:
  const EngineSdpas* engine_ = nullptr;
  const DriverApi* driver_ = nullptr;
  cudnnHandle_t handle_ = nullptr;
  CUdeviceptr workspace_ = 0;
  bool warmed_up_ = false;
  // Plans of its own, made only if cuDNN refused an engine's plan on this
  // context's handle (see run).
  mutable std::map<const SdpaSetup*, cudnnBackendDescriptor_t> own_plans_;
  std::set<const SdpaSetup*> warmed_setups_;  // per-shape set-ups this context has run
  Status run_setup(size_t launch, const SdpaSetup& s, const std::vector<CUdeviceptr>& args,
                   CUstream stream, bool first) const;
  // Per call with sequence lengths: int32 [B] of seq_q then [B] of seq_kv (warm_up).
  std::map<const SdpaSetup*, CUdeviceptr> full_lengths_;
};

// Whether cuDNN on device `device` takes `p` within `workspace_limit` bytes:
// the setup's note (engine, workspace), or the kUnsupported error saying which
// step cuDNN refused. Needs a GPU (builds the plan there), for a compiler
// that decides between cuDNN and its generated kernel on the target machine.
Expected<std::string> probe_sdpa(const engine::SdpaParams& p, uint64_t workspace_limit,
                                 int device = 0);

}  // namespace graphc::runtime
