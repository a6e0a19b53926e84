// Library set-ups made per shape and kept for an engine's life, built either
// now on the caller's thread or on one background worker thread, so that a
// shape seen for the first time need not wait for its plan (a cuDNN attention
// plan takes ~1.4 s of host time on an H100; runtime/cudnn_sdpa.h).
//
// Keyed by what decides the set-up (a call's encoded parameters at a shape:
// launches and shapes with equal calls share one). A key maps to its set-up
// or to the library's refusal, which is kept too, so a refused shape is asked
// about once and then runs the generated fallback. `build_now` keeps only
// kUnsupported refusals (other errors are returned, and the next use tries
// again); a background job has no caller to return an error to, so any error
// it ends with is kept as a refusal (its job says why, e.g. in a warning).
//
// Threads: lookups, queueing and the results are guarded by one mutex that is
// never held while a set-up is being made, so finding a ready entry is a map
// lookup even while the worker builds. `build_now` calls are serialised with
// each other (their set-ups share the caller's library handle). The worker
// starts on the first queued job and runs `start` first on its own thread
// (binding the device context, making its own library handle); `stop` (and
// the destructor) drops the jobs not started, waits for the running one and
// joins. Entries are never dropped before `clear` (CUDA graphs captured with a
// set-up may still run it).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "support/status.h"

namespace graphc::runtime {

template <typename T>
class BackgroundPlans {
 public:
  struct Entry {
    std::shared_ptr<const T> value;  // null: refused
    std::string refusal;             // why, when refused
  };
  using Job = std::function<Expected<std::shared_ptr<const T>>()>;

  // `start` (optional) runs on the worker thread before its first job; an
  // error there refuses every job with its message.
  explicit BackgroundPlans(std::function<Status()> start = nullptr) : start_(std::move(start)) {}
  ~BackgroundPlans() { stop(); }
  BackgroundPlans(const BackgroundPlans&) = delete;
  BackgroundPlans& operator=(const BackgroundPlans&) = delete;

  // The entry of `key` once made (a set-up or a refusal), else null.
  const Entry* find(const std::string& key) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : &it->second;
  }

  // find(key); when there is no entry, `job` is queued for the worker unless
  // the key is queued or being made already (once per key), and null is
  // returned ("not ready"). `queued` (optional): whether this call queued it.
  // After stop() nothing is queued.
  const Entry* find_or_queue(const std::string& key, Job job, bool* queued = nullptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (queued) *queued = false;
    if (auto it = entries_.find(key); it != entries_.end()) return &it->second;
    if (stopping_ || !pending_.insert(key).second) return nullptr;
    queue_.emplace_back(key, std::move(job));
    if (queued) *queued = true;
    if (!worker_.joinable()) worker_ = std::thread([this] { work(); });
    wake_.notify_all();
    return nullptr;
  }

  // The entry of `key`, made now on this thread with `make` when there is
  // none (waiting for a background build of the same key instead of making
  // it twice). `fresh` (optional): whether this call made it.
  Expected<const Entry*> build_now(const std::string& key, const Job& make, bool* fresh = nullptr) {
    if (fresh) *fresh = false;
    std::lock_guard<std::mutex> building(build_mutex_);
    {
      std::unique_lock<std::mutex> lock(mutex_);
      idle_.wait(lock, [&] { return !pending_.count(key) || stopping_; });
      if (auto it = entries_.find(key); it != entries_.end()) return &it->second;
      ++made_;
    }
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
    std::lock_guard<std::mutex> lock(mutex_);
    if (fresh) *fresh = true;
    return &entries_.emplace(key, std::move(entry)).first->second;
  }

  // Bumped each time a background job's entry lands: a holder of results
  // that were not ready compares it to know when to look again.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  // Jobs queued or running.
  size_t pending() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return pending_.size();
  }
  // Waits until no job is queued or running, at most `timeout`; whether so.
  bool wait_idle(std::chrono::milliseconds timeout) const {
    std::unique_lock<std::mutex> lock(mutex_);
    return idle_.wait_for(lock, timeout, [&] { return pending_.empty(); });
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size();
  }
  // How many times a set-up was made, on either thread (a key once, unless
  // build_now's make failed and was tried again).
  size_t made() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return made_;
  }

  // Drops the jobs not started, waits for the running one, joins the worker.
  // Idempotent; nothing is queued afterwards.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      for (const auto& [key, job] : queue_) pending_.erase(key);
      queue_.clear();
      wake_.notify_all();
      idle_.notify_all();
    }
    if (worker_.joinable() && worker_.get_id() != std::this_thread::get_id()) worker_.join();
  }
  // Drops every entry (an owner about to destroy the handle they were made
  // with); call stop() first.
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.clear();
  }

 private:
  void work() {
    Status started = start_ ? start_() : Status::ok_status();
    for (;;) {
      std::pair<std::string, Job> next;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        next = std::move(queue_.front());
        queue_.pop_front();
      }
      Entry entry;
      if (!started.ok()) {
        entry.refusal = started.message();
      } else {
        Expected<std::shared_ptr<const T>> made = next.second();
        if (made.ok() && *made)
          entry.value = std::move(*made);
        else
          entry.refusal = made.ok() ? "a per-shape set-up made nothing" : made.status().message();
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        entries_.emplace(next.first, std::move(entry));
        pending_.erase(next.first);
        ++made_;
        generation_.fetch_add(1, std::memory_order_acq_rel);
      }
      idle_.notify_all();
    }
  }

  std::function<Status()> start_;
  mutable std::mutex mutex_;
  mutable std::condition_variable idle_;  // a job finished (or stopping)
  std::condition_variable wake_;          // a job was queued (or stopping)
  std::map<std::string, Entry> entries_;  // a std::map: entries never move
  std::deque<std::pair<std::string, Job>> queue_;
  std::set<std::string> pending_;  // keys queued or being made
  std::atomic<uint64_t> generation_{0};
  std::mutex build_mutex_;  // serialises build_now
  std::thread worker_;
  bool stopping_ = false;
  size_t made_ = 0;
};

}  // namespace graphc::runtime
