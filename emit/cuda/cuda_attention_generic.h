// The general attention kernel: ONE CUDA kernel per GenericAttentionSpec that
// computes ONNX's Attention (opsets 23-25) exactly as graphc's reference
// (reference/kernels_attention.cpp, docs/attention.md) does, for every case
// the reference supports: the fallback where the fast paths (cuDNN SDPA, the
// mma.sync flash kernel of emit/cuda_attention.h) do not apply. As CUDA C++
// for NVRTC; no ir::Graph dependency (plain structs in, source out), so the
// generator, its validation and its launch shapes are testable without a GPU.
//
// What it computes, per batch b, query head h (key/value head h / (Hq/Hkv)),
// query i, key j < T = P + Lkv (keys j < P from past_key/past_value, j >= P
// from K/V):
//   s = (Q·sqrt(scale))·(K·sqrt(scale))   (negative scale: NaN, as ONNX)
//   s = softcap·tanh(s/softcap)            (spec.softcap)
//   x = s + bias, bias = mask term (bool: 0 / -inf; additive: its value;
//       -inf for j >= mask_len) + -inf where causal (j > i + off), the window
//       (d = i + off - j > left >= 0, or -d > right >= 0) or nonpad
//       (j >= nonpad[b]) mask j; off = nonpad[b] - Lq with nonpad_kv_seqlen,
//       else p.causal_offset (the past length P for ONNX)
//   Y = softmax(x)·V, a row whose every bias is -inf gives Y = 0
// plus, in the same launch, present_key/present_value = concat(past, K/V)
// and qk_matmul_output (mode 0/1: s, 2: x, 3: softmax(x), 0 on fully masked
// rows). Every dtype computes in fp32 (fp16/bf16 inputs are converted on load,
// outputs rounded once; no TF32, no half arithmetic, accurate expf/tanhf),
// except that with an additive mask x = s + bias and the row maxima are kept
// in double: a row filled with a large finite value (-1e4, -1e9) keeps its
// scores as the double reference does instead of averaging V (2-3 fp64 ops
// per (row, key): free on sm_80/sm_90, noticeable on sm_86/89's slow fp64).
//
// The kernel (SIMT, no tensor cores): one CTA per (block of query rows, query
// head, batch) with row_warps x key_warps warps. Each warp owns rows_per_warp
// query rows and, of each key tile of 32·key_warps keys, 32 keys: lane l
// takes key l. The CTA stages Q (pre-scaled by sqrt(scale)) and each K/V tile
// in shared memory as fp32 with coalesced loads (16-byte loads, 4 in flight
// per thread, where the head dim is a multiple of 16 bytes and the CTA's rows
// are 16-byte aligned, checked at run time; else 8 scalar loads in flight);
// a lane computes its key's dot
// product with each of its warp's rows from shared memory (float4 reads, the
// K rows padded so the reads are conflict-free, Q rows broadcast), the warp
// reduces the tile's row max (5 shuffles per row per tile), an online softmax
// keeps the row max, a per-lane partial sum and the output accumulators (lanes
// split Dv, 1/2/4 consecutive elements each), and P·V reads the tile's
// probabilities through shared memory. key_warps > 1 splits each tile's keys
// over warps and merges (max, sum, O) through shared memory at the end: for
// short query sequences (decode). Key tiles that no row of the CTA can attend
// (causal frontier, window, nonpad, a short mask) are skipped unless
// qk_matmul_output is written. Mode 3 (probabilities) needs the final row max
// and sum, so it recomputes Q·Kᵀ in a second pass over the keys. present_key/
// present_value rows of each (batch, kv head) are copied by the warps of the
// CTAs of that kv head's query heads (lanes over the head dim, coalesced).
// Divisions are approximate reciprocals refined by a Newton step (within an
// ulp): IEEE division's out-of-line slow path would cost a stack frame.
//
// Cost (an estimate from the instruction mix; the GPU session's
// [attention-generic-bench] measures it): per (query row, key) D + Dv fp32
// FMAs on the SIMT units, with one shared-memory wavefront per two warp FMAs
// (each K/V float4 feeds 4 FMAs x rows_per_warp rows; Q/P reads broadcast):
// shared-memory bound at <= 50%, realistically 25-40% of the FP32 SIMT peak,
// ~10-20 TFLOP/s of attention FLOPs on an H100 for long prefill (fp16 and
// fp32 alike: it converts on staging) against several hundred for the
// tensor-core flash kernel: a fallback. K/V tiles are staged once per CTA,
// Lq / (row_warps·rows_per_warp) times per head (from L2 mostly), with no
// prefetch of the next tile (other CTAs on the SM hide the latency: 4-5 CTAs
// of 4 warps at head dim 128). Decode (Lq <= 4) has only B·Hq CTAs, each
// streaming the whole cache with key_warps = 4 (2 at head dim 128, 1 at 256
// to stay within 96 KiB): latency-bound, an estimated 4-8x from the K/V
// bandwidth roofline (a split-KV variant with a combine step would fix it).
// Mode 3 doubles the Q·Kᵀ work; writing qk_matmul_output turns off the
// skipping of fully masked key tiles.
//
// Kernel parameters, in order (generic_attention_kernel_args): q, k, v,
// [mask], [past_key, past_value], [nonpad_kv_seqlen], y, [present_key],
// [present_value], [qk_matmul_output] (device pointers: Q/K/V/past/outputs of
// the spec's dtype, the mask of mask_dtype, nonpad int64), then
// GenericAttentionParams by value. Inputs and outputs must not overlap, except
// present_key/value aliasing past_key/value element for element (an in-place
// cache append: present[t] at past[t]'s address for t < P).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "emit/cuda/anchor_frame.h"  // LaunchShape
#include "ir/attention_params.h"
#include "ir/dtype.h"
#include "support/status.h"

namespace graphc::emit {

// The CTA shape: row_warps x key_warps warps; rows_per_warp query rows per
// warp (row_warps·rows_per_warp rows per CTA), 32·key_warps keys per tile.
struct GenericAttentionTile {
  int row_warps = 4;
  int key_warps = 1;
  int rows_per_warp = 4;

  int warps() const { return row_warps * key_warps; }
  int block_q() const { return row_warps * rows_per_warp; }
  int block_k() const { return 32 * key_warps; }
  bool operator==(const GenericAttentionTile&) const = default;
};

// Everything compile-time: dtypes, head dims, which optional inputs and
// outputs exist, the mask kind, flags, the tile.
struct GenericAttentionSpec {
  enum class Mask { kNone, kBoolean, kAdditive };
  ir::DType dtype = ir::DType::kFloat32;  // Q, K, V, past, Y, present, qk: f32, f16 or bf16
  int head_dim = 64;                      // D of Q and K: 1..256
  int head_dim_v = 64;                    // Dv of V and Y: 1..256
  Mask mask = Mask::kNone;
  // kBoolean: kBool or kUInt8 (nonzero = attend); kAdditive: kFloat32, kFloat16, kBFloat16.
  ir::DType mask_dtype = ir::DType::kUndefined;
  bool causal = false;         // key j masked when j > i + offset
  bool softcap = false;        // p.softcap > 0
  bool window = false;         // p.left_window / p.right_window (-1 unbounded)
  bool past = false;           // past_key / past_value inputs
  bool nonpad = false;         // nonpad_kv_seqlen input (int64 [B])
  bool present_key = false;    // output present_key
  bool present_value = false;  // output present_value
  bool qk_output = false;      // output qk_matmul_output
  int qk_mode = 0;             // 0..3 (ir::QkOutputMode) when qk_output
  GenericAttentionTile tile;

  bool operator==(const GenericAttentionSpec&) const = default;
};

// Run-time arguments, passed by value as the kernel's last parameter; the
// generated source declares the same struct and static_asserts its size.
// Strides are in elements of the tensor's own type; the last dim (head dim;
// key for the mask and qk output) is contiguous. A mask stride of 0 broadcasts.
struct GenericAttentionParams {
  int64_t q_stride_b, q_stride_h, q_stride_s;                 // Q [B, Hq, Lq, D]
  int64_t k_stride_b, k_stride_h, k_stride_s;                 // K [B, Hkv, Lkv, D]
  int64_t v_stride_b, v_stride_h, v_stride_s;                 // V [B, Hkv, Lkv, Dv]
  int64_t pk_stride_b, pk_stride_h, pk_stride_s;              // past_key [B, Hkv, P, D]
  int64_t pv_stride_b, pv_stride_h, pv_stride_s;              // past_value [B, Hkv, P, Dv]
  int64_t y_stride_b, y_stride_h, y_stride_s;                 // Y [B, Hq, Lq, Dv]
  int64_t prk_stride_b, prk_stride_h, prk_stride_s;           // present_key [B, Hkv, T, D]
  int64_t prv_stride_b, prv_stride_h, prv_stride_s;           // present_value [B, Hkv, T, Dv]
  int64_t qk_stride_b, qk_stride_h, qk_stride_q;              // qk_matmul_output [B, Hq, Lq, T]
  int64_t m_stride_b, m_stride_h, m_stride_q, m_stride_k;     // mask as [B, Hq, Lq, mask_len]
  int32_t batch, q_heads, kv_heads, q_len, kv_len, past_len;  // T = past_len + kv_len
  int32_t mask_len;                   // the mask's last dim (<= T): keys j >= mask_len are masked
  int32_t causal_offset;              // off without nonpad: key j <= i + off (ONNX: past_len)
  int32_t left_window, right_window;  // -1: unbounded
  float scale_sqrt;  // sqrt(scale), applied to Q and to K as ONNX does (NaN for a negative
                     // scale): generic_attention_scale_sqrt(scale)
  float softcap;     // > 0 when spec.softcap
};
static_assert(sizeof(GenericAttentionParams) == 296,
              "GenericAttentionParams is part of the kernel ABI");
static_assert(offsetof(GenericAttentionParams, batch) == 248);
static_assert(offsetof(GenericAttentionParams, scale_sqrt) == 288);

// sqrt(scale) in double rounded once to float (NaN for a negative scale).
float generic_attention_scale_sqrt(double scale);

// The kernel's pointer parameters, in order.
enum class GenericAttentionArg {
  kQ,
  kK,
  kV,
  kMask,
  kPastKey,
  kPastValue,
  kNonpad,
  kY,
  kPresentKey,
  kPresentValue,
  kQkOutput
};
std::vector<GenericAttentionArg> generic_attention_kernel_args(const GenericAttentionSpec& spec);
const char* generic_attention_arg_name(GenericAttentionArg a);

// Checks the spec: dtypes, head dims 1..256, mask dtype for its kind, qk mode,
// tile (1..16 warps, 1..8 rows per warp) and shared memory (<= 227 KiB).
Status validate_generic_attention_spec(const GenericAttentionSpec& spec);
// Checks run-time arguments against the spec: batch and heads >= 1 (an empty
// batch or head count needs no launch), lengths >= 0, T within int32, Hq a
// multiple of Hkv, grid limits, strides >= 0, past_len 0 without past,
// mask_len 0..T, window sizes >= -1, softcap > 0 with spec.softcap.
Status validate_generic_attention_params(const GenericAttentionSpec& spec,
                                         const GenericAttentionParams& p);

// Dynamic shared memory bytes (over 48 KiB needs
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, set from the launch shape).
int64_t generic_attention_shared_bytes(const GenericAttentionSpec& spec);

// The tile for the spec's head dims and, when known, the query length
// (0: unknown): 4 row warps x 4 rows for prefill; for decode (Lq <= 4) one row
// warp of Lq rows and up to 4 key warps; shared memory kept <= 96 KiB (fits
// every arch from sm_80 on; `sm` is accepted for a per-arch table later).
GenericAttentionTile default_generic_attention_tile(const GenericAttentionSpec& spec,
                                                    int64_t q_len = 0, int sm = 90);
std::string generic_attention_tile_name(const GenericAttentionTile& t);  // "wq4_wk1_r4"

// A deterministic entry name unique per spec:
// graphc_attn_generic_<dtype>_d<D>_v<Dv>_<mask>[_causal][_cap][_win][_past][_np][_pk][_pv][_qk<m>]_<tile>.
std::string generic_attention_entry_name(const GenericAttentionSpec& spec);

// The whole CUDA source (includes, device helpers, the params struct, one
// extern "C" __global__ entry named `entry_name`); byte-identical for the same
// spec and name. The spec must validate.
// `sized_params`: as attention_kernel_source's (a range build), "" for static.
std::string generic_attention_kernel_source(const GenericAttentionSpec& spec,
                                            const std::string& entry_name,
                                            const std::string& sized_params = "");

// Grid (max(1, ceil(Lq / block_q)), Hq, B), block (warps·32), dynamic shared memory.
LaunchShape generic_attention_launch_shape(const GenericAttentionSpec& spec,
                                           const GenericAttentionParams& p);

// Which optional outputs of the node exist.
struct GenericAttentionOutputs {
  bool present_key = false;
  bool present_value = false;
  bool qk_matmul_output = false;
};
struct GenericAttentionLaunch {
  GenericAttentionSpec spec;
  GenericAttentionParams params;
};
// The spec and params of a resolved Attention node (ir::attention_params) with
// contiguous tensors in the node's layouts (3-D or 4-D Q/K/V/Y; 4-D past,
// present; [B, Hq, Lq, T] qk output; the mask right-aligned, size-1 dims
// broadcast), the default tile for `sm`, validated. float64 is refused.
Expected<GenericAttentionLaunch> generic_attention_from_ir(const ir::AttentionParams& a,
                                                           const GenericAttentionOutputs& outputs,
                                                           int sm = 90);

namespace detail {
// The source without its CUDA-specific prelude, over these helpers:
//   float* smem_base(); float ldf(const T*) for T = elem_t; void stf(elem_t*, float);
//   void ldg_vec(const elem_t*, float (&)[16 / sizeof(elem_t)]) (16-byte aligned);
//   bool ld_bool(const unsigned char*); float ld_add(const mask_t*);
//   template <int N> void lds(const float*, float (&)[N]) (N = 1, 2, 4; 4·N-byte aligned);
//   float/double warp_max(float/double); float warp_sum(float); bool warp_any(bool);
//   float/double gmax(a, b) (fmax); float neg_inf(); float rcp(float) (1/x within an ulp);
//   and threadIdx, blockIdx, gridDim, __syncthreads, __syncwarp, expf, tanhf, sqrtf, fmaxf.
// The host emulator (tests/emu/attention_generic_emu.cpp) supplies its own.
std::string generic_attention_portable_source(const GenericAttentionSpec& spec,
                                              const std::string& entry_name,
                                              const std::string& sized_params = "");
}  // namespace detail

}  // namespace graphc::emit
