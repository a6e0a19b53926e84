// Algorithm choice without a GPU: an engine built with a timing cache made on
// a GPU machine records the cached algorithms (the CI use), the engine format
// validates the recorded fields, the executable carries them to the runtime,
// `graphc inspect` shows them, and `--tune` without a GPU is a clear error
// that writes nothing; a record's attributes have the sizes and types the
// installed libcublasLt expects. (Timing itself: tests/gpu/tune_gpu_test.cpp.)
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>

#include "driver/algorithm_tuning.h"
#include "driver/engine_build.h"
#include "driver/timing_cache.h"
#include "engine_format/conv_params.h"
#include "engine_format/engine_file.h"
#include "engine_format/library_algorithm.h"
#include "optimizer/pass.h"
#include "runtime/cublaslt_algorithm.h"
#include "runtime/engine_loader.h"
#include "tests/cli_util.h"
#include "tests/engine_test_util.h"
#include "tests/onnx_builder.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::contains;
using graphc::testing::run_graphc;
using graphc::testing::TempDir;

namespace {

namespace fs = std::filesystem;

constexpr const char* kH100 = "NVIDIA H100 80GB HBM3";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Two identical 64x64x64 linears and a 64x64x32 one: three cuBLASLt calls, two distinct.
Graph three_linears() {
  graphc::testing::GraphBuilder g;
  auto& rng = graphc::testing::test_rng();
  auto x = g.input("x", DType::kFloat32, {64, 64});
  auto w1 = g.constant("w1", graphc::testing::random_tensor(DType::kFloat32, {64, 64}, rng));
  auto w2 = g.constant("w2", graphc::testing::random_tensor(DType::kFloat32, {64, 64}, rng));
  auto w3 = g.constant("w3", graphc::testing::random_tensor(DType::kFloat32, {64, 32}, rng));
  auto y = g.node(OpKind::MatMul, {x, w1}, {}, 1, "mm1");
  y = g.node(OpKind::Relu, {y}, {}, 1, "relu1");
  y = g.node(OpKind::MatMul, {y, w2}, {}, 1, "mm2");
  y = g.node(OpKind::Relu, {y}, {}, 1, "relu2");
  y = g.node(OpKind::MatMul, {y, w3}, {}, 1, "mm3");
  g.output(y);
  Graph graph = g.build();
  optimizer::PassContext ctx;
  REQUIRE(optimizer::run_passes(graph, ctx).ok());
  return graph;
}

driver::BuildOptions cublaslt_options() {
  driver::BuildOptions o;
  o.archs = {"sm_90"};
  o.lower.gemm.mode = target::GemmMode::kCublasLt;
  return o;
}

std::vector<const engine::LibraryCall*> library_calls(const engine::Manifest& m) {
  std::vector<const engine::LibraryCall*> out;
  for (const auto& k : m.kernels())
    if (k.has_library_call()) out.push_back(&k.library_call());
  return out;
}

engine::CublasLtAlgorithm algorithm(int32_t id, uint32_t cc = 90) {
  engine::CublasLtAlgorithm a;
  a.algo_id = id;
  a.tile_id = 20;
  a.stages_id = 15;
  a.splitk_num = 1;
  a.library_version = 130100;
  a.compute_capability = cc;
  return a;
}

// A cache as a GPU machine would have written it: an entry per distinct call
// of `m`, measured on `device` (sm_`cc`), algorithm ids 100, 101, ...
driver::TimingCache cache_for(const engine::Manifest& m, const std::string& device, uint32_t cc) {
  driver::TimingCache cache;
  int32_t next = 100;
  for (const engine::LibraryCall* c : library_calls(m)) {
    driver::TimingKey key{device,  cc,          c->library(),        130100,
                          c->op(), c->params(), c->workspace_bytes()};
    if (cache.find(key)) continue;
    cache.put(key, {next, engine::encode_cublaslt_algorithm(algorithm(next, cc)), 0.01 * next});
    ++next;
  }
  return cache;
}

}  // namespace

TEST_CASE("a build with a timing cache and no GPU records the cached algorithms", "[tune][build]") {
  const Graph g = three_linears();
  auto plain = driver::build_engine(g, cublaslt_options());
  INFO(plain.status().message());
  REQUIRE(plain.ok());
  REQUIRE(library_calls(plain->manifest).size() == 3);
  for (const auto* c : library_calls(plain->manifest)) {
    CHECK(c->algorithm() == -1);
    CHECK(c->algorithm_config().empty());
    CHECK(c->tuned_ms() == 0);
  }

  driver::TimingCache cache = cache_for(plain->manifest, kH100, 90);
  REQUIRE(cache.size() == 2);  // the two identical calls share an entry
  driver::BuildOptions opts = cublaslt_options();
  opts.tune.cache = &cache;
  opts.tune.archs = opts.archs;
  std::vector<std::string> logs;
  opts.tune.log = [&](driver::TuneLogLevel, const std::string& line) { logs.push_back(line); };
  driver::BuildStats stats;
  auto tuned = driver::build_engine(g, opts, &stats);
  INFO(tuned.status().message());
  REQUIRE(tuned.ok());
  CHECK(stats.tuning.calls == 3);
  CHECK(stats.tuning.distinct == 2);
  CHECK(stats.tuning.cache_hits == 2);
  CHECK(stats.tuning.timed == 0);
  CHECK(stats.tuning.heuristic == 0);
  CHECK(stats.tuning.cache_added == 0);
  for (const auto* c : library_calls(tuned->manifest)) {
    auto rec = engine::decode_cublaslt_algorithm(c->algorithm_config());
    REQUIRE(rec.ok());
    CHECK(rec->algo_id == c->algorithm());
    CHECK(c->algorithm() >= 100);
    CHECK(c->tuned_ms() == Approx(0.01 * c->algorithm()));
  }
  // Identical calls got the same algorithm.
  auto calls = library_calls(tuned->manifest);
  CHECK(calls[0]->algorithm() == calls[1]->algorithm());
  CHECK(calls[2]->algorithm() != calls[0]->algorithm());
  bool logged_source = false;
  for (const auto& l : logs) logged_source |= contains(l, kH100) && contains(l, "sm_90");
  CHECK(logged_source);

  // Through the file format and into what the runtime executes.
  const std::string bytes = engine::testing::serialize_ok(*tuned);
  auto reread = engine::parse_engine(bytes);
  INFO(reread.status().message());
  REQUIRE(reread.ok());
  auto exe = runtime::executable_from_engine(*reread, 90);
  INFO(exe.status().message());
  REQUIRE(exe.ok());
  int recorded = 0;
  for (const auto& l : exe->launches) {
    const runtime::MatmulLaunch* mm = l.matmul();
    if (!mm) continue;
    REQUIRE(mm->recorded);
    CHECK(mm->recorded->algo_id == mm->heuristic_index);
    CHECK(mm->recorded->tile_id == 20);
    ++recorded;
  }
  CHECK(recorded == 3);
  // Deterministic: the same cache gives the same engine.
  auto again = driver::build_engine(g, opts);
  REQUIRE(again.ok());
  CHECK(engine::testing::serialize_ok(*again) == bytes);
}

TEST_CASE("cache entries of other architectures or invalid ones leave the heuristic",
          "[tune][build]") {
  const Graph g = three_linears();
  auto plain = driver::build_engine(g, cublaslt_options());
  REQUIRE(plain.ok());
  // Measured on an A100 only: a build for sm_90 has no entry.
  driver::TimingCache a100 = cache_for(plain->manifest, "NVIDIA A100-SXM4-80GB", 80);
  driver::BuildOptions opts = cublaslt_options();
  opts.tune.cache = &a100;
  opts.tune.archs = opts.archs;
  driver::BuildStats stats;
  auto built = driver::build_engine(g, opts, &stats);
  REQUIRE(built.ok());
  CHECK(stats.tuning.cache_hits == 0);
  CHECK(stats.tuning.heuristic == 2);
  for (const auto* c : library_calls(built->manifest)) CHECK(c->algorithm() == -1);
  // Building for both: the sm_80 entries are used.
  opts.archs = opts.tune.archs = {"sm_80", "sm_90"};
  built = driver::build_engine(g, opts, &stats);
  REQUIRE(built.ok());
  CHECK(stats.tuning.cache_hits == 2);

  // An entry whose record does not fit its call (workspace beyond the call's,
  // an id that is not its config's) is a warning and a miss.
  driver::TimingCache bad;
  for (const auto* c : library_calls(plain->manifest)) {
    engine::CublasLtAlgorithm a = algorithm(7);
    a.workspace_bytes = c->workspace_bytes() + 1;
    bad.put({kH100, 90, c->library(), 130100, c->op(), c->params(), c->workspace_bytes()},
            {7, engine::encode_cublaslt_algorithm(a), 0.5});
  }
  opts = cublaslt_options();
  opts.tune.cache = &bad;
  opts.tune.archs = opts.archs;
  std::vector<std::string> warnings;
  opts.tune.log = [&](driver::TuneLogLevel level, const std::string& line) {
    if (level == driver::TuneLogLevel::kWarning) warnings.push_back(line);
  };
  built = driver::build_engine(g, opts, &stats);
  REQUIRE(built.ok());
  CHECK(stats.tuning.heuristic == 2);
  REQUIRE(warnings.size() == 2);
  CHECK(contains(warnings[0], "ignoring its timing cache entry"));
  CHECK(contains(warnings[0], "workspace"));
}

TEST_CASE("engine validation covers the recorded algorithm fields", "[tune][engine]") {
  auto built = driver::build_engine(three_linears(), cublaslt_options());
  REQUIRE(built.ok());
  auto first_call = [](engine::EngineContents& c) -> engine::LibraryCall* {
    for (auto& k : *c.manifest.mutable_kernels())
      if (k.has_library_call()) return k.mutable_library_call();
    return nullptr;
  };
  // A valid record round-trips.
  {
    engine::EngineContents c = *built;
    engine::LibraryCall* call = first_call(c);
    call->set_algorithm(42);
    call->set_algorithm_config(engine::encode_cublaslt_algorithm(algorithm(42)));
    call->set_tuned_ms(0.25);
    auto back = engine::parse_engine(engine::testing::serialize_ok(c));
    INFO(back.status().message());
    REQUIRE(back.ok());
    CHECK(engine::testing::same_contents(*back, c));
  }
  // An older engine's heuristic index (no config) still reads.
  {
    engine::EngineContents c = *built;
    first_call(c)->set_algorithm(3);
    REQUIRE(engine::parse_engine(engine::testing::serialize_ok(c)).ok());
  }
  auto refused = [&](auto edit, const std::string& part) {
    engine::EngineContents c = *built;
    edit(*first_call(c));
    engine::testing::expect_invalid_manifest(c, part);
  };
  refused(
      [](engine::LibraryCall& call) {
        call.set_algorithm(41);
        call.set_algorithm_config(engine::encode_cublaslt_algorithm(algorithm(42)));
      },
      "differs from its config's algo id 42");
  refused(
      [](engine::LibraryCall& call) {
        call.set_algorithm(42);
        call.set_algorithm_config("\x01\x00\x00\x00junk");
      },
      "cublasLt algorithm config");
  refused(
      [](engine::LibraryCall& call) {
        engine::CublasLtAlgorithm a = algorithm(42);
        a.workspace_bytes = call.workspace_bytes() + 256;
        call.set_algorithm(42);
        call.set_algorithm_config(engine::encode_cublaslt_algorithm(a));
      },
      "workspace");
  refused([](engine::LibraryCall& call) { call.set_tuned_ms(0.5); },
          "without a recorded algorithm");
  refused(
      [](engine::LibraryCall& call) {
        call.set_algorithm(42);
        call.set_algorithm_config(engine::encode_cublaslt_algorithm(algorithm(42)));
        call.set_tuned_ms(std::numeric_limits<double>::infinity());
      },
      "tuned time");
}

TEST_CASE("graphc build --timing-cache without a GPU, inspect shows the recorded algorithms",
          "[tune][cli]") {
  TempDir dir;
  const std::string model = "models/mlp.onnx";
  const std::string plain = dir.path() + "/plain.engine";
  const std::string tuned = dir.path() + "/tuned.engine";
  const std::string cache_path = dir.path() + "/timing.cache";
  auto r = run_graphc("build " + model + " --arch sm_90 --gemm cublaslt -o " + plain);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.output,
                 "3 kernels in 0 modules (all library calls, no generated code) for "
                 "sm_90, arena"));
  auto contents = engine::read_engine_file(plain);
  REQUIRE(contents.ok());
  auto inspect = run_graphc("inspect " + plain);
  CHECK(contains(inspect.output, "heuristic at load"));
  CHECK(contains(inspect.output, "gemm (cublasLt matmul, heuristic at load)"));  // not "-1"
  CHECK_FALSE(contains(inspect.output, "algorithm -1"));

  // A cache from "the GPU machine".
  std::ofstream(cache_path, std::ios::binary)
      << cache_for(contents->manifest, kH100, 90).serialize();
  const std::string cache_bytes = read_file(cache_path);
  r = run_graphc("build " + model + " --arch sm_90 --gemm cublaslt --timing-cache " + cache_path +
                 " -o " + tuned);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.output, "3 of 3 library calls (3 distinct) tuned (3 from the timing cache)"));
  // Nothing new was measured: the cache file is untouched.
  CHECK(read_file(cache_path) == cache_bytes);
  inspect = run_graphc("inspect " + tuned);
  INFO(inspect.output);
  CHECK(contains(inspect.output, "tuned: algo 100 tile 128x128 stages 64x3 splitK 1"));
  CHECK(contains(inspect.output, "(1.000 ms)"));
  CHECK_FALSE(contains(inspect.output, "heuristic at load"));
  auto json = run_graphc("inspect --json " + tuned);
  const auto j = nlohmann::json::parse(json.output);
  const auto& config = j["kernels"][0]["algorithm_config"];
  CHECK(config["algo_id"] == 100);
  CHECK(config["tile_id"] == 20);
  CHECK(config["tile"] == "128x128");
  CHECK(j["kernels"][0]["tuned_ms"] == 1.0);
  // An engine of library calls only: no generated code, counted as such.
  CHECK(j["modules"] == 0);
  CHECK(j["archs"] == nlohmann::json::array());
  CHECK(j["library_calls"] == 3);
  CHECK(contains(inspect.output,
                 "code      no generated kernels; 3 library calls (cublasLt 3), "
                 "which run on any GPU the library supports"));

  // A damaged cache: a warning, the heuristic, exit 0; not rewritten without --tune.
  std::string damaged = cache_bytes;
  damaged[damaged.size() - 3] ^= 0x5a;
  std::ofstream(cache_path, std::ios::binary | std::ios::trunc) << damaged;
  r = run_graphc("build " + model + " --arch sm_90 --gemm cublaslt --timing-cache " + cache_path +
                 " -o " + tuned);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.output, "is not usable (checksum mismatch"));
  CHECK(contains(r.output, "0 of 3 library calls"));
  CHECK(read_file(cache_path) == damaged);
  CHECK(contains(run_graphc("inspect " + tuned).output, "heuristic at load"));
}

TEST_CASE("graphc build --tune without a GPU is an error that writes nothing", "[tune][cli]") {
  TempDir dir;
  const std::string out = dir.path() + "/t.engine";
  const std::string cache = dir.path() + "/t.cache";
  auto r = run_graphc("build models/mlp.onnx --arch sm_90 --gemm cublaslt --tune --timing-cache " +
                      cache + " -o " + out);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "--tune needs a GPU"));
  CHECK_FALSE(fs::exists(out));
  CHECK_FALSE(fs::exists(cache));
}

TEST_CASE("a recorded cuBLASLt config survives cuBLASLt's own attribute setters and getters",
          "[tune][runtime]") {
  // Checks every attribute's size and type against the real library (its
  // setters refuse a wrong size); they need no GPU.
  auto lt = runtime::load_cublaslt();
  if (!lt.ok()) {
    WARN("libcublasLt not loadable here, not checked: " << lt.status().message());
    return;
  }
  engine::CublasLtAlgorithm want = algorithm(0);  // the id is AlgoInit's, 0 in a zeroed algo
  want.tile_id = 24;
  want.splitk_num = 3;
  want.reduction_scheme = 4;
  want.cta_swizzling = 1;
  want.custom_option = 2;
  want.stages_id = 21;
  want.inner_shape_id = 4;
  want.cluster_shape_id = 6;
  want.workspace_bytes = 1 << 20;
  want.library_version = static_cast<uint32_t>((*lt)->cublasLtGetVersion());
  cublasLtMatmulAlgo_t algo{};
  Status st = runtime::apply_cublaslt_config(**lt, &algo, want);
  INFO(st.message());
  REQUIRE(st.ok());
  auto got = runtime::read_cublaslt_algorithm(**lt, algo, want.workspace_bytes, 90);
  INFO((got.ok() ? "" : got.status().message()));
  REQUIRE(got.ok());
  CHECK(*got == want);
  CHECK(got->library_version >= 130000);
}

TEST_CASE("a timing cache entry for a cuDNN conv is recorded in the call and its descriptor",
          "[tune][cudnn][build]") {
  graphc::testing::GraphBuilder b;
  auto& rng = graphc::testing::test_rng();
  auto x = b.input("x", DType::kFloat16, {2, 16, 14, 14});
  auto w = b.constant("w", graphc::testing::random_tensor(DType::kFloat16, {32, 16, 3, 3}, rng));
  const std::vector<int64_t> pads{1, 1, 1, 1};
  auto y = b.node(OpKind::Conv, {x, w},
                  graphc::testing::attrs({{"pads", Attribute::of_ints(pads)}}), 1, "conv");
  y = b.node(OpKind::Relu, {y}, {}, 1, "relu");
  b.output(y);
  Graph g = b.build();
  optimizer::PassContext ctx;
  REQUIRE(optimizer::run_passes(g, ctx).ok());
  driver::BuildOptions opts;
  opts.archs = {"sm_90"};
  auto plain = driver::build_engine(g, opts);
  INFO(plain.status().message());
  REQUIRE(plain.ok());
  const auto calls = library_calls(plain->manifest);
  REQUIRE(calls.size() == 1);
  const engine::LibraryCall& c = *calls[0];
  REQUIRE(c.library() == "cudnn");
  CHECK(c.algorithm() == -1);

  // CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM (1), measured on an H100.
  driver::TimingCache cache;
  cache.put({kH100, 90, "cudnn", 91900, c.op(), c.params(), c.workspace_bytes()}, {1, "", 0.05});
  opts.tune.cache = &cache;
  opts.tune.archs = opts.archs;
  driver::BuildStats stats;
  auto tuned = driver::build_engine(g, opts, &stats);
  INFO(tuned.status().message());
  REQUIRE(tuned.ok());
  CHECK(stats.tuning.cache_hits == 1);
  const engine::LibraryCall& t = *library_calls(tuned->manifest)[0];
  CHECK(t.algorithm() == 1);
  CHECK(t.tuned_ms() == Approx(0.05));
  auto params = engine::decode_conv_params(t.params());
  REQUIRE(params.ok());
  CHECK(params->algorithm == 1);  // the validator wants the call and the descriptor to agree
  auto reread = engine::parse_engine(engine::testing::serialize_ok(*tuned));
  INFO(reread.status().message());
  REQUIRE(reread.ok());
  auto exe = runtime::executable_from_engine(*reread, 90);
  INFO(exe.status().message());
  REQUIRE(exe.ok());
  REQUIRE(exe->launches[0].conv());
  CHECK(exe->launches[0].conv()->params.algorithm == 1);
}
