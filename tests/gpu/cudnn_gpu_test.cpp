// cuDNN convolutions on the GPU against the reference executor, on fresh
// random inputs in [-1, 1] (weights in [-1, 1], biases in [-2, 2]):
//  - through the graph path (emit -> engine -> runtime): fp32 / fp16 / bf16 x
//    epilogue (none, bias, bias+ReLU, bias+residual+ReLU) x geometry (groups
//    1, 2 and depthwise; strides, dilations, pads; 1-D, 2-D, 3-D;
//    ConvTranspose with groups, stride and output_padding);
//  - NHWC through the runtime directly (an Executable with an NHWC conv
//    descriptor; inputs and outputs transposed on the host);
//  - an engine built with --conv cudnn in a CUDA graph, without, and in two
//    contexts; a recorded algorithm is the one used; time_conv_algorithms;
//  - a channels-last stage (the optimizer's NHWC rewrite) end to end.
//
// Tolerance: |gpu - ref| <= rtol * (|ref| + sqrt(R)), R the number of terms
// of one output's sum (C/groups x filter size), sqrt(R) the scale of such a
// sum of [-1, 1] products (its absolute error near 0). rtol: fp32 1e-4 (FMA
// math, no TF32; Winograd/FFT algorithms round a little more than a direct
// sum), 1e-2 with TF32; fp16 2^-8 and bf16 2^-5 (4 ulps: cuDNN rounds once
// after its fused epilogue where the reference rounds after every op).
//
// Each case prints what it ran (the plan's call, the algorithm cuDNN chose,
// fused or not) so one GPU run tells what went wrong.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "driver/engine_build.h"
#include "driver/gpu_execute.h"
#include "emit/plan/gpu_plan.h"
#include "engine_format/conv_params.h"
#include "ir/conv_geometry.h"
#include "optimizer/passes.h"
#include "reference/executor.h"
#include "runtime/cudnn.h"
#include "runtime/engine.h"
#include "runtime/engine_loader.h"
#include "runtime/session.h"
#include "target/cuda/cudnn_rules.h"
#include "tests/conv_graphs.h"
#include "tests/cuda_pass_context.h"
#include "tests/gpu/gpu_check.h"

using namespace graphc;
using graphc::ir::DType;
using graphc::ir::Tensor;
using graphc::testing::ConvSpec;

namespace {

double rtol_for(DType dt, bool tf32) {
  if (dt == DType::kFloat16) return 1.0 / 256;
  if (dt == DType::kBFloat16) return 1.0 / 32;
  return tf32 ? 1e-2 : 1e-4;
}

int64_t terms(const ConvSpec& s) {
  int64_t r = (s.transpose ? s.k : s.c) / s.groups;
  for (int64_t f : s.filter) r *= f;
  return r;
}

void compare(const Tensor& ref, const Tensor& got, double rtol, int64_t r,
             const std::string& what) {
  testing::check_within_terms(ref, got, rtol, r, what);
}

emit::LowerOptions cudnn(bool tf32 = false) {
  emit::LowerOptions o;
  o.conv.mode = target::ConvMode::kCudnn;
  o.conv.allow_tf32 = tf32;
  return o;
}

std::map<std::string, Tensor> random_feeds(const ir::Graph& g) {
  std::map<std::string, Tensor> feeds;
  for (ir::ValueId id : g.inputs)
    feeds[g.value(id).name] =
        testing::random_tensor(g.value(id).dtype, g.value(id).shape, testing::test_rng(), -1, 1);
  return feeds;
}

// The engine of `g` built with --conv cudnn (serialized and read back), for this GPU.
runtime::Executable engine_executable(const ir::Graph& g, bool tf32 = false) {
  auto sm = driver::device_sm();
  REQUIRE(sm.ok());
  driver::BuildOptions opts;
  opts.archs = {fmt::format("sm_{}", *sm)};
  opts.lower = cudnn(tf32);
  auto built = driver::build_engine(g, opts);
  INFO((built.ok() ? "" : built.status().message()));
  REQUIRE(built.ok());
  auto bytes = engine::serialize_engine(*built);
  REQUIRE(bytes.ok());
  auto parsed = engine::parse_engine(*bytes);
  REQUIRE(parsed.ok());
  auto exe = runtime::executable_from_engine(*parsed, *sm);
  INFO((exe.ok() ? "" : exe.status().message()));
  REQUIRE(exe.ok());
  return std::move(*exe);
}

// Runs `exe` on `feeds` (inputs in `g`'s order); returns the first output.
Tensor run_engine(runtime::Session& session, const ir::Graph& g,
                  const std::map<std::string, Tensor>& feeds, const Tensor& like) {
  std::vector<std::string> in, out;
  for (ir::ValueId v : g.inputs) {
    const Tensor& f = feeds.at(g.value(v).name);
    in.emplace_back(reinterpret_cast<const char*>(f.data()), f.byte_size());
  }
  Status st = session.run(in, out);
  INFO(st.message());
  REQUIRE(st.ok());
  REQUIRE(out.size() == 1);
  Tensor got(like.dtype(), like.shape());
  REQUIRE(out[0].size() == got.byte_size());
  std::memcpy(got.mutable_data(), out[0].data(), out[0].size());
  return got;
}

// What cuDNN makes of launch 0 of `exe` on this GPU (the engine's context is
// current): "conv2d ...; heuristic forward algorithm 1 (...), fused".
std::string setup_text(const runtime::Executable& exe) {
  auto setups = runtime::EngineConvs::create(exe.launches);
  if (!setups.ok()) return "setup failed: " + setups.status().message();
  const runtime::ConvSetup* s = (*setups)->setup(0);
  if (!s) return "no conv setup";
  return engine::describe_conv(s->params) + "; " + s->note + (s->fused ? ", fused" : ", unfused");
}

// Builds `s` with --conv cudnn, checks it is exactly one cuDNN call (so the
// test cannot pass through the generated kernel), runs it and compares.
void check(const ConvSpec& s, bool tf32 = false) {
  const std::string what = s.describe() + (tf32 ? " tf32" : "");
  INFO(what);
  const ir::Graph g = testing::conv_graph(s);
  const runtime::Executable exe = engine_executable(g, tf32);
  REQUIRE(exe.launches.size() == 1);
  REQUIRE(exe.launches[0].conv());
  auto session = runtime::Session::create(exe);
  INFO((session.ok() ? "" : session.status().message()));
  REQUIRE(session.ok());
  const std::string setup = setup_text(exe);
  INFO("cuDNN: " << setup);
  const auto feeds = random_feeds(g);
  auto want = reference::execute(g, feeds);
  REQUIRE(want.ok());
  const Tensor& ref = want->begin()->second;
  const Tensor got = run_engine(**session, g, feeds, ref);
  compare(ref, got, rtol_for(ref.dtype(), tf32), terms(s), what + " [" + setup + "]");
}

}  // namespace

TEST_CASE("cuDNN Conv/ConvTranspose x dtype x epilogue x geometry", "[gpu][cudnn]") {
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16})
    for (const ConvSpec& geo : testing::cudnn_geometries())
      for (ConvSpec s : testing::with_cudnn_epilogues(geo)) {
        s.dtype = dt;
        check(s);
      }
}

TEST_CASE("cuDNN fp32 with TF32 allowed", "[gpu][cudnn]") {
  for (const ConvSpec& geo : testing::cudnn_geometries()) {
    ConvSpec s = geo;
    s.conv_bias = true;
    s.epilogue = {"relu"};
    check(s, true);
  }
}

namespace {

int64_t align256(int64_t v) { return (v + 255) / 256 * 256; }

}  // namespace

TEST_CASE("cuDNN NHWC through the runtime directly", "[gpu][cudnn]") {
  // The graph path writes NHWC only for 2-D fp16/bf16 convs (the
  // channels-last pass, tested below); this covers every dtype and 1-D/3-D:
  // an Executable with one NHWC conv (x, w, bias, residual, y) against the
  // NCHW reference of the same conv, with the data transposed on the host.
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16})
    for (int geo = 0; geo < 3; ++geo) {
      ConvSpec s;
      s.dtype = dt;
      s.n = 2;
      s.c = geo == 2 ? 8 : 6;
      s.k = geo == 2 ? 8 : 10;
      s.groups = geo == 1 ? 2 : geo == 2 ? 8 : 1;
      s.in = geo == 1 ? std::vector<int64_t>{4, 5, 6} : std::vector<int64_t>{9, 11};
      s.filter = geo == 1 ? std::vector<int64_t>{3, 3, 3} : std::vector<int64_t>{3, 3};
      s.strides = geo == 1 ? std::vector<int64_t>{1, 2, 1} : std::vector<int64_t>{2, 1};
      s.dilations = geo == 1 ? std::vector<int64_t>{1, 1, 1} : std::vector<int64_t>{1, 2};
      s.pads = geo == 1 ? std::vector<int64_t>{1, 1, 1, 1, 1, 1} : std::vector<int64_t>{1, 2, 1, 2};
      s.conv_bias = true;
      s.epilogue = {"residual", "relu"};
      const std::string what = "NHWC " + s.describe();
      INFO(what);
      const ir::Graph g = testing::conv_graph(s);
      auto plan = emit::lower_for_gpu(g, cudnn());
      REQUIRE(plan.ok());
      REQUIRE(plan->launches.size() == 1);
      const emit::LaunchPlan& lp = plan->launches[0];
      REQUIRE(lp.library);
      engine::ConvParams p = *engine::decode_conv_params(lp.library->params);
      p.layout = engine::ConvLayout::kNhwc;
      // The reference, NCHW.
      const auto feeds = random_feeds(g);
      auto want = reference::execute(g, feeds);
      REQUIRE(want.ok());
      // The same operands channels-last: x and residual are inputs, w and bias weights.
      runtime::Executable exe;
      for (size_t a = 0; a < lp.args.size(); ++a) {
        const emit::SlotPlan& sp = plan->slots[static_cast<size_t>(lp.args[a])];
        runtime::TensorSlot t{sp.name,  runtime::TensorSlot::Location::kArena, 0,
                              sp.bytes, static_cast<int32_t>(sp.dtype),        sp.shape};
        if (sp.location == emit::SlotLocation::kWeights) {
          std::string_view bytes(plan->weights.data() + sp.offset, static_cast<size_t>(sp.bytes));
          Tensor w(sp.dtype, sp.shape);
          std::memcpy(w.mutable_data(), bytes.data(), bytes.size());
          if (sp.shape.size() > 2) w = ir::to_channels_last(w);  // [K, C/g, f] -> [K, f, C/g]
          t.location = runtime::TensorSlot::Location::kWeights;
          t.offset = align256(static_cast<int64_t>(exe.weights.size()));
          exe.weights.resize(static_cast<size_t>(t.offset), '\0');
          exe.weights.append(reinterpret_cast<const char*>(w.data()), w.byte_size());
        } else if (sp.location == emit::SlotLocation::kInput) {
          t.location = runtime::TensorSlot::Location::kInput;
          exe.inputs.push_back(static_cast<int32_t>(exe.tensors.size()));
          exe.input_names.push_back(sp.name);
        } else {
          t.location = runtime::TensorSlot::Location::kOutput;
          exe.outputs.push_back(static_cast<int32_t>(exe.tensors.size()));
          exe.output_names.push_back(sp.name);
        }
        exe.tensors.push_back(t);
      }
      runtime::Launch l;
      for (size_t a = 0; a < lp.args.size(); ++a) l.args.push_back(static_cast<int32_t>(a));
      l.op = runtime::ConvLaunch{p, lp.library->workspace_bytes};
      exe.launches.push_back(l);
      auto session = runtime::Session::create(exe);
      INFO((session.ok() ? "" : session.status().message()));
      REQUIRE(session.ok());
      INFO("cuDNN: " << setup_text(exe));
      std::vector<std::string> in, out;
      for (const std::string& name : exe.input_names) {
        Tensor t = ir::to_channels_last(feeds.at(name));
        in.emplace_back(reinterpret_cast<const char*>(t.data()), t.byte_size());
      }
      REQUIRE((*session)->run(in, out).ok());
      REQUIRE(out.size() == 1);
      const Tensor& ref = want->begin()->second;
      Tensor got_nhwc(ref.dtype(), ir::to_channels_last(ref.shape()));
      REQUIRE(out[0].size() == got_nhwc.byte_size());
      std::memcpy(got_nhwc.mutable_data(), out[0].data(), out[0].size());
      compare(ref, ir::to_channels_first(got_nhwc), rtol_for(dt, false), terms(s),
              what + " [" + engine::describe_conv(p) + "]");
    }
}

namespace {

struct BuiltEngine {
  ir::Graph graph;
  runtime::Executable exe;
};

BuiltEngine build_conv_engine(const ConvSpec& s) {
  BuiltEngine b{testing::conv_graph(s), {}};
  b.exe = engine_executable(b.graph);
  return b;
}

ConvSpec resnet_block_spec(DType dt) {
  ConvSpec s;
  s.dtype = dt;
  s.n = 4;
  s.c = 32;
  s.k = 32;
  s.in = {14, 14};
  s.conv_bias = true;
  s.epilogue = {"residual", "relu"};
  return s;
}

}  // namespace

TEST_CASE("a cuDNN engine runs from a CUDA graph, without, and in two contexts", "[gpu][cudnn]") {
  const ConvSpec s = resnet_block_spec(DType::kFloat16);
  BuiltEngine b = build_conv_engine(s);
  auto eng = runtime::Engine::create(b.exe);
  INFO((eng.ok() ? "" : eng.status().message()));
  REQUIRE(eng.ok());
  runtime::ContextOptions graph_on, graph_off;
  graph_off.cuda_graph = false;
  auto c1 = (*eng)->create_context(graph_on);
  auto c2 = (*eng)->create_context(graph_on);
  auto c3 = (*eng)->create_context(graph_off);
  INFO((c1.ok() ? "" : c1.status().message()));
  REQUIRE((c1.ok() && c2.ok() && c3.ok()));
  runtime::ExecutionContext* contexts[] = {c1->get(), c2->get(), c3->get()};
  std::vector<std::map<std::string, Tensor>> feeds(3);
  for (int c = 0; c < 3; ++c) {
    feeds[c] = random_feeds(b.graph);
    for (int i = 0; i < (*eng)->num_inputs(); ++i) {
      const auto& info = (*eng)->bindings()[static_cast<size_t>(i)];
      const Tensor& t = feeds[c].at(info.name);
      REQUIRE(contexts[c]->copy_input_from_host(i, t.data(), t.byte_size()).ok());
    }
    REQUIRE(contexts[c]->enqueue().ok());
  }
  std::vector<Tensor> results;
  for (int c = 0; c < 3; ++c) {
    INFO("context " << c);
    REQUIRE(contexts[c]->synchronize().ok());
    auto want = reference::execute(b.graph, feeds[c]);
    REQUIRE(want.ok());
    const int out = (*eng)->num_inputs();
    const auto& info = (*eng)->bindings()[static_cast<size_t>(out)];
    const Tensor& ref = want->at(info.name);
    Tensor got(ref.dtype(), ref.shape());
    REQUIRE(contexts[c]->copy_output_to_host(out, got.mutable_data(), got.byte_size()).ok());
    REQUIRE(contexts[c]->synchronize().ok());
    compare(ref, got, rtol_for(ref.dtype(), false), terms(s), "context " + std::to_string(c));
    // A replay gives the same bytes.
    REQUIRE(contexts[c]->enqueue().ok());
    Tensor again(ref.dtype(), ref.shape());
    REQUIRE(contexts[c]->copy_output_to_host(out, again.mutable_data(), again.byte_size()).ok());
    REQUIRE(contexts[c]->synchronize().ok());
    CHECK(std::memcmp(got.data(), again.data(), got.byte_size()) == 0);
    results.push_back(std::move(got));
  }
  // The graph and no-graph runs of the same inputs: the same bytes.
  for (int i = 0; i < (*eng)->num_inputs(); ++i) {
    const auto& info = (*eng)->bindings()[static_cast<size_t>(i)];
    const Tensor& t = feeds[0].at(info.name);
    REQUIRE(contexts[2]->copy_input_from_host(i, t.data(), t.byte_size()).ok());
  }
  REQUIRE(contexts[2]->enqueue().ok());
  Tensor plain(results[0].dtype(), results[0].shape());
  REQUIRE(contexts[2]
              ->copy_output_to_host((*eng)->num_inputs(), plain.mutable_data(), plain.byte_size())
              .ok());
  REQUIRE(contexts[2]->synchronize().ok());
  CHECK(std::memcmp(results[0].data(), plain.data(), plain.byte_size()) == 0);
}

TEST_CASE("cuDNN: algorithm timings, and a recorded algorithm is the one used", "[gpu][cudnn]") {
  for (DType dt : {DType::kFloat32, DType::kFloat16}) {
    const ConvSpec s = resnet_block_spec(dt);
    INFO(s.describe());
    BuiltEngine b = build_conv_engine(s);
    REQUIRE(b.exe.launches.size() == 1);
    REQUIRE(b.exe.launches[0].conv());
    engine::ConvParams p = b.exe.launches[0].conv()->params;
    auto timings = runtime::time_conv_algorithms(p, target::kCudnnWorkspaceLimitBytes);
    INFO((timings.ok() ? "" : timings.status().message()));
    REQUIRE(timings.ok());
    for (const auto& t : *timings)
      std::printf(
          "cudnn timing %s: algorithm %d %s %.4f ms %s (bare conv %.4f ms), %llu B workspace, "
          "math %d (%s)\n",
          engine::describe_conv(p).c_str(), t.algorithm, t.ok ? "ok" : "FAILED", t.ms,
          t.fused ? "fused" : "unfused", t.bare_ms,
          static_cast<unsigned long long>(t.workspace_bytes), t.math_type, t.status.c_str());
    for (const auto& t : *timings)
      if (t.ok) CHECK((t.ms > 0 && t.bare_ms > 0));  // both timings were made
    REQUIRE_FALSE(timings->empty());
    REQUIRE(timings->front().ok);
    for (size_t i = 1; i < timings->size(); ++i)
      if ((*timings)[i].ok) CHECK((*timings)[i - 1].ms <= (*timings)[i].ms);
    // Record each ok algorithm in turn: the engine uses it and stays correct.
    for (const auto& t : *timings) {
      if (!t.ok) continue;
      INFO("recorded algorithm " << t.algorithm);
      runtime::Executable exe = b.exe;
      std::get<runtime::ConvLaunch>(exe.launches[0].op).params.algorithm = t.algorithm;
      auto session = runtime::Session::create(exe);
      INFO((session.ok() ? "" : session.status().message()));
      REQUIRE(session.ok());
      auto setups = runtime::EngineConvs::create(exe.launches);  // the engine's context is current
      REQUIRE(setups.ok());
      const runtime::ConvSetup* setup = (*setups)->setup(0);
      REQUIRE(setup);
      std::printf("cudnn recorded %d -> %s, fused %d\n", t.algorithm, setup->note.c_str(),
                  setup->fused);
      CHECK(setup->recorded);
      CHECK(setup->algorithm == t.algorithm);
      const auto feeds = random_feeds(b.graph);
      auto want = reference::execute(b.graph, feeds);
      REQUIRE(want.ok());
      const Tensor& ref = want->begin()->second;
      const Tensor got = run_engine(**session, b.graph, feeds, ref);
      compare(ref, got, rtol_for(dt, false), terms(s), "algorithm " + std::to_string(t.algorithm));
    }
  }
}

namespace {
double relative_l2(const Tensor& ref, const Tensor& got) {
  const auto r = ref.to_f64_vector();
  const auto g = got.to_f64_vector();
  REQUIRE(r.size() == g.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    num += (g[i] - r[i]) * (g[i] - r[i]);
    den += r[i] * r[i];
  }
  REQUIRE(den > 0);  // never a check on zeros
  return std::sqrt(num / den);
}
}  // namespace

// The channels-last pass end to end (optimizer/pass_channels_last.cpp): a
// ResNet-style stage in fp16/bf16 whose three convs become NHWC cuDNN calls
// (the plan is checked), against the reference and built channels-first as
// well. Three chained convs, each rounding where the reference does not
// (cuDNN once per fused call, the reference after every op): the bound is on
// the whole output's relative L2, fp16 1e-2 (the real-model bound),
// bf16 5e-2.
TEST_CASE("channels-last stage: NHWC cuDNN calls match the reference",
          "[gpu][cudnn][channels-last]") {
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    const ir::Graph original = testing::residual_stage_graph(dt);
    const auto feeds = random_feeds(original);
    auto want = reference::execute(original, feeds);
    REQUIRE(want.ok());
    for (bool last : {true, false}) {
      const std::string what =
          std::string(ir::dtype_name(dt)) + (last ? " channels-last" : " channels-first");
      INFO(what);
      ir::Graph g = original;
      optimizer::PassContext ctx = testing::cuda_pass_context();
      if (!last) ctx.disabled.insert("channels-last");
      REQUIRE(optimizer::run_passes(g, ctx).ok());
      auto plan = emit::lower_for_gpu(g);
      INFO((plan.ok() ? "" : plan.status().message()));
      REQUIRE(plan.ok());
      int calls = 0, nhwc = 0;
      for (const auto& l : plan->launches) {
        if (!l.library || l.library->op != emit::LibraryOp::kCudnnConv) continue;
        auto p = engine::decode_conv_params(l.library->params);
        REQUIRE(p.ok());
        ++calls;
        nhwc += p->layout == engine::ConvLayout::kNhwc ? 1 : 0;
      }
      CHECK(calls == 3);
      CHECK(nhwc == (last ? 3 : 0));
      auto got = driver::execute_on_gpu(g, feeds, {});
      INFO((got.ok() ? "" : got.status().message()));
      REQUIRE(got.ok());
      for (const auto& [name, t] : *want) {
        REQUIRE(got->count(name));
        const double rel = relative_l2(t, got->at(name));
        std::printf("[cudnn] %s %s: %zu launches, relative L2 %.3g\n", what.c_str(), name.c_str(),
                    plan->launches.size(), rel);
        CHECK(rel < (dt == DType::kFloat16 ? 1e-2 : 5e-2));
      }
    }
  }
}

// initcheck found cuDNN's fused call loading z = y when there is no residual
// (alpha2 = 0, y not yet written). Whatever the output buffer held must not
// reach the result: it is filled with NaN (0xff bytes, in fp32 and fp16)
// before each run, and the result must still match the reference (a NaN
// fails the comparison).
TEST_CASE("cuDNN's fused call without a residual ignores what its output buffer held",
          "[gpu][cudnn]") {
  const runtime::DriverApi& api = **runtime::load_driver();
  for (DType dt : {DType::kFloat32, DType::kFloat16}) {
    ConvSpec s = resnet_block_spec(dt);
    s.epilogue = {"relu"};  // the conv's own bias, then ReLU: fused, no residual
    INFO(s.describe());
    const ir::Graph g = testing::conv_graph(s);
    const runtime::Executable exe = engine_executable(g);
    REQUIRE(exe.launches.size() == 1);
    REQUIRE(exe.launches[0].conv());
    CHECK_FALSE(exe.launches[0].conv()->params.has_residual);
    auto engine = runtime::Engine::create(exe);
    REQUIRE(engine.ok());
    auto ctx = (*engine)->create_context();
    REQUIRE(ctx.ok());
    const auto& bindings = (*engine)->bindings();
    REQUIRE(bindings.size() == 2);  // x, y
    auto y = (*ctx)->tensor_address(bindings[1].name);
    REQUIRE(y.ok());
    const auto feeds = random_feeds(g);
    auto want = reference::execute(g, feeds);
    REQUIRE(want.ok());
    const Tensor& ref = want->begin()->second;
    const Tensor& x = feeds.begin()->second;
    for (int round = 0; round < 2; ++round) {
      REQUIRE(api.cuMemsetD8(*y, 0xff, static_cast<size_t>(bindings[1].bytes)) == CUDA_SUCCESS);
      REQUIRE(api.cuCtxSynchronize() == CUDA_SUCCESS);
      const std::string_view in[] = {
          std::string_view(reinterpret_cast<const char*>(x.data()), x.byte_size())};
      std::string out[1];
      Status st = (*ctx)->run_host(in, out);
      INFO(st.message());
      REQUIRE(st.ok());
      Tensor got(ref.dtype(), ref.shape());
      REQUIRE(out[0].size() == got.byte_size());
      std::memcpy(got.mutable_data(), out[0].data(), out[0].size());
      compare(ref, got, rtol_for(dt, false), terms(s), s.describe() + " after NaN in y");
    }
  }
}
