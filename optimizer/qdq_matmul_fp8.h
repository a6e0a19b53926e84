// fuse-qdq-matmul's float8 half (docs/int8.md): a MatMul/Gemm between
//   DequantizeLinear(xq float8e4m3fn, sa)  and  DequantizeLinear(Wq float8e4m3fn constant, sw)
// becomes cuBLASLt's FP8 GEMM (sm_89+) with the per-tensor scales in its alpha:
//   acc = MatMulInteger(xq, W8 [N, K], _trans_b, _alpha = sa * max(sw) * alpha)   float32
//   y   = acc [* sw[n] / max(sw)] [-> y's dtype] [+ beta * C]
// The per-column ratio (per-channel weight scales) is a generated epilogue op,
// as the int8 path's per-column dequantize; float8 products are exact in
// float32, so the result differs from the float QDQ graph only by the order
// and rounding of the float32 sums. Where the target cannot run the GEMM
// (sm < 89, shapes, --gemm generated) the layer stays as it is: Q/DQ as
// elementwise ops and a float GEMM.
#pragma once

#include <optional>
#include <vector>

#include "ir/graph.h"
#include "support/status.h"
#include "target/target.h"

namespace graphc::optimizer {

struct Fp8Match {
  ir::ValueId xq = ir::kNoValue;  // the float8 activation
  double x_scale = 0;
  ir::Tensor w;                  // float8e4m3fn [N, K]
  std::vector<double> w_scale;   // one, or one per column n
  double alpha = 1, beta = 1;    // Gemm's
  ir::ValueId c = ir::kNoValue;  // Gemm's C
};

// nullopt: `n` is no float8 QDQ product (no float8 DequantizeLinear feeds
// it). Else the match, or why the layer stays a float GEMM.
std::optional<Expected<Fp8Match>> match_fp8_qdq_matmul(const ir::Graph& g, const ir::Node& n,
                                                       const target::Target* target);

// Appends the float8 GEMM and its epilogue in place of `n` to `out`.
void rewrite_fp8_qdq_matmul(ir::Graph& g, const ir::Node& n, Fp8Match m,
                            std::vector<ir::Node>& out);

}  // namespace graphc::optimizer
