// Library set-ups made per shape on first use and kept for the engine's life
// (the cuDNN attention plans of an engine that serves a shape range:
// runtime/cudnn_sdpa.h). Keyed by what decides the set-up (the call's encoded
// parameters at the shape, so launches and shapes with equal calls share one);
// a key maps to the set-up, or to the library's refusal (kUnsupported), which
// is kept too, so a shape the library refuses is asked about once and then
// runs the generated fallback. Other errors are returned and not kept (the
// next use tries again). Thread-safe: contexts on several threads share it;
// `make` runs under the lock, once per key. Entries are never dropped (each
// is a few descriptors; CUDA graphs captured with a set-up may still run it).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "support/status.h"

namespace graphc::runtime {

template <typename T>
class ShapePlanCache {
 public:
  struct Entry {
    std::shared_ptr<const T> value;  // null: refused
    std::string refusal;             // the library's reason, when refused
  };
  using Make = std::function<Expected<std::shared_ptr<const T>>()>;

  // The entry of `key`, made with `make` when there is none yet; `fresh`
  // (optional) says whether it was made by this call.
  Expected<const Entry*> get(const std::string& key, const Make& make, bool* fresh = nullptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (fresh) *fresh = false;
    if (auto it = entries_.find(key); it != entries_.end()) return &it->second;
    ++made_;
    Expected<std::shared_ptr<const T>> made = make();
    Entry entry;
    if (made.ok()) {
      if (!*made) return internal_error("a per-shape set-up made nothing");
      entry.value = std::move(*made);
    } else if (made.status().code() == ErrorCode::kUnsupported) {
      entry.refusal = made.status().message();
    } else {
      return made.status();
    }
    if (fresh) *fresh = true;
    return &entries_.emplace(key, std::move(entry)).first->second;
  }
  // Drops every entry (an owner destroying the library handle the set-ups were made with).
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.clear();
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size();
  }
  // How many times `make` ran (for tests: a shape is set up once).
  size_t made() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return made_;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, Entry> entries_;
  size_t made_ = 0;
};

}  // namespace graphc::runtime
