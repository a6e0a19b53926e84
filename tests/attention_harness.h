// Problems for the fused attention kernel (emit/cuda_attention.h) and their
// double-precision CPU reference, shared by the GPU test
// (tests/gpu/attention_kernel_gpu_test.cpp), the benchmark's --check mode
// (bench/attention_sweep.cpp) and the host emulator (tests/emu/attention_emu.cpp).
// Header-only, no Catch2 and no GPU: a case describes sizes, layouts and mask
// shape; make_attention_inputs draws fresh random inputs (never zeros) laid
// out with the case's strides; attention_reference computes
//   softmax(softcap(scale·QKᵀ) + mask, causal) · V
// in double, with fully masked rows giving 0 (ONNX 1.23's convention).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "emit/cuda_attention.h"
#include "support/half.h"

namespace graphc::testing::attn {

using emit::AttentionKernelSpec;
using emit::AttentionParams;
using Mask = AttentionKernelSpec::Mask;

enum class MaskShape { kB11K, kB1QK, k11QK, kBHQK };

struct AttentionCase {
  std::string name;
  AttentionKernelSpec spec;  // tile included
  int batch = 1, q_heads = 1, kv_heads = 1, q_len = 1, kv_len = 1;
  bool bshd_in = false;   // Q/K/V as [B, L, H*D] instead of [B, H, L, D]
  bool bshd_out = false;  // O as [B, L, H*Dv]
  MaskShape mask_shape = MaskShape::kBHQK;
  float scale = 0;  // 0: 1/sqrt(D)
  float softcap = 30.0f;
  int causal_offset = 0;
  // Extra mask content: rows with every key masked (-inf / false), and large
  // finite negatives (-10000, finfo.min of fp16 and of fp32) scattered in.
  bool fully_masked_rows = false;
  bool large_negatives = false;
};

inline uint16_t to_bits(ir::DType t, float f) {
  return t == ir::DType::kBFloat16 ? float_to_bf16_bits(f) : float_to_half_bits(f);
}
inline float from_bits(ir::DType t, uint16_t b) {
  return t == ir::DType::kBFloat16 ? bf16_bits_to_float(b) : half_bits_to_float(b);
}

struct AttentionInputs {
  AttentionParams p{};
  std::vector<uint16_t> q, k, v;  // storage bits, laid out with p's strides
  std::vector<uint8_t> mask;      // raw bytes of the mask tensor (mask_dtype), or empty
  int64_t o_elems = 0;            // elements the output buffer needs
  std::vector<bool> masked_row;   // [B*Hq*Lq]: every key masked (reference output 0)
};

inline size_t mask_elem_size(const AttentionKernelSpec& s) {
  return s.mask_dtype == ir::DType::kFloat32 ? 4 : s.mask_dtype == ir::DType::kUInt8 || s.mask_dtype == ir::DType::kBool ? 1 : 2;
}

// The mask's value at (b, h, i, j) as the reference sees it: additive in
// natural units, boolean as 0 / -inf.
inline double mask_value(const AttentionCase& c, const AttentionInputs& in, int b, int h, int i, int j) {
  const AttentionParams& p = in.p;
  const int64_t off = b * p.m_stride_b + h * p.m_stride_h + i * p.m_stride_q + j * p.m_stride_k;
  const uint8_t* base = in.mask.data();
  switch (c.spec.mask_dtype) {
    case ir::DType::kFloat32: {
      float f;
      std::memcpy(&f, base + off * 4, 4);
      return f;
    }
    case ir::DType::kFloat16:
    case ir::DType::kBFloat16: {
      uint16_t u;
      std::memcpy(&u, base + off * 2, 2);
      return from_bits(c.spec.mask_dtype, u);
    }
    default: return base[off] != 0 ? 0.0 : -std::numeric_limits<double>::infinity();
  }
}

inline AttentionInputs make_attention_inputs(const AttentionCase& c, std::mt19937& rng) {
  const AttentionKernelSpec& s = c.spec;
  AttentionInputs in;
  AttentionParams& p = in.p;
  p.batch = c.batch;
  p.q_heads = c.q_heads;
  p.kv_heads = c.kv_heads;
  p.q_len = c.q_len;
  p.kv_len = c.kv_len;
  p.causal_offset = c.causal_offset;
  p.scale = c.scale != 0 ? c.scale : 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  p.softcap = c.softcap;
  auto strides = [&](int64_t& sb, int64_t& sh, int64_t& ss, int heads, int len, int dim, bool bshd) {
    if (bshd)
      emit::set_attention_strides_bshd(sb, sh, ss, heads, len, dim);
    else
      emit::set_attention_strides_bhsd(sb, sh, ss, heads, len, dim);
  };
  strides(p.q_stride_b, p.q_stride_h, p.q_stride_s, c.q_heads, c.q_len, s.head_dim, c.bshd_in);
  strides(p.k_stride_b, p.k_stride_h, p.k_stride_s, c.kv_heads, c.kv_len, s.head_dim, c.bshd_in);
  strides(p.v_stride_b, p.v_stride_h, p.v_stride_s, c.kv_heads, c.kv_len, s.head_dim_v, c.bshd_in);
  strides(p.o_stride_b, p.o_stride_h, p.o_stride_s, c.q_heads, c.q_len, s.head_dim_v, c.bshd_out);
  in.o_elems = int64_t{c.batch} * c.q_heads * c.q_len * s.head_dim_v;
  // Normal(0, 1) inputs: scores of a few units after scaling, so the
  // softmax has real peaks; never exact zeros.
  std::normal_distribution<float> nd(0.0f, 1.0f);
  auto fill = [&](std::vector<uint16_t>& dst, int64_t n) {
    dst.resize(static_cast<size_t>(n));
    for (auto& x : dst) {
      float f = nd(rng);
      if (f == 0.0f) f = 0.5f;
      x = to_bits(s.dtype, f);
    }
  };
  fill(in.q, int64_t{c.batch} * c.q_heads * c.q_len * s.head_dim);
  fill(in.k, int64_t{c.batch} * c.kv_heads * c.kv_len * s.head_dim);
  fill(in.v, int64_t{c.batch} * c.kv_heads * c.kv_len * s.head_dim_v);

  if (s.mask != Mask::kNone) {
    int mb = c.batch, mh = c.q_heads, mq = c.q_len;
    switch (c.mask_shape) {
      case MaskShape::kB11K: mh = 1, mq = 1; break;
      case MaskShape::kB1QK: mh = 1; break;
      case MaskShape::k11QK: mb = 1, mh = 1; break;
      case MaskShape::kBHQK: break;
    }
    const int64_t mk = c.kv_len;
    p.m_stride_k = 1;
    p.m_stride_q = mq == 1 ? 0 : mk;
    p.m_stride_h = mh == 1 ? 0 : int64_t{mq} * mk;
    p.m_stride_b = mb == 1 ? 0 : int64_t{mh} * mq * mk;
    const int64_t n = int64_t{mb} * mh * mq * mk;
    const size_t es = mask_elem_size(s);
    in.mask.assign(static_cast<size_t>(n) * es, 0);
    std::uniform_real_distribution<float> ud(0.0f, 1.0f);
    const float big[] = {-10000.0f, -65504.0f, -std::numeric_limits<float>::max()};
    for (int64_t e = 0; e < n; ++e) {
      const int64_t row = e / mk;  // flat (b, h, q) of the mask
      const bool kill = c.fully_masked_rows && (row % 5 == 2);
      if (s.mask == Mask::kBoolean) {
        in.mask[e] = kill ? 0 : (ud(rng) < 0.7f ? 1 : 0);
        continue;
      }
      float f = -3.0f * ud(rng);
      if (ud(rng) < 0.15f) f = -std::numeric_limits<float>::infinity();
      if (c.large_negatives && ud(rng) < 0.3f) {
        f = big[static_cast<int>(ud(rng) * 3) % 3];
        if (s.mask_dtype != ir::DType::kFloat32 && f < -65504.0f) f = -65504.0f;
      }
      if (kill) f = -std::numeric_limits<float>::infinity();
      if (c.large_negatives && row % 7 == 3)  // a whole row of finfo.min: uniform, not 0
        f = s.mask_dtype == ir::DType::kFloat32 ? -std::numeric_limits<float>::max() : -65504.0f;
      if (s.mask_dtype == ir::DType::kFloat32) {
        std::memcpy(&in.mask[e * 4], &f, 4);
      } else {
        const uint16_t u = to_bits(s.mask_dtype, f);
        std::memcpy(&in.mask[e * 2], &u, 2);
      }
    }
  }
  return in;
}

// The reference output as [B, Hq, Lq, Dv] doubles; `masked_row` gets the rows
// whose every key is masked (their output is exactly 0).
inline std::vector<double> attention_reference(const AttentionCase& c, AttentionInputs& in) {
  const AttentionKernelSpec& s = c.spec;
  const AttentionParams& p = in.p;
  const int D = s.head_dim, Dv = s.head_dim_v;
  std::vector<double> out(static_cast<size_t>(in.o_elems), 0.0);
  in.masked_row.assign(static_cast<size_t>(c.batch) * c.q_heads * c.q_len, false);
  std::vector<double> x(static_cast<size_t>(c.kv_len)), qrow(static_cast<size_t>(D));
  const int group = c.q_heads / c.kv_heads;
  for (int b = 0; b < c.batch; ++b)
    for (int h = 0; h < c.q_heads; ++h) {
      const int kh = h / group;
      for (int i = 0; i < c.q_len; ++i) {
        for (int d = 0; d < D; ++d)
          qrow[d] = from_bits(s.dtype, in.q[b * p.q_stride_b + h * p.q_stride_h + i * p.q_stride_s + d]);
        double mx = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < c.kv_len; ++j) {
          const uint16_t* kr = &in.k[b * p.k_stride_b + kh * p.k_stride_h + j * p.k_stride_s];
          double dot = 0;
          for (int d = 0; d < D; ++d) dot += qrow[d] * from_bits(s.dtype, kr[d]);
          double v = dot * static_cast<double>(p.scale);
          if (s.softcap) v = p.softcap * std::tanh(v / p.softcap);
          if (s.mask != Mask::kNone) v += mask_value(c, in, b, h, i, j);
          if (s.causal && static_cast<int64_t>(j) > static_cast<int64_t>(i) + c.causal_offset)
            v = -std::numeric_limits<double>::infinity();
          x[j] = v;
          mx = std::max(mx, v);
        }
        double* o = &out[((static_cast<size_t>(b) * c.q_heads + h) * c.q_len + i) * Dv];
        if (mx == -std::numeric_limits<double>::infinity()) {
          in.masked_row[(static_cast<size_t>(b) * c.q_heads + h) * c.q_len + i] = true;
          continue;
        }
        double sum = 0;
        for (int j = 0; j < c.kv_len; ++j) sum += (x[j] = std::exp(x[j] - mx));
        for (int j = 0; j < c.kv_len; ++j) {
          if (x[j] == 0) continue;
          const uint16_t* vr = &in.v[b * p.v_stride_b + kh * p.v_stride_h + j * p.v_stride_s];
          const double w = x[j] / sum;
          for (int d = 0; d < Dv; ++d) o[d] += w * from_bits(s.dtype, vr[d]);
        }
      }
    }
  return out;
}

struct Comparison {
  double rel_l2 = 0;
  int64_t unwritten = 0;       // non-finite (poison left, or NaN/inf produced)
  int64_t masked_nonzero = 0;  // fully masked rows not exactly 0
  bool ok(double tol) const { return unwritten == 0 && masked_nonzero == 0 && rel_l2 < tol; }
};

// `out` holds the kernel's output bits laid out with p's O strides.
inline Comparison compare_attention(const AttentionCase& c, const AttentionInputs& in,
                                    const std::vector<double>& ref, const std::vector<uint16_t>& out) {
  const AttentionParams& p = in.p;
  const int Dv = c.spec.head_dim_v;
  Comparison r;
  double num = 0, den = 0;
  for (int b = 0; b < c.batch; ++b)
    for (int h = 0; h < c.q_heads; ++h)
      for (int i = 0; i < c.q_len; ++i) {
        const size_t row = (static_cast<size_t>(b) * c.q_heads + h) * c.q_len + i;
        for (int d = 0; d < Dv; ++d) {
          const double got = from_bits(c.spec.dtype, out[b * p.o_stride_b + h * p.o_stride_h + i * p.o_stride_s + d]);
          const double want = ref[row * Dv + d];
          if (!std::isfinite(got)) {
            ++r.unwritten;
            continue;
          }
          if (in.masked_row[row] && got != 0.0) ++r.masked_nonzero;
          num += (got - want) * (got - want);
          den += want * want;
        }
      }
  r.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return r;
}

inline double attention_tolerance(ir::DType t) { return t == ir::DType::kBFloat16 ? 1e-2 : 2e-3; }

// The correctness cases of the issue: head dims, D != Dv, odd lengths,
// cross attention, causal with Lq != Lk, broadcast masks, boolean masks,
// fully masked rows, GQA and MQA, [B, L, H*D] layouts, large negatives, both
// dtypes. Each uses the spec's default tile; run_all_tiles in the callers
// repeats a few over every tile variant.
inline std::vector<AttentionCase> attention_cases() {
  std::vector<AttentionCase> cs;
  auto base = [](std::string name, ir::DType dt, int d, int dv, int b, int hq, int hkv, int lq, int lk) {
    AttentionCase c;
    c.name = std::move(name);
    c.spec.dtype = dt;
    c.spec.head_dim = d;
    c.spec.head_dim_v = dv;
    c.batch = b;
    c.q_heads = hq;
    c.kv_heads = hkv;
    c.q_len = lq;
    c.kv_len = lk;
    return c;
  };
  const auto f16 = ir::DType::kFloat16, bf16 = ir::DType::kBFloat16;
  for (int d : {32, 64, 80, 96, 128, 256})
    for (auto dt : {f16, bf16}) cs.push_back(base("head dim " + std::to_string(d), dt, d, d, 2, 3, 3, 77, 129));
  cs.push_back(base("D 64, Dv 128", f16, 64, 128, 1, 2, 2, 100, 70));
  cs.push_back(base("D 128, Dv 64", f16, 128, 64, 1, 2, 2, 70, 100));
  cs.push_back(base("D 40, Dv 72", bf16, 40, 72, 1, 2, 1, 33, 65));
  for (int l : {1, 7, 77, 129, 1000}) {
    cs.push_back(base("self, length " + std::to_string(l), f16, 64, 64, 1, 2, 2, l, l));
    auto c = base("causal, length " + std::to_string(l), f16, 128, 128, 1, 2, 2, l, l);
    c.spec.causal = true;
    cs.push_back(c);
  }
  cs.push_back(base("cross Lq 1, Lk 1000", f16, 64, 64, 2, 2, 2, 1, 1000));
  cs.push_back(base("cross Lq 300, Lk 1", f16, 64, 64, 2, 2, 2, 300, 1));
  cs.push_back(base("cross Lq 130, Lk 77", bf16, 128, 128, 2, 2, 2, 130, 77));
  for (auto [lq, lk, off] : {std::tuple{77, 200, 0}, {200, 77, 0}, {77, 200, 123}, {200, 77, -123}, {129, 129, 5}}) {
    auto c = base("causal Lq " + std::to_string(lq) + " Lk " + std::to_string(lk) + " offset " + std::to_string(off),
                  f16, 64, 64, 1, 2, 2, lq, lk);
    c.spec.causal = true;
    c.causal_offset = off;
    cs.push_back(c);
  }
  const std::pair<MaskShape, const char*> shapes[] = {{MaskShape::kB11K, "[B,1,1,Lk]"},
                                                      {MaskShape::kB1QK, "[B,1,Lq,Lk]"},
                                                      {MaskShape::k11QK, "[1,1,Lq,Lk]"},
                                                      {MaskShape::kBHQK, "[B,H,Lq,Lk]"}};
  for (auto [shape, sname] : shapes)
    for (auto mdt : {f16, bf16, ir::DType::kFloat32}) {
      auto c = base(std::string("additive mask ") + sname + " " + std::string(ir::dtype_name(mdt)), f16, 64, 64, 2,
                    2, 2, 77, 150);
      c.spec.mask = Mask::kAdditive;
      c.spec.mask_dtype = mdt;
      c.mask_shape = shape;
      cs.push_back(c);
    }
  for (auto [shape, sname] : shapes) {
    auto c = base(std::string("boolean mask ") + sname, bf16, 128, 128, 2, 2, 2, 90, 140);
    c.spec.mask = Mask::kBoolean;
    c.spec.mask_dtype = ir::DType::kUInt8;
    c.mask_shape = shape;
    cs.push_back(c);
  }
  for (auto kind : {Mask::kAdditive, Mask::kBoolean}) {
    auto c = base(kind == Mask::kAdditive ? "fully masked rows (additive -inf)" : "fully masked rows (boolean)", f16,
                  64, 64, 2, 2, 2, 70, 100);
    c.spec.mask = kind;
    c.spec.mask_dtype = kind == Mask::kAdditive ? f16 : ir::DType::kUInt8;
    c.mask_shape = MaskShape::kB1QK;
    c.fully_masked_rows = true;
    cs.push_back(c);
  }
  {
    auto c = base("causal offset -50: first rows fully masked", f16, 64, 64, 1, 2, 2, 100, 100);
    c.spec.causal = true;
    c.causal_offset = -50;
    cs.push_back(c);
  }
  for (auto mdt : {f16, ir::DType::kFloat32}) {
    auto c = base(std::string("large negatives ") + std::string(ir::dtype_name(mdt)), f16, 64, 64, 2, 2, 2, 64, 200);
    c.spec.mask = Mask::kAdditive;
    c.spec.mask_dtype = mdt;
    c.mask_shape = MaskShape::kB1QK;
    c.large_negatives = true;
    cs.push_back(c);
  }
  cs.push_back(base("GQA 8/2", f16, 64, 64, 2, 8, 2, 77, 130));
  cs.push_back(base("MQA 8/1", bf16, 128, 128, 2, 8, 1, 77, 130));
  {
    auto c = base("[B,L,H*D] in and out", f16, 64, 64, 2, 4, 2, 77, 130);
    c.bshd_in = c.bshd_out = true;
    cs.push_back(c);
    c = base("[B,H,L,D] in, [B,L,H*Dv] out, causal", bf16, 96, 96, 2, 4, 4, 130, 130);
    c.bshd_out = true;
    c.spec.causal = true;
    cs.push_back(c);
  }
  {
    auto c = base("softcap 30 with additive mask", f16, 64, 64, 1, 2, 2, 77, 130);
    c.spec.softcap = true;
    c.spec.mask = Mask::kAdditive;
    c.spec.mask_dtype = f16;
    c.scale = 0.5f;
    cs.push_back(c);
    c = base("softcap 5, causal", bf16, 128, 128, 1, 2, 2, 129, 129);
    c.spec.softcap = true;
    c.spec.causal = true;
    c.softcap = 5.0f;
    cs.push_back(c);
  }
  {
    auto c = base("negative scale", f16, 64, 64, 1, 2, 2, 77, 77);
    c.scale = -0.125f;
    cs.push_back(c);
  }
  for (auto& c : cs) c.spec.tile = emit::default_attention_tile(c.spec, 90, c.q_len, c.kv_len);
  return cs;
}

}  // namespace graphc::testing::attn
