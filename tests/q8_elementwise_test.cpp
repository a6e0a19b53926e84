// The source of 8-bit elementwise kernels (tests/q8_elementwise_cases.h): 16
// elements per thread in 16-byte accesses, float8 and int8 conversions of a
// float without double arithmetic, sm_89's cvt in the sm_90 build and not in
// the sm_80 one. Their numbers: `graphc_kernel_emulator q8` (ctest
// kernel_emulator_q8_elementwise) and tests/gpu/q8_elementwise_gpu_test.cpp.
#include <catch2/catch.hpp>

#include "emit/cuda/cuda_elementwise.h"
#include "emit/nvrtc/nvrtc_compiler.h"
#include "optimizer/pass.h"
#include "tests/cuda_pass_context.h"
#include "tests/q8_elementwise_cases.h"

using namespace graphc;

namespace {

const testing::Q8Case& q8_case(const std::string& label) {
  static const std::vector<testing::Q8Case> cases = testing::q8_cases();
  for (const auto& c : cases)
    if (c.label == label) return c;
  FAIL("no q8 case " << label);
  return cases.front();
}

// The elementwise kernels the default pipeline makes of the case.
std::vector<emit::GeneratedKernel> q8_kernels(const std::string& label) {
  ir::Graph g = q8_case(label).graph;
  optimizer::PassContext ctx = testing::cuda_pass_context();
  REQUIRE(optimizer::run_passes(g, ctx).ok());
  std::vector<emit::GeneratedKernel> kernels;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    if (n.dead || (n.op != ir::OpKind::FusedGroup && !ir::is_elementwise(n.op))) continue;
    if (n.op == ir::OpKind::FusedGroup && n.fusion != ir::FusionKind::kElementwise) continue;
    auto k = emit::generate_elementwise_kernel(g, static_cast<ir::NodeId>(i));
    if (!k.ok()) FAIL(k.status().message());
    kernels.push_back(*k);
  }
  REQUIRE(!kernels.empty());
  return kernels;
}

// The case's one kernel.
emit::GeneratedKernel q8_kernel(const std::string& label) {
  auto k = q8_kernels(label);
  REQUIRE(k.size() == 1);
  return k[0];
}

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("8-bit elementwise kernels move 16 elements per thread in 16-byte accesses",
          "[emit][quantize][q8]") {
  // float16 in (two 16-byte loads), e4m3fn out (one 16-byte store).
  auto k = q8_kernel("float8e4m3fn quantize float16 2x5x768");
  INFO(k.source);
  CHECK(k.vector_width == 16);
  CHECK(has(k.source, "uint4 rin0[2];"));
  CHECK(has(k.source, "reinterpret_cast<const uint4*>(in0)[i * 2 + q]"));
  CHECK(has(k.source, "reinterpret_cast<uint4*>(out0)[i] = rout0;"));
  // An int32 accumulator in (four loads), int8 out.
  auto e = q8_kernel("int32 dequantize, int8 requantize 4x64");
  CHECK(e.vector_width == 16);
  CHECK(has(e.source, "uint4 rin0[4];"));
  // float32 out beside an 8-bit one: four 16-byte stores.
  auto d = q8_kernel("e4m3fn quantize, dequantize, relu 4x64");
  CHECK(d.vector_width == 16);
  CHECK(has(d.source, "uint4 rout1[4];"));
  CHECK(has(d.source, "reinterpret_cast<uint4*>(out1)[i * 4 + q] = rout1[q];"));
  // A row of 33 with a broadcast scale: no vector; 60 elements: 4.
  CHECK(q8_kernel("int8 quantize per-axis dim 1 5x7x33").vector_width == 1);
  for (const auto& c : q8_kernels("float8e4m3fn cast 3x20")) CHECK(c.vector_width == 4);
}

TEST_CASE("8-bit conversions of a float use no double arithmetic, and sm_90 the float8 cvt",
          "[emit][quantize][q8][fp8][int8]") {
  struct Want {
    std::string label, helper;
    bool cvt;  // sm_89+'s e4m3/e5m2 conversion instruction in the sm_90 PTX
  };
  for (const Want& w : {Want{"float8e4m3fn quantize float16 2x5x768", "g_nw_encode_f<4, 3, 7, 0>(", true},
                        Want{"float8e5m2 quantize float32 4x8x48", "g_nw_encode_f<5, 2, 15, 2>(", true},
                        Want{"float8 fnuz casts 2x32", "g_nw_encode_f<4, 3, 8, 1>(", false},
                        Want{"int8 quantize per-axis last dim 4x3x48", "g_b8_f2i8(", false},
                        Want{"uint8 cast from float32 2x16", "g_b8_f2u8(", false}}) {
    INFO(w.label);
    std::string text;
    for (const auto& k : q8_kernels(w.label)) {
      text += k.source;
      CHECK(!has(k.source, "(double)"));
      auto m = emit::compile_cuda(k.source, k.name, {"sm_80", "sm_90"});
      if (!m.ok()) FAIL(m.status().message());
      REQUIRE(m->binaries.size() == 2);
      for (const auto& bin : m->binaries) {
        INFO(bin.arch);
        CHECK(!has(bin.ptx, ".f64"));
        CHECK(has(bin.ptx, "cvt.rn.satfinite.e") == (w.cvt && bin.arch == "sm_90"));
      }
    }
    CHECK(has(text, w.helper));
  }
}

TEST_CASE("kernels without an 8-bit buffer keep their vector width and helpers",
          "[emit][quantize][q8]") {
  // A float16 -> float32 kernel: 4 per thread, as before 8-bit kernels moved 16.
  testing::GraphBuilder b;
  auto x = b.input("x", ir::DType::kFloat16, {4, 64});
  b.output(b.node(ir::OpKind::Cast, {x},
                  testing::attrs({{"to", ir::Attribute::of_int(static_cast<int64_t>(ir::DType::kFloat32))}})));
  ir::Graph g = b.build();
  auto k = emit::generate_elementwise_kernel(g, 0);
  REQUIRE(k.ok());
  CHECK(k->vector_width == 4);
  CHECK(!has(k->source, "g_b8_"));
  CHECK(!has(k->source, "g_nw_"));
}
