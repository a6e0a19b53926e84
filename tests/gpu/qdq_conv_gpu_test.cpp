// The int8 tensor-core conv on the GPU (mma.sync m16n8k32 s8, cuda_conv_int8.cpp):
// QDQ convs (tests/qdq_conv_cases.h) with the dequantize, bias, Relu and
// requantize fused, against the reference on the unoptimized QDQ graph
// (floats within the float QDQ graph's rounding, requantized outputs within
// one quantum at ties), in float32 and with --precision fp16; ConvInteger and
// QLinearConv bit-exact against the reference kernels; a deep conv (K = 4608)
// exact in its int32 accumulator. Random inputs, odd channel counts.
#include <catch2/catch.hpp>

#include "driver/gpu_execute.h"
#include "optimizer/pass.h"
#include "reference/executor.h"
#include "tests/cuda_pass_context.h"
#include "tests/gpu/gpu_check.h"
#include "tests/qdq_conv_cases.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;

namespace {

Graph optimized(const Graph& g, optimizer::Precision precision = optimizer::Precision::kFp32) {
  Graph opt = g;
  optimizer::PassContext ctx = testing::cuda_pass_context();
  ctx.int8_gemm = true;  // the int8 convs come with the int8 GEMMs (off in graphc build by default)
  ctx.precision = precision;
  Status st = optimizer::run_passes(opt, ctx);
  INFO(st.message());
  REQUIRE(st.ok());
  int64_t int8_convs = 0;
  for (const Node& n : opt.nodes) {
    if (n.dead) continue;
    int8_convs += n.op == OpKind::ConvInteger;
    if (n.body)
      for (const Node& inner : n.body->nodes) int8_convs += !inner.dead && inner.op == OpKind::ConvInteger;
  }
  CHECK(int8_convs > 0);
  return opt;
}

}  // namespace

TEST_CASE("QDQ convs run as int8 tensor-core convs matching the reference", "[gpu][quantize][int8][conv]") {
  for (const auto& c : testing::qdq_conv_cases()) {
    INFO(c.label);
    const Graph g = testing::build_qdq_conv_graph(c);
    const auto feeds = testing::qdq_inputs(g, testing::test_rng());
    auto want = reference::execute(g, feeds);
    REQUIRE(want.ok());
    auto got = driver::execute_on_gpu(optimized(g), feeds);
    INFO((got.ok() ? "" : got.status().message()));
    REQUIRE(got.ok());
    for (const auto& [name, t] : *want) CHECK(testing::check_qdq_conv_outputs(c, t, got->at(name)) == "");
    if (c.out == testing::QdqConvOut::kQuantized) continue;
    // --precision fp16: the float epilogue in half precision, the conv still int8.
    auto half = driver::execute_on_gpu(optimized(g, optimizer::Precision::kFp16), feeds);
    REQUIRE(half.ok());
    for (const auto& [name, t] : *want) {
      double peak = 0, worst = 0;
      for (int64_t i = 0; i < t.numel(); ++i) peak = std::max(peak, std::fabs(t.get_f64(i)));
      for (int64_t i = 0; i < t.numel(); ++i)
        worst = std::max(worst, std::fabs(t.get_f64(i) - half->at(name).get_f64(i)));
      CHECK(worst <= (c.chain ? 3e-2 : 1e-2) * peak + 0.0201);
    }
  }
}

TEST_CASE("ConvInteger and QLinearConv on the int8 conv are bit-exact on the GPU",
          "[gpu][quantize][int8][conv]") {
  for (OpKind op : {OpKind::ConvInteger, OpKind::QLinearConv}) {
    INFO(op_name(op));
    const Graph g = testing::build_integer_conv(op);
    std::map<std::string, Tensor> feeds;
    for (ValueId id : g.inputs)
      feeds[g.value(id).name] =
          testing::random_tensor(g.value(id).dtype, g.value(id).shape, testing::test_rng(), 0, 255);
    testing::check_gpu_bit_exact(g, optimized(g), feeds);
  }
}

TEST_CASE("a deep int8 conv accumulates exactly in int32 on the GPU", "[gpu][quantize][int8][conv]") {
  // 3x3 over 256 channels: K = 2304, sums past float32's 2^24 (64x64 tiles);
  // a 1x1 conv over 4x66x64 pixels fills 132 tiles of 128x128.
  struct Shape4 {
    int64_t n, c, h, w, oc, k;
  };
  for (Shape4 s : {Shape4{1, 256, 28, 28, 256, 3}, Shape4{4, 64, 66, 64, 128, 1}}) {
    INFO(s.n << "x" << s.c << "x" << s.h << "x" << s.w << " -> " << s.oc << ", " << s.k << "x" << s.k);
    testing::GraphBuilder b;
    auto x = b.input("x", DType::kInt8, {s.n, s.c, s.h, s.w});
    auto w = b.constant("w", testing::random_tensor(DType::kInt8, {s.oc, s.c, s.k, s.k},
                                                    testing::test_rng(), -127, 127));
    const int64_t p = s.k / 2;
    b.output(b.node(OpKind::ConvInteger, {x, w},
                    testing::attrs({{"pads", Attribute::of_ints({p, p, p, p})}})));
    const Graph g = b.build();
    std::map<std::string, Tensor> feeds = {
        {"x", testing::random_tensor(DType::kInt8, {s.n, s.c, s.h, s.w}, testing::test_rng(), -128, 127)}};
    testing::check_gpu_bit_exact(g, optimized(g), feeds);
  }
}
