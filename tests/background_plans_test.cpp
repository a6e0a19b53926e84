// runtime/background_plans.h without cuDNN: per-shape set-ups made now or on
// the worker thread, each key once; ready results, refusals and the
// generation counter; the worker's start hook; stop and destruction with jobs
// still queued; a context's per-shape choices over them (shape_choices.h).
// (The cuDNN attention plans that use them: cudnn_sdpa_range.cpp,
// checked on a GPU by tests/gpu/sdpa_range_gpu_test.cpp.)
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/background_plans.h"
#include "runtime/shape_choices.h"

using namespace graphc;
using Plans = runtime::BackgroundPlans<int>;
using Made = Expected<std::shared_ptr<const int>>;
using namespace std::chrono_literals;

namespace {

// A latch the test opens: jobs wait on it, so what is pending can be seen.
class Gate {
 public:
  void open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

}  // namespace

TEST_CASE("set-ups made now are made once per key, refusals kept, failures retried",
          "[background-plans][sdpa-range]") {
  Plans cache;
  int builds = 0;
  auto make = [&](int v) {
    return [&builds, v]() -> Made {
      ++builds;
      if (v < 0) return unsupported("refused at {}", v);
      if (v == 0) return device_error("the library failed");
      return std::make_shared<const int>(v);
    };
  };
  bool fresh = false;
  auto a = cache.build_now("a", make(7), &fresh);
  REQUIRE(a.ok());
  CHECK(fresh);
  CHECK(*(*a)->value == 7);
  auto again = cache.build_now("a", make(8), &fresh);  // kept: not made again
  REQUIRE(again.ok());
  CHECK_FALSE(fresh);
  CHECK(*again == *a);
  CHECK(*(*again)->value == 7);
  auto no = cache.build_now("b", make(-1), &fresh);  // a refusal is an entry: asked once
  REQUIRE(no.ok());
  CHECK(fresh);
  CHECK((*no)->value == nullptr);
  CHECK_THAT((*no)->refusal, Catch::Contains("refused at -1"));
  REQUIRE(cache.build_now("b", make(5)).ok());
  CHECK(builds == 2);
  auto failed = cache.build_now("c", make(0));  // other errors are returned and not kept
  CHECK(failed.status().code() == ErrorCode::kDevice);
  CHECK(cache.find("c") == nullptr);
  auto retried = cache.build_now("c", make(3));
  REQUIRE(retried.ok());
  CHECK(*(*retried)->value == 3);
  CHECK(cache.size() == 3);
  CHECK(cache.made() == 4);
  CHECK(cache.generation() == 0);  // only background results move it
  CHECK(cache.find("a") == *a);    // a ready entry is a lookup

  // Eight threads asking for the same 16 shapes: each is made exactly once.
  Plans shared;
  std::atomic<int> made{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 64; ++i) {
        const int shape = (i * 7 + t) % 16 + 1;
        auto e = shared.build_now(std::to_string(shape), [&]() -> Made {
          ++made;
          return std::make_shared<const int>(shape);
        });
        if (!e.ok() || !(*e)->value || *(*e)->value != shape) ++wrong;
      }
    });
  for (auto& t : threads) t.join();
  CHECK(wrong == 0);
  CHECK(made == 16);
  CHECK(shared.size() == 16);
}

TEST_CASE("background set-ups are queued once per key and seen when ready",
          "[background-plans][sdpa-range]") {
  Gate gate;
  std::atomic<int> runs{0}, elsewhere{0};
  std::thread::id worker;
  int starts = 0;
  Plans plans([&]() -> Status {
    ++starts;  // on the worker, before its first job
    worker = std::this_thread::get_id();
    return Status::ok_status();
  });
  auto job = [&](int v) {
    return [&, v]() -> Made {
      gate.wait();
      ++runs;
      if (std::this_thread::get_id() != worker) ++elsewhere;  // (Catch asserts on this thread only)
      if (v < 0) return unsupported("refused at {}", v);
      if (v == 0) return device_error("the library failed");
      return std::make_shared<const int>(v);
    };
  };
  bool queued = false;
  CHECK(plans.find_or_queue("a", job(7), &queued) == nullptr);  // not ready: the caller goes on
  CHECK(queued);
  CHECK(plans.find_or_queue("a", job(8), &queued) == nullptr);  // queued already
  CHECK_FALSE(queued);
  CHECK(plans.find_or_queue("b", job(-1), &queued) == nullptr);
  CHECK(queued);
  CHECK(plans.find_or_queue("c", job(0), &queued) == nullptr);
  CHECK(plans.pending() == 3);
  CHECK(plans.generation() == 0);
  CHECK(plans.find("a") == nullptr);
  CHECK_FALSE(plans.wait_idle(20ms));

  gate.open();
  REQUIRE(plans.wait_idle(10s));
  CHECK(runs == 3);  // "a" once, not twice
  CHECK(elsewhere == 0);
  CHECK(starts == 1);
  CHECK(worker != std::this_thread::get_id());
  CHECK(plans.generation() == 3);  // one per result
  CHECK(plans.pending() == 0);
  CHECK(plans.made() == 3);
  const auto* a = plans.find_or_queue("a", job(9), &queued);
  REQUIRE(a);
  CHECK_FALSE(queued);
  CHECK(*a->value == 7);
  CHECK(plans.find("a") == a);
  // A refusal is remembered: that shape keeps its fallback, never asked again.
  const auto* b = plans.find_or_queue("b", job(5), &queued);
  REQUIRE(b);
  CHECK_FALSE(queued);
  CHECK(b->value == nullptr);
  CHECK_THAT(b->refusal, Catch::Contains("refused at -1"));
  // So is any other error of a background job (no caller to return it to).
  const auto* c = plans.find("c");
  REQUIRE(c);
  CHECK(c->value == nullptr);
  CHECK_THAT(c->refusal, Catch::Contains("the library failed"));
  CHECK(runs == 3);
  CHECK(plans.generation() == 3);

  // A key built now while the worker builds it waits for that one.
  Gate second;
  int made_now = 0;
  plans.find_or_queue("d", [&]() -> Made {
    second.wait();
    return std::make_shared<const int>(4);
  });
  std::thread opener([&] {
    std::this_thread::sleep_for(20ms);
    second.open();
  });
  auto d = plans.build_now("d", [&]() -> Made {
    ++made_now;
    return std::make_shared<const int>(40);
  });
  opener.join();
  REQUIRE(d.ok());
  CHECK(made_now == 0);
  CHECK(*(*d)->value == 4);
}

TEST_CASE("a background worker that cannot start refuses its jobs with why",
          "[background-plans][sdpa-range]") {
  std::atomic<int> runs{0};
  Plans plans([]() -> Status { return device_error("no CUDA context for the planner"); });
  plans.find_or_queue("a", [&]() -> Made {
    ++runs;
    return std::make_shared<const int>(1);
  });
  REQUIRE(plans.wait_idle(10s));
  const auto* a = plans.find("a");
  REQUIRE(a);
  CHECK(a->value == nullptr);
  CHECK_THAT(a->refusal, Catch::Contains("no CUDA context for the planner"));
  CHECK(runs == 0);
  CHECK(plans.generation() == 1);
}

TEST_CASE("stopping the worker finishes the running job, drops the queued ones and joins",
          "[background-plans][sdpa-range]") {
  std::atomic<bool> started{false}, finished{false}, release{false};
  std::atomic<int> later{0};
  {
    Plans plans;
    // The running job holds until stop() has begun (a watcher sees that
    // nothing queues any more), whatever the machine's load.
    plans.find_or_queue("slow", [&]() -> Made {
      started = true;
      const auto until = std::chrono::steady_clock::now() + 10s;
      while (!release && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(1ms);
      finished = true;
      return std::make_shared<const int>(1);
    });
    for (int i = 0; i < 4; ++i)
      plans.find_or_queue("queued" + std::to_string(i), [&]() -> Made {
        ++later;
        return std::make_shared<const int>(2);
      });
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (!started && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
    REQUIRE(started);
    std::thread watcher([&] {
      for (int probe = 0; std::chrono::steady_clock::now() < until; ++probe) {
        bool queued = true;
        plans.find_or_queue("probe" + std::to_string(probe),
                            []() -> Made { return std::make_shared<const int>(0); }, &queued);
        if (!queued) break;  // stopping: stop() has dropped the queue
        std::this_thread::sleep_for(1ms);
      }
      release = true;
    });
    plans.stop();  // with four jobs (and the probes) still queued
    watcher.join();
  }
  CHECK(finished);
  CHECK(later == 0);

  // stop() is idempotent; nothing is queued after it, and ready entries stay.
  Plans plans;
  plans.find_or_queue("a", []() -> Made { return std::make_shared<const int>(3); });
  REQUIRE(plans.wait_idle(10s));
  plans.stop();
  plans.stop();
  bool queued = true;
  CHECK(plans.find_or_queue("b", []() -> Made { return std::make_shared<const int>(4); },
                            &queued) == nullptr);
  CHECK_FALSE(queued);
  CHECK(plans.pending() == 0);
  REQUIRE(plans.find("a"));
  CHECK(*plans.find("a")->value == 3);
  plans.clear();
  CHECK(plans.size() == 0);
}

TEST_CASE("many threads queueing the same shapes get each made once in the background",
          "[background-plans][sdpa-range]") {
  Plans plans;
  std::atomic<int> made{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 64; ++i) {
        const int shape = (i * 5 + t) % 16 + 1;
        const auto* e = plans.find_or_queue(std::to_string(shape), [&, shape]() -> Made {
          ++made;
          return std::make_shared<const int>(shape);
        });
        if (e && (!e->value || *e->value != shape)) ++wrong;
      }
    });
  for (auto& t : threads) t.join();
  REQUIRE(plans.wait_idle(10s));
  CHECK(wrong == 0);
  CHECK(made == 16);
  CHECK(plans.size() == 16);
  CHECK(plans.generation() == 16);
}

// A context's per-shape choices (runtime/shape_choices.h) over plans built in
// the background: settled shapes are a lookup, a pending one is resolved
// again only when the generation moved on, and a change is reported once.
TEST_CASE("a context looks again at a shape with pending plans only when the generation moves",
          "[background-plans][sdpa-range]") {
  runtime::ShapeChoices<int> choices;
  const int plan = 42;
  int resolves = 0;
  bool ready = false;
  auto resolve = [&]() -> Expected<runtime::ShapeChoices<int>::Resolved> {
    ++resolves;
    runtime::ShapeChoices<int>::Resolved r;
    r.choices = {ready ? &plan : nullptr, nullptr};
    r.pending = !ready;
    return r;
  };
  const std::vector<int64_t> a{3, 77}, b{4, 64};
  bool changed = true;
  auto first = choices.get(a, 0, resolve, &changed);
  REQUIRE(first.ok());
  CHECK_FALSE(changed);
  CHECK((**first)[0] == nullptr);  // the kernel runs while the plan is built
  CHECK(resolves == 1);
  REQUIRE(choices.get(a, 0, resolve, &changed).ok());  // same generation: a lookup
  CHECK(resolves == 1);
  // Another shape's plan landed (generation 1), not this one's: looked at, unchanged.
  auto other = choices.get(a, 1, resolve, &changed);
  REQUIRE(other.ok());
  CHECK(resolves == 2);
  CHECK_FALSE(changed);
  ready = true;  // this shape's plan lands: generation 2
  auto now = choices.get(a, 2, resolve, &changed);
  REQUIRE(now.ok());
  CHECK(resolves == 3);
  CHECK(changed);  // the caller drops the shape's CUDA graph
  CHECK((**now)[0] == &plan);
  // Settled: no more looks, whatever the generation.
  REQUIRE(choices.get(a, 7, resolve, &changed).ok());
  CHECK_FALSE(changed);
  CHECK(resolves == 3);
  // A second shape resolves on its own; errors are returned and nothing kept.
  auto fails = [&]() -> Expected<runtime::ShapeChoices<int>::Resolved> {
    return device_error("warm-up failed");
  };
  CHECK(choices.get(b, 7, fails).status().code() == ErrorCode::kDevice);
  CHECK(choices.size() == 1);
  REQUIRE(choices.get(b, 7, resolve).ok());
  CHECK(choices.size() == 2);
  CHECK(resolves == 4);
}
