// An Attention node that no library takes becomes a generated kernel: the
// tensor-core flash kernel (cuda_attention.h) where it applies (float16 /
// bfloat16, head dims 32..256, Y only), else the general kernel
// (cuda_attention_generic.h: float32 and every feature of ONNX's Attention).
// The spec (dtypes, head dims, mask kind, flags, the tile for the oldest target
// SM) comes from the node; run-time sizes and strides are the kernel's
// by-value parameter block, so one compiled module serves every layer of the
// same spec. Over a shape range (attention_range.h) a kernel whose tensors vary
// takes the engine's size block instead and computes that block per launch;
// its grid follows the actual sizes.
#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "emit/cuda/attention_range.h"
#include "emit/cuda/codegen_util.h"
#include "emit/cuda/cuda_attention.h"
#include "emit/cuda/cuda_attention_generic.h"
#include "emit/cuda/fused_range.h"
#include "emit/cuda/gpu_kernels.h"
#include "ir/attention_params.h"

namespace graphc::emit {

namespace {

// Why the flash kernel cannot run this attention, or "".
std::string flash_refusal(const ir::Node& n, const ir::AttentionParams& a) {
  if (a.dtype != ir::DType::kFloat16 && a.dtype != ir::DType::kBFloat16)
    return fmt::format("{} (the tensor-core kernel takes float16 and bfloat16)",
                       ir::dtype_name(a.dtype));
  for (size_t o = 1; o < n.outputs.size(); ++o)
    if (n.outputs[o] != ir::kNoValue) return "present or qk_matmul outputs are needed";
  if (a.has_past) return "a KV cache (past_key/past_value)";
  if (a.has_nonpad) return "nonpad_kv_seqlen";
  if (a.left_window >= 0 || a.right_window >= 0) return "a sliding window";
  if (!(a.scale > 0) || !std::isfinite(a.scale)) return "a scale that is not positive";
  // A mask's last dim shorter than the keys masks the rest (ONNX pads, not broadcasts).
  if (a.has_mask && (a.mask_shape.empty() || a.mask_shape.back() != a.total_len))
    return "a mask shorter than the keys";
  return "";
}

// Over a shape range, whether any tensor of `n` varies (its kernel then takes run-time sizes).
bool takes_run_time_sizes(const ir::Node& n, const KernelOptions& options) {
  return options.range && first_varying_value(n, *options.range) != ir::kNoValue;
}

// Turns a static kernel `k` into its range version: `source` (which computes
// the parameter block from the size block), the size block instead of the
// parameter block, and the grid at run time.
Status make_sized(GeneratedKernel& k, const std::string& source,
                  const AttentionRangeSizes& s, int64_t block_q, const KernelSizes& sizes,
                  const std::string& node) {
  ASSIGN_OR_RETURN(const RangeGrid grid, attention_range_grid(s, block_q, sizes, node));
  k.source = source;
  k.params.clear();
  k.sizes = sizes.block();
  k.blocks = grid.most[0];
  k.grid_y = grid.most[1];
  k.grid_z = grid.most[2];
  k.grid_x = grid.at_run_time[0];
  k.grid_y_at_run_time = grid.at_run_time[1];
  k.grid_z_at_run_time = grid.at_run_time[2];
  return Status::ok_status();
}

// Named by a hash of the block's text, so kernels whose blocks differ never share a module.
std::string sized_entry(const std::string& entry, const std::string& sized_params) {
  return fmt::format("{}_rt{:08x}", entry, fnv1a(sized_params) & 0xffffffffu);
}

}  // namespace

// A kernel of `n` named after it, with its launch shape and by-value parameter block.
template <typename Params>
GeneratedKernel attention_kernel(const ir::Node& n, std::string entry, std::string source,
                                 const LaunchShape& shape, const Params& params) {
  GeneratedKernel k;
  k.name = "attention/" + n.name;
  k.entry = std::move(entry);
  k.source = std::move(source);
  k.blocks = shape.grid[0];
  k.grid_y = shape.grid[1];
  k.grid_z = shape.grid[2];
  k.threads_per_block = shape.block[0];
  k.block_y = shape.block[1];
  k.block_z = shape.block[2];
  k.shared_bytes = shape.shared_bytes;
  k.params.resize(sizeof(params));
  std::memcpy(k.params.data(), &params, sizeof(params));
  return k;
}

// The general kernel for what the flash kernel does not take.
Expected<GeneratedKernel> generic_attention_kernel(const ir::Graph& graph, const ir::Node& n,
                                                   const ir::AttentionParams& a,
                                                   const KernelOptions& options) {
  auto has_output = [&](size_t o) { return o < n.outputs.size() && n.outputs[o] != ir::kNoValue; };
  GenericAttentionOutputs outputs;
  outputs.present_key = has_output(ir::kAttnPresentKey);
  outputs.present_value = has_output(ir::kAttnPresentValue);
  outputs.qk_matmul_output = has_output(ir::kAttnQkMatmulOutput);
  auto made = generic_attention_from_ir(a, outputs, options.min_sm);
  if (!made.ok()) return unsupported("attention '{}': {}", n.name, made.status().message());
  const GenericAttentionSpec& spec = made->spec;
  const GenericAttentionParams& p = made->params;
  const std::string entry = generic_attention_entry_name(spec);
  GeneratedKernel k = attention_kernel(n, entry, generic_attention_kernel_source(spec, entry),
                                       generic_attention_launch_shape(spec, p), p);
  for (GenericAttentionArg arg : generic_attention_kernel_args(spec)) {
    switch (arg) {
      case GenericAttentionArg::kQ: k.args.push_back(n.inputs[ir::kAttnQ]); break;
      case GenericAttentionArg::kK: k.args.push_back(n.inputs[ir::kAttnK]); break;
      case GenericAttentionArg::kV: k.args.push_back(n.inputs[ir::kAttnV]); break;
      case GenericAttentionArg::kMask: k.args.push_back(n.inputs[ir::kAttnMask]); break;
      case GenericAttentionArg::kPastKey: k.args.push_back(n.inputs[ir::kAttnPastKey]); break;
      case GenericAttentionArg::kPastValue: k.args.push_back(n.inputs[ir::kAttnPastValue]); break;
      case GenericAttentionArg::kNonpad: k.args.push_back(n.inputs[ir::kAttnNonpadKvSeqlen]); break;
      case GenericAttentionArg::kY: k.args.push_back(n.outputs[ir::kAttnY]); break;
      case GenericAttentionArg::kPresentKey: k.args.push_back(n.outputs[ir::kAttnPresentKey]); break;
      case GenericAttentionArg::kPresentValue:
        k.args.push_back(n.outputs[ir::kAttnPresentValue]);
        break;
      case GenericAttentionArg::kQkOutput: k.args.push_back(n.outputs[ir::kAttnQkMatmulOutput]); break;
    }
  }
  if (!takes_run_time_sizes(n, options)) return k;
  KernelSizes sizes(options.range);
  ASSIGN_OR_RETURN(const AttentionRangeSizes s,
                   attention_range_sizes(graph, n, a, sizes, /*mask_may_be_short=*/true));
  const RangeParams rp = generic_range_params(s, a, outputs.present_key, outputs.present_value,
                                              outputs.qk_matmul_output, p.scale_sqrt, p.softcap);
  auto text = sized_params_text("GenericAttentionParams", rp, sizes);
  if (!text.ok()) return unsupported("attention '{}': {}", n.name, text.status().message());
  k.entry = sized_entry(entry, *text);
  RETURN_IF_ERROR(make_sized(k, generic_attention_kernel_source(spec, k.entry, *text), s,
                             spec.tile.block_q(), sizes, n.name));
  return k;
}

// The flash kernel over a shape range, or the general one where the flash
// kernel cannot serve every shape of it (a mask shorter than the keys at some
// shape, strides that are not multiples of 8 elements).
Expected<GeneratedKernel> sized_flash_kernel(const ir::Graph& graph, const ir::Node& n,
                                             const ir::AttentionParams& a,
                                             const AttentionKernelSpec& spec,
                                             GeneratedKernel k, const KernelOptions& options) {
  KernelSizes sizes(options.range);
  auto s = attention_range_sizes(graph, n, a, sizes, /*mask_may_be_short=*/false);
  if (!s.ok()) return generic_attention_kernel(graph, n, a, options);
  const RangeParams rp = flash_range_params(*s, a);
  for (const auto& [field, e] : rp.int64s)
    if (field[0] != 'm' && !e.divisible_by(8)) return generic_attention_kernel(graph, n, a, options);
  auto text = sized_params_text("AttentionParams", rp, sizes);
  if (!text.ok()) return unsupported("attention '{}': {}", n.name, text.status().message());
  k.entry = sized_entry(k.entry, *text);
  RETURN_IF_ERROR(make_sized(k, attention_kernel_source(spec, k.entry, *text), *s,
                             spec.tile.block_q, sizes, n.name));
  return k;
}

Expected<GeneratedKernel> generate_attention_kernel(const ir::Graph& graph, ir::NodeId node,
                                                    const KernelOptions& options) {
  const ir::Node& n = graph.node(node);
  ASSIGN_OR_RETURN(const ir::AttentionParams a, ir::attention_params_of(graph, n));
  // The flash kernel's own limits (head dims, strides) fall back the same way.
  if (std::string why = flash_refusal(n, a); !why.empty())
    return generic_attention_kernel(graph, n, a, options);

  AttentionKernelSpec spec;
  spec.dtype = a.dtype;
  spec.head_dim = static_cast<int>(a.head_size);
  spec.head_dim_v = static_cast<int>(a.v_head_size);
  spec.causal = a.is_causal;
  spec.softcap = a.softcap > 0;
  if (a.has_mask) {
    spec.mask = a.mask_is_bool ? AttentionKernelSpec::Mask::kBoolean
                               : AttentionKernelSpec::Mask::kAdditive;
    spec.mask_dtype = graph.value(n.inputs[ir::kAttnMask]).dtype;
  }
  spec.tile = default_attention_tile(spec, options.min_sm, a.q_len, a.total_len);

  AttentionParams p{};
  auto strides = [&](int64_t& sb, int64_t& sh, int64_t& ss, int64_t heads, int64_t len,
                     int64_t dim) {
    if (a.three_d)
      set_attention_strides_bshd(sb, sh, ss, heads, len, dim);
    else
      set_attention_strides_bhsd(sb, sh, ss, heads, len, dim);
  };
  strides(p.q_stride_b, p.q_stride_h, p.q_stride_s, a.q_heads, a.q_len, a.head_size);
  strides(p.k_stride_b, p.k_stride_h, p.k_stride_s, a.kv_heads, a.kv_len, a.head_size);
  strides(p.v_stride_b, p.v_stride_h, p.v_stride_s, a.kv_heads, a.kv_len, a.v_head_size);
  strides(p.o_stride_b, p.o_stride_h, p.o_stride_s, a.q_heads, a.q_len, a.v_head_size);
  if (a.has_mask) {
    const auto m = ir::attention_mask_strides(a.mask_shape);
    p.m_stride_b = m[0];
    p.m_stride_h = m[1];
    p.m_stride_q = m[2];
    p.m_stride_k = m[3];
  }
  p.batch = static_cast<int32_t>(a.batch);
  p.q_heads = static_cast<int32_t>(a.q_heads);
  p.kv_heads = static_cast<int32_t>(a.kv_heads);
  p.q_len = static_cast<int32_t>(a.q_len);
  p.kv_len = static_cast<int32_t>(a.total_len);
  p.causal_offset = 0;  // ONNX's causal without a cache: top-left
  p.scale = static_cast<float>(a.scale);
  p.softcap = static_cast<float>(a.softcap);
  if (!validate_attention_spec(spec).ok() || !validate_attention_params(spec, p).ok())
    return generic_attention_kernel(graph, n, a, options);

  const std::string entry = attention_entry_name(spec);
  GeneratedKernel k = attention_kernel(n, entry, attention_kernel_source(spec, entry),
                                       attention_launch_shape(spec, p), p);
  k.args = {n.inputs[ir::kAttnQ], n.inputs[ir::kAttnK], n.inputs[ir::kAttnV]};
  if (a.has_mask) k.args.push_back(n.inputs[ir::kAttnMask]);
  k.args.push_back(n.outputs[ir::kAttnY]);
  if (takes_run_time_sizes(n, options)) return sized_flash_kernel(graph, n, a, spec, std::move(k), options);
  return k;
}

}  // namespace graphc::emit
