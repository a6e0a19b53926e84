// Loops on a run-time trip count or condition on the GPU: the body as a
// CUDA graph WHILE node (and host-driven without a graph), against the
// reference executor at several trip counts (0, 1, a few, many). The first
// test case is tagged [copy-only]: ctest also runs it on the CPU machine
// against tests/fake_cuda, whose WHILE nodes run their body a set number of
// times (its kernels do nothing, so the loop there only copies).
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "runtime/cuda_driver.h"
#include "runtime/engine.h"
#include "tests/gpu/built_engine.h"
#include "tests/loop_graphs.h"

using namespace graphc;
using namespace graphc::runtime;

namespace {

template <typename Fn>
Fn fake_hook(const char* name) {
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return lib ? reinterpret_cast<Fn>(::dlsym(lib, name)) : nullptr;
}

// y = y0; while (control): y = x. A loop of copies around a control kernel
// that the fake driver does not run (its WHILE node runs the body n times).
Executable copy_loop_executable() {
  using Loc = TensorSlot::Location;
  Executable exe;
  exe.tensors = {{"M", Loc::kInput, 0, 8, 7, {}},          {"y0", Loc::kInput, 0, 16, 1, {4}},
                 {"x", Loc::kInput, 0, 16, 1, {4}},        {"y", Loc::kOutput, 0, 16, 1, {4}},
                 {"body_cond", Loc::kWeights, 0, 1, 9, {}}, {"iter", Loc::kArena, 0, 8, 7, {}},
                 {"cond", Loc::kArena, 256, 1, 9, {}},     {"flag", Loc::kArena, 512, 4, 6, {}}};
  exe.arena_bytes = 768;
  exe.weights.assign(256, '\0');
  exe.weights[0] = 1;
  exe.images = {"fake module"};
  KernelLaunch control;
  control.module = 0;
  control.entry = "graphc_loop_control_m64";
  control.loop_body = 1;
  exe.launches = {{CopyLaunch{}, {1, 3}}, {control, {0, 4, 5, 6, 7}}, {CopyLaunch{}, {2, 3}}};
  exe.inputs = {0, 1, 2};
  exe.outputs = {3};
  exe.input_names = {"M", "y0", "x"};
  exe.output_names = {"y"};
  return exe;
}

std::string floats(float base) {
  std::string s(16, '\0');
  for (int i = 0; i < 4; ++i) {
    const float v = base + static_cast<float>(i);
    std::memcpy(s.data() + 4 * i, &v, 4);
  }
  return s;
}

}  // namespace

TEST_CASE("a loop's body is captured into a CUDA graph WHILE node", "[gpu][runtime][copy-only]") {
  auto iterations = fake_hook<void (*)(int)>("graphc_fake_cuda_while_iterations");
  auto while_nodes = fake_hook<int (*)()>("graphc_fake_cuda_while_nodes");
  auto driver = load_driver();
  REQUIRE(driver.ok());  // gpu_test_main exits before the tests without one
  if (!iterations || !while_nodes) {
    WARN("needs the stand-in driver; a real GPU runs the reference comparison below");
    return;
  }
  REQUIRE((*driver)->conditional_nodes);
  auto engine = Engine::create(copy_loop_executable());
  INFO((engine.ok() ? "" : engine.status().message()));
  REQUIRE(engine.ok());
  const int nodes_before = while_nodes();
  auto ctx = (*engine)->create_context();
  INFO((ctx.ok() ? "" : ctx.status().message()));
  REQUIRE(ctx.ok());
  CHECK(while_nodes() == nodes_before + 1);
  const std::string m(8, '\0'), y0 = floats(1.5f), x = floats(-7.25f);
  for (int n : {0, 1, 3}) {
    INFO("body runs " << n << " times");
    iterations(n);
    std::string_view in[] = {m, y0, x};
    std::vector<std::string> out(1);
    Status st = (*ctx)->run_host(in, out);
    INFO(st.message());
    REQUIRE(st.ok());
    CHECK(out[0] == (n == 0 ? y0 : x));
  }
  iterations(0);
  CHECK(while_nodes() == nodes_before + 1);  // the graph was captured once
}

// |gpu - ref| <= 1e-4 (|ref| + 1): fp32 kernels against the reference's
// double arithmetic, compounded over up to 60 iterations of the body.
TEST_CASE("run-time loops match the reference at several trip counts", "[gpu][loop]") {
  auto driver = load_driver();
  REQUIRE(driver.ok());
  if (fake_hook<int (*)()>("graphc_fake_cuda_while_nodes")) {
    WARN("the stand-in driver runs no kernels");
    return;
  }
  INFO("conditional nodes: " << (*driver)->conditional_nodes);
  for (const auto& c : testing::loop_cases()) {
    INFO(c.name);
    testing::BuiltEngine b = testing::build_engine_for_gpu(c.graph, target::GemmMode::kAuto);
    for (bool graph : {true, false}) {
      ContextOptions co;
      co.cuda_graph = graph;
      auto ctx = b.engine->create_context(co);
      INFO((ctx.ok() ? "" : ctx.status().message()));
      REQUIRE(ctx.ok());
      for (int64_t count : c.counts) {
        INFO("cuda graph " << graph << ", count " << count);
        auto feeds = testing::loop_feeds(c, count);
        std::vector<std::string> inputs;
        for (ir::ValueId id : b.original.inputs) {
          const ir::Tensor& t = feeds.at(b.original.value(id).name);
          inputs.emplace_back(reinterpret_cast<const char*>(t.data()), t.byte_size());
        }
        std::vector<std::string_view> in(inputs.begin(), inputs.end());
        std::vector<std::string> out(b.original.outputs.size());
        Status st = (*ctx)->run_host(in, out);
        INFO(st.message());
        REQUIRE(st.ok());
        auto want = reference::execute(b.original, feeds);
        REQUIRE(want.ok());
        for (size_t o = 0; o < out.size(); ++o) {
          const ir::Tensor& ref = want->at(b.original.value(b.original.outputs[o]).name);
          REQUIRE(out[o].size() == ref.byte_size());
          ir::Tensor got(ref.dtype(), ref.shape());
          std::memcpy(got.mutable_data(), out[o].data(), out[o].size());
          for (int64_t i = 0; i < ref.numel(); ++i) {
            INFO("output " << o << " element " << i);
            CHECK(std::fabs(got.get_f64(i) - ref.get_f64(i)) <= 1e-4 * (std::fabs(ref.get_f64(i)) + 1));
          }
        }
      }
    }
  }
}
