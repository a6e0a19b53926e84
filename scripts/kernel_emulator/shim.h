// Host emulation of the CUDA subset that generated data-movement kernels use,
// so their index math can be checked against the reference on a machine with
// no GPU (see README.md). One block runs at a time: `__shared__` becomes a
// static, __syncthreads a barrier of the block's std::threads, warp shuffles
// an exchange through a per-warp buffer and barrier. Kernels without barriers
// or shuffles run their threads one after another. Not a model of GPU timing,
// memory ordering or of CUDA's math library.
#pragma once
#include <barrier>
#include <cmath>
#include <math.h>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>
#include "support/half.h"
struct dim3_ { unsigned x = 0, y = 0, z = 0; };
inline thread_local dim3_ threadIdx, blockIdx;
inline dim3_ blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__ static
inline std::unique_ptr<std::barrier<>> g_block_barrier;
inline std::vector<std::unique_ptr<std::barrier<>>> g_warp_barriers;
inline uint64_t g_warp_buf[64][32];
inline void __syncthreads() { g_block_barrier->arrive_and_wait(); }
struct __half { uint16_t x; };
struct __nv_bfloat16 { uint16_t x; };
inline float __half2float(__half h) { return graphc::half_bits_to_float(h.x); }
inline __half __float2half_rn(float f) { return {graphc::float_to_half_bits(f)}; }
inline float __bfloat162float(__nv_bfloat16 h) { return graphc::bf16_bits_to_float(h.x); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return {graphc::float_to_bf16_bits(f)}; }
inline __half __ushort_as_half(unsigned short s) { return {s}; }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short s) { return {s}; }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline double __longlong_as_double(long long u) { double f; std::memcpy(&f, &u, 8); return f; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
template <class T> T __shfl_up_sync(unsigned, T v, int d) {
  unsigned lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  g_warp_buf[w][lane] = bits;
  g_warp_barriers[w]->arrive_and_wait();
  T r = v;
  if ((int)lane >= d) std::memcpy(&r, &g_warp_buf[w][lane - d], sizeof(T));
  g_warp_barriers[w]->arrive_and_wait();
  return r;
}
struct alignas(16) uint4 { unsigned x, y, z, w; };
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
