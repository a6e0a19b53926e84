#include "emit/cuda/attention_range.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace graphc::emit {

using ir::DimExpr;

namespace {

// Contiguous strides (b, h, s) of [B, H, L, D] or, 3-D, [B, L, H*D].
std::array<DimExpr, 3> strides_of(bool three_d, const DimExpr& heads, const DimExpr& len,
                                  const DimExpr& dim) {
  if (three_d) return {len * heads * dim, dim, heads * dim};
  return {heads * len * dim, len * dim, dim};
}

// A literal the host and NVRTC both read back as exactly `f` (9 significant
// digits round-trip a float; NaN for the general kernel's negative scale).
std::string float_literal(float f) {
  if (std::isnan(f)) return "(0.0f / 0.0f)";
  return fmt::format("{:.9e}f", f);
}

}  // namespace

Expected<AttentionRangeSizes> attention_range_sizes(const ir::Graph& g, const ir::Node& n,
                                                    const ir::AttentionParams& a,
                                                    const KernelSizes& sizes,
                                                    bool mask_may_be_short) {
  auto shape_of = [&](size_t input) { return sizes.shape(g, n.inputs[input]); };
  auto fixed = [&](size_t input, size_t dim, const char* what) -> Status {
    const ir::SymShape s = shape_of(input);
    if (dim < s.size() && s[dim].is_constant()) return Status::ok_status();
    return unsupported(
        "attention '{}': the {} of '{}' ({}) varies over the shape range; the attention kernels "
        "are compiled for one",
        n.name, what, g.value(n.inputs[input]).name, sizes.shape_string(s));
  };
  const ir::SymShape q = shape_of(ir::kAttnQ), k = shape_of(ir::kAttnK);
  AttentionRangeSizes s;
  s.batch = q[0];
  if (a.three_d) {
    for (size_t in : {ir::kAttnQ, ir::kAttnK, ir::kAttnV})
      RETURN_IF_ERROR(fixed(in, 2, "hidden size"));
    s.q_heads = a.q_heads;
    s.kv_heads = a.kv_heads;
    s.q_len = q[1];
    s.kv_len = k[1];
  } else {
    for (size_t in : {ir::kAttnQ, ir::kAttnK, ir::kAttnV}) RETURN_IF_ERROR(fixed(in, 3, "head dim"));
    s.q_heads = q[1];
    s.kv_heads = k[1];
    s.q_len = q[2];
    s.kv_len = k[2];
  }
  // The kernels map query head h to key/value head h / (Hq / Hkv): the ratio
  // must divide at every shape.
  const int64_t group = a.q_heads / a.kv_heads;
  if (!(s.q_heads == s.kv_heads * DimExpr(group)) &&
      !(s.kv_heads.is_constant() && s.q_heads.divisible_by(*s.kv_heads.constant())))
    return unsupported(
        "attention '{}': {} query heads are not a fixed multiple of {} key/value heads over the "
        "shape range",
        n.name, s.q_heads.to_string(), s.kv_heads.to_string());
  s.past_len = 0;
  if (a.has_past) {
    RETURN_IF_ERROR(fixed(ir::kAttnPastKey, 3, "head dim"));
    RETURN_IF_ERROR(fixed(ir::kAttnPastValue, 3, "head dim"));
    s.past_len = shape_of(ir::kAttnPastKey)[2];
  }
  s.total_len = s.past_len + s.kv_len;
  if (!a.has_mask) return s;
  s.mask = shape_of(ir::kAttnMask);
  // Right-aligned to [B, Hq, Lq, T]: each dim broadcasts at every shape or at none.
  const std::array<DimExpr, 4> full = {s.batch, s.q_heads, s.q_len, s.total_len};
  for (size_t i = 0; i < s.mask.size() && i < 4; ++i) {
    const DimExpr& m = s.mask[s.mask.size() - 1 - i];
    const DimExpr& want = full[3 - i];
    if (m == want || KernelSizes::is_one(m)) continue;
    if (i == 0 && mask_may_be_short) continue;  // keys past its end are masked
    return unsupported(
        "attention '{}': mask '{}' is {} over the shape range, which broadcasts against "
        "[batch, heads, queries, keys] = [{}, {}, {}, {}] at some shapes and not at others",
        n.name, g.value(n.inputs[ir::kAttnMask]).name, sizes.shape_string(s.mask),
        s.batch.to_string(), s.q_heads.to_string(), s.q_len.to_string(), s.total_len.to_string());
  }
  return s;
}

RangeParams flash_range_params(const AttentionRangeSizes& s, const ir::AttentionParams& a) {
  RangeParams p;
  auto add_strides = [&](const char* t, const DimExpr& heads, const DimExpr& len, int64_t dim) {
    const auto st = strides_of(a.three_d, heads, len, dim);
    p.int64s.emplace_back(fmt::format("{}_stride_b", t), st[0]);
    p.int64s.emplace_back(fmt::format("{}_stride_h", t), st[1]);
    p.int64s.emplace_back(fmt::format("{}_stride_s", t), st[2]);
  };
  add_strides("q", s.q_heads, s.q_len, a.head_size);
  add_strides("k", s.kv_heads, s.kv_len, a.head_size);
  add_strides("v", s.kv_heads, s.kv_len, a.v_head_size);
  add_strides("o", s.q_heads, s.q_len, a.v_head_size);
  // The mask: contiguous over its own dims, 0 along dims of 1 (ir::attention_mask_strides).
  std::array<DimExpr, 4> m = {0, 0, 0, 0};
  DimExpr stride = 1;
  for (size_t i = 0; i < s.mask.size() && i < 4; ++i) {
    const DimExpr& d = s.mask[s.mask.size() - 1 - i];
    m[3 - i] = KernelSizes::is_one(d) ? DimExpr(0) : stride;
    stride = stride * d;
  }
  p.int64s.emplace_back("m_stride_b", m[0]);
  p.int64s.emplace_back("m_stride_h", m[1]);
  p.int64s.emplace_back("m_stride_q", m[2]);
  p.int64s.emplace_back("m_stride_k", m[3]);
  p.int32s = {{"batch", s.batch},   {"q_heads", s.q_heads},      {"kv_heads", s.kv_heads},
              {"q_len", s.q_len},   {"kv_len", s.total_len},     {"causal_offset", 0}};
  p.floats = {{"scale", static_cast<float>(a.scale)}, {"softcap", static_cast<float>(a.softcap)}};
  return p;
}

RangeParams generic_range_params(const AttentionRangeSizes& s, const ir::AttentionParams& a,
                                 bool present_key, bool present_value, bool qk_output,
                                 float scale_sqrt, float softcap) {
  RangeParams p;
  auto add = [&](const char* t, const std::array<DimExpr, 3>& st, bool set = true) {
    p.int64s.emplace_back(fmt::format("{}_stride_b", t), set ? st[0] : DimExpr(0));
    p.int64s.emplace_back(fmt::format("{}_stride_h", t), set ? st[1] : DimExpr(0));
    p.int64s.emplace_back(fmt::format("{}_stride_s", t), set ? st[2] : DimExpr(0));
  };
  const int64_t D = a.head_size, Dv = a.v_head_size;
  add("q", strides_of(a.three_d, s.q_heads, s.q_len, D));
  add("k", strides_of(a.three_d, s.kv_heads, s.kv_len, D));
  add("v", strides_of(a.three_d, s.kv_heads, s.kv_len, Dv));
  add("pk", strides_of(false, s.kv_heads, s.past_len, D), a.has_past);
  add("pv", strides_of(false, s.kv_heads, s.past_len, Dv), a.has_past);
  add("y", strides_of(a.three_d, s.q_heads, s.q_len, Dv));
  add("prk", strides_of(false, s.kv_heads, s.total_len, D), present_key);
  add("prv", strides_of(false, s.kv_heads, s.total_len, Dv), present_value);
  const DimExpr T = s.total_len;
  p.int64s.emplace_back("qk_stride_b", qk_output ? s.q_heads * s.q_len * T : DimExpr(0));
  p.int64s.emplace_back("qk_stride_h", qk_output ? s.q_len * T : DimExpr(0));
  p.int64s.emplace_back("qk_stride_q", qk_output ? T : DimExpr(0));
  // The mask right-aligned to [B, Hq, Lq, M]: contiguous over its own dims,
  // 0 along dims of 1 but the last (generic_attention_from_ir).
  std::array<DimExpr, 4> m = {0, 0, 0, 0};
  DimExpr stride = 1;
  for (size_t i = 0; i < s.mask.size() && i < 4; ++i) {
    const DimExpr& d = s.mask[s.mask.size() - 1 - i];
    m[3 - i] = KernelSizes::is_one(d) && i != 0 ? DimExpr(0) : stride;
    stride = stride * d;
  }
  p.int64s.emplace_back("m_stride_b", m[0]);
  p.int64s.emplace_back("m_stride_h", m[1]);
  p.int64s.emplace_back("m_stride_q", m[2]);
  p.int64s.emplace_back("m_stride_k", m[3]);
  auto window = [](int64_t w) {
    return DimExpr(std::clamp<int64_t>(w, -1, std::numeric_limits<int32_t>::max()));
  };
  p.int32s = {{"batch", s.batch},
              {"q_heads", s.q_heads},
              {"kv_heads", s.kv_heads},
              {"q_len", s.q_len},
              {"kv_len", s.kv_len},
              {"past_len", s.past_len},
              {"mask_len", s.mask.empty() ? DimExpr(0) : s.mask.back()},
              {"causal_offset", s.past_len},
              {"left_window", window(a.left_window)},
              {"right_window", window(a.right_window)}};
  p.floats = {{"scale_sqrt", scale_sqrt}, {"softcap", softcap}};
  return p;
}

Expected<std::string> sized_params_text(const std::string& type, const RangeParams& p,
                                        KernelSizes& sizes) {
  std::string fields;
  for (const auto& [name, e] : p.int64s) fields += fmt::format("  p.{} = {};\n", name, sizes.code(e));
  for (const auto& [name, e] : p.int32s) {
    ASSIGN_OR_RETURN(const int64_t most, sizes.upper_bound(e));
    ASSIGN_OR_RETURN(const int64_t least, sizes.lower_bound(e));
    if (most > std::numeric_limits<int32_t>::max() || least < std::numeric_limits<int32_t>::min())
      return unsupported("{} {} reaches {} over the shape range, past int32", type, name, most);
    fields += fmt::format("  p.{} = (int){};\n", name, sizes.code(e));
  }
  for (const auto& [name, f] : p.floats) fields += fmt::format("  p.{} = {};\n", name, float_literal(f));
  return fmt::format(
      "{}// The parameter block at this launch's shape, from the size block the runtime\n"
      "// fills per shape (a shape-range engine: emit/cuda/attention_range.h).\n"
      "G_DEV {} graphc_attn_params(const graphc_sizes& sz) {{\n{}  {} p;\n{}  return p;\n}}\n",
      sizes.declaration(), type, sizes.locals("long long"), type, fields);
}

std::string with_params_from_sizes(std::string_view kernel_template, std::string_view type) {
  std::string out(kernel_template);
  constexpr std::string_view kOpen = "G_KERNEL {\n";
  const size_t at = out.find(kOpen);
  if (at != std::string::npos)
    out.insert(at + kOpen.size(), fmt::format("  const {} p = graphc_attn_params(sz);\n", type));
  return out;
}

Expected<RangeGrid> attention_range_grid(const AttentionRangeSizes& s, int64_t block_q,
                                         const KernelSizes& sizes, const std::string& kernel) {
  RangeGrid g;
  const std::array<DimExpr, 3> dims = {
      DimExpr::max(1, DimExpr::ceil_div(s.q_len, block_q)), s.q_heads, s.batch};
  const std::array<int64_t, 3> limit = {std::numeric_limits<int32_t>::max(), 65535, 65535};
  for (size_t d = 0; d < 3; ++d) {
    ASSIGN_OR_RETURN(g.most[d], sizes.upper_bound(dims[d]));
    ASSIGN_OR_RETURN(const int64_t least, sizes.lower_bound(dims[d]));
    if (g.most[d] > limit[d] || least < 1)
      return unsupported("attention '{}': grid.{} ranges over [{}, {}] over the shape range, outside "
                         "the launch limits [1, {}]",
                         kernel, "xyz"[d], least, g.most[d], limit[d]);
    if (!dims[d].is_constant()) g.at_run_time[d] = dims[d];
  }
  return g;
}

}  // namespace graphc::emit
