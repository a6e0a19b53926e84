// The general attention kernel (see cuda_attention_generic.h): everything but
// the CUDA source (cuda_attention_generic.cpp renders that). The spec's
// kernel arguments, shared-memory size and validation, the run-time
// parameters' validation, the default tile, entry names, launch shapes, and
// the spec and parameters of an ir::AttentionParams.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "emit/cuda/cuda_attention_generic.h"
#include "emit/cuda/cuda_attention_generic_internal.h"

namespace graphc::emit {

using ir::DType;
using Mask = GenericAttentionSpec::Mask;

namespace {

constexpr int64_t kMaxSharedBytes = 227 * 1024;    // sm_90's per-block opt-in limit
constexpr int64_t kDefaultSmemBudget = 96 * 1024;  // fits sm_80 .. sm_120 (99 KiB on sm_86/89)

bool is_kernel_float(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16;
}

std::string dtype_tag(DType t) {
  switch (t) {
    case DType::kFloat32: return "f32";
    case DType::kFloat16: return "f16";
    case DType::kBFloat16: return "bf16";
    case DType::kUInt8: return "u8";
    case DType::kBool: return "b8";
    default: return "x";
  }
}

int round4(int x) { return (x + 3) / 4 * 4; }

}  // namespace

Geometry geometry(const GenericAttentionSpec& s) {
  Geometry g{};
  const GenericAttentionTile& t = s.tile;
  g.dp = round4(std::max(1, s.head_dim));
  g.dvp = round4(std::max(1, s.head_dim_v));
  g.qs = g.dp;
  g.ks = (g.dp / 4) % 2 == 1 ? g.dp : g.dp + 4;
  g.vs = g.dvp;
  g.ms = g.dvp + 4;
  g.vw = g.dvp > 64 ? 4 : g.dvp > 32 ? 2 : 1;
  g.vc = (g.dvp + 32 * g.vw - 1) / (32 * g.vw);
  const int64_t bq = t.block_q(), bk = t.block_k();
  g.q_floats = bq * g.qs;
  const int64_t kv = bk * (g.ks + g.vs);
  const int64_t merge = t.key_warps > 1 ? int64_t{t.key_warps} * bq * g.ms : 0;
  g.region_floats = std::max(kv, merge);
  g.p_floats = int64_t{t.warps()} * t.rows_per_warp * 32;
  g.stat_floats = 4 * bq;
  g.total_bytes = 4 * (g.q_floats + g.region_floats + g.p_floats + g.stat_floats);
  return g;
}

std::vector<GenericAttentionArg> generic_attention_kernel_args(const GenericAttentionSpec& s) {
  using A = GenericAttentionArg;
  std::vector<A> a = {A::kQ, A::kK, A::kV};
  if (s.mask != Mask::kNone) a.push_back(A::kMask);
  if (s.past) {
    a.push_back(A::kPastKey);
    a.push_back(A::kPastValue);
  }
  if (s.nonpad) a.push_back(A::kNonpad);
  a.push_back(A::kY);
  if (s.present_key) a.push_back(A::kPresentKey);
  if (s.present_value) a.push_back(A::kPresentValue);
  if (s.qk_output) a.push_back(A::kQkOutput);
  return a;
}

const char* generic_attention_arg_name(GenericAttentionArg a) {
  switch (a) {
    case GenericAttentionArg::kQ: return "q";
    case GenericAttentionArg::kK: return "k";
    case GenericAttentionArg::kV: return "v";
    case GenericAttentionArg::kMask: return "mask";
    case GenericAttentionArg::kPastKey: return "past_key";
    case GenericAttentionArg::kPastValue: return "past_value";
    case GenericAttentionArg::kNonpad: return "nonpad";
    case GenericAttentionArg::kY: return "y";
    case GenericAttentionArg::kPresentKey: return "present_key";
    case GenericAttentionArg::kPresentValue: return "present_value";
    case GenericAttentionArg::kQkOutput: return "qk";
  }
  return "?";
}

int64_t generic_attention_shared_bytes(const GenericAttentionSpec& spec) {
  return geometry(spec).total_bytes;
}

Status validate_generic_attention_spec(const GenericAttentionSpec& s) {
  if (!is_kernel_float(s.dtype))
    return unsupported("generic attention kernel: dtype {} (float32, float16 or bfloat16)",
                       ir::dtype_name(s.dtype));
  for (int d : {s.head_dim, s.head_dim_v})
    if (d < 1 || d > 256) return unsupported("generic attention kernel: head dim {} (1..256)", d);
  if (s.mask == Mask::kBoolean && s.mask_dtype != DType::kBool && s.mask_dtype != DType::kUInt8)
    return unsupported("generic attention kernel: boolean mask of {} (bool or uint8)",
                       ir::dtype_name(s.mask_dtype));
  if (s.mask == Mask::kAdditive && !is_kernel_float(s.mask_dtype))
    return unsupported(
        "generic attention kernel: additive mask of {} (float32, float16 or bfloat16)",
        ir::dtype_name(s.mask_dtype));
  if (s.mask == Mask::kNone && s.mask_dtype != DType::kUndefined)
    return invalid_argument("generic attention kernel: mask dtype {} given without a mask",
                            ir::dtype_name(s.mask_dtype));
  if (s.qk_mode < 0 || s.qk_mode > 3)
    return invalid_argument("generic attention kernel: qk_matmul_output_mode {} (0..3)", s.qk_mode);
  if (!s.qk_output && s.qk_mode != 0)
    return invalid_argument(
        "generic attention kernel: qk_matmul_output_mode {} without the qk output", s.qk_mode);
  const GenericAttentionTile& t = s.tile;
  if (t.row_warps < 1 || t.key_warps < 1 || t.warps() > 16)
    return invalid_argument("generic attention tile {}: 1 to 16 warps",
                            generic_attention_tile_name(t));
  if (t.rows_per_warp < 1 || t.rows_per_warp > 8)
    return invalid_argument("generic attention tile {}: 1 to 8 rows per warp",
                            generic_attention_tile_name(t));
  const int64_t smem = generic_attention_shared_bytes(s);
  if (smem > kMaxSharedBytes)
    return invalid_argument(
        "generic attention tile {} with head dims {}/{}: {} bytes of shared memory (at most {})",
        generic_attention_tile_name(t), s.head_dim, s.head_dim_v, smem, kMaxSharedBytes);
  return Status::ok_status();
}

Status validate_generic_attention_params(const GenericAttentionSpec& s,
                                         const GenericAttentionParams& p) {
  if (p.batch < 1 || p.q_heads < 1 || p.kv_heads < 1)
    return invalid_argument(
        "generic attention: batch {} and heads {}/{} must be positive (empty tensors need no "
        "launch)",
        p.batch, p.q_heads, p.kv_heads);
  if (p.q_len < 0 || p.kv_len < 0 || p.past_len < 0)
    return invalid_argument("generic attention: negative length (q {}, kv {}, past {})", p.q_len,
                            p.kv_len, p.past_len);
  if (int64_t{p.past_len} + p.kv_len > std::numeric_limits<int32_t>::max())
    return out_of_range("generic attention: past {} + kv {} keys exceed int32", p.past_len,
                        p.kv_len);
  if (p.q_heads % p.kv_heads != 0)
    return invalid_argument(
        "generic attention: {} query heads are not a multiple of {} key/value heads", p.q_heads,
        p.kv_heads);
  if (p.q_heads > 65535 || p.batch > 65535)
    return out_of_range("generic attention: grid y/z limit 65535 (heads {}, batch {})", p.q_heads,
                        p.batch);
  if (!s.past && p.past_len != 0)
    return invalid_argument(
        "generic attention: past_len {} but the spec has no past_key/past_value", p.past_len);
  const int64_t T = int64_t{p.past_len} + p.kv_len;
  if (s.mask != Mask::kNone && (p.mask_len < 0 || p.mask_len > T))
    return invalid_argument("generic attention: mask last dim {} must be 0..T = {}", p.mask_len, T);
  if (s.window && (p.left_window < -1 || p.right_window < -1))
    return invalid_argument("generic attention: window sizes {} / {} must be >= -1", p.left_window,
                            p.right_window);
  if (s.softcap && !(p.softcap > 0.0f && std::isfinite(p.softcap)))
    return invalid_argument("generic attention: softcap {} must be positive and finite", p.softcap);
  for (int64_t st : {p.q_stride_b,   p.q_stride_h,   p.q_stride_s,   p.k_stride_b,   p.k_stride_h,
                     p.k_stride_s,   p.v_stride_b,   p.v_stride_h,   p.v_stride_s,   p.pk_stride_b,
                     p.pk_stride_h,  p.pk_stride_s,  p.pv_stride_b,  p.pv_stride_h,  p.pv_stride_s,
                     p.y_stride_b,   p.y_stride_h,   p.y_stride_s,   p.prk_stride_b, p.prk_stride_h,
                     p.prk_stride_s, p.prv_stride_b, p.prv_stride_h, p.prv_stride_s, p.qk_stride_b,
                     p.qk_stride_h,  p.qk_stride_q,  p.m_stride_b,   p.m_stride_h,   p.m_stride_q,
                     p.m_stride_k})
    if (st < 0) return invalid_argument("generic attention: strides must be >= 0 (got {})", st);
  const int64_t blocks_x =
      (int64_t{p.q_len} + s.tile.block_q() - 1) / std::max(1, s.tile.block_q());
  if (blocks_x > std::numeric_limits<int32_t>::max())
    return out_of_range("generic attention: {} query blocks exceed the grid", blocks_x);
  return Status::ok_status();
}

float generic_attention_scale_sqrt(double scale) { return static_cast<float>(std::sqrt(scale)); }

std::string generic_attention_tile_name(const GenericAttentionTile& t) {
  return fmt::format("wq{}_wk{}_r{}", t.row_warps, t.key_warps, t.rows_per_warp);
}

GenericAttentionTile default_generic_attention_tile(const GenericAttentionSpec& spec, int64_t q_len,
                                                    int sm) {
  (void)sm;
  auto tile = [](int wq, int wk, int r) {
    GenericAttentionTile t;
    t.row_warps = wq;
    t.key_warps = wk;
    t.rows_per_warp = r;
    return t;
  };
  std::vector<GenericAttentionTile> prefs;
  if (q_len >= 1 && q_len <= 4) {
    const int r = q_len == 1 ? 1 : q_len == 2 ? 2 : 4;
    prefs = {tile(1, 4, r), tile(1, 2, r), tile(1, 1, r)};
  } else if (q_len >= 5 && q_len <= 8) {
    prefs = {tile(2, 2, 4), tile(2, 1, 4)};
  } else if (q_len >= 9 && q_len <= 16) {
    prefs = {tile(4, 1, 4), tile(2, 1, 4)};
  } else {
    prefs = {tile(4, 1, 4), tile(2, 1, 4), tile(1, 1, 4)};
  }
  for (const GenericAttentionTile& t : prefs) {
    GenericAttentionSpec s = spec;
    s.tile = t;
    if (generic_attention_shared_bytes(s) <= kDefaultSmemBudget) return t;
  }
  return prefs.back();
}

std::string generic_attention_entry_name(const GenericAttentionSpec& s) {
  std::string mask = s.mask == Mask::kNone       ? "nomask"
                     : s.mask == Mask::kAdditive ? "add" + dtype_tag(s.mask_dtype)
                                                 : "bool" + dtype_tag(s.mask_dtype);
  std::string flags;
  if (s.causal) flags += "_causal";
  if (s.softcap) flags += "_cap";
  if (s.window) flags += "_win";
  if (s.past) flags += "_past";
  if (s.nonpad) flags += "_np";
  if (s.present_key) flags += "_pk";
  if (s.present_value) flags += "_pv";
  if (s.qk_output) flags += fmt::format("_qk{}", s.qk_mode);
  return fmt::format("graphc_attn_generic_{}_d{}_v{}_{}{}_{}", dtype_tag(s.dtype), s.head_dim,
                     s.head_dim_v, mask, flags, generic_attention_tile_name(s.tile));
}

LaunchShape generic_attention_launch_shape(const GenericAttentionSpec& spec,
                                           const GenericAttentionParams& p) {
  LaunchShape l;
  const int64_t bq = std::max(1, spec.tile.block_q());
  l.grid = {std::max<int64_t>(1, (int64_t{p.q_len} + bq - 1) / bq), std::max(0, p.q_heads),
            std::max(0, p.batch)};
  l.block = {int64_t{spec.tile.warps()} * 32, 1, 1};
  l.shared_bytes = generic_attention_shared_bytes(spec);
  return l;
}

namespace {

// Contiguous strides of [B, H, L, D] (4-D) or [B, L, H*D] (3-D) as (b, h, s).
void strides_of(bool three_d, int64_t heads, int64_t len, int64_t dim, int64_t& sb, int64_t& sh,
                int64_t& ss) {
  if (three_d) {
    sh = dim;
    ss = heads * dim;
    sb = len * heads * dim;
  } else {
    ss = dim;
    sh = len * dim;
    sb = heads * len * dim;
  }
}

bool fits_i32(int64_t v) { return v >= 0 && v <= std::numeric_limits<int32_t>::max(); }

}  // namespace

Expected<GenericAttentionLaunch> generic_attention_from_ir(const ir::AttentionParams& a,
                                                           const GenericAttentionOutputs& outs,
                                                           int sm) {
  if (!is_kernel_float(a.dtype))
    return unsupported("generic attention kernel: {} Attention (float32, float16 or bfloat16 only)",
                       ir::dtype_name(a.dtype));
  for (int64_t v : {a.batch, a.q_heads, a.kv_heads, a.q_len, a.kv_len, a.past_len, a.total_len})
    if (!fits_i32(v))
      return out_of_range("generic attention kernel: size {} out of int32 range", v);
  if (!std::isfinite(a.scale) || std::fabs(a.scale) > std::numeric_limits<float>::max())
    return unsupported("generic attention kernel: scale {} is not a finite float", a.scale);
  GenericAttentionLaunch r{};
  GenericAttentionSpec& s = r.spec;
  GenericAttentionParams& p = r.params;
  s.dtype = a.dtype;
  s.head_dim = static_cast<int>(std::min<int64_t>(a.head_size, 1 << 20));
  s.head_dim_v = static_cast<int>(std::min<int64_t>(a.v_head_size, 1 << 20));
  if (a.has_mask) {
    s.mask = a.mask_is_bool ? Mask::kBoolean : Mask::kAdditive;
    s.mask_dtype = a.mask_is_bool ? DType::kBool : a.dtype;
  }
  s.causal = a.is_causal;
  s.softcap = a.softcap > 0;
  s.window = a.left_window >= 0 || a.right_window >= 0;
  s.past = a.has_past;
  s.nonpad = a.has_nonpad;
  s.present_key = outs.present_key;
  s.present_value = outs.present_value;
  s.qk_output = outs.qk_matmul_output;
  s.qk_mode = outs.qk_matmul_output ? static_cast<int>(a.qk_mode) : 0;

  p.batch = static_cast<int32_t>(a.batch);
  p.q_heads = static_cast<int32_t>(a.q_heads);
  p.kv_heads = static_cast<int32_t>(a.kv_heads);
  p.q_len = static_cast<int32_t>(a.q_len);
  p.kv_len = static_cast<int32_t>(a.kv_len);
  p.past_len = static_cast<int32_t>(a.past_len);
  p.causal_offset = static_cast<int32_t>(a.past_len);
  p.left_window = static_cast<int32_t>(
      std::clamp<int64_t>(a.left_window, -1, std::numeric_limits<int32_t>::max()));
  p.right_window = static_cast<int32_t>(
      std::clamp<int64_t>(a.right_window, -1, std::numeric_limits<int32_t>::max()));
  p.scale_sqrt = generic_attention_scale_sqrt(a.scale);
  p.softcap = s.softcap ? static_cast<float>(a.softcap) : 0.0f;
  const int64_t T = a.total_len, D = a.head_size, Dv = a.v_head_size;
  strides_of(a.three_d, a.q_heads, a.q_len, D, p.q_stride_b, p.q_stride_h, p.q_stride_s);
  strides_of(a.three_d, a.kv_heads, a.kv_len, D, p.k_stride_b, p.k_stride_h, p.k_stride_s);
  strides_of(a.three_d, a.kv_heads, a.kv_len, Dv, p.v_stride_b, p.v_stride_h, p.v_stride_s);
  strides_of(a.three_d, a.q_heads, a.q_len, Dv, p.y_stride_b, p.y_stride_h, p.y_stride_s);
  if (a.has_past) {
    strides_of(false, a.kv_heads, a.past_len, D, p.pk_stride_b, p.pk_stride_h, p.pk_stride_s);
    strides_of(false, a.kv_heads, a.past_len, Dv, p.pv_stride_b, p.pv_stride_h, p.pv_stride_s);
  }
  if (outs.present_key)
    strides_of(false, a.kv_heads, T, D, p.prk_stride_b, p.prk_stride_h, p.prk_stride_s);
  if (outs.present_value)
    strides_of(false, a.kv_heads, T, Dv, p.prv_stride_b, p.prv_stride_h, p.prv_stride_s);
  if (outs.qk_matmul_output) {
    p.qk_stride_q = T;
    p.qk_stride_h = a.q_len * T;
    p.qk_stride_b = a.q_heads * a.q_len * T;
  }
  if (a.has_mask) {
    // Right-aligned to [B, Hq, Lq, M]: contiguous strides of the mask's own
    // shape, 0 where a dim is 1 (broadcast) or absent.
    const ir::Shape& m = a.mask_shape;
    if (m.empty() || m.size() > 4)
      return invalid_argument("generic attention kernel: mask of rank {}", m.size());
    int64_t st[4] = {0, 0, 0, 0};
    int64_t stride = 1;
    for (size_t d = m.size(); d-- > 0;) {
      const size_t full = 4 - m.size() + d;
      st[full] = m[d] == 1 && full != 3 ? 0 : stride;
      stride *= m[d];
    }
    p.m_stride_b = st[0];
    p.m_stride_h = st[1];
    p.m_stride_q = st[2];
    p.m_stride_k = st[3];
    if (!fits_i32(m.back()))
      return out_of_range("generic attention kernel: mask last dim {}", m.back());
    p.mask_len = static_cast<int32_t>(m.back());
  }
  s.tile = default_generic_attention_tile(s, a.q_len, sm);
  RETURN_IF_ERROR(validate_generic_attention_spec(s));
  RETURN_IF_ERROR(validate_generic_attention_params(s, p));
  return r;
}

}  // namespace graphc::emit
