// One fused flash-attention forward kernel per AttentionKernelSpec
// (FlashAttention-2 style), as CUDA C++ for NVRTC: no IR dependency, so the
// generator, its tile table and its launch shapes are unit-testable without a
// graph or a GPU.
//
//   O[b, h, i, :] = softmax_j( s(i, j) ) · V[b, h / (Hq / Hkv), j, :]
//   s(i, j) = [softcap · tanh(scale · q_i·k_j / softcap)] + mask[b, h, i, j]
//   key j is dropped (s = -inf) when causal and j > i + causal_offset, or when
//   a boolean mask is false there.
//
// The kernel: one CTA per (Br query rows, head, batch); Q is staged through
// shared memory into registers (or kept in shared memory for large head dims),
// K and V tiles of Bc keys stream through a multi-stage cp.async pipeline
// (16-byte copies, zero-filled past the sequence and the head dim), S = Q·Kᵀ
// and O += P·V run on mma.sync.m16n8k16 with fp32 accumulators (ldmatrix for
// K, ldmatrix.trans for V), the S accumulator fragment becomes the A fragment
// of the P·V product in registers (no shared-memory round trip), the online
// softmax keeps fp32 row max and sum and uses ex2 with log2(e) folded into the
// scale. Rows whose every key is masked give exactly 0. The output is rounded
// once and written with 16-byte stores through shared memory, in whatever
// layout the strides say ([B,H,L,Dv] or [B,L,H·Dv]).
//
// Kernel parameters, in order: q, k, v, [mask], out (device pointers to the
// element type; the mask's is mask_dtype), then `AttentionParams p` by value.
// Sizes are run-time (AttentionParams); only the dtypes, head dims, mask kind,
// causal, softcap and the tile are compile-time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "emit/cuda/anchor_frame.h"  // LaunchShape
#include "ir/dtype.h"
#include "support/status.h"

namespace graphc::emit {

// The CTA tile of one kernel: `block_q` query rows in `warps` warps (16 or
// 32 rows each: block_q == warps * 16 * m-blocks per warp), `block_kv` keys
// per K/V tile, `stages` K/V tiles in flight (2 or 3: a cp.async ring; 1: one
// K and one V buffer, the V load overlapping Q·Kᵀ and the next K load the
// softmax and P·V, as FlashAttention-2 does), Q fragments held in registers
// for the whole CTA (`q_in_regs`) or re-read from shared memory each tile.
// `min_blocks` goes to __launch_bounds__ (CTAs per SM the registers must allow).
struct AttentionTile {
  int block_q = 128;
  int block_kv = 64;
  int warps = 8;
  int stages = 2;
  bool q_in_regs = true;
  int min_blocks = 1;

  int rows_per_warp() const { return warps > 0 ? block_q / warps : 0; }
  bool operator==(const AttentionTile&) const = default;
};

struct AttentionKernelSpec {
  enum class Mask { kNone, kAdditive, kBoolean };
  ir::DType dtype = ir::DType::kFloat16;  // Q, K, V and O: kFloat16 or kBFloat16
  int head_dim = 64;                      // D of Q and K: 32..256, a multiple of 8
  int head_dim_v = 64;                    // D of V and O: 32..256, a multiple of 8
  bool causal = false;                    // key j allowed iff j <= i + p.causal_offset
  Mask mask = Mask::kNone;
  // kAdditive: kFloat16, kBFloat16 or kFloat32; kBoolean: kUInt8 or kBool (nonzero = attend).
  ir::DType mask_dtype = ir::DType::kUndefined;
  bool softcap = false;  // s = p.softcap * tanh(s / p.softcap), before the mask
  AttentionTile tile;    // default_attention_tile() or one of attention_tile_variants()

  bool operator==(const AttentionKernelSpec&) const = default;
};

// The run-time arguments, passed by value as the kernel's last parameter. The
// generated source declares the same struct (same order, same types) and
// static_asserts its size and offsets. Strides are in elements of the tensor's
// own type; the last dimension (head dim, or key for the mask) is contiguous
// for Q/K/V/O. A 0 stride broadcasts (masks: [B,1,1,Lk], [1,1,Lq,Lk] ...).
struct AttentionParams {
  int64_t q_stride_b, q_stride_h, q_stride_s;  // Q [B, Hq, Lq, D] in any order of b/h/s
  int64_t k_stride_b, k_stride_h, k_stride_s;  // K [B, Hkv, Lk, D]
  int64_t v_stride_b, v_stride_h, v_stride_s;  // V [B, Hkv, Lk, Dv]
  int64_t o_stride_b, o_stride_h, o_stride_s;  // O [B, Hq, Lq, Dv]
  int64_t m_stride_b, m_stride_h, m_stride_q, m_stride_k;  // mask [B, Hq, Lq, Lk] (0: broadcast)
  int32_t batch, q_heads, kv_heads, q_len, kv_len;
  int32_t causal_offset;  // key j allowed iff j <= i + causal_offset (ONNX Attention: 0)
  float scale;            // usually 1/sqrt(D); any finite value (negative too)
  float softcap;          // > 0 when the spec has softcap
};
static_assert(sizeof(AttentionParams) == 160, "AttentionParams layout is part of the kernel ABI");
static_assert(offsetof(AttentionParams, batch) == 128);
static_assert(offsetof(AttentionParams, causal_offset) == 148);
static_assert(offsetof(AttentionParams, softcap) == 156);

// Contiguous strides for [B, H, L, D] (`bhsd`) or [B, L, H*D] (`bshd` = false).
void set_attention_strides_bhsd(int64_t& sb, int64_t& sh, int64_t& ss, int64_t heads,
                                int64_t len, int64_t dim);
void set_attention_strides_bshd(int64_t& sb, int64_t& sh, int64_t& ss, int64_t heads,
                                int64_t len, int64_t dim);

// Head dims rounded up for the tensor cores (multiples of 16).
int attention_padded_dim(int dim);

// Checks the spec (dtypes, head dims, tile shape, shared memory <= 227 KiB).
Status validate_attention_spec(const AttentionKernelSpec& spec);
// Checks run-time arguments against the spec: positive sizes, q_heads a
// multiple of kv_heads, grid limits, Q/K/V/O strides over (b, h, s) multiples
// of 8 elements (16-byte copies; the pointers must be 16-byte aligned too),
// softcap > 0 when the spec has it.
Status validate_attention_params(const AttentionKernelSpec& spec, const AttentionParams& p);

// Dynamic shared memory bytes of the spec's kernel.
int64_t attention_shared_bytes(const AttentionKernelSpec& spec);

// The tile the spec's head dims get by default on `sm` (80, 86, 89, 90) and,
// when known, the run-time lengths (0: unknown). A table by head dim / arch.
AttentionTile default_attention_tile(const AttentionKernelSpec& spec, int sm = 90,
                                     int64_t q_len = 0, int64_t kv_len = 0);
// Every tile worth timing for the spec's head dims (valid ones only), the
// default first. The benchmark runs each.
std::vector<AttentionTile> attention_tile_variants(const AttentionKernelSpec& spec);
// "q128_kv64_w8_s2_qr": for logs and benchmark output.
std::string attention_tile_name(const AttentionTile& tile);

// A deterministic entry name unique per spec: graphc_attn_<dtype>_d<D>_v<Dv>_...
std::string attention_entry_name(const AttentionKernelSpec& spec);

// The whole CUDA source (includes, device helpers, the params struct, one
// extern "C" __global__ entry named `entry_name`). The same spec and name give
// byte-identical source. The spec must validate.
// `sized_params` (a range build, attention_range.h): the text of
// `graphc_attn_params(sz)`, which computes the parameter block from the size
// block the kernel then takes in its place; "" for a static kernel.
std::string attention_kernel_source(const AttentionKernelSpec& spec, const std::string& entry_name,
                                    const std::string& sized_params = "");

// Grid (query tiles, q_heads, batch), block (warps * 32) and dynamic shared
// memory. Over 48 KiB needs CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
// (the runtime sets it from the launch's shared_bytes).
LaunchShape attention_launch_shape(const AttentionKernelSpec& spec, const AttentionParams& p);

// FLOPs of one launch as benchmarks count them: 2·B·Hq·Lq·Lk·(D + Dv), halved
// for causal with Lq == Lk (the usual 4·B·H·L²·D / 2 when D == Dv).
double attention_flops(const AttentionKernelSpec& spec, const AttentionParams& p);

namespace detail {
// The source without its CUDA-specific helper prelude (the params struct,
// constants, tile loops and the kernel), over these helpers:
//   unsigned smem_base_u32(); void cp_async16(unsigned, const void*, int);
//   void cp_async_commit(); template <int N> void cp_async_wait();
//   void ldsm_x4(unsigned, unsigned&, unsigned&, unsigned&, unsigned&); ldsm_x4_t(...);
//   void mma16816(float (&)[4], const unsigned (&)[4], unsigned, unsigned);
//   unsigned pack2(float lo, float hi); float ex2(float); float fast_rcp(float);
//   float shfl_xor(float, int); bool warp_any(bool); float ld_mask(const mask_t*);
//   void st_shared_u32(unsigned, unsigned); uint4 ld_shared_v4(unsigned);
//   void st_global_v4(void*, uint4); unsigned ld_shared_u32(unsigned);
//   void st_shared_u32(unsigned, unsigned); float neg_inf();
// A host emulator (tests/emu/attention_emu.cpp) supplies its own versions to
// check fragment layouts and the pipeline's waits without a GPU.
std::string attention_portable_source(const AttentionKernelSpec& spec, const std::string& entry_name,
                                      const std::string& sized_params = "");
}  // namespace detail

}  // namespace graphc::emit
