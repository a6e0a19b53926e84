// Host versions of the primitives the fused attention kernel's portable
// source is written over (emit/cuda_attention.h, detail::), for
// tests/emu/attention_emu.cpp: one std::thread per CUDA thread, a block
// barrier, warp-collective ldmatrix / mma.m16n8k16 / shuffles through a
// per-warp exchange with the PTX ISA's fragment layouts, shared memory as a
// byte array addressed by the kernel's 32-bit offsets, and cp.async with its
// commit groups: in lazy mode a copy lands only when a wait_group forces it
// (a read before the wait sees stale bytes), in eager mode at issue (a copy
// into a buffer other warps still read shows as a race). Define
// EMU_BF16 for bfloat16 operands.
#pragma once

#include <algorithm>
#include <array>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#define __global__
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define G_DEV inline

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
inline thread_local dim3 threadIdx, blockIdx;
struct uint4 {
  unsigned x, y, z, w;
};
struct __half {
  uint16_t bits;
};
struct __nv_bfloat16 {
  uint16_t bits;
};
inline int min(int a, int b) { return a < b ? a : b; }

namespace emu {

inline float half_to_float(uint16_t h) {
  _Float16 f;
  std::memcpy(&f, &h, 2);
  return static_cast<float>(f);
}
inline uint16_t float_to_half(float x) {
  _Float16 f = static_cast<_Float16>(x);
  uint16_t h;
  std::memcpy(&h, &f, 2);
  return h;
}
inline float bf16_to_float(uint16_t b) {
  uint32_t u = uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}
#ifdef EMU_BF16
inline float op_to_float(uint16_t b) { return bf16_to_float(b); }
inline uint16_t float_to_op(float f) { return float_to_bf16(f); }
#else
inline float op_to_float(uint16_t b) { return half_to_float(b); }
inline uint16_t float_to_op(float f) { return float_to_half(f); }
#endif

struct Copy {
  unsigned dst;
  const void* src;
  int bytes;
};

struct Block {
  std::vector<unsigned char> smem;
  std::unique_ptr<std::barrier<>> bar;
  std::vector<std::unique_ptr<std::barrier<>>> warp_bar;
  std::vector<std::array<std::array<uint32_t, 8>, 32>> xchg;  // per warp, per lane
  bool eager = false;
};
inline Block* g_block = nullptr;
inline thread_local unsigned t_lane = 0, t_warp = 0;
inline thread_local std::vector<Copy> t_pending;
inline thread_local std::deque<std::vector<Copy>> t_groups;

inline void do_copy(const Copy& c) {
  unsigned char* d = g_block->smem.data() + c.dst;
  if (c.bytes > 0) std::memcpy(d, c.src, static_cast<size_t>(c.bytes));
  std::memset(d + c.bytes, 0, static_cast<size_t>(16 - c.bytes));
}

// Every lane publishes up to 8 words, then reads any lane's.
template <class F>
void warp_exchange(const uint32_t* mine, int n, F&& use) {
  auto& x = g_block->xchg[t_warp];
  for (int i = 0; i < n; ++i) x[t_lane][i] = mine[i];
  g_block->warp_bar[t_warp]->arrive_and_wait();
  use(x);
  g_block->warp_bar[t_warp]->arrive_and_wait();
}

}  // namespace emu

inline void __syncthreads() { emu::g_block->bar->arrive_and_wait(); }
inline void __syncwarp() { emu::g_block->warp_bar[emu::t_warp]->arrive_and_wait(); }

G_DEV unsigned smem_base_u32() { return 0; }
G_DEV void cp_async16(unsigned dst, const void* src, int src_bytes) {
  emu::Copy c{dst, src, src_bytes};
  if (emu::g_block->eager)
    emu::do_copy(c);
  else
    emu::t_pending.push_back(c);
}
G_DEV void cp_async_commit() {
  emu::t_groups.push_back(std::move(emu::t_pending));
  emu::t_pending.clear();
}
template <int N>
G_DEV void cp_async_wait() {
  while (emu::t_groups.size() > static_cast<size_t>(N)) {
    for (const auto& c : emu::t_groups.front()) emu::do_copy(c);
    emu::t_groups.pop_front();
  }
}

inline uint32_t smem_u32_at(unsigned a) {
  uint32_t v;
  std::memcpy(&v, emu::g_block->smem.data() + a, 4);
  return v;
}
inline uint16_t smem_u16_at(unsigned a) {
  uint16_t v;
  std::memcpy(&v, emu::g_block->smem.data() + a, 2);
  return v;
}

// ldmatrix.x4: lanes 8i..8i+7 address the rows of matrix i; lane l gets row
// l/4, columns 2(l%4), 2(l%4)+1 of each (the transpose with .trans).
inline void ldsm_impl(unsigned a, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3, bool trans) {
  uint32_t mine = a;
  unsigned r[4];
  emu::warp_exchange(&mine, 1, [&](auto& x) {
    const unsigned l = emu::t_lane;
    for (int m = 0; m < 4; ++m) {
      if (!trans) {
        r[m] = smem_u32_at(x[8 * m + l / 4][0] + 4 * (l % 4));
      } else {
        const uint16_t lo = smem_u16_at(x[8 * m + 2 * (l % 4)][0] + 2 * (l / 4));
        const uint16_t hi = smem_u16_at(x[8 * m + 2 * (l % 4) + 1][0] + 2 * (l / 4));
        r[m] = lo | (uint32_t{hi} << 16);
      }
    }
  });
  r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
}
G_DEV void ldsm_x4(unsigned a, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  ldsm_impl(a, r0, r1, r2, r3, false);
}
G_DEV void ldsm_x4_t(unsigned a, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  ldsm_impl(a, r0, r1, r2, r3, true);
}

// mma.m16n8k16 row.col, f32 accumulators: A[r][k] is in lane (r%8)*4 + (k%8)/2,
// register (r/8) + 2(k/8), half k%2; B[k][n] in lane n*4 + (k%8)/2, register
// k/8, half k%2; lane (g, t) owns C[g][2t..2t+1] and C[g+8][2t..2t+1].
G_DEV void mma16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  uint32_t mine[6] = {a[0], a[1], a[2], a[3], b0, b1};
  emu::warp_exchange(mine, 6, [&](auto& x) {
    auto A = [&](int r, int k) {
      const uint32_t w = x[(r % 8) * 4 + (k % 8) / 2][(r / 8) + 2 * (k / 8)];
      return emu::op_to_float(static_cast<uint16_t>(k % 2 ? w >> 16 : w & 0xffff));
    };
    auto B = [&](int k, int n) {
      const uint32_t w = x[n * 4 + (k % 8) / 2][4 + k / 8];
      return emu::op_to_float(static_cast<uint16_t>(k % 2 ? w >> 16 : w & 0xffff));
    };
    const int g = static_cast<int>(emu::t_lane / 4), t = static_cast<int>(emu::t_lane % 4);
    for (int e = 0; e < 4; ++e) {
      const int r = g + (e >= 2 ? 8 : 0), n = 2 * t + (e & 1);
      float acc = c[e];
      for (int k = 0; k < 16; ++k) acc += A(r, k) * B(k, n);
      c[e] = acc;
    }
  });
}

G_DEV unsigned pack2(float lo, float hi) {
  return emu::float_to_op(lo) | (uint32_t{emu::float_to_op(hi)} << 16);
}
G_DEV float ex2(float x) { return std::exp2(x); }
G_DEV float fast_rcp(float x) { return 1.0f / x; }
G_DEV float shfl_xor(float v, int m) {
  uint32_t mine;
  std::memcpy(&mine, &v, 4);
  float r = v;
  emu::warp_exchange(&mine, 1, [&](auto& x) { std::memcpy(&r, &x[emu::t_lane ^ static_cast<unsigned>(m)][0], 4); });
  return r;
}
G_DEV bool warp_any(bool v) {
  uint32_t mine = v ? 1u : 0u;
  bool any = false;
  emu::warp_exchange(&mine, 1, [&](auto& x) {
    for (int l = 0; l < 32; ++l) any = any || x[l][0] != 0;
  });
  return any;
}
G_DEV float neg_inf() { return -INFINITY; }
G_DEV void st_shared_u32(unsigned a, unsigned v) { std::memcpy(emu::g_block->smem.data() + a, &v, 4); }
G_DEV unsigned ld_shared_u32(unsigned a) { return smem_u32_at(a); }
G_DEV uint4 ld_shared_v4(unsigned a) {
  uint4 v;
  std::memcpy(&v, emu::g_block->smem.data() + a, 16);
  return v;
}
G_DEV void st_global_v4(void* p, uint4 v) { std::memcpy(p, &v, 16); }
G_DEV float ld_mask(const __half* p) { return emu::half_to_float(p->bits); }
G_DEV float ld_mask(const __nv_bfloat16* p) { return emu::bf16_to_float(p->bits); }
G_DEV float ld_mask(const float* p) { return *p; }
G_DEV float ld_mask(const unsigned char* p) { return *p != 0 ? 1.0f : 0.0f; }

namespace emu {
// Runs `kernel(block)` for every block of the grid, one thread per CUDA thread.
template <class K>
void run_grid(dim3 grid, unsigned threads, size_t smem_bytes, bool eager, K&& kernel) {
  Block blk;
  blk.eager = eager;
  blk.smem.assign(smem_bytes, 0xA5);  // garbage, as a GPU's would be
  blk.bar = std::make_unique<std::barrier<>>(static_cast<std::ptrdiff_t>(threads));
  const unsigned warps = (threads + 31) / 32;
  for (unsigned w = 0; w < warps; ++w) blk.warp_bar.push_back(std::make_unique<std::barrier<>>(32));
  blk.xchg.resize(warps);
  g_block = &blk;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        std::vector<std::thread> ts;
        for (unsigned t = 0; t < threads; ++t)
          ts.emplace_back([&, t] {
            threadIdx = dim3{t, 0, 0};
            blockIdx = dim3{x, y, z};
            t_lane = t % 32;
            t_warp = t / 32;
            t_pending.clear();
            t_groups.clear();
            kernel();
          });
        for (auto& th : ts) th.join();
      }
  g_block = nullptr;
}
}  // namespace emu
