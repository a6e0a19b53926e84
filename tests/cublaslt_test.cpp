// cuBLASLt gemms without a GPU: the library-vs-generated rule, the matmul
// descriptor's byte format, manifest validation of library calls, engine
// determinism, and a missing libcublasLt being an error only for engines
// that call it.
#include "runtime/cublaslt.h"

#include <catch2/catch.hpp>

#include "driver/engine_build.h"
#include "emit/plan/schedule.h"
#include "engine_format/matmul_params.h"
#include "optimizer/pass.h"
#include "runtime/engine_loader.h"
#include "target/cuda/cublaslt_rules.h"
#include "tests/engine_test_util.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::engine::MatmulEpilogue;
using graphc::engine::MatmulParams;
using graphc::testing::GraphBuilder;

namespace {

Tensor random_weights(DType dt, const Shape& shape) {
  return graphc::testing::random_tensor(dt, shape, graphc::testing::test_rng());
}

// y = act(x @ W + bias) (+ residual), optimized: one gemm kernel.
Graph linear(DType dt, int64_t m, int64_t k, int64_t n, const std::string& act = "",
             bool bias = true, bool residual = false) {
  GraphBuilder g;
  auto x = g.input("x", dt, {m, k});
  auto w = g.constant("w", random_weights(dt, {k, n}));
  auto y = g.node(OpKind::MatMul, {x, w}, {}, 1, "matmul");
  if (bias) y = g.node(OpKind::Add, {y, g.constant("b", random_weights(dt, {n}))}, {}, 1, "bias");
  if (residual) y = g.node(OpKind::Add, {y, g.input("r", dt, {m, n})}, {}, 1, "residual");
  if (act == "relu") y = g.node(OpKind::Relu, {y}, {}, 1, "relu");
  if (act == "gelu_tanh" || act == "gelu_erf")
    y = g.node(OpKind::Gelu, {y},
               graphc::testing::attrs(
                   {{"approximate", Attribute::of_string(act == "gelu_tanh" ? "tanh" : "none")}}),
               1, "gelu");
  if (act == "sigmoid") y = g.node(OpKind::Sigmoid, {y}, {}, 1, "sigmoid");
  g.output(y);
  Graph graph = g.build();
  optimizer::PassContext ctx;
  REQUIRE(optimizer::run_passes(graph, ctx).ok());
  return graph;
}

NodeId only_gemm(const Graph& g) {
  NodeId found = -1;
  for (const auto& k : emit::make_schedule(g).kernels)
    if (k.kind == target::KernelKind::kGemm) {
      REQUIRE(found < 0);
      found = k.node;
    }
  REQUIRE(found >= 0);
  return found;
}

target::GemmChoice choose(const Graph& g, target::GemmMode mode = target::GemmMode::kAuto,
                          bool tf32 = false) {
  return target::choose_gemm_lowering(g, only_gemm(g), {mode, tf32});
}

MatmulParams sample_params() {
  MatmulParams p;
  p.dtype = 10;
  p.trans_b = true;
  p.has_c = true;
  p.has_bias = true;
  p.epilogue = MatmulEpilogue::kGeluTanh;
  p.m = 3;
  p.n = 5;
  p.k = 7;
  p.batch = 4;
  p.lda = 7;
  p.ldb = 7;
  p.ldc = 5;
  p.stride_a = 21;
  p.stride_b = 0;
  p.stride_c = 15;
  p.stride_d = 15;
  p.alpha = 0.5;
  p.beta = 1.0;
  return p;
}

}  // namespace

TEST_CASE("cuBLASLt rule: large float gemms with expressible epilogues", "[cublaslt]") {
  SECTION("bias + ReLU, fp32, large") {
    auto c = choose(linear(DType::kFloat32, 128, 256, 64, "relu"));
    REQUIRE(c.call);
    const MatmulParams& p = c.call->params;
    CHECK(p.m == 128);
    CHECK(p.n == 64);
    CHECK(p.k == 256);
    CHECK(p.has_bias);
    CHECK(p.epilogue == MatmulEpilogue::kRelu);
    CHECK(p.compute == engine::MatmulCompute::kF32);
    CHECK(c.call->args.size() == 4);  // A, B, bias, D
  }
  SECTION("TF32 only when allowed, and only for fp32") {
    auto g = linear(DType::kFloat32, 128, 256, 64);
    CHECK(choose(g, target::GemmMode::kAuto, true).call->params.compute ==
          engine::MatmulCompute::kF32FastTf32);
    auto h = linear(DType::kFloat16, 128, 256, 64);
    CHECK(choose(h, target::GemmMode::kAuto, true).call->params.compute ==
          engine::MatmulCompute::kF32);
  }
  SECTION("tanh GELU and a residual add") {
    auto c = choose(linear(DType::kFloat16, 64, 128, 256, "gelu_tanh", true, true));
    REQUIRE(c.call);
    CHECK(c.call->params.epilogue == MatmulEpilogue::kGeluTanh);
    CHECK(c.call->params.has_c);
    CHECK(c.call->params.beta == 1.0);
    CHECK(c.call->args.size() == 5);
  }
  SECTION("small problems stay generated in auto mode, not with --gemm cublaslt") {
    auto g = linear(DType::kFloat32, 16, 16, 16);
    auto c = choose(g);
    CHECK_FALSE(c.call);
    CHECK(engine::testing::contains(c.reason, "< 2^20"));
    CHECK(choose(g, target::GemmMode::kCublasLt).call);
  }
  SECTION("--gemm generated keeps everything generated") {
    CHECK_FALSE(choose(linear(DType::kFloat32, 128, 256, 64), target::GemmMode::kGenerated).call);
  }
  SECTION("the erf GELU is not cuBLASLt's (tanh) GELU") {
    auto c = choose(linear(DType::kFloat32, 128, 256, 64, "gelu_erf"), target::GemmMode::kCublasLt);
    CHECK_FALSE(c.call);
    CHECK(engine::testing::contains(c.reason, "erf Gelu"));
    // The bias merged into Gemm's C: cuBLASLt Gemm+bias, then a generated Gelu.
    CHECK(c.split_after == size_t{0});
  }
  SECTION("other epilogues split off after what cuBLASLt takes") {
    auto c = choose(linear(DType::kFloat32, 128, 256, 64, "sigmoid"), target::GemmMode::kCublasLt);
    CHECK_FALSE(c.call);
    CHECK(c.split_after == size_t{0});
    CHECK(engine::testing::contains(c.reason,
                                    "cuBLASLt matmul+bias, then generated epilogue: Sigmoid"));
  }
  SECTION("integer matmuls stay generated") {
    GraphBuilder g;
    auto a = g.input("a", DType::kInt32, {128, 128});
    auto b = g.input("b", DType::kInt32, {128, 128});
    g.output(g.node(OpKind::MatMul, {a, b}));
    Graph graph = g.build();
    CHECK_FALSE(choose(graph, target::GemmMode::kCublasLt).call);
  }
}

TEST_CASE("cuBLASLt rule: batched MatMul with broadcast batch dims", "[cublaslt]") {
  auto batched = [](Shape a, Shape b) {
    GraphBuilder g;
    auto x = g.input("a", DType::kFloat32, std::move(a));
    auto y = g.input("b", DType::kFloat32, std::move(b));
    g.output(g.node(OpKind::MatMul, {x, y}));
    return g.build();
  };
  SECTION("shared B under contiguous A batches: one taller matrix") {
    auto c = choose(batched({2, 3, 64, 32}, {32, 48}), target::GemmMode::kCublasLt);
    REQUIRE(c.call);
    CHECK(c.call->params.batch == 1);
    CHECK(c.call->params.m == 6 * 64);
    CHECK(c.call->params.stride_a == 0);
    CHECK(c.call->params.stride_d == 0);
  }
  SECTION("shared A: stride 0") {
    auto c = choose(batched({1, 17, 9}, {4, 9, 30}), target::GemmMode::kCublasLt);
    REQUIRE(c.call);
    CHECK(c.call->params.batch == 4);
    CHECK(c.call->params.stride_a == 0);
    CHECK(c.call->params.stride_b == 9 * 30);
    CHECK(c.call->params.stride_d == 17 * 30);
  }
  SECTION("both batched") {
    auto c = choose(batched({5, 31, 40}, {5, 40, 23}), target::GemmMode::kCublasLt);
    REQUIRE(c.call);
    CHECK(c.call->params.batch == 5);
    CHECK(c.call->params.stride_a == 31 * 40);
    CHECK(c.call->params.stride_b == 40 * 23);
  }
  SECTION("B broadcast over the leading batch dim") {
    auto c = choose(batched({4, 3, 8, 16}, {1, 3, 16, 8}), target::GemmMode::kCublasLt);
    CHECK_FALSE(c.call);  // b's batches repeat every 3: not one stride
  }
  SECTION("A broadcast over the trailing batch dim") {
    auto c = choose(batched({2, 1, 8, 16}, {1, 3, 16, 8}), target::GemmMode::kCublasLt);
    CHECK_FALSE(c.call);
    CHECK(engine::testing::contains(c.reason, "one stride"));
  }
  SECTION("1-D operands") {
    auto c = choose(batched({16}, {5, 16, 8}), target::GemmMode::kCublasLt);
    REQUIRE(c.call);
    CHECK(c.call->params.m == 1);
    CHECK(c.call->params.batch == 5);
    CHECK(c.call->params.stride_a == 0);
  }
}

TEST_CASE("cuBLASLt rule: Gemm attributes and C", "[cublaslt]") {
  auto gemm = [](Shape c_shape, double beta) {
    GraphBuilder g;
    auto a = g.input("a", DType::kFloat32, {64, 32});  // transA: M=32, K=64
    auto b = g.input("b", DType::kFloat32, {48, 64});  // transB: N=48
    auto c = g.input("c", DType::kFloat32, std::move(c_shape));
    g.output(g.node(OpKind::Gemm, {a, b, c},
                    graphc::testing::attrs({{"transA", Attribute::of_int(1)},
                                            {"transB", Attribute::of_int(1)},
                                            {"alpha", Attribute::of_float(0.25)},
                                            {"beta", Attribute::of_float(beta)}})));
    return g.build();
  };
  auto full = choose(gemm({32, 48}, 2.0), target::GemmMode::kCublasLt);
  REQUIRE(full.call);
  const MatmulParams& p = full.call->params;
  CHECK((p.trans_a && p.trans_b && p.m == 32 && p.n == 48 && p.k == 64));
  CHECK((p.lda == 32 && p.ldb == 64 && p.ldc == 48));
  CHECK((p.has_c && !p.has_bias && p.alpha == 0.25 && p.beta == 2.0));
  auto bias = choose(gemm({48}, 1.0), target::GemmMode::kCublasLt);
  REQUIRE(bias.call);
  CHECK(bias.call->params.has_bias);
  CHECK_FALSE(choose(gemm({48}, 3.0), target::GemmMode::kCublasLt).call);     // scaled bias
  CHECK_FALSE(choose(gemm({32, 1}, 1.0), target::GemmMode::kCublasLt).call);  // column bias
}

TEST_CASE("cuBLASLt matmul params round-trip and reject bad fields", "[cublaslt]") {
  const MatmulParams p = sample_params();
  const std::string bytes = engine::encode_matmul_params(p);
  auto back = engine::decode_matmul_params(bytes);
  REQUIRE(back.ok());
  CHECK(*back == p);
  CHECK(engine::encode_matmul_params(*back) == bytes);

  auto refused = [&](std::string b, const std::string& part) {
    auto r = engine::decode_matmul_params(b);
    REQUIRE_FALSE(r.ok());
    INFO(r.status().message());
    CHECK(engine::testing::contains(r.status().message(), part));
  };
  auto with = [&](auto edit) {
    MatmulParams q = p;
    edit(q);
    return engine::encode_matmul_params(q);
  };
  refused("", "0 bytes");
  refused(bytes.substr(0, bytes.size() - 1), "bytes, version 1 has");
  refused(bytes + "x", "bytes, version 1 has");
  std::string v2 = bytes;
  v2[0] = 2;
  refused(v2, "version 2");
  refused(with([](auto& q) { q.dtype = 6; }), "dtype 6");
  refused(with([](auto& q) { q.compute = engine::MatmulCompute::kF32FastTf32; }), "TF32");
  refused(with([](auto& q) { q.epilogue = static_cast<MatmulEpilogue>(7); }), "epilogue 7");
  std::string flag = bytes;
  flag[9] = 2;  // trans_a
  refused(flag, "flag 0 is 2");
  std::string pad = bytes;
  pad[14] = 1;
  refused(pad, "reserved");
  refused(with([](auto& q) { q.m = 0; }), "m = 0");
  refused(with([](auto& q) { q.k = int64_t{1} << 40; }), "k = ");
  refused(with([](auto& q) { q.lda = 6; }), "lda 6");
  refused(with([](auto& q) { q.ldb = 3; }), "ldb 3");
  refused(with([](auto& q) { q.ldc = 4; }), "ldc 4");
  refused(with([](auto& q) { q.stride_a = -1; }), "stride_a = -1");
  refused(with([](auto& q) { q.stride_d = 14; }), "overlaps");
  refused(with([](auto& q) {
            q.has_c = false;
            q.stride_c = 0;
          }),
          "beta 1 without C");
  refused(with([](auto& q) { q.alpha = std::numeric_limits<double>::infinity(); }), "not finite");
  refused(with([](auto& q) { q.stride_a = int64_t{1} << 62; }), "overflow");
}

namespace {

// An engine whose one kernel is a cuBLASLt matmul with a bias (args A, B, bias, D).
engine::EngineContents build(const Graph& g) {
  driver::BuildOptions opts;
  opts.archs = {"sm_90"};
  opts.lower.gemm.mode = target::GemmMode::kCublasLt;
  auto built = driver::build_engine(g, opts);
  INFO(built.status().message());
  REQUIRE(built.ok());
  return std::move(*built);
}

engine::EngineContents matmul_engine() {
  return build(linear(DType::kFloat32, 128, 256, 64, "relu"));
}

engine::Kernel& library_kernel(engine::EngineContents& c) {
  for (auto& k : *c.manifest.mutable_kernels())
    if (k.has_library_call()) return k;
  FAIL("no library call in the engine");
  throw;
}

}  // namespace

TEST_CASE("engines record cuBLASLt calls, deterministically", "[cublaslt][build]") {
  const Graph g = linear(DType::kFloat32, 128, 256, 64, "relu");
  auto a = build(g);
  auto b = build(g);
  CHECK(engine::testing::serialize_ok(a) == engine::testing::serialize_ok(b));
  const engine::Kernel& k = library_kernel(a);
  CHECK(k.library_call().library() == "cublasLt");
  CHECK(k.library_call().op() == "matmul");
  CHECK(k.library_call().algorithm() == -1);
  CHECK(k.library_call().workspace_bytes() == target::kCublasLtWorkspaceBytes);
  CHECK(k.module_entry().empty());
  CHECK(k.args_size() == 4);
  auto reread = engine::parse_engine(engine::testing::serialize_ok(a));
  REQUIRE(reread.ok());
  auto exe = runtime::executable_from_engine(*reread, 90);
  INFO(exe.status().message());
  REQUIRE(exe.ok());
  bool found = false;
  for (const auto& l : exe->launches)
    if (const runtime::MatmulLaunch* mm = l.matmul()) {
      found = true;
      CHECK(mm->params.has_bias);
      CHECK(mm->params.epilogue == MatmulEpilogue::kRelu);
      CHECK(mm->workspace_bytes == target::kCublasLtWorkspaceBytes);
    }
  CHECK(found);
}

TEST_CASE("manifest validation rejects bad cuBLASLt calls", "[cublaslt][engine]") {
  using graphc::engine::testing::expect_invalid_manifest;
  auto edit = [](auto fn, const std::string& part) {
    auto c = matmul_engine();
    fn(library_kernel(c), c.manifest);
    expect_invalid_manifest(c, part);
  };
  edit([](engine::Kernel& k, auto&) { k.mutable_library_call()->set_library("cublas"); },
       "unknown library");
  edit([](engine::Kernel& k, auto&) { k.mutable_library_call()->set_op("gemv"); },
       "unknown cublasLt op");
  edit([](engine::Kernel& k, auto&) { k.mutable_library_call()->set_params("junk"); },
       "cublasLt matmul params");
  edit([](engine::Kernel& k, auto&) { k.mutable_args()->RemoveLast(); }, "takes 4 tensors");
  edit([](engine::Kernel& k, auto&) { k.add_args(0); }, "takes 4 tensors");
  edit([](engine::Kernel& k, auto&) { k.set_args(0, 1000); }, "out of range");
  edit([](engine::Kernel& k,
          auto&) { k.mutable_library_call()->set_workspace_bytes(uint64_t{1} << 40); },
       "workspace");
  edit([](engine::Kernel& k, auto&) { k.mutable_library_call()->set_algorithm(64); },
       "algorithm 64");
  edit([](engine::Kernel& k, auto&) { k.mutable_library_call()->set_algorithm(-2); },
       "algorithm -2");
  edit([](engine::Kernel& k, auto&) { k.set_module_entry("f"); }, "no module entry");
  edit([](engine::Kernel& k, auto&) { k.add_grid(1); }, "no module entry");
  // Operands inconsistent with their tensors.
  edit(
      [](engine::Kernel& k, auto& m) {
        auto* t = m.mutable_tensors(k.args(0));
        t->set_dtype(10);
        t->set_bytes(t->bytes() / 2);
      },
      "dtype 10");
  edit(
      [](engine::Kernel& k, auto& m) {
        auto p = *engine::decode_matmul_params(k.library_call().params());
        p.k *= 2;
        p.lda *= 2;
        k.mutable_library_call()->set_params(engine::encode_matmul_params(p));
      },
      "A tensor");
  edit(
      [](engine::Kernel& k, auto& m) {
        auto p = *engine::decode_matmul_params(k.library_call().params());
        p.n += 1;
        p.ldb += 1;
        p.ldc += 1;
        k.mutable_library_call()->set_params(engine::encode_matmul_params(p));
      },
      "tensor");
  edit(
      [](engine::Kernel& k, auto& m) {
        // D pointed at the weights (the bias): the call would overwrite them.
        auto p = *engine::decode_matmul_params(k.library_call().params());
        p.m = 1;
        p.stride_d = 64;
        k.mutable_library_call()->set_params(engine::encode_matmul_params(p));
        k.set_args(3, k.args(2));
      },
      "weights");
}

TEST_CASE("libcublasLt is needed only by engines that call it", "[cublaslt][runtime]") {
  auto missing = runtime::load_cublaslt_from("/nonexistent/libcublasLt.so.13");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == ErrorCode::kUnsupported);
  CHECK(engine::testing::contains(missing.status().message(), "GRAPHC_CUBLASLT_PATH"));
  CHECK(engine::testing::contains(missing.status().message(), "--gemm generated"));
  // No matmul launches: nothing is loaded, whatever the environment says.
  std::vector<runtime::Launch> launches(3);
  auto none = runtime::EngineMatmuls::create(launches);
  REQUIRE(none.ok());
  CHECK((*none)->api() == nullptr);
  CHECK((*none)->workspace_bytes() == 0);
}
