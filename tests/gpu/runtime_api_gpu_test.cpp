// The runtime API on a GPU: one Engine shared by contexts on two threads (each
// with its own inputs, checked against the reference executor), a context fed
// the caller's device pointers on the caller's stream (then switched back to
// its own buffers), contexts without a CUDA graph, and the C API end to end.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <thread>

#include "driver/gpu_execute.h"
#include "reference/executor.h"
#include "runtime/cuda_driver.h"
#include "runtime/engine.h"
#include "runtime/engine_loader.h"
#include "runtime/graphc_runtime.h"
#include "tests/onnx_builder.h"
#include "tests/runtime_test_util.h"

using namespace graphc;

namespace {

struct Fixture {
  ir::Graph graph = testing::small_runtime_graph();
  engine::EngineContents contents;
  std::shared_ptr<runtime::Engine> engine;

  Fixture() {
    auto arch = driver::device_arch();
    REQUIRE(arch.ok());
    contents = testing::small_runtime_engine(graph, {*arch});
    auto e = runtime::load_engine(contents);
    INFO((e.ok() ? "" : e.status().message()));
    REQUIRE(e.ok());
    engine = *e;
  }

  std::map<std::string, ir::Tensor> random_feeds(std::mt19937& rng) const {
    std::map<std::string, ir::Tensor> feeds;
    for (ir::ValueId id : graph.inputs)
      feeds[graph.value(id).name] =
          testing::random_tensor(graph.value(id).dtype, graph.value(id).shape, rng, -2, 2);
    return feeds;
  }
};

// Empty when every output matches (float32: |d| <= 1e-5 + 1e-4|ref|).
std::string mismatch(const ir::Graph& graph, const std::map<std::string, ir::Tensor>& feeds,
                     const std::vector<std::string>& outputs) {
  auto want = reference::execute(graph, feeds);
  if (!want.ok()) return want.status().message();
  if (outputs.size() != graph.outputs.size()) return "wrong output count";
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const ir::Tensor& ref = want->at(graph.value(graph.outputs[i]).name);
    if (outputs[i].size() != ref.byte_size()) return "wrong output size";
    ir::Tensor got(ref.dtype(), ref.shape());
    std::memcpy(got.mutable_data(), outputs[i].data(), outputs[i].size());
    for (int64_t k = 0; k < ref.numel(); ++k) {
      const double a = ref.get_f64(k), b = got.get_f64(k);
      if (!(std::fabs(a - b) <= 1e-5 + 1e-4 * std::fabs(a)))
        return fmt::format("output {} element {}: reference {}, gpu {}", i, k, a, b);
    }
  }
  return "";
}

std::vector<std::string_view> views(const ir::Graph& g,
                                    const std::map<std::string, ir::Tensor>& feeds) {
  std::vector<std::string_view> out;
  for (ir::ValueId id : g.inputs) {
    const ir::Tensor& t = feeds.at(g.value(id).name);
    out.emplace_back(reinterpret_cast<const char*>(t.data()), t.byte_size());
  }
  return out;
}

}  // namespace

TEST_CASE("two threads run their own contexts of one engine", "[gpu][runtime]") {
  // Each thread: its own context and inputs, 25 runs, every result checked.
  Fixture f;
  CHECK(f.engine->bindings().size() == 4);
  CHECK(f.engine->num_inputs() == 2);
  std::string errors[2];
  auto worker = [&](int id) {
    std::mt19937 rng(1234 + id);
    auto ctx = f.engine->create_context();
    if (!ctx.ok()) {
      errors[id] = ctx.status().message();
      return;
    }
    for (int it = 0; it < 25 && errors[id].empty(); ++it) {
      auto feeds = f.random_feeds(rng);
      auto in = views(f.graph, feeds);
      std::vector<std::string> out(2);
      Status st = (*ctx)->run_host(in, out);
      errors[id] = st.ok() ? mismatch(f.graph, feeds, out) : st.message();
    }
  };
  std::thread a(worker, 0), b(worker, 1);
  a.join();
  b.join();
  CHECK(errors[0] == "");
  CHECK(errors[1] == "");
}

TEST_CASE("a context runs on the caller's device pointers and stream", "[gpu][runtime]") {
  Fixture f;
  const runtime::DriverApi& api = **runtime::load_driver();
  runtime::ContextOptions co;
  co.allocate_io_buffers = false;
  auto ctx_or = f.engine->create_context(co);
  REQUIRE(ctx_or.ok());
  auto& ctx = **ctx_or;
  CHECK(ctx.device_bytes() == f.engine->arena_bytes());
  // No address yet: enqueue names the binding.
  Status none = ctx.enqueue();
  CHECK_FALSE(none.ok());
  CHECK(none.message().find("'x'") != std::string::npos);
  std::vector<CUdeviceptr> buffers;
  for (const auto& b : f.engine->bindings()) {
    CUdeviceptr p = 0;
    REQUIRE(api.cuMemAlloc(&p, static_cast<size_t>(b.bytes)) == CUDA_SUCCESS);
    buffers.push_back(p);
    REQUIRE(ctx.set_tensor_address(b.name, p).ok());
  }
  CHECK(ctx.set_tensor_address("x", buffers[0] + 4).code() == ErrorCode::kInvalidArgument);
  CHECK(ctx.set_tensor_address("nope", buffers[0]).code() == ErrorCode::kNotFound);
  CHECK(ctx.set_tensor_address("x", 0).code() == ErrorCode::kInvalidArgument);  // no own buffer
  CUstream stream = nullptr;
  REQUIRE(api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  std::mt19937 rng(99);
  for (int round = 0; round < 3; ++round) {
    auto feeds = f.random_feeds(rng);
    auto in = views(f.graph, feeds);
    for (size_t i = 0; i < in.size(); ++i)
      REQUIRE(api.cuMemcpyHtoD(buffers[i], in[i].data(), in[i].size()) == CUDA_SUCCESS);
    REQUIRE(ctx.enqueue(stream).ok());
    REQUIRE(ctx.synchronize().ok());
    std::vector<std::string> out;
    for (size_t o = 2; o < 4; ++o) {
      out.emplace_back(static_cast<size_t>(f.engine->bindings()[o].bytes), '\0');
      REQUIRE(api.cuMemcpyDtoH(out.back().data(), buffers[o], out.back().size()) == CUDA_SUCCESS);
    }
    CHECK(mismatch(f.graph, feeds, out) == "");
  }
  // Rebinding one output to another buffer rebuilds the graph.
  CUdeviceptr other = 0;
  REQUIRE(api.cuMemAlloc(&other, static_cast<size_t>(f.engine->bindings()[2].bytes)) ==
          CUDA_SUCCESS);
  REQUIRE(api.cuMemsetD8(other, 0, static_cast<size_t>(f.engine->bindings()[2].bytes)) ==
          CUDA_SUCCESS);
  REQUIRE(ctx.set_tensor_address(f.engine->bindings()[2].name, other).ok());
  REQUIRE(ctx.enqueue(stream).ok());
  REQUIRE(ctx.synchronize().ok());
  std::string a(static_cast<size_t>(f.engine->bindings()[2].bytes), '\0'), b = a;
  REQUIRE(api.cuMemcpyDtoH(a.data(), other, a.size()) == CUDA_SUCCESS);
  REQUIRE(api.cuMemcpyDtoH(b.data(), buffers[2], b.size()) == CUDA_SUCCESS);
  CHECK(a == b);  // same inputs, same result, in the new buffer
  ctx_or->reset();
  REQUIRE(api.cuStreamDestroy(stream) == CUDA_SUCCESS);
  for (CUdeviceptr p : buffers) api.cuMemFree(p);
  api.cuMemFree(other);
}

TEST_CASE("contexts without a CUDA graph, and caller pointers then own buffers", "[gpu][runtime]") {
  Fixture f;
  const runtime::DriverApi& api = **runtime::load_driver();
  runtime::ContextOptions co;
  co.cuda_graph = false;
  auto ctx = f.engine->create_context(co);
  REQUIRE(ctx.ok());
  std::mt19937 rng(5);
  auto feeds = f.random_feeds(rng);
  auto in = views(f.graph, feeds);
  std::vector<std::string> out(2);
  REQUIRE((*ctx)->run_host(in, out).ok());
  CHECK(mismatch(f.graph, feeds, out) == "");
  // A caller buffer for one output, then back to the context's own (address 0).
  CUdeviceptr mine = 0;
  REQUIRE(api.cuMemAlloc(&mine, static_cast<size_t>(f.engine->bindings()[3].bytes)) ==
          CUDA_SUCCESS);
  auto own = (*ctx)->tensor_address(f.engine->bindings()[3].name);
  REQUIRE(own.ok());
  REQUIRE((*ctx)->set_tensor_address(f.engine->bindings()[3].name, mine).ok());
  REQUIRE((*ctx)->set_tensor_address(f.engine->bindings()[3].name, 0).ok());
  CHECK(*(*ctx)->tensor_address(f.engine->bindings()[3].name) == *own);
  REQUIRE((*ctx)->run_host(in, out).ok());
  CHECK(mismatch(f.graph, feeds, out) == "");
  std::vector<std::string> wrong(1);
  CHECK((*ctx)->run_host(in, wrong).code() == ErrorCode::kInvalidArgument);
  api.cuMemFree(mine);
}

TEST_CASE("the C API loads an engine file and runs it", "[gpu][runtime]") {
  Fixture f;
  testing::TempDir dir;
  const std::string path = dir.file("small.engine");
  REQUIRE(engine::write_engine_file(path, f.contents).ok());
  graphc_engine* engine = nullptr;
  REQUIRE(graphc_engine_load(path.c_str(), &engine) == GRAPHC_OK);
  int32_t n = 0;
  REQUIRE(graphc_engine_num_bindings(engine, &n) == GRAPHC_OK);
  REQUIRE(n == 4);
  graphc_binding_info info{};
  REQUIRE(graphc_engine_binding_info(engine, 0, &info) == GRAPHC_OK);
  CHECK(std::string(info.name) == "x");
  CHECK(info.is_input == 1);
  CHECK(info.dtype == GRAPHC_DTYPE_FLOAT32);
  REQUIRE(info.rank == 2);
  CHECK(info.shape[1] == 257);
  CHECK(graphc_engine_binding_info(engine, 4, &info) == GRAPHC_ERROR_INVALID_ARGUMENT);
  int32_t index = -1;
  REQUIRE(graphc_engine_binding_index(engine, "sig:0", &index) == GRAPHC_OK);
  CHECK(index == 3);
  CHECK(graphc_engine_binding_index(engine, "nope", &index) == GRAPHC_ERROR_NOT_FOUND);
  graphc_context* ctx = nullptr;
  REQUIRE(graphc_context_create(engine, &ctx) == GRAPHC_OK);
  graphc_engine_destroy(engine);  // the context keeps the engine alive
  std::mt19937 rng(11);
  auto feeds = f.random_feeds(rng);
  auto in = views(f.graph, feeds);
  const void* in_ptrs[2] = {in[0].data(), in[1].data()};
  const uint64_t in_bytes[2] = {in[0].size(), in[1].size()};
  std::vector<std::string> out = {std::string(4 * 257 * 4, '\0'), std::string(4 * 257 * 4, '\0')};
  void* out_ptrs[2] = {out[0].data(), out[1].data()};
  const uint64_t out_bytes[2] = {out[0].size(), out[1].size()};
  REQUIRE(graphc_context_run_host(ctx, in_ptrs, in_bytes, 2, out_ptrs, out_bytes, 2) == GRAPHC_OK);
  CHECK(mismatch(f.graph, feeds, out) == "");
  const uint64_t short_bytes[2] = {in[0].size() - 4, in[1].size()};
  CHECK(graphc_context_run_host(ctx, in_ptrs, short_bytes, 2, out_ptrs, out_bytes, 2) ==
        GRAPHC_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(graphc_last_error()).find("'x'") != std::string::npos);
  void* addr = nullptr;
  REQUIRE(graphc_context_get_tensor_address(ctx, "x", &addr) == GRAPHC_OK);
  CHECK(addr != nullptr);
  CHECK(graphc_context_set_tensor_address(ctx, "x", static_cast<char*>(addr) + 1) ==
        GRAPHC_ERROR_INVALID_ARGUMENT);
  REQUIRE(graphc_context_enqueue(ctx, nullptr) == GRAPHC_OK);
  REQUIRE(graphc_context_synchronize(ctx) == GRAPHC_OK);
  graphc_context_destroy(ctx);
}
