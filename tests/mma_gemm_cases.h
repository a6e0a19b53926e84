// Graphs for the float16/bfloat16 mma.sync GEMM (emit/cuda/cuda_gemm_mma.cpp),
// shared by the kernel emulator (`graphc_kernel_emulator cases mma-gemm`,
// ctest kernel_emulator_mma_gemm) and the GPU test "[mma-gemm]". They cover
// both tile configurations (64x64; 128x128 in the "mma128" cases, which
// with the "mma-gpu" ones the emulator's ctest leaves to the GPU), cp.async operands (rows of
// whole 16-byte chunks) and element-wise staged ones (odd K, odd M/N with a
// transposed operand, a fused prologue), every transpose of A and B, MatMul
// and Gemm, broadcast batches, and fused epilogues (bias, erf Gelu, residual).
#pragma once

#include "tests/pool_contraction_cases.h"

namespace graphc::testing {

inline std::vector<KernelCase> mma_gemm_cases() {
  using namespace pc_detail;
  const DType f16 = DType::kFloat16, bf16 = DType::kBFloat16;
  std::vector<KernelCase> v;
  auto tol = [](DType dt) { return dt == DType::kBFloat16 ? 2e-2 : 2e-3; };
  auto mm = [&](std::string label, DType dt, Shape a, Shape b, ir::AttributeMap at = {}) {
    v.push_back({"mma-gemm " + label + " " + std::string(ir::dtype_name(dt)),
                 [=] { return one_op(OpKind::MatMul, {{dt, a}, {dt, b}}, at); }, 1e-4, tol(dt)});
  };
  const auto ta = testing::attrs({{"_trans_a", i(1)}});
  const auto tb = testing::attrs({{"_trans_b", i(1)}});
  const auto tab = testing::attrs({{"_trans_a", i(1)}, {"_trans_b", i(1)}});
  // cp.async for both operands; M, N off the 64 grid, K several slices.
  mm("130x72x136", f16, {130, 136}, {136, 72});
  // Odd K: both operands staged element by element.
  mm("odd 77x45x37", bf16, {77, 37}, {37, 45});
  mm("trans_a 72x40x48", f16, {48, 72}, {48, 40}, ta);
  mm("trans_b 70x24x40", bf16, {70, 40}, {24, 40}, tb);
  mm("trans_a trans_b odd 33x29x51", f16, {51, 33}, {29, 51}, tab);
  mm("trans_a trans_b 64x80x96", bf16, {96, 64}, {80, 96}, tab);
  mm("batch broadcast [2,1,33,64]x[3,64,24]", f16, {2, 1, 33, 64}, {3, 64, 24});
  // More of the same on the GPU only ("mma-gpu": each emulator case costs a
  // host compile of its kernel, a few seconds): the other dtype of each
  // layout, K = 1 and K = 0.
  auto gpu_only = [&](std::string label, DType dt, Shape a, Shape b, ir::AttributeMap at = {}) {
    v.push_back({"mma-gpu " + label + " " + std::string(ir::dtype_name(dt)),
                 [=] { return one_op(OpKind::MatMul, {{dt, a}, {dt, b}}, at); }, 1e-4, tol(dt)});
  };
  gpu_only("130x72x136", bf16, {130, 136}, {136, 72});
  gpu_only("odd 77x45x37", f16, {77, 37}, {37, 45});
  gpu_only("trans_a 72x40x48", bf16, {48, 72}, {48, 40}, ta);
  gpu_only("trans_b 70x24x40", f16, {70, 40}, {24, 40}, tb);
  gpu_only("trans_a trans_b odd 33x29x51", bf16, {51, 33}, {29, 51}, tab);
  gpu_only("K = 1", f16, {20, 1}, {1, 24});
  gpu_only("K = 0", f16, {20, 0}, {0, 24});
  // 128x128 tiles: enough of them (2 x 66 batches) to fill the GPU. Labelled
  // "mma128", not "mma-gemm": 132+ blocks of 256 threads take the emulator
  // about a minute, too long for its ctest (`graphc_kernel_emulator cases mma128`).
  auto big = [&](std::string label, DType dt, Shape a, Shape b, ir::AttributeMap at = {}) {
    v.push_back({"mma128 " + label, [=] { return one_op(OpKind::MatMul, {{dt, a}, {dt, b}}, at); },
                 1e-4, tol(dt)});
  };
  big("128x128 tiles [66,130,40]x[40,104]", f16, {66, 130, 40}, {40, 104});
  big("128x128 tiles trans_b odd K [140,24,27]x[24,27]^T", bf16, {140, 24, 27}, {24, 27}, tb);
  auto gemm = [&](std::string label, DType dt, Shape a, Shape b, Shape c, ir::AttributeMap at) {
    v.push_back({"mma-gemm " + label,
                 [=] { return one_op(OpKind::Gemm, {{dt, a}, {dt, b}, {dt, c}}, at); }, 1e-4,
                 tol(dt)});
  };
  gemm("gemm transA transB alpha beta C[N] f16", f16, {48, 72}, {40, 48}, {40},
       testing::attrs({{"transA", i(1)},
                       {"transB", i(1)},
                       {"alpha", Attribute::of_float(0.5)},
                       {"beta", Attribute::of_float(-2.0)}}));
  gemm("gemm C[M,N] bf16", bf16, {45, 64}, {64, 67}, {45, 67}, {});
  // Fused groups: bias + erf Gelu + residual on the output, a Relu prologue on A.
  for (DType dt : {f16, bf16}) {
    v.push_back({"mma-gemm fused batched matmul + bias + erf gelu + residual " +
                     std::string(ir::dtype_name(dt)),
                 [dt] {
                   GraphBuilder b;
                   auto x = b.input("x", dt, {2, 33, 64});
                   auto r = b.input("r", dt, {2, 33, 80});
                   auto w = b.constant("w", random_tensor(dt, {64, 80}, test_rng(), -1, 1));
                   auto bias = b.constant("bias", random_tensor(dt, {80}, test_rng(), -1, 1));
                   auto h = b.node(OpKind::Add, {b.node(OpKind::MatMul, {x, w}), bias});
                   b.output(b.node(OpKind::Add, {b.node(OpKind::Gelu, {h}), r}));
                   return optimized(b.build());
                 },
                 // The reference rounds four times (MatMul, +bias, Gelu, +r), the kernel
                 // once. Outputs reach ~12 (64 products of [-1, 1] values plus bias and
                 // residual), where half an ulp is 1/32 (bfloat16) or 1/256 (float16):
                 // four of those bound the difference. A missing epilogue op is off by ~1.
                 1e-4, dt == DType::kBFloat16 ? 0.125 : 0.016});
  }
  v.push_back({"mma-gpu fused relu prologue on A f16",
               [] {
                 GraphBuilder b;
                 auto x = b.input("x", DType::kFloat16, {40, 64});
                 auto w = b.input("w", DType::kFloat16, {64, 48});
                 b.output(b.node(OpKind::MatMul, {b.node(OpKind::Relu, {x}), w}));
                 return optimized(b.build());
               },
               1e-4, 2e-3});
  return v;
}

}  // namespace graphc::testing
