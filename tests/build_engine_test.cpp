// driver::build_engine and its compiler plumbing, in-process: one code module
// per distinct kernel, progress and phase
// callbacks, cache statistics, a rebuild from the cache giving the same
// contents, --arch resolution, and compile_cuda_many's progress and
// stop-on-error behaviour.
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "driver/engine_build.h"
#include "emit/nvrtc/nvrtc_compiler.h"
#include "optimizer/pass.h"
#include "tests/onnx_builder.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::GraphBuilder;

namespace {

// Three elementwise kernels (tanh of a, tanh of b, exp of a) and a reshape
// output (a copy, which has no code). The two tanh kernels are the same code
// (same shapes and dtypes): they share one module.
Graph shared_kernel_graph() {
  GraphBuilder g;
  auto a = g.input("a", DType::kFloat32, {4, 32});
  auto b = g.input("b", DType::kFloat32, {4, 32});
  g.output(g.node(OpKind::Tanh, {a}, {}, 1, "tanh_a"));
  g.output(g.node(OpKind::Tanh, {b}, {}, 1, "tanh_b"));
  auto shape = g.constant("shape", Tensor::from_i64({128}, {1}));
  g.output(g.node(OpKind::Reshape, {g.node(OpKind::Exp, {a}, {}, 1, "exp"), shape}, {}, 1, "flat"));
  Graph graph = g.build();
  optimizer::PassContext ctx;
  REQUIRE(optimizer::run_passes(graph, ctx).ok());
  return graph;
}

}  // namespace

TEST_CASE("build_engine compiles one module per distinct kernel and reports progress", "[build]") {
  // 3 kernels + 1 copy; the two tanh kernels share code: 2 modules x 2 archs
  // = 4 compilations, all misses in a fresh cache, all hits on the rebuild,
  // which gives identical contents. Phases come in order; progress counts 0..4.
  graphc::testing::TempDir cache;
  Graph graph = shared_kernel_graph();
  driver::BuildOptions opts;
  opts.archs = {"sm_80", "sm_90"};
  opts.compile.cache_dir = cache.path();
  std::vector<std::string> phases;
  std::vector<std::pair<size_t, size_t>> progress;
  opts.on_phase = [&](std::string_view p) { phases.emplace_back(p); };
  opts.on_compiled = [&](size_t done, size_t total) { progress.emplace_back(done, total); };
  driver::BuildStats stats;
  auto first = driver::build_engine(graph, opts, &stats);
  INFO((first.ok() ? "" : first.status().message()));
  REQUIRE(first.ok());
  CHECK(phases == std::vector<std::string>{"emit", "compile"});
  CHECK(stats.kernels == 4);
  CHECK(stats.modules == 2);
  CHECK(stats.compilations == 4);
  CHECK(stats.cache_hits == 0);
  CHECK(stats.cache_misses == 4);
  REQUIRE(progress.size() == 5);
  for (size_t i = 0; i < progress.size(); ++i) CHECK(progress[i] == std::make_pair(i, size_t{4}));

  const engine::Manifest& m = first->manifest;
  CHECK(engine::module_count(m) == 2);
  REQUIRE(m.kernels_size() == 4);
  std::map<std::string, int32_t> module_of;  // kernel name -> module
  for (const auto& k : m.kernels())
    if (!k.copy()) module_of[k.name()] = k.module();
  REQUIRE(module_of.size() == 3);
  CHECK(module_of.at("ew_tanh_a") == module_of.at("ew_tanh_b"));
  CHECK(module_of.at("ew_tanh_a") != module_of.at("ew_exp"));
  CHECK(std::count_if(m.kernels().begin(), m.kernels().end(),
                      [](const engine::Kernel& k) { return k.copy(); }) == 1);
  // Arch-major layout: sm_80's modules, then sm_90's; PTX then CUBIN each.
  REQUIRE(first->code.size() == 8);
  CHECK(first->code[0].arch == "sm_80");
  CHECK(first->code[3].module == 1);
  CHECK(first->code[4].arch == "sm_90");
  CHECK(first->code[4].module == 0);
  CHECK(first->code[5].kind == engine::CodeBlob::Kind::kCubin);

  driver::BuildStats again;
  auto second = driver::build_engine(graph, opts, &again);
  REQUIRE(second.ok());
  CHECK(again.cache_hits == 4);
  CHECK(again.cache_misses == 0);
  auto a = engine::serialize_engine(*first), b = engine::serialize_engine(*second);
  REQUIRE((a.ok() && b.ok()));
  CHECK(*a == *b);

  opts.archs = {"sm_90", "sm_90"};
  auto twice = driver::build_engine(graph, opts);
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.status().message() == "architecture 'sm_90' is listed twice");
}

TEST_CASE("resolve_archs sorts, drops repeats and explains bad values", "[build]") {
  auto archs = driver::resolve_archs({"sm_90", "sm_80", "sm_90", "sm_86"});
  REQUIRE(archs.ok());
  CHECK(*archs == std::vector<std::string>{"sm_80", "sm_86", "sm_90"});
  CHECK_FALSE(driver::resolve_archs({}).ok());
  auto bad = driver::resolve_archs({"sm_80", "sm_7"});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == ErrorCode::kInvalidArgument);
  CHECK(bad.status().message() == "--arch 'sm_7': expected sm_NN (sm_80, sm_90, ...) or native");
  auto old = driver::resolve_archs({"sm_50"});
  REQUIRE_FALSE(old.ok());
  CHECK(old.status().message().find("is not supported by NVRTC") != std::string::npos);
  auto supported = emit::nvrtc_supported_archs();
  REQUIRE(supported.ok());
  CHECK(std::is_sorted(supported->begin(), supported->end()));
  CHECK(std::count(supported->begin(), supported->end(), 90) == 1);
}

TEST_CASE("compile_cuda_many reports progress and stops after a failure when asked", "[build]") {
  // Progress: one call per (source, arch), serialized, done counting up to
  // the total. stop_on_error: the broken source's NVRTC error is the one
  // reported first in source order; later sources are not compiled.
  std::vector<emit::CudaSource> sources;
  for (int i = 0; i < 6; ++i)
    sources.push_back(
        {"k" + std::to_string(i), "extern \"C\" __global__ void progress_k" + std::to_string(i) +
                                      "(float* p) { p[0] = " + std::to_string(i) + ".0f; }\n"});
  emit::CompileOptions opts;
  opts.jobs = 3;
  std::mutex mu;
  std::vector<size_t> seen;
  opts.on_progress = [&](size_t done, size_t total) {
    std::lock_guard<std::mutex> lock(mu);  // must never be needed: calls are serialized
    CHECK(total == 12);
    seen.push_back(done);
  };
  auto all = emit::compile_cuda_many(sources, {"sm_80", "sm_90"}, opts);
  for (const auto& r : all) CHECK(r.ok());
  std::vector<size_t> want(12);
  for (size_t i = 0; i < want.size(); ++i) want[i] = i + 1;
  CHECK(seen == want);

  sources[1].source = "this is not CUDA\n";
  opts.on_progress = nullptr;
  opts.stop_on_error = true;
  opts.jobs = 1;  // sequential: everything after the failure is skipped
  auto stopped = emit::compile_cuda_many(sources, {"sm_90"}, opts);
  REQUIRE(stopped.size() == 6);
  CHECK(stopped[0].ok());
  REQUIRE_FALSE(stopped[1].ok());
  CHECK(stopped[1].status().message().find("NVRTC failed to compile kernel 'k1'") !=
        std::string::npos);
  for (size_t i = 2; i < stopped.size(); ++i) {
    REQUIRE_FALSE(stopped[i].ok());
    CHECK(stopped[i].status().message().find("not compiled after an earlier failure") !=
          std::string::npos);
  }
}
