// The general attention kernel's CUDA source (see cuda_attention_generic.h):
// the device prelude, the kernel template and the block of constexpr constants
// and typedefs that specialises it. The spec's validation, launch shapes, tile
// choice and the mapping from ir::AttentionParams are in
// cuda_attention_generic_spec.cpp; the shared-memory geometry both use is in
// cuda_attention_generic_internal.h.
//
// The generated source is a fixed kernel template specialised by a block of
// constexpr constants and typedefs, so the same spec always gives the same
// bytes; the optional pointer parameters a spec lacks become null locals that
// only compile-time-false branches name.
//
// Shared memory (fp32 words), in order:
//   sQ     [block_q][kQS]          Q rows · sqrt(scale), zero past D and Lq
//   region [block_k][kKS] K tile, then [block_k][kVS] V tile; after the key
//          loop, with key_warps > 1, the merge area [key_warps][block_q][kMS]
//          (O, then max as a double, sum, live) aliases it
//   sP     [warps][rows_per_warp][32]  the tile's probabilities per warp
//   sStat  [block_q][4]            final row max (a double), sum, live (mode-3 pass)
// kKS is the padded head dim with kKS/4 odd: lane l reads K row l as float4s,
// 8 lanes of a quarter-warp phase hit 8 different 16-byte bank groups.
#include "emit/cuda/cuda_attention_generic.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "emit/cuda/attention_range.h"
#include "emit/cuda/cuda_attention_generic_internal.h"

namespace graphc::emit {

using ir::DType;
using Mask = GenericAttentionSpec::Mask;

namespace {

std::string storage_type(DType t) {
  switch (t) {
    case DType::kFloat32: return "float";
    case DType::kFloat16: return "__half";
    case DType::kBFloat16: return "__nv_bfloat16";
    default: return "unsigned char";
  }
}

// __launch_bounds__'s CTAs per SM: a register budget per thread from the
// per-lane state (O accumulators, dot products and row statistics per row).
// A bare __launch_bounds__(threads) lets ptxas pick its own target, which
// spills a few words at ~80 registers; an explicit budget does not.
int min_blocks_per_sm(const GenericAttentionSpec& s) {
  const Geometry g = geometry(s);
  const int rows = s.tile.rows_per_warp;
  int est = 56 + rows * (g.vc * g.vw + 6);
  if (s.mask == GenericAttentionSpec::Mask::kAdditive) est += 2 * rows;  // double row maxima
  if (s.qk_output) est += 8;
  if (s.past || s.present_key || s.present_value) est += 8;
  if (s.window) est += 4;
  if (s.nonpad) est += 4;
  const int target = est <= 100 ? 128 : est <= 150 ? 168 : 255;
  return std::max(1, 65536 / (s.tile.warps() * 32 * target));
}

constexpr const char* kCudaPrelude = R"(#include <cuda_fp16.h>
#include <cuda_bf16.h>
#define G_DEV __device__ __forceinline__
G_DEV float* smem_base() {
  extern __shared__ __align__(16) float g_attn_generic_smem[];
  return g_attn_generic_smem;
}
G_DEV float ldf(const float* p) { return *p; }
G_DEV float ldf(const __half* p) { return __half2float(*p); }
G_DEV float ldf(const __nv_bfloat16* p) { return __bfloat162float(*p); }
// 16 bytes of global memory (16-byte aligned) as floats.
G_DEV void ldg_vec(const float* p, float (&v)[4]) {
  const float4 t = *reinterpret_cast<const float4*>(p);
  v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
}
G_DEV void ldg_vec(const __half* p, float (&v)[8]) {
  const uint4 t = *reinterpret_cast<const uint4*>(p);
  const __half2* h = reinterpret_cast<const __half2*>(&t);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(h[i]);
    v[2 * i] = f.x, v[2 * i + 1] = f.y;
  }
}
G_DEV void ldg_vec(const __nv_bfloat16* p, float (&v)[8]) {
  const uint4 t = *reinterpret_cast<const uint4*>(p);
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&t);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(h[i]);
    v[2 * i] = f.x, v[2 * i + 1] = f.y;
  }
}
G_DEV void stf(float* p, float v) { *p = v; }
G_DEV void stf(__half* p, float v) { *p = __float2half_rn(v); }
G_DEV void stf(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
// Boolean masks: 1 where attended; additive masks: the value.
G_DEV float ld_mask(const unsigned char* p) { return *p != 0 ? 1.0f : 0.0f; }
G_DEV float ld_mask(const float* p) { return *p; }
G_DEV float ld_mask(const __half* p) { return __half2float(*p); }
G_DEV float ld_mask(const __nv_bfloat16* p) { return __bfloat162float(*p); }
// N consecutive floats of shared memory (4·N-byte aligned).
template <int N> G_DEV void lds(const float* p, float (&v)[N]) {
  if constexpr (N == 4) {
    const float4 t = *reinterpret_cast<const float4*>(p);
    v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
  } else if constexpr (N == 2) {
    const float2 t = *reinterpret_cast<const float2*>(p);
    v[0] = t.x, v[1] = t.y;
  } else {
    v[0] = p[0];
  }
}
// Butterfly reductions: every lane ends with the same bits.
G_DEV float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
G_DEV double warp_max(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
G_DEV float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
G_DEV float gmax(float a, float b) { return fmaxf(a, b); }
G_DEV double gmax(double a, double b) { return fmax(a, b); }
G_DEV bool warp_any(bool v) { return __any_sync(0xffffffffu, v) != 0; }
G_DEV float neg_inf() { return __int_as_float(0xff800000); }
// 1/x within an ulp (approximation + one Newton step), without the
// out-of-line slow path of IEEE division (its call costs a stack frame).
G_DEV float rcp(float x) {
  float r;
  asm("rcp.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
  return fmaf(fmaf(-x, r, 1.0f), r, r);
}
)";

// The kernel body over the constants and typedefs of the header block.
constexpr const char* kKernelTemplate = R"(
G_KERNEL {
  float* const smem = smem_base();
  float* const sQ = smem;
  float* const sK = sQ + kBQ * kQS;
  float* const sV = sK + kBK * kKS;
  float* const sP = sK + kRegion;
  float* const sStat = sP + kWarps * kRW * 32;
  G_NULL_ARGS
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wq = warp / kWK, wk = warp - (warp / kWK) * kWK;
  const int h = blockIdx.y, b = blockIdx.z;
  const int q0 = blockIdx.x * kBQ;
  const int T = p.past_len + p.kv_len;
  const int kvh = h / (p.q_heads / p.kv_heads);

  // present_key / present_value = concat(past, new): the T rows of
  // (b, kvh) are split over the warps of the CTAs of kvh's query heads.
  if (kPresentK || kPresentV) {
    const int group = p.q_heads / p.kv_heads;
    const int nw = group * (int)gridDim.x * kWarps;
    const elem_t* const ks = k + b * p.k_stride_b + kvh * p.k_stride_h;
    const elem_t* const vs = v + b * p.v_stride_b + kvh * p.v_stride_h;
    for (int t = ((h - kvh * group) * (int)gridDim.x + (int)blockIdx.x) * kWarps + warp; t < T; t += nw) {
      const bool from_past = kPast && t < p.past_len;
      if (kPresentK) {
        const elem_t* src = from_past ? past_key + b * p.pk_stride_b + kvh * p.pk_stride_h + (long long)t * p.pk_stride_s
                                      : ks + (long long)(t - p.past_len) * p.k_stride_s;
        elem_t* dst = present_key + b * p.prk_stride_b + kvh * p.prk_stride_h + (long long)t * p.prk_stride_s;
        for (int d = lane; d < kD; d += 32) dst[d] = src[d];
      }
      if (kPresentV) {
        const elem_t* src = from_past ? past_value + b * p.pv_stride_b + kvh * p.pv_stride_h + (long long)t * p.pv_stride_s
                                      : vs + (long long)(t - p.past_len) * p.v_stride_s;
        elem_t* dst = present_value + b * p.prv_stride_b + kvh * p.prv_stride_h + (long long)t * p.prv_stride_s;
        for (int d = lane; d < kDV; d += 32) dst[d] = src[d];
      }
    }
  }

  const elem_t* const kb = k + b * p.k_stride_b + kvh * p.k_stride_h;
  const elem_t* const vb = v + b * p.v_stride_b + kvh * p.v_stride_h;
  const elem_t* const pkb = kPast ? past_key + b * p.pk_stride_b + kvh * p.pk_stride_h : nullptr;
  const elem_t* const pvb = kPast ? past_value + b * p.pv_stride_b + kvh * p.pv_stride_h : nullptr;
  const mask_t* const mb = kMaskKind != 0 ? mask + b * p.m_stride_b + h * p.m_stride_h : nullptr;
  elem_t* const yb = y + b * p.y_stride_b + h * p.y_stride_h;
  elem_t* const qkb = kQk ? qk + b * p.qk_stride_b + h * p.qk_stride_h : nullptr;

  // The causal / window offset of this batch: key j <= i + off.
  long long off = p.causal_offset, npb = 0;
  if (kNonpad) {
    npb = nonpad[b];
    off = npb - p.q_len;
  }
  const int rows_here = p.q_len - q0 < kBQ ? p.q_len - q0 : kBQ;

  // Keys [kbeg, kend) some row of this CTA may attend; all of them when the
  // scores are written (modes 0-2 write masked scores too).
  int kbeg = 0, kend = T;
  if (!kQk) {
    const long long ilo = q0, ihi = (long long)q0 + rows_here - 1;
    long long lo = 0, hi = T;
    if (kMaskKind != 0 && p.mask_len < hi) hi = p.mask_len;
    if (kNonpad && npb < hi) hi = npb;
    if (kCausal && ihi + off + 1 < hi) hi = ihi + off + 1;
    if (kWindow && p.right_window >= 0 && ihi + off + p.right_window + 1 < hi) hi = ihi + off + p.right_window + 1;
    if (kWindow && p.left_window >= 0 && ilo + off - p.left_window > lo) lo = ilo + off - p.left_window;
    if (rows_here <= 0) hi = 0;
    if (lo > T) lo = T;
    if (hi < lo) hi = lo;
    kbeg = (int)lo;
    kend = (int)hi;
  }

  // Q rows · sqrt(scale) (NaN for a negative scale, as ONNX's reference).
  const float root = p.scale_sqrt;
  {
    const elem_t* const qb = q + b * p.q_stride_b + h * p.q_stride_h;
    for (int idx = tid; idx < kBQ * kDP; idx += kThreads) {
      const int r = idx / kDP, d = idx - (idx / kDP) * kDP, i = q0 + r;
      float x = 0.0f;
      if (d < kD && i < p.q_len) x = ldf(qb + (long long)i * p.q_stride_s + d) * root;
      sQ[r * kQS + d] = x;
    }
  }

  // Stages keys [k0, k0 + kBK) (zeros from `lim` on) into sK and, with
  // `with_v`, their values into sV, as fp32: coalesced along the head dim,
  // kLoadBatch independent loads in flight per thread, then their stores
  // (the batch loop stays rolled: unrolled, its addresses cost ~40 registers).
  auto load_rows = [&](float* dst, int dst_stride, int dp, int dreal, const elem_t* past_base,
                       long long past_stride, const elem_t* new_base, long long new_stride, int k0, int lim,
                       bool vec) {
    if (vec) {
      // 16-byte loads (kVec elements): rows of dreal == dp, a multiple of
      // kVec, 16-byte aligned (checked per CTA by the caller).
      const int cols = dp / kVec, total = kBK * cols;
#pragma unroll 1
      for (int base = tid; base < total; base += kThreads * kVecBatch) {
        float x[kVecBatch][kVec];
#pragma unroll
        for (int u = 0; u < kVecBatch; ++u) {
          const int idx = base + u * kThreads;
          const int r = idx / cols, c = idx - (idx / cols) * cols, j = k0 + r;
          if (idx < total && j < lim) {
            ldg_vec((kPast && j < p.past_len) ? past_base + (long long)j * past_stride + c * kVec
                                              : new_base + (long long)(j - p.past_len) * new_stride + c * kVec,
                    x[u]);
          } else {
#pragma unroll
            for (int e = 0; e < kVec; ++e) x[u][e] = 0.0f;
          }
        }
#pragma unroll
        for (int u = 0; u < kVecBatch; ++u) {
          const int idx = base + u * kThreads;
          const int r = idx / cols, c = idx - (idx / cols) * cols;
          if (idx < total) {
            float* const d = dst + r * dst_stride + c * kVec;
#pragma unroll
            for (int e = 0; e < kVec; ++e) d[e] = x[u][e];
          }
        }
      }
      return;
    }
    const int total = kBK * dp;
#pragma unroll 1
    for (int base = tid; base < total; base += kThreads * kLoadBatch) {
      float x[kLoadBatch];
#pragma unroll
      for (int u = 0; u < kLoadBatch; ++u) {
        const int idx = base + u * kThreads;
        const int r = idx / dp, d = idx - (idx / dp) * dp, j = k0 + r;
        x[u] = 0.0f;
        if (idx < total && d < dreal && j < lim)
          x[u] = ldf((kPast && j < p.past_len) ? past_base + (long long)j * past_stride + d
                                               : new_base + (long long)(j - p.past_len) * new_stride + d);
      }
#pragma unroll
      for (int u = 0; u < kLoadBatch; ++u) {
        const int idx = base + u * kThreads;
        const int r = idx / dp, d = idx - (idx / dp) * dp;
        if (idx < total) dst[r * dst_stride + d] = x[u];
      }
    }
  };
  auto aligned = [](const elem_t* ptr, long long stride) {
    return ((unsigned long long)ptr & 15ull) == 0 && stride % kVec == 0;
  };
  const bool vec_k = kD % kVec == 0 && aligned(kb, p.k_stride_s) && (!kPast || aligned(pkb, p.pk_stride_s));
  const bool vec_v = kDV % kVec == 0 && aligned(vb, p.v_stride_s) && (!kPast || aligned(pvb, p.pv_stride_s));
  auto load_tile = [&](int k0, int lim, bool with_v) {
    load_rows(sK, kKS, kDP, kD, pkb, p.pk_stride_s, kb, p.k_stride_s, k0, lim, vec_k);
    if (with_v) load_rows(sV, kVS, kDVP, kDV, pvb, p.pv_stride_s, vb, p.v_stride_s, k0, lim, vec_v);
  };

  // Lane's key (row kr of the tile) against the warp's kRW query rows.
  auto tile_dots = [&](float (&dot)[kRW]) {
    const float* const kr = sK + (wk * 32 + lane) * kKS;
    const float* const qr = sQ + wq * kRW * kQS;
#pragma unroll
    for (int r = 0; r < kRW; ++r) dot[r] = 0.0f;
#pragma unroll 2
    for (int d = 0; d < kDP; d += 4) {
      float kv[4];
      lds<4>(kr + d, kv);
#pragma unroll
      for (int r = 0; r < kRW; ++r) {
        float qv[4];
        lds<4>(qr + r * kQS + d, qv);
        dot[r] += qv[0] * kv[0];
        dot[r] += qv[1] * kv[1];
        dot[r] += qv[2] * kv[2];
        dot[r] += qv[3] * kv[3];
      }
    }
  };

  // The score s (after scale and softcap) and the bias of (i, j): the mask
  // term, then -inf added for each of causal, window and nonpad that masks j.
  const float inv_cap = kSoftcap ? rcp(p.softcap) : 0.0f;
  auto score_of = [&](float dot) {
    float s = dot * root;
    if (kSoftcap) s = p.softcap * tanhf(s * inv_cap);
    return s;
  };
  auto bias_of = [&](int i, int j) {
    float bias = 0.0f;
    if (kMaskKind != 0) {
      if (j >= p.mask_len) {
        bias = neg_inf();
      } else {
        const float mv = ld_mask(mb + (long long)i * p.m_stride_q + (long long)j * p.m_stride_k);
        bias = kMaskKind == 2 ? (mv != 0.0f ? 0.0f : neg_inf()) : mv;
      }
    }
    const long long diff = (long long)i + off - j;
    if (kCausal && diff < 0) bias += neg_inf();
    if (kWindow) {
      const bool ok = (p.left_window < 0 || diff <= p.left_window) && (p.right_window < 0 || -diff <= p.right_window);
      if (!ok) bias += neg_inf();
    }
    if (kNonpad && (long long)j >= npb) bias += neg_inf();
    return bias;
  };

  xt m[kRW];
  float l[kRW], o[kRW][kVC][kVW];
  bool live[kRW];
#pragma unroll
  for (int r = 0; r < kRW; ++r) {
    m[r] = neg_inf();
    l[r] = 0.0f;
    live[r] = false;
#pragma unroll
    for (int c = 0; c < kVC; ++c)
#pragma unroll
      for (int e = 0; e < kVW; ++e) o[r][c][e] = 0.0f;
  }
  float* const myP = sP + warp * kRW * 32;

  for (int k0 = kbeg; k0 < kend; k0 += kBK) {
    __syncthreads();  // Q staged; every warp is done with the previous tile
    load_tile(k0, kend, true);
    __syncthreads();
    float dot[kRW];
    tile_dots(dot);
    const int j = k0 + wk * 32 + lane;
#pragma unroll
    for (int r = 0; r < kRW; ++r) {
      const int i = q0 + wq * kRW + r;
      const bool valid = i < p.q_len && j < kend;
      const float s = score_of(dot[r]);
      xt x = neg_inf();
      bool unmasked = false;
      if (valid) {
        const float bias = bias_of(i, j);
        x = (xt)s + (xt)bias;
        unmasked = bias != neg_inf();
        if (kQk && kQkMode < 3) stf(qkb + (long long)i * p.qk_stride_q + j, kQkMode == 2 ? (float)x : s);
      }
      live[r] = warp_any(unmasked) || live[r];
      // Online softmax; fmax skips NaN, which then reaches l and O through expf.
      const xt mnew = gmax(m[r], warp_max(x));
      const xt muse = mnew == neg_inf() ? (xt)0 : mnew;
      const float alpha = expf((float)(m[r] - muse));
      const float pj = expf((float)(x - muse));
      l[r] = l[r] * alpha + pj;
#pragma unroll
      for (int c = 0; c < kVC; ++c)
#pragma unroll
        for (int e = 0; e < kVW; ++e) o[r][c][e] *= alpha;
      m[r] = mnew;
      myP[r * 32 + lane] = pj;
    }
    __syncwarp();
    // O += P·V: lane owns kVW consecutive outputs per 32·kVW-wide chunk.
    const float* const vt = sV + wk * 32 * kVS;
#pragma unroll 2
    for (int jj = 0; jj < 32; ++jj) {
      float pr[kRW];
#pragma unroll
      for (int r = 0; r < kRW; ++r) pr[r] = myP[r * 32 + jj];
#pragma unroll
      for (int c = 0; c < kVC; ++c) {
        const int e0 = kVW * lane + 32 * kVW * c;
        if (kVC * 32 * kVW == kDVP || e0 < kDVP) {
          float vv[kVW];
          lds<kVW>(vt + jj * kVS + e0, vv);
#pragma unroll
          for (int r = 0; r < kRW; ++r)
#pragma unroll
            for (int e = 0; e < kVW; ++e) o[r][c][e] += pr[r] * vv[e];
        }
      }
    }
  }

  // Y = O / sum, 0 on rows with every key masked (and rows summing to 0).
  float lsum[kRW];
#pragma unroll
  for (int r = 0; r < kRW; ++r) lsum[r] = warp_sum(l[r]);
  if (kWK == 1) {
#pragma unroll
    for (int r = 0; r < kRW; ++r) {
      const int row = wq * kRW + r, i = q0 + row;
      if (kQk && kQkMode == 3 && lane == 0) {
        *reinterpret_cast<double*>(sStat + row * 4) = (double)m[r];
        sStat[row * 4 + 2] = lsum[r];
        sStat[row * 4 + 3] = live[r] ? 1.0f : 0.0f;
      }
      if (i < p.q_len) {
        const float inv = lsum[r] == 0.0f ? 0.0f : rcp(lsum[r]);
        elem_t* const yr = yb + (long long)i * p.y_stride_s;
#pragma unroll
        for (int c = 0; c < kVC; ++c)
#pragma unroll
          for (int e = 0; e < kVW; ++e) {
            const int idx = kVW * lane + 32 * kVW * c + e;
            if (idx < kDV) stf(yr + idx, live[r] ? o[r][c][e] * inv : 0.0f);
          }
      }
    }
  } else {
    // Merge the key warps' (O, max, sum, live) through shared memory over the
    // K/V tiles, then one warp per row combines and writes.
    __syncthreads();
    float* const mg = sK;
#pragma unroll
    for (int r = 0; r < kRW; ++r) {
      float* const dst = mg + (wk * kBQ + wq * kRW + r) * kMS;
#pragma unroll
      for (int c = 0; c < kVC; ++c) {
        const int e0 = kVW * lane + 32 * kVW * c;
        if (kVC * 32 * kVW == kDVP || e0 < kDVP)
#pragma unroll
          for (int e = 0; e < kVW; ++e) dst[e0 + e] = o[r][c][e];
      }
      if (lane == 0) {
        *reinterpret_cast<double*>(dst + kDVP) = (double)m[r];
        dst[kDVP + 2] = lsum[r];
        dst[kDVP + 3] = live[r] ? 1.0f : 0.0f;
      }
    }
    __syncthreads();
    for (int row = warp; row < kBQ; row += kWarps) {
      double mx = neg_inf();
      bool lv = false;
#pragma unroll
      for (int w = 0; w < kWK; ++w) {
        mx = gmax(mx, *reinterpret_cast<const double*>(mg + (w * kBQ + row) * kMS + kDVP));
        lv = lv || mg[(w * kBQ + row) * kMS + kDVP + 3] != 0.0f;
      }
      const double muse = mx == neg_inf() ? 0.0 : mx;
      float fac[kWK];
      float sum = 0.0f;
#pragma unroll
      for (int w = 0; w < kWK; ++w) {
        fac[w] = expf((float)(*reinterpret_cast<const double*>(mg + (w * kBQ + row) * kMS + kDVP) - muse));
        sum += mg[(w * kBQ + row) * kMS + kDVP + 2] * fac[w];
      }
      if (kQk && kQkMode == 3 && lane == 0) {
        *reinterpret_cast<double*>(sStat + row * 4) = mx;
        sStat[row * 4 + 2] = sum;
        sStat[row * 4 + 3] = lv ? 1.0f : 0.0f;
      }
      const int i = q0 + row;
      if (i < p.q_len) {
        const float inv = sum == 0.0f ? 0.0f : rcp(sum);
        elem_t* const yr = yb + (long long)i * p.y_stride_s;
        for (int e = lane; e < kDV; e += 32) {
          float acc = 0.0f;
#pragma unroll
          for (int w = 0; w < kWK; ++w) acc += mg[(w * kBQ + row) * kMS + e] * fac[w];
          stf(yr + e, lv ? acc * inv : 0.0f);
        }
      }
    }
  }

  // Mode 3: the probabilities need the final max and sum, so Q·Kᵀ runs again
  // over every key (the same arithmetic as above, so the same scores).
  if (kQk && kQkMode == 3) {
    __syncthreads();
    xt rm[kRW];
    float rinv[kRW];
    bool rlive[kRW];
#pragma unroll
    for (int r = 0; r < kRW; ++r) {
      const int row = wq * kRW + r;
      const double mx = *reinterpret_cast<const double*>(sStat + row * 4);
      rm[r] = mx == neg_inf() ? (xt)0 : (xt)mx;
      rinv[r] = sStat[row * 4 + 2] == 0.0f ? 0.0f : rcp(sStat[row * 4 + 2]);
      rlive[r] = sStat[row * 4 + 3] != 0.0f;
    }
    for (int k0 = 0; k0 < T; k0 += kBK) {
      __syncthreads();
      load_tile(k0, T, false);
      __syncthreads();
      float dot[kRW];
      tile_dots(dot);
      const int j = k0 + wk * 32 + lane;
#pragma unroll
      for (int r = 0; r < kRW; ++r) {
        const int i = q0 + wq * kRW + r;
        if (i < p.q_len && j < T) {
          const xt x = (xt)score_of(dot[r]) + (xt)bias_of(i, j);
          const float pr = rlive[r] ? expf((float)(x - rm[r])) * rinv[r] : 0.0f;
          stf(qkb + (long long)i * p.qk_stride_q + j, pr);
        }
      }
    }
  }
}
)";

}  // namespace

std::string detail::generic_attention_portable_source(const GenericAttentionSpec& spec,
                                                      const std::string& entry,
                                                      const std::string& sized_params) {
  const Geometry g = geometry(spec);
  const GenericAttentionTile& t = spec.tile;
  const bool has_mask = spec.mask != Mask::kNone;
  // Pointer parameters in generic_attention_kernel_args order; absent ones
  // become null locals (G_NULL_ARGS) so the template can name them.
  std::string params, nulls;
  auto arg = [&](bool present, const std::string& decl, const std::string& name) {
    if (present)
      params += decl + " " + name + ", ";
    else
      nulls += decl + " const " + name + " = nullptr; ";
  };
  arg(true, "const elem_t* __restrict__", "q");
  arg(true, "const elem_t* __restrict__", "k");
  arg(true, "const elem_t* __restrict__", "v");
  arg(has_mask, "const mask_t* __restrict__", "mask");
  arg(spec.past, "const elem_t* __restrict__", "past_key");
  arg(spec.past, "const elem_t* __restrict__", "past_value");
  arg(spec.nonpad, "const long long* __restrict__", "nonpad");
  arg(true, "elem_t* __restrict__", "y");
  arg(spec.present_key, "elem_t*", "present_key");
  arg(spec.present_value, "elem_t*", "present_value");
  arg(spec.qk_output, "elem_t* __restrict__", "qk");
  std::string out = fmt::format(
      R"(// Run-time arguments (emit/cuda/cuda_attention_generic.h GenericAttentionParams: same fields, same order).
struct GenericAttentionParams {{
  long long q_stride_b, q_stride_h, q_stride_s;
  long long k_stride_b, k_stride_h, k_stride_s;
  long long v_stride_b, v_stride_h, v_stride_s;
  long long pk_stride_b, pk_stride_h, pk_stride_s;
  long long pv_stride_b, pv_stride_h, pv_stride_s;
  long long y_stride_b, y_stride_h, y_stride_s;
  long long prk_stride_b, prk_stride_h, prk_stride_s;
  long long prv_stride_b, prv_stride_h, prv_stride_s;
  long long qk_stride_b, qk_stride_h, qk_stride_q;
  long long m_stride_b, m_stride_h, m_stride_q, m_stride_k;
  int batch, q_heads, kv_heads, q_len, kv_len, past_len;
  int mask_len, causal_offset, left_window, right_window;
  float scale_sqrt, softcap;
}};
static_assert(sizeof(GenericAttentionParams) == 296, "GenericAttentionParams ABI");
{sized}typedef {elem} elem_t;
typedef {mask_t} mask_t;
typedef {xt} xt;  // scores + bias and row maxima: double with an additive mask (a large finite fill keeps the scores)
constexpr int kD = {d}, kDV = {dv}, kDP = {dp}, kDVP = {dvp};
constexpr int kWQ = {wq}, kWK = {wk}, kRW = {rw}, kWarps = {warps}, kThreads = {threads};
constexpr int kBQ = {bq}, kBK = {bk};
constexpr int kQS = {qs}, kKS = {ks}, kVS = {vs}, kMS = {ms};  // shared row strides (floats)
constexpr int kVW = {vw}, kVC = {vc};  // P·V: floats per lane per chunk, chunks
constexpr int kRegion = {region};  // floats of the K/V tiles (and the merge area); {total} bytes in all
constexpr int kMaskKind = {mask_kind};  // 0 none, 1 additive, 2 boolean
constexpr bool kCausal = {causal}, kSoftcap = {softcap}, kWindow = {window}, kPast = {past}, kNonpad = {nonpad};
constexpr bool kPresentK = {pk}, kPresentV = {pv}, kQk = {qk};
constexpr int kQkMode = {qk_mode};
constexpr int kLoadBatch = 8;  // scalar global loads in flight per thread while staging
constexpr int kVec = 16 / (int)sizeof(elem_t), kVecBatch = 4;  // 16-byte loads: elements, in flight
static_assert(kBQ == kWQ * kRW && kBK == 32 * kWK && kWarps == kWQ * kWK, "tile");
#define G_NULL_ARGS {nulls}
#define G_KERNEL extern "C" __global__ void __launch_bounds__({threads}, {minb}) {entry}( \
    {params}{last_param})
)",
      fmt::arg("elem", storage_type(spec.dtype)),
      fmt::arg("mask_t", has_mask ? storage_type(spec.mask_dtype) : "unsigned char"),
      fmt::arg("xt", spec.mask == Mask::kAdditive ? "double" : "float"),
      fmt::arg("d", spec.head_dim), fmt::arg("dv", spec.head_dim_v), fmt::arg("dp", g.dp),
      fmt::arg("dvp", g.dvp), fmt::arg("wq", t.row_warps), fmt::arg("wk", t.key_warps),
      fmt::arg("rw", t.rows_per_warp), fmt::arg("warps", t.warps()),
      fmt::arg("threads", t.warps() * 32), fmt::arg("bq", t.block_q()), fmt::arg("bk", t.block_k()),
      fmt::arg("qs", g.qs), fmt::arg("ks", g.ks), fmt::arg("vs", g.vs), fmt::arg("ms", g.ms),
      fmt::arg("vw", g.vw), fmt::arg("vc", g.vc), fmt::arg("region", g.region_floats),
      fmt::arg("total", g.total_bytes),
      fmt::arg("mask_kind", spec.mask == Mask::kNone       ? 0
                            : spec.mask == Mask::kAdditive ? 1
                                                           : 2),
      fmt::arg("causal", spec.causal ? "true" : "false"),
      fmt::arg("softcap", spec.softcap ? "true" : "false"),
      fmt::arg("window", spec.window ? "true" : "false"),
      fmt::arg("past", spec.past ? "true" : "false"),
      fmt::arg("nonpad", spec.nonpad ? "true" : "false"),
      fmt::arg("pk", spec.present_key ? "true" : "false"),
      fmt::arg("pv", spec.present_value ? "true" : "false"),
      fmt::arg("qk", spec.qk_output ? "true" : "false"), fmt::arg("qk_mode", spec.qk_mode),
      fmt::arg("nulls", nulls), fmt::arg("minb", min_blocks_per_sm(spec)), fmt::arg("entry", entry),
      fmt::arg("params", params), fmt::arg("sized", sized_params),
      fmt::arg("last_param",
               sized_params.empty() ? "const GenericAttentionParams p" : "const graphc_sizes sz"));
  out += sized_params.empty() ? std::string(kKernelTemplate)
                              : with_params_from_sizes(kKernelTemplate, "GenericAttentionParams");
  out += "#undef G_KERNEL\n#undef G_NULL_ARGS\n";
  return out;
}

std::string generic_attention_kernel_source(const GenericAttentionSpec& spec,
                                            const std::string& entry,
                                            const std::string& sized_params) {
  std::string out =
      "// graphc general attention (emit/cuda/cuda_attention_generic.cpp): " + entry + "\n";
  out += kCudaPrelude;
  out += detail::generic_attention_portable_source(spec, entry, sized_params);
  return out;
}

}  // namespace graphc::emit
