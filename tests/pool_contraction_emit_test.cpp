// Generated pooling and contraction kernels (emit/cuda/cuda_pool.cpp,
// cuda_gemm.cpp, cuda_conv.cpp, cuda_einsum.cpp) without a GPU: every case
// of tests/pool_contraction_cases.h lowers completely and its module
// compiles with NVRTC for sm_80 and sm_90; the optimizer's fused gemm/conv/
// pool groups become one kernel each; unsupported inputs give clear errors.
// Their numbers are checked on a GPU by tests/gpu/pool_contraction_gpu_test.cpp.
#include <catch2/catch.hpp>

#include "driver/load_model.h"
#include "emit/cuda/gpu_kernels.h"
#include "emit/nvrtc/nvrtc_compiler.h"
#include "emit/plan/gpu_plan.h"
#include "tests/cuda_batch.h"
#include "tests/pool_contraction_cases.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::attrs;
using graphc::testing::GraphBuilder;
using graphc::testing::KernelCase;

namespace {

bool is_contraction_or_pool(target::KernelKind k) {
  return k == target::KernelKind::kGemm || k == target::KernelKind::kConv ||
         k == target::KernelKind::kPool;
}

// Lowers every case, checks each has exactly one gemm/conv/pool kernel and
// no view fallback, and compiles all of them as one module per arch.
void lower_and_compile(const std::vector<KernelCase>& cases) {
  emit::GpuPlan all;
  for (const auto& c : cases) {
    INFO(c.label);
    Graph g = c.build();
    const emit::Schedule s = emit::make_schedule(g);
    int anchors = 0;
    for (const auto& k : s.kernels) anchors += is_contraction_or_pool(k.kind) ? 1 : 0;
    CHECK(anchors == 1);
    auto plan = emit::lower_for_gpu(g);
    if (!plan.ok()) FAIL(plan.status().message());
    for (auto& src : plan->sources) all.sources.push_back(src);
  }
  const std::string source = testing::combined_kernel_source(all.sources);
  auto m = emit::compile_cuda(source, "pool_contraction_cases", {"sm_80", "sm_90"});
  if (!m.ok()) FAIL(m.status().message());
  CHECK(m->binaries.size() == 2);
}

// The one gemm/conv/pool kernel of `g`, generated.
Expected<emit::GeneratedKernel> anchor_kernel(const Graph& g) {
  for (const auto& k : emit::make_schedule(g).kernels)
    if (is_contraction_or_pool(k.kind)) return emit::generate_gpu_kernel(g, k.node, k.kind);
  return invalid_argument("no anchor kernel");
}

}  // namespace

TEST_CASE("MatMul and Gemm kernels compile for sm_80 and sm_90", "[emit]") {
  lower_and_compile(testing::matmul_cases());
}

TEST_CASE("Einsum kernels compile for sm_80 and sm_90", "[emit]") {
  lower_and_compile(testing::einsum_cases());
}

TEST_CASE("Conv and ConvTranspose kernels compile for sm_80 and sm_90", "[emit]") {
  lower_and_compile(testing::conv_cases());
}

TEST_CASE("pooling kernels compile for sm_80 and sm_90", "[emit]") {
  lower_and_compile(testing::pool_cases());
}

TEST_CASE("contraction kernels pick the tiled GEMM, the direct depthwise conv, shared tiles",
          "[emit]") {
  using testing::pc_detail::one_op;
  // A large float GEMM gets 128x128 tiles with 8x8 per thread; a small one 64x64.
  auto big = anchor_kernel(
      one_op(OpKind::MatMul, {{DType::kFloat32, {2048, 512}}, {DType::kFloat32, {512, 2048}}}));
  REQUIRE(big.ok());
  CHECK(big->source.find("BM = 128") != std::string::npos);
  CHECK(big->threads_per_block == 256);
  CHECK(big->blocks == 16 * 16);
  auto small = anchor_kernel(
      one_op(OpKind::MatMul, {{DType::kFloat32, {3, 100, 70}}, {DType::kFloat32, {70, 90}}}));
  REQUIRE(small.ok());
  CHECK(small->source.find("BM = 64") != std::string::npos);
  CHECK(small->blocks == 2 * 2);
  CHECK(small->grid_z == 3);
  // float16/bfloat16 GEMMs run on tensor cores (mma.sync for sm_80+, the
  // default sm_90); skinny products (M or N <= 8) sweep the long dim instead of tiling.
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    auto half = anchor_kernel(one_op(OpKind::MatMul, {{dt, {100, 70}}, {dt, {70, 90}}}));
    REQUIRE(half.ok());
    CHECK(half->source.find("mma.sync.aligned.m16n8k16") != std::string::npos);
    CHECK(half->source.find("__launch_bounds__(128, 2)") != std::string::npos);
  }
  auto skinny = anchor_kernel(
      one_op(OpKind::MatMul, {{DType::kFloat32, {4, 70}}, {DType::kFloat32, {70, 1000}}}));
  REQUIRE(skinny.ok());
  CHECK(skinny->source.find("SMALL_M = true") != std::string::npos);
  CHECK(skinny->blocks == (1000 + 31) / 32);
  // Depthwise and small-group convs are the direct kernel (a shared-memory
  // tile in NCHW), a grouped conv with more than 8 channels per group the
  // implicit GEMM.
  auto dw = anchor_kernel(one_op(OpKind::Conv,
                                 {{DType::kFloat32, {1, 8, 9, 9}}, {DType::kFloat32, {8, 1, 3, 3}}},
                                 attrs({{"group", Attribute::of_int(8)}})));
  REQUIRE(dw.ok());
  CHECK(dw->name.rfind("dwconv_", 0) == 0);
  auto small_group = anchor_kernel(
      one_op(OpKind::Conv, {{DType::kFloat32, {1, 8, 9, 9}}, {DType::kFloat32, {8, 4, 3, 3}}},
             attrs({{"group", Attribute::of_int(2)}})));
  REQUIRE(small_group.ok());
  CHECK(small_group->entry.rfind("dwconv_tile_", 0) == 0);
  auto grouped = anchor_kernel(
      one_op(OpKind::Conv, {{DType::kFloat32, {1, 32, 9, 9}}, {DType::kFloat32, {8, 16, 3, 3}}},
             attrs({{"group", Attribute::of_int(2)}})));
  REQUIRE(grouped.ok());
  CHECK(grouped->name.rfind("conv_", 0) == 0);
  CHECK(grouped->grid_z == 2);
}

TEST_CASE("fused gemm and conv groups put their epilogue in the contraction kernel", "[emit]") {
  for (const auto& c : testing::all_kernel_cases()) {
    if (c.label.rfind("fused", 0) != 0) continue;
    INFO(c.label);
    Graph g = c.build();
    // One launch: the whole chain is one kernel.
    int launched = 0;
    for (const auto& k : emit::make_schedule(g).kernels)
      launched += k.kind == target::KernelKind::kView ? 0 : 1;
    CHECK(launched == 1);
    auto k = anchor_kernel(g);
    if (!k.ok()) FAIL(k.status().message());
    CHECK(k->source.find("store_out0") != std::string::npos);
  }
}

TEST_CASE("contraction and pool generators report what they cannot lower", "[emit]") {
  using testing::pc_detail::one_op;
  SECTION("integer Gemm with a fractional alpha") {
    auto k = anchor_kernel(one_op(OpKind::Gemm, {{DType::kInt32, {4, 5}}, {DType::kInt32, {5, 6}}},
                                  attrs({{"alpha", Attribute::of_float(0.5)}})));
    REQUIRE_FALSE(k.ok());
    CHECK(k.status().code() == ErrorCode::kUnsupported);
    CHECK(k.status().message().find("non-integer alpha") != std::string::npos);
  }
  SECTION("a GEMM beyond 32-bit extents") {
    auto k = anchor_kernel(
        one_op(OpKind::MatMul, {{DType::kFloat32, {3000000000LL, 2}}, {DType::kFloat32, {2, 2}}}));
    REQUIRE_FALSE(k.ok());
    CHECK(k.status().code() == ErrorCode::kUnsupported);
    CHECK(k.status().message().find("32-bit") != std::string::npos);
  }
  SECTION("window arithmetic that would overflow 32 bits") {
    auto k = anchor_kernel(one_op(OpKind::MaxPool, {{DType::kFloat32, {1, 1, 1, 1500000000LL}}},
                                  attrs({{"kernel_shape", Attribute::of_ints({1, 2})}})));
    REQUIRE_FALSE(k.ok());
    CHECK(k.status().code() == ErrorCode::kUnsupported);
    CHECK(k.status().message().find("32-bit") != std::string::npos);
  }
  SECTION("a node id out of range is an error, not a crash") {
    Graph g = one_op(OpKind::MaxPool, {{DType::kFloat32, {1, 1, 4, 4}}},
                     attrs({{"kernel_shape", Attribute::of_ints({2, 2})}}));
    CHECK_FALSE(emit::generate_pool_kernel(g, 999).ok());
    CHECK_FALSE(emit::generate_contraction_kernel(g, -1).ok());
  }
  SECTION("a pool generator given a contraction") {
    Graph g = one_op(OpKind::MatMul, {{DType::kFloat32, {4, 5}}, {DType::kFloat32, {5, 6}}});
    auto k = emit::generate_pool_kernel(g, 0);
    REQUIRE_FALSE(k.ok());
    CHECK(k.status().code() == ErrorCode::kUnsupported);
  }
}

TEST_CASE("every gemm, conv and pool kernel of the shipped models has a GPU lowering", "[emit]") {
  for (const char* model :
       {"models/mlp.onnx", "models/conv_block.onnx", "models/transformer_block.onnx"}) {
    INFO(model);
    driver::LoadOptions load;
    load.input_shapes["x"] =
        std::string(model).find("transformer") != std::string::npos ? Shape{2, 16, 64} : Shape{};
    if (load.input_shapes["x"].empty()) load.input_shapes.clear();
    auto g = driver::load_model(testing::source_path(model), load);
    REQUIRE(g.ok());
    optimizer::PassContext ctx;
    REQUIRE(optimizer::run_passes(*g, ctx).ok());
    int anchors = 0;
    for (const auto& k : emit::make_schedule(*g).kernels) {
      if (!is_contraction_or_pool(k.kind)) continue;
      ++anchors;
      auto gen = emit::generate_gpu_kernel(*g, k.node, k.kind);
      INFO(g->node(k.node).name);
      if (!gen.ok()) FAIL(gen.status().message());
    }
    CHECK(anchors > 0);
  }
}
