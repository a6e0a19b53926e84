// `graphc build --tune` on the GPU: cuBLASLt candidates are timed and the
// fastest recorded; the tuned engine loads its recorded algorithms (no
// fallback), runs and matches the reference executor on fresh random inputs;
// a rebuild with the timing cache times nothing; a recorded algorithm this GPU
// cannot run falls back to the heuristic with a warning and still matches.
// Timings are printed (tuned vs the heuristic's choice), never asserted.
//
// Tolerance as in cublaslt_gpu_test.cpp: |gpu - ref| <= rtol * (|ref| + sqrt(K)),
// rtol fp32 1e-5, fp16 2^-8 (the tuner may pick split-K: same bound).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "driver/algorithm_tuning.h"
#include "driver/engine_build.h"
#include "engine_format/library_algorithm.h"
#include "optimizer/pass.h"
#include "reference/executor.h"
#include "runtime/cublaslt.h"
#include "runtime/cublaslt_tuning.h"
#include "runtime/engine_loader.h"
#include "runtime/session.h"
#include "runtime/warnings.h"
#include "tests/cli_util.h"
#include "tests/onnx_builder.h"
#include "tests/test_util.h"
#include "tests/cuda_pass_context.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::GraphBuilder;

namespace {

// fp16 y = gelu(x @ W1 + b1) (512x1024x1024), fp32 z = relu(x32 @ W2) (256x512x384):
// two distinct cuBLASLt calls, big enough that candidates differ in time.
Graph tune_graph() {
  GraphBuilder g;
  auto& rng = testing::test_rng();
  auto x = g.input("x", DType::kFloat16, {512, 1024});
  auto w1 = g.constant("w1", testing::random_tensor(DType::kFloat16, {1024, 1024}, rng, -1, 1));
  auto b1 = g.constant("b1", testing::random_tensor(DType::kFloat16, {1024}, rng, -1, 1));
  auto y = g.node(OpKind::Add, {g.node(OpKind::MatMul, {x, w1}), b1});
  y = g.node(OpKind::Gelu, {y}, testing::attrs({{"approximate", Attribute::of_string("tanh")}}));
  auto x32 = g.input("x32", DType::kFloat32, {256, 512});
  auto w2 = g.constant("w2", testing::random_tensor(DType::kFloat32, {512, 384}, rng, -1, 1));
  auto z = g.node(OpKind::Relu, {g.node(OpKind::MatMul, {x32, w2})});
  g.output(y);
  g.output(z);
  return g.build();
}

int64_t k_of_output(size_t i) { return i == 0 ? 1024 : 512; }

driver::BuildOptions tune_options(int sm) {
  driver::BuildOptions o;
  o.archs = {fmt::format("sm_{}", sm)};
  o.lower.gemm.mode = target::GemmMode::kCublasLt;
  o.compile.cache_dir = emit::default_cache_dir();
  o.tune.archs = o.archs;
  o.tune.log = [](driver::TuneLogLevel, const std::string& line) {
    std::printf("  %s\n", line.c_str());
  };
  return o;
}

// Captures runtime warnings for the scope.
struct WarningCapture {
  std::vector<std::string> lines;
  runtime::WarningSink previous;
  WarningCapture() {
    previous = runtime::set_warning_sink([this](const std::string& m) {
      std::printf("  runtime warning: %s\n", m.c_str());
      lines.push_back(m);
    });
  }
  ~WarningCapture() { runtime::set_warning_sink(previous); }
};

// Runs `contents` on device 0 and compares with the reference; returns how each
// matmul's algorithm was chosen at load.
std::vector<runtime::MatmulSetup::Source> run_and_compare(const engine::EngineContents& contents,
                                                          const Graph& original, int sm) {
  auto bytes = engine::serialize_engine(contents);
  REQUIRE(bytes.ok());
  auto parsed = engine::parse_engine(*bytes);
  INFO((parsed.ok() ? "" : parsed.status().message()));
  REQUIRE(parsed.ok());
  auto exe = runtime::executable_from_engine(*parsed, sm);
  INFO((exe.ok() ? "" : exe.status().message()));
  REQUIRE(exe.ok());
  auto session = runtime::Session::create(*exe);
  INFO((session.ok() ? "" : session.status().message()));
  REQUIRE(session.ok());
  // The same load-time choice, made again here to read it (the primary context is current).
  auto matmuls = runtime::EngineMatmuls::create(exe->launches);
  INFO((matmuls.ok() ? "" : matmuls.status().message()));
  REQUIRE(matmuls.ok());
  std::vector<runtime::MatmulSetup::Source> sources;
  for (size_t i = 0; i < exe->launches.size(); ++i)
    if (const runtime::MatmulSetup* s = (*matmuls)->setup(i)) sources.push_back(s->source);

  std::map<std::string, Tensor> feeds;
  std::vector<std::string> inputs;
  for (ValueId id : original.inputs) {
    const Value& v = original.value(id);
    Tensor t = testing::random_tensor(v.dtype, v.shape, testing::test_rng(), -1, 1);
    inputs.emplace_back(reinterpret_cast<const char*>(t.data()), t.byte_size());
    feeds[v.name] = std::move(t);
  }
  std::vector<std::string> outputs;
  Status st = (*session)->run(inputs, outputs);
  INFO(st.message());
  REQUIRE(st.ok());
  auto want = reference::execute(original, feeds);
  REQUIRE(want.ok());
  REQUIRE(outputs.size() == original.outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = original.value(original.outputs[i]).name;
    const Tensor& ref = want->at(name);
    REQUIRE(outputs[i].size() == ref.byte_size());
    Tensor got(ref.dtype(), ref.shape());
    std::memcpy(got.mutable_data(), outputs[i].data(), outputs[i].size());
    const double rtol = ref.dtype() == DType::kFloat16 ? 1.0 / 256 : 1e-5;
    const double scale = std::sqrt(static_cast<double>(k_of_output(i)));
    int64_t bad = 0, first = -1;
    for (int64_t k = 0; k < ref.numel(); ++k) {
      const double a = ref.get_f64(k), b = got.get_f64(k);
      if (!(std::fabs(a - b) <= rtol * (std::fabs(a) + scale)) && bad++ == 0) first = k;
    }
    INFO(name << ": " << bad << " of " << ref.numel() << " differ; first at " << first
              << ": reference " << (first >= 0 ? ref.get_f64(first) : 0) << ", gpu "
              << (first >= 0 ? got.get_f64(first) : 0));
    CHECK(bad == 0);
  }
  return sources;
}

std::vector<engine::LibraryCall*> calls_of(engine::EngineContents& c) {
  std::vector<engine::LibraryCall*> out;
  for (auto& k : *c.manifest.mutable_kernels())
    if (k.has_library_call()) out.push_back(k.mutable_library_call());
  return out;
}

Graph optimized(const Graph& g) {
  Graph out = g;
  // The target tune_options builds for (cuBLASLt whenever expressible).
  target::CudaOptions lower;
  lower.gemm.mode = target::GemmMode::kCublasLt;
  optimizer::PassContext ctx = testing::cuda_pass_context(lower);
  REQUIRE(optimizer::run_passes(out, ctx).ok());
  return out;
}

}  // namespace

TEST_CASE("tuning (--tune) records the fastest cuBLASLt algorithm, the engine runs it and matches",
          "[gpu][tune]") {
  auto sm = driver::device_sm();
  REQUIRE(sm.ok());
  const Graph original = tune_graph();
  const Graph graph = optimized(original);
  driver::TimingCache cache;
  driver::BuildOptions opts = tune_options(*sm);
  opts.tune.measure = true;
  opts.tune.cache = &cache;
  std::printf("tuning build (sm_%d):\n", *sm);
  driver::BuildStats stats;
  auto built = driver::build_engine(graph, opts, &stats);
  INFO((built.ok() ? "" : built.status().message()));
  REQUIRE(built.ok());
  std::printf(
      "tuned %zu calls (%zu distinct): %zu timed, %zu candidates, %zu cache hits in %.3f s\n",
      stats.tuning.calls, stats.tuning.distinct, stats.tuning.timed, stats.tuning.candidates,
      stats.tuning.cache_hits, stats.tuning.seconds);
  CHECK(stats.tuning.distinct == 2);
  CHECK(stats.tuning.timed == 2);
  CHECK(stats.tuning.candidates >= 2);
  CHECK(stats.tuning.cache_added == 2);
  CHECK(cache.size() == 2);
  engine::EngineContents tuned = *built;
  for (engine::LibraryCall* c : calls_of(tuned)) {
    std::printf("recorded: %s\n",
                engine::describe_recorded_algorithm(c->library(), c->algorithm(),
                                                    c->algorithm_config(), c->tuned_ms())
                    .c_str());
    CHECK(c->algorithm() >= 0);
    CHECK_FALSE(c->algorithm_config().empty());
    CHECK(c->tuned_ms() > 0);
  }
  {
    WarningCapture warnings;
    auto sources = run_and_compare(tuned, original, *sm);
    REQUIRE(sources.size() == 2);
    for (auto s : sources) CHECK(s == runtime::MatmulSetup::Source::kRecorded);
    CHECK(warnings.lines.empty());
  }

  // Tuned vs the heuristic's choice, per call, measured again side by side.
  for (engine::LibraryCall* c : calls_of(tuned)) {
    auto p = engine::decode_matmul_params(c->params());
    REQUIRE(p.ok());
    auto t = runtime::tune_cublaslt_matmul(*p, c->workspace_bytes());
    INFO((t.ok() ? "" : t.status().message()));
    REQUIRE(t.ok());
    REQUIRE(t->best >= 0);
    std::printf("%s: heuristic's choice %.4f ms, fastest %.4f ms (candidate #%d of %zu)\n",
                engine::describe_matmul(*p).c_str(), t->candidates[0].median_ms,
                t->candidates[static_cast<size_t>(t->best)].median_ms, t->best,
                t->candidates.size());
    for (const auto& cand : t->candidates)
      std::printf("  #%d %s: %s\n", cand.rank,
                  engine::describe_cublaslt_algorithm(cand.algorithm).c_str(),
                  cand.status.ok() ? fmt::format("{:.4f} ms", cand.median_ms).c_str()
                                   : cand.status.message().c_str());
  }

  // A rebuild with the cache times nothing and records the same algorithms.
  driver::BuildStats again_stats;
  std::printf("rebuild with the timing cache:\n");
  auto again = driver::build_engine(graph, opts, &again_stats);
  REQUIRE(again.ok());
  CHECK(again_stats.tuning.timed == 0);
  CHECK(again_stats.tuning.candidates == 0);
  CHECK(again_stats.tuning.cache_hits == 2);
  CHECK(again_stats.tuning.cache_added == 0);
  auto a = engine::serialize_engine(*built);
  auto b = engine::serialize_engine(*again);
  REQUIRE((a.ok() && b.ok()));
  CHECK(*a == *b);
  // And so does a build without --tune (the CI path), from the same cache.
  opts.tune.measure = false;
  auto offline = driver::build_engine(graph, opts, &again_stats);
  REQUIRE(offline.ok());
  CHECK(again_stats.tuning.cache_hits == 2);
  auto c = engine::serialize_engine(*offline);
  REQUIRE(c.ok());
  CHECK(*c == *a);
}

TEST_CASE("a recorded algorithm this GPU cannot run falls back to the heuristic with a warning",
          "[gpu][tune]") {
  auto sm = driver::device_sm();
  REQUIRE(sm.ok());
  const Graph original = tune_graph();
  driver::TimingCache cache;
  driver::BuildOptions opts = tune_options(*sm);
  opts.tune.measure = true;
  opts.tune.cache = &cache;
  auto built = driver::build_engine(optimized(original), opts);
  INFO((built.ok() ? "" : built.status().message()));
  REQUIRE(built.ok());
  // Two ways a record can be wrong here: an algorithm id cuBLASLt does not
  // have, and a real id with a tile that does not exist.
  for (int variant = 0; variant < 2; ++variant) {
    INFO("variant " << variant);
    engine::EngineContents bad = *built;
    engine::LibraryCall* call = calls_of(bad).front();
    auto rec = engine::decode_cublaslt_algorithm(call->algorithm_config());
    REQUIRE(rec.ok());
    if (variant == 0)
      rec->algo_id = 9999;
    else
      rec->tile_id = 9999;
    call->set_algorithm(rec->algo_id);
    call->set_algorithm_config(engine::encode_cublaslt_algorithm(*rec));
    WarningCapture warnings;
    auto sources = run_and_compare(bad, original, *sm);
    REQUIRE(sources.size() == 2);
    CHECK(sources[0] == runtime::MatmulSetup::Source::kFallback);
    CHECK(sources[1] == runtime::MatmulSetup::Source::kRecorded);
    // Session::create and the EngineMatmuls made for the check: one at least.
    REQUIRE_FALSE(warnings.lines.empty());
    for (const std::string& w : warnings.lines) {
      CHECK(testing::contains(w, "cannot run on this GPU/library"));
      CHECK(testing::contains(w, "using cuBLASLt's heuristic instead"));
    }
  }
}

TEST_CASE("graphc build --tune --timing-cache end to end through the CLI", "[gpu][tune]") {
  testing::TempDir dir;
  const std::string engine_path = dir.path() + "/mlp.engine";
  const std::string cache_path = dir.path() + "/mlp.timing";
  const std::string build =
      "build models/mlp.onnx --arch native --gemm cublaslt --tune -v "
      "--timing-cache " +
      cache_path + " -o " + engine_path;
  auto r = testing::run_graphc(build);
  std::printf("first build:\n%s\n", r.output.c_str());
  REQUIRE(r.exit_code == 0);
  CHECK(testing::contains(r.output, "candidates timed"));
  CHECK(testing::contains(r.output, "3 of 3 library calls (3 distinct) tuned (3 timed"));
  CHECK(std::filesystem::exists(cache_path));
  auto inspect = testing::run_graphc("inspect " + engine_path);
  std::printf("%s\n", inspect.output.c_str());
  CHECK(testing::contains(inspect.output, "tuned: algo"));
  auto run = testing::run_graphc("run " + engine_path);
  std::printf("%s\n", run.output.c_str());
  CHECK(run.exit_code == 0);
  CHECK_FALSE(testing::contains(run.output, "warning"));
  r = testing::run_graphc(build);
  std::printf("second build:\n%s\n", r.output.c_str());
  REQUIRE(r.exit_code == 0);
  CHECK(testing::contains(r.output, "(0 timed, 0 candidates, 3 from the timing cache)"));
}
