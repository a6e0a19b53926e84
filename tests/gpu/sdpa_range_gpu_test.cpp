// cuDNN's fused SDPA in engines that serve a shape range (Kernel.preferred_call,
// runtime/cudnn_sdpa.h EngineSdpas::setup_at) on a GPU: a float16 BERT-style
// attention built once with two profiles runs `graphc run --check` against
// the reference executor at min, opt, max and odd shapes of each; through the
// runtime API each new shape builds its plan on first use (none at opt, built
// at load), matches the same engine built with --attention generated on fresh
// random inputs, and its first use's host time is reported; the tiny BERT in
// float16 runs --check over batch x seq. Those build plans synchronously
// (GRAPHC_SDPA_SYNC_PLANS=1: cuDNN at every shape from its first run); one
// test runs the default, planning in the background: a new shape's first
// runs take the generated kernel, then cuDNN once its plan is ready.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine_format/engine_file.h"
#include "runtime/cudnn_sdpa.h"
#include "runtime/engine.h"
#include "runtime/engine_impl.h"
#include "runtime/engine_loader.h"
#include "support/half.h"
#include "tests/attention_range_models.h"
#include "tests/cli_util.h"
#include "tests/onnx_builder.h"

using namespace graphc;
using namespace graphc::testing;

namespace {

// Sets (or, with nullptr, unsets) an environment variable for the scope:
// engines loaded in it and graphc children read it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Two profiles over batch x seq (hidden 128): short and long sequences.
const char* kProfiles[][3] = {{"1x16", "4x64", "8x256"}, {"1x128", "2x384", "4x512"}};

std::string core_profile(int p) {
  auto qkv = [](const char* bs) { return std::string(bs) + "x128"; };
  std::string out = "--shape-profile ";
  for (const char* t : {"q", "k", "v"})
    out += fmt::format("{}:{}/{}/{},", t, qkv(kProfiles[p][0]), qkv(kProfiles[p][1]),
                       qkv(kProfiles[p][2]));
  return out + fmt::format("attention_mask:{}/{}/{}", kProfiles[p][0], kProfiles[p][1],
                           kProfiles[p][2]);
}

std::string build_core(TempDir& dir, const std::string& name, const std::string& extra) {
  const std::string onnx = dir.file("core.onnx");
  bert_attention_block(128, 2, false).write(onnx);
  const std::string engine = dir.file(name);
  auto built = run_graphc("build " + onnx + " " + core_profile(0) + " " + core_profile(1) +
                          " --arch sm_90 --precision fp16 " + extra + " -o " + engine);
  INFO(built.output);
  REQUIRE(built.exit_code == 0);
  return engine;
}

// Fresh random inputs at batch x seq, in each input binding's dtype: q, k, v
// uniform in [-1, 1], the mask 0 or 1 (a key masked with probability 1/4).
std::vector<std::string> random_inputs(const runtime::Engine& e, int64_t b, int64_t s,
                                       std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<std::string> out;
  for (const auto& bi : e.bindings()) {
    if (!bi.is_input) continue;
    const bool mask = bi.name == "attention_mask";
    const int64_t n = mask ? b * s : b * s * 128;
    std::string bytes;
    for (int64_t i = 0; i < n; ++i) {
      const float v = mask ? (u(rng) > -0.5f ? 1.0f : 0.0f) : u(rng);
      if (bi.dtype == 10) {
        const uint16_t h = float_to_half_bits(v);
        bytes.append(reinterpret_cast<const char*>(&h), 2);
      } else {
        bytes.append(reinterpret_cast<const char*>(&v), 4);
      }
    }
    out.push_back(std::move(bytes));
  }
  return out;
}

std::vector<float> as_floats(const std::string& bytes, int32_t dtype) {
  std::vector<float> out;
  if (dtype == 10)
    for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
      uint16_t h = 0;
      std::memcpy(&h, bytes.data() + i, 2);
      out.push_back(half_bits_to_float(h));
    }
  else
    for (size_t i = 0; i + 3 < bytes.size(); i += 4) {
      float f = 0;
      std::memcpy(&f, bytes.data() + i, 4);
      out.push_back(f);
    }
  return out;
}

// Both accumulate in float and round the output to fp16 once; the softmax's
// order differs: how far `ya` is from `yg` beyond 2 fp16 ulps of |y| <= 1
// (at most 1e-3 expected).
double excess_difference(const std::vector<float>& ya, const std::vector<float>& yg) {
  double worst = 0;
  for (size_t i = 0; i < ya.size() && i < yg.size(); ++i) {
    if (!std::isfinite(ya[i])) return INFINITY;
    worst = std::max(worst, std::abs(double(ya[i]) - yg[i]) - 2.0 / 1024 * std::abs(yg[i]));
  }
  return worst;
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// q, k, v (hidden 128) and the mask at batch b x seq s, on each context.
void set_core_shapes(std::initializer_list<runtime::ExecutionContext*> contexts, int64_t b,
                     int64_t s) {
  for (runtime::ExecutionContext* ctx : contexts) {
    for (const char* t : {"q", "k", "v"})
      REQUIRE(ctx->set_input_shape(t, std::vector<int64_t>{b, s, 128}).ok());
    REQUIRE(ctx->set_input_shape("attention_mask", std::vector<int64_t>{b, s}).ok());
  }
}

}  // namespace

TEST_CASE("range engines with cuDNN SDPA attention match the reference at five shapes per profile",
          "[shape-range][attention][sdpa-range]") {
  ScopedEnv sync("GRAPHC_SDPA_SYNC_PLANS", "1");  // cuDNN from each shape's first run
  TempDir dir;
  const std::string engine = build_core(dir, "core.engine", "");
  auto c = engine::read_engine_file(engine);
  REQUIRE(c.ok());
  bool preferred = false;
  for (const auto& k : c->manifest.kernels()) preferred |= k.has_preferred_call();
  CHECK(preferred);
  const std::vector<std::vector<std::pair<int, int>>> points = {
      {{1, 16}, {4, 64}, {8, 256}, {3, 77}, {7, 129}, {5, 255}},
      {{1, 128}, {2, 384}, {4, 512}, {3, 257}, {1, 511}}};
  for (int p = 0; p < 2; ++p)
    for (auto [b, s] : points[static_cast<size_t>(p)]) {
      std::string shapes;
      for (const char* t : {"q", "k", "v"}) shapes += fmt::format("{}:{}x{}x128,", t, b, s);
      shapes += fmt::format("attention_mask:{}x{}", b, s);
      auto r = run_graphc(fmt::format(
          "run {} --shape-profile-index {} --shape {} --iterations 3 --warmup-ms 0 --check "
          "--check-rtol 1e-2 --onnx {}",
          engine, p, shapes, dir.file("core.onnx")));
      INFO("profile " << p << " at " << b << "x" << s << "\n" << r.output);
      CHECK(r.exit_code == 0);
      CHECK(contains(r.output, fmt::format("{}x{}x128", b, s)));
      CHECK(contains(r.output, "(ok)"));
      CHECK_FALSE(contains(r.output, "cuDNN refuses"));  // cuDNN ran every shape
    }
}

TEST_CASE("cuDNN SDPA plans built synchronously per shape on first use match the generated kernel",
          "[shape-range][attention][sdpa-range]") {
  ScopedEnv sync("GRAPHC_SDPA_SYNC_PLANS", "1");  // cuDNN from each shape's first run
  ScopedEnv choice("GRAPHC_SDPA_CHOICE", "cudnn");  // even where the kernel is faster
  TempDir dir;
  const std::string with_cudnn = build_core(dir, "cudnn.engine", "");
  const std::string generated = build_core(dir, "generated.engine", "--attention generated");
  auto a = runtime::load_engine_file(with_cudnn);
  auto g = runtime::load_engine_file(generated);
  REQUIRE(a.ok());
  REQUIRE(g.ok());
  auto ca = (*a)->create_context();
  auto cg = (*g)->create_context();
  REQUIRE(ca.ok());
  REQUIRE(cg.ok());
  std::mt19937 rng(20261127);
  using Clock = std::chrono::steady_clock;
  // Profile 0: opt (planned at load), then new shapes, then one again (cached).
  const std::vector<std::pair<int, int>> shapes = {{4, 64}, {3, 77}, {7, 129}, {8, 256}, {2, 200},
                                                   {3, 77}};
  std::vector<std::pair<int, int>> seen;
  for (auto [b, s] : shapes) {
    INFO("at " << b << "x" << s);
    const bool fresh = std::find(seen.begin(), seen.end(), std::make_pair(b, s)) == seen.end() &&
                       !(b == 4 && s == 64) && !(b == 8 && s == 256);
    seen.emplace_back(b, s);
    set_core_shapes({ca->get(), cg->get()}, b, s);
    const auto inputs = random_inputs(**a, b, s, rng);
    std::vector<std::string_view> views(inputs.begin(), inputs.end());
    std::string out_a[1], out_g[1];
    const size_t setups_before = (*a)->impl().sdpas->shape_setups();
    const auto t0 = Clock::now();
    Status st = (*ca)->run_host(views, out_a);
    const double first_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    INFO(st.message());
    REQUIRE(st.ok());
    const std::string note = runtime::last_sdpa_setup_note();
    const size_t setups = (*a)->impl().sdpas->shape_setups();
    // A new shape's plan is built on this thread, on first use (one: the
    // layers share it); opt's and the largest shape's were built at load, a
    // repeated shape's is cached.
    if (fresh) {
      CHECK(setups == setups_before + 1);
      CHECK_THAT(note, Catch::StartsWith("cuDNN"));  // a plan, not a refusal
      WARN(fmt::format("first run at {}x{} (plan built, graph captured): {:.3f} ms host; {}", b,
                       s, first_ms, note));
    } else {
      CHECK(setups == setups_before);
    }
    const auto t1 = Clock::now();
    REQUIRE((*ca)->run_host(views, out_a).ok());
    const double again_ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
    if (fresh) WARN(fmt::format("  the same shape again: {:.3f} ms host", again_ms));
    REQUIRE((*cg)->run_host(views, out_g).ok());
    const int32_t dtype = (*a)->bindings().back().dtype;
    const auto ya = as_floats(out_a[0], dtype), yg = as_floats(out_g[0], dtype);
    REQUIRE(ya.size() == static_cast<size_t>(b) * s * 128);
    REQUIRE(yg.size() == ya.size());
    CHECK(excess_difference(ya, yg) <= 1e-3);
    CHECK((*ca)->cudnn_attention_launches() > 0);  // cuDNN from the first run
  }
}

TEST_CASE("a new shape runs the generated attention kernel until its cuDNN plan is ready",
          "[shape-range][attention][sdpa-range][sdpa-background]") {
  ScopedEnv background("GRAPHC_SDPA_SYNC_PLANS", nullptr);  // the default: plans off the critical path
  ScopedEnv choice("GRAPHC_SDPA_CHOICE", "cudnn");  // even where the kernel is faster
  TempDir dir;
  const std::string with_cudnn = build_core(dir, "cudnn.engine", "");
  const std::string generated = build_core(dir, "generated.engine", "--attention generated");
  auto a = runtime::load_engine_file(with_cudnn);
  auto g = runtime::load_engine_file(generated);
  REQUIRE(a.ok());
  REQUIRE(g.ok());
  const runtime::EngineSdpas& sdpas = *(*a)->impl().sdpas;
  CHECK_FALSE(sdpas.sync_plans());
  auto ca = (*a)->create_context();
  auto cg = (*g)->create_context();
  REQUIRE(ca.ok());
  REQUIRE(cg.ok());
  std::mt19937 rng(20261128);
  using Clock = std::chrono::steady_clock;
  const int32_t dtype = (*a)->bindings().back().dtype;
  // Opt (planned at load: cuDNN from the first run), then two new shapes.
  for (auto [b, s] : std::vector<std::pair<int, int>>{{4, 64}, {3, 77}, {5, 200}}) {
    INFO("at " << b << "x" << s);
    set_core_shapes({ca->get(), cg->get()}, b, s);
    const auto inputs = random_inputs(**a, b, s, rng);
    std::vector<std::string_view> views(inputs.begin(), inputs.end());
    std::string out_a[1], out_g[1];
    REQUIRE((*cg)->run_host(views, out_g).ok());
    const auto yg = as_floats(out_g[0], dtype);
    REQUIRE(yg.size() == static_cast<size_t>(b) * s * 128);
    const size_t setups_before = sdpas.shape_setups();
    const auto t0 = Clock::now();
    Status st = (*ca)->run_host(views, out_a);
    const double first_ms = ms_since(t0);
    INFO(st.message());
    REQUIRE(st.ok());
    const int first_cudnn = (*ca)->cudnn_attention_launches();
    CHECK(excess_difference(as_floats(out_a[0], dtype), yg) <= 1e-3);
    if (b == 4 && s == 64) {
      CHECK(first_cudnn > 0);
      CHECK(sdpas.shape_setups() == setups_before);
      continue;
    }
    WARN(fmt::format("first run at new shape {}x{}: {:.3f} ms host (goal < 5 ms), {} attention "
                     "launches on cuDNN, {} plans pending",
                     b, s, first_ms, first_cudnn, sdpas.pending_plans()));
    // Re-run until the context reports cuDNN (the plan takes ~1 s to build).
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    int runs = 1;
    double switch_ms = 0;
    while ((*ca)->cudnn_attention_launches() == 0 && Clock::now() < deadline) {
      sdpas.wait_for_plans(std::chrono::milliseconds(50));
      const auto t1 = Clock::now();
      REQUIRE((*ca)->run_host(views, out_a).ok());
      switch_ms = ms_since(t1);
      ++runs;
      // Whatever ran, the result is right.
      REQUIRE(excess_difference(as_floats(out_a[0], dtype), yg) <= 1e-3);
    }
    REQUIRE((*ca)->cudnn_attention_launches() > 0);
    CHECK(sdpas.shape_setups() == setups_before + 1);  // the layers share one plan
    CHECK(sdpas.pending_plans() == 0);
    const auto t2 = Clock::now();
    REQUIRE((*ca)->run_host(views, out_a).ok());
    const double steady_ms = ms_since(t2);
    CHECK((*ca)->cudnn_attention_launches() > 0);
    CHECK(excess_difference(as_floats(out_a[0], dtype), yg) <= 1e-3);
    WARN(fmt::format("  cuDNN after {} runs; the run that switched (eager first run, graph "
                     "recaptured): {:.3f} ms host; the next: {:.3f} ms",
                     runs, switch_ms, steady_ms));
  }
}

// By default the first context to run a shape's plan times it against the
// generated kernel there and the faster runs, for every context of the
// engine; GRAPHC_SDPA_CHOICE=kernel keeps the kernel everywhere.
TEST_CASE("per shape the faster of cuDNN SDPA and the generated kernel runs, judged once per engine",
          "[shape-range][attention][sdpa-range][sdpa-pick]") {
  ScopedEnv sync("GRAPHC_SDPA_SYNC_PLANS", "1");  // each shape's plan ready at its first run
  TempDir dir;
  const std::string with_cudnn = build_core(dir, "cudnn.engine", "");
  const std::string generated = build_core(dir, "generated.engine", "--attention generated");
  auto g = runtime::load_engine_file(generated);
  REQUIRE(g.ok());
  auto cg = (*g)->create_context();
  REQUIRE(cg.ok());
  std::mt19937 rng(20261129);
  for (const char* choice : {"measure", "kernel"}) {
    ScopedEnv pick("GRAPHC_SDPA_CHOICE", choice);
    auto a = runtime::load_engine_file(with_cudnn);
    REQUIRE(a.ok());
    auto first = (*a)->create_context();
    auto second = (*a)->create_context();
    REQUIRE(first.ok());
    REQUIRE(second.ok());
    const int32_t dtype = (*a)->bindings().back().dtype;
    for (auto [b, s] : std::vector<std::pair<int, int>>{{4, 64}, {1, 16}, {3, 77}, {8, 256}}) {
      INFO(choice << " at " << b << "x" << s);
      set_core_shapes({first->get(), second->get(), cg->get()}, b, s);
      const auto inputs = random_inputs(**a, b, s, rng);
      std::vector<std::string_view> views(inputs.begin(), inputs.end());
      std::string out_1[1], out_2[1], out_g[1];
      REQUIRE((*cg)->run_host(views, out_g).ok());
      REQUIRE((*first)->run_host(views, out_1).ok());
      const int on_cudnn = (*first)->cudnn_attention_launches();
      REQUIRE((*second)->run_host(views, out_2).ok());
      const auto yg = as_floats(out_g[0], dtype);
      REQUIRE(yg.size() == static_cast<size_t>(b) * s * 128);
      CHECK(excess_difference(as_floats(out_1[0], dtype), yg) <= 1e-3);
      CHECK(excess_difference(as_floats(out_2[0], dtype), yg) <= 1e-3);
      // The block has one attention: all of it on one side, the same in
      // both contexts (the second reads the engine's verdict).
      CHECK((on_cudnn == 0 || on_cudnn == 1));
      CHECK((*second)->cudnn_attention_launches() == on_cudnn);
      if (std::string(choice) == "kernel") CHECK(on_cudnn == 0);
      WARN(fmt::format("GRAPHC_SDPA_CHOICE={} at {}x{}: {} runs the attention", choice, b, s,
                       on_cudnn ? "cuDNN" : "the generated kernel"));
    }
  }
}

TEST_CASE("the tiny BERT in float16 over batch x seq runs cuDNN SDPA and matches the reference",
          "[shape-range][transformers][sdpa-range]") {
  ScopedEnv sync("GRAPHC_SDPA_SYNC_PLANS", "1");  // cuDNN from each shape's first run
  TempDir dir;
  const std::string onnx = source_path("models/tiny/bert_tiny.onnx");
  const std::string engine = dir.file("bert.engine");
  auto built = run_graphc(
      "build " + onnx +
      " --min-shape input_ids:1x2,attention_mask:1x2 --opt-shape input_ids:8x64,attention_mask:8x64 "
      "--max-shape input_ids:32x128,attention_mask:32x128 --precision fp16 -o " + engine);
  INFO(built.output);
  REQUIRE(built.exit_code == 0);
  auto report = run_graphc("inspect " + engine);
  INFO(report.output);
  CHECK(contains(report.output, "cuDNN fused SDPA, planned per shape"));
  for (auto [b, s] : std::vector<std::pair<int, int>>{{1, 2}, {8, 64}, {32, 128}, {3, 77}, {17, 5}}) {
    auto r = run_graphc(fmt::format(
        "run {2} --shape input_ids:{0}x{1},attention_mask:{0}x{1} --iterations 3 --warmup-ms 0 "
        "--check --check-rtol 1e-2 --onnx {3}",
        b, s, engine, onnx));
    INFO(b << "x" << s << "\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.output, "(ok)"));
  }
}

// On the stand-in driver (no kernels) with cuDNN made unloadable: an engine
// whose only cuDNN attention is preferred loads and runs every shape on its
// generated kernels, saying so once, instead of failing.
TEST_CASE("range engines run their attention kernels where cuDNN is missing",
          "[shape-range][sdpa-range][copy-only]") {
  TempDir dir;
  const std::string engine = build_core(dir, "core.engine", "");
  for (const char* shape : {"2x100", "8x256", "1x16"}) {
    std::string shapes;
    for (const char* t : {"q", "k", "v"}) shapes += fmt::format("{}:{}x128,", t, shape);
    shapes += fmt::format("attention_mask:{}", shape);
    auto r = run_graphc_binary("GRAPHC_CUDNN_PATH=/nonexistent/libcudnn.so.9 " +
                                   std::string(std::getenv("GRAPHC_TEST_BINARY") ? std::getenv("GRAPHC_TEST_BINARY") : GRAPHC_BINARY),
                               fmt::format("run {} --shape {} --iterations 2 --warmup-ms 0", engine, shapes));
    INFO(shape << "\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.output, "the generated attention kernels run at every shape"));
  }
}
