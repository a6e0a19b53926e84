// cuBLASLt matmuls on the GPU against the reference executor, on fresh
// random inputs in [-1, 1]: MatMul/Gemm, batched and broadcast, fp32/fp16/
// bf16, every epilogue (none, bias, ReLU, bias+ReLU, tanh GELU, bias+GELU,
// residual C), odd sizes; then one engine run from a CUDA graph and without,
// in two contexts at once.
//
// Tolerance: |gpu - ref| <= rtol * (|ref| + sqrt(K)), sqrt(K) being the
// scale of a K-term dot product of such inputs (absolute error of a sum near 0).
// rtol: fp32 1e-5 (fp32 compute: its rounding error is ~1e-7 here; tight
// enough that an erf-vs-tanh GELU mismatch, up to 4.7e-4 near x = 2.7, fails
// the fp32 GELU cases; 1e-2 with TF32), fp16 4 ulps (2^-8),
// bf16 4 ulps (2^-5): cuBLASLt rounds once after the epilogue where the
// reference rounds after the product and after each epilogue op.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "driver/engine_build.h"
#include "emit/plan/gpu_plan.h"
#include "optimizer/pass.h"
#include "reference/executor.h"
#include "runtime/engine.h"
#include "runtime/engine_loader.h"
#include "tests/gpu/gpu_check.h"
#include "tests/test_util.h"
#include "tests/cuda_pass_context.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::GraphBuilder;

namespace {

double rtol_for(DType dt, bool tf32) {
  if (dt == DType::kFloat16) return 1.0 / 256;
  if (dt == DType::kBFloat16) return 1.0 / 32;
  return tf32 ? 1e-2 : 1e-5;
}

void compare(const Tensor& ref, const Tensor& got, double rtol, int64_t k,
             const std::string& name) {
  testing::check_within_terms(ref, got, rtol, k, name);
}

emit::LowerOptions cublaslt(bool tf32 = false) {
  emit::LowerOptions o;
  o.gemm.mode = target::GemmMode::kCublasLt;
  o.gemm.allow_tf32 = tf32;
  return o;
}

// Optimizes `g`, checks that it lowers to exactly `calls` cuBLASLt matmuls
// (so a test cannot pass through the generated kernel), runs it and compares.
void check(Graph g, const std::string& what, int64_t k, int calls = 1, bool tf32 = false) {
  INFO(what);
  const Graph original = g;
  optimizer::PassContext ctx = testing::cuda_pass_context(cublaslt(tf32));
  REQUIRE(optimizer::run_passes(g, ctx).ok());
  auto plan = emit::lower_for_gpu(g, cublaslt(tf32));
  REQUIRE(plan.ok());
  int found = 0;
  for (const auto& l : plan->launches) found += l.library.has_value();
  REQUIRE(found == calls);
  std::map<std::string, Tensor> feeds;
  for (ValueId id : original.inputs)
    feeds[original.value(id).name] = testing::random_tensor(
        original.value(id).dtype, original.value(id).shape, testing::test_rng(), -1, 1);
  auto want = reference::execute(original, feeds);
  REQUIRE(want.ok());
  auto got = driver::execute_on_gpu(g, feeds, cublaslt(tf32));
  INFO((got.ok() ? "" : got.status().message()));
  REQUIRE(got.ok());
  for (const auto& [name, t] : *want) compare(t, got->at(name), rtol_for(t.dtype(), tf32), k, name);
}

Tensor weights(DType dt, const Shape& s) {
  return testing::random_tensor(dt, s, testing::test_rng(), -1, 1);
}

// y = act(x @ W [+ b]) [+ r before the activation]
Graph linear(DType dt, int64_t m, int64_t k, int64_t n, const std::string& act, bool bias,
             bool residual = false) {
  GraphBuilder g;
  auto x = g.input("x", dt, {m, k});
  auto y = g.node(OpKind::MatMul, {x, g.constant("w", weights(dt, {k, n}))});
  if (bias) y = g.node(OpKind::Add, {y, g.constant("b", weights(dt, {n}))});
  if (residual) y = g.node(OpKind::Add, {g.input("r", dt, {m, n}), y});
  if (act == "relu") y = g.node(OpKind::Relu, {y});
  if (act == "gelu")
    y = g.node(OpKind::Gelu, {y}, testing::attrs({{"approximate", Attribute::of_string("tanh")}}));
  g.output(y);
  return g.build();
}

}  // namespace

TEST_CASE("cuBLASLt MatMul with each epilogue, fp32/fp16/bf16, odd sizes", "[gpu][cublaslt]") {
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16})
    for (const char* act : {"", "relu", "gelu"})
      for (bool bias : {false, true}) {
        const std::string what = fmt::format("{} act '{}' bias {}", dtype_name(dt), act, bias);
        check(linear(dt, 77, 131, 45, act, bias), what, 131);
      }
  check(linear(DType::kFloat16, 64, 96, 128, "gelu", true, true), "fp16 bias+residual+gelu", 96);
  check(linear(DType::kFloat32, 33, 65, 17, "relu", false, true), "fp32 residual+relu", 65);
}

TEST_CASE("cuBLASLt fp32 with TF32 allowed", "[gpu][cublaslt]") {
  check(linear(DType::kFloat32, 128, 256, 64, "relu", true), "tf32", 256, 1, true);
}

TEST_CASE("cuBLASLt batched MatMul with broadcast batch dims", "[gpu][cublaslt]") {
  auto batched = [](DType dt, Shape a, Shape b) {
    GraphBuilder g;
    auto x = g.input("a", dt, std::move(a));
    auto y = g.input("b", dt, std::move(b));
    g.output(g.node(OpKind::MatMul, {x, y}));
    return g.build();
  };
  check(batched(DType::kFloat32, {3, 2, 33, 70}, {70, 45}), "shared B", 70);
  check(batched(DType::kFloat16, {5, 31, 40}, {5, 40, 23}), "both batched", 40);
  check(batched(DType::kFloat32, {1, 17, 9}, {4, 9, 30}), "shared A", 9);
  check(batched(DType::kBFloat16, {70}, {3, 70, 19}), "1-D A", 70);
  check(batched(DType::kFloat32, {6, 21, 50}, {50}), "1-D B", 50);
  // Batched activations through a shared weight with bias, residual and ReLU
  // (folded into one 132-row matmul).
  GraphBuilder g;
  auto x = g.input("x", DType::kFloat16, {4, 33, 64});
  auto y = g.node(OpKind::MatMul, {x, g.constant("w", weights(DType::kFloat16, {64, 96}))});
  y = g.node(OpKind::Add, {y, g.constant("b", weights(DType::kFloat16, {96}))});
  y = g.node(OpKind::Add, {y, g.input("r", DType::kFloat16, {4, 33, 96})});
  g.output(g.node(OpKind::Relu, {y}));
  check(g.build(), "3-D x @ W + b + r, ReLU", 64);
}

TEST_CASE("cuBLASLt Gemm: transA/transB, alpha, beta, C", "[gpu][cublaslt]") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      GraphBuilder g;
      const int64_t m = 37, k = 53, n = 29;
      auto a = g.input("a", DType::kFloat32, ta ? Shape{k, m} : Shape{m, k});
      auto b = g.input("b", DType::kFloat32, tb ? Shape{n, k} : Shape{k, n});
      auto c = g.input("c", DType::kFloat32, {m, n});
      g.output(g.node(OpKind::Gemm, {a, b, c},
                      testing::attrs({{"transA", Attribute::of_int(ta)},
                                      {"transB", Attribute::of_int(tb)},
                                      {"alpha", Attribute::of_float(0.5)},
                                      {"beta", Attribute::of_float(-1.5)}})));
      check(g.build(), fmt::format("Gemm transA {} transB {}", ta, tb), k);
    }
  GraphBuilder g;
  auto a = g.input("a", DType::kFloat16, {100, 64});
  auto b = g.input("b", DType::kFloat16, {80, 64});
  auto c = g.input("c", DType::kFloat16, {80});
  g.output(g.node(OpKind::Relu, {g.node(OpKind::Gemm, {a, b, c},
                                        testing::attrs({{"transB", Attribute::of_int(1)}}))}));
  check(g.build(), "fp16 Gemm with a bias C and ReLU", 64);
}

TEST_CASE("a cuBLASLt engine runs from a CUDA graph, without, and in two contexts",
          "[gpu][cublaslt]") {
  Graph original = linear(DType::kFloat16, 96, 160, 224, "gelu", true, true);
  Graph g = original;
  optimizer::PassContext ctx = testing::cuda_pass_context(cublaslt());
  REQUIRE(optimizer::run_passes(g, ctx).ok());
  auto sm = driver::device_sm();
  REQUIRE(sm.ok());
  driver::BuildOptions opts;
  opts.archs = {fmt::format("sm_{}", *sm)};
  opts.lower = cublaslt();
  auto built = driver::build_engine(g, opts);
  REQUIRE(built.ok());
  auto bytes = engine::serialize_engine(*built);
  REQUIRE(bytes.ok());
  auto parsed = engine::parse_engine(*bytes);
  REQUIRE(parsed.ok());
  auto exe = runtime::executable_from_engine(*parsed, *sm);
  REQUIRE(exe.ok());
  auto eng = runtime::Engine::create(*exe);
  INFO((eng.ok() ? "" : eng.status().message()));
  REQUIRE(eng.ok());
  runtime::ContextOptions graph_on, graph_off;
  graph_off.cuda_graph = false;
  auto c1 = (*eng)->create_context(graph_on);
  auto c2 = (*eng)->create_context(graph_on);
  auto c3 = (*eng)->create_context(graph_off);
  REQUIRE((c1.ok() && c2.ok() && c3.ok()));
  runtime::ExecutionContext* contexts[] = {c1->get(), c2->get(), c3->get()};
  // The workspace is what the algorithm chosen at load needs, not the call's limit.
  uint64_t limit = 0;
  for (const runtime::Launch& l : exe->launches)
    if (l.matmul()) limit = std::max(limit, l.matmul()->workspace_bytes);
  REQUIRE(limit > 0);
  std::printf("cuBLASLt workspace per context: %lld bytes (limit %llu)\n",
              static_cast<long long>(c1->get()->workspace_bytes()),
              static_cast<unsigned long long>(limit));
  CHECK(c1->get()->workspace_bytes() >= 0);
  CHECK(static_cast<uint64_t>(c1->get()->workspace_bytes()) <= limit);
  CHECK(c1->get()->device_bytes() >= (*eng)->arena_bytes() + c1->get()->workspace_bytes());
  // Different inputs per context, all enqueued before any is read back.
  std::vector<std::map<std::string, Tensor>> feeds(3);
  for (int c = 0; c < 3; ++c) {
    for (ValueId id : original.inputs) {
      const Value& v = original.value(id);
      Tensor t = testing::random_tensor(v.dtype, v.shape, testing::test_rng(), -1, 1);
      feeds[c][v.name] = std::move(t);
    }
    for (int i = 0; i < (*eng)->num_inputs(); ++i) {
      const auto& b = (*eng)->bindings()[static_cast<size_t>(i)];
      const Tensor& t = feeds[c].at(b.name);
      REQUIRE(contexts[c]->copy_input_from_host(i, t.data(), t.byte_size()).ok());
    }
    REQUIRE(contexts[c]->enqueue().ok());
  }
  for (int c = 0; c < 3; ++c) {
    INFO("context " << c);
    REQUIRE(contexts[c]->synchronize().ok());
    auto want = reference::execute(original, feeds[c]);
    REQUIRE(want.ok());
    const int b = (*eng)->num_inputs();
    const auto& info = (*eng)->bindings()[static_cast<size_t>(b)];
    const Tensor& ref = want->at(info.name);
    Tensor got(ref.dtype(), ref.shape());
    REQUIRE(contexts[c]->copy_output_to_host(b, got.mutable_data(), got.byte_size()).ok());
    REQUIRE(contexts[c]->synchronize().ok());
    compare(ref, got, rtol_for(ref.dtype(), false), 160, info.name);
    // A second run replays the same graph: same result.
    REQUIRE(contexts[c]->enqueue().ok());
    Tensor again(ref.dtype(), ref.shape());
    REQUIRE(contexts[c]->copy_output_to_host(b, again.mutable_data(), again.byte_size()).ok());
    REQUIRE(contexts[c]->synchronize().ok());
    CHECK(std::memcmp(got.data(), again.data(), got.byte_size()) == 0);
  }
}
