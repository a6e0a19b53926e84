// The runtime's addressing on a hand-built Executable that only copies (no
// kernels, so exact results on any driver): arena and weights offsets, an
// output that is an input, a weight, or another output (copied after the
// launches), caller device pointers, CUDA graph vs direct launches, two
// threads on one engine, Session. Tagged [copy-only]: ctest also runs these
// on the CPU machine against tests/fake_cuda's stand-in driver.
#include <catch2/catch.hpp>
#include <thread>

#include "runtime/cuda_driver.h"
#include "runtime/engine.h"
#include "runtime/session.h"

using namespace graphc;
using namespace graphc::runtime;

namespace {

constexpr int64_t kBytes = 64;

// y = copy(copy(x) via the arena); outputs: y, x itself, the weight w, y again.
Executable copy_executable() {
  using Loc = TensorSlot::Location;
  Executable exe;
  exe.tensors = {{"x", Loc::kInput, 0, kBytes, 1, {16}},
                 {"t", Loc::kArena, 256, kBytes, 1, {16}},
                 {"y", Loc::kOutput, 0, kBytes, 1, {16}},
                 {"w", Loc::kWeights, 256, kBytes, 1, {16}}};
  exe.arena_bytes = 512;
  exe.weights.assign(512, '\0');
  for (int i = 0; i < kBytes; ++i)
    exe.weights[static_cast<size_t>(256 + i)] = static_cast<char>(i * 3);
  exe.launches = {{runtime::CopyLaunch{}, {0, 1}}, {runtime::CopyLaunch{}, {1, 2}}};
  exe.inputs = {0};
  exe.outputs = {2, 0, 3, 2};
  exe.input_names = {"x"};
  exe.output_names = {"y", "x_out", "w_out", "y_again"};
  return exe;
}

std::string pattern(int seed) {
  std::string s(kBytes, '\0');
  for (int i = 0; i < kBytes; ++i) s[static_cast<size_t>(i)] = static_cast<char>(seed * 31 + i);
  return s;
}

std::string weight_bytes() { return copy_executable().weights.substr(256, kBytes); }

}  // namespace

TEST_CASE("copy-only engine: bindings and outputs on own buffers", "[gpu][runtime][copy-only]") {
  auto engine = Engine::create(copy_executable());
  INFO((engine.ok() ? "" : engine.status().message()));
  REQUIRE(engine.ok());
  const auto& b = (*engine)->bindings();
  REQUIRE(b.size() == 5);
  CHECK(b[0].name == "x");
  CHECK(b[0].is_input);
  CHECK(b[3].name == "w_out");
  CHECK(b[3].shape == std::vector<int64_t>{16});
  CHECK(*(*engine)->binding_index("y_again") == 4);
  CHECK_FALSE((*engine)->binding_index("t"));
  CHECK((*engine)->weights_bytes() == 512);
  for (bool graph : {true, false}) {
    INFO("cuda graph " << graph);
    ContextOptions co;
    co.cuda_graph = graph;
    auto ctx = (*engine)->create_context(co);
    REQUIRE(ctx.ok());
    CHECK((*ctx)->device_bytes() == 512 + 5 * kBytes);
    for (int round = 0; round < 3; ++round) {
      const std::string x = pattern(round + (graph ? 10 : 0));
      std::string_view in[] = {x};
      std::vector<std::string> out(4);
      REQUIRE((*ctx)->run_host(in, out).ok());
      CHECK(out[0] == x);
      CHECK(out[1] == x);
      CHECK(out[2] == weight_bytes());
      CHECK(out[3] == x);
    }
  }
}

TEST_CASE("copy-only engine: caller device pointers and rebinding", "[gpu][runtime][copy-only]") {
  auto engine = Engine::create(copy_executable());
  REQUIRE(engine.ok());
  const DriverApi& api = **load_driver();
  auto ctx_or = (*engine)->create_context();
  REQUIRE(ctx_or.ok());
  ExecutionContext& ctx = **ctx_or;
  CUdeviceptr x = 0, y = 0;
  REQUIRE(api.cuMemAlloc(&x, kBytes) == CUDA_SUCCESS);
  REQUIRE(api.cuMemAlloc(&y, kBytes) == CUDA_SUCCESS);
  const std::string data = pattern(7);
  REQUIRE(api.cuMemcpyHtoD(x, data.data(), kBytes) == CUDA_SUCCESS);
  REQUIRE(ctx.set_tensor_address("x", x).ok());
  REQUIRE(ctx.set_tensor_address("y", y).ok());
  CHECK(*ctx.tensor_address("y") == y);
  REQUIRE(ctx.enqueue().ok());
  REQUIRE(ctx.synchronize().ok());
  std::string got(kBytes, '\0');
  REQUIRE(api.cuMemcpyDtoH(got.data(), y, kBytes) == CUDA_SUCCESS);
  CHECK(got == data);
  // The other outputs stay in the context's own buffers.
  std::string again(kBytes, '\0');
  REQUIRE(ctx.copy_output_to_host(4, again.data(), kBytes, nullptr).ok());
  REQUIRE(ctx.synchronize().ok());
  CHECK(again == data);
  // Back to the own buffer for y: the graph is rebuilt, y's own buffer filled.
  REQUIRE(ctx.set_tensor_address("y", 0).ok());
  REQUIRE(ctx.enqueue().ok());
  std::string own(kBytes, '\0');
  REQUIRE(ctx.copy_output_to_host(1, own.data(), kBytes, nullptr).ok());
  REQUIRE(ctx.synchronize().ok());
  CHECK(own == data);
  CHECK(ctx.copy_output_to_host(0, own.data(), kBytes, nullptr).code() ==
        ErrorCode::kInvalidArgument);  // binding 0 is an input
  CHECK(ctx.copy_input_from_host(0, data.data(), kBytes - 1, nullptr).code() ==
        ErrorCode::kInvalidArgument);
  ctx_or->reset();
  api.cuMemFree(x);
  api.cuMemFree(y);
}

TEST_CASE("copy-only engine: two threads, Session", "[gpu][runtime][copy-only]") {
  auto engine = Engine::create(copy_executable());
  REQUIRE(engine.ok());
  std::string errors[2];
  auto worker = [&](int id) {
    auto ctx = (*engine)->create_context();
    if (!ctx.ok()) {
      errors[id] = ctx.status().message();
      return;
    }
    for (int i = 0; i < 200 && errors[id].empty(); ++i) {
      const std::string x = pattern(id * 1000 + i);
      std::string_view in[] = {x};
      std::vector<std::string> out(4);
      Status st = (*ctx)->run_host(in, out);
      if (!st.ok())
        errors[id] = st.message();
      else if (out[0] != x || out[1] != x || out[2] != weight_bytes() || out[3] != x)
        errors[id] = "wrong output at iteration " + std::to_string(i);
    }
  };
  std::thread a(worker, 0), b(worker, 1);
  a.join();
  b.join();
  CHECK(errors[0] == "");
  CHECK(errors[1] == "");
  auto session = Session::create(copy_executable());
  REQUIRE(session.ok());
  std::vector<std::string> out;
  REQUIRE((*session)->run({pattern(3)}, out).ok());
  REQUIRE(out.size() == 4);
  CHECK(out[3] == pattern(3));
  CHECK((*session)->last_gpu_ms() >= 0);
  auto times = (*session)->time_iterations(5);
  REQUIRE(times.ok());
  CHECK(times->size() == 5);
  CHECK_FALSE((*session)->run({}, out).ok());
}
