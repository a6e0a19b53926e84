// Generated pooling and contraction kernels on the GPU against the reference
// executor, on fresh random inputs (uniform in [-1, 1], smaller for deep K): every case of
// tests/pool_contraction_cases.h (MatMul/Gemm/Einsum with sizes off the tile
// grid, 1-D operands, broadcast batches, transposes, alpha/beta/C; Conv and
// ConvTranspose in 1-D/2-D/3-D with groups, depthwise, strides, dilations,
// pads, auto_pad, output_padding/output_shape; pools with ceil_mode,
// dilations, Indices, count_include_pad; fused epilogues; float16/bfloat16).
// Tolerances are the case's (see KernelCase): the reference sums in double,
// the kernels in float.
#include <catch2/catch.hpp>

#include "tests/gpu/gpu_check.h"
#include "tests/pool_contraction_cases.h"

using namespace graphc;

namespace {

void run_cases(const std::vector<testing::KernelCase>& cases,
               const emit::LowerOptions& options = {}) {
  for (const auto& c : cases)
    testing::check_gpu_matches_reference(c.build(), c.label, -c.range, c.range, c.half_atol,
                                         c.rtol_f32, options);
}

}  // namespace

TEST_CASE("MatMul and Gemm kernels on the GPU match the reference", "[gpu]") {
  run_cases(testing::matmul_cases());
}

TEST_CASE("Einsum kernels on the GPU match the reference", "[gpu]") {
  run_cases(testing::einsum_cases());
}

TEST_CASE("Conv and ConvTranspose kernels on the GPU match the reference", "[gpu]") {
  // The generated kernels (--conv generated), then the default: cuDNN where
  // it can (symmetric pads), the generated kernel elsewhere.
  emit::LowerOptions generated;
  generated.conv.mode = target::ConvMode::kGenerated;
  SECTION("generated") { run_cases(testing::conv_cases(), generated); }
  SECTION("auto (cuDNN where expressible)") { run_cases(testing::conv_cases()); }
}

TEST_CASE("pooling kernels on the GPU match the reference", "[gpu]") {
  run_cases(testing::pool_cases());
}

TEST_CASE("MaxPool and GlobalMaxPool keep the reference's NaN rule on the GPU", "[gpu]") {
  // A NaN first in a window (or plane) wins; a later NaN never does.
  using namespace ir;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (OpKind op : {OpKind::MaxPool, OpKind::GlobalMaxPool}) {
    testing::GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {1, 2, 4, 4});
    AttributeMap a;
    if (op == OpKind::MaxPool)
      a = testing::attrs(
          {{"kernel_shape", Attribute::of_ints({2, 2})}, {"strides", Attribute::of_ints({2, 2})}});
    b.output(b.node(op, {x}, a));
    Graph g = b.build();
    std::vector<float> v(32);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 7) - 3.0f;
    v[0] = nan;       // first tap of window (0,0) of channel 0 / first of plane 0
    v[16 + 5] = nan;  // second tap of a window of channel 1: ignored
    std::map<std::string, Tensor> feeds{{"x", Tensor::from_f32(v, {1, 2, 4, 4})}};
    auto want = reference::execute(g, feeds);
    REQUIRE(want.ok());
    auto got = driver::execute_on_gpu(g, feeds);
    INFO((got.ok() ? "" : got.status().message()));
    REQUIRE(got.ok());
    const Tensor& w = want->begin()->second;
    const Tensor& o = got->at(want->begin()->first);
    REQUIRE(w.numel() == o.numel());
    for (int64_t i = 0; i < w.numel(); ++i) {
      INFO(op_name(op) << " element " << i);
      if (std::isnan(w.get_f64(i)))
        CHECK(std::isnan(o.get_f64(i)));
      else
        CHECK(w.get_f64(i) == o.get_f64(i));
    }
  }
}
