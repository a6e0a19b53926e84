// The engine path on a GPU: build_engine (one code module per distinct
// kernel), serialize, parse, executable_from_engine for this device, run in a
// Session, and compare with the reference executor on fresh random inputs.
// Once with the CUBIN built for this device's SM and once, on GPUs newer
// than sm_80, from sm_80 PTX only (the driver JIT-compiles it), as an engine
// built elsewhere for an older arch would run.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "driver/engine_build.h"
#include "optimizer/pass.h"
#include "reference/executor.h"
#include "runtime/engine_loader.h"
#include "runtime/session.h"
#include "tests/gpu/gpu_check.h"
#include "tests/test_util.h"
#include "tests/cuda_pass_context.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::GraphBuilder;

namespace {

// y = sigmoid(tanh(x + b)) (fused; b large enough to live in the weights),
// z = reshape(exp(x)) (a kernel and a copy: z is a view that is an output),
// h = cast(x, float16).
Graph engine_graph() {
  GraphBuilder g;
  auto x = g.input("x", DType::kFloat32, {3, 257});
  auto b = g.constant("b", testing::random_tensor(DType::kFloat32, {257}, testing::test_rng()));
  auto y = g.node(OpKind::Sigmoid, {g.node(OpKind::Tanh, {g.node(OpKind::Add, {x, b})})});
  auto shape = g.constant("shape", Tensor::from_i64({771}, {1}));
  auto z = g.node(OpKind::Reshape, {g.node(OpKind::Exp, {x}), shape});
  auto h =
      g.node(OpKind::Cast, {x},
             testing::attrs({{"to", Attribute::of_int(static_cast<int64_t>(DType::kFloat16))}}));
  g.output(y);
  g.output(z);
  g.output(h);
  return g.build();
}

void run_engine_and_compare(const std::vector<std::string>& archs, int device_sm) {
  INFO("archs " << archs.front() << (archs.size() > 1 ? " ..." : "") << ", device sm_"
                << device_sm);
  Graph original = engine_graph();
  Graph optimized = original;
  optimizer::PassContext ctx = testing::cuda_pass_context();  // as graphc build
  REQUIRE(optimizer::run_passes(optimized, ctx).ok());
  driver::BuildOptions opts;
  opts.archs = archs;
  opts.compile.cache_dir = emit::default_cache_dir();
  driver::BuildStats stats;
  auto built = driver::build_engine(optimized, opts, &stats);
  INFO((built.ok() ? "" : built.status().message()));
  REQUIRE(built.ok());
  CHECK(stats.modules >= 2);
  auto bytes = engine::serialize_engine(*built);
  REQUIRE(bytes.ok());
  auto parsed = engine::parse_engine(*bytes);
  REQUIRE(parsed.ok());
  auto exe = runtime::executable_from_engine(*parsed, device_sm);
  INFO((exe.ok() ? "" : exe.status().message()));
  REQUIRE(exe.ok());
  CHECK(exe->images.size() == stats.modules);
  auto session = runtime::Session::create(*exe);
  INFO((session.ok() ? "" : session.status().message()));
  REQUIRE(session.ok());

  std::map<std::string, Tensor> feeds;
  std::vector<std::string> inputs;
  for (const auto& binding : parsed->manifest.inputs()) {
    const Value& v = original.value(original.inputs[inputs.size()]);
    REQUIRE(v.name == binding.name());
    Tensor t = testing::random_tensor(v.dtype, v.shape, testing::test_rng());
    inputs.emplace_back(reinterpret_cast<const char*>(t.data()), t.byte_size());
    feeds[v.name] = std::move(t);
  }
  std::vector<std::string> outputs;
  Status st = (*session)->run(inputs, outputs);
  INFO(st.message());
  REQUIRE(st.ok());
  auto want = reference::execute(original, feeds);
  REQUIRE(want.ok());
  REQUIRE(outputs.size() == static_cast<size_t>(parsed->manifest.outputs_size()));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = parsed->manifest.outputs(static_cast<int>(i)).name();
    INFO("output " << name);
    const Tensor& ref = want->at(name);
    REQUIRE(outputs[i].size() == ref.byte_size());
    Tensor got(ref.dtype(), ref.shape());
    std::memcpy(got.mutable_data(), outputs[i].data(), outputs[i].size());
    const double rtol = testing::gpu_tolerance_for(ref.dtype());
    int64_t bad = 0;
    for (int64_t k = 0; k < ref.numel(); ++k) {
      double a = ref.get_f64(k), b = got.get_f64(k);
      if (!(std::fabs(a - b) <= 1e-5 + rtol * std::fabs(a))) ++bad;
    }
    CHECK(bad == 0);
  }
}

}  // namespace

TEST_CASE("an engine runs from its CUBIN and from older-arch PTX, matching the reference",
          "[gpu]") {
  auto sm = driver::device_sm();
  REQUIRE(sm.ok());
  const std::string device_arch = fmt::format("sm_{}", *sm);
  if (*sm == 80)
    run_engine_and_compare({"sm_80"}, *sm);
  else
    run_engine_and_compare({"sm_80", device_arch}, *sm);
  if (*sm > 80) run_engine_and_compare({"sm_80"}, *sm);
}
