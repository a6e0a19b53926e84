// Host versions of the primitives the general attention kernel's portable
// source is written over (emit/cuda/cuda_attention_generic.h, detail::), for
// tests/emu/attention_generic_emu.cpp: one std::thread per CUDA thread (a
// block at a time), a block barrier, warp barriers, warp reductions through a
// per-warp exchange computing the same butterfly as __shfl_xor_sync (so every
// lane gets the same bits, as on the GPU), dynamic shared memory as a
// 16-byte-aligned float array filled with garbage (NaN) before each block.
// Numerics are the host's (fp32 with no FMA contraction at -O1 -ffp-contract=off,
// fp16 through _Float16), so results match a GPU's up to rounding.
#pragma once

#include <math.h>

#include <array>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
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
inline dim3 gridDim;
struct __half {
  uint16_t bits;
};
struct __nv_bfloat16 {
  uint16_t bits;
};

namespace emu_gen {

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

struct Block {
  float* smem = nullptr;
  std::unique_ptr<std::barrier<>> bar;
  std::vector<std::unique_ptr<std::barrier<>>> warp_bar;
  std::vector<std::array<uint64_t, 32>> xchg;  // per warp, per lane
};
inline Block* g_block = nullptr;
inline thread_local unsigned t_lane = 0, t_warp = 0;

// Every lane publishes a value; `use` reads all 32.
template <class T, class F>
auto warp_exchange(T mine, F&& use) {
  auto& x = g_block->xchg[t_warp];
  uint64_t bits = 0;
  std::memcpy(&bits, &mine, sizeof(T));
  x[t_lane] = bits;
  g_block->warp_bar[t_warp]->arrive_and_wait();
  T all[32];
  for (int l = 0; l < 32; ++l) std::memcpy(&all[l], &x[l], sizeof(T));
  auto r = use(all);
  g_block->warp_bar[t_warp]->arrive_and_wait();
  return r;
}

// The xor butterfly of __shfl_xor_sync (offsets 16, 8, 4, 2, 1) on all lanes.
template <class T, class Op>
T butterfly(T mine, Op op) {
  return warp_exchange(mine, [&](T(&v)[32]) {
    T cur[32];
    for (int l = 0; l < 32; ++l) cur[l] = v[l];
    for (int o = 16; o > 0; o >>= 1) {
      T next[32];
      for (int l = 0; l < 32; ++l) next[l] = op(cur[l], cur[l ^ o]);
      for (int l = 0; l < 32; ++l) cur[l] = next[l];
    }
    return cur[t_lane];
  });
}

}  // namespace emu_gen

inline void __syncthreads() { emu_gen::g_block->bar->arrive_and_wait(); }
inline void __syncwarp() { emu_gen::g_block->warp_bar[emu_gen::t_warp]->arrive_and_wait(); }

G_DEV float* smem_base() { return emu_gen::g_block->smem; }
G_DEV float ldf(const float* p) { return *p; }
G_DEV float ldf(const __half* p) { return emu_gen::half_to_float(p->bits); }
G_DEV float ldf(const __nv_bfloat16* p) { return emu_gen::bf16_to_float(p->bits); }
// 16-byte loads: the GPU needs the alignment, so the emulator checks it.
template <class T, int N>
G_DEV void ldg_vec(const T* p, float (&v)[N]) {
  static_assert(sizeof(T) * N == 16, "16-byte vector");
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0) std::abort();
  for (int i = 0; i < N; ++i) v[i] = ldf(p + i);
}
G_DEV void stf(float* p, float v) { *p = v; }
G_DEV void stf(__half* p, float v) { p->bits = emu_gen::float_to_half(v); }
G_DEV void stf(__nv_bfloat16* p, float v) { p->bits = emu_gen::float_to_bf16(v); }
G_DEV float ld_mask(const unsigned char* p) { return *p != 0 ? 1.0f : 0.0f; }
G_DEV float ld_mask(const float* p) { return *p; }
G_DEV float ld_mask(const __half* p) { return ldf(p); }
G_DEV float ld_mask(const __nv_bfloat16* p) { return ldf(p); }
template <int N>
G_DEV void lds(const float* p, float (&v)[N]) {
  if (reinterpret_cast<uintptr_t>(p) % (4 * N) != 0)
    std::abort();  // the GPU's vector loads need it
  std::memcpy(v, p, sizeof v);
}
G_DEV float warp_max(float v) {
  return emu_gen::butterfly(v, [](float a, float b) { return fmaxf(a, b); });
}
G_DEV double warp_max(double v) {
  return emu_gen::butterfly(v, [](double a, double b) { return fmax(a, b); });
}
G_DEV float warp_sum(float v) {
  return emu_gen::butterfly(v, [](float a, float b) { return a + b; });
}
G_DEV bool warp_any(bool v) {
  return emu_gen::warp_exchange(static_cast<unsigned>(v), [](unsigned(&x)[32]) {
    bool any = false;
    for (unsigned b : x) any = any || b != 0;
    return any;
  });
}
G_DEV float gmax(float a, float b) { return fmaxf(a, b); }
G_DEV double gmax(double a, double b) { return fmax(a, b); }
G_DEV float neg_inf() { return -INFINITY; }
G_DEV float rcp(float x) { return 1.0f / x; }

namespace emu_gen {
// Runs `kernel()` for every block of the grid, one thread per CUDA thread.
template <class K>
void run_grid(dim3 grid, unsigned threads, size_t smem_bytes, K&& kernel) {
  Block blk;
  std::vector<float> smem(smem_bytes / 4 + 8);
  float* base = smem.data();
  while (reinterpret_cast<uintptr_t>(base) % 16) ++base;
  blk.smem = base;
  blk.bar = std::make_unique<std::barrier<>>(static_cast<std::ptrdiff_t>(threads));
  const unsigned warps = (threads + 31) / 32;
  for (unsigned w = 0; w < warps; ++w) blk.warp_bar.push_back(std::make_unique<std::barrier<>>(32));
  blk.xchg.resize(warps);
  g_block = &blk;
  gridDim = grid;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        std::fill(smem.begin(), smem.end(), NAN);  // garbage, as a GPU's would be
        std::vector<std::thread> ts;
        for (unsigned t = 0; t < threads; ++t)
          ts.emplace_back([&, t] {
            threadIdx = dim3{t, 0, 0};
            blockIdx = dim3{x, y, z};
            t_lane = t % 32;
            t_warp = t / 32;
            kernel();
          });
        for (auto& th : ts) th.join();
      }
  g_block = nullptr;
}
}  // namespace emu_gen
