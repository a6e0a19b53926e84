// The runtime's C API and C++ API without a GPU: loading a valid engine says
// "no CUDA device/driver" clearly (GRAPHC_ERROR_NO_DEVICE, not a crash); bad
// files, NULL and invalid handles are errors with a per-thread message; a bad
// Executable is refused before the driver is needed. On a machine with a GPU
// the same engine loads and its bindings are checked instead.
#include <catch2/catch.hpp>
#include <cstring>
#include <thread>

#include "runtime/cuda_driver.h"
#include "runtime/engine.h"
#include "runtime/engine_loader.h"
#include "runtime/graphc_runtime.h"
#include "tests/cli_util.h"
#include "tests/onnx_builder.h"
#include "tests/runtime_test_util.h"

using namespace graphc;

namespace {
bool have_gpu() { return runtime::load_driver().ok(); }
}  // namespace

TEST_CASE("C API: loading an engine without a GPU is a clear NO_DEVICE error", "[runtime]") {
  testing::TempDir dir;
  const std::string path = dir.file("small.engine");
  REQUIRE(engine::write_engine_file(
              path, testing::small_runtime_engine(testing::small_runtime_graph(), {"sm_90"}))
              .ok());
  graphc_engine* engine = reinterpret_cast<graphc_engine*>(0x1);
  graphc_status st = graphc_engine_load(path.c_str(), &engine);
  if (have_gpu()) {
    // On the GPU machine: sm_90 CUBIN or PTX may not fit every GPU; when it
    // loads, the bindings are those of the graph.
    if (st != GRAPHC_OK) {
      CHECK(engine == nullptr);
      return;
    }
    int32_t n = 0;
    REQUIRE(graphc_engine_num_bindings(engine, &n) == GRAPHC_OK);
    CHECK(n == 4);
    graphc_engine_destroy(engine);
    return;
  }
  CHECK(st == GRAPHC_ERROR_NO_DEVICE);
  CHECK(engine == nullptr);
  const std::string message = graphc_last_error();
  INFO(message);
  CHECK(message.find("no CUDA") != std::string::npos);
  CHECK(std::string(graphc_status_name(st)) == "GRAPHC_ERROR_NO_DEVICE");
  // The example program reports the same and exits 1.
  auto example = testing::run_graphc_binary(GRAPHC_EXAMPLE_BINARY, path);
  INFO(example.output);
  CHECK(example.exit_code == 1);
  CHECK(testing::contains(example.output, "GRAPHC_ERROR_NO_DEVICE"));
}

TEST_CASE("C API: bad files are reported before the driver is needed", "[runtime]") {
  testing::TempDir dir;
  graphc_engine* engine = nullptr;
  CHECK(graphc_engine_load(dir.file("missing.engine").c_str(), &engine) == GRAPHC_ERROR_NOT_FOUND);
  CHECK(std::string(graphc_last_error()).find("missing.engine") != std::string::npos);
  CHECK(graphc_engine_load(dir.write("junk.engine", "not an engine at all").c_str(), &engine) ==
        GRAPHC_ERROR_INVALID_ENGINE);
  CHECK(std::string(graphc_last_error()).find("not a graphc engine") != std::string::npos);
  CHECK(engine == nullptr);
  CHECK(graphc_engine_load(nullptr, &engine) == GRAPHC_ERROR_INVALID_ARGUMENT);
  CHECK(graphc_engine_load("x", nullptr) == GRAPHC_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("C API: NULL and invalid handles are errors, never crashes", "[runtime]") {
  int32_t n = 0;
  graphc_binding_info info{};
  graphc_context* ctx = nullptr;
  void* ptr = nullptr;
  CHECK(graphc_engine_num_bindings(nullptr, &n) == GRAPHC_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(graphc_last_error()).find("NULL") != std::string::npos);
  CHECK(graphc_engine_binding_info(nullptr, 0, &info) == GRAPHC_ERROR_INVALID_ARGUMENT);
  CHECK(graphc_engine_binding_index(nullptr, "x", &n) == GRAPHC_ERROR_INVALID_ARGUMENT);
  CHECK(graphc_context_create(nullptr, &ctx) == GRAPHC_ERROR_INVALID_ARGUMENT);
  CHECK(ctx == nullptr);
  CHECK(graphc_context_set_tensor_address(nullptr, "x", nullptr) == GRAPHC_ERROR_INVALID_ARGUMENT);
  CHECK(graphc_context_get_tensor_address(nullptr, "x", &ptr) == GRAPHC_ERROR_INVALID_ARGUMENT);
  CHECK(graphc_context_enqueue(nullptr, nullptr) == GRAPHC_ERROR_INVALID_ARGUMENT);
  CHECK(graphc_context_synchronize(nullptr) == GRAPHC_ERROR_INVALID_ARGUMENT);
  CHECK(graphc_context_run_host(nullptr, nullptr, nullptr, 0, nullptr, nullptr, 0) ==
        GRAPHC_ERROR_INVALID_ARGUMENT);
  graphc_launch_timing timing{};
  CHECK(graphc_context_profile(nullptr, 10, &n) == GRAPHC_ERROR_INVALID_ARGUMENT);
  CHECK(graphc_context_profile_launch(nullptr, 0, &timing) == GRAPHC_ERROR_INVALID_ARGUMENT);
  CHECK(timing.name == nullptr);
  graphc_engine_destroy(nullptr);  // ignored
  graphc_context_destroy(nullptr);
  // Memory that is not a handle (zeros, or a handle of the other kind) is
  // recognised by its magic number.
  alignas(16) unsigned char fake[64] = {};
  auto* fake_engine = reinterpret_cast<graphc_engine*>(fake);
  auto* fake_ctx = reinterpret_cast<graphc_context*>(fake);
  CHECK(graphc_engine_num_bindings(fake_engine, &n) == GRAPHC_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(graphc_last_error()).find("not a valid engine handle") != std::string::npos);
  CHECK(graphc_context_enqueue(fake_ctx, nullptr) == GRAPHC_ERROR_INVALID_ARGUMENT);
  CHECK(graphc_context_profile(fake_ctx, 10, &n) == GRAPHC_ERROR_INVALID_ARGUMENT);
  graphc_engine_destroy(fake_engine);  // not a handle: ignored
  graphc_context_destroy(fake_ctx);
  CHECK(std::string(graphc_status_name(GRAPHC_ERROR_DEVICE)) == "GRAPHC_ERROR_DEVICE");
  CHECK(std::string(graphc_dtype_name(GRAPHC_DTYPE_BFLOAT16)) == "bfloat16");
  CHECK(std::string(graphc_dtype_name(99)) == "unknown");
}

TEST_CASE("C API: the last error is per thread", "[runtime]") {
  int32_t n = 0;
  REQUIRE(graphc_engine_num_bindings(nullptr, &n) == GRAPHC_ERROR_INVALID_ARGUMENT);
  std::string other = "unset";
  std::thread t([&] { other = graphc_last_error(); });
  t.join();
  CHECK(other.empty());
  CHECK_FALSE(std::string(graphc_last_error()).empty());
}

TEST_CASE("runtime: a bad Executable is refused before the driver loads", "[runtime]") {
  // Slots outside the arena, launches reading missing slots or modules,
  // bindings on non-input slots: invalid_argument on any machine.
  using Loc = runtime::TensorSlot::Location;
  runtime::Executable base;
  base.images = {"ptx"};
  base.tensors = {{"x", Loc::kInput, 0, 16}, {"y", Loc::kOutput, 0, 16}, {"t", Loc::kArena, 0, 16}};
  base.arena_bytes = 16;
  base.inputs = {0};
  base.outputs = {1};
  base.launches = {{runtime::KernelLaunch{0, "k", {1, 1, 1}, {32, 1, 1}, 0}, {0, 2}},
                   {runtime::CopyLaunch{}, {2, 1}}};
  auto refused = [](runtime::Executable exe, const std::string& what) {
    auto e = runtime::Engine::create(exe);
    REQUIRE_FALSE(e.ok());
    INFO(e.status().message());
    CHECK(e.status().code() == ErrorCode::kInvalidArgument);
    CHECK(e.status().message().find(what) != std::string::npos);
  };
  auto exe = base;
  exe.tensors[2].offset = 8;
  refused(exe, "outside its buffer");
  exe = base;
  exe.launches[0].args = {0, 7};
  refused(exe, "slot 7");
  exe = base;
  std::get<runtime::KernelLaunch>(exe.launches[0].op).module = 3;
  refused(exe, "module 3");
  exe = base;
  std::get<runtime::KernelLaunch>(exe.launches[0].op).grid = {0, 1, 1};
  refused(exe, "empty grid");
  exe = base;
  std::get<runtime::KernelLaunch>(exe.launches[0].op).params.assign(4090, '\x01');
  refused(exe, "bytes of parameters");
  exe = base;
  exe.inputs = {2};
  refused(exe, "not an input");
  exe = base;
  exe.outputs = {};
  refused(exe, "no binding names it");
  exe = base;
  exe.launches[1].args = {2};
  refused(exe, "2 slots");
  exe = base;
  exe.input_names = {"a", "b"};
  refused(exe, "input names");
  if (have_gpu()) return;
  auto no_gpu = runtime::Engine::create(base);
  REQUIRE_FALSE(no_gpu.ok());
  CHECK(no_gpu.status().message().find("no CUDA") != std::string::npos);
}

TEST_CASE("engine bindings are described from the manifest without a GPU", "[runtime]") {
  auto contents = testing::small_runtime_engine(testing::small_runtime_graph(), {"sm_80"});
  auto b = runtime::engine_bindings(contents);
  REQUIRE(b.size() == 4);
  CHECK(b[0].name == "x");
  CHECK(b[0].is_input);
  CHECK(b[0].dtype == 1);
  CHECK(b[0].shape == std::vector<int64_t>{4, 257});
  CHECK(b[0].bytes == 4 * 257 * 4);
  CHECK(b[1].name == "y");
  CHECK(b[2].name == "relu:0");
  CHECK_FALSE(b[2].is_input);
  CHECK(b[3].name == "sig:0");
  CHECK(b[3].bytes == 4 * 257 * 4);
}
