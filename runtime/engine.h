// The runtime API, shaped like TensorRT's: an Engine is loaded once per device
// (code modules for this SM loaded, weights uploaded once, kernels resolved)
// and is immutable afterwards, so any number of threads may share it. Each
// thread makes its own ExecutionContext (own arena, own input/output buffers
// or the caller's device pointers, own CUDA graph) and enqueues it on a
// stream. Every CUDA driver call is checked; errors come back as Status.
//
//   auto engine = Engine::create(executable);          // or runtime::load_engine_file(path)
//   auto ctx = (*engine)->create_context();
//   (*ctx)->set_tensor_address("x", device_ptr);       // optional: else its own buffer
//   (*ctx)->enqueue(stream);  (*ctx)->synchronize();
#pragma once

#include <cuda.h>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "runtime/executable.h"
#include "support/status.h"

namespace graphc::runtime {

struct DriverApi;

struct BindingInfo {
  std::string name;
  bool is_input = false;
  int32_t dtype = 0;  // ONNX TensorProto numbering (= ir::DType); 0 when the Executable has none
  std::vector<int64_t> shape;
  int64_t bytes = 0;  // exact size of the binding's buffer
};

struct EngineOptions {
  int device = 0;  // CUDA device ordinal
  // Weights streamed from an engine file go through two pinned staging
  // buffers of this size (runtime/weights_upload.h).
  size_t upload_chunk_bytes = size_t{64} << 20;  // = kDefaultUploadChunkBytes
  // Weights from an engine file are read into the page cache by a thread of
  // their own from the start of loading, at most this far ahead of the upload
  // (PageCacheWarmer); 0: off.
  uint64_t read_ahead_bytes = uint64_t{1} << 30;
};

// Where loading an engine spent its time (Engine::load_timeline), to find
// what bounds a cold start: each step's end in ms since Engine::create began.
struct LoadTimeline {
  // "driver", "context", "modules", "weights read" (the read-ahead thread
  // reached the end of the weights), "libraries" (cuBLASLt/cuDNN set-up, on
  // its own thread), "weights uploaded"; in the order they ended.
  std::vector<std::pair<std::string, double>> steps;
  double upload_read_ms = 0;       // the upload's time inside reads (the disk, when cold)
  double upload_copy_wait_ms = 0;  // ... waiting for a staging buffer's copy to finish
};

// Engine::refit_weights.
struct RefitOptions {
  // Read the new weights once to check their checksum before the device's are
  // overwritten, so a damaged file leaves the engine as it was (the file is
  // read twice; the second time usually from the page cache). Off: one pass,
  // and a damaged file leaves the engine unusable until a refit succeeds.
  bool verify_first = true;
  size_t upload_chunk_bytes = size_t{64} << 20;  // = kDefaultUploadChunkBytes
};

class ExecutionContext;
struct ContextOptions;
struct ConvSetup;
struct SdpaSetup;

class Engine : public std::enable_shared_from_this<Engine> {
 public:
  // Validates `exe` (slot bounds, launch arguments, bindings), loads its
  // modules on `options.device` and uploads the weights.
  static Expected<std::shared_ptr<Engine>> create(const Executable& exe,
                                                  const EngineOptions& options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Inputs first (in graph order), then outputs.
  const std::vector<BindingInfo>& bindings() const;
  int num_inputs() const;
  int num_outputs() const;
  // Index into bindings(), or nullopt.
  std::optional<int> binding_index(std::string_view name) const;

  // Shape ranges (an engine built with --min-shape/--opt-shape/--max-shape):
  // bindings() then describe each binding at its largest shape, and a context
  // runs at the shapes set on it (ExecutionContext::set_input_shape).
  bool has_shape_ranges() const;
  int num_profiles() const;  // 1 for an engine of fixed shapes
  // Input `name`'s min/opt/max shapes in `profile` (fixed shapes: its shape thrice).
  Expected<ShapeRanges::InputRange> input_range(std::string_view name, int profile = 0) const;

  int device() const;
  const std::string& device_name() const;  // "NVIDIA H100 80GB HBM3 (sm_90)"
  int64_t weights_bytes() const;           // device memory the engine holds
  int64_t arena_bytes() const;             // device scratch each context allocates
  int64_t io_bytes() const;                // each context's own input/output buffers
  const LoadTimeline& load_timeline() const;

  // Replaces the weights on the device, in place, with `file`'s: an engine
  // that is this one but for its weights (graphc refit of this engine, or a
  // graphc build with the same options of a model of the same structure).
  // Its manifest must equal the loaded one's, refit record included; an
  // engine without a refit record (built before refit support) is refused.
  // Streams through the same pinned staging as a load, checksummed. The
  // caller must make sure no context of this engine runs meanwhile: every
  // enqueue finished (synchronize each context) and none issued until this
  // returns. Contexts stay valid and use the new weights from their next
  // enqueue (their CUDA graphs point at the same device buffer). Should the
  // upload fail part-way (a CUDA error, or the file changed after its check),
  // contexts refuse to run until a refit succeeds.
  Status refit_weights(const engine::EngineFile& file, const RefitOptions& options = {});

  // A new context sharing this engine's modules and weights (the engine stays
  // alive while any context does).
  Expected<std::unique_ptr<ExecutionContext>> create_context(const ContextOptions& options) const;
  Expected<std::unique_ptr<ExecutionContext>> create_context() const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct ContextOptions {
  bool cuda_graph = true;  // replay the launch sequence as one CUDA graph
  // With shape ranges: CUDA graphs kept per set of shapes, the least recently
  // used dropped beyond this many (a shape seen again replays its graph; a
  // new one is captured on its first enqueue). At least 1.
  int max_cached_graphs = 8;
  // Allocate a device buffer per binding now. Without them, every binding
  // needs set_tensor_address before enqueue.
  bool allocate_io_buffers = true;
};

// ExecutionContext::profile: each launch timed on its own.
struct ProfileOptions {
  int iterations = 100;       // timed runs of the whole launch sequence
  int warmup_iterations = 2;  // untimed runs first
};

// One launch's GPU time over the timed runs.
struct LaunchTiming {
  int launch = 0;    // position in the launch sequence
  std::string name;  // the engine's kernel name; "output copy NAME" for a final copy
  std::string kind;  // "generated fused elementwise", "cublasLt matmul", "copy", ...
  std::vector<std::string> onnx_nodes;  // the ONNX nodes it computes
  // The engine's roofline model of the step: FLOPs, HBM bytes and what the
  // FLOPs run on ("fp16-tc", "fp32", ...); 0 / empty when not recorded.
  uint64_t flops = 0, hbm_bytes = 0;
  std::string math;
  double median_us = 0, min_us = 0, max_us = 0;
};

struct LaunchProfile {
  std::vector<LaunchTiming> launches;  // in launch order
  int iterations = 0;
  // The stream could not be held back while a chunk of launches was
  // enqueued (a host function waited past its time-out), so some times may
  // include the host's launch latency. See ExecutionContext::profile.
  bool host_gaps = false;
  // The whole sequence launched one by one as the host issues it (no hold,
  // no per-launch events): median over the same number of runs. Minus the
  // CUDA graph's time, the host launch overhead the graph removes.
  double one_by_one_median_us = 0;
  double sum_median_us() const;
};

// Per-thread execution state. Not thread-safe: use one per thread; a context
// must not be enqueued again on another stream before its last enqueue has
// finished (its arena would be shared), exactly as with TensorRT. Destroy it
// only after its last enqueue finished (synchronize()).
class ExecutionContext {
 public:
  ~ExecutionContext();
  ExecutionContext(const ExecutionContext&) = delete;
  ExecutionContext& operator=(const ExecutionContext&) = delete;

  const Engine& engine() const { return *engine_; }

  // Engines with shape ranges: the profile the context runs in (TensorRT's
  // setOptimizationProfile; 0 at first); the inputs return to its opt shapes.
  Status set_optimization_profile(int profile);
  int optimization_profile() const;
  // The shape input `name` has from the next enqueue on: rank and every dim
  // checked against the profile now (an error names the input, the dim and
  // the range). Engines of fixed shapes accept only their own shape.
  Status set_input_shape(std::string_view name, std::span<const int64_t> dims);
  // The shape a binding has at the inputs' current shapes (outputs are
  // computed from them; an error where two inputs disagree on a shared dim).
  Expected<std::vector<int64_t>> tensor_shape(std::string_view name);
  // Its bytes at those shapes: what the host copies below move.
  Expected<int64_t> tensor_bytes(int binding);

  // Binds a binding to caller-owned device memory of at least its bytes()
  // (0 restores the context's own buffer, if it has one). The CUDA graph is
  // rebuilt at the next enqueue.
  Status set_tensor_address(std::string_view name, CUdeviceptr address);
  Expected<CUdeviceptr> tensor_address(std::string_view name) const;
  CUdeviceptr tensor_address(int binding) const;

  // Enqueues the whole launch sequence on `stream` (nullptr: the context's own
  // stream). Returns once enqueued; synchronize() waits for it.
  Status enqueue(CUstream stream = nullptr);
  // Waits for the last enqueue's stream.
  Status synchronize();
  CUstream stream() const;

  // Asynchronous copies between host memory and a binding's device buffer
  // (sizes must equal the binding's bytes at the current shapes: tensor_bytes).
  Status copy_input_from_host(int binding, const void* data, size_t bytes,
                              CUstream stream = nullptr);
  Status copy_output_to_host(int binding, void* data, size_t bytes, CUstream stream = nullptr);

  // Convenience: host inputs in (binding order, exact sizes), enqueue, host
  // outputs out, synchronized.
  Status run_host(std::span<const std::string_view> inputs, std::span<std::string> outputs,
                  CUstream stream = nullptr);

  // Times every launch of the sequence on its own, without the CUDA graph: a
  // CUDA event before and after each kernel, copy and library call on
  // `stream` (nullptr: the context's own), over options.iterations runs on
  // the bound inputs; the median per launch. While the host enqueues a chunk
  // of launches the stream waits on a host function, so the GPU then runs
  // them back to back and the events time the work, not the host's launch
  // latency. Then the whole sequence launched one by one as the host issues
  // it (LaunchProfile::one_by_one_median_us): that minus the CUDA graph's
  // end-to-end time is the launch overhead the graph removes. Synchronizes
  // before returning; the outputs are those of an ordinary run.
  Expected<LaunchProfile> profile(const ProfileOptions& options = {}, CUstream stream = nullptr);

  // Device memory this context holds: arena + its own input/output buffers +
  // its library workspaces (engines with library calls).
  int64_t device_bytes() const;
  // Its cuBLASLt and cuDNN workspaces: sized at load to what the algorithms
  // chosen for this GPU need (at most each call's recorded limit).
  int64_t workspace_bytes() const;
  // Engines with a shape range: how many attention launches run cuDNN's
  // fused SDPA at the shapes of the last enqueue (the rest run their
  // generated kernels: where cuDNN refuses the shape, or while the shape's
  // plan is still being built in the background).
  int cudnn_attention_launches() const;

 private:
  friend class Engine;
  struct Impl;
  ExecutionContext(std::shared_ptr<const Engine> engine, std::unique_ptr<Impl> impl);
  // Addresses and shapes brought up to date, and the CUDA graph of these
  // shapes found or captured.
  Status prepare();
  Status bind_addresses();
  Status resolve_attention();
  Status pick_attention(std::vector<const SdpaSetup*>& choices);
  Status capture_graph(CUgraphExec* out);
  Status launch_all(CUstream stream);
  // Conv launch i's cuDNN set-up at the context's shapes.
  Expected<const ConvSetup*> conv_setup(size_t launch) const;
  // Launches [begin, end) of the launch sequence, loops run whole
  // (runtime/loop_launch.h); `depth`: loops around it.
  Status launch_range(size_t begin, size_t end, CUstream stream, int depth);
  // Step i of the launch sequence: launch i, then the final output copies.
  size_t launch_steps() const;
  Status launch_step(size_t step, CUstream stream);
  Status launch_kernel(size_t launch, CUstream stream);  // its generated kernel
  std::shared_ptr<const Engine> engine_;
  std::unique_ptr<Impl> impl_;
};

// A pair of CUDA events on the engine's device, for timing stream work (it
// keeps the engine alive).
class GpuTimer {
 public:
  static Expected<std::unique_ptr<GpuTimer>> create(const Engine& engine);
  ~GpuTimer();
  GpuTimer(const GpuTimer&) = delete;
  GpuTimer& operator=(const GpuTimer&) = delete;
  Status start(CUstream stream);
  Status stop(CUstream stream);
  // Waits for the stop event; milliseconds between start and stop.
  Expected<float> elapsed_ms();

 private:
  GpuTimer() = default;
  std::shared_ptr<const Engine> engine_;  // keeps the device context alive
  const DriverApi* api_ = nullptr;
  CUcontext context_ = nullptr;
  CUevent start_ = nullptr, stop_ = nullptr;
};

// Page-locked host memory (cuMemHostAlloc) for the engine's device: copies
// from and to it are truly asynchronous and run at full PCIe/NVLink speed, so
// H2D/D2H timings measure the transfer (as trtexec's do). Keeps the engine alive.
class PinnedBuffer {
 public:
  static Expected<std::unique_ptr<PinnedBuffer>> create(const Engine& engine, size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* data() { return data_; }
  size_t size() const { return size_; }

 private:
  PinnedBuffer() = default;
  std::shared_ptr<const Engine> engine_;
  const DriverApi* api_ = nullptr;
  CUcontext context_ = nullptr;
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace graphc::runtime
