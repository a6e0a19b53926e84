// The fused flash-attention forward kernel (see cuda_attention.h). The
// generated source is a fixed kernel template specialised by a block of
// constexpr constants, so the same spec always gives the same bytes.
//
// Fragment layouts (PTX ISA, mma.m16n8k16 with 16-bit A/B and f32 C; lane =
// 4·g + t): A a0:(g, 2t..2t+1) a1:(g+8, 2t..) a2:(g, 2t+8..) a3:(g+8, 2t+8..);
// B b0:(k 2t..2t+1, n g) b1:(k 2t+8.., n g); C c0,c1:(g, 2t..2t+1)
// c2,c3:(g+8, 2t..). ldmatrix.x4 gives lane l row l/4, columns 2(l%4).. of
// each 8x8 matrix whose rows lanes 8i..8i+7 address; .trans gives the
// transpose. So K rows (keys) read with ldmatrix are B fragments of S = Q·Kᵀ,
// V rows read with ldmatrix.trans are B fragments of O = P·V, and the S
// accumulators of n-tiles 2kk, 2kk+1 packed in pairs are exactly the A
// fragment of P·V's k-step kk.
#include "emit/cuda/cuda_attention.h"

#include "emit/cuda/attention_range.h"

#include <fmt/format.h>

#include <algorithm>

namespace graphc::emit {

using ir::DType;

namespace {

constexpr int64_t kMaxSharedBytes = 227 * 1024;  // sm_90's per-block opt-in limit

bool is_16bit_float(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

std::string dtype_tag(DType t) {
  switch (t) {
    case DType::kFloat16: return "f16";
    case DType::kBFloat16: return "bf16";
    case DType::kFloat32: return "f32";
    case DType::kUInt8: return "u8";
    case DType::kBool: return "b8";
    default: return "x";
  }
}

std::string storage_type(DType t) {
  switch (t) {
    case DType::kFloat16: return "__half";
    case DType::kBFloat16: return "__nv_bfloat16";
    case DType::kFloat32: return "float";
    default: return "unsigned char";
  }
}

struct Geometry {
  int dp, dvp;              // padded head dims (multiples of 16)
  int mb;                   // m16 blocks per warp
  int q_stride, k_stride, v_stride, o_stride;  // shared row strides in elements
  int64_t q_bytes, k_stage_bytes, v_stage_bytes, total_bytes;
  int stage_buffers;
};

Geometry geometry(const AttentionKernelSpec& s) {
  Geometry g{};
  g.dp = attention_padded_dim(s.head_dim);
  g.dvp = attention_padded_dim(s.head_dim_v);
  const AttentionTile& t = s.tile;
  g.mb = t.warps > 0 ? t.block_q / (16 * t.warps) : 0;
  // +8 elements (16 bytes) per row: 8 consecutive rows at the same column
  // land in 8 different 16-byte bank groups (row stride = 2·D + 16 bytes,
  // D a multiple of 16), so ldmatrix and the 16-byte staging reads are free
  // of bank conflicts for every head dim, not only powers of two.
  g.q_stride = g.dp + 8;
  g.k_stride = g.dp + 8;
  g.v_stride = g.dvp + 8;
  g.o_stride = g.dvp + 8;
  g.q_bytes = int64_t{t.block_q} * std::max(g.q_stride, g.o_stride) * 2;
  g.k_stage_bytes = int64_t{t.block_kv} * g.k_stride * 2;
  g.v_stage_bytes = int64_t{t.block_kv} * g.v_stride * 2;
  g.stage_buffers = std::max(1, t.stages);
  g.total_bytes = g.q_bytes + g.stage_buffers * (g.k_stage_bytes + g.v_stage_bytes);
  return g;
}

// Rough registers per thread: accumulators of O and S, Q fragments when held,
// and a fixed part for addresses, row statistics and the P fragment in flight.
int estimated_registers(const AttentionKernelSpec& s) {
  const Geometry g = geometry(s);
  int r = g.mb * g.dvp / 2 + g.mb * s.tile.block_kv / 2 + 16 * g.mb + 32;
  if (s.tile.q_in_regs) r += g.mb * g.dp / 4;
  return r;
}

constexpr const char* kCudaPrelude = R"(#include <cuda_fp16.h>
#include <cuda_bf16.h>
)";

// The CUDA primitives the portable part is written over (cuda_attention.h's
// detail:: comment lists them); the host emulator has its own.
std::string cuda_helpers(const AttentionKernelSpec& spec) {
  const bool bf16 = spec.dtype == DType::kBFloat16;
  std::string mask_load;
  if (spec.mask != AttentionKernelSpec::Mask::kNone) {
    switch (spec.mask_dtype) {
      case DType::kFloat16:
        mask_load = "G_DEV float ld_mask(const __half* p) { return __half2float(__ldg(p)); }\n";
        break;
      case DType::kBFloat16:
        mask_load =
            "G_DEV float ld_mask(const __nv_bfloat16* p) { return __bfloat162float(__ldg(p)); }\n";
        break;
      case DType::kFloat32:
        mask_load = "G_DEV float ld_mask(const float* p) { return __ldg(p); }\n";
        break;
      default:
        mask_load =
            "G_DEV float ld_mask(const unsigned char* p) { return __ldg(p) != 0 ? 1.0f : 0.0f; }\n";
        break;
    }
  }
  return fmt::format(
      R"(#define G_DEV __device__ __forceinline__
G_DEV unsigned smem_base_u32() {{
  extern __shared__ __align__(128) unsigned char g_attn_smem[];
  return (unsigned)__cvta_generic_to_shared(g_attn_smem);
}}
// 16 bytes global -> shared, bypassing L1; src_bytes < 16 zero-fills the rest.
G_DEV void cp_async16(unsigned dst, const void* src, int src_bytes) {{
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}}
G_DEV void cp_async_commit() {{ asm volatile("cp.async.commit_group;\n" ::: "memory"); }}
template <int N> G_DEV void cp_async_wait() {{ asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }}
G_DEV void ldsm_x4(unsigned a, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {{
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{%0, %1, %2, %3}}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a));
}}
G_DEV void ldsm_x4_t(unsigned a, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {{
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {{%0, %1, %2, %3}}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a));
}}
// D = A·B + D, m16n8k16, {ab} operands, f32 accumulators.
G_DEV void mma16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {{
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.{ab}.{ab}.f32 {{%0, %1, %2, %3}}, {{%4, %5, %6, %7}}, {{%8, %9}}, "
      "{{%0, %1, %2, %3}};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}}
// Two floats rounded to nearest even into one register, `lo` in the low half.
G_DEV unsigned pack2(float lo, float hi) {{
  {h2} h = {cvt2}(lo, hi);
  return *reinterpret_cast<unsigned*>(&h);
}}
G_DEV float ex2(float x) {{ float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }}
G_DEV float fast_rcp(float x) {{ float y; asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }}
G_DEV float shfl_xor(float v, int m) {{ return __shfl_xor_sync(0xffffffffu, v, m); }}
G_DEV bool warp_any(bool v) {{ return __any_sync(0xffffffffu, v); }}
G_DEV float neg_inf() {{ return __int_as_float(0xff800000); }}
G_DEV void st_shared_u32(unsigned a, unsigned v) {{ asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a), "r"(v) : "memory"); }}
G_DEV unsigned ld_shared_u32(unsigned a) {{
  unsigned v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(a) : "memory");
  return v;
}}
G_DEV uint4 ld_shared_v4(unsigned a) {{
  uint4 v;
  asm volatile("ld.shared.v4.b32 {{%0, %1, %2, %3}}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(a) : "memory");
  return v;
}}
G_DEV void st_global_v4(void* p, uint4 v) {{
  asm volatile("st.global.v4.b32 [%0], {{%1, %2, %3, %4}};\n" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}}
{mask_load})",
      fmt::arg("ab", bf16 ? "bf16" : "f16"), fmt::arg("h2", bf16 ? "__nv_bfloat162" : "__half2"),
      fmt::arg("cvt2", bf16 ? "__floats2bfloat162_rn" : "__floats2half2_rn"),
      fmt::arg("mask_load", mask_load));
}

// The kernel template. Everything it needs from the spec comes from the
// constants block in front of it (kD, kBR, kMaskKind ...).
constexpr const char* kKernelTemplate = R"(
// One tile of R rows x CPR 16-byte chunks, global -> shared (row stride
// SROW bytes); rows >= rows_valid and chunks >= REAL (the head-dim padding)
// are zero-filled without reading global memory.
template <int R, int CPR, int REAL, int SROW>
G_DEV void load_tile(unsigned sdst, const elem_t* g, long long row_stride, int rows_valid, int tid) {
  constexpr int kTotal = R * CPR;
#pragma unroll
  for (int i = 0; i < (kTotal + kThreads - 1) / kThreads; ++i) {
    const int idx = tid + i * kThreads;
    if (kTotal % kThreads == 0 || idx < kTotal) {
      const int r = idx / CPR, c = idx % CPR;
      const bool ok = r < rows_valid && c < REAL;
      const elem_t* src = ok ? g + (long long)r * row_stride + c * 8 : g;
      cp_async16(sdst + r * SROW + c * 16, src, ok ? 16 : 0);
    }
  }
}

// Flips the sign bit of this thread's own chunks of the Q tile (the ones its
// load_tile copied), after its copies completed: a negative scale becomes
// |scale| with -Q, so the row maximum of the raw scores stays the maximum.
template <int R, int CPR, int SROW>
G_DEV void negate_tile(unsigned sdst, int tid) {
  constexpr int kTotal = R * CPR;
#pragma unroll
  for (int i = 0; i < (kTotal + kThreads - 1) / kThreads; ++i) {
    const int idx = tid + i * kThreads;
    if (kTotal % kThreads == 0 || idx < kTotal) {
      const int r = idx / CPR, c = idx % CPR;
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const unsigned a = sdst + r * SROW + c * 16 + w * 4;
        st_shared_u32(a, ld_shared_u32(a) ^ 0x80008000u);
      }
    }
  }
}

G_KERNEL {
  constexpr int kQRow = kQStride * 2, kKRow = kKStride * 2, kVRow = kVStride * 2, kORow = kOStride * 2;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  const int num_qt = (p.q_len + kBR - 1) / kBR;
  // Causal: the longest rows first, so the last wave is the short tiles.
  const int qt = kCausal ? num_qt - 1 - (int)blockIdx.x : (int)blockIdx.x;
  if (qt < 0 || qt >= num_qt) return;
  const int h = blockIdx.y, b = blockIdx.z;
  const int kvh = h / (p.q_heads / p.kv_heads);
  const int q0 = qt * kBR;
  const elem_t* gq = q + (long long)b * p.q_stride_b + (long long)h * p.q_stride_h;
  const elem_t* gk = k + (long long)b * p.k_stride_b + (long long)kvh * p.k_stride_h;
  const elem_t* gv = v + (long long)b * p.v_stride_b + (long long)kvh * p.v_stride_h;
  elem_t* go = o + (long long)b * p.o_stride_b + (long long)h * p.o_stride_h;
#if G_HAS_MASK
  const mask_t* gm = mask + (long long)b * p.m_stride_b + (long long)h * p.m_stride_h;
#endif
  const unsigned sQ = smem_base_u32();
  const unsigned sK = sQ + kQBytes;
  const unsigned sV = sK + kStageBuffers * kKStageBytes;

  // Key tiles this CTA visits: all of them, or (causal) up to the diagonal of
  // its last valid row. Tiles past it are skipped entirely.
  int n_tiles = (p.kv_len + kBC - 1) / kBC;
  if (kCausal) {
    const long long last_row = (long long)min(q0 + kBR, p.q_len) - 1;
    const long long lim = last_row + p.causal_offset;  // largest key any row may see
    const long long tiles = lim < 0 ? 0 : lim / kBC + 1;
    if (tiles < n_tiles) n_tiles = (int)tiles;
  }

  auto load_kv = [&](int tile, int buf, bool with_k, bool with_v) {
    const int k0 = tile * kBC;
    if (with_k)
      load_tile<kBC, kDP / 8, kD / 8, kKRow>(sK + buf * kKStageBytes, gk + (long long)k0 * p.k_stride_s,
                                             p.k_stride_s, p.kv_len - k0, tid);
    if (with_v)
      load_tile<kBC, kDVP / 8, kDV / 8, kVRow>(sV + buf * kVStageBytes, gv + (long long)k0 * p.v_stride_s,
                                               p.v_stride_s, p.kv_len - k0, tid);
  };

  // Prologue: Q, then the first K/V tiles (one commit group each, empty
  // groups included, so the wait counts below hold for any n_tiles).
  load_tile<kBR, kDP / 8, kD / 8, kQRow>(sQ, gq + (long long)q0 * p.q_stride_s, p.q_stride_s, p.q_len - q0, tid);
  if (kStages == 1) {
    if (n_tiles > 0) load_kv(0, 0, true, false);
    cp_async_commit();
    cp_async_wait<0>();
  } else {
    cp_async_commit();
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < n_tiles) load_kv(s, s, true, true);
      cp_async_commit();
    }
    cp_async_wait<(kStages > 1 ? kStages - 1 : 0)>();  // Q has landed
  }
  if (p.scale < 0.0f) negate_tile<kBR, kDP / 8, kQRow>(sQ, tid);
  __syncthreads();

  const float scale_abs = fmaxf(fabsf(p.scale), 1e-30f);
  constexpr float kLog2e = 1.4426950408889634f;
  // Raw mode: scores stay unscaled and scale·log2(e) is folded into the
  // exponent (one FFMA per score). Otherwise scores are scaled to natural
  // units first (softcap and masks are defined there) and the exponent is
  // (x - max)·log2(e), which never overflows for finite masks (finfo.min).
  constexpr bool kRaw = !G_HAS_MASK && !kSoftcap;
  const float c_exp = kRaw ? scale_abs * kLog2e : kLog2e;

  const float cap_k = kSoftcap ? 2.0f * kLog2e / p.softcap : 0.0f;
  const int wrow = warp * kMB * 16;  // the warp's first row in the tile
  unsigned qf[kQInRegs ? kMB : 1][kQInRegs ? kDP / 16 : 1][4];
  const unsigned q_lane = ((lane & 7) + ((lane >> 3) & 1) * 8) * kQRow + (lane >> 4) * 16;
  if (kQInRegs) {
#pragma unroll
    for (int mb = 0; mb < kMB; ++mb)
#pragma unroll
      for (int ks = 0; ks < kDP / 16; ++ks)
        ldsm_x4(sQ + q_lane + (wrow + mb * 16) * kQRow + ks * 32, qf[mb][ks][0], qf[mb][ks][1], qf[mb][ks][2],
                qf[mb][ks][3]);
  }
  const unsigned k_lane = ((lane & 7) + (lane >> 4) * 8) * kKRow + ((lane >> 3) & 1) * 16;
  const unsigned v_lane = ((lane & 7) + ((lane >> 3) & 1) * 8) * kVRow + (lane >> 4) * 16;

  float oacc[kMB][kDVP / 8][4];
  float row_m[kMB][2], row_l[kMB][2];
#pragma unroll
  for (int mb = 0; mb < kMB; ++mb) {
#pragma unroll
    for (int j = 0; j < kDVP / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) oacc[mb][j][e] = 0.0f;
    row_m[mb][0] = row_m[mb][1] = neg_inf();
    row_l[mb][0] = row_l[mb][1] = 0.0f;
  }

  int buf = 0;
  for (int n = 0; n < n_tiles; ++n) {
    const int k0 = n * kBC;
    if (kStages == 1) {
      cp_async_wait<0>();
      __syncthreads();  // K[n] landed; every warp is done with V[n-1]
      load_kv(n, 0, false, true);
      cp_async_commit();
    } else {
      cp_async_wait<(kStages > 1 ? kStages - 2 : 0)>();
      __syncthreads();  // tile n landed; every warp is done with tile n-1's buffer
      const int nn = n + kStages - 1;
      if (nn < n_tiles) load_kv(nn, (buf == 0 ? kStages : buf) - 1, true, true);
      cp_async_commit();
    }
    const unsigned kb = sK + buf * kKStageBytes;
    const unsigned vb = sV + buf * kVStageBytes;

    // S = Q·Kᵀ for the warp's kMB x 16 rows and kBC keys.
    float s[kMB][kBC / 8][4];
#pragma unroll
    for (int mb = 0; mb < kMB; ++mb)
#pragma unroll
      for (int j = 0; j < kBC / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mb][j][e] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < kDP / 16; ++ks) {
      unsigned a[kMB][4];
#pragma unroll
      for (int mb = 0; mb < kMB; ++mb) {
        if (kQInRegs) {
#pragma unroll
          for (int e = 0; e < 4; ++e) a[mb][e] = qf[kQInRegs ? mb : 0][kQInRegs ? ks : 0][e];
        } else {
          ldsm_x4(sQ + q_lane + (wrow + mb * 16) * kQRow + ks * 32, a[mb][0], a[mb][1], a[mb][2], a[mb][3]);
        }
      }
#pragma unroll
      for (int j2 = 0; j2 < kBC / 16; ++j2) {
        unsigned b0, b1, b2, b3;
        ldsm_x4(kb + k_lane + j2 * 16 * kKRow + ks * 32, b0, b1, b2, b3);
#pragma unroll
        for (int mb = 0; mb < kMB; ++mb) {
          mma16816(s[mb][2 * j2], a[mb], b0, b1);
          mma16816(s[mb][2 * j2 + 1], a[mb], b2, b3);
        }
      }
    }

    if (kStages == 1) {
      cp_async_wait<0>();
      __syncthreads();  // V[n] landed; every warp is done with K[n]
      if (n + 1 < n_tiles) load_kv(n + 1, 0, true, false);
      cp_async_commit();
    }

    // Scores of keys past kv_len or past the causal diagonal become -inf;
    // with a mask or softcap every score is first brought to natural units.
    bool edge = k0 + kBC > p.kv_len;
    if (kCausal) edge = edge || (long long)(k0 + kBC - 1) > (long long)(q0 + wrow) + p.causal_offset;
    if (!kRaw || edge) {
#pragma unroll
      for (int mb = 0; mb < kMB; ++mb) {
#pragma unroll
        for (int hi = 0; hi < 2; ++hi) {
          const int row = q0 + wrow + mb * 16 + g + hi * 8;
#if G_HAS_MASK
          const bool row_ok = row < p.q_len;
          const mask_t* mrow = gm + (long long)(row_ok ? row : 0) * p.m_stride_q;
#endif
#pragma unroll
          for (int j = 0; j < kBC / 8; ++j) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int key = k0 + j * 8 + 2 * t4 + e;
              float x = s[mb][j][2 * hi + e];
              bool keep = key < p.kv_len;
              if (kCausal) keep = keep && (long long)key <= (long long)row + p.causal_offset;
              if (!kRaw) {
                x *= scale_abs;
                if (kSoftcap) {
                  // softcap·tanh(x/softcap), tanh(y) = 1 - 2/(e^{2y} + 1).
                  const float e2 = ex2(x * cap_k);
                  x = p.softcap * (1.0f - 2.0f * fast_rcp(e2 + 1.0f));
                }
#if G_HAS_MASK
                if (keep && row_ok) {
                  const float mv = ld_mask(mrow + (long long)key * p.m_stride_k);
                  if (kMaskKind == 1) x += mv;
                  else keep = mv != 0.0f;
                }
#endif
              }
              s[mb][j][2 * hi + e] = keep ? x : neg_inf();
            }
          }
        }
      }
    }

    // Online softmax: new row max over the quad (the 4 lanes sharing a row),
    // rescale the row sum and O, exponentiate in place.
    float alphas[kMB][2];
#pragma unroll
    for (int mb = 0; mb < kMB; ++mb) {
#pragma unroll
      for (int hi = 0; hi < 2; ++hi) {
        float mx = row_m[mb][hi];
#pragma unroll
        for (int j = 0; j < kBC / 8; ++j) mx = fmaxf(mx, fmaxf(s[mb][j][2 * hi], s[mb][j][2 * hi + 1]));
        mx = fmaxf(mx, shfl_xor(mx, 1));
        mx = fmaxf(mx, shfl_xor(mx, 2));
        const float m_use = mx == neg_inf() ? 0.0f : mx;  // a row with nothing unmasked yet
        const float alpha = ex2((row_m[mb][hi] - m_use) * c_exp);
        alphas[mb][hi] = alpha;
        row_m[mb][hi] = mx;
        float l = row_l[mb][hi] * alpha;
        const float m_scaled = m_use * c_exp;
#pragma unroll
        for (int j = 0; j < kBC / 8; ++j) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const float x = s[mb][j][2 * hi + e];
            const float pe = kRaw ? ex2(fmaf(x, c_exp, -m_scaled)) : ex2((x - m_use) * kLog2e);
            s[mb][j][2 * hi + e] = pe;
            l += pe;
          }
        }
        row_l[mb][hi] = l;
      }
    }

    // Rescale O, unless no row max of the warp moved (alpha == 1 exactly, the
    // common case once a long row has seen its peak): 64 FMULs per tile saved.
    bool moved = false;
#pragma unroll
    for (int mb = 0; mb < kMB; ++mb) moved = moved || alphas[mb][0] != 1.0f || alphas[mb][1] != 1.0f;
    if (warp_any(moved)) {
#pragma unroll
      for (int mb = 0; mb < kMB; ++mb)
#pragma unroll
        for (int j = 0; j < kDVP / 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) oacc[mb][j][e] *= alphas[mb][e >> 1];
    }

    // O += P·V: the S accumulators of n-tiles 2kk and 2kk+1 are the A
    // fragment of k-step kk.
#pragma unroll
    for (int kk = 0; kk < kBC / 16; ++kk) {
      unsigned a[kMB][4];
#pragma unroll
      for (int mb = 0; mb < kMB; ++mb) {
        a[mb][0] = pack2(s[mb][2 * kk][0], s[mb][2 * kk][1]);
        a[mb][1] = pack2(s[mb][2 * kk][2], s[mb][2 * kk][3]);
        a[mb][2] = pack2(s[mb][2 * kk + 1][0], s[mb][2 * kk + 1][1]);
        a[mb][3] = pack2(s[mb][2 * kk + 1][2], s[mb][2 * kk + 1][3]);
      }
#pragma unroll
      for (int jd2 = 0; jd2 < kDVP / 16; ++jd2) {
        unsigned b0, b1, b2, b3;
        ldsm_x4_t(vb + v_lane + kk * 16 * kVRow + jd2 * 32, b0, b1, b2, b3);
#pragma unroll
        for (int mb = 0; mb < kMB; ++mb) {
          mma16816(oacc[mb][2 * jd2], a[mb], b0, b1);
          mma16816(oacc[mb][2 * jd2 + 1], a[mb], b2, b3);
        }
      }
    }
    if (kStages > 1) buf = buf + 1 == kStages ? 0 : buf + 1;
  }

  // Epilogue: O / l (0 for rows with every key masked), rounded once, staged
  // in shared memory over the Q tile, written as 16-byte rows.
  cp_async_wait<0>();
  __syncthreads();  // no warp still reads Q or a K/V buffer
#pragma unroll
  for (int mb = 0; mb < kMB; ++mb) {
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      float l = row_l[mb][hi];
      l += shfl_xor(l, 1);
      l += shfl_xor(l, 2);
      const float inv = l == 0.0f ? 0.0f : 1.0f / l;
      const unsigned srow = sQ + (wrow + mb * 16 + g + hi * 8) * kORow + t4 * 4;
#pragma unroll
      for (int j = 0; j < kDVP / 8; ++j)
        st_shared_u32(srow + j * 16, pack2(oacc[mb][j][2 * hi] * inv, oacc[mb][j][2 * hi + 1] * inv));
    }
  }
  __syncwarp();
  constexpr int kOChunks = kDV / 8;
#pragma unroll
  for (int i = 0; i < (kMB * 16 * kOChunks + 31) / 32; ++i) {
    const int idx = lane + i * 32;
    if ((kMB * 16 * kOChunks) % 32 == 0 || idx < kMB * 16 * kOChunks) {
      const int r = idx / kOChunks, c = idx % kOChunks;
      const int row = q0 + wrow + r;
      if (row < p.q_len)
        st_global_v4(go + (long long)row * p.o_stride_s + c * 8, ld_shared_v4(sQ + (wrow + r) * kORow + c * 16));
    }
  }
}
)";

}  // namespace

int attention_padded_dim(int dim) { return (dim + 15) / 16 * 16; }

void set_attention_strides_bhsd(int64_t& sb, int64_t& sh, int64_t& ss, int64_t heads, int64_t len,
                                int64_t dim) {
  ss = dim;
  sh = len * dim;
  sb = heads * len * dim;
}

void set_attention_strides_bshd(int64_t& sb, int64_t& sh, int64_t& ss, int64_t heads, int64_t len,
                                int64_t dim) {
  sh = dim;
  ss = heads * dim;
  sb = len * heads * dim;
}

int64_t attention_shared_bytes(const AttentionKernelSpec& spec) { return geometry(spec).total_bytes; }

Status validate_attention_spec(const AttentionKernelSpec& s) {
  if (!is_16bit_float(s.dtype))
    return unsupported("attention kernel: dtype {} (float16 or bfloat16 only)", ir::dtype_name(s.dtype));
  for (int d : {s.head_dim, s.head_dim_v})
    if (d < 32 || d > 256 || d % 8 != 0)
      return unsupported("attention kernel: head dim {} (32..256, a multiple of 8)", d);
  using M = AttentionKernelSpec::Mask;
  if (s.mask == M::kAdditive && !is_16bit_float(s.mask_dtype) && s.mask_dtype != DType::kFloat32)
    return unsupported("attention kernel: additive mask of {} (float16, bfloat16 or float32)",
                       ir::dtype_name(s.mask_dtype));
  if (s.mask == M::kBoolean && s.mask_dtype != DType::kUInt8 && s.mask_dtype != DType::kBool)
    return unsupported("attention kernel: boolean mask of {} (bool or uint8)", ir::dtype_name(s.mask_dtype));
  const AttentionTile& t = s.tile;
  if (t.warps < 1 || t.warps > 16 || t.block_q % (16 * t.warps) != 0)
    return invalid_argument("attention tile {}: block_q must be warps x 16 x (1 or 2)", attention_tile_name(t));
  const int mb = t.block_q / (16 * t.warps);
  if (mb < 1 || mb > 2)
    return invalid_argument("attention tile {}: 16 or 32 rows per warp", attention_tile_name(t));
  if (t.block_kv < 16 || t.block_kv > 256 || t.block_kv % 16 != 0)
    return invalid_argument("attention tile {}: block_kv a multiple of 16 up to 256", attention_tile_name(t));
  if (t.stages < 1 || t.stages > 4)
    return invalid_argument("attention tile {}: 1 to 4 stages", attention_tile_name(t));
  if (t.min_blocks < 1 || t.min_blocks > 8)
    return invalid_argument("attention tile {}: min_blocks 1..8", attention_tile_name(t));
  const int64_t smem = attention_shared_bytes(s);
  if (smem > kMaxSharedBytes)
    return invalid_argument("attention tile {} with head dims {}/{}: {} bytes of shared memory (at most {})",
                            attention_tile_name(t), s.head_dim, s.head_dim_v, smem, kMaxSharedBytes);
  return Status::ok_status();
}

Status validate_attention_params(const AttentionKernelSpec& s, const AttentionParams& p) {
  if (p.batch < 1 || p.q_heads < 1 || p.kv_heads < 1 || p.q_len < 1 || p.kv_len < 1)
    return invalid_argument("attention: sizes must be positive (batch {}, heads {}/{}, lengths {}/{})", p.batch,
                            p.q_heads, p.kv_heads, p.q_len, p.kv_len);
  if (p.q_heads % p.kv_heads != 0)
    return invalid_argument("attention: {} query heads are not a multiple of {} key/value heads", p.q_heads,
                            p.kv_heads);
  if (p.q_heads > 65535 || p.batch > 65535)
    return out_of_range("attention: grid y/z limit (heads {}, batch {})", p.q_heads, p.batch);
  for (int64_t st : {p.q_stride_b, p.q_stride_h, p.q_stride_s, p.k_stride_b, p.k_stride_h, p.k_stride_s,
                     p.v_stride_b, p.v_stride_h, p.v_stride_s, p.o_stride_b, p.o_stride_h, p.o_stride_s})
    if (st % 8 != 0)
      return invalid_argument("attention: Q/K/V/O strides must be multiples of 8 elements (16-byte rows)");
  if (s.softcap && !(p.softcap > 0.0f))
    return invalid_argument("attention: softcap {} must be positive", p.softcap);
  if (!std::isfinite(p.scale)) return invalid_argument("attention: scale must be finite");
  return Status::ok_status();
}

std::string attention_tile_name(const AttentionTile& t) {
  return fmt::format("q{}_kv{}_w{}_s{}_{}{}", t.block_q, t.block_kv, t.warps, t.stages, t.q_in_regs ? "qr" : "qs",
                     t.min_blocks > 1 ? fmt::format("_b{}", t.min_blocks) : std::string());
}

namespace {

AttentionTile make_tile(int bq, int bkv, int warps, int stages, bool q_in_regs, int min_blocks) {
  AttentionTile t;
  t.block_q = bq;
  t.block_kv = bkv;
  t.warps = warps;
  t.stages = stages;
  t.q_in_regs = q_in_regs;
  t.min_blocks = min_blocks;
  return t;
}

bool tile_fits(AttentionKernelSpec s, const AttentionTile& t, int64_t smem_limit) {
  s.tile = t;
  if (!validate_attention_spec(s).ok()) return false;
  if (attention_shared_bytes(s) * t.min_blocks > smem_limit + 1024 * (t.min_blocks - 1)) return false;
  // Register budget per thread for min_blocks CTAs of warps·32 threads.
  const int budget = std::min(255, 65536 / (t.min_blocks * t.warps * 32) / 8 * 8);
  return estimated_registers(s) <= budget;
}

int64_t smem_limit_for(int sm) {
  if (sm == 86 || sm == 89 || sm == 87 || sm >= 120) return 99 * 1024;
  if (sm == 80) return 163 * 1024;
  return kMaxSharedBytes;
}

}  // namespace

std::vector<AttentionTile> attention_tile_variants(const AttentionKernelSpec& spec) {
  const int dp = std::max(attention_padded_dim(spec.head_dim), attention_padded_dim(spec.head_dim_v));
  std::vector<AttentionTile> cands;
  cands.push_back(default_attention_tile(spec, 90));
  if (dp <= 128) {
    for (bool qr : {true, false}) {
      if (!qr && dp <= 64) continue;  // 16 registers of Q fragments: always worth holding
      cands.push_back(make_tile(128, 64, 8, 2, qr, 1));
      cands.push_back(make_tile(128, 128, 8, 2, qr, 1));
      cands.push_back(make_tile(128, 64, 8, 3, qr, 1));
      cands.push_back(make_tile(128, 64, 8, 1, qr, 1));
      cands.push_back(make_tile(64, 64, 4, 2, qr, 2));
      cands.push_back(make_tile(64, 128, 4, 2, qr, 2));
      cands.push_back(make_tile(128, 64, 4, 2, qr, 2));  // 32 rows per warp
      cands.push_back(make_tile(128, 32, 4, 2, qr, 2));
    }
    if (dp <= 64) {
      cands.push_back(make_tile(128, 64, 8, 2, true, 2));
      cands.push_back(make_tile(128, 128, 8, 2, true, 2));
      cands.push_back(make_tile(64, 64, 4, 2, true, 4));
      cands.push_back(make_tile(128, 128, 4, 2, true, 1));
    }
  } else {
    // (64 keys with 4 warps of 16 rows spill at head dim 256: 128 O
    // accumulators + 32 S + the K fragments in flight.)
    cands.push_back(make_tile(128, 32, 8, 2, false, 1));
    cands.push_back(make_tile(128, 64, 8, 1, false, 1));
    cands.push_back(make_tile(64, 32, 4, 2, false, 1));
    cands.push_back(make_tile(64, 32, 4, 2, false, 2));
    cands.push_back(make_tile(64, 32, 4, 1, false, 1));
  }
  std::vector<AttentionTile> out;
  for (const AttentionTile& t : cands) {
    if (!tile_fits(spec, t, kMaxSharedBytes)) continue;
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  }
  return out;
}

AttentionTile default_attention_tile(const AttentionKernelSpec& spec, int sm, int64_t q_len, int64_t kv_len) {
  (void)kv_len;
  const int64_t limit = smem_limit_for(sm);
  const int dp = std::max(attention_padded_dim(spec.head_dim), attention_padded_dim(spec.head_dim_v));
  std::vector<AttentionTile> prefs;
  if (dp <= 64) {
    prefs = {make_tile(128, 64, 8, 2, true, 1), make_tile(64, 64, 4, 2, true, 2)};
    // Two CTAs of 8 warps per SM fit 128 registers on sm_90 without spills
    // when no mask or softcap needs registers of its own (sm_80 spills a word).
    if (sm >= 90 && !spec.softcap && spec.mask == AttentionKernelSpec::Mask::kNone)
      prefs.insert(prefs.begin(), make_tile(128, 64, 8, 2, true, 2));
  } else if (dp <= 128) {
    prefs = {make_tile(128, 64, 8, 2, true, 1), make_tile(128, 64, 8, 1, true, 1),
             make_tile(64, 64, 4, 2, true, 2), make_tile(64, 64, 4, 1, true, 2)};
  } else {
    prefs = {make_tile(128, 32, 8, 2, false, 1), make_tile(64, 32, 4, 1, false, 1)};
  }
  // Short query sequences waste most of a 128-row tile.
  if (q_len > 0 && q_len <= 64 && dp <= 128)
    prefs.insert(prefs.begin(), make_tile(64, 64, 4, 2, true, 2));
  for (const AttentionTile& t : prefs)
    if (tile_fits(spec, t, limit)) return t;
  return make_tile(64, 32, 4, 1, false, 1);  // fits 99 KiB at head dim 256
}

std::string attention_entry_name(const AttentionKernelSpec& s) {
  using M = AttentionKernelSpec::Mask;
  std::string mask = s.mask == M::kNone       ? "nomask"
                     : s.mask == M::kAdditive ? "add" + dtype_tag(s.mask_dtype)
                                              : "bool" + dtype_tag(s.mask_dtype);
  return fmt::format("graphc_attn_{}_d{}_v{}_{}_{}{}_{}", dtype_tag(s.dtype), s.head_dim, s.head_dim_v,
                     s.causal ? "causal" : "full", mask, s.softcap ? "_cap" : "", attention_tile_name(s.tile));
}

std::string detail::attention_portable_source(const AttentionKernelSpec& spec, const std::string& entry,
                                              const std::string& sized_params) {
  const Geometry geo = geometry(spec);
  const AttentionTile& t = spec.tile;
  const bool has_mask = spec.mask != AttentionKernelSpec::Mask::kNone;
  std::string out = fmt::format(
      R"(// Run-time arguments (emit/cuda/cuda_attention.h AttentionParams: same fields, same order).
struct AttentionParams {{
  long long q_stride_b, q_stride_h, q_stride_s;
  long long k_stride_b, k_stride_h, k_stride_s;
  long long v_stride_b, v_stride_h, v_stride_s;
  long long o_stride_b, o_stride_h, o_stride_s;
  long long m_stride_b, m_stride_h, m_stride_q, m_stride_k;
  int batch, q_heads, kv_heads, q_len, kv_len;
  int causal_offset;
  float scale, softcap;
}};
static_assert(sizeof(AttentionParams) == 160, "AttentionParams ABI");
{sized}typedef {elem} elem_t;
typedef {mask_t} mask_t;
#define G_HAS_MASK {has_mask}
constexpr int kD = {d}, kDV = {dv}, kDP = {dp}, kDVP = {dvp};
constexpr int kBR = {br}, kBC = {bc}, kWarps = {warps}, kThreads = {threads}, kMB = {mb};
constexpr int kStages = {stages}, kStageBuffers = {nbuf};
constexpr bool kQInRegs = {qregs}, kCausal = {causal}, kSoftcap = {softcap};
constexpr int kMaskKind = {mask_kind};  // 0 none, 1 additive, 2 boolean
static_assert(kBR == kWarps * 16 * kMB && kMaskKind >= 0, "tile");
constexpr int kQStride = {qs}, kKStride = {ks}, kVStride = {vs}, kOStride = {os};  // shared row strides (elements)
constexpr unsigned kQBytes = {qbytes}u, kKStageBytes = {kbytes}u, kVStageBytes = {vbytes}u;  // {total} bytes in all
#define G_KERNEL extern "C" __global__ void __launch_bounds__({threads}, {minb}) {entry}( \
    const elem_t* __restrict__ q, const elem_t* __restrict__ k, const elem_t* __restrict__ v, {mask_param} \
    elem_t* __restrict__ o, {last_param})
)",
      fmt::arg("elem", storage_type(spec.dtype)),
      fmt::arg("mask_t", has_mask ? storage_type(spec.mask_dtype) : "unsigned char"),
      fmt::arg("has_mask", has_mask ? 1 : 0), fmt::arg("d", spec.head_dim), fmt::arg("dv", spec.head_dim_v),
      fmt::arg("dp", geo.dp), fmt::arg("dvp", geo.dvp), fmt::arg("br", t.block_q), fmt::arg("bc", t.block_kv),
      fmt::arg("warps", t.warps), fmt::arg("threads", t.warps * 32), fmt::arg("mb", geo.mb),
      fmt::arg("stages", t.stages), fmt::arg("nbuf", geo.stage_buffers),
      fmt::arg("qregs", t.q_in_regs ? "true" : "false"), fmt::arg("causal", spec.causal ? "true" : "false"),
      fmt::arg("softcap", spec.softcap ? "true" : "false"),
      fmt::arg("mask_kind", spec.mask == AttentionKernelSpec::Mask::kNone       ? 0
                            : spec.mask == AttentionKernelSpec::Mask::kAdditive ? 1
                                                                                : 2),
      fmt::arg("qs", geo.q_stride), fmt::arg("ks", geo.k_stride), fmt::arg("vs", geo.v_stride),
      fmt::arg("os", geo.o_stride), fmt::arg("qbytes", geo.q_bytes), fmt::arg("kbytes", geo.k_stage_bytes),
      fmt::arg("vbytes", geo.v_stage_bytes), fmt::arg("total", geo.total_bytes),
      fmt::arg("minb", t.min_blocks), fmt::arg("entry", entry),
      fmt::arg("mask_param", has_mask ? "const mask_t* __restrict__ mask," : ""),
      fmt::arg("sized", sized_params),
      fmt::arg("last_param", sized_params.empty() ? "const AttentionParams p" : "const graphc_sizes sz"));
  out += sized_params.empty() ? std::string(kKernelTemplate) : with_params_from_sizes(kKernelTemplate, "AttentionParams");
  out += "#undef G_KERNEL\n#undef G_HAS_MASK\n";
  return out;
}

std::string attention_kernel_source(const AttentionKernelSpec& spec, const std::string& entry,
                                    const std::string& sized_params) {
  std::string out = "// graphc fused attention (emit/cuda/cuda_attention.cpp): " + entry + "\n";
  out += kCudaPrelude;
  out += cuda_helpers(spec);
  out += detail::attention_portable_source(spec, entry, sized_params);
  return out;
}

LaunchShape attention_launch_shape(const AttentionKernelSpec& spec, const AttentionParams& p) {
  LaunchShape l;
  const int64_t br = spec.tile.block_q;
  l.grid = {std::max<int64_t>(1, (int64_t{p.q_len} + br - 1) / br), std::max(1, p.q_heads),
            std::max(1, p.batch)};
  l.block = {int64_t{spec.tile.warps} * 32, 1, 1};
  l.shared_bytes = attention_shared_bytes(spec);
  return l;
}

double attention_flops(const AttentionKernelSpec& spec, const AttentionParams& p) {
  double f = 2.0 * p.batch * p.q_heads * static_cast<double>(p.q_len) * p.kv_len *
             (spec.head_dim + spec.head_dim_v);
  return spec.causal ? f / 2 : f;
}

}  // namespace graphc::emit
