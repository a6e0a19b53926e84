// 8-bit (int8, uint8, float8) elementwise kernels, shared by the kernel
// emulator (`graphc_kernel_emulator q8`) and the GPU test
// (tests/gpu/q8_elementwise_gpu_test.cpp): QuantizeLinear, Cast and
// DequantizeLinear to and from int8, uint8 and float8, and Q -> DQ chains,
// each of which the default pipeline makes one fused elementwise kernel that
// moves 16 elements per thread where the shapes allow (odd sizes and rows fall
// back to narrower vectors or none). The inputs hold the conversions' edge
// values (rounding ties, the saturation bounds and just past them, NaN, +-inf,
// -0, float and float8 subnormals, out-of-int32 values) among random ones, and
// every output must equal the reference executor's on the graph as built bit
// for bit (float outputs: float32 rounding).
#pragma once

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "support/minifloat.h"
#include "tests/test_util.h"

namespace graphc::testing {

struct Q8Case {
  std::string label;
  ir::Graph graph;
  int64_t vector_width;  // the widest vector of the case's elementwise kernels
  double scale;          // float inputs' edge values are these multiples of it
};

namespace q8 {

using ir::Attribute;
using ir::DType;
using ir::OpKind;
using ir::Tensor;

inline Tensor scalar(DType t, double v) {
  Tensor s(t, {});
  s.set_f64(0, v);
  return s;
}

// QuantizeLinear(x, scale, zero point of `q`) [saturate attribute].
inline ir::ValueId quantize(GraphBuilder& b, ir::ValueId x, const Tensor& scale, DType q,
                            const std::string& tag, int saturate = 1, int64_t axis = 1) {
  Tensor zp(q, scale.shape());
  if (!ir::is_narrow_float(q))
    for (int64_t i = 0; i < zp.numel(); ++i) zp.set_i64(i, q == DType::kUInt8 ? 100 + i % 50 : i % 9 - 4);
  ir::AttributeMap a = attrs({{"axis", Attribute::of_int(axis)}});
  if (saturate != 1) a.set("saturate", Attribute::of_int(saturate));
  return b.node(OpKind::QuantizeLinear, {x, b.constant("s" + tag, scale), b.constant("z" + tag, zp)},
                a);
}

inline ir::ValueId dequantize(GraphBuilder& b, ir::ValueId x, const Tensor& scale, DType q,
                              const std::string& tag, int64_t axis = 1) {
  Tensor zp(q, scale.shape());
  if (q == DType::kInt8 || q == DType::kUInt8)
    for (int64_t i = 0; i < zp.numel(); ++i) zp.set_i64(i, q == DType::kUInt8 ? 100 + i % 50 : i % 9 - 4);
  std::vector<ir::ValueId> in = {x, b.constant("ds" + tag, scale)};
  if (q != DType::kInt32) in.push_back(b.constant("dz" + tag, zp));
  return b.node(OpKind::DequantizeLinear, in, attrs({{"axis", Attribute::of_int(axis)}}));
}

inline ir::ValueId cast(GraphBuilder& b, ir::ValueId x, DType to, int saturate = 1) {
  ir::AttributeMap a = attrs({{"to", Attribute::of_int(static_cast<int64_t>(to))}});
  if (saturate != 1) a.set("saturate", Attribute::of_int(saturate));
  return b.node(OpKind::Cast, {x}, a);
}

inline Tensor per_axis(int64_t n, std::mt19937& rng) {
  Tensor s(DType::kFloat32, {n});
  std::uniform_real_distribution<double> d(0.01, 0.05);
  for (int64_t i = 0; i < n; ++i) s.set_f64(i, d(rng));
  return s;
}

}  // namespace q8

inline std::vector<Q8Case> q8_cases() {
  using namespace q8;
  std::vector<Q8Case> cases;
  std::mt19937 rng(23);
  const double p2 = 1.0 / 16;  // a power of two: x / scale keeps the edge values exactly
  auto add = [&](std::string label, GraphBuilder& b, int64_t width, double scale) {
    cases.push_back({std::move(label), b.build(), width, scale});
  };
  for (DType f8 : {DType::kFloat8E4M3FN, DType::kFloat8E5M2}) {
    const std::string n(ir::dtype_name(f8));
    {  // float32 in, 4 x 16 bytes per vector
      GraphBuilder b;
      b.output(quantize(b, b.input("x", DType::kFloat32, {4, 8, 48}), scalar(DType::kFloat32, p2), f8, "a"));
      add(n + " quantize float32 4x8x48", b, 16, p2);
    }
    {  // float16 through a Cast (an fp16 engine's quantize), 2 x 16 bytes
      GraphBuilder b;
      auto x = cast(b, b.input("x", DType::kFloat16, {2, 5, 768}), DType::kFloat32);
      b.output(quantize(b, x, scalar(DType::kFloat32, 0.0231), f8, "a"));
      add(n + " quantize float16 2x5x768", b, 16, 0.0231);
    }
    {  // saturate=0: overflow gives NaN (e4m3fn) or inf (e5m2); 3x37 is odd: scalar code
      GraphBuilder b;
      b.output(quantize(b, b.input("x", DType::kFloat32, {3, 37}), scalar(DType::kFloat32, p2), f8, "a", 0));
      add(n + " quantize saturate=0 3x37", b, 1, p2);
    }
    {  // Cast, both saturations, 60 elements: 4 per vector
      GraphBuilder b;
      auto x = b.input("x", DType::kFloat32, {3, 20});
      b.output(cast(b, x, f8, 1));
      b.output(cast(b, x, f8, 0));
      add(n + " cast 3x20", b, 4, 1.0);
    }
  }
  {  // the software conversions (no hardware e4m3fnuz / e5m2fnuz)
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {2, 32});
    b.output(cast(b, x, DType::kFloat8E4M3FNUZ));
    b.output(cast(b, x, DType::kFloat8E5M2FNUZ, 0));
    add("float8 fnuz casts 2x32", b, 16, 1.0);
  }
  {  // Q -> DQ -> Relu: an 8-bit and a float32 output
    GraphBuilder b;
    auto q = quantize(b, b.input("x", DType::kFloat32, {4, 64}), scalar(DType::kFloat32, p2),
                      DType::kFloat8E4M3FN, "a");
    b.output(q);
    b.output(b.node(OpKind::Relu, {dequantize(b, q, scalar(DType::kFloat32, p2), DType::kFloat8E4M3FN, "a")}));
    add("e4m3fn quantize, dequantize, relu 4x64", b, 16, p2);
  }
  {  // float8 in: dequantize every code (NaN codes included) to float16
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat8E4M3FN, {8, 32});
    b.output(cast(b, dequantize(b, x, scalar(DType::kFloat32, 0.5), DType::kFloat8E4M3FN, "a"),
                  DType::kFloat16));
    add("e4m3fn dequantize to float16 8x32", b, 16, 1.0);
  }
  for (DType i8 : {DType::kInt8, DType::kUInt8}) {
    const std::string n(ir::dtype_name(i8));
    {  // per-axis scale and zero point along the last dim: broadcast rows of 48
      GraphBuilder b;
      b.output(quantize(b, b.input("x", DType::kFloat32, {4, 3, 48}), per_axis(48, rng), i8, "a", 1, 2));
      add(n + " quantize per-axis last dim 4x3x48", b, 16, 0.03);
    }
    {  // per-axis along dim 1, rows of 33: no vector
      GraphBuilder b;
      b.output(quantize(b, b.input("x", DType::kFloat32, {5, 7, 33}), per_axis(7, rng), i8, "a", 1, 1));
      add(n + " quantize per-axis dim 1 5x7x33", b, 1, 0.03);
    }
    {  // float16 Q -> DQ (QuantizeLinear of a float16 x): the 8-bit and a float32 output
      GraphBuilder b;
      auto x = b.input("x", DType::kFloat16, {2, 8, 64});
      auto q = quantize(b, x, scalar(DType::kFloat16, 0.0625), i8, "a");
      b.output(q);
      b.output(dequantize(b, q, scalar(DType::kFloat32, 0.0625), i8, "a"));
      add(n + " float16 quantize, dequantize 2x8x64", b, 16, 0.0625);
    }
    {  // Cast from float: truncation, wrapping, NaN / inf / out-of-int32 to 0
      GraphBuilder b;
      b.output(cast(b, b.input("x", DType::kFloat32, {2, 16}), i8));
      add(n + " cast from float32 2x16", b, 16, 1.0);
    }
    {  // 8-bit in, float32 out (4 x 16 bytes), per-column scale
      GraphBuilder b;
      auto x = b.input("x", i8, {6, 48});
      b.output(dequantize(b, x, per_axis(48, rng), i8, "a"));
      add(n + " dequantize per-column 6x48", b, 16, 1.0);
    }
  }
  {  // the int8 GEMM's split epilogue: int32 accumulator -> dequantize -> requantize
    GraphBuilder b;
    auto acc = b.input("acc", DType::kInt32, {4, 64});
    auto dq = dequantize(b, acc, per_axis(64, rng), DType::kInt32, "a");
    b.output(quantize(b, dq, scalar(DType::kFloat32, 0.7), DType::kInt8, "y"));
    add("int32 dequantize, int8 requantize 4x64", b, 16, 1.0);
  }
  {  // an odd size: no vector at all
    GraphBuilder b;
    b.output(quantize(b, b.input("x", DType::kFloat32, {1, 1, 17}), scalar(DType::kFloat32, p2),
                      DType::kFloat8E4M3FN, "a"));
    add("e4m3fn quantize 1x1x17", b, 1, p2);
  }
  return cases;
}

// Inputs: random values with the edge values (times the case's scale for
// floats) at every third element; 8-bit inputs take every byte; int32 ones
// random in +-3000 with the extremes.
inline std::map<std::string, ir::Tensor> q8_inputs(const Q8Case& c, std::mt19937& rng) {
  using ir::DType;
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const std::vector<double> steps = {0.0,    -0.0,   0.5,    1.5,    2.5,    -2.5,   127.5,  -128.5,
                                     128.5,  255.5,  -0.49,  240.0,  448.0,  -448.0, 456.0,  464.0,
                                     -464.0, 464.01, 480.0,  1000.0, 57344.0, 61440.0, -61440.0,
                                     61439.0, 65536.0, 1e6,  3.0e-3, 0.0013671875, 0.0009765625,
                                     -0.0029296875, 1.52587890625e-05, 2.2888183593750e-05};
  const std::vector<double> absolute = {nan, -nan, inf, -inf, 1e-40, -1e-40, 1e-30, 3e38,
                                        -3e38, 2147483648.0, -2147483904.0, 5e9, -1e12};
  std::map<std::string, ir::Tensor> feeds;
  for (ir::ValueId id : c.graph.inputs) {
    const ir::Value& v = c.graph.value(id);
    ir::Tensor t(v.dtype, v.shape);
    std::uniform_real_distribution<double> f(-300.0 * c.scale, 300.0 * c.scale);
    std::uniform_int_distribution<int> byte(0, 255), wide(-3000, 3000);
    size_t e = rng() % 7;  // where the edge values start
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (v.dtype == DType::kInt32) {
        t.set_i64(i, i % 17 == 3 ? (i % 2 ? INT32_MAX : INT32_MIN) : wide(rng));
      } else if (ir::dtype_size(v.dtype) == 1) {
        const auto b = static_cast<uint8_t>(i < 256 ? i : byte(rng));
        std::memcpy(static_cast<uint8_t*>(t.mutable_data()) + i, &b, 1);
      } else if (i % 3 == 1) {
        const size_t k = e++ % (steps.size() + absolute.size());
        t.set_f64(i, k < steps.size() ? steps[k] * c.scale * (i % 2 ? -1 : 1)
                                      : absolute[k - steps.size()]);
      } else {
        t.set_f64(i, f(rng));
      }
    }
    feeds[v.name] = std::move(t);
  }
  return feeds;
}

// Every conversion of a float32 to float8 (both saturations) and int8/uint8,
// on a [rows, 1024] input for q8_float_sweep.
inline Q8Case q8_sweep_case(int64_t rows) {
  using namespace q8;
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {rows, 1024});
  for (DType to : {DType::kFloat8E4M3FN, DType::kFloat8E5M2, DType::kFloat8E4M3FNUZ,
                   DType::kFloat8E5M2FNUZ, DType::kInt8, DType::kUInt8})
    for (int saturate : {1, 0})
      if (saturate == 1 || ir::is_narrow_float(to)) b.output(cast(b, x, to, saturate));
  return {"float32 conversion sweep " + std::to_string(rows) + "x1024", b.build(), 16, 1.0};
}

// Floats around every float8 boundary: each e4m3fn/e5m2 code's value and the
// midpoints between neighbours (and past the largest), each with its float
// neighbours, both signs; integers and halves; then random float bit
// patterns (NaNs, infs, float subnormals among them) up to `numel`.
inline ir::Tensor q8_float_sweep(const ir::Shape& shape, std::mt19937& rng) {
  using ir::DType;
  std::vector<float> v;
  for (DType t : {DType::kFloat8E4M3FN, DType::kFloat8E5M2}) {
    const MiniFloat f = *ir::minifloat_of(t);
    std::vector<double> codes;
    for (int b = 0; b < 128; ++b) {
      const double x = minifloat_to_double(f, static_cast<uint8_t>(b));
      if (std::isfinite(x)) codes.push_back(x);
    }
    codes.push_back(minifloat_max(f) * 1.0625);
    codes.push_back(minifloat_max(f) * 1.125);
    const size_t n = codes.size();
    for (size_t i = 0; i + 1 < n; ++i) codes.push_back((codes[i] + codes[i + 1]) / 2);
    for (double x : codes)
      for (float y : {static_cast<float>(x), std::nextafter(static_cast<float>(x), -1e30f),
                      std::nextafter(static_cast<float>(x), 1e30f)}) {
        v.push_back(y);
        v.push_back(-y);
      }
  }
  for (int i = -600; i <= 600; ++i) v.push_back(static_cast<float>(i) * 0.5f);
  ir::Tensor t(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float x = i < static_cast<int64_t>(v.size()) ? v[static_cast<size_t>(i)]
                                                       : std::bit_cast<float>(static_cast<uint32_t>(rng()));
    std::memcpy(static_cast<uint8_t*>(t.mutable_data()) + i * 4, &x, 4);
  }
  return t;
}

// "" when `got` is `want` bit for bit (8-bit and integer outputs; floats:
// NaN where NaN, else within float32's rounding of the dequantize).
inline std::string check_q8_outputs(const ir::Tensor& want, const ir::Tensor& got) {
  if (want.shape() != got.shape() || want.dtype() != got.dtype()) return "shape or dtype differs";
  const bool bits = ir::dtype_size(want.dtype()) == 1 || ir::is_integer(want.dtype());
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < want.numel(); ++i) {
    bool ok;
    if (bits) {
      ok = std::memcmp(static_cast<const uint8_t*>(want.data()) + i * ir::dtype_size(want.dtype()),
                       static_cast<const uint8_t*>(got.data()) + i * ir::dtype_size(want.dtype()),
                       ir::dtype_size(want.dtype())) == 0;
    } else {
      const double a = want.get_f64(i), b = got.get_f64(i);
      ok = (std::isnan(a) && std::isnan(b)) || a == b || std::fabs(a - b) <= 1e-6 * std::fabs(a);
    }
    if (!ok && bad++ == 0) first = i;
  }
  if (bad == 0) return "";
  return std::to_string(bad) + " of " + std::to_string(want.numel()) + " differ; first at " +
         std::to_string(first) + ": want " + std::to_string(want.get_f64(first)) + ", got " +
         std::to_string(got.get_f64(first));
}

}  // namespace graphc::testing
