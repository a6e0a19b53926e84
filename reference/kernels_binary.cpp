// Reference kernels of the elementwise binary ops (ops.def category kBinary),
// all with numpy multidirectional broadcasting (PRelu: slope broadcasts to X).
// Integer arithmetic is exact and wraps like numpy (no signed-overflow UB);
// integer division or modulo by zero is an error, not a crash.
#include <cmath>
#include <type_traits>

#include "reference/kernels_elementwise_util.h"

namespace graphc::reference::kernels {

namespace {
using namespace ew;

// out[i] = TO::store(fn(a[i'], b[i''])) over the broadcast output.
template <typename TA, typename TB, typename TO, typename Fn>
void binary_loop(const ir::Tensor& a, const ir::Tensor& b, ir::Tensor& out, Fn fn) {
  auto oa = broadcast_offsets(out.shape(), a.shape());
  auto ob = broadcast_offsets(out.shape(), b.shape());
  const auto* pa = in_data<TA>(a);
  const auto* pb = in_data<TB>(b);
  auto* po = out_data<TO>(out);
  for (int64_t i = 0; i < out.numel(); ++i) {
    auto ia = static_cast<size_t>(i);
    po[i] = TO::store(fn(TA::load(pa[oa[ia]]), TB::load(pb[ob[ia]])));
  }
}

Status same_dtype(const KernelContext& ctx, const char* op) {
  if (ctx.in(0).dtype() != ctx.in(1).dtype())
    return invalid_model("{}: inputs have different dtypes {} and {}", op,
                         ir::dtype_name(ctx.in(0).dtype()), ir::dtype_name(ctx.in(1).dtype()));
  return Status::ok_status();
}

// Same dtype in and out: out = fn(a, b) in the compute type.
template <unsigned Families, typename Fn>
Status binary_same(KernelContext& ctx, const char* op, Fn fn) {
  RETURN_IF_ERROR(same_dtype(ctx, op));
  return visit<Families>(ctx.in(0).dtype(), op, [&](auto tr) -> Status {
    using T = decltype(tr);
    using C = typename T::compute;
    binary_loop<T, T, T>(ctx.in(0), ctx.in(1), ctx.out(0),
                         [&](C x, C y) { return static_cast<C>(fn(x, y)); });
    return Status::ok_status();
  });
}

// Comparison: same dtype in, bool out.
template <unsigned Families, typename Fn>
Status compare(KernelContext& ctx, const char* op, Fn fn) {
  RETURN_IF_ERROR(same_dtype(ctx, op));
  return visit<Families>(ctx.in(0).dtype(), op, [&](auto tr) -> Status {
    using T = decltype(tr);
    using C = typename T::compute;
    binary_loop<T, T, Bool>(ctx.in(0), ctx.in(1), ctx.out(0),
                            [&](C x, C y) { return static_cast<bool>(fn(x, y)); });
    return Status::ok_status();
  });
}

Status division_by_zero(const char* op) {
  return invalid_argument("{}: integer division by zero", op);
}

// base^exp for integers, wrapping on overflow. exp >= 0.
template <typename C>
C int_pow(C base, uint64_t exp) {
  C result{1};
  while (exp) {
    if (exp & 1u) result = wrap_mul(result, base);
    base = wrap_mul(base, base);
    exp >>= 1;
  }
  return result;
}

// Integer base, integer exponent of any signedness. A negative exponent gives
// the real result truncated toward zero: 1 for base 1, +-1 for base -1, 0 for
// |base| > 1; base 0 sets `zero_neg` (division by zero).
template <typename CA, typename CB>
CA int_pow_signed(CA x, CB y, bool& zero_neg) {
  bool negative_exp = false;
  if constexpr (std::is_signed_v<CB>) negative_exp = y < 0;
  if (!negative_exp) return int_pow<CA>(x, static_cast<uint64_t>(y));
  if (x == 1) return CA{1};
  if (std::is_signed_v<CA> && x == static_cast<CA>(-1))
    return static_cast<CA>((y % 2 == 0) ? 1 : -1);
  if (x == 0) zero_neg = true;
  return CA{0};
}

// One Pow element: through double when either side is a float.
template <typename CA, typename CB>
CA pow_elem(CA x, CB y, bool& zero_neg) {
  if constexpr (kIsFloat<CA> || kIsFloat<CB>)
    return convert<CA>(std::pow(static_cast<double>(x), static_cast<double>(y)));
  else
    return int_pow_signed<CA, CB>(x, y, zero_neg);
}

}  // namespace

Status run_Add(KernelContext& ctx) {
  return binary_same<kNumeric>(ctx, "Add", [](auto x, auto y) {
    if constexpr (kIsInt<decltype(x)>)
      return wrap_add(x, y);
    else
      return x + y;
  });
}

Status run_Sub(KernelContext& ctx) {
  return binary_same<kNumeric>(ctx, "Sub", [](auto x, auto y) {
    if constexpr (kIsInt<decltype(x)>)
      return wrap_sub(x, y);
    else
      return x - y;
  });
}

Status run_Mul(KernelContext& ctx) {
  return binary_same<kNumeric>(ctx, "Mul", [](auto x, auto y) {
    if constexpr (kIsInt<decltype(x)>)
      return wrap_mul(x, y);
    else
      return x * y;
  });
}

Status run_Div(KernelContext& ctx) {
  bool by_zero = false;
  RETURN_IF_ERROR(binary_same<kNumeric>(ctx, "Div", [&by_zero](auto x, auto y) {
    using C = decltype(x);
    if constexpr (kIsFloat<C>) {
      return x / y;
    } else {
      if (y == 0) {
        by_zero = true;
        return C{0};
      }
      if constexpr (std::is_signed_v<C>)
        if (x == std::numeric_limits<C>::min() && y == -1) return x;  // wraps, as numpy
      return static_cast<C>(x / y);                                   // truncates toward zero
    }
  }));
  return by_zero ? division_by_zero("Div") : Status::ok_status();
}

Status run_Pow(KernelContext& ctx) {
  // The exponent may have another dtype; the result has the base's dtype.
  // Float bases compute in double; integer bases with an integer exponent are
  // exact (negative exponents: the real result truncated, 1 / b^n -> 0 for |b| > 1);
  // integer bases with a float exponent truncate the double result.
  const ir::Tensor& a = ctx.in(0);
  const ir::Tensor& b = ctx.in(1);
  bool zero_neg = false;
  RETURN_IF_ERROR(visit<kNumeric>(a.dtype(), "Pow", [&](auto ta) -> Status {
    using TA = decltype(ta);
    using CA = typename TA::compute;
    return visit<kNumeric>(b.dtype(), "Pow", [&](auto tb) -> Status {
      using TB = decltype(tb);
      using CB = typename TB::compute;
      binary_loop<TA, TB, TA>(a, b, ctx.out(0),
                              [&](CA x, CB y) { return pow_elem<CA, CB>(x, y, zero_neg); });
      return Status::ok_status();
    });
  }));
  if (zero_neg) return invalid_argument("Pow: integer 0 raised to a negative integer power");
  return Status::ok_status();
}

Status run_Mod(KernelContext& ctx) {
  bool fmod = ctx.attrs().get_int("fmod", 0) != 0;
  bool by_zero = false;
  RETURN_IF_ERROR(same_dtype(ctx, "Mod"));
  RETURN_IF_ERROR(binary_same<kNumeric>(ctx, "Mod", [&](auto x, auto y) {
    using C = decltype(x);
    if constexpr (kIsFloat<C>) {
      C r = std::fmod(x, y);  // sign of the dividend; NaN for x = inf or y = 0
      if (fmod) return r;
      // fmod = 0 on floats (opset 28): x - floor(x/y)*y, the sign of the divisor;
      // y = inf keeps x when the signs agree and gives y otherwise.
      if (r != 0 && ((r < 0) != (y < 0))) return static_cast<C>(r + y);
      return r == 0 ? std::copysign(C{0}, y) : r;
    } else {
      if (y == 0) {
        by_zero = true;
        return C{0};
      }
      if constexpr (std::is_signed_v<C>) {
        if (y == -1) return C{0};     // also avoids INT_MIN % -1
        C r = static_cast<C>(x % y);  // C remainder: sign of the dividend
        if (!fmod && r != 0 && ((r < 0) != (y < 0))) r = static_cast<C>(r + y);  // sign of divisor
        return r;
      } else {
        return static_cast<C>(x % y);
      }
    }
  }));
  return by_zero ? division_by_zero("Mod") : Status::ok_status();
}

Status run_And(KernelContext& ctx) {
  return binary_same<kBools>(ctx, "And", [](bool x, bool y) { return x && y; });
}
Status run_Or(KernelContext& ctx) {
  return binary_same<kBools>(ctx, "Or", [](bool x, bool y) { return x || y; });
}
Status run_Xor(KernelContext& ctx) {
  return binary_same<kBools>(ctx, "Xor", [](bool x, bool y) { return x != y; });
}

Status run_BitwiseAnd(KernelContext& ctx) {
  return binary_same<kInts>(ctx, "BitwiseAnd",
                            [](auto x, auto y) { return static_cast<decltype(x)>(x & y); });
}
Status run_BitwiseOr(KernelContext& ctx) {
  return binary_same<kInts>(ctx, "BitwiseOr",
                            [](auto x, auto y) { return static_cast<decltype(x)>(x | y); });
}
Status run_BitwiseXor(KernelContext& ctx) {
  return binary_same<kInts>(ctx, "BitwiseXor",
                            [](auto x, auto y) { return static_cast<decltype(x)>(x ^ y); });
}

Status run_BitShift(KernelContext& ctx) {
  std::string direction = ctx.attrs().get_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    return invalid_model("BitShift: attribute direction is '{}'; expected 'LEFT' or 'RIGHT'",
                         direction);
  bool left = direction == "LEFT";
  // Opset 28 rules: a signed right shift is arithmetic; a shift by a negative
  // amount or by >= the bit width leaves only the sign fill (-1 for a negative
  // value shifted right, 0 otherwise).
  return binary_same<kInts>(ctx, "BitShift", [left](auto x, auto y) {
    using C = decltype(x);
    using U = std::make_unsigned_t<C>;
    constexpr int64_t bits = sizeof(C) * 8;
    const bool negative = std::is_signed_v<C> && x < 0;
    if ((std::is_signed_v<C> && y < 0) || static_cast<uint64_t>(y) >= static_cast<uint64_t>(bits))
      return (!left && negative) ? C(-1) : C{0};
    if (left) return static_cast<C>(static_cast<U>(static_cast<U>(x) << y));
    if (!negative) return static_cast<C>(static_cast<U>(x) >> y);
    return static_cast<C>(~(static_cast<U>(~static_cast<U>(x)) >> y));  // sign-filling
  });
}

Status run_Equal(KernelContext& ctx) {
  return compare<kAll>(ctx, "Equal", [](auto x, auto y) { return x == y; });
}
Status run_Less(KernelContext& ctx) {
  return compare<kNumeric>(ctx, "Less", [](auto x, auto y) { return x < y; });
}
Status run_LessOrEqual(KernelContext& ctx) {
  return compare<kNumeric>(ctx, "LessOrEqual", [](auto x, auto y) { return x <= y; });
}
Status run_Greater(KernelContext& ctx) {
  return compare<kNumeric>(ctx, "Greater", [](auto x, auto y) { return x > y; });
}
Status run_GreaterOrEqual(KernelContext& ctx) {
  return compare<kNumeric>(ctx, "GreaterOrEqual", [](auto x, auto y) { return x >= y; });
}

Status run_PRelu(KernelContext& ctx) {
  return binary_same<kNumeric>(ctx, "PRelu", [](auto x, auto slope) {
    using C = decltype(x);
    if constexpr (std::is_unsigned_v<C>)
      return x;
    else if constexpr (kIsInt<C>)
      return x < 0 ? wrap_mul(slope, x) : x;
    else
      return x < C{0} ? slope * x : x;
  });
}

}  // namespace graphc::reference::kernels
