// The attention kernels (cuda_attention.h, cuda_attention_generic.h) over a
// shape range (docs/dynamic-shapes.md). A static kernel takes its sizes and
// strides in a by-value parameter block computed at build time; a range
// kernel takes the engine's size block instead (kernel_sizes.h: one int64 per
// size that varies, computed by the runtime per shape) and rebuilds the same
// parameter block from it in its first line (`graphc_attn_params(sz)`), so
// the kernel body is the static one, byte for byte. Scale, softcap, windows
// and head dims stay build-time constants. What must not change over the
// range — head dims, the mask's broadcast pattern, the query/key-value head
// ratio — is checked here for the whole range and refused by name.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "emit/cuda/anchor_frame.h"
#include "emit/cuda/kernel_sizes.h"
#include "ir/attention_params.h"
#include "ir/dim_expr.h"
#include "ir/graph.h"

namespace graphc::emit {

// An Attention node's sizes over the range (ir::AttentionParams' sizes as
// expressions; the concrete params are those at the opt shape).
struct AttentionRangeSizes {
  ir::DimExpr batch, q_heads, kv_heads, q_len, kv_len, past_len, total_len;
  ir::SymShape mask;  // the mask's shape; empty without one
};

// Reads them from the node's tensors and checks what must hold at every shape
// of the range: fixed head dims (and hidden sizes of 3-D inputs), query heads
// a fixed multiple of key/value heads, every mask dim either 1 throughout or
// the dim it indexes (batch, heads, queries; keys: the same length, or for
// `mask_may_be_short` any length). Unsupported names the node and tensor.
Expected<AttentionRangeSizes> attention_range_sizes(const ir::Graph& g, const ir::Node& n,
                                                    const ir::AttentionParams& a,
                                                    const KernelSizes& sizes,
                                                    bool mask_may_be_short);

// A parameter block whose integer fields are expressions over the range (in
// the struct's field order) and whose float fields are constants.
struct RangeParams {
  std::vector<std::pair<std::string, ir::DimExpr>> int64s, int32s;
  std::vector<std::pair<std::string, float>> floats;
};

// The flash kernel's AttentionParams over the range.
RangeParams flash_range_params(const AttentionRangeSizes& s, const ir::AttentionParams& a);
// The general kernel's GenericAttentionParams over the range (`opt_scale_sqrt`
// and `opt_softcap`: the build-time values generic_attention_from_ir chose;
// which optional outputs exist decides which strides are set).
RangeParams generic_range_params(const AttentionRangeSizes& s, const ir::AttentionParams& a,
                                 bool present_key, bool present_value, bool qk_output,
                                 float scale_sqrt, float softcap);

// The C++ text of `struct graphc_sizes` and of
// `G_DEV <type> graphc_attn_params(const graphc_sizes& sz)`, which fills every
// field; each varying size joins `sizes`' block. Refused when an int32 field
// can exceed int32 over the range, or a size cannot be bounded.
Expected<std::string> sized_params_text(const std::string& type, const RangeParams& p,
                                        KernelSizes& sizes);

// The kernel template with `const <type> p = graphc_attn_params(sz);` as the
// first line of its body (after "G_KERNEL {").
std::string with_params_from_sizes(std::string_view kernel_template, std::string_view type);

// The launch grid over the range: (max(1, ceil(q_len / block_q)), q_heads,
// batch), each dim that varies as an expression and the most over the range
// in `grid`; refused past the launch limits (x < 2^31, y and z <= 65535).
struct RangeGrid {
  std::array<int64_t, 3> most{1, 1, 1};
  std::array<std::optional<ir::DimExpr>, 3> at_run_time;
};
Expected<RangeGrid> attention_range_grid(const AttentionRangeSizes& s, int64_t block_q,
                                         const KernelSizes& sizes, const std::string& kernel);

}  // namespace graphc::emit
