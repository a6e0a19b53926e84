// The roofline: the peaks table (target/roofline.h), the FLOP model of every
// contraction (emit/plan/kernel_flops.h), what each kernel's FLOPs run on,
// the fusion report's per-kernel roofline, and the engine manifest carrying
// the model to `graphc run --profile`.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "driver/engine_build.h"
#include "driver/fusion_report.h"
#include "emit/plan/gpu_plan.h"
#include "emit/plan/kernel_flops.h"
#include "engine_format/engine_file.h"
#include "runtime/engine_loader.h"
#include "target/roofline.h"
#include "tests/cli_util.h"
#include "tests/conv_graphs.h"
#include "tests/onnx_builder.h"
#include "tests/test_util.h"

namespace graphc {
namespace {

using target::Gpu;
using target::Math;

TEST_CASE("roofline table: GPUs, names and peaks", "[roofline]") {
  for (Gpu gpu : target::kAllGpus) {
    auto parsed = target::parse_gpu(target::gpu_name(gpu));
    REQUIRE(parsed.ok());
    CHECK(*parsed == gpu);
    const auto& p = target::gpu_peaks(gpu);
    // Tensor cores beat CUDA cores, fp16 doubles tf32, int8 doubles fp16.
    CHECK(p.fp16_tc > p.fp32);
    CHECK(p.fp16_tc == Approx(2 * p.tf32_tc).epsilon(0.02));
    CHECK(p.int8_tc == Approx(2 * p.fp16_tc).epsilon(0.02));
    CHECK(p.hbm_gb_per_s > 0);
  }
  CHECK(target::parse_gpu("H100").ok());
  CHECK(target::parse_gpu("h100-sxm").ok());
  auto bad = target::parse_gpu("v100");
  REQUIRE_FALSE(bad.ok());
  CHECK(testing::contains(bad.status().message(), "h100, h200, a100 or l4"));
  // Datasheet figures (dense): H100 SXM 3.35 TB/s and 989.4 fp16 TFLOP/s; H200 4.8 TB/s.
  CHECK(target::gpu_peaks(Gpu::kH100).hbm_gb_per_s == 3350);
  CHECK(target::peak_tflops(Gpu::kH100, Math::kFp16Tc) == Approx(989.4));
  CHECK(target::gpu_peaks(Gpu::kH200).hbm_gb_per_s == 4800);
  CHECK(target::peak_tflops(Gpu::kA100, Math::kFp32) == Approx(19.5));
  CHECK(target::peak_tflops(Gpu::kL4, Math::kBf16Tc) == Approx(121));
  CHECK(target::peak_tflops(Gpu::kH100, Math::kNone) == 0);

  CHECK(target::gpu_from_device_name("NVIDIA H100 80GB HBM3") == Gpu::kH100);
  CHECK(target::gpu_from_device_name("NVIDIA H200") == Gpu::kH200);
  CHECK(target::gpu_from_device_name("NVIDIA A100-SXM4-80GB") == Gpu::kA100);
  CHECK(target::gpu_from_device_name("NVIDIA L4") == Gpu::kL4);
  CHECK_FALSE(target::gpu_from_device_name("NVIDIA L40S").has_value());
  CHECK_FALSE(target::gpu_from_device_name("Tesla V100-SXM2-16GB").has_value());
  CHECK(target::gpu_for_sm(80) == Gpu::kA100);
  CHECK(target::gpu_for_sm(89) == Gpu::kL4);
  CHECK(target::gpu_for_sm(90) == Gpu::kH100);

  for (Math m : {Math::kFp64, Math::kFp32, Math::kFp16, Math::kBf16, Math::kInt8, Math::kTf32Tc,
                 Math::kFp16Tc, Math::kBf16Tc, Math::kInt8Tc, Math::kFp8Tc})
    CHECK(target::math_from_name(target::math_name(m)) == m);
  CHECK(target::math_from_name("fp4-tc") == Math::kNone);  // a newer engine's word
}

TEST_CASE("roofline: the larger of compute and memory time", "[roofline]") {
  // 0.5 GFLOP fp16 on H100 tensor cores: 0.51 us; 3.35 MB: 1 us.
  auto r = target::roofline(Gpu::kH100, Math::kFp16Tc, 500'000'000, 3'350'000);
  CHECK(r.compute_us == Approx(5e8 / 989.4e12 * 1e6));
  CHECK(r.memory_us == Approx(1.0));
  CHECK(r.us() == r.memory_us);
  CHECK(r.bound() == "memory");
  r = target::roofline(Gpu::kH100, Math::kFp32, 1'000'000'000, 3'350'000);  // 67 TFLOP/s
  CHECK(r.us() == Approx(1e9 / 67e12 * 1e6));
  CHECK(r.bound() == "compute");
  // No math: the bytes alone, whatever the FLOPs.
  r = target::roofline(Gpu::kL4, Math::kNone, 1'000'000'000, 300'000);
  CHECK(r.us() == Approx(1.0));
}

// FLOPs of the one conv kernel of `spec`'s optimized graph.
emit::KernelArithmetic conv_arithmetic(const testing::ConvSpec& spec) {
  ir::Graph g = testing::conv_graph(spec);
  for (const ir::Node& n : g.nodes)
    if (!n.dead && target::kernel_kind_of(n) == target::KernelKind::kConv)
      return emit::kernel_arithmetic(g, n);
  FAIL("no conv kernel");
  return {};
}

TEST_CASE("kernel flops: convolutions, grouped and depthwise, fused epilogues", "[roofline]") {
  testing::ConvSpec s;  // 1x4x6x6, 8 filters 3x3, pad 1: output 1x8x6x6
  s.epilogue = {"bias", "relu"};
  auto a = conv_arithmetic(s);
  CHECK(a.flops == 2 * (8 * 6 * 6) * (4 * 9));
  CHECK(a.dtype == ir::DType::kFloat32);
  CHECK_FALSE(a.depthwise);
  s.groups = 2;  // each output sums C/g = 2 channels
  CHECK(conv_arithmetic(s).flops == 2 * (8 * 6 * 6) * (2 * 9));
  s.groups = 4;  // C == groups: depthwise (with a channel multiplier of 2)
  s.strides = {2, 2};
  s.dtype = ir::DType::kFloat16;
  a = conv_arithmetic(s);
  CHECK(a.flops == 2 * (8 * 3 * 3) * 9);
  CHECK(a.depthwise);
  CHECK(a.dtype == ir::DType::kFloat16);
  testing::ConvSpec t;  // ConvTranspose: every input element scatters into K/g x taps
  t.transpose = true;
  t.strides = {2, 2};
  t.pads = {0, 0, 0, 0};
  CHECK(conv_arithmetic(t).flops == 2 * (4 * 6 * 6) * (8 * 9));
}

TEST_CASE("kernel flops: MatMul, Gemm and Attention", "[roofline]") {
  testing::GraphBuilder b;
  auto& rng = testing::test_rng();
  auto x = b.input("x", ir::DType::kFloat32, {2, 5, 7});
  auto w = b.constant("w", testing::random_tensor(ir::DType::kFloat32, {7, 3}, rng));
  auto mm = b.node(ir::OpKind::MatMul, {x, w}, {}, 1, "mm");
  auto a2 = b.input("a", ir::DType::kFloat32, {6, 4});
  auto w2 = b.constant("w2", testing::random_tensor(ir::DType::kFloat32, {5, 6}, rng));
  auto gemm = b.node(ir::OpKind::Gemm, {a2, w2},
                     testing::attrs({{"transA", ir::Attribute::of_int(1)},
                                     {"transB", ir::Attribute::of_int(1)}}),
                     1, "gemm");
  auto q = b.input("q", ir::DType::kFloat16, {2, 3, 8, 16});
  auto k = b.input("k", ir::DType::kFloat16, {2, 3, 10, 16});
  auto v = b.input("v", ir::DType::kFloat16, {2, 3, 10, 32});
  auto att = b.node(ir::OpKind::Attention, {q, k, v}, {}, 1, "att");
  b.output(mm);
  b.output(gemm);
  b.output(att);
  ir::Graph g = b.build();
  CHECK(emit::kernel_arithmetic(g, g.nodes[0]).flops == 2 * (2 * 5 * 3) * 7);
  CHECK(emit::kernel_arithmetic(g, g.nodes[1]).flops == 2 * (4 * 5) * 6);  // Aᵀ is 4x6: K = 6
  const auto att_a = emit::kernel_arithmetic(g, g.nodes[2]);
  CHECK(att_a.flops == 2 * (2 * 3 * 8 * 10) * (16 + 32));
  CHECK(att_a.dtype == ir::DType::kFloat16);
  // Elementwise ops are not counted.
  testing::GraphBuilder e;
  auto in = e.input("x", ir::DType::kFloat32, {4, 4});
  e.output(e.node(ir::OpKind::Relu, {in}, {}, 1, "relu"));
  ir::Graph eg = e.build();
  CHECK(emit::kernel_arithmetic(eg, eg.nodes[0]).flops == 0);
}

TEST_CASE("contraction math: tensor cores, TF32 only when allowed", "[roofline]") {
  using target::Library;
  target::CudaTarget plain;
  CHECK(plain.contraction_math(ir::DType::kFloat16, Library::kCublasLt, false) == Math::kFp16Tc);
  CHECK(plain.contraction_math(ir::DType::kBFloat16, Library::kNone, false) == Math::kBf16Tc);
  CHECK(plain.contraction_math(ir::DType::kFloat32, Library::kCublasLt, false) == Math::kFp32);
  CHECK(plain.contraction_math(ir::DType::kFloat16, Library::kNone, true) == Math::kFp32);
  CHECK(plain.contraction_math(ir::DType::kFloat16, Library::kCudnn, true) == Math::kFp16Tc);
  target::CudaOptions o;
  o.gemm.allow_tf32 = o.conv.allow_tf32 = true;
  target::CudaTarget tf32(o);
  CHECK(tf32.contraction_math(ir::DType::kFloat32, Library::kCudnn, false) == Math::kTf32Tc);
  CHECK(tf32.contraction_math(ir::DType::kFloat32, Library::kNone, false) == Math::kFp32);
}

TEST_CASE("fusion report and engine carry the roofline model", "[roofline]") {
  testing::ConvSpec s;
  s.c = 16;
  s.k = 32;
  s.in = {20, 20};
  s.dtype = ir::DType::kFloat16;
  s.epilogue = {"bias", "relu"};
  ir::Graph g = testing::conv_graph(s);
  auto plan = emit::lower_for_gpu(g);
  REQUIRE(plan.ok());
  optimizer::PassContext ctx;
  driver::FusionReport r = driver::report_from_plan(g, *plan, ctx, 3);
  REQUIRE(r.rows.size() == 1);
  const driver::KernelRow& row = r.rows[0];
  const int64_t flops = 2 * (32 * 20 * 20) * (16 * 9);
  CHECK(row.flops == flops);
  CHECK(row.math == Math::kFp16Tc);  // cuDNN
  CHECK(r.gpu == Gpu::kH100);
  CHECK(row.roofline.us() == Approx(std::max(flops / 989.4e6, row.bytes_fused / 3350e3)));
  CHECK(r.roofline_us == Approx(row.roofline.us()));
  driver::apply_roofline(r, Gpu::kL4);  // 300 GB/s: memory-bound there
  CHECK(r.rows[0].roofline.us() == Approx(std::max(flops / 121e6, row.bytes_fused / 300e3)));
  const Json j = driver::report_json(r);
  CHECK(j["roofline"]["gpu"] == "l4");
  CHECK(j["kernel_list"][0]["flops"] == flops);
  CHECK(j["kernel_list"][0]["math"] == "fp16-tc");
  CHECK(j["kernel_list"][0]["roofline_us"].get<double>() == Approx(r.rows[0].roofline.us()));
  const std::string text = driver::report_text(r);
  CHECK(testing::contains(text, "roofline (NVIDIA L4: 300 GB/s HBM"));
  CHECK(testing::contains(text, "GFLOP"));

  // The launch carries the model into the engine and back.
  REQUIRE(plan->launches.size() == 1);
  CHECK(plan->launches[0].flops == flops);
  CHECK(plan->launches[0].hbm_bytes == row.bytes_fused);
  CHECK(plan->launches[0].math == Math::kFp16Tc);
  testing::TempDir cache;
  driver::BuildOptions opts;
  opts.archs = {"sm_90"};
  opts.compile.cache_dir = cache.path();
  auto engine = driver::build_engine(g, opts);
  REQUIRE(engine.ok());
  auto bytes = engine::serialize_engine(*engine);
  REQUIRE(bytes.ok());
  auto parsed = engine::parse_engine(*bytes);
  REQUIRE(parsed.ok());
  auto exe = runtime::executable_from_engine(*parsed, 90);
  REQUIRE(exe.ok());
  REQUIRE(exe->launches.size() == 1);
  CHECK(exe->launches[0].flops == static_cast<uint64_t>(flops));
  CHECK(exe->launches[0].hbm_bytes == static_cast<uint64_t>(row.bytes_fused));
  CHECK(exe->launches[0].math == "fp16-tc");
}

}  // namespace
}  // namespace graphc
