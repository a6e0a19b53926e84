// The CUDA side of the op table: one CUDA expression per elementwise op
// (cuda_ops.cpp, keyed by OpKind), the device helpers those expressions call
// (cuda_prelude.cpp) and how each dtype is stored, loaded and computed.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "support/status.h"

namespace graphc::emit::cuda {

// C++ type arithmetic is done in: float for fp16/bf16/fp32, double for fp64,
// the integer type itself, bool. Empty for dtypes CUDA code cannot handle.
std::string compute_type(ir::DType t);
// C++ type of one stored element (__half, __nv_bfloat16, unsigned char for bool ...).
std::string storage_type(ir::DType t);
// Expression converting a stored element `s` to the compute type, and back.
std::string load_expr(ir::DType t, const std::string& s);
std::string store_expr(ir::DType t, const std::string& v);
// A literal of the compute type of `t` with the value `v` (exact: floats are
// printed with max_digits10 digits; non-finite values through their bits).
std::string literal(ir::DType t, double v);
std::string int_literal(ir::DType t, int64_t v);
std::string uint_literal(ir::DType t, uint64_t v);
// `v` (compute type of `from`) converted to the compute type of `to`, with the
// reference executor's rules (float -> int saturation, nonzero -> true ...).
// `saturate`: Cast's attribute, for float8 results (float4 always saturates).
std::string convert_expr(ir::DType from, ir::DType to, const std::string& v,
                         bool saturate = true);

// Narrow types (float8, float4e2m1, int4/uint4/int2/uint2; cuda_narrow.cpp):
// carried as their stored byte; a conversion to or from one; the device
// functions those conversions call, which a kernel includes only when its
// text calls a g_nw_ function.
bool is_narrow(ir::DType t);
std::string narrow_convert_expr(ir::DType from, ir::DType to, const std::string& v,
                                bool saturate);
const std::string& narrow_prelude();

// A float (compute type) value converted to int8/uint8 (`to`) as convert_expr
// does, in float arithmetic (cuda_byte_convert.cpp).
std::string byte_convert_expr(ir::DType to, const std::string& v);
// The conditional device helpers a kernel's `text` calls: the narrow-type
// conversions (g_nw_) and the float -> 8-bit integer ones (g_b8_); empty when
// it calls none, so other kernels' source does not change.
std::string conversion_preludes(const std::string& text);

// Operands of one elementwise node, already in their compute types. Each
// operand is a plain identifier, so an expression may repeat it.
struct OpOperands {
  const ir::Node* node = nullptr;
  std::vector<std::string> in;      // "" for an omitted optional input
  std::vector<ir::DType> in_dtype;  // kUndefined for an omitted input
  ir::DType out_dtype = ir::DType::kUndefined;
  size_t out_index = 0;
};

// The CUDA expression computing output `out_index` of the node. Unsupported
// (naming the op and dtype) when the op has no CUDA expression.
Expected<std::string> op_expression(const OpOperands& ops);
// True when `op` has an entry in the CUDA expression table.
bool has_cuda_expression(ir::OpKind op);

// Device helpers every generated elementwise kernel may call.
const std::string& device_prelude();

}  // namespace graphc::emit::cuda
