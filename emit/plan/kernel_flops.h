// The arithmetic model of a kernel for the roofline (target/roofline.h): the
// FLOPs of its contractions (2 per multiply-add: MatMul, Gemm, Conv,
// ConvTranspose, Attention's two products) and their element type. Other ops
// (elementwise, reductions, data movement) are not counted: a few operations
// per element keep them memory-bound on every GPU of the table, so their
// roofline is their HBM traffic.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace graphc::emit {

struct KernelArithmetic {
  int64_t flops = 0;
  ir::DType dtype = ir::DType::kUndefined;  // of the contraction's inputs; kUndefined: none
  bool depthwise = false;                   // a conv with one input channel per group
};

// Node `n` of `g` (plain, or a FusedGroup whose body is walked). Shape-inferred
// graph; a node whose shapes do not resolve counts 0.
KernelArithmetic kernel_arithmetic(const ir::Graph& g, const ir::Node& n);

}  // namespace graphc::emit
