// Private to the cuDNN attention runtime, shared by its three pieces:
// cudnn_sdpa_graph.cpp (the operation graph), cudnn_sdpa_plan.cpp (engine
// choice and execution plans) and cudnn_sdpa.cpp (the variant pack, engine and
// context set-up, execution). cuDNN error text, the descriptor owner, the
// plan a setup holds, and the functions one piece calls in another.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cudnn_sdpa.h"

namespace graphc::runtime {

// "...; cuDNN's last error: <text>" (empty when cuDNN has none).
// cuDNN's message for the last error of this thread, read (which clears it)
// and folded onto one line, at most `limit` characters.
inline std::string take_last_error(const CudnnApi& api, size_t limit = 1500) {
  char text[8192] = {};
  if (api.cudnnGetLastErrorString) api.cudnnGetLastErrorString(text, sizeof text - 1);
  std::string out;
  for (const char* c = text; *c && out.size() < limit; ++c) {
    if (*c == '\n') {
      if (!out.empty() && out.back() != ' ') out += " | ";
      continue;
    }
    out += *c;
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '|')) out.pop_back();
  return out;
}

// Reading clears it: before a step, so that what a failure reports is its own.
inline void drain_last_error(const CudnnApi& api) { (void)take_last_error(api, 0); }

inline std::string last_error(const CudnnApi& api) {
  const std::string text = take_last_error(api);
  return text.empty() ? text : "; cuDNN's last error: " + text;
}

// BAD_PARAM (2xxx) and NOT_SUPPORTED (3xxx): cuDNN refuses what it was given.
inline bool refused(cudnnStatus_t st) { return st >= 2000 && st < 4000; }

// OK, or "<what>: cuDNN error <code> (<name>); cuDNN's last error: <text>",
// kUnsupported when cuDNN refused, kDevice otherwise.
inline Status sdpa_status(const CudnnApi& api, cudnnStatus_t st, const std::string& what) {
  if (st == CUDNN_STATUS_SUCCESS) return Status::ok_status();
  const char* name = api.cudnnGetErrorString ? api.cudnnGetErrorString(st) : nullptr;
  std::string message = fmt::format("{}: cuDNN error {} ({}){}", what, static_cast<int>(st),
                                    name ? name : "", last_error(api));
  return Status(refused(st) ? ErrorCode::kUnsupported : ErrorCode::kDevice, std::move(message));
}

// One backend descriptor, destroyed with its owner.
class Desc {
 public:
  Desc() = default;
  Desc(const CudnnApi* api, cudnnBackendDescriptor_t d) : api_(api), d_(d) {}
  Desc(Desc&& o) noexcept : api_(o.api_), d_(std::exchange(o.d_, nullptr)) {}
  Desc& operator=(Desc&& o) noexcept {
    if (this != &o) {
      reset();
      api_ = o.api_;
      d_ = std::exchange(o.d_, nullptr);
    }
    return *this;
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  ~Desc() { reset(); }
  void reset() {
    if (d_) api_->cudnnBackendDestroyDescriptor(d_);
    d_ = nullptr;
  }
  cudnnBackendDescriptor_t release() { return std::exchange(d_, nullptr); }
  cudnnBackendDescriptor_t get() const { return d_; }

 private:
  const CudnnApi* api_ = nullptr;
  cudnnBackendDescriptor_t d_ = nullptr;
};

// Where plans are made for: a device through a cuDNN handle, or one that
// cuDNN's device-properties descriptor describes (no GPU needed).
struct Target {
  cudnnHandle_t handle = nullptr;
  cudnnBackendDescriptor_t device = nullptr;
};

class SdpaPlan {
 public:
  explicit SdpaPlan(const CudnnApi& api) : api(&api) {}
  ~SdpaPlan() {  // the plan, then what it was made of, newest first
    plan.reset();
    config.reset();
    while (!owned.empty()) owned.pop_back();
  }
  SdpaPlan(const SdpaPlan&) = delete;
  SdpaPlan& operator=(const SdpaPlan&) = delete;
  const CudnnApi* api;
  // Declared in creation order: destroyed in reverse (the plan first).
  std::vector<Desc> owned;  // tensors, operations, the operation graph, engines
  Desc config;              // the engine configuration the plan runs
  Desc plan;
  cudnnBackendDescriptor_t graph = nullptr;  // in `owned`
  // The variant pack's non-virtual tensors: ids, and where each comes from
  // (an operand index, or a by-value host scalar below).
  std::vector<int64_t> uids;
  std::vector<int> sources;        // >= 0: SdpaOperands slot; < 0: -1 - index into scalars
  std::array<float, 3> scalars{};  // scale, -inf (padding), -inf (causal): stable addresses
  // cuDNN documents execution plans as unsafe to execute from several threads
  // at once; contexts on different threads serialise their (host-side) enqueues.
  mutable std::mutex execute_mutex;
};

// Operand slots of SdpaOperands for the variant pack.
enum Slot : int { kSlotQ, kSlotK, kSlotV, kSlotBias, kSlotSeqQ, kSlotSeqKv, kSlotO };

// A plan for `config` on `handle` within `limit` bytes of workspace, or why not.
struct PlanTry {
  Desc plan;
  uint64_t workspace = 0;
};
Expected<PlanTry> try_plan(const CudnnApi& api, const Target& target,
                           cudnnBackendDescriptor_t config, uint64_t limit,
                           const std::string& what);

// Builds the operation graph (see cudnn_sdpa.h) into `plan`
// (cudnn_sdpa_graph.cpp).
Status build_graph(const CudnnApi& api, cudnnHandle_t handle, const engine::SdpaParams& p,
                   SdpaPlan& plan, bool finalize_graph = true);

// The engine configuration of the params' recorded engine (no knobs set),
// made on `plan`'s graph (cudnn_sdpa_graph.cpp).
Expected<Desc> recorded_config(const CudnnApi& api, const Target& target, SdpaPlan& plan,
                               int64_t index);

}  // namespace graphc::runtime
