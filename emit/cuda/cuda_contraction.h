// The generators behind generate_contraction_kernel, one per op family,
// each taking the anchor frame of a plain node or a fused gemm/conv group.
// `min_sm`: the oldest target SM; float16/bfloat16 GEMMs use mma.sync from
// sm_80 on, WMMA before (cuda_gemm_tile.h).
#pragma once

#include "emit/cuda/anchor_frame.h"

namespace graphc::emit {

Expected<GeneratedKernel> generate_matmul_kernel(const AnchorFrame& frame, int min_sm);  // cuda_gemm.cpp
Expected<GeneratedKernel> generate_gemm_kernel(const AnchorFrame& frame, int min_sm);  // cuda_gemm.cpp
// MatMulInteger(int8, int8) on int8 tensor cores (cuda_gemm_int8.cpp).
Expected<GeneratedKernel> generate_matmul_integer_kernel(const AnchorFrame& frame);
Expected<GeneratedKernel> generate_einsum_kernel(const AnchorFrame& frame, int min_sm);  // cuda_einsum.cpp
// Conv and ConvTranspose (cuda_conv.cpp).
Expected<GeneratedKernel> generate_conv_kernel(const AnchorFrame& frame, int min_sm);
// ConvInteger(int8, int8) on int8 tensor cores, mma.sync: sm_80 and newer (cuda_conv_int8.cpp).
Expected<GeneratedKernel> generate_conv_integer_kernel(const AnchorFrame& frame, int min_sm);

// generate_contraction_kernel (gpu_kernels.h) for oldest target SM `min_sm`.
Expected<GeneratedKernel> generate_contraction_kernel_for_sm(const ir::Graph& graph, ir::NodeId node,
                                                             const ir::SymbolicShapes* range,
                                                             int min_sm);

}  // namespace graphc::emit
