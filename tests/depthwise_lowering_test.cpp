// The generated depthwise/grouped direct conv (emit/cuda/cuda_conv_direct.cpp)
// and the target's choice of it over cuDNN (target/cuda/direct_conv_rules.h):
// every case of tests/depthwise_cases.h lowers to one direct kernel that
// NVRTC compiles for sm_80 and sm_90 (the emulator, ctest
// kernel_emulator_depthwise, checks their values); the cost model gives
// depthwise convs to the generated kernel in auto mode with the reason in the
// plan, keeps them channels-last, and leaves --conv cudnn / generated alone.
#include <algorithm>
#include <catch2/catch.hpp>

#include "emit/nvrtc/nvrtc_compiler.h"
#include "emit/plan/gpu_plan.h"
#include "ir/conv_geometry.h"
#include "optimizer/pass.h"
#include "target/cuda/cuda_target.h"
#include "target/cuda/depthwise_tile_rules.h"
#include "target/cuda/direct_conv_rules.h"
#include "tests/cuda_batch.h"
#include "tests/depthwise_cases.h"
#include "tests/test_util.h"

using namespace graphc;
using ir::DType;
using ir::OpKind;

namespace {

emit::LowerOptions conv_mode(target::ConvMode mode) {
  emit::LowerOptions o;
  o.conv.mode = mode;
  return o;
}

// ConvNeXt's depthwise block in the ONNX layout: y = Gelu(Conv7x7(x) + B),
// fp16, C channels at H x H.
ir::Graph convnext_dw(int64_t c, int64_t h, DType dt = DType::kFloat16,
                      int64_t channels_per_group = 1) {
  testing::GraphBuilder b;
  auto& rng = testing::test_rng();
  auto x = b.input("x", dt, {1, c, h, h});
  auto w = b.constant("w", testing::random_tensor(dt, {c, channels_per_group, 7, 7}, rng, -1, 1));
  auto bias = b.constant("b", testing::random_tensor(dt, {c}, rng, -1, 1));
  auto y = b.node(OpKind::Conv, {x, w, bias},
                  testing::attrs({{"group", ir::Attribute::of_int(c / channels_per_group)},
                                  {"pads", ir::Attribute::of_ints({3, 3, 3, 3})}}),
                  1, "/dw/Conv");
  b.output(b.node(OpKind::Gelu, {y}, {}, 1, "/act/Gelu"));
  return b.build();
}

// The graph after the default pipeline with the CUDA target of `o`.
ir::Graph optimized_for(ir::Graph g, const emit::LowerOptions& o) {
  optimizer::PassContext ctx;
  ctx.target = std::make_shared<target::CudaTarget>(o);
  REQUIRE(optimizer::run_passes(g, ctx).ok());
  return g;
}

const emit::KernelRecord& conv_record(const emit::GpuPlan& p) {
  for (const auto& k : p.kernels)
    if (k.kind == target::KernelKind::kConv) return k;
  FAIL("no conv kernel");
  return p.kernels.front();
}

int count_kind(const emit::GpuPlan& p, target::KernelKind kind) {
  int n = 0;
  for (const auto& l : p.launches) n += l.kind == kind ? 1 : 0;
  return n;
}

bool has_channels_last_conv(const ir::Graph& g) {
  bool found = false;
  auto visit = [&](const ir::Graph& gr, auto& self) -> void {
    for (const auto& n : gr.nodes) {
      if (n.dead) continue;
      if (n.op == OpKind::Conv && ir::is_channels_last(n.attrs)) found = true;
      if (n.body) self(*n.body, self);
    }
  };
  visit(g, visit);
  return found;
}

}  // namespace

TEST_CASE("depthwise cases lower to one direct kernel each and compile for sm_80 and sm_90",
          "[depthwise][emit]") {
  std::vector<std::string> sources;
  for (const auto& c : testing::depthwise_cases()) {
    INFO(c.label);
    auto plan = emit::lower_for_gpu(c.build(), conv_mode(target::ConvMode::kGenerated));
    if (!plan.ok()) FAIL(plan.status().message());
    // The epilogue (bias, activation, residual) runs in the conv kernel.
    REQUIRE(plan->launches.size() == 1);
    const std::string& entry = plan->launches[0].entry;
    const bool nhwc = c.label.find("nhwc") != std::string::npos;
    CHECK(entry.rfind(nhwc ? "dwconv_nhwc_" : "dwconv_tile_", 0) == 0);
    // Kernels are named by their text's hash: two cases may lower to one kernel.
    for (auto& s : plan->sources)
      if (std::find(sources.begin(), sources.end(), s) == sources.end()) sources.push_back(s);
  }
  // One vector load per 4 channels where the input is a plain parameter:
  // the tiled kernel (the first case) and the untiled one.
  for (const auto& c : testing::depthwise_cases()) {
    const bool first = &c == &testing::depthwise_cases().front();
    if (!first && c.label != "depthwise nhwc f32 3x3 bias untiled") continue;
    auto plain = emit::lower_for_gpu(c.build(), conv_mode(target::ConvMode::kGenerated));
    REQUIRE(plain.ok());
    CHECK(plain->launches[0].entry.rfind(first ? "dwconv_nhwc_tiled_" : "dwconv_nhwc_", 0) == 0);
    CHECK(plain->sources[0].find(first ? "reinterpret_cast<const dwt_ld_vec*>"
                                       : "reinterpret_cast<const dw_vec_t*>") != std::string::npos);
  }
  auto m = emit::compile_cuda(testing::combined_kernel_source(sources), "depthwise_cases",
                              {"sm_80", "sm_90"});
  if (!m.ok()) FAIL(m.status().message());
  CHECK(m->binaries.size() == 2);
}

TEST_CASE("auto mode gives ConvNeXt's depthwise conv to the generated kernel, channels-last",
          "[depthwise]") {
  const emit::LowerOptions autom = conv_mode(target::ConvMode::kAuto);
  ir::Graph g = optimized_for(convnext_dw(96, 56), autom);
  CHECK(has_channels_last_conv(g));
  auto plan = emit::lower_for_gpu(g, autom);
  REQUIRE(plan.ok());
  const auto& r = conv_record(*plan);
  CHECK(r.lowering.library == target::Library::kNone);
  INFO(r.lowering.reason);
  CHECK(r.lowering.reason.rfind("generated depthwise (channels-last, 7x7): ", 0) == 0);
  CHECK(r.lowering.reason.find("cuDNN modelled on h100") != std::string::npos);
  // Batch 1: 4x8-pixel tiles of 32 channels give 294 blocks for 132 SMs.
  CHECK(r.lowering.reason.find("; tiled: 4x8 px x 32 ch per block (128 threads, 2 px x 4 ch "
                               "each), 294 blocks, 24.4 KiB shared") != std::string::npos);
  // Conv + bias + Gelu is one kernel: no cuDNN call with a split epilogue.
  CHECK(count_kind(*plan, target::KernelKind::kConv) == 1);
  CHECK(plan->launches.size() == 3);  // to NHWC, the conv, back to NCHW (the model's layout)
  // At batch 1 the kernel takes fewer channels and pixels per thread than
  // the emulator's small cases (which keep 4 x 4): that variant compiles too.
  auto m = emit::compile_cuda(testing::combined_kernel_source(plan->sources), "convnext_dw",
                              {"sm_90"});
  if (!m.ok()) FAIL(m.status().message());

  SECTION("--conv cudnn keeps cuDNN (and splits off the Gelu)") {
    const emit::LowerOptions cudnn = conv_mode(target::ConvMode::kCudnn);
    auto p = emit::lower_for_gpu(optimized_for(convnext_dw(96, 56), cudnn), cudnn);
    REQUIRE(p.ok());
    CHECK(conv_record(*p).lowering.library == target::Library::kCudnn);
  }
  SECTION("--conv generated keeps the conv channels-first") {
    const emit::LowerOptions gen = conv_mode(target::ConvMode::kGenerated);
    ir::Graph gg = optimized_for(convnext_dw(96, 56), gen);
    CHECK_FALSE(has_channels_last_conv(gg));
    auto p = emit::lower_for_gpu(gg, gen);
    REQUIRE(p.ok());
    CHECK(conv_record(*p).lowering.reason == "generated (--conv generated)");
    CHECK(p->launches.size() == 1);
  }
  SECTION("fp32 stays channels-first and still goes to the generated kernel") {
    auto p = emit::lower_for_gpu(optimized_for(convnext_dw(96, 56, DType::kFloat32), autom), autom);
    REQUIRE(p.ok());
    CHECK(conv_record(*p).lowering.reason.rfind("generated depthwise (NCHW, 7x7): ", 0) == 0);
    CHECK(p->launches.size() == 1);
  }
  SECTION("a grouped conv with 4 channels per group stays with cuDNN in auto mode") {
    auto p = emit::lower_for_gpu(
        optimized_for(convnext_dw(96, 56, DType::kFloat16, 4), autom), autom);
    REQUIRE(p.ok());
    CHECK(conv_record(*p).lowering.library == target::Library::kCudnn);
  }
}

namespace {

// ConvNeXt-T's first depthwise conv: 7x7, 96 channels at 56x56, batch 1,
// channels-last.
ir::ConvGeometry convnext_t_stage1() {
  ir::ConvGeometry g;
  g.batch = 1;
  g.in_channels = g.out_channels = g.group = 96;
  g.in_spatial = g.out_spatial = {56, 56};
  g.kernel = {7, 7};
  g.strides = g.dilations = {1, 1};
  g.pads_begin = g.pads_end = {3, 3};
  g.channels_last = true;
  return g;
}

}  // namespace

TEST_CASE("the depthwise cost model", "[depthwise]") {
  // ConvNeXt-T's first stage, fp16 on an H100: x and y are 96x56x56 fp16
  // (602 KB each): a memory floor near 0.36 us; 49 FMAs per output at half
  // the fp32 peak (67 TFLOP/s) take longer, 0.88 us.
  ir::ConvGeometry g = convnext_t_stage1();
  CHECK(target::direct_conv_takes(g));
  const auto c = target::depthwise_cost(g, DType::kFloat16, target::Gpu::kH100, false, false);
  CHECK(c.generated_wins());
  CHECK(c.generated_us == Approx(2.0 * 301056 * 49 / (0.5 * 67e6)).epsilon(0.05));
  CHECK(c.cudnn_us == Approx(25 * 1213632.0 / 3.35e6).epsilon(0.05));
  // A split epilogue adds a pass over y to cuDNN's side.
  CHECK(target::depthwise_cost(g, DType::kFloat16, target::Gpu::kH100, false, true).cudnn_us >
        c.cudnn_us);
  // Beyond the kernel's limits: ConvTranspose, 3-D, 16 channels per group.
  ir::ConvGeometry t = g;
  t.transpose = true;
  CHECK_FALSE(target::direct_conv_takes(t));
  ir::ConvGeometry wide = g;
  wide.group = 6;
  CHECK(target::direct_conv_refusal(wide) ==
        "16 input channels per group (direct kernel: up to 8)");
}

TEST_CASE("the tiled depthwise kernel's tile and when it is chosen", "[depthwise]") {
  ir::ConvGeometry g = convnext_t_stage1();
  const ir::AttributeMap none;
  auto tile = target::choose_depthwise_tile(g, DType::kFloat16, none);
  REQUIRE(tile.tile);
  CHECK(tile.tile->th == 4);
  CHECK(tile.tile->tw == 8);
  CHECK(tile.tile->lv == 8);  // 16-byte fp16 loads
  // Batch 32 fills the GPU with the largest tile.
  ir::ConvGeometry b32 = g;
  b32.batch = 32;
  tile = target::choose_depthwise_tile(b32, DType::kFloat16, none);
  REQUIRE(tile.tile);
  CHECK(tile.tile->th == 8);
  CHECK(tile.tile->p == 4);
  CHECK(tile.tile->blocks == 32 * 49 * 3);
  // ConvNeXt-S's last stage at batch 1: 1024 channels at 7x7 need small
  // tiles of 16 channels for enough blocks.
  ir::ConvGeometry s4 = g;
  s4.in_channels = s4.out_channels = s4.group = 1024;
  s4.in_spatial = s4.out_spatial = {7, 7};
  tile = target::choose_depthwise_tile(s4, DType::kFloat16, none);
  REQUIRE(tile.tile);
  CHECK(tile.tile->blocks >= 264);
  CHECK(tile.tile->cb() == 16);
  // Without the attribute 3x3 and strided convs stay untiled (staging
  // measured slower there); tile 1 tiles them anyway with the rules' tile.
  ir::ConvGeometry k3 = g;
  k3.kernel = {3, 3};
  k3.pads_begin = k3.pads_end = {1, 1};
  tile = target::choose_depthwise_tile(k3, DType::kFloat16, none);
  CHECK_FALSE(tile.tile);
  CHECK(tile.reason == "untiled: 3x3 stride 1x1 (tiles pay from 5x5 at stride 1)");
  ir::ConvGeometry s2 = g;
  s2.strides = {2, 2};
  s2.out_spatial = {28, 28};
  CHECK_FALSE(target::choose_depthwise_tile(s2, DType::kFloat16, none).tile);
  ir::AttributeMap forced;
  forced.set(target::kDepthwiseTileAttr, ir::Attribute::of_int(1));
  CHECK(target::choose_depthwise_tile(k3, DType::kFloat16, forced).tile);
  CHECK(target::choose_depthwise_tile(s2, DType::kFloat16, forced).tile);
  // The attribute forces the untiled kernel or a candidate.
  ir::AttributeMap off;
  off.set(target::kDepthwiseTileAttr, ir::Attribute::of_int(0));
  tile = target::choose_depthwise_tile(g, DType::kFloat16, off);
  CHECK_FALSE(tile.tile);
  CHECK(tile.reason == "untiled (_depthwise_tile = 0)");
  ir::AttributeMap first;
  first.set(target::kDepthwiseTileAttr, ir::Attribute::of_int(2));
  tile = target::choose_depthwise_tile(g, DType::kFloat16, first);
  REQUIRE(tile.tile);
  CHECK(tile.tile->th == 8);
  // Not taken: NCHW, a channel multiplier, float64, a halo too large.
  ir::ConvGeometry nchw = g;
  nchw.channels_last = false;
  const std::string why = target::choose_depthwise_tile(nchw, DType::kFloat16, none).reason;
  CHECK(why.rfind("untiled: NCHW", 0) == 0);
  ir::ConvGeometry mult = g;
  mult.out_channels = 192;
  CHECK_FALSE(target::choose_depthwise_tile(mult, DType::kFloat16, none).tile);
  CHECK_FALSE(target::choose_depthwise_tile(g, DType::kFloat64, none).tile);
  ir::ConvGeometry huge = g;
  huge.kernel = {31, 31};
  huge.pads_begin = huge.pads_end = {15, 15};
  tile = target::choose_depthwise_tile(huge, DType::kFloat32, none);
  CHECK_FALSE(tile.tile);
  CHECK(tile.reason.find("does not fit") != std::string::npos);
}

TEST_CASE(
    "with --conv generated the conv reason names the depthwise variant of a channels-last conv",
    "[depthwise]") {
  for (const auto& c : testing::depthwise_cases()) {
    const bool tiled = c.label == "depthwise nhwc f16 7x7 bias tiled 8x8";
    if (!tiled && c.label != "depthwise nhwc f16 5x5 stride 2 untiled") continue;
    INFO(c.label);
    const emit::LowerOptions gen = conv_mode(target::ConvMode::kGenerated);
    auto p = emit::lower_for_gpu(c.build(), gen);
    REQUIRE(p.ok());
    const std::string& why = conv_record(*p).lowering.reason;
    INFO(why);
    CHECK(why.rfind(tiled ? "generated (--conv generated); tiled: 8x8 px x 20 ch per block"
                          : "generated (--conv generated); untiled (_depthwise_tile = 0)",
                    0) == 0);
  }
}
