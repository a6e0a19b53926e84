// Shared by the cuDNN attention GPU test (cudnn_sdpa_gpu_test.cpp) and its
// benchmark (cudnn_sdpa_bench.cpp): an Executable holding one cuDNN sdpa
// launch (Q, K, V, [bias], [seq_len_q, seq_len_kv] inputs, O output, each a
// buffer its strides reach), fresh random inputs and a double-precision CPU
// reference. Needs only the runtime (no compiler libraries). Header-only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "engine_format/sdpa_params.h"
#include "runtime/executable.h"
#include "support/half.h"

namespace graphc::testing::sdpa {

using engine::SdpaParams;

inline constexpr uint64_t kWorkspaceLimit = uint64_t{256} << 20;

// [B, H, L, D] params in `dtype` (10 fp16, 16 bf16), scale 1/sqrt(D).
inline SdpaParams bhsd(int32_t dtype, int64_t b, int64_t h, int64_t lq, int64_t lk, int64_t d,
                       bool causal = false) {
  SdpaParams p;
  p.dtype = dtype;
  p.batch = b;
  p.heads = p.kv_heads = h;
  p.seq_q = lq;
  p.seq_kv = lk;
  p.head_dim = p.value_dim = d;
  p.q_strides = p.o_strides = engine::packed_bhsd_strides(h, lq, d);
  p.k_strides = p.v_strides = engine::packed_bhsd_strides(h, lk, d);
  p.scale = 1.0f / std::sqrt(static_cast<float>(d));
  p.causal = causal;
  return p;
}

// Re-derives the packed strides after heads, lengths or dims changed:
// [B, H, L, D] or, with `bshd`, [B, L, H*D] for every operand.
inline void repack(SdpaParams& p, bool bshd = false) {
  auto s = bshd ? engine::packed_bshd_strides : engine::packed_bhsd_strides;
  p.q_strides = s(p.heads, p.seq_q, p.head_dim);
  p.k_strides = s(p.kv_heads, p.seq_kv, p.head_dim);
  p.v_strides = s(p.kv_heads, p.seq_kv, p.value_dim);
  p.o_strides = s(p.heads, p.seq_q, p.value_dim);
}

// A bias broadcast over the dims where `full` is false: strides of a packed
// [B|1, H|1, Lq|1, Lk] tensor with 0 on the broadcast dims.
inline void set_bias(SdpaParams& p, bool batch, bool heads, bool queries) {
  p.has_bias = true;
  const int64_t lq = queries ? p.seq_q : 1, h = heads ? p.heads : 1;
  p.bias_strides = {batch ? h * lq * p.seq_kv : 0, heads ? lq * p.seq_kv : 0,
                    queries ? p.seq_kv : 0, 1};
}

inline float to_float(int32_t dtype, uint16_t bits) {
  return dtype == 16 ? bf16_bits_to_float(bits) : half_bits_to_float(bits);
}
inline uint16_t from_float(int32_t dtype, float f) {
  return dtype == 16 ? float_to_bf16_bits(f) : float_to_half_bits(f);
}

// The executable: inputs q, k, v, [bias], [seq_len_q, seq_len_kv], output o,
// and `launches` copies of the call (each writing its own output o, o1, ...;
// launch i uses `variants[i]` when given, else `p`).
inline runtime::Executable executable(const SdpaParams& p, int launches = 1,
                                      const std::vector<SdpaParams>& variants = {},
                                      uint64_t workspace = kWorkspaceLimit) {
  using Loc = runtime::TensorSlot::Location;
  runtime::Executable exe;
  auto slot = [&](const std::string& name, Loc loc, int64_t elements, int32_t dtype) {
    const int64_t elem = dtype == 6 ? 4 : 2;
    exe.tensors.push_back({name,
                           loc,
                           0,
                           std::max<int64_t>(elements, 1) * elem,
                           dtype,
                           {std::max<int64_t>(elements, 1)}});
    const auto index = static_cast<int32_t>(exe.tensors.size() - 1);
    (loc == Loc::kInput ? exe.inputs : exe.outputs).push_back(index);
    (loc == Loc::kInput ? exe.input_names : exe.output_names).push_back(name);
    return index;
  };
  std::vector<int32_t> in{slot("q", Loc::kInput, p.q_extent(), p.dtype),
                          slot("k", Loc::kInput, p.k_extent(), p.dtype),
                          slot("v", Loc::kInput, p.v_extent(), p.dtype)};
  if (p.has_bias) in.push_back(slot("bias", Loc::kInput, p.bias_extent(), p.dtype));
  if (p.has_seq_lens) {
    in.push_back(slot("seq_len_q", Loc::kInput, p.batch, 6));
    in.push_back(slot("seq_len_kv", Loc::kInput, p.batch, 6));
  }
  for (int i = 0; i < launches; ++i) {
    const SdpaParams& lp =
        i < static_cast<int>(variants.size()) ? variants[static_cast<size_t>(i)] : p;
    runtime::Launch l;
    l.args = in;
    l.args.push_back(
        slot(i == 0 ? "o" : "o" + std::to_string(i), Loc::kOutput, lp.o_extent(), lp.dtype));
    l.op = runtime::SdpaLaunch{lp, workspace};
    l.name = "attention_" + std::to_string(i);
    l.kind = "cudnn sdpa";
    exe.launches.push_back(std::move(l));
  }
  return exe;
}

// Fresh random inputs: Q, K, V in [-1, 1], the bias in [-2, 2] (stored in the
// call's dtype, so the reference reads exactly what the GPU reads), sequence
// lengths in [1, L] (at least one key per row: no fully masked row).
struct HostData {
  std::vector<uint16_t> q, k, v, bias;
  std::vector<int32_t> seq_q, seq_kv;
};

inline HostData random_data(const SdpaParams& p, std::mt19937& rng) {
  HostData h;
  auto fill = [&](std::vector<uint16_t>& out, int64_t n, float lo, float hi) {
    std::uniform_real_distribution<float> u(lo, hi);
    out.resize(static_cast<size_t>(std::max<int64_t>(n, 1)));
    for (auto& x : out) x = from_float(p.dtype, u(rng));
  };
  fill(h.q, p.q_extent(), -1, 1);
  fill(h.k, p.k_extent(), -1, 1);
  fill(h.v, p.v_extent(), -1, 1);
  if (p.has_bias) fill(h.bias, p.bias_extent(), -2, 2);
  if (p.has_seq_lens) {
    std::uniform_int_distribution<int32_t> lq(1, static_cast<int32_t>(p.seq_q));
    std::uniform_int_distribution<int32_t> lk(1, static_cast<int32_t>(p.seq_kv));
    for (int64_t b = 0; b < p.batch; ++b) {
      // The first batch keeps every row and key (the padding must not touch it).
      h.seq_q.push_back(b == 0 ? static_cast<int32_t>(p.seq_q) : lq(rng));
      h.seq_kv.push_back(b == 0 ? static_cast<int32_t>(p.seq_kv) : lk(rng));
    }
  }
  return h;
}

template <typename T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// Host bytes per input binding, in the executable's order.
inline std::vector<std::string> input_bytes(const SdpaParams& p, const HostData& h) {
  std::vector<std::string> in{bytes_of(h.q), bytes_of(h.k), bytes_of(h.v)};
  if (p.has_bias) in.push_back(bytes_of(h.bias));
  if (p.has_seq_lens) {
    in.push_back(bytes_of(h.seq_q));
    in.push_back(bytes_of(h.seq_kv));
  }
  return in;
}

inline int64_t offset(const SdpaParams::Strides& s, int64_t b, int64_t h, int64_t i, int64_t d) {
  return b * s[0] + h * s[1] + i * s[2] + d * s[3];
}

// True where O is defined: rows before seq_len_q[b].
inline bool row_defined(const SdpaParams& p, const HostData& h, int64_t b, int64_t i) {
  return !p.has_seq_lens || i < h.seq_q[static_cast<size_t>(b)];
}

// O in double, in logical [B, H, Lq, Dv] order (rows past seq_len_q are 0).
inline std::vector<double> reference(const SdpaParams& p, const HostData& h) {
  std::vector<double> o(static_cast<size_t>(p.batch * p.heads * p.seq_q * p.value_dim), 0.0);
  const int64_t group = p.heads / p.kv_heads;
  std::vector<double> s(static_cast<size_t>(p.seq_kv));
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t hh = 0; hh < p.heads; ++hh) {
      const int64_t g = hh / group;
      for (int64_t i = 0; i < p.seq_q; ++i) {
        if (!row_defined(p, h, b, i)) continue;
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < p.seq_kv; ++j) {
          bool keep = !(p.causal && j > i);
          if (p.has_seq_lens) keep = keep && j < h.seq_kv[static_cast<size_t>(b)];
          if (!keep) {
            s[static_cast<size_t>(j)] = -std::numeric_limits<double>::infinity();
            continue;
          }
          double dot = 0;
          for (int64_t d = 0; d < p.head_dim; ++d)
            dot += static_cast<double>(to_float(
                       p.dtype, h.q[static_cast<size_t>(offset(p.q_strides, b, hh, i, d))])) *
                   static_cast<double>(to_float(
                       p.dtype, h.k[static_cast<size_t>(offset(p.k_strides, b, g, j, d))]));
          double v = static_cast<double>(p.scale) * dot;
          if (p.has_bias)
            v += static_cast<double>(to_float(
                p.dtype, h.bias[static_cast<size_t>(offset(p.bias_strides, b, hh, i, j))]));
          s[static_cast<size_t>(j)] = v;
          mx = std::max(mx, v);
        }
        double sum = 0;
        for (double& x : s) {
          x = std::isinf(x) ? 0.0 : std::exp(x - mx);
          sum += x;
        }
        double* out = &o[static_cast<size_t>(((b * p.heads + hh) * p.seq_q + i) * p.value_dim)];
        for (int64_t j = 0; j < p.seq_kv; ++j) {
          const double w = s[static_cast<size_t>(j)] / sum;
          if (w == 0) continue;
          for (int64_t d = 0; d < p.value_dim; ++d)
            out[d] += w * static_cast<double>(to_float(
                              p.dtype, h.v[static_cast<size_t>(offset(p.v_strides, b, g, j, d))]));
        }
      }
    }
  return o;
}

// ||gpu - ref||_2 / ||ref||_2 over the defined rows, O read through its
// strides; NaN and inf in the GPU's output make it infinite.
struct Comparison {
  double rel_l2 = 0;
  double max_abs = 0;
  int64_t non_finite = 0;
};

inline Comparison compare(const SdpaParams& p, const HostData& h, const std::vector<double>& ref,
                          const std::string& out_bytes) {
  Comparison c;
  const auto* got = reinterpret_cast<const uint16_t*>(out_bytes.data());
  double num = 0, den = 0;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t hh = 0; hh < p.heads; ++hh)
      for (int64_t i = 0; i < p.seq_q; ++i) {
        if (!row_defined(p, h, b, i)) continue;
        for (int64_t d = 0; d < p.value_dim; ++d) {
          const double r =
              ref[static_cast<size_t>(((b * p.heads + hh) * p.seq_q + i) * p.value_dim + d)];
          const double g = static_cast<double>(
              to_float(p.dtype, got[static_cast<size_t>(offset(p.o_strides, b, hh, i, d))]));
          if (!std::isfinite(g)) {
            ++c.non_finite;
            continue;
          }
          num += (g - r) * (g - r);
          den += r * r;
          c.max_abs = std::max(c.max_abs, std::fabs(g - r));
        }
      }
  c.rel_l2 = c.non_finite ? std::numeric_limits<double>::infinity()
                          : std::sqrt(num / std::max(den, 1e-300));
  return c;
}

}  // namespace graphc::testing::sdpa
