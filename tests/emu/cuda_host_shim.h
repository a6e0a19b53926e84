// Host emulation of the CUDA subset graphc's generated kernels use, for
// checking their index math on a machine without a GPU
// (tests/emu/kernel_emulator.cpp). A kernel source is compiled as C++ with
// this header in front: each block runs one std::thread per CUDA thread,
// __syncthreads is a barrier over the block, warp shuffles exchange through
// a per-warp buffer, __shared__ variables are statics (blocks run one after
// another), WMMA fragments hold their whole 16x16 tile in every lane, and
// the mma.sync GEMM's PTX helpers (ldmatrix, mma.m16n8k16, cp.async) follow
// the PTX ISA's per-lane fragment layouts (below).
// Numerics are the host's (no FMA contraction, float16 through _Float16), so
// results match a GPU's up to rounding, not bit for bit.
#pragma once

#include <algorithm>
#include <array>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

using std::isnan;

#define __device__
#define __global__
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __cudart_builtin__
// A loop's control kernel sets a CUDA graph conditional handle; the emulator
// drives loops from the host (its flag), so setting one does nothing.
extern "C" inline void cudaGraphSetConditional(unsigned long long, unsigned int) {}

struct dim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

struct alignas(16) float4 {
  float x, y, z, w;
};
struct __half {
  _Float16 v;
};
struct __nv_bfloat16 {
  uint16_t b;
};
inline float __half2float(__half h) { return static_cast<float>(h.v); }
inline __half __float2half_rn(float f) { return __half{static_cast<_Float16>(f)}; }
inline __half __ushort_as_half(unsigned short u) {
  __half h;
  std::memcpy(&h, &u, 2);
  return h;
}
inline float __bfloat162float(__nv_bfloat16 h) {
  const uint32_t u = static_cast<uint32_t>(h.b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return __nv_bfloat16{static_cast<uint16_t>((u >> 16) | 0x40)};
  u += 0x7fff + ((u >> 16) & 1);
  return __nv_bfloat16{static_cast<uint16_t>(u >> 16)};
}
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { return __nv_bfloat16{u}; }
inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline double __longlong_as_double(long long u) {
  double f;
  std::memcpy(&f, &u, 8);
  return f;
}

// sm_89's float -> e4m3 (EB 4) / e5m2 (EB 5) conversion (emit/cuda/
// cuda_narrow.cpp defines it with PTX where the target has it): the PTX ISA's
// cvt.rn.satfinite, here by nearest code (ties to the even code), anything at
// or beyond the largest finite value (inf included) saturating to it; NaN
// gives 0x7f. So the emulator runs the kernels' sm_89+ path.
#define G_NW_CVT 1
template <int EB>
unsigned char g_nw_cvt(float v) {
  constexpr int MB = 7 - EB, BIAS = EB == 4 ? 7 : 15;
  constexpr unsigned top = EB == 4 ? 0x7eu : 0x7bu;
  if (std::isnan(v)) return 0x7f;
  auto value = [](unsigned c) {
    const unsigned e = c >> MB, m = c & ((1u << MB) - 1u);
    return e == 0 ? std::ldexp(double(m), 1 - BIAS - MB)
                  : std::ldexp(double(m | (1u << MB)), int(e) - BIAS - MB);
  };
  const double a = std::fabs(static_cast<double>(v));
  unsigned best = top;
  if (a < value(top)) {
    best = 0;
    for (unsigned c = 1; c <= top; ++c) {
      const double d = std::fabs(value(c) - a), db = std::fabs(value(best) - a);
      if (d < db || (d == db && (c & 1u) == 0)) best = c;
    }
  }
  return static_cast<unsigned char>((std::signbit(v) ? 0x80u : 0u) | best);
}

struct EmuBlock {
  std::unique_ptr<std::barrier<>> bar;
  std::vector<std::unique_ptr<std::barrier<>>> warp_bar;
  std::vector<std::array<uint64_t, 32>> warp_buf;
  // Per warp, two rounds, per lane: the mma.sync helpers' exchange (below).
  std::vector<std::array<std::array<std::array<uint32_t, 8>, 32>, 2>> warp_xchg;
};
inline EmuBlock* g_emu_block = nullptr;
inline thread_local unsigned t_emu_linear = 0;

inline void __syncthreads() { g_emu_block->bar->arrive_and_wait(); }

// Every lane publishes its value, then reads lane `src(lane)`'s.
template <class T, class Src>
T emu_shuffle(T v, Src src) {
  const unsigned lane = t_emu_linear % 32, warp = t_emu_linear / 32;
  auto& buf = g_emu_block->warp_buf[warp];
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  buf[lane] = bits;
  g_emu_block->warp_bar[warp]->arrive_and_wait();
  T r = v;
  const unsigned from = src(lane);
  if (from < 32) std::memcpy(&r, &buf[from], sizeof(T));
  g_emu_block->warp_bar[warp]->arrive_and_wait();
  return r;
}
template <class T>
T __shfl_down_sync(unsigned, T v, int o) {
  return emu_shuffle(v, [o](unsigned lane) { return lane + static_cast<unsigned>(o); });
}
template <class T>
T __shfl_xor_sync(unsigned, T v, int o) {
  return emu_shuffle(v, [o](unsigned lane) { return lane ^ static_cast<unsigned>(o); });
}
template <class T>
T __shfl_up_sync(unsigned, T v, int d) {
  return emu_shuffle(v, [d](unsigned lane) {
    return lane >= static_cast<unsigned>(d) ? lane - static_cast<unsigned>(d) : 32u;
  });
}

// Vector types of the 16/8-byte copies, and the rounding-explicit
// arithmetic the Resize kernels use (the host rounds to nearest too).
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned x, y;
};
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
// CUDA's sincospi (the DFT's twiddles past the embedded table).
inline void sincospi(double x, double* s, double* c) {
  *s = std::sin(3.14159265358979323846 * x);
  *c = std::cos(3.14159265358979323846 * x);
}

namespace nvcuda::wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
// Fragments hold float for float16/bfloat16/float operands and 64-bit
// integers for int8 operands and int accumulators (int8 products summed
// exactly; stored wrapped to the destination's 32 bits, as the hardware's int32).
template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  using value_type = std::conditional_t<std::is_integral_v<T>, long long, float>;
  static constexpr bool col_major_layout = std::is_same_v<Layout, col_major>;
  value_type x[256];
};
inline float emu_float(float v) { return v; }
inline float emu_float(__half v) { return __half2float(v); }
inline float emu_float(__nv_bfloat16 v) { return __bfloat162float(v); }
inline long long emu_float(signed char v) { return v; }
inline long long emu_float(unsigned char v) { return v; }
inline long long emu_float(int v) { return v; }
template <class F, class V>
void fill_fragment(F& f, V v) {
  for (auto& e : f.x) e = static_cast<typename F::value_type>(v);
}
template <class F, class T>
void load_matrix_sync(F& f, const T* p, unsigned ldm) {
  for (unsigned r = 0; r < 16; ++r)
    for (unsigned c = 0; c < 16; ++c)
      f.x[r * 16 + c] = static_cast<typename F::value_type>(
          emu_float(F::col_major_layout ? p[c * ldm + r] : p[r * ldm + c]));
}
template <class D, class A, class B, class C>
void mma_sync(D& d, const A& a, const B& b, const C& c) {
  typename D::value_type t[256];
  for (int r = 0; r < 16; ++r)
    for (int col = 0; col < 16; ++col) {
      typename D::value_type s = c.x[r * 16 + col];
      for (int k = 0; k < 16; ++k) s += a.x[r * 16 + k] * b.x[k * 16 + col];
      if constexpr (std::is_integral_v<typename D::value_type>) s = static_cast<int>(s);
      t[r * 16 + col] = s;
    }
  std::memcpy(d.x, t, sizeof t);
}
template <class T, class F>
void store_matrix_sync(T* p, const F& f, unsigned ldm, layout_t) {
  for (unsigned r = 0; r < 16; ++r)
    for (unsigned c = 0; c < 16; ++c) p[r * ldm + c] = static_cast<T>(f.x[r * 16 + c]);
}
}  // namespace nvcuda::wmma

// The mma.sync GEMM's PTX helpers (emit/cuda/cuda_gemm_mma.cpp defines them
// under #ifndef GRAPHC_HOST_EMU). Warp-collective ones exchange each lane's
// registers through the block's per-warp buffer and compute what the PTX ISA
// says each lane receives, so wrong fragment indexing gives wrong products.
#define GRAPHC_HOST_EMU 1
// One barrier per collective: rounds alternate between two buffers, and no
// lane can write a buffer again before every lane has passed the barrier
// after its last read of it.
inline thread_local unsigned t_emu_round = 0;
template <class F>
void emu_warp_exchange(const uint32_t* mine, int n, F&& use) {
  const unsigned lane = t_emu_linear % 32, warp = t_emu_linear / 32;
  auto& x = g_emu_block->warp_xchg[warp][t_emu_round++ % 2];
  for (int i = 0; i < n; ++i) x[lane][i] = mine[i];
  g_emu_block->warp_bar[warp]->arrive_and_wait();
  use(x, lane);
}
// cp.async: a copy lands only when a wait_group forces it (lazily), so a read
// of a slot before its wait sees stale bytes, as it may on a GPU.
struct EmuCopy {
  void* dst;
  const void* src;
  int bytes;
};
inline thread_local std::vector<EmuCopy> t_emu_pending;
inline thread_local std::vector<std::vector<EmuCopy>> t_emu_groups;
inline void gm_cp_async16(void* dst, const void* src, int bytes) {
  if (reinterpret_cast<uintptr_t>(dst) % 16 || (bytes && reinterpret_cast<uintptr_t>(src) % 16))
    std::abort();  // cp.async 16 needs 16-byte aligned addresses
  t_emu_pending.push_back({dst, src, bytes});
}
inline void gm_cp_commit() {
  t_emu_groups.push_back(std::move(t_emu_pending));
  t_emu_pending.clear();
}
template <int N>
void gm_cp_wait() {
  while (t_emu_groups.size() > static_cast<size_t>(N)) {
    for (const EmuCopy& c : t_emu_groups.front()) {
      if (c.bytes > 0) std::memcpy(c.dst, c.src, static_cast<size_t>(c.bytes));
      std::memset(static_cast<char*>(c.dst) + c.bytes, 0, static_cast<size_t>(16 - c.bytes));
    }
    t_emu_groups.erase(t_emu_groups.begin());
  }
}
// ldmatrix.x4: lanes 8i..8i+7 address the rows of matrix i; lane l gets row
// l/4, columns 2(l%4), 2(l%4)+1 of each (of the transpose with .trans).
inline void emu_ldsm(const void* p, unsigned (&r)[4], bool trans) {
  if (reinterpret_cast<uintptr_t>(p) % 16) std::abort();  // each row: 16 aligned bytes
  uint64_t addr = reinterpret_cast<uintptr_t>(p);
  const uint32_t mine[2] = {static_cast<uint32_t>(addr), static_cast<uint32_t>(addr >> 32)};
  emu_warp_exchange(mine, 2, [&](auto& x, unsigned l) {
    auto row = [&](unsigned lane) {
      return reinterpret_cast<const uint16_t*>(uint64_t{x[lane][0]} | (uint64_t{x[lane][1]} << 32));
    };
    for (unsigned m = 0; m < 4; ++m) {
      uint16_t lo, hi;
      if (!trans) {
        lo = row(8 * m + l / 4)[2 * (l % 4)];
        hi = row(8 * m + l / 4)[2 * (l % 4) + 1];
      } else {
        lo = row(8 * m + 2 * (l % 4))[l / 4];
        hi = row(8 * m + 2 * (l % 4) + 1)[l / 4];
      }
      r[m] = lo | (uint32_t{hi} << 16);
    }
  });
}
inline void gm_ldsm_x4(const void* p, unsigned (&r)[4]) { emu_ldsm(p, r, false); }
inline void gm_ldsm_x4_t(const void* p, unsigned (&r)[4]) { emu_ldsm(p, r, true); }
// mma.m16n8k16 row.col, f32 accumulators: A[r][k] is in lane (r%8)*4 + (k%8)/2,
// register (r/8) + 2(k/8), half k%2; B[k][n] in lane n*4 + (k%8)/2, register
// k/8, half k%2; lane (g, t) owns C[g][2t..2t+1] and C[g+8][2t..2t+1].
template <class ToFloat>
void emu_mma(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2], ToFloat to_float) {
  const uint32_t mine[6] = {a[0], a[1], a[2], a[3], b[0], b[1]};
  emu_warp_exchange(mine, 6, [&](auto& x, unsigned lane) {
    auto half = [](uint32_t w, int k) { return static_cast<uint16_t>(k % 2 ? w >> 16 : w & 0xffff); };
    auto A = [&](int r, int k) { return to_float(half(x[(r % 8) * 4 + (k % 8) / 2][(r / 8) + 2 * (k / 8)], k)); };
    auto B = [&](int k, int n) { return to_float(half(x[n * 4 + (k % 8) / 2][4 + k / 8], k)); };
    const int g = static_cast<int>(lane / 4), t = static_cast<int>(lane % 4);
    for (int e = 0; e < 4; ++e) {
      const int r = g + (e >= 2 ? 8 : 0), n = 2 * t + (e & 1);
      float s = c[e];
      for (int k = 0; k < 16; ++k) s += A(r, k) * B(k, n);
      c[e] = s;
    }
  });
}
inline void gm_mma_f16(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  emu_mma(c, a, b, [](uint16_t h) { return __half2float(__ushort_as_half(h)); });
}
inline void gm_mma_bf16(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  emu_mma(c, a, b, [](uint16_t h) { return __bfloat162float(__nv_bfloat16{h}); });
}
// mma.m16n8k32 row.col s8 x s8 -> s32: A[r][k] is byte k%4 of lane
// (r%8)*4 + (k%16)/4, register (r/8) + 2(k/16); B[k][n] byte k%4 of lane
// n*4 + (k%16)/4, register k/16; C as for m16n8k16. Integer sums: exact.
inline void gm_mma_s8(int (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  const uint32_t mine[6] = {a[0], a[1], a[2], a[3], b[0], b[1]};
  emu_warp_exchange(mine, 6, [&](auto& x, unsigned lane) {
    auto byte = [](uint32_t w, int k) { return static_cast<int>(static_cast<int8_t>(w >> (8 * (k % 4)))); };
    auto A = [&](int r, int k) { return byte(x[(r % 8) * 4 + (k % 16) / 4][(r / 8) + 2 * (k / 16)], k); };
    auto B = [&](int k, int n) { return byte(x[n * 4 + (k % 16) / 4][4 + k / 16], k); };
    const int g = static_cast<int>(lane / 4), t = static_cast<int>(lane % 4);
    for (int e = 0; e < 4; ++e) {
      const int r = g + (e >= 2 ? 8 : 0), n = 2 * t + (e & 1);
      int s = c[e];
      for (int k = 0; k < 32; ++k) s += A(r, k) * B(k, n);
      c[e] = s;
    }
  });
}

// Runs `call` once per CUDA thread over the grid, block by block.
template <typename Call>
void emu_grid(const unsigned* g, const unsigned* b, const Call& call) {
  gridDim = {g[0], g[1], g[2]};
  blockDim = {b[0], b[1], b[2]};
  const unsigned nt = b[0] * b[1] * b[2];
  for (unsigned bz = 0; bz < g[2]; ++bz)
    for (unsigned by = 0; by < g[1]; ++by)
      for (unsigned bx = 0; bx < g[0]; ++bx) {
        EmuBlock blk;
        blk.bar = std::make_unique<std::barrier<>>(nt);
        for (unsigned w = 0; w < (nt + 31) / 32; ++w) {
          blk.warp_bar.push_back(std::make_unique<std::barrier<>>(std::min(32u, nt - w * 32)));
          blk.warp_buf.emplace_back();
          blk.warp_xchg.emplace_back();
        }
        g_emu_block = &blk;
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < nt; ++t)
          threads.emplace_back([&, t] {
            t_emu_linear = t;
            threadIdx = {t % b[0], (t / b[0]) % b[1], t / (b[0] * b[1])};
            blockIdx = {bx, by, bz};
            call();
          });
        for (auto& th : threads) th.join();
      }
}

// Calls kernel `fn` with the N pointers of `a` (every pointer parameter has
// the ABI of a void*).
template <size_t... I>
void emu_call_ptrs(void* fn, void** a, std::index_sequence<I...>) {
  reinterpret_cast<void (*)(decltype((void)I, (void*)nullptr)...)>(fn)(a[I]...);
}
template <size_t N>
void emu_call_n(void* fn, void** a) {
  emu_call_ptrs(fn, a, std::make_index_sequence<N>{});
}
template <size_t... N>
constexpr std::array<void (*)(void*, void**), sizeof...(N)> emu_callers(std::index_sequence<N...>) {
  return {&emu_call_n<N>...};
}

// Runs kernel `fn` (nargs pointer parameters, at most 32) over the grid, block by block.
extern "C" void emu_launch(void* fn, int nargs, void** a, const unsigned* g, const unsigned* b) {
  static constexpr auto kCallers = emu_callers(std::make_index_sequence<33>{});
  if (nargs < 1 || nargs >= static_cast<int>(kCallers.size())) std::abort();
  emu_grid(g, b, [&] { kCallers[static_cast<size_t>(nargs)](fn, a); });
}

// A kernel whose last parameter is a by-value block (a shape range's
// run-time sizes): the pointers from `a`, the block's bytes from `block`.
// The emulator appends `extern "C" void emu_sized_<entry>(void** a, const
// void* block) { emu_call_sized(<entry>, a, block); }` to such a module.
template <typename... P, size_t... I>
void emu_call_sized_at(void (*fn)(P...), void** a, const void* block, std::index_sequence<I...>) {
  using Params = std::tuple<P...>;
  std::remove_cv_t<std::tuple_element_t<sizeof...(P) - 1, Params>> last;
  std::memcpy(&last, block, sizeof last);
  fn(static_cast<std::tuple_element_t<I, Params>>(a[I])..., last);
}
template <typename... P>
void emu_call_sized(void (*fn)(P...), void** a, const void* block) {
  emu_call_sized_at(fn, a, block, std::make_index_sequence<sizeof...(P) - 1>{});
}
extern "C" void emu_launch_sized(void (*adapter)(void**, const void*), void** a, const void* block,
                                 const unsigned* g, const unsigned* b) {
  emu_grid(g, b, [&] { adapter(a, block); });
}
