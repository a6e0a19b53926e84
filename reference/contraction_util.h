// Bulk element conversion for the contraction and convolution kernels: a
// tensor is converted once to a flat vector (double for float types, integers
// as two's-complement uint64 so sums wrap exactly like the narrower type), the
// kernel loops over plain arrays, and the result is converted back once. The
// dtype switch is outside every loop over elements.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/tensor.h"

namespace graphc::reference::detail {

// Float tensors (float16/bfloat16/float32/float64) as doubles.
std::vector<double> load_f64(const ir::Tensor& t);
// Writes t.numel() values, rounding to t's float type.
void store_f64(ir::Tensor& t, const double* values);

// Integer tensors as uint64 (sign-extended for signed types). Wrapping
// uint64 arithmetic then truncating on store gives the exact result modulo
// 2^bits, as numpy computes integer matmul.
std::vector<uint64_t> load_wrapped(const ir::Tensor& t);
void store_wrapped(ir::Tensor& t, const uint64_t* values);

}  // namespace graphc::reference::detail

// Hot loops are compiled for several x86-64 vector ISAs and picked at load
// time (GCC function multiversioning). Floating-point contraction is off in
// ISO C++ mode and no reassociation is enabled, so every clone computes the
// same values in the same order: results do not depend on the machine.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define GRAPHC_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GRAPHC_SIMD_CLONES
#endif
