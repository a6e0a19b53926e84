// ExecutionContext::profile and `graphc run --profile`: every launch of an
// engine (generated kernels, a cuBLASLt call, copies, the final output
// copies) gets its own positive GPU time, under the engine's kernel names and
// ONNX nodes as `graphc inspect` lists them, and the context's results are
// unchanged by profiling. [copy-only]: the plumbing also runs on the CPU
// machine against tests/fake_cuda (whose events always read 0.125 ms).
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "cmd/run_profile.h"
#include "runtime/cuda_driver.h"
#include "runtime/graphc_runtime.h"
#include "tests/cli_util.h"
#include "tests/gpu/built_engine.h"
#include "tests/gpu/copy_executable.h"
#include "tests/runtime_test_util.h"

using namespace graphc;

namespace {

bool on_fake_driver() {
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return lib && ::dlsym(lib, "graphc_fake_cuda_live_allocations");
}

void print_profile(const runtime::LaunchProfile& p, std::optional<double> graph_us) {
  std::printf("%s", cli::profile_table(p, graph_us).c_str());
}

void check_timings_sane(const runtime::LaunchProfile& p) {
  for (const auto& t : p.launches) {
    INFO("launch " << t.launch << " '" << t.name << "' (" << t.kind << "): median " << t.median_us
                   << " us, min " << t.min_us << ", max " << t.max_us);
    CHECK(t.median_us > 0);
    CHECK(t.min_us > 0);
    CHECK(t.min_us <= t.median_us);
    CHECK(t.median_us <= t.max_us);
  }
  CHECK(p.one_by_one_median_us > 0);
  // Under compute-sanitizer (scripts/gpu_sanitize.sh sets the variable)
  // launches may block the host, so the stream cannot be held.
  if (std::getenv("GRAPHC_UNDER_SANITIZER"))
    WARN("under a sanitizer: host_gaps " << p.host_gaps << " not checked");
  else
    CHECK_FALSE(p.host_gaps);
}

// The graphc binary next to this test binary (build/ and a GPU session's BIN
// folder both have it), else the build's.
std::string graphc_binary() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  for (const auto& candidate : {self.parent_path() / "graphc", self.parent_path() / ".." / "graphc",
                                std::filesystem::path(GRAPHC_BINARY)})
    if (!ec && std::filesystem::exists(candidate, ec)) return candidate.string();
  return "";
}

}  // namespace

TEST_CASE("profile times every launch and output copy under its name, results unchanged",
          "[gpu][runtime][copy-only][profile]") {
  auto engine = runtime::Engine::create(testing::small_copy_executable());
  INFO((engine.ok() ? "" : engine.status().message()));
  REQUIRE(engine.ok());
  auto ctx = (*engine)->create_context();
  REQUIRE(ctx.ok());
  std::string x(testing::kCopyExecutableBytes, '\0');
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<char>(i * 7 + 3);
  std::string_view in[] = {x};
  std::vector<std::string> before(2), after(2);
  REQUIRE((*ctx)->run_host(in, before).ok());
  REQUIRE(before[0] == x);

  runtime::ProfileOptions po;
  po.iterations = 9;
  auto p = (*ctx)->profile(po);
  INFO((p.ok() ? "" : p.status().message()));
  REQUIRE(p.ok());
  print_profile(*p, std::nullopt);
  CHECK(p->iterations == 9);
  // Two copies, then the weight output's final copy.
  REQUIRE(p->launches.size() == 3);
  CHECK(p->launches[0].name == "copy_x_to_t");
  CHECK(p->launches[0].onnx_nodes == std::vector<std::string>{"/stage/Identity"});
  CHECK(p->launches[1].name == "copy_t_to_y");
  CHECK(p->launches[1].onnx_nodes == std::vector<std::string>{"/out/Identity", "/out/Reshape"});
  CHECK(p->launches[2].name == "output copy w_out");
  CHECK(p->launches[2].onnx_nodes.empty());
  for (int i = 0; i < 3; ++i) {
    CHECK(p->launches[static_cast<size_t>(i)].launch == i);
    CHECK(p->launches[static_cast<size_t>(i)].kind == "copy");
  }
  check_timings_sane(*p);
  if (on_fake_driver()) {
    for (const auto& t : p->launches) CHECK(t.median_us == Approx(125));
    CHECK(p->sum_median_us() == Approx(375));
  }
  // Profiling ran the real sequence: the outputs are still right.
  REQUIRE((*ctx)->run_host(in, after).ok());
  CHECK(after == before);
  // Bad options are errors, not crashes.
  for (int bad : {0, -3}) {
    po.iterations = bad;
    auto refused = (*ctx)->profile(po);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == ErrorCode::kInvalidArgument);
  }
}

TEST_CASE("profile of an engine with generated kernels, a cuBLASLt call and copies",
          "[gpu][profile][cublaslt]") {
  auto b =
      testing::build_engine_for_gpu(testing::mixed_launch_graph(), target::GemmMode::kCublasLt);
  auto ctx = b.engine->create_context();
  INFO((ctx.ok() ? "" : ctx.status().message()));
  REQUIRE(ctx.ok());
  std::mt19937 rng(2024);
  auto inputs = b.random_inputs(rng);
  std::vector<std::string_view> in(inputs.begin(), inputs.end());
  std::vector<std::string> before(3), after(3);
  REQUIRE((*ctx)->run_host(in, before).ok());

  // The CUDA graph's end-to-end time, as `graphc run` measures it.
  auto timer = runtime::GpuTimer::create(*b.engine);
  REQUIRE(timer.ok());
  std::vector<double> graph_us;
  for (int i = 0; i < 30; ++i) {
    REQUIRE((*timer)->start((*ctx)->stream()).ok());
    REQUIRE((*ctx)->enqueue().ok());
    REQUIRE((*timer)->stop((*ctx)->stream()).ok());
    auto ms = (*timer)->elapsed_ms();
    REQUIRE(ms.ok());
    graph_us.push_back(*ms * 1000.0);
  }
  std::sort(graph_us.begin(), graph_us.end());

  runtime::ProfileOptions po;
  po.iterations = 30;
  auto p = (*ctx)->profile(po);
  INFO((p.ok() ? "" : p.status().message()));
  REQUIRE(p.ok());
  print_profile(*p, graph_us[graph_us.size() / 2]);
  check_timings_sane(*p);

  // The engine's launches in manifest order (what `graphc inspect` lists),
  // then one entry per final output copy.
  const auto& kernels = b.contents.manifest.kernels();
  REQUIRE(p->launches.size() >= static_cast<size_t>(kernels.size()));
  std::set<std::string> kinds, nodes;
  for (int i = 0; i < kernels.size(); ++i) {
    const auto& t = p->launches[static_cast<size_t>(i)];
    INFO("kernel " << i);
    CHECK(t.name == kernels[i].name());
    CHECK(t.onnx_nodes ==
          std::vector<std::string>(kernels[i].onnx_nodes().begin(), kernels[i].onnx_nodes().end()));
    kinds.insert(t.kind);
    nodes.insert(t.onnx_nodes.begin(), t.onnx_nodes.end());
  }
  for (size_t i = static_cast<size_t>(kernels.size()); i < p->launches.size(); ++i) {
    CHECK(p->launches[i].name.rfind("output copy ", 0) == 0);
    kinds.insert(p->launches[i].kind);
  }
  std::string kind_list;
  for (const auto& k : kinds) kind_list += k + "; ";
  INFO("kinds: " << kind_list);
  CHECK(kinds.count("cublasLt matmul") == 1);
  CHECK(kinds.count("copy") == 1);
  CHECK(std::any_of(kinds.begin(), kinds.end(),
                    [](const std::string& k) { return k.rfind("generated", 0) == 0; }));
  for (const char* n : {"/fc/MatMul", "/head/Sigmoid", "/aux/Exp"}) {
    INFO(n);
    CHECK(nodes.count(n) == 1);
  }
  // Each launch timed alone cannot add up to much more than the whole
  // sequence launched one by one (events around the wrong work would).
  CHECK(p->sum_median_us() < 1.5 * p->one_by_one_median_us + 10);
  REQUIRE((*ctx)->run_host(in, after).ok());
  CHECK(after == before);  // same inputs, same kernels: bit-identical
}

TEST_CASE("graphc run --profile prints the launch table and writes the JSON profile",
          "[gpu][profile][cli]") {
  const std::string graphc = graphc_binary();
  if (graphc.empty()) {
    WARN("skipped: no graphc binary next to this test binary nor at " GRAPHC_BINARY);
    return;
  }
  auto b =
      testing::build_engine_for_gpu(testing::mixed_launch_graph(), target::GemmMode::kCublasLt);
  const auto dir =
      std::filesystem::temp_directory_path() / ("graphc_profile_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string engine_path = (dir / "mixed.engine").string();
  REQUIRE(engine::write_engine_file(engine_path, b.contents).ok());
  auto r = testing::run_graphc_binary(graphc, "run " + engine_path +
                                                  " --iterations 20 --warmup-ms 20 --profile "
                                                  "--json " +
                                                  (dir / "r.json").string());
  std::printf("%s", r.output.c_str());
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(testing::contains(r.output, "rank  kernel"));
  CHECK(testing::contains(r.output, "cublasLt matmul"));
  CHECK(testing::contains(r.output, "sum of the launch medians"));
  CHECK(testing::contains(r.output, "one CUDA graph, end to end"));
  for (const auto& k : b.contents.manifest.kernels()) CHECK(testing::contains(r.output, k.name()));
  std::ifstream json(dir / "r.json");
  const std::string j((std::istreambuf_iterator<char>(json)), std::istreambuf_iterator<char>());
  CHECK(testing::contains(j, "\"profile\": ["));
  CHECK(testing::contains(j, "\"profile_summary\""));
  CHECK(testing::contains(j, "\"/fc/MatMul\""));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

TEST_CASE("C API: graphc_context_profile lists every kernel of an engine file",
          "[gpu][runtime][copy-only][profile]") {
  // Kernels do nothing on the stand-in driver, but launches and events run:
  // the C API's plumbing is checked there too.
  const ir::Graph graph = testing::small_runtime_graph();
  auto arch = driver::device_arch();
  REQUIRE(arch.ok());
  const engine::EngineContents contents = testing::small_runtime_engine(graph, {*arch});
  const auto path = std::filesystem::temp_directory_path() /
                    ("graphc_profile_c_" + std::to_string(::getpid()) + ".engine");
  REQUIRE(engine::write_engine_file(path.string(), contents).ok());
  graphc_engine* engine = nullptr;
  graphc_context* ctx = nullptr;
  REQUIRE(graphc_engine_load(path.string().c_str(), &engine) == GRAPHC_OK);
  std::filesystem::remove(path);
  REQUIRE(graphc_context_create(engine, &ctx) == GRAPHC_OK);
  // Fresh random inputs in, so the profiled runs read real data.
  std::mt19937 rng(31);
  std::vector<std::string> in_bytes, out_bytes(2);
  for (ir::ValueId id : graph.inputs) {
    const ir::Tensor t = testing::random_tensor(graph.value(id).dtype, graph.value(id).shape, rng);
    in_bytes.emplace_back(reinterpret_cast<const char*>(t.data()), t.byte_size());
  }
  std::vector<const void*> ins;
  std::vector<uint64_t> in_sizes, out_sizes;
  for (const auto& b : in_bytes) {
    ins.push_back(b.data());
    in_sizes.push_back(b.size());
  }
  std::vector<void*> outs;
  for (int32_t i = 0; i < 2; ++i) {
    graphc_binding_info info{};
    REQUIRE(graphc_engine_binding_info(engine, 2 + i, &info) == GRAPHC_OK);
    out_bytes[static_cast<size_t>(i)].resize(info.bytes);
    outs.push_back(out_bytes[static_cast<size_t>(i)].data());
    out_sizes.push_back(info.bytes);
  }
  REQUIRE(graphc_context_run_host(ctx, ins.data(), in_sizes.data(), 2, outs.data(),
                                  out_sizes.data(), 2) == GRAPHC_OK);
  int32_t n = -1;
  REQUIRE(graphc_context_profile(ctx, 7, &n) == GRAPHC_OK);
  INFO(graphc_last_error());
  REQUIRE(n >= contents.manifest.kernels_size());
  for (int32_t i = 0; i < n; ++i) {
    graphc_launch_timing t{};
    REQUIRE(graphc_context_profile_launch(ctx, i, &t) == GRAPHC_OK);
    std::printf("launch %d: %s (%s) %.2f us <- %s\n", i, t.name, t.kind, t.median_us, t.onnx_nodes);
    if (i < contents.manifest.kernels_size()) {
      const auto& k = contents.manifest.kernels(i);
      CHECK(std::string(t.name) == k.name());
      if (k.onnx_nodes_size() > 0) CHECK(testing::contains(t.onnx_nodes, k.onnx_nodes(0)));
    }
    CHECK(t.median_us > 0);
    CHECK(t.min_us <= t.median_us);
    CHECK(t.median_us <= t.max_us);
  }
  graphc_launch_timing t{};
  CHECK(graphc_context_profile_launch(ctx, n, &t) == GRAPHC_ERROR_INVALID_ARGUMENT);
  CHECK(testing::contains(graphc_last_error(), "out of range"));
  CHECK(graphc_context_profile(ctx, 0, &n) == GRAPHC_ERROR_INVALID_ARGUMENT);
  CHECK(graphc_context_profile(ctx, 7, nullptr) == GRAPHC_ERROR_INVALID_ARGUMENT);
  graphc_context_destroy(ctx);
  graphc_engine_destroy(engine);
}
