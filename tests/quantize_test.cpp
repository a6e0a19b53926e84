// Narrow element types and the quantization ops: float8/float4 conversions
// against hand-checked values and exhaustively against their own decoding,
// QuantizeLinear/DequantizeLinear (per tensor, per axis, blocked) and the
// integer contractions against values computed here, and the expand-quantize
// pass against the reference kernels on fresh random inputs (exact match:
// the rewrite does the same float32 arithmetic).
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "ir/verifier.h"
#include "optimizer/passes.h"
#include "reference/executor.h"
#include "support/minifloat.h"
#include "tests/reference_run.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::attrs;
using graphc::testing::GraphBuilder;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

double round_trip(MiniFloat f, double v, bool saturate = true) {
  return minifloat_to_double(f, double_to_minifloat(f, v, saturate));
}

}  // namespace

TEST_CASE("float8 and float4 conversions round to nearest even and saturate as ONNX does",
          "[quantize][dtype]") {
  // Largest finite values.
  CHECK(minifloat_max(MiniFloat::kE4M3FN) == 448);
  CHECK(minifloat_max(MiniFloat::kE4M3FNUZ) == 240);
  CHECK(minifloat_max(MiniFloat::kE5M2) == 57344);
  CHECK(minifloat_max(MiniFloat::kE5M2FNUZ) == 57344);
  CHECK(minifloat_max(MiniFloat::kE2M1) == 6);
  // Values of ONNX's test_cast_FLOAT_to_FLOAT8E4M3FN.
  CHECK(round_trip(MiniFloat::kE4M3FN, 0.47892547) == 0.46875);
  CHECK(round_trip(MiniFloat::kE4M3FN, 0.72290379) == 0.75);
  CHECK(round_trip(MiniFloat::kE4M3FN, 1e6) == 448);
  CHECK(round_trip(MiniFloat::kE4M3FN, -kInf) == -448);
  CHECK(round_trip(MiniFloat::kE4M3FN, 1e-7) == 0);
  CHECK(std::isnan(round_trip(MiniFloat::kE4M3FN, kNaN)));
  // Without saturation: e4m3fn overflows to NaN (no inf), e5m2 to inf; 464 is
  // the tie between 448 (even) and the overflow step 480.
  CHECK(round_trip(MiniFloat::kE4M3FN, 464, false) == 448);
  CHECK(std::isnan(round_trip(MiniFloat::kE4M3FN, 465, false)));
  CHECK(round_trip(MiniFloat::kE5M2, 1e6, false) == kInf);
  CHECK(std::isnan(round_trip(MiniFloat::kE5M2FNUZ, 1e6, false)));
  // FNUZ has no negative zero: -tiny rounds to +0 (0x00), and 0x80 is NaN.
  CHECK(double_to_minifloat(MiniFloat::kE4M3FNUZ, -1e-9, true) == 0);
  CHECK(std::isnan(minifloat_to_double(MiniFloat::kE4M3FNUZ, 0x80)));
  // float4 e2m1 (values of test_cast_FLOAT_to_FLOAT4E2M1): ties to even.
  CHECK(round_trip(MiniFloat::kE2M1, 0.25) == 0);
  CHECK(round_trip(MiniFloat::kE2M1, 1.05) == 1);
  CHECK(round_trip(MiniFloat::kE2M1, -3.5) == -4);
  CHECK(round_trip(MiniFloat::kE2M1, 9) == 6);
  // Every finite code decodes and encodes back to itself (the format is exact).
  for (MiniFloat f : {MiniFloat::kE4M3FN, MiniFloat::kE4M3FNUZ, MiniFloat::kE5M2,
                      MiniFloat::kE5M2FNUZ, MiniFloat::kE2M1}) {
    const int codes = f == MiniFloat::kE2M1 ? 16 : 256;
    for (int c = 0; c < codes; ++c) {
      double v = minifloat_to_double(f, static_cast<uint8_t>(c));
      if (std::isnan(v) || std::isinf(v)) continue;
      if (v == 0 && c != 0) continue;  // -0 (encodes as -0 too, except FNUZ)
      INFO("format " << static_cast<int>(f) << " code " << c);
      CHECK(double_to_minifloat(f, v, false) == c);
    }
  }
}

TEST_CASE("int4 and uint4 tensors wrap like ml_dtypes and cast through float", "[quantize][dtype]") {
  Tensor t(DType::kInt4, {4});
  t.set_i64(0, 7);
  t.set_i64(1, 8);    // wraps to -8
  t.set_i64(2, -9);   // wraps to 7
  t.set_i64(3, -3);
  CHECK(t.to_i64_vector() == std::vector<int64_t>{7, -8, 7, -3});
  Tensor u = t.cast_to(DType::kUInt4);
  CHECK(u.to_i64_vector() == std::vector<int64_t>{7, 8, 7, 13});
  Tensor f(DType::kFloat8E5M2, {2});
  f.set_f64(0, 1.3);   // 1.25 (2 mantissa bits)
  f.set_f64(1, -1e9);  // saturates
  CHECK(f.get_f64(0) == 1.25);
  CHECK(f.get_f64(1) == -57344);
}

TEST_CASE("QuantizeLinear and DequantizeLinear: per tensor, per axis and blocked",
          "[quantize]") {
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 4});
  // Per axis 1: scales per column; zero points int8.
  auto s = b.constant("s", Tensor::from_f32({0.5f, 1.0f, 2.0f, 4.0f}, {4}));
  Tensor zp(DType::kInt8, {4});
  for (int i = 0; i < 4; ++i) zp.set_i64(i, i - 1);
  auto z = b.constant("z", zp);
  auto q = b.node(OpKind::QuantizeLinear, {x, s, z}, attrs({{"axis", Attribute::of_int(1)}}));
  auto dq = b.node(OpKind::DequantizeLinear, {q, s, z}, attrs({{"axis", Attribute::of_int(1)}}));
  // Blocked along axis 1 with block 2: scale [2, 2].
  auto sb = b.constant("sb", Tensor::from_f32({0.25f, 1.0f, 0.5f, 3.0f}, {2, 2}));
  auto qb = b.node(OpKind::QuantizeLinear, {x, sb},
                   attrs({{"axis", Attribute::of_int(1)}, {"block_size", Attribute::of_int(2)}}));
  b.output(q);
  b.output(dq);
  b.output(qb);
  Graph g = b.build();
  Tensor xin = Tensor::from_f32({1.25f, -3.5f, 2.9f, 1000.f, -0.75f, 0.5f, -9.f, -600.f}, {2, 4});
  auto out = testing::run_reference(g, {{"x", xin}});
  // round(x / s) + zp, half to even, saturated to int8.
  CHECK(out.at(g.value(q).name).to_i64_vector() ==
        std::vector<int64_t>{2 - 1, -4 + 0, 1 + 1, 127, -2 - 1, 0 + 0, -4 + 1, -128});
  // (q - zp) * s.
  CHECK(out.at(g.value(dq).name).to_f64_vector() ==
        std::vector<double>{1.0, -4.0, 2.0, 500.0, -1.0, 0.0, -8.0, -520.0});
  // uint8 default output; blocks: columns {0,1} use sb[r][0], {2,3} sb[r][1].
  CHECK(out.at(g.value(qb).name).dtype() == DType::kUInt8);
  CHECK(out.at(g.value(qb).name).to_i64_vector() ==
        std::vector<int64_t>{5, 0, 3, 255, 0, 1, 0, 0});
}

TEST_CASE("QuantizeLinear refuses a scale that does not match the axis", "[quantize]") {
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 3});
  auto s = b.constant("s", Tensor::from_f32({1.f, 2.f}, {2}));
  b.output(b.node(OpKind::QuantizeLinear, {x, s}, attrs({{"axis", Attribute::of_int(1)}})));
  Status st = ir::infer_shapes(b.graph());
  REQUIRE_FALSE(st.ok());
  CHECK_THAT(st.message(), Catch::Contains("does not match axis 1"));
}

TEST_CASE("MatMulInteger, QLinearMatMul and ConvInteger against sums computed here",
          "[quantize]") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> u8(0, 255);
  GraphBuilder b;
  auto a = b.input("a", DType::kUInt8, {3, 5});
  auto w = b.input("w", DType::kUInt8, {5, 2});
  Tensor azp(DType::kUInt8, {}), bzp(DType::kUInt8, {2});
  azp.set_i64(0, 12);
  bzp.set_i64(0, 130);
  bzp.set_i64(1, 3);
  auto za = b.constant("za", azp), zb = b.constant("zb", bzp);
  auto mmi = b.node(OpKind::MatMulInteger, {a, w, za, zb});
  Tensor sa = Tensor::from_f32({0.02f}, {}), sw = Tensor::from_f32({0.01f, 0.03f}, {2}),
         sy = Tensor::from_f32({0.05f}, {});
  Tensor yzp(DType::kUInt8, {});
  yzp.set_i64(0, 100);
  auto qmm = b.node(OpKind::QLinearMatMul, {a, b.constant("sa", sa), za, w, b.constant("sw", sw), zb,
                                            b.constant("sy", sy), b.constant("yzp", yzp)});
  b.output(mmi);
  b.output(qmm);
  Graph g = b.build();
  Tensor at(DType::kUInt8, {3, 5}), wt(DType::kUInt8, {5, 2});
  for (int i = 0; i < 15; ++i) at.set_i64(i, u8(rng));
  for (int i = 0; i < 10; ++i) wt.set_i64(i, u8(rng));
  auto out = testing::run_reference(g, {{"a", at}, {"w", wt}});
  const Tensor& acc = out.at(g.value(mmi).name);
  const Tensor& y = out.at(g.value(qmm).name);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) {
      int64_t sum = 0;
      for (int k = 0; k < 5; ++k)
        sum += (at.get_i64(i * 5 + k) - 12) * (wt.get_i64(k * 2 + j) - bzp.get_i64(j));
      CHECK(acc.get_i64(i * 2 + j) == sum);
      float m = static_cast<float>(static_cast<float>(0.02f * sw.get_f64(j)) / 0.05f);
      double r = std::nearbyint(static_cast<double>(sum) * m + 100);
      CHECK(y.get_i64(i * 2 + j) == static_cast<int64_t>(std::min(255.0, std::max(0.0, r))));
    }

  // ConvInteger: a 1x1 kernel is a per-pixel dot product over channels.
  GraphBuilder c;
  auto x = c.input("x", DType::kInt8, {1, 3, 2, 2});
  auto k = c.input("k", DType::kInt8, {2, 3, 1, 1});
  auto ci = c.node(OpKind::ConvInteger, {x, k});
  c.output(ci);
  Graph gc = c.build();
  std::uniform_int_distribution<int> s8(-128, 127);
  Tensor xt(DType::kInt8, {1, 3, 2, 2}), kt(DType::kInt8, {2, 3, 1, 1});
  for (int i = 0; i < 12; ++i) xt.set_i64(i, s8(rng));
  for (int i = 0; i < 6; ++i) kt.set_i64(i, s8(rng));
  auto co = testing::run_reference(gc, {{"x", xt}, {"k", kt}});
  const Tensor& cy = co.at(gc.value(ci).name);
  REQUIRE(cy.dtype() == DType::kInt32);
  for (int m = 0; m < 2; ++m)
    for (int p = 0; p < 4; ++p) {
      int64_t sum = 0;
      for (int ch = 0; ch < 3; ++ch) sum += xt.get_i64(ch * 4 + p) * kt.get_i64(m * 3 + ch);
      CHECK(cy.get_i64(m * 4 + p) == sum);
    }
}

TEST_CASE("expand-quantize rewrites Q/DQ into elementwise ops with identical results",
          "[quantize][optimizer]") {
  for (int mode = 0; mode < 3; ++mode) {  // per tensor, per axis, blocked
    INFO("mode " << mode);
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {2, 3, 4});
    Tensor s, zp;
    AttributeMap a;
    if (mode == 0) {
      s = Tensor::from_f32({0.037f}, {});
      zp = Tensor(DType::kUInt8, {});
      zp.set_i64(0, 128);
    } else if (mode == 1) {
      s = Tensor::from_f32({0.01f, 0.05f, 0.2f}, {3});
      zp = Tensor(DType::kUInt8, {3});
      for (int i = 0; i < 3; ++i) zp.set_i64(i, 100 + 20 * i);
      a = attrs({{"axis", Attribute::of_int(1)}});
    } else {
      s = Tensor::from_f32({0.01f, 0.05f, 0.2f, 0.03f, 0.07f, 0.11f, 0.4f, 0.02f, 0.09f, 0.3f,
                            0.015f, 0.06f},
                           {2, 3, 2});
      zp = Tensor(DType::kUInt8, {2, 3, 2});
      for (int i = 0; i < 12; ++i) zp.set_i64(i, 90 + 7 * i);
      a = attrs({{"axis", Attribute::of_int(2)}, {"block_size", Attribute::of_int(2)}});
    }
    auto sv = b.constant("s", s), zv = b.constant("z", zp);
    auto q = b.node(OpKind::QuantizeLinear, {x, sv, zv}, a);
    auto dq = b.node(OpKind::DequantizeLinear, {q, sv, zv}, a);
    b.output(q);
    b.output(dq);
    Graph g = b.build();
    Graph rewritten = g;
    optimizer::PassContext ctx;
    REQUIRE(optimizer::expand_quantize(rewritten, ctx).ok());
    rewritten.compact();
    REQUIRE(verify(rewritten, {.require_shapes = true}).ok());
    for (const auto& n : rewritten.nodes) {
      CHECK(n.op != OpKind::QuantizeLinear);
      CHECK(n.op != OpKind::DequantizeLinear);
    }
    Tensor xin = testing::random_tensor(DType::kFloat32, {2, 3, 4}, testing::test_rng(), -3, 3);
    auto want = testing::run_reference(g, {{"x", xin}});
    auto got = testing::run_reference(rewritten, {{"x", xin}});
    for (const auto& [name, t] : want) CHECK(t.same_bytes(got.at(name)));
  }
}
