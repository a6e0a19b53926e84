// Reference kernels of the variadic elementwise ops (Max, Min, Mean, Sum) and
// the other elementwise ops (Where, Clip, Cast, CastLike, Identity, Dropout).
#include <cmath>
#include <limits>

#include "reference/kernels_elementwise_util.h"

namespace graphc::reference::kernels {

namespace {
using namespace ew;

// Folds every input into the output with fn(acc, value), broadcasting all
// inputs to the output shape. All inputs share one dtype (the shape rule checked).
template <unsigned Families, typename Fn, typename Finish>
Status fold_inputs(KernelContext& ctx, const char* op, Fn fn, Finish finish) {
  const ir::DType dt = ctx.in(0).dtype();
  for (size_t k = 1; k < ctx.inputs.size(); ++k)
    if (!ctx.has_input(k) || ctx.in(k).dtype() != dt)
      return invalid_model("{}: input {} is missing or has another dtype than input 0", op, k);
  return visit<Families>(dt, op, [&](auto tr) -> Status {
    using T = decltype(tr);
    using C = typename T::compute;
    ir::Tensor& out = ctx.out(0);
    std::vector<std::vector<int64_t>> offs;
    for (size_t k = 0; k < ctx.inputs.size(); ++k)
      offs.push_back(broadcast_offsets(out.shape(), ctx.in(k).shape()));
    auto* po = out_data<T>(out);
    for (int64_t i = 0; i < out.numel(); ++i) {
      auto iu = static_cast<size_t>(i);
      C acc = T::load(in_data<T>(ctx.in(0))[offs[0][iu]]);
      for (size_t k = 1; k < ctx.inputs.size(); ++k)
        acc = static_cast<C>(fn(acc, T::load(in_data<T>(ctx.in(k))[offs[k][iu]])));
      po[i] = T::store(static_cast<C>(finish(acc)));
    }
    return Status::ok_status();
  });
}

// numpy maximum/minimum: NaN in either operand gives NaN.
template <bool kMax>
auto pick = [](auto acc, auto v) {
  using C = decltype(acc);
  if constexpr (kIsFloat<C>) {
    if (std::isnan(acc)) return acc;
    if (std::isnan(v)) return v;
  }
  if constexpr (kMax)
    return v > acc ? v : acc;
  else
    return v < acc ? v : acc;
};

auto identity_fn = [](auto acc) { return acc; };

// Cast to or from a narrow type (float8/float4, int4/uint4/int2/uint2),
// through double or int64: float -> int truncates and wraps as numpy's astype
// into ml_dtypes does; -> float8 rounds to nearest even, saturating or not.
Status cast_narrow(const ir::Tensor& in, ir::Tensor& out, bool saturate) {
  using ir::DType;
  const DType from = in.dtype(), to = out.dtype();
  const bool from_float = ir::is_float(from) || ir::is_narrow_float(from);
  for (int64_t i = 0; i < in.numel(); ++i) {
    if (auto mf = ir::minifloat_of(to)) {
      double v = from == DType::kUInt64 ? static_cast<double>(in.get_u64(i)) : in.get_f64(i);
      out.mutable_data()[i] = double_to_minifloat(*mf, v, saturate || to == DType::kFloat4E2M1);
    } else if (ir::is_sub_byte_integer(to)) {
      int64_t v = from_float ? float_to_int<int64_t>(in.get_f64(i)) : in.get_i64(i);
      out.mutable_data()[i] = ir::wrap_sub_byte(to, v);
    } else {
      // A standard output type from a narrow input.
      Status st = visit<kAll>(to, "Cast", [&](auto t) -> Status {
        using TO = decltype(t);
        using CO = typename TO::compute;
        auto* dst = out_data<TO>(out);
        if (from_float) dst[i] = TO::store(convert<CO>(in.get_f64(i)));
        else dst[i] = TO::store(convert<CO>(in.get_i64(i)));
        return Status::ok_status();
      });
      RETURN_IF_ERROR(st);
    }
  }
  return Status::ok_status();
}

bool is_narrow(ir::DType t) { return ir::is_narrow_float(t) || ir::is_sub_byte_integer(t); }

// Cast of every element of `in` into `out` (dtype and shape preallocated).
Status cast_tensor(const ir::Tensor& in, ir::Tensor& out, const char* op, bool saturate = true) {
  if (is_narrow(in.dtype()) || is_narrow(out.dtype())) return cast_narrow(in, out, saturate);
  return visit<kAll>(in.dtype(), op, [&](auto ti) -> Status {
    using TI = decltype(ti);
    return visit<kAll>(out.dtype(), op, [&](auto to) -> Status {
      using TO = decltype(to);
      using CO = typename TO::compute;
      const auto* src = in_data<TI>(in);
      auto* dst = out_data<TO>(out);
      for (int64_t i = 0; i < in.numel(); ++i) dst[i] = TO::store(convert<CO>(TI::load(src[i])));
      return Status::ok_status();
    });
  });
}

// The single value of a Clip bound input (a scalar or one-element tensor).
template <typename T>
Expected<typename T::compute> bound_value(const ir::Tensor& t, const char* what) {
  if (t.numel() != 1)
    return invalid_argument("Clip: {} must be a scalar, got shape {}", what,
                            ir::shape_to_string(t.shape()));
  return T::load(in_data<T>(t)[0]);
}

}  // namespace

Status run_Max(KernelContext& ctx) {
  return fold_inputs<kNumeric>(ctx, "Max", pick<true>, identity_fn);
}

Status run_Min(KernelContext& ctx) {
  return fold_inputs<kNumeric>(ctx, "Min", pick<false>, identity_fn);
}

Status run_Sum(KernelContext& ctx) {
  return fold_inputs<kNumeric>(
      ctx, "Sum",
      [](auto acc, auto v) {
        if constexpr (kIsInt<decltype(acc)>)
          return wrap_add(acc, v);
        else
          return acc + v;
      },
      identity_fn);
}

Status run_Mean(KernelContext& ctx) {
  // Integers: the exact (wrapping) sum divided by n, truncated toward zero.
  const auto n = static_cast<int64_t>(ctx.inputs.size());
  return fold_inputs<kNumeric>(
      ctx, "Mean",
      [](auto acc, auto v) {
        if constexpr (kIsInt<decltype(acc)>)
          return wrap_add(acc, v);
        else
          return acc + v;
      },
      [n](auto acc) {
        using C = decltype(acc);
        if constexpr (kIsInt<C>) {
          if constexpr (std::is_unsigned_v<C>)
            return static_cast<C>(static_cast<uint64_t>(acc) / static_cast<uint64_t>(n));
          else
            return static_cast<C>(static_cast<int64_t>(acc) / n);
        } else {
          return acc / static_cast<C>(n);
        }
      });
}

Status run_Where(KernelContext& ctx) {
  const ir::Tensor& cond = ctx.in(0);
  const ir::Tensor& x = ctx.in(1);
  const ir::Tensor& y = ctx.in(2);
  if (cond.dtype() != ir::DType::kBool)
    return invalid_model("Where: condition must be bool, got {}", ir::dtype_name(cond.dtype()));
  if (x.dtype() != y.dtype())
    return invalid_model("Where: X and Y have different dtypes {} and {}",
                         ir::dtype_name(x.dtype()), ir::dtype_name(y.dtype()));
  return visit<kAll>(x.dtype(), "Where", [&](auto tr) -> Status {
    using T = decltype(tr);
    ir::Tensor& out = ctx.out(0);
    auto oc = broadcast_offsets(out.shape(), cond.shape());
    auto ox = broadcast_offsets(out.shape(), x.shape());
    auto oy = broadcast_offsets(out.shape(), y.shape());
    const auto* pc = in_data<Bool>(cond);
    const auto* px = in_data<T>(x);
    const auto* py = in_data<T>(y);
    auto* po = out_data<T>(out);
    for (int64_t i = 0; i < out.numel(); ++i) {
      auto iu = static_cast<size_t>(i);
      po[i] = Bool::load(pc[oc[iu]]) ? px[ox[iu]] : py[oy[iu]];
    }
    return Status::ok_status();
  });
}

Status run_Clip(KernelContext& ctx) {
  // Bounds: inputs 1 (min) and 2 (max), or, for models of opset < 11, the
  // float attributes the importer kept as `_min` / `_max`. A missing bound
  // does not clip. min > max gives max everywhere (numpy.clip).
  const ir::Tensor& x = ctx.in(0);
  const auto* legacy_min = ctx.attrs().find("_min");
  const auto* legacy_max = ctx.attrs().find("_max");
  return visit<kNumeric>(x.dtype(), "Clip", [&](auto tr) -> Status {
    using T = decltype(tr);
    using C = typename T::compute;
    bool has_lo = false, has_hi = false;
    C lo{}, hi{};
    if (ctx.has_input(1)) {
      if (ctx.in(1).dtype() != x.dtype())
        return invalid_model("Clip: min has dtype {}, input has {}",
                             ir::dtype_name(ctx.in(1).dtype()), ir::dtype_name(x.dtype()));
      ASSIGN_OR_RETURN(lo, bound_value<T>(ctx.in(1), "min"));
      has_lo = true;
    } else if (legacy_min) {
      lo = convert<C>(legacy_min->f);
      has_lo = true;
    }
    if (ctx.has_input(2)) {
      if (ctx.in(2).dtype() != x.dtype())
        return invalid_model("Clip: max has dtype {}, input has {}",
                             ir::dtype_name(ctx.in(2).dtype()), ir::dtype_name(x.dtype()));
      ASSIGN_OR_RETURN(hi, bound_value<T>(ctx.in(2), "max"));
      has_hi = true;
    } else if (legacy_max) {
      hi = convert<C>(legacy_max->f);
      has_hi = true;
    }
    const auto* src = in_data<T>(x);
    auto* dst = out_data<T>(ctx.out(0));
    for (int64_t i = 0; i < x.numel(); ++i) {
      C v = T::load(src[i]);
      if (has_lo && v < lo) v = lo;  // NaN passes through both tests
      if (has_hi && v > hi) v = hi;
      dst[i] = T::store(v);
    }
    return Status::ok_status();
  });
}

// `saturate` (opset 19) matters only for float8 targets.
Status run_Cast(KernelContext& ctx) {
  return cast_tensor(ctx.in(0), ctx.out(0), "Cast", ctx.attrs().get_int("saturate", 1) != 0);
}

Status run_CastLike(KernelContext& ctx) {
  return cast_tensor(ctx.in(0), ctx.out(0), "CastLike", ctx.attrs().get_int("saturate", 1) != 0);
}

Status run_Identity(KernelContext& ctx) {
  ctx.out(0) = ctx.in(0);  // shares the bytes; tensors are copy-on-write
  return Status::ok_status();
}

Status run_Dropout(KernelContext& ctx) {
  // Inference: output = input, mask all true. training_mode = true is only
  // accepted with ratio 0 (then dropout is the identity too); random masking
  // is not supported.
  if (ctx.has_input(2)) {
    const ir::Tensor& t = ctx.in(2);
    if (t.numel() != 1 || t.dtype() != ir::DType::kBool)
      return invalid_model("Dropout: training_mode must be a bool scalar");
    if (t.get_i64(0) != 0) {
      double ratio = ctx.has_input(1) && ctx.in(1).numel() == 1 ? ctx.in(1).get_f64(0) : 0.5;
      if (ratio != 0.0)
        return unsupported(
            "Dropout: training_mode = true (random masking, ratio {}) is not supported", ratio);
    }
  }
  ctx.out(0) = ctx.in(0);
  if (ctx.outputs.size() > 1 && !ctx.out(1).empty_storage()) {
    // Opset >= 10: a bool mask; opset 7-9 (IR attribute `_mask_like_input`): ones of the input
    // dtype.
    ir::Tensor& mask = ctx.out(1);
    for (int64_t i = 0; i < mask.numel(); ++i) mask.set_i64(i, 1);
  }
  return Status::ok_status();
}

}  // namespace graphc::reference::kernels
