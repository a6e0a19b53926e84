// Reference kernels for reductions: Reduce*, ArgMax/ArgMin, Softmax/
// LogSoftmax/Hardmax, TopK.
//
// Values are read in one of three exact "value classes": double for float
// dtypes (fp16/bf16/fp32 widen exactly; float sums accumulate in double),
// int64 for signed integers and bool, uint64 for unsigned integers. Integer
// sums and products wrap like the dtype's own arithmetic would (computed in
// uint64 to avoid signed overflow) and are exact; they never pass through
// double. Results that are inherently real (L2, LogSum, LogSumExp) are
// computed in double and converted with Tensor::set_f64.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <type_traits>

#include "ir/reduction_util.h"
#include "reference/kernels.h"
#include "reference/reduce_slices.h"

namespace graphc::reference::kernels {

using ir::DType;
using ir::Shape;
using ir::Tensor;

namespace {

template <typename V>
V get(const Tensor& t, int64_t i) {
  if constexpr (std::is_same_v<V, double>)
    return t.get_f64(i);
  else if constexpr (std::is_same_v<V, int64_t>)
    return t.get_i64(i);
  else
    return t.get_u64(i);
}
void put(Tensor& t, int64_t i, double v) { t.set_f64(i, v); }
void put(Tensor& t, int64_t i, int64_t v) { t.set_i64(i, v); }
void put(Tensor& t, int64_t i, uint64_t v) { t.set_u64(i, v); }

// Calls f(V{}) with V the value class of `t`.
template <typename F>
decltype(auto) with_value_class(DType t, F&& f) {
  if (ir::is_float(t)) return f(double{});
  if (ir::is_unsigned_integer(t)) return f(uint64_t{});
  return f(int64_t{});
}

// Wrapping integer arithmetic (two's complement, like the dtype's own ops);
// exact arithmetic for doubles.
template <typename V>
V add(V a, V b) {
  if constexpr (std::is_same_v<V, int64_t>)
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else
    return a + b;
}
template <typename V>
V mul(V a, V b) {
  if constexpr (std::is_same_v<V, int64_t>)
    return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else
    return a * b;
}

// Smallest / largest value of an integer dtype (bool: 0 / 1).
int64_t int_lowest(DType t) {
  switch (t) {
    case DType::kInt8: return std::numeric_limits<int8_t>::min();
    case DType::kInt16: return std::numeric_limits<int16_t>::min();
    case DType::kInt32: return std::numeric_limits<int32_t>::min();
    case DType::kInt64: return std::numeric_limits<int64_t>::min();
    default: return 0;  // bool and unsigned
  }
}
uint64_t int_highest(DType t) {
  switch (t) {
    case DType::kInt8: return static_cast<uint64_t>(std::numeric_limits<int8_t>::max());
    case DType::kInt16: return static_cast<uint64_t>(std::numeric_limits<int16_t>::max());
    case DType::kInt32: return static_cast<uint64_t>(std::numeric_limits<int32_t>::max());
    case DType::kInt64: return static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    case DType::kUInt8: return std::numeric_limits<uint8_t>::max();
    case DType::kUInt16: return std::numeric_limits<uint16_t>::max();
    case DType::kUInt32: return std::numeric_limits<uint32_t>::max();
    case DType::kUInt64: return std::numeric_limits<uint64_t>::max();
    case DType::kBool: return 1;
    default: return 0;
  }
}

// Runs `fn(values)` on the values of every reduced slice; fn gets a
// std::vector<V> (V the input's value class) and returns what to store.
template <typename Fn>
Status run_reduce(KernelContext& ctx, Fn fn) {
  const Tensor& x = ctx.in(0);
  std::vector<int64_t> axes;
  if (ctx.has_input(1)) axes = ctx.in(1).to_i64_vector();
  ASSIGN_OR_RETURN(auto mask,
                   ir::reduce_axes_mask(ctx.attrs(), ctx.has_input(1) ? &axes : nullptr, x.rank()));
  Slices s = slices_for(x.shape(), mask);
  Tensor& out = ctx.out(0);
  if (static_cast<int64_t>(s.base.size()) != out.numel())
    return internal_error("reduction produces {} values for an output of {}", s.base.size(),
                          out.numel());
  with_value_class(x.dtype(), [&](auto tag) {
    using V = decltype(tag);
    std::vector<V> vals(s.slice.size());
    for (size_t o = 0; o < s.base.size(); ++o) {
      for (size_t j = 0; j < s.slice.size(); ++j) vals[j] = get<V>(x, s.base[o] + s.slice[j]);
      put(out, static_cast<int64_t>(o), fn(vals));
    }
  });
  return Status::ok_status();
}

template <typename V>
V sum_of(const std::vector<V>& v) {
  V acc{0};
  for (V e : v) acc = add(acc, e);
  return acc;
}
template <typename V>
double sum_f64(const std::vector<V>& v) {
  double acc = 0;
  for (V e : v) acc += static_cast<double>(e);
  return acc;
}

}  // namespace

Status run_ReduceSum(KernelContext& ctx) {
  return run_reduce(ctx, [](const auto& v) { return sum_of(v); });
}

Status run_ReduceMean(KernelContext& ctx) {
  return run_reduce(ctx, [](const auto& v) {
    using V = typename std::decay_t<decltype(v)>::value_type;
    if constexpr (std::is_same_v<V, double>) {
      return sum_of(v) / static_cast<double>(v.size());  // empty: 0/0 = NaN
    } else {
      // Integer mean truncates toward zero (ONNX: mean in real numbers, cast back).
      if (v.empty()) return V{0};
      return static_cast<V>(sum_of(v) / static_cast<V>(v.size()));
    }
  });
}

Status run_ReduceMax(KernelContext& ctx) {
  DType t = ctx.in(0).dtype();
  return run_reduce(ctx, [t](const auto& v) {
    using V = typename std::decay_t<decltype(v)>::value_type;
    V best;
    if constexpr (std::is_same_v<V, double>)
      best = -std::numeric_limits<double>::infinity();
    else if constexpr (std::is_same_v<V, int64_t>)
      best = int_lowest(t);
    else
      best = 0;
    for (V e : v) {
      if constexpr (std::is_same_v<V, double>)
        if (std::isnan(e)) return e;  // NaN propagates
      best = std::max(best, e);
    }
    return best;
  });
}

Status run_ReduceMin(KernelContext& ctx) {
  DType t = ctx.in(0).dtype();
  return run_reduce(ctx, [t](const auto& v) {
    using V = typename std::decay_t<decltype(v)>::value_type;
    V best;
    if constexpr (std::is_same_v<V, double>)
      best = std::numeric_limits<double>::infinity();
    else
      best = static_cast<V>(int_highest(t));
    for (V e : v) {
      if constexpr (std::is_same_v<V, double>)
        if (std::isnan(e)) return e;
      best = std::min(best, e);
    }
    return best;
  });
}

Status run_ReduceProd(KernelContext& ctx) {
  return run_reduce(ctx, [](const auto& v) {
    using V = typename std::decay_t<decltype(v)>::value_type;
    V acc{1};
    for (V e : v) acc = mul(acc, e);
    return acc;
  });
}

Status run_ReduceL1(KernelContext& ctx) {
  return run_reduce(ctx, [](const auto& v) {
    using V = typename std::decay_t<decltype(v)>::value_type;
    V acc{0};
    for (V e : v) {
      if constexpr (std::is_same_v<V, uint64_t>)
        acc = add(acc, e);
      else
        acc = add(acc, e < 0 ? mul(e, V{-1}) : e);
    }
    return acc;
  });
}

Status run_ReduceL2(KernelContext& ctx) {
  return run_reduce(ctx, [](const auto& v) {
    double acc = 0;
    for (auto e : v) acc += static_cast<double>(e) * static_cast<double>(e);
    return std::sqrt(acc);
  });
}

Status run_ReduceLogSum(KernelContext& ctx) {
  return run_reduce(ctx, [](const auto& v) { return std::log(sum_f64(v)); });  // empty: -inf
}

Status run_ReduceLogSumExp(KernelContext& ctx) {
  return run_reduce(ctx, [](const auto& v) {
    double mx = -std::numeric_limits<double>::infinity();
    for (auto e : v) {
      auto d = static_cast<double>(e);
      if (std::isnan(d)) return d;
      mx = std::max(mx, d);
    }
    if (!std::isfinite(mx)) return mx;  // empty or all -inf: -inf; any +inf: +inf
    double acc = 0;
    for (auto e : v) acc += std::exp(static_cast<double>(e) - mx);
    return mx + std::log(acc);
  });
}

Status run_ReduceSumSquare(KernelContext& ctx) {
  return run_reduce(ctx, [](const auto& v) {
    using V = typename std::decay_t<decltype(v)>::value_type;
    V acc{0};
    for (V e : v) acc = add(acc, mul(e, e));
    return acc;
  });
}

namespace {

// ArgMax / ArgMin: the index of the first (or, with select_last_index, the
// last) extreme value along `axis`. A NaN counts as the extreme (numpy).
Status run_arg(KernelContext& ctx, bool is_max) {
  const Tensor& x = ctx.in(0);
  ASSIGN_OR_RETURN(int64_t axis, ir::single_axis(ctx.attrs(), 0, x.rank()));
  bool last = ctx.attrs().get_int("select_last_index", 0) != 0;
  ir::AxisSplit s = ir::split_at(x.shape(), axis);
  if (s.n == 0) return invalid_argument("axis {} is empty", axis);
  Tensor& out = ctx.out(0);
  with_value_class(x.dtype(), [&](auto tag) {
    using V = decltype(tag);
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        int64_t base = o * s.n * s.inner + i;
        V best = get<V>(x, base);
        int64_t best_j = 0;
        for (int64_t j = 1; j < s.n; ++j) {
          V e = get<V>(x, base + j * s.inner);
          bool take;
          if constexpr (std::is_same_v<V, double>) {
            if (std::isnan(best)) break;
            if (std::isnan(e)) {
              best = e;
              best_j = j;
              break;
            }
          }
          take = is_max ? (e > best || (last && e == best)) : (e < best || (last && e == best));
          if (take) {
            best = e;
            best_j = j;
          }
        }
        out.set_i64(o * s.inner + i, best_j);
      }
  });
  return Status::ok_status();
}

enum class SoftKind { kSoftmax, kLogSoftmax, kHardmax };

// Softmax family over the [outer, n, inner] view (ir::softmax_split), in
// double, stabilised by subtracting the slice's max.
Status run_soft(KernelContext& ctx, SoftKind kind) {
  const Tensor& x = ctx.in(0);
  ASSIGN_OR_RETURN(ir::AxisSplit s, ir::softmax_split(ctx.attrs(), x.shape()));
  Tensor& out = ctx.out(0);
  std::vector<double> v(static_cast<size_t>(s.n));
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      int64_t base = o * s.n * s.inner + i;
      if (s.n == 0) continue;
      double mx = -std::numeric_limits<double>::infinity();
      int64_t arg = 0;
      for (int64_t j = 0; j < s.n; ++j) {
        v[static_cast<size_t>(j)] = x.get_f64(base + j * s.inner);
        if (v[static_cast<size_t>(j)] > mx || j == 0) {
          mx = v[static_cast<size_t>(j)];
          arg = j;
        }
      }
      if (kind == SoftKind::kHardmax) {
        for (int64_t j = 0; j < s.n; ++j) out.set_f64(base + j * s.inner, j == arg ? 1.0 : 0.0);
        continue;
      }
      double sum = 0;
      for (double e : v) sum += std::exp(e - mx);
      for (int64_t j = 0; j < s.n; ++j) {
        double shifted = v[static_cast<size_t>(j)] - mx;
        double y = kind == SoftKind::kSoftmax ? std::exp(shifted) / sum : shifted - std::log(sum);
        out.set_f64(base + j * s.inner, y);
      }
    }
  return Status::ok_status();
}

}  // namespace

Status run_ArgMax(KernelContext& ctx) { return run_arg(ctx, true); }
Status run_ArgMin(KernelContext& ctx) { return run_arg(ctx, false); }
Status run_Softmax(KernelContext& ctx) { return run_soft(ctx, SoftKind::kSoftmax); }
Status run_LogSoftmax(KernelContext& ctx) { return run_soft(ctx, SoftKind::kLogSoftmax); }
Status run_Hardmax(KernelContext& ctx) { return run_soft(ctx, SoftKind::kHardmax); }

// TopK: per slice along `axis`, the K largest (or smallest) values with their
// indices; equal values keep the lower index first. NaN ranks above every
// number. sorted = 0 allows any order; graphc always returns sorted output.
Status run_TopK(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  ASSIGN_OR_RETURN(int64_t axis, ir::single_axis(ctx.attrs(), -1, x.rank()));
  bool largest = ctx.attrs().get_int("largest", 1) != 0;
  auto kv = ctx.in(1).to_i64_vector();
  ir::AxisSplit s = ir::split_at(x.shape(), axis);
  if (kv.size() != 1 || kv[0] < 0 || kv[0] > s.n)
    return invalid_argument("K must be one value in [0, {}]", s.n);
  int64_t k = kv[0];
  Tensor& values = ctx.out(0);
  Tensor* indices = ctx.outputs.size() > 1 && !ctx.out(1).empty_storage() ? &ctx.out(1) : nullptr;
  with_value_class(x.dtype(), [&](auto tag) {
    using V = decltype(tag);
    auto less = [](V a, V b) {  // total order, NaN largest
      if constexpr (std::is_same_v<V, double>) {
        if (std::isnan(a)) return false;
        if (std::isnan(b)) return true;
      }
      return a < b;
    };
    std::vector<V> v(static_cast<size_t>(s.n));
    std::vector<int64_t> order(static_cast<size_t>(s.n));
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        int64_t base = o * s.n * s.inner + i;
        for (int64_t j = 0; j < s.n; ++j) v[static_cast<size_t>(j)] = get<V>(x, base + j * s.inner);
        std::iota(order.begin(), order.end(), int64_t{0});
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
          V va = v[static_cast<size_t>(a)], vb = v[static_cast<size_t>(b)];
          return largest ? less(vb, va) : less(va, vb);
        });
        int64_t out_base = o * k * s.inner + i;
        for (int64_t j = 0; j < k; ++j) {
          int64_t src = order[static_cast<size_t>(j)];
          put(values, out_base + j * s.inner, v[static_cast<size_t>(src)]);
          if (indices) indices->set_i64(out_base + j * s.inner, src);
        }
      }
  });
  return Status::ok_status();
}

}  // namespace graphc::reference::kernels
