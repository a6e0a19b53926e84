// Runtime faults: a device allocation failing at each allocation (the
// runtime's injection hook) returns an error, frees what was allocated and
// leaves the next run working; a sticky CUDA error is reported as such and
// all later work is refused; a context entered from two threads at once is
// detected. [copy-only]/[sticky]: ctest runs these on the CPU machine against
// tests/fake_cuda (the sticky case in its own process, since a sticky error
// poisons the process). The checks that need the fake driver's hooks (leak
// count, forced errors, slow synchronize) skip on a real driver.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "runtime/cuda_driver.h"
#include "runtime/engine.h"

using namespace graphc;
using namespace graphc::runtime;

namespace {

constexpr int64_t kBytes = 64;

// y = copy of x through the arena, w = a weight output: weights, arena and
// three own I/O buffers are allocated (5 device allocations).
Executable small_copy_executable() {
  using Loc = TensorSlot::Location;
  Executable exe;
  exe.tensors = {{"x", Loc::kInput, 0, kBytes, 1, {16}},
                 {"t", Loc::kArena, 0, kBytes, 1, {16}},
                 {"y", Loc::kOutput, 0, kBytes, 1, {16}},
                 {"w", Loc::kWeights, 0, kBytes, 1, {16}}};
  exe.arena_bytes = 256;
  exe.weights.assign(256, '\x5a');
  exe.launches = {{-1, "", {1, 1, 1}, {1, 1, 1}, 0, {0, 1}},
                  {-1, "", {1, 1, 1}, {1, 1, 1}, 0, {1, 2}}};
  exe.inputs = {0};
  exe.outputs = {2, 3};
  exe.input_names = {"x"};
  exe.output_names = {"y", "w_out"};
  return exe;
}

// A fake-driver hook, or nullptr on a real driver.
template <typename Fn>
Fn fake_hook(const char* name) {
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return lib ? reinterpret_cast<Fn>(::dlsym(lib, name)) : nullptr;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Creates the engine and a context and runs once; checks y == x.
Status run_once() {
  ASSIGN_OR_RETURN(auto engine, Engine::create(small_copy_executable()));
  ASSIGN_OR_RETURN(auto ctx, engine->create_context());
  const std::string x(kBytes, '\x11');
  std::string_view in[] = {x};
  std::vector<std::string> out(2);
  RETURN_IF_ERROR(ctx->run_host(in, out));
  if (out[0] != x) return internal_error("y differs from x");
  return Status::ok_status();
}

}  // namespace

TEST_CASE("a device allocation failing at each allocation is reported and leaks nothing",
          "[gpu][runtime][copy-only][faults]") {
  Status warm = run_once();  // loads the driver
  INFO(warm.message());
  REQUIRE(warm.ok());
  auto live = fake_hook<size_t (*)()>("graphc_fake_cuda_live_allocations");
  const size_t baseline = live ? live() : 0;
  int failures = 0;
  for (int nth = 1; nth <= 8; ++nth) {
    INFO("allocation " << nth << " fails");
    inject_alloc_failure(nth);
    Status st = run_once();
    inject_alloc_failure(0);
    if (!st.ok()) {
      ++failures;
      CHECK(st.code() == ErrorCode::kDevice);
      CHECK(contains(st.message(), "CUDA_ERROR_OUT_OF_MEMORY"));
      CHECK(contains(st.message(), "allocating"));
    }
    if (live) CHECK(live() == baseline);  // everything allocated before the failure was freed
    Status next = run_once();
    INFO(next.message());
    CHECK(next.ok());
  }
  CHECK(failures == 5);  // weights, arena, x, y, w_out; the 6th..8th are past the last
}

TEST_CASE("an execution context used from two threads at once is refused",
          "[gpu][runtime][copy-only][faults]") {
  auto delay = fake_hook<void (*)(int)>("graphc_fake_cuda_sync_delay_ms");
  if (!delay) {
    WARN("skipped: needs the fake driver's slow synchronize");
    return;
  }
  auto engine = Engine::create(small_copy_executable());
  REQUIRE(engine.ok());
  auto ctx = (*engine)->create_context();
  REQUIRE(ctx.ok());
  delay(300);  // thread A sits in run_host's synchronize for 300 ms
  Status a_status;
  std::thread a([&] {
    const std::string x(kBytes, '\x22');
    std::string_view in[] = {x};
    std::vector<std::string> out(2);
    a_status = (*ctx)->run_host(in, out);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Status b_status = (*ctx)->enqueue();
  a.join();
  delay(0);
  CHECK(a_status.ok());
  REQUIRE_FALSE(b_status.ok());
  CHECK(contains(b_status.message(), "two threads at once"));
  CHECK(contains(b_status.message(), "one context per thread"));
  // Once A is done, the other thread may use it (one thread at a time).
  CHECK((*ctx)->enqueue().ok());
  CHECK((*ctx)->synchronize().ok());
}

TEST_CASE("a sticky CUDA error is reported as such and later work is refused", "[sticky]") {
  auto fail_sync = fake_hook<void (*)(int)>("graphc_fake_cuda_fail_sync");
  if (!fail_sync) {
    WARN("skipped: needs the fake driver's forced errors");
    return;
  }
  auto engine = Engine::create(small_copy_executable());
  REQUIRE(engine.ok());
  auto ctx = (*engine)->create_context();
  REQUIRE(ctx.ok());
  const std::string x(kBytes, '\x33');
  std::string_view in[] = {x};
  std::vector<std::string> out(2);
  REQUIRE((*ctx)->run_host(in, out).ok());
  fail_sync(CUDA_ERROR_ILLEGAL_ADDRESS);  // a kernel read out of bounds
  Status st = (*ctx)->run_host(in, out);
  fail_sync(CUDA_SUCCESS);  // the fake would recover; a real context does not
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.message(), "sticky CUDA error CUDA_ERROR_ILLEGAL_ADDRESS"));
  // Everything after is refused with the original error named, not run.
  for (Status later :
       {(*ctx)->run_host(in, out), (*ctx)->enqueue(), (*ctx)->synchronize(),
        (*engine)->create_context().status(), Engine::create(small_copy_executable()).status()}) {
    REQUIRE_FALSE(later.ok());
    CHECK(later.code() == ErrorCode::kDevice);
    CHECK(contains(later.message(), "refused: an earlier"));
    CHECK(contains(later.message(), "CUDA_ERROR_ILLEGAL_ADDRESS"));
  }
}
