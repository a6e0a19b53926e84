// Reference kernels of the elementwise unary ops (ops.def category kUnary).
// float16/bfloat16/float32 compute in float, float64 in double; integer
// variants (Abs, Neg, Sign, Relu, Shrink, Erf) are exact where the result is
// an integer and go through double only where ONNX defines a real result.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "reference/kernels_elementwise_util.h"

namespace graphc::reference::kernels {

namespace {
using namespace ew;

// y[i] = fn(x[i]) for the dtypes in Families; fn takes and returns the compute type.
template <unsigned Families, typename Fn>
Status map_same(KernelContext& ctx, const char* op, Fn fn) {
  const ir::Tensor& x = ctx.in(0);
  ir::Tensor& y = ctx.out(0);
  return visit<Families>(x.dtype(), op, [&](auto tr) -> Status {
    using T = decltype(tr);
    using C = typename T::compute;
    const auto* src = in_data<T>(x);
    auto* dst = out_data<T>(y);
    for (int64_t i = 0; i < x.numel(); ++i) dst[i] = T::store(static_cast<C>(fn(T::load(src[i]))));
    return Status::ok_status();
  });
}

// Float-only ops.
template <typename Fn>
Status map_float(KernelContext& ctx, const char* op, Fn fn) {
  return map_same<kFloats>(ctx, op, fn);
}

// y[i] = pred(x[i]) as bool, for float inputs.
template <typename Fn>
Status map_float_to_bool(KernelContext& ctx, const char* op, Fn pred) {
  const ir::Tensor& x = ctx.in(0);
  ir::Tensor& y = ctx.out(0);
  return visit<kFloats>(x.dtype(), op, [&](auto tr) -> Status {
    using T = decltype(tr);
    const auto* src = in_data<T>(x);
    auto* dst = out_data<Bool>(y);
    for (int64_t i = 0; i < x.numel(); ++i) dst[i] = Bool::store(pred(T::load(src[i])));
    return Status::ok_status();
  });
}

double attr_f(const KernelContext& ctx, const char* name, double def) {
  return ctx.attrs().get_float(name, def);
}

}  // namespace

Status run_Abs(KernelContext& ctx) {
  return map_same<kNumeric>(ctx, "Abs", [](auto v) {
    using C = decltype(v);
    if constexpr (kIsFloat<C>)
      return std::fabs(v);
    else if constexpr (std::is_unsigned_v<C>)
      return v;
    else
      return v < 0 ? wrap_neg(v) : v;  // abs(INT_MIN) wraps to INT_MIN, as numpy
  });
}

Status run_Neg(KernelContext& ctx) {
  return map_same<kFloats | kSigned>(ctx, "Neg", [](auto v) {
    using C = decltype(v);
    if constexpr (kIsFloat<C>)
      return -v;
    else
      return wrap_neg(v);
  });
}

Status run_Exp(KernelContext& ctx) {
  return map_float(ctx, "Exp", [](auto v) { return std::exp(v); });
}
Status run_Log(KernelContext& ctx) {
  return map_float(ctx, "Log", [](auto v) { return std::log(v); });
}
Status run_Sqrt(KernelContext& ctx) {
  return map_float(ctx, "Sqrt", [](auto v) { return std::sqrt(v); });
}
Status run_Reciprocal(KernelContext& ctx) {
  return map_float(ctx, "Reciprocal", [](auto v) { return decltype(v){1} / v; });
}

Status run_Sigmoid(KernelContext& ctx) {
  return map_float(ctx, "Sigmoid", [](auto v) {
    using C = decltype(v);
    // Two branches so exp never overflows.
    if (v >= 0) return C{1} / (C{1} + std::exp(-v));
    C e = std::exp(v);
    return e / (C{1} + e);
  });
}

Status run_Tanh(KernelContext& ctx) {
  return map_float(ctx, "Tanh", [](auto v) { return std::tanh(v); });
}

Status run_Relu(KernelContext& ctx) {
  return map_same<kFloats | kSigned>(ctx, "Relu", [](auto v) {
    using C = decltype(v);
    return v < C{0} ? C{0} : v;  // NaN stays NaN
  });
}

Status run_LeakyRelu(KernelContext& ctx) {
  double alpha = attr_f(ctx, "alpha", 0.01);
  return map_float(ctx, "LeakyRelu", [alpha](auto v) {
    using C = decltype(v);
    return v < C{0} ? static_cast<C>(alpha) * v : v;
  });
}

Status run_Elu(KernelContext& ctx) {
  double alpha = attr_f(ctx, "alpha", 1.0);
  return map_float(ctx, "Elu", [alpha](auto v) {
    using C = decltype(v);
    return v < C{0} ? static_cast<C>(alpha) * std::expm1(v) : v;
  });
}

Status run_Selu(KernelContext& ctx) {
  double alpha = attr_f(ctx, "alpha", 1.67326319217681884765625);
  double gamma = attr_f(ctx, "gamma", 1.05070102214813232421875);
  return map_float(ctx, "Selu", [alpha, gamma](auto v) {
    using C = decltype(v);
    C g = static_cast<C>(gamma);
    return v > C{0} ? g * v : g * static_cast<C>(alpha) * std::expm1(v);
  });
}

Status run_Celu(KernelContext& ctx) {
  double alpha = attr_f(ctx, "alpha", 1.0);
  if (alpha == 0.0) return invalid_model("Celu: attribute alpha must be nonzero");
  return map_float(ctx, "Celu", [alpha](auto v) {
    using C = decltype(v);
    C a = static_cast<C>(alpha);
    return std::max(C{0}, v) + std::min(C{0}, a * std::expm1(v / a));
  });
}

Status run_HardSigmoid(KernelContext& ctx) {
  double alpha = attr_f(ctx, "alpha", 0.2);
  double beta = attr_f(ctx, "beta", 0.5);
  return map_float(ctx, "HardSigmoid", [alpha, beta](auto v) {
    using C = decltype(v);
    C r = static_cast<C>(alpha) * v + static_cast<C>(beta);
    return std::max(C{0}, std::min(C{1}, r));
  });
}

Status run_HardSwish(KernelContext& ctx) {
  return map_float(ctx, "HardSwish", [](auto v) {
    using C = decltype(v);
    C r = v / C{6} + C{0.5};
    return v * std::max(C{0}, std::min(C{1}, r));
  });
}

Status run_Softplus(KernelContext& ctx) {
  return map_float(ctx, "Softplus", [](auto v) {
    using C = decltype(v);
    // log(1 + exp(v)) without overflow for large v.
    return v > C{0} ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
  });
}

Status run_Softsign(KernelContext& ctx) {
  return map_float(ctx, "Softsign", [](auto v) { return v / (decltype(v){1} + std::fabs(v)); });
}

Status run_Erf(KernelContext& ctx) {
  // Erf-9 also allows integer tensors: erf is computed in double and truncated.
  return map_same<kNumeric>(ctx, "Erf", [](auto v) {
    using C = decltype(v);
    if constexpr (kIsFloat<C>)
      return std::erf(v);
    else
      return convert<C>(std::erf(static_cast<double>(v)));
  });
}

Status run_Gelu(KernelContext& ctx) {
  std::string approximate = ctx.attrs().get_string("approximate", "none");
  if (approximate == "none") {
    return map_float(ctx, "Gelu", [](auto v) {
      using C = decltype(v);
      return C{0.5} * v * (C{1} + std::erf(v / std::sqrt(C{2})));
    });
  }
  if (approximate == "tanh") {
    return map_float(ctx, "Gelu", [](auto v) {
      using C = decltype(v);
      const C k = std::sqrt(C{2} / std::numbers::pi_v<C>);
      return C{0.5} * v * (C{1} + std::tanh(k * (v + C{0.044715} * v * v * v)));
    });
  }
  return invalid_model("Gelu: attribute approximate is '{}'; expected 'none' or 'tanh'",
                       approximate);
}

Status run_Sin(KernelContext& ctx) {
  return map_float(ctx, "Sin", [](auto v) { return std::sin(v); });
}
Status run_Cos(KernelContext& ctx) {
  return map_float(ctx, "Cos", [](auto v) { return std::cos(v); });
}
Status run_Tan(KernelContext& ctx) {
  return map_float(ctx, "Tan", [](auto v) { return std::tan(v); });
}
Status run_Asin(KernelContext& ctx) {
  return map_float(ctx, "Asin", [](auto v) { return std::asin(v); });
}
Status run_Acos(KernelContext& ctx) {
  return map_float(ctx, "Acos", [](auto v) { return std::acos(v); });
}
Status run_Atan(KernelContext& ctx) {
  return map_float(ctx, "Atan", [](auto v) { return std::atan(v); });
}
Status run_Sinh(KernelContext& ctx) {
  return map_float(ctx, "Sinh", [](auto v) { return std::sinh(v); });
}
Status run_Cosh(KernelContext& ctx) {
  return map_float(ctx, "Cosh", [](auto v) { return std::cosh(v); });
}
Status run_Asinh(KernelContext& ctx) {
  return map_float(ctx, "Asinh", [](auto v) { return std::asinh(v); });
}
Status run_Acosh(KernelContext& ctx) {
  return map_float(ctx, "Acosh", [](auto v) { return std::acosh(v); });
}
Status run_Atanh(KernelContext& ctx) {
  return map_float(ctx, "Atanh", [](auto v) { return std::atanh(v); });
}
Status run_Floor(KernelContext& ctx) {
  return map_float(ctx, "Floor", [](auto v) { return std::floor(v); });
}
Status run_Ceil(KernelContext& ctx) {
  return map_float(ctx, "Ceil", [](auto v) { return std::ceil(v); });
}
Status run_Round(KernelContext& ctx) {
  // Halves round to even: nearbyint under the default rounding mode.
  return map_float(ctx, "Round", [](auto v) { return std::nearbyint(v); });
}

Status run_Sign(KernelContext& ctx) {
  return map_same<kNumeric>(ctx, "Sign", [](auto v) {
    using C = decltype(v);
    if constexpr (kIsFloat<C>)
      return v > C{0} ? C{1} : v < C{0} ? C{-1} : v;  // 0 and NaN kept
    else if constexpr (std::is_unsigned_v<C>)
      return static_cast<C>(v > 0 ? 1 : 0);
    else
      return static_cast<C>(v > 0 ? 1 : v < 0 ? -1 : 0);
  });
}

Status run_BitwiseNot(KernelContext& ctx) {
  return map_same<kInts>(ctx, "BitwiseNot", [](auto v) { return static_cast<decltype(v)>(~v); });
}

// Mish: x * tanh(softplus(x)).
Status run_Mish(KernelContext& ctx) {
  return map_float(ctx, "Mish", [](auto v) {
    using C = decltype(v);
    C sp = v > C{0} ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
    return v * std::tanh(sp);
  });
}

// Swish: x * sigmoid(alpha * x).
Status run_Swish(KernelContext& ctx) {
  double alpha = attr_f(ctx, "alpha", 1.0);
  return map_float(ctx, "Swish", [alpha](auto v) {
    using C = decltype(v);
    return v / (C{1} + std::exp(-static_cast<C>(alpha) * v));
  });
}

Status run_Not(KernelContext& ctx) {
  return map_same<kBools>(ctx, "Not", [](bool v) { return !v; });
}

Status run_IsNaN(KernelContext& ctx) {
  return map_float_to_bool(ctx, "IsNaN", [](auto v) { return std::isnan(v); });
}

Status run_IsInf(KernelContext& ctx) {
  bool neg = ctx.attrs().get_int("detect_negative", 1) != 0;
  bool pos = ctx.attrs().get_int("detect_positive", 1) != 0;
  return map_float_to_bool(ctx, "IsInf", [neg, pos](auto v) {
    return std::isinf(v) && ((v > 0 && pos) || (v < 0 && neg));
  });
}

Status run_Shrink(KernelContext& ctx) {
  double bias = attr_f(ctx, "bias", 0.0);
  double lambd = attr_f(ctx, "lambd", 0.5);
  return map_same<kNumeric>(ctx, "Shrink", [bias, lambd](auto v) {
    using C = decltype(v);
    if constexpr (kIsFloat<C>) {
      C b = static_cast<C>(bias), l = static_cast<C>(lambd);
      return v < -l ? v + b : v > l ? v - b : C{0};
    } else {
      // Integers: the real-valued result truncated toward zero (numpy's astype).
      double d = static_cast<double>(v);
      return convert<C>(d < -lambd ? d + bias : d > lambd ? d - bias : 0.0);
    }
  });
}

Status run_ThresholdedRelu(KernelContext& ctx) {
  double alpha = attr_f(ctx, "alpha", 1.0);
  return map_float(ctx, "ThresholdedRelu", [alpha](auto v) {
    using C = decltype(v);
    return v > static_cast<C>(alpha) ? v : C{0};
  });
}

}  // namespace graphc::reference::kernels
