// `graphc_kernel_emulator narrow`: the device conversions of the narrow types
// (emit/cuda/cuda_narrow.cpp), compiled for the host through the emulator's
// shim, against the host conversions the reference executor uses
// (support/minifloat.cpp, ir::wrap_sub_byte): every one of the 256 bytes
// decoded, and a sweep of doubles encoded with and without saturation (every
// code's value, the ties halfway between neighbours and their next doubles,
// NaN, +-inf, +-0, out-of-range and tiny values, random doubles); the int4/
// int2 wrap on a sweep of int64. The float-source encoders (g_nw_encode_fsoft,
// and g_nw_encode_f: on e4m3fn/e5m2 with saturation the shim's model of
// sm_89's cvt, what kernels run on the GPU) on every sweep value that is a
// float plus random float bit patterns (NaNs, infinities, float subnormals
// included); the float -> int8/uint8 helpers (g_b8_) against the reference's
// float_to_int.
#include "tests/emu/narrow_conversion_emu.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <iostream>
#include <limits>
#include <random>

#include "emit/cuda/cuda_ops.h"
#include "ir/dtype.h"
#include "reference/kernels_elementwise_util.h"
#include "tests/emu/emulator_support.h"

namespace graphc::emu {

namespace {

using ir::DType;

struct Format {
  DType type;
  const char* args;  // the template arguments cuda_narrow.cpp gives the format
};

const Format kFormats[] = {{DType::kFloat8E4M3FN, "4, 3, 7, 0"},
                           {DType::kFloat8E4M3FNUZ, "4, 3, 8, 1"},
                           {DType::kFloat8E5M2, "5, 2, 15, 2"},
                           {DType::kFloat8E5M2FNUZ, "5, 2, 16, 1"},
                           {DType::kFloat4E2M1, "2, 1, 1, 3"}};

// Doubles to encode: around every code's value and every midpoint, plus the specials.
std::vector<double> sweep(MiniFloat f) {
  std::vector<double> v = {0.0, -0.0, std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN(),
                           -std::numeric_limits<double>::quiet_NaN(), 1e300, -1e300, 1e-300,
                           -1e-300, std::numeric_limits<double>::denorm_min(),
                           std::numeric_limits<double>::max()};
  std::vector<double> values;
  for (int b = 0; b < 256; ++b) {
    double x = minifloat_to_double(f, static_cast<uint8_t>(b));
    if (std::isfinite(x)) values.push_back(x);
  }
  std::sort(values.begin(), values.end());
  const double top = minifloat_max(f);
  values.push_back(top * 1.0625);  // a midpoint above the largest (e4m3fn 464: 448 + 16)
  values.push_back(top * 1.125);
  values.push_back(top * 1.25);
  values.push_back(top * 2);
  for (size_t i = 0; i < values.size(); ++i) {
    std::vector<double> around = {values[i]};
    if (i + 1 < values.size()) around.push_back((values[i] + values[i + 1]) / 2);  // ties
    for (double a : around)
      for (double x : {a, std::nextafter(a, -1e308), std::nextafter(a, 1e308),
                       static_cast<double>(std::nextafter(static_cast<float>(a), -1e30f)),
                       static_cast<double>(std::nextafter(static_cast<float>(a), 1e30f))}) {
        v.push_back(x);
        v.push_back(-x);
      }
  }
  std::mt19937_64 rng(18);
  std::uniform_real_distribution<double> exponent(-40, 40), mantissa(1, 2);
  for (int i = 0; i < 200000; ++i) {
    double x = std::ldexp(mantissa(rng), static_cast<int>(exponent(rng)));
    v.push_back(i % 2 ? -x : x);
  }
  return v;
}

// The sweep's values that are floats, plus random float bit patterns.
std::vector<float> float_sweep(const std::vector<double>& doubles) {
  std::vector<float> v;
  for (double x : doubles)
    if (std::isnan(x) || static_cast<double>(static_cast<float>(x)) == x)
      v.push_back(static_cast<float>(x));
  std::mt19937 rng(19);
  for (int i = 0; i < 300000; ++i) v.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  for (uint32_t bits : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff812345u, 0x00000001u,
                        0x80000001u, 0x007fffffu, 0x807fffffu})
    v.push_back(std::bit_cast<float>(bits));
  return v;
}

bool same_float(double want, float got) {
  if (std::isnan(want)) return std::isnan(got);
  return static_cast<float>(want) == got && std::signbit(want) == std::signbit(got);
}

}  // namespace

int run_narrow_conversions() {
  // One exported host function per format and per sub-byte integer type.
  std::string extra;
  for (size_t k = 0; k < std::size(kFormats); ++k)
    extra += fmt::format(
        "extern \"C\" float emu_decode{0}(unsigned char b) {{ return g_nw_decode<{1}>(b); }}\n"
        "extern \"C\" unsigned char emu_encode{0}(double v, bool s) {{ return g_nw_encode<{1}>(v, s); }}\n"
        "extern \"C\" unsigned char emu_encode_fsoft{0}(float v, bool s) {{ return g_nw_encode_fsoft<{1}>(v, s); }}\n"
        "extern \"C\" unsigned char emu_encode_f{0}(float v, bool s) {{ return g_nw_encode_f<{1}>(v, s); }}\n",
        k, kFormats[k].args);
  extra +=
      "extern \"C\" signed char emu_f2i8(float v) { return g_b8_f2i8(v); }\n"
      "extern \"C\" unsigned char emu_f2u8(float v) { return g_b8_f2u8(v); }\n";
  extra +=
      "extern \"C\" unsigned char emu_wrap_i4(long long v) { return g_nw_wrap<4, true>(v); }\n"
      "extern \"C\" unsigned char emu_wrap_u4(long long v) { return g_nw_wrap<4, false>(v); }\n"
      "extern \"C\" unsigned char emu_wrap_i2(long long v) { return g_nw_wrap<2, true>(v); }\n"
      "extern \"C\" unsigned char emu_wrap_u2(long long v) { return g_nw_wrap<2, false>(v); }\n";
  const std::string source =
      "#include <cuda_fp16.h>\n" + emit::cuda::device_prelude() +
      emit::cuda::conversion_preludes("g_nw_ g_b8_");  // both conditional preludes
  auto lib = load_module(source, extra);
  if (!lib.ok()) {
    std::cout << "compiling the narrow conversions failed: " << lib.status().message() << "\n";
    return 1;
  }
  int failures = 0;
  long checks = 0;
  auto fail = [&](const std::string& what) {
    if (++failures <= 20) std::cout << "MISMATCH " << what << "\n";
  };
  for (size_t k = 0; k < std::size(kFormats); ++k) {
    const MiniFloat f = *ir::minifloat_of(kFormats[k].type);
    const std::string name(ir::dtype_name(kFormats[k].type));
    auto decode = reinterpret_cast<float (*)(unsigned char)>(
        dlsym(*lib, fmt::format("emu_decode{}", k).c_str()));
    auto encode = reinterpret_cast<unsigned char (*)(double, bool)>(
        dlsym(*lib, fmt::format("emu_encode{}", k).c_str()));
    if (!decode || !encode) {
      std::cout << "missing exported conversion for " << name << "\n";
      return 1;
    }
    const int codes = kFormats[k].type == DType::kFloat4E2M1 ? 16 : 256;
    for (int b = 0; b < codes; ++b, ++checks) {
      const double want = minifloat_to_double(f, static_cast<uint8_t>(b));
      const float got = decode(static_cast<unsigned char>(b));
      if (!same_float(want, got)) fail(fmt::format("{} decode 0x{:02x}: host {} device {}", name, b, want, got));
    }
    auto encode_fsoft = reinterpret_cast<unsigned char (*)(float, bool)>(
        dlsym(*lib, fmt::format("emu_encode_fsoft{}", k).c_str()));
    auto encode_f = reinterpret_cast<unsigned char (*)(float, bool)>(
        dlsym(*lib, fmt::format("emu_encode_f{}", k).c_str()));
    if (!encode_fsoft || !encode_f) {
      std::cout << "missing exported float conversion for " << name << "\n";
      return 1;
    }
    const std::vector<double> doubles = sweep(f);
    for (double x : doubles)
      for (bool sat : {true, false}) {
        ++checks;
        const uint8_t want = double_to_minifloat(f, x, sat);
        const uint8_t got = encode(x, sat);
        if (want != got)
          fail(fmt::format("{} encode {:a} saturate={}: host 0x{:02x} device 0x{:02x}", name, x,
                           sat, want, got));
      }
    for (float x : float_sweep(doubles))
      for (bool sat : {true, false}) {
        checks += 2;
        const uint8_t want = double_to_minifloat(f, static_cast<double>(x), sat);
        const uint8_t soft = encode_fsoft(x, sat), fast = encode_f(x, sat);
        if (want != soft || want != fast)
          fail(fmt::format("{} float encode {:a} saturate={}: host 0x{:02x} float 0x{:02x} "
                           "(hardware path 0x{:02x})",
                           name, x, sat, want, soft, fast));
      }
  }
  auto f2i8 = reinterpret_cast<signed char (*)(float)>(dlsym(*lib, "emu_f2i8"));
  auto f2u8 = reinterpret_cast<unsigned char (*)(float)>(dlsym(*lib, "emu_f2u8"));
  if (!f2i8 || !f2u8) return 1;
  std::vector<float> ints = float_sweep({});
  for (float x : {0.0f, -0.0f, 0.5f, -0.5f, 127.5f, -128.7f, 255.9f, 300.7f, -1.5f, 2147483520.0f,
                  2147483648.0f, -2147483648.0f, -2147483904.0f, 1e10f, -1e10f,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()})
    ints.push_back(x);
  for (int i = -70000; i <= 70000; ++i) ints.push_back(static_cast<float>(i) * 0.25f);
  for (float x : ints) {
    checks += 2;
    const double d = static_cast<double>(x);
    const int8_t want8 = reference::ew::float_to_int<int8_t>(d);
    const uint8_t wantu8 = reference::ew::float_to_int<uint8_t>(d);
    if (want8 != f2i8(x) || wantu8 != f2u8(x))
      fail(fmt::format("float -> int8/uint8 {:a}: host {}/{} device {}/{}", d, want8, wantu8,
                       f2i8(x), f2u8(x)));
  }
  const std::pair<DType, const char*> wraps[] = {{DType::kInt4, "emu_wrap_i4"},
                                                 {DType::kUInt4, "emu_wrap_u4"},
                                                 {DType::kInt2, "emu_wrap_i2"},
                                                 {DType::kUInt2, "emu_wrap_u2"}};
  for (const auto& [t, sym] : wraps) {
    auto wrap = reinterpret_cast<unsigned char (*)(long long)>(dlsym(*lib, sym));
    if (!wrap) return 1;
    std::vector<int64_t> xs = {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
    for (int64_t i = -300; i <= 300; ++i) xs.push_back(i);
    for (int s = 0; s < 63; ++s) xs.push_back(int64_t{1} << s), xs.push_back(-(int64_t{1} << s));
    for (int64_t x : xs) {
      ++checks;
      if (ir::wrap_sub_byte(t, x) != wrap(x))
        fail(fmt::format("{} wrap {}: host 0x{:02x} device 0x{:02x}", ir::dtype_name(t), x,
                         ir::wrap_sub_byte(t, x), wrap(x)));
    }
  }
  std::cout << checks << " conversions checked, " << failures << " mismatches\n";
  return failures ? 1 : 0;
}

}  // namespace graphc::emu
