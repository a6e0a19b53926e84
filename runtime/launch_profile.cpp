// ExecutionContext::profile's timing loop: a CUDA event pair around every
// launch, the stream held back by a host function while each chunk of
// launches is enqueued, medians over the timed runs.
#include "runtime/launch_profile.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <limits>
#include <mutex>

namespace graphc::runtime {

namespace {

// Launches enqueued behind one hold: few enough that the stream's queue of
// pending work never fills while it is held (which would block the host
// inside the driver until the hold timed out).
constexpr size_t kStepsPerHold = 64;
// A hold that outlasts this lets the stream go, and the rest of the warm-up
// or of the timed runs is not held: a safety valve, reached only when the
// driver (or a tool such as compute-sanitizer, which may wait for each
// launch) blocks the host while it enqueues.
constexpr auto kHoldTimeout = std::chrono::milliseconds(2000);

// Holds a stream back with a host function that waits until the host has
// enqueued the work behind it, so the GPU then runs that work back to back.
// Host functions run in stream order, so the k-th to run waits for the k-th
// open(). It must outlive every host function enqueued (synchronize first).
class StreamGate {
 public:
  Status hold(const DriverApi& api, CUstream stream) {
    return check_cuda(api, api.cuLaunchHostFunc(stream, &StreamGate::wait, this),
                      "holding the stream back while launches are enqueued (cuLaunchHostFunc)");
  }
  void open() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++opened_;
    }
    opened_cv_.notify_all();
  }
  bool timed_out() {
    std::lock_guard<std::mutex> lock(mutex_);
    return timed_out_;
  }
  void forget_time_outs() {
    std::lock_guard<std::mutex> lock(mutex_);
    timed_out_ = false;
  }

 private:
  // Runs on a driver thread: no CUDA calls allowed here.
  static void CUDA_CB wait(void* self) {
    auto* gate = static_cast<StreamGate*>(self);
    std::unique_lock<std::mutex> lock(gate->mutex_);
    const int64_t mine = ++gate->run_;
    if (!gate->opened_cv_.wait_for(lock, kHoldTimeout, [&] { return gate->opened_ >= mine; }))
      gate->timed_out_ = true;
  }
  std::mutex mutex_;
  std::condition_variable opened_cv_;
  int64_t opened_ = 0, run_ = 0;
  bool timed_out_ = false;
};

// CUDA events, destroyed with the set.
struct EventSet {
  const DriverApi* api = nullptr;
  std::vector<CUevent> events;
  ~EventSet() {
    for (CUevent e : events)
      if (e) api->cuEventDestroy(e);
  }
};

double median_of(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (static_cast<double>(v[n / 2 - 1]) + v[n / 2]) / 2;
}

// When the engine names no kind.
std::string default_kind(const Launch& l) {
  if (l.matmul()) return "cublasLt matmul";
  if (l.conv()) return "cudnn conv";
  return l.is_copy() ? "copy" : "generated";
}

}  // namespace

double LaunchProfile::sum_median_us() const {
  double sum = 0;
  for (const auto& l : launches) sum += l.median_us;
  return sum;
}

std::vector<LaunchTiming> profile_step_names(const Engine::Impl& e) {
  std::vector<LaunchTiming> steps;
  for (size_t i = 0; i < e.exe.launches.size(); ++i) {
    const Launch& l = e.exe.launches[i];
    LaunchTiming t;
    t.launch = static_cast<int>(i);
    t.name = !l.label().empty() ? l.label() : fmt::format("launch {}", i);
    t.kind = !l.kind.empty() ? l.kind : default_kind(l);
    t.onnx_nodes = l.onnx_nodes;
    // The modelled FLOPs and bytes are one shape's; an engine serving a
    // range runs others, so its profile shows no roofline rather than a wrong one.
    if (!e.exe.shape_ranges) {
      t.flops = l.flops;
      t.hbm_bytes = l.hbm_bytes;
      t.math = l.math;
    }
    steps.push_back(std::move(t));
  }
  for (const auto& [slot, binding] : e.output_copies) {
    LaunchTiming t;
    t.launch = static_cast<int>(steps.size());
    t.name = "output copy " + e.bindings[static_cast<size_t>(binding)].name;
    t.kind = "copy";
    // Reads the slot and writes the binding.
    t.hbm_bytes = 2 * static_cast<uint64_t>(e.exe.tensors[static_cast<size_t>(slot)].bytes);
    steps.push_back(std::move(t));
  }
  return steps;
}

Expected<LaunchProfile> profile_launch_steps(const DriverApi& api, std::vector<LaunchTiming> steps,
                                             const ProfileOptions& options, CUstream stream,
                                             const std::function<Status(size_t)>& launch_step) {
  if (options.iterations < 1 || options.iterations > 1000000)
    return invalid_argument("profile: iterations must be between 1 and 1000000, got {}",
                            options.iterations);
  if (options.warmup_iterations < 0 || options.warmup_iterations > 1000000)
    return invalid_argument("profile: warm-up iterations must be between 0 and 1000000, got {}",
                            options.warmup_iterations);
  const size_t n = steps.size();
  if (n == 0) {  // nothing runs on the device (every output is an input)
    LaunchProfile empty;
    empty.iterations = options.iterations;
    return empty;
  }
  EventSet events{&api, std::vector<CUevent>(2 * n, nullptr)};  // before/after of step i: 2i, 2i+1
  for (CUevent& e : events.events)
    GRAPHC_CU(api, cuEventCreate(&e, CU_EVENT_DEFAULT), "creating a profiling event");
  std::vector<std::vector<float>> samples(n);
  // Heap-allocated: if the stream cannot be synchronized (a sticky error),
  // a host function may still refer to it, so it is then left allocated.
  auto gate = std::make_unique<StreamGate>();
  bool hold = true;
  const int runs = options.warmup_iterations + options.iterations;
  for (int run = 0; run < runs; ++run) {
    Status enqueued = Status::ok_status();
    for (size_t first = 0; first < n && enqueued.ok(); first += kStepsPerHold) {
      hold = hold && !gate->timed_out();
      bool held = false;
      if (hold) {
        enqueued = gate->hold(api, stream);
        held = enqueued.ok();
      }
      for (size_t i = first; i < std::min(n, first + kStepsPerHold) && enqueued.ok(); ++i) {
        enqueued = check_cuda(api, api.cuEventRecord(events.events[2 * i], stream),
                              "recording a profiling event");
        if (enqueued.ok()) {
          enqueued = launch_step(i);
          if (!enqueued.ok())
            enqueued = enqueued.with_context(fmt::format("profiling '{}'", steps[i].name));
        }
        if (enqueued.ok())
          enqueued = check_cuda(api, api.cuEventRecord(events.events[2 * i + 1], stream),
                                "recording a profiling event");
      }
      if (held) gate->open();
    }
    Status synced =
        check_cuda(api, api.cuStreamSynchronize(stream), "running the profiled launches");
    if (!synced.ok()) {
      (void)gate.release();  // a host function may still be pending on the broken stream
      return enqueued.ok() ? synced : enqueued;
    }
    RETURN_IF_ERROR(enqueued);
    if (run + 1 == options.warmup_iterations) {  // a slow first enqueue does not count
      gate->forget_time_outs();
      hold = true;
    }
    if (run < options.warmup_iterations) continue;
    for (size_t i = 0; i < n; ++i) {
      float ms = 0;
      GRAPHC_CU(api, cuEventElapsedTime(&ms, events.events[2 * i], events.events[2 * i + 1]),
                "reading a profiling event");
      samples[i].push_back(ms);
    }
  }
  LaunchProfile profile;
  profile.iterations = options.iterations;
  // The same sequence as enqueue without a graph: only the host paces it.
  std::vector<float> whole;
  for (int run = 0; run < options.iterations; ++run) {
    GRAPHC_CU(api, cuEventRecord(events.events[0], stream), "recording a profiling event");
    for (size_t i = 0; i < n; ++i) RETURN_IF_ERROR(launch_step(i));
    GRAPHC_CU(api, cuEventRecord(events.events[1], stream), "recording a profiling event");
    GRAPHC_CU(api, cuStreamSynchronize(stream), "running the launches one by one");
    float ms = 0;
    GRAPHC_CU(api, cuEventElapsedTime(&ms, events.events[0], events.events[1]),
              "reading a profiling event");
    whole.push_back(ms);
  }
  profile.one_by_one_median_us = median_of(whole) * 1000;
  profile.host_gaps = gate->timed_out();
  for (size_t i = 0; i < n; ++i) {
    auto [lo, hi] = std::minmax_element(samples[i].begin(), samples[i].end());
    steps[i].median_us = median_of(samples[i]) * 1000;
    steps[i].min_us = static_cast<double>(*lo) * 1000;
    steps[i].max_us = static_cast<double>(*hi) * 1000;
  }
  profile.launches = std::move(steps);
  return profile;
}

Expected<std::vector<float>> fastest_runs_ms(const DriverApi& api, CUstream stream,
                                             const std::vector<std::function<Status()>>& ways,
                                             int reps) {
  // Each way is captured into a CUDA graph and the graph is timed: the way
  // runs as it will inside the context's graph, without the host's enqueue
  // cost (cuDNN's is tens of microseconds, as long as a small attention).
  struct Graphs {
    const DriverApi* api;
    std::vector<CUgraphExec> execs;
    ~Graphs() {
      for (CUgraphExec e : execs)
        if (e) api->cuGraphExecDestroy(e);
    }
  } graphs{&api, std::vector<CUgraphExec>(ways.size(), nullptr)};
  for (size_t w = 0; w < ways.size(); ++w) {
    ASSIGN_OR_RETURN(graphs.execs[w], capture_graph_exec(api, stream, ways[w]));
  }
  EventSet events{&api, {nullptr, nullptr}};
  for (CUevent& e : events.events)
    GRAPHC_CU(api, cuEventCreate(&e, CU_EVENT_DEFAULT), "creating a timing event");
  std::vector<float> fastest(ways.size(), std::numeric_limits<float>::infinity());
  for (int rep = 0; rep < reps; ++rep) {
    for (size_t w = 0; w < ways.size(); ++w) {
      GRAPHC_CU(api, cuEventRecord(events.events[0], stream), "recording a timing event");
      GRAPHC_CU(api, cuGraphLaunch(graphs.execs[w], stream), "launching a timing graph");
      GRAPHC_CU(api, cuEventRecord(events.events[1], stream), "recording a timing event");
      GRAPHC_CU(api, cuEventSynchronize(events.events[1]), "timing a launch");
      float ms = 0;
      GRAPHC_CU(api, cuEventElapsedTime(&ms, events.events[0], events.events[1]),
                "reading a timing event");
      fastest[w] = std::min(fastest[w], ms);
    }
  }
  return fastest;
}

}  // namespace graphc::runtime
