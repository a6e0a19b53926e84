// The float16/bfloat16 tensor-core GEMM for sm_80 and newer (cuda_gemm_tile.h
// describes the problem and the bodies): mma.sync.m16n8k16 with float
// accumulators, operands staged in shared memory by a cp.async pipeline of
// STAGES K slices and read into fragments with ldmatrix.
//
// Fragment layouts (PTX ISA, 16-bit A/B, f32 C; lane = 4g + t): A a0:(g, 2t..)
// a1:(g+8, 2t..) a2:(g, 2t+8..) a3:(g+8, 2t+8..); B b0:(k 2t.., n g)
// b1:(k 2t+8.., n g); C c0,c1:(g, 2t..2t+1) c2,c3:(g+8, 2t..). ldmatrix.x4
// gives lane l row l/4, columns 2(l%4).. of the 8x8 matrix whose rows lanes
// 8i..8i+7 address, .trans its transpose. Each operand is staged in the
// orientation it has in memory (A as [m][k] or, transposed, [k][m]; B as
// [k][n] or [n][k]) so the copies stay 16-byte chunks; ldmatrix or
// ldmatrix.trans then yields the same fragments either way.
//
// Shared rows are 16-byte chunks XOR-swizzled by row (chunk ^ (row & 7) for
// rows of 8+ chunks, chunk ^ ((row >> 1) & 3) for the 4-chunk rows of a
// 32-wide K slice): the eight rows an ldmatrix phase reads, and the chunks a
// warp's copies write, fall in distinct banks without padding.
//
// An operand read unchanged from a kernel parameter whose rows are whole
// chunks (leading dim and contiguous extent multiples of 8) is copied with
// cp.async when its pointer is 16-byte aligned (checked at run time; views
// may start anywhere); any other operand (a fused prologue, odd K, a strided
// view) is read element by element through the frame into the same layout,
// in the same pipeline slot. Out-of-range chunks are zero-filled, so any M,
// N, K works. The accumulators go through shared memory (64 rows at a time,
// in the freed slots) so the epilogue, with the same (gm, gn, v) as the other
// tiles, runs on consecutive columns per warp: its stores coalesce.
//
// Every PTX instruction is a small device function (gm_*) under
// #ifndef GRAPHC_HOST_EMU: the kernel emulator's shim
// (tests/emu/cuda_host_shim.h) supplies host versions with the same
// fragment layouts.
#include <fmt/format.h>

#include <algorithm>

#include "emit/cuda/cuda_gemm_tile.h"

namespace graphc::emit {

// Outside the anonymous namespace: the int8 conv (cuda_conv_int8.cpp) uses them too.
const char* const kMmaPtxHelpers = R"(#ifndef GRAPHC_HOST_EMU
#define GM_DEV __device__ __forceinline__
// 16 bytes global -> shared, bypassing L1; bytes < 16 zero-fills the rest.
GM_DEV void gm_cp_async16(void* dst, const void* src, int bytes) {
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(bytes) : "memory");
}
GM_DEV void gm_cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> GM_DEV void gm_cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }
GM_DEV void gm_ldsm_x4(const void* p, unsigned (&r)[4]) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
GM_DEV void gm_ldsm_x4_t(const void* p, unsigned (&r)[4]) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
// D = A B + D, m16n8k16, f32 accumulators.
GM_DEV void gm_mma_f16(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
GM_DEV void gm_mma_bf16(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif
// Element offset of column `col` of row `row` in a tile of C 16-byte chunks per row.
template <int C> __device__ __forceinline__ int gm_swz(int row, int col) {
  const int x = C >= 8 ? (row & 7) : ((row >> 1) & 3);
  return (row * C + ((col >> 3) ^ x)) * 8 + (col & 7);
}
// The same in bytes: byte `col` of row `row` (gm_swz8<C>(r, 2 * c) is 2 * gm_swz<C>(r, c)).
template <int C> __device__ __forceinline__ int gm_swz8(int row, int col) {
  const int x = C >= 8 ? (row & 7) : ((row >> 1) & 3);
  return (row * C + ((col >> 4) ^ x)) * 16 + (col & 15);
}
// Fragments of one m16n8 mma step from k-contiguous shared tiles, in bytes so
// that one helper serves m16n8k16 (16-bit) and m16n8k32 (8-bit): both read
// 32 bytes of K, and ldmatrix (b16) over 16-byte rows gives each lane the
// bytes the PTX fragment layout wants for either width.
// A: rows row0..row0+15 from byte kb; lane l addresses row l % 16 at byte 16 (l / 16).
template <int C>
__device__ __forceinline__ void gm_frag_a(const void* tile, int row0, int kb, int lane, unsigned (&a)[4]) {
  gm_ldsm_x4(static_cast<const unsigned char*>(tile) + gm_swz8<C>(row0 + lane % 16, kb + (lane / 16) * 16), a);
}
// B stored [n][k]: the fragments of the two n8 blocks at n0 and n0 + 8; matrix
// j = l / 8 is n half j >> 1, k half j & 1, and lane l addresses its row l % 8.
template <int C>
__device__ __forceinline__ void gm_frag_b2(const void* tile, int n0, int kb, int lane, unsigned (&b0)[2],
                                           unsigned (&b1)[2]) {
  const int j = lane / 8;
  unsigned q[4];
  gm_ldsm_x4(static_cast<const unsigned char*>(tile) + gm_swz8<C>(n0 + lane % 8 + (j >> 1) * 8, kb + (j & 1) * 16), q);
  b0[0] = q[0];
  b0[1] = q[1];
  b1[0] = q[2];
  b1[1] = q[3];
}
// This lane's part of one m16n8 accumulator into a row-major tile (leading dim
// ld) at (row0, col0): c0, c1 at row g, columns 2t and 2t + 1; c2, c3 at row g + 8.
template <class T>
__device__ __forceinline__ void gm_store_acc(T* tile, int ld, int row0, int col0, int lane, const T (&c)[4]) {
  const int r = row0 + lane / 4, col = col0 + 2 * (lane % 4);
  tile[r * ld + col] = c[0];
  tile[r * ld + col + 1] = c[1];
  tile[(r + 8) * ld + col] = c[2];
  tile[(r + 8) * ld + col + 1] = c[3];
}
)";

namespace {

constexpr int64_t kSmCount = 132;  // H100 SXM; only steers the tile-size choice

struct MmaConfig {
  int64_t bm, bn, threads, warps_n, stages;
};


// The kernel body after its constants (see the file comment).
const char* const kMmaBody = R"(
  constexpr int WARPS_M = NT / 32 / WARPS_N, WM = BM / WARPS_M, WN = BN / WARPS_N;
  constexpr int MI = WM / 16, NI = WN / 8;
  // A stage: A as [BM][BK] (k contiguous) or [BK][BM]; B as [BK][BN] or [BN][BK].
  constexpr int A_ROWS = A_KFAST ? BM : BK, A_COLS = A_KFAST ? BK : BM;
  constexpr int B_ROWS = B_NFAST ? BK : BN, B_COLS = B_NFAST ? BN : BK;
  constexpr int A_CH = A_COLS / 8, B_CH = B_COLS / 8;
  constexpr int A_STAGE = BM * BK, B_STAGE = BK * BN, KT = (kK + BK - 1) / BK;
  // The pipeline's slots, then (after the last slice) the accumulators of up
  // to 64 rows at a time as floats, for the epilogue.
  constexpr int C_ROWS = BM < 64 ? BM : 64, LDC = BN + 4;
  constexpr int SLOT_BYTES = STAGES * (A_STAGE + B_STAGE) * 2, C_BYTES = C_ROWS * LDC * 4;
  __shared__ __align__(128) unsigned char smem[SLOT_BYTES > C_BYTES ? SLOT_BYTES : C_BYTES];
  elem_t* const sA = reinterpret_cast<elem_t*>(smem);
  elem_t* const sB = sA + STAGES * A_STAGE;
  float* const sC = reinterpret_cast<float*>(smem);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
  const unsigned tm = N_FAST ? blockIdx.x / TILES_N : blockIdx.x % TILES_M;
  const unsigned tn = N_FAST ? blockIdx.x % TILES_N : blockIdx.x / TILES_M;
  const int m0 = (int)tm * BM, n0 = (int)tn * BN;
  const bool a_vec = A_DIRECT && (unsigned long long)(A_PTR) % 16 == 0;
  const bool b_vec = B_DIRECT && (unsigned long long)(B_PTR) % 16 == 0;
  for (long long b = blockIdx.z; b < kBatches; b += gridDim.z) {
@BATCH_SETUP@
    auto a_at = [&](int gm, int gk) -> acc_t {
@A_BODY@
    };
    auto b_at = [&](int gk, int gn) -> acc_t {
@B_BODY@
    };
    auto load_a = [&](int stage, int k0) {
      elem_t* s = sA + stage * A_STAGE;
      if (a_vec) {
#pragma unroll
        for (int r = 0; r < A_ROWS * A_CH / NT; ++r) {
          const int e = tid + r * NT, row = e / A_CH, col = (e % A_CH) * 8;
          const int gm = m0 + (A_KFAST ? row : col), gk = k0 + (A_KFAST ? col : row);
          const bool ok = gm < kM && gk < kK;
          const long long at = A_KFAST ? (long long)gm * A_LD + gk : (long long)gk * A_LD + gm;
          gm_cp_async16(s + gm_swz<A_CH>(row, col), ok ? A_PTR + (A_OFF + at) : A_PTR, ok ? 16 : 0);
        }
      } else {
#pragma unroll 4
        for (int r = 0; r < A_STAGE / NT; ++r) {
          const int e = tid + r * NT, row = e / A_COLS, col = e % A_COLS;
          const int gm = m0 + (A_KFAST ? row : col), gk = k0 + (A_KFAST ? col : row);
          s[gm_swz<A_CH>(row, col)] = TO_ELEM((gm < kM && gk < kK) ? a_at(gm, gk) : (acc_t)0);
        }
      }
    };
    auto load_b = [&](int stage, int k0) {
      elem_t* s = sB + stage * B_STAGE;
      if (b_vec) {
#pragma unroll
        for (int r = 0; r < B_ROWS * B_CH / NT; ++r) {
          const int e = tid + r * NT, row = e / B_CH, col = (e % B_CH) * 8;
          const int gn = n0 + (B_NFAST ? col : row), gk = k0 + (B_NFAST ? row : col);
          const bool ok = gn < kN && gk < kK;
          const long long at = B_NFAST ? (long long)gk * B_LD + gn : (long long)gn * B_LD + gk;
          gm_cp_async16(s + gm_swz<B_CH>(row, col), ok ? B_PTR + (B_OFF + at) : B_PTR, ok ? 16 : 0);
        }
      } else {
#pragma unroll 4
        for (int r = 0; r < B_STAGE / NT; ++r) {
          const int e = tid + r * NT, row = e / B_COLS, col = e % B_COLS;
          const int gn = n0 + (B_NFAST ? col : row), gk = k0 + (B_NFAST ? row : col);
          s[gm_swz<B_CH>(row, col)] = TO_ELEM((gn < kN && gk < kK) ? b_at(gk, gn) : (acc_t)0);
        }
      }
    };
    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NI; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < KT) {
        load_a(s, s * BK);
        load_b(s, s * BK);
      }
      gm_cp_commit();
    }
    // ldmatrix lane roles: x4 without .trans, lane l addresses row l % 16 at
    // column 8 (l / 16); with .trans (and for B), matrix j = l / 8, row r = l % 8.
    const int lj = lane / 8, lr = lane % 8;
    for (int kt = 0; kt < KT; ++kt) {
      gm_cp_wait<STAGES - 2>();  // slice kt has landed (this thread's copies)
      __syncthreads();           // ... everyone's, and slot kt - 1 is free
      {
        const int nk = kt + STAGES - 1;
        if (nk < KT) {
          load_a(nk % STAGES, nk * BK);
          load_b(nk % STAGES, nk * BK);
        }
        gm_cp_commit();
      }
      const elem_t* sa = sA + (kt % STAGES) * A_STAGE;
      const elem_t* sb = sB + (kt % STAGES) * B_STAGE;
#pragma unroll
      for (int kk = 0; kk < BK; kk += 16) {
        unsigned af[MI][4], bfr[NI][2];
#pragma unroll
        for (int i = 0; i < MI; ++i) {
          if (A_KFAST)
            gm_frag_a<A_CH>(sa, wm + i * 16, 2 * kk, lane, af[i]);
          else
            gm_ldsm_x4_t(sa + gm_swz<A_CH>(kk + lr + (lj >> 1) * 8, wm + i * 16 + (lj & 1) * 8), af[i]);
        }
#pragma unroll
        for (int p = 0; p < NI / 2; ++p) {
          if (B_NFAST) {
            unsigned q[4];
            gm_ldsm_x4_t(sb + gm_swz<B_CH>(kk + lr + (lj & 1) * 8, wn + p * 16 + (lj >> 1) * 8), q);
            bfr[2 * p][0] = q[0];
            bfr[2 * p][1] = q[1];
            bfr[2 * p + 1][0] = q[2];
            bfr[2 * p + 1][1] = q[3];
          } else {
            gm_frag_b2<B_CH>(sb, wn + p * 16, 2 * kk, lane, bfr[2 * p], bfr[2 * p + 1]);
          }
        }
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int j = 0; j < NI; ++j) GM_MMA(acc[i][j], af[i], bfr[j]);
      }
    }
    gm_cp_wait<0>();
    __syncthreads();  // the slots are free: the accumulators go through them
    // C_ROWS rows at a time: the warps holding them store their fragments,
    // then every thread runs the epilogue on consecutive columns (stores of
    // a warp are contiguous in memory).
#pragma unroll
    for (int h = 0; h < BM / C_ROWS; ++h) {
      if (wm / C_ROWS == h) {
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int j = 0; j < NI; ++j) gm_store_acc(sC, LDC, wm - h * C_ROWS + i * 16, wn + j * 8, lane, acc[i][j]);
      }
      __syncthreads();
      for (int e = tid; e < C_ROWS * BN; e += NT) {
        const int gm = m0 + h * C_ROWS + e / BN, gn = n0 + e % BN;
        if (gm < kM && gn < kN) {
          const acc_t v = sC[(e / BN) * LDC + e % BN];
@EPILOGUE@
        }
      }
      __syncthreads();  // before the next rows (or the next batch's slices) reuse it
    }
  }
)";

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

Expected<GeneratedKernel> emit_mma_gemm(const AnchorFrame& frame, const std::string& prefix,
                                        const TiledGemmSpec& spec) {
  const bool bf16 = spec.dtype == ir::DType::kBFloat16;
  if (!bf16 && spec.dtype != ir::DType::kFloat16)
    return internal_error("node '{}': the mma.sync GEMM is for float16/bfloat16 only",
                          frame.node_name);
  // 128x128 tiles (8 warps of 64x32, 3 stages: 48 KiB) when there are enough
  // of them to fill the GPU, else 64x64 (4 warps of 32x32, 4 stages: 32 KiB).
  const int64_t batches = std::max<int64_t>(spec.batches, 1);
  const MmaConfig c = batches * ceil_div(spec.m, 128) * ceil_div(spec.n, 128) >= kSmCount
                          ? MmaConfig{128, 128, 256, 4, 3}
                          : MmaConfig{64, 64, 128, 2, 4};
  const int64_t tiles_m = std::max<int64_t>(1, ceil_div(spec.m, c.bm));
  const int64_t tiles_n = std::max<int64_t>(1, ceil_div(spec.n, c.bn));
  const int64_t tiles = tiles_m * tiles_n;
  // Blocks in flight together share operand tiles in L2: along M (one B
  // column panel) as a rule, along N when the grid is tall and narrow (the
  // few blocks of one A row panel run together, so A is read from HBM once).
  const bool n_fast = tiles_n * 16 <= tiles_m;
  // cp.async needs whole 16-byte chunks: rows of the contiguous extent and
  // leading dim in multiples of 8 elements (the batch offsets then are too).
  auto direct = [](const std::optional<DirectOperand>& d, int64_t contiguous_extent) {
    return d && !d->pointer.empty() && d->ld % 8 == 0 && contiguous_extent % 8 == 0;
  };
  const bool a_direct = direct(spec.a_direct, spec.a_contiguous_k ? spec.k : spec.m);
  const bool b_direct = direct(spec.b_direct, spec.b_contiguous_n ? spec.n : spec.k);
  const std::string elem = bf16 ? "__nv_bfloat16" : "__half";
  std::string body = fmt::format(
      "  typedef float acc_t;\n  typedef {elem} elem_t;\n"
      "  constexpr int kM = {m}, kN = {n}, kK = {k};\n"
      "  constexpr long long kBatches = {batches}LL;\n"
      "  constexpr int BM = {bm}, BN = {bn}, BK = 32, NT = {nt}, WARPS_N = {wn}, STAGES = {st};\n"
      "  constexpr unsigned TILES_M = {tiles_m}u, TILES_N = {tiles_n}u;\n"
      "  constexpr bool N_FAST = {n_fast};\n"
      "  constexpr bool A_KFAST = {akf}, B_NFAST = {bnf}, A_DIRECT = {ad}, B_DIRECT = {bd};\n"
      "  constexpr long long A_LD = {ald}LL, B_LD = {bld}LL;\n",
      fmt::arg("elem", elem), fmt::arg("m", spec.m), fmt::arg("n", spec.n),
      fmt::arg("k", spec.k), fmt::arg("batches", spec.batches), fmt::arg("bm", c.bm),
      fmt::arg("bn", c.bn), fmt::arg("nt", c.threads), fmt::arg("wn", c.warps_n),
      fmt::arg("st", c.stages), fmt::arg("tiles_m", tiles_m), fmt::arg("tiles_n", tiles_n),
      fmt::arg("n_fast", n_fast ? "true" : "false"),
      fmt::arg("akf", spec.a_contiguous_k ? "true" : "false"),
      fmt::arg("bnf", spec.b_contiguous_n ? "true" : "false"),
      fmt::arg("ad", a_direct ? "true" : "false"), fmt::arg("bd", b_direct ? "true" : "false"),
      fmt::arg("ald", a_direct ? spec.a_direct->ld : 0),
      fmt::arg("bld", b_direct ? spec.b_direct->ld : 0));
  body += kMmaBody;
  replace_all(body, "A_PTR", a_direct ? spec.a_direct->pointer : "(const elem_t*)nullptr");
  replace_all(body, "B_PTR", b_direct ? spec.b_direct->pointer : "(const elem_t*)nullptr");
  replace_all(body, "A_OFF", a_direct ? "(" + spec.a_direct->offset + ")" : "0LL");
  replace_all(body, "B_OFF", b_direct ? "(" + spec.b_direct->offset + ")" : "0LL");
  replace_all(body, "TO_ELEM", bf16 ? "__float2bfloat16_rn" : "__float2half_rn");
  replace_all(body, "GM_MMA", bf16 ? "gm_mma_bf16" : "gm_mma_f16");
  replace_all(body, "@BATCH_SETUP@", spec.batch_setup);
  replace_all(body, "@A_BODY@", spec.a_body);
  replace_all(body, "@B_BODY@", spec.b_body);
  replace_all(body, "@EPILOGUE@", spec.epilogue);
  LaunchShape launch;
  launch.grid = {tiles, 1, std::clamp<int64_t>(spec.batches, 1, 65535)};
  launch.block = {c.threads, 1, 1};
  ASSIGN_OR_RETURN(GeneratedKernel k, finish_anchor_kernel(frame, prefix,
                                                           spec.helpers + kMmaPtxHelpers, body, launch));
  // Two blocks per SM (at most 128 registers a thread for the 128x128 tiles):
  // more warps to hide the shared-memory and tensor-core latencies.
  const std::string entry = "extern \"C\" __global__ void ";
  const size_t at = k.source.find(entry);
  if (at == std::string::npos)
    return internal_error("node '{}': no kernel entry in the GEMM source", frame.node_name);
  k.source.insert(at + entry.size(), fmt::format("__launch_bounds__({}, 2) ", c.threads));
  return k;
}

}  // namespace graphc::emit
