#include "support/minifloat.h"

#include <array>
#include <cmath>
#include <limits>

namespace graphc {

namespace {

struct Format {
  int exp_bits, mant_bits, bias;
  bool fnuz;     // NaN is 0x80, no negative zero, no inf
  bool has_inf;  // IEEE-style inf and NaNs in the top exponent (e5m2)
  bool has_nan;  // e2m1 has neither inf nor NaN
};

Format format(MiniFloat f) {
  switch (f) {
    case MiniFloat::kE4M3FN: return {4, 3, 7, false, false, true};
    case MiniFloat::kE4M3FNUZ: return {4, 3, 8, true, false, true};
    case MiniFloat::kE5M2: return {5, 2, 15, false, true, true};
    case MiniFloat::kE5M2FNUZ: return {5, 2, 16, true, false, true};
    case MiniFloat::kE2M1: return {2, 1, 1, false, false, false};
  }
  return {4, 3, 7, false, false, true};
}

int total_bits(const Format& fm) { return 1 + fm.exp_bits + fm.mant_bits; }

// Whether the positive code (sign bit clear) is NaN or inf.
bool is_special(const Format& fm, unsigned code) {
  unsigned top = (1u << (fm.exp_bits + fm.mant_bits)) - 1;
  if (fm.fnuz || !fm.has_nan) return false;
  if (fm.has_inf) return (code >> fm.mant_bits) == (top >> fm.mant_bits);  // exponent all ones
  return code == top;                                                      // e4m3fn: S.1111.111
}

double positive_value(const Format& fm, unsigned code) {
  unsigned e = code >> fm.mant_bits;
  unsigned m = code & ((1u << fm.mant_bits) - 1);
  if (e == 0) return std::ldexp(static_cast<double>(m), 1 - fm.bias - fm.mant_bits);
  return std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -fm.mant_bits), static_cast<int>(e) - fm.bias);
}

// The largest finite positive code.
unsigned max_code(const Format& fm) {
  unsigned c = (1u << (fm.exp_bits + fm.mant_bits)) - 1;
  while (is_special(fm, c)) --c;
  return c;
}

uint8_t nan_code(const Format& fm) {
  if (fm.fnuz) return 0x80;
  if (!fm.has_nan) return 0x8;  // e2m1: ml_dtypes writes NaN as -0
  return static_cast<uint8_t>((1u << (fm.exp_bits + fm.mant_bits)) - 1);
}

}  // namespace

double minifloat_to_double(MiniFloat f, uint8_t bits) {
  const Format fm = format(f);
  const int nb = total_bits(fm);
  bits = static_cast<uint8_t>(bits & ((1u << nb) - 1));
  const unsigned sign_bit = 1u << (nb - 1);
  if (fm.fnuz && bits == 0x80) return std::numeric_limits<double>::quiet_NaN();
  unsigned mag = bits & (sign_bit - 1);
  bool neg = (bits & sign_bit) != 0;
  if (is_special(fm, mag)) {
    if (fm.has_inf && (mag & ((1u << fm.mant_bits) - 1)) == 0)
      return neg ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    return std::numeric_limits<double>::quiet_NaN();
  }
  double v = positive_value(fm, mag);
  return neg ? -v : v;
}

double minifloat_max(MiniFloat f) {
  const Format fm = format(f);
  return positive_value(fm, max_code(fm));
}

uint8_t double_to_minifloat(MiniFloat f, double v, bool saturate) {
  const Format fm = format(f);
  const int nb = total_bits(fm);
  const uint8_t sign = std::signbit(v) ? static_cast<uint8_t>(1u << (nb - 1)) : 0;
  if (std::isnan(v)) return nan_code(fm);
  const unsigned top = max_code(fm);
  auto overflow = [&]() -> uint8_t {
    if (saturate || !fm.has_nan) return static_cast<uint8_t>(sign | top);
    if (fm.has_inf) return static_cast<uint8_t>(sign | (top + 1));  // e5m2: inf follows max
    return fm.fnuz ? nan_code(fm) : static_cast<uint8_t>(sign | nan_code(fm));
  };
  double a = std::fabs(v);
  if (std::isinf(a)) return overflow();
  // Nearest code by value, ties to the even code (mantissa LSB 0). The code
  // above the largest finite one stands for "overflow" at max + one step.
  unsigned lo = 0, hi = top;
  if (a > positive_value(fm, top)) {
    double step = positive_value(fm, top) - positive_value(fm, top - 1);
    double next = positive_value(fm, top) + step;
    double mid = (positive_value(fm, top) + next) / 2;
    if (a < mid || (a == mid && (top & 1u) == 0)) return static_cast<uint8_t>(sign | top);
    return overflow();
  }
  while (hi - lo > 1) {  // positive_value(lo) <= a <= positive_value(hi)
    unsigned m = (lo + hi) / 2;
    if (positive_value(fm, m) <= a) lo = m;
    else hi = m;
  }
  unsigned code;
  double dlo = a - positive_value(fm, lo), dhi = positive_value(fm, hi) - a;
  if (dlo < dhi) code = lo;
  else if (dhi < dlo) code = hi;
  else code = (lo & 1u) == 0 ? lo : hi;
  if (code == 0 && fm.fnuz) return 0;  // no negative zero
  return static_cast<uint8_t>(sign | code);
}

}  // namespace graphc
