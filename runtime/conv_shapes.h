// cuDNN convolutions over shape ranges, the parts that need no GPU: a conv
// launch's descriptor at the context's shapes (its recorded sizes evaluated,
// engine::conv_params_at), the descriptors at each profile's least, opt and
// largest shapes (where the engine plans the workspace every context
// allocates), and the cache of set-ups made per shape on first use.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine_format/conv_params.h"
#include "runtime/executable.h"
#include "runtime/shape_state.h"
#include "support/status.h"

namespace graphc::runtime {

// Launch `l` (a conv with run-time sizes) at the shapes `shapes` resolved; its
// operands checked to fit their tensors at those shapes.
Expected<engine::ConvParams> conv_params_at_shapes(const Launch& l, const ShapeState& shapes);

// Conv launch `launch` of `exe` at every profile's least, opt and largest
// input shapes (duplicates dropped, in that order); its built params when its
// sizes do not vary.
Expected<std::vector<engine::ConvParams>> conv_params_at_profile_corners(const Executable& exe,
                                                                         size_t launch);

// Set-ups made per shape on first use and kept for the engine's life, keyed
// by the call's encoded parameters at the shape, so launches with the same
// descriptor share one. Thread-safe; a failed make is not kept (the next use
// tries again and reports again).
template <class Setup>
class ShapeSetupCache {
 public:
  template <class Make>
  Expected<const Setup*> get(const std::string& key, Make&& make) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = made_.find(key); it != made_.end()) return it->second.get();
    Expected<std::unique_ptr<Setup>> fresh = make();
    if (!fresh.ok()) return fresh.status();
    return made_.emplace(key, std::move(*fresh)).first->second.get();
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return made_.size();
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    made_.clear();
  }

 private:
  mutable std::mutex mutex_;
  mutable std::map<std::string, std::unique_ptr<Setup>> made_;
};

}  // namespace graphc::runtime
