#include "engine_format/sdpa_params.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <optional>
#include <utility>

#include "engine_format/le_bytes.h"
#include "support/checked_math.h"

namespace graphc::engine {

namespace {

// Little-endian fixed-width fields, in this order (version 1):
//   u32 version, i32 dtype, u8 causal, u8 has_bias, u8 has_seq_lens, u8 zero,
//   u32 scale (the float's bits), i32 engine,
//   i64 batch heads kv_heads seq_q seq_kv head_dim value_dim,
//   i64[4] each of q k v o bias strides, u32 zero.
constexpr size_t kEncodedBytes = 4 + 4 + 4 + 4 + 4 + 7 * 8 + 5 * 4 * 8 + 4;

// Sizes: cuDNN takes int64 dims, but no GPU holds 2^31 rows of anything.
constexpr int64_t kMaxDim = INT32_MAX;
// Elements an operand may span: its bytes (and the validators' arithmetic)
// stay far inside int64.
constexpr int64_t kMaxElements = int64_t{1} << 48;

using Strides = SdpaParams::Strides;
using Dims = std::array<int64_t, 4>;

// The largest offset `strides` reach over `dims`, plus one; -1 on overflow.
int64_t extent(const Dims& dims, const Strides& strides) {
  int64_t last = 0;
  for (size_t i = 0; i < 4; ++i) {
    if (dims[i] < 1 || strides[i] < 0) return -1;
    auto reach = checked_mul(dims[i] - 1, strides[i]);
    if (!reach) return -1;
    auto sum = checked_add(last, *reach);
    if (!sum) return -1;
    last = *sum;
  }
  auto e = checked_add(last, 1);
  return e ? *e : -1;
}

// True when no two elements of `dims` share an offset: sorted by stride, each
// dim of extent > 1 steps past everything the smaller strides reach.
bool non_overlapping(const Dims& dims, const Strides& strides) {
  std::vector<std::pair<int64_t, int64_t>> used;  // (stride, dim)
  for (size_t i = 0; i < 4; ++i)
    if (dims[i] > 1) used.emplace_back(strides[i], dims[i]);
  std::sort(used.begin(), used.end());
  int64_t reach = 1;  // elements covered by the smaller strides
  for (auto [stride, dim] : used) {
    if (stride < reach) return false;
    auto next = checked_mul(stride, dim);
    if (!next) return false;
    reach = *next;
  }
  return true;
}

Dims q_dims(const SdpaParams& p) { return {p.batch, p.heads, p.seq_q, p.head_dim}; }
Dims k_dims(const SdpaParams& p) { return {p.batch, p.kv_heads, p.seq_kv, p.head_dim}; }
Dims v_dims(const SdpaParams& p) { return {p.batch, p.kv_heads, p.seq_kv, p.value_dim}; }
Dims o_dims(const SdpaParams& p) { return {p.batch, p.heads, p.seq_q, p.value_dim}; }
Dims bias_dims(const SdpaParams& p) { return {p.batch, p.heads, p.seq_q, p.seq_kv}; }

const char* dtype_text(int32_t dtype) { return dtype == 16 ? "bf16" : "fp16"; }

std::string layout_text(const Strides& s, int64_t heads, int64_t seq, int64_t dim) {
  if (s == packed_bhsd_strides(heads, seq, dim)) return "bhsd";
  if (s == packed_bshd_strides(heads, seq, dim)) return "bshd";
  return fmt::format("[{},{},{},{}]", s[0], s[1], s[2], s[3]);
}

}  // namespace

int64_t SdpaParams::q_extent() const { return extent(q_dims(*this), q_strides); }
int64_t SdpaParams::k_extent() const { return extent(k_dims(*this), k_strides); }
int64_t SdpaParams::v_extent() const { return extent(v_dims(*this), v_strides); }
int64_t SdpaParams::o_extent() const { return extent(o_dims(*this), o_strides); }
int64_t SdpaParams::bias_extent() const {
  return has_bias ? extent(bias_dims(*this), bias_strides) : 0;
}

SdpaParams::Strides packed_bhsd_strides(int64_t heads, int64_t seq, int64_t dim) {
  return {heads * seq * dim, seq * dim, dim, 1};
}

SdpaParams::Strides packed_bshd_strides(int64_t heads, int64_t seq, int64_t dim) {
  return {seq * heads * dim, dim, heads * dim, 1};
}

std::string encode_sdpa_params(const SdpaParams& p) {
  LeWriter w;
  w.put<uint32_t>(SdpaParams::kVersion);
  w.put<int32_t>(p.dtype);
  w.put<uint8_t>(p.causal);
  w.put<uint8_t>(p.has_bias);
  w.put<uint8_t>(p.has_seq_lens);
  w.put<uint8_t>(0);
  w.put<uint32_t>(std::bit_cast<uint32_t>(p.scale));
  w.put<int32_t>(p.engine);
  for (int64_t v : {p.batch, p.heads, p.kv_heads, p.seq_q, p.seq_kv, p.head_dim, p.value_dim})
    w.put<int64_t>(v);
  for (const Strides* s : {&p.q_strides, &p.k_strides, &p.v_strides, &p.o_strides, &p.bias_strides})
    for (int64_t v : *s) w.put<int64_t>(v);
  w.put<uint32_t>(0);
  return std::move(w.out);
}

Expected<SdpaParams> decode_sdpa_params(std::string_view bytes) {
  const char* what = "cudnn sdpa params";
  if (bytes.size() < 4) return invalid_engine("{}: {} bytes", what, bytes.size());
  LeReader r(bytes);
  const auto version = r.get<uint32_t>();
  if (version != SdpaParams::kVersion)
    return invalid_engine("{}: version {}, this reader knows {}", what, version,
                          SdpaParams::kVersion);
  if (bytes.size() != kEncodedBytes)
    return invalid_engine("{}: {} bytes, version 1 has {}", what, bytes.size(), kEncodedBytes);
  SdpaParams p;
  p.dtype = r.get<int32_t>();
  const auto causal = r.get<uint8_t>();
  const auto has_bias = r.get<uint8_t>();
  const auto has_seq_lens = r.get<uint8_t>();
  const auto pad8 = r.get<uint8_t>();
  const auto scale_bits = r.get<uint32_t>();
  p.engine = r.get<int32_t>();
  for (int64_t* f :
       {&p.batch, &p.heads, &p.kv_heads, &p.seq_q, &p.seq_kv, &p.head_dim, &p.value_dim})
    *f = r.get<int64_t>();
  for (Strides* s : {&p.q_strides, &p.k_strides, &p.v_strides, &p.o_strides, &p.bias_strides})
    for (int64_t& v : *s) v = r.get<int64_t>();
  const auto pad32 = r.get<uint32_t>();
  if (r.failed() || r.remaining() != 0) return internal_error("{}: layout arithmetic", what);

  if (p.dtype != 10 && p.dtype != 16)
    return invalid_engine("{}: dtype {} (float16 or bfloat16)", what, p.dtype);
  for (auto [name, v] :
       {std::pair{"causal", causal}, {"has_bias", has_bias}, {"has_seq_lens", has_seq_lens}})
    if (v > 1) return invalid_engine("{}: {} is {}, not 0 or 1", what, name, v);
  p.causal = causal;
  p.has_bias = has_bias;
  p.has_seq_lens = has_seq_lens;
  if (pad8 != 0 || pad32 != 0) return invalid_engine("{}: reserved bytes are not zero", what);
  p.scale = std::bit_cast<float>(scale_bits);
  if (!std::isfinite(p.scale)) return invalid_engine("{}: scale {} is not finite", what, p.scale);
  if (p.engine < -1 || p.engine >= SdpaParams::kMaxEngineIndex)
    return invalid_engine("{}: engine {} is outside [-1, {})", what, p.engine,
                          SdpaParams::kMaxEngineIndex);
  for (auto [name, v] : {std::pair{"batch", p.batch},
                         {"heads", p.heads},
                         {"kv_heads", p.kv_heads},
                         {"seq_q", p.seq_q},
                         {"seq_kv", p.seq_kv},
                         {"head_dim", p.head_dim},
                         {"value_dim", p.value_dim}})
    if (v < 1 || v > kMaxDim)
      return invalid_engine("{}: {} = {} is outside [1, {}]", what, name, v, kMaxDim);
  if (p.heads % p.kv_heads != 0)
    return invalid_engine("{}: kv_heads {} does not divide heads {}", what, p.kv_heads, p.heads);
  // cuDNN's intermediate score tensor [B, H, Lq, Lk] has packed int64 strides.
  const int64_t score_dims[] = {p.batch, p.heads, p.seq_q, p.seq_kv};
  if (!checked_numel(score_dims))
    return invalid_engine("{}: the score matrix B*H*Lq*Lk = {}*{}*{}*{} overflows int64", what,
                          p.batch, p.heads, p.seq_q, p.seq_kv);
  const std::pair<const char*, const Strides*> tensors[] = {
      {"q", &p.q_strides}, {"k", &p.k_strides}, {"v", &p.v_strides}, {"o", &p.o_strides}};
  for (auto [name, s] : tensors) {
    for (size_t i = 0; i < 4; ++i)
      if ((*s)[i] < 0 || (*s)[i] > kMaxElements)
        return invalid_engine("{}: {}_strides[{}] = {} is outside [0, {}]", what, name, i, (*s)[i],
                              kMaxElements);
    if ((*s)[3] != 1)
      return invalid_engine("{}: {}_strides[3] = {}; the feature dim must be contiguous (1)", what,
                            name, (*s)[3]);
  }
  if (!p.has_bias) {
    for (size_t i = 0; i < 4; ++i)
      if (p.bias_strides[i] != 0)
        return invalid_engine("{}: bias_strides[{}] = {} without a bias (must be 0)", what, i,
                              p.bias_strides[i]);
  } else {
    for (size_t i = 0; i < 4; ++i)
      if (p.bias_strides[i] < 0 || p.bias_strides[i] > kMaxElements)
        return invalid_engine("{}: bias_strides[{}] = {} is outside [0, {}]", what, i,
                              p.bias_strides[i], kMaxElements);
    if (p.bias_strides[3] != 1)
      return invalid_engine("{}: bias_strides[3] = {}; the key dim must be contiguous (1)", what,
                            p.bias_strides[3]);
  }
  for (auto [name, e] : {std::pair{"Q", p.q_extent()},
                         {"K", p.k_extent()},
                         {"V", p.v_extent()},
                         {"O", p.o_extent()},
                         {"bias", p.bias_extent()}})
    if (e < 0 || e > kMaxElements)
      return invalid_engine("{}: {} spans {} elements (at most {})", what, name, e, kMaxElements);
  if (!non_overlapping(o_dims(p), p.o_strides))
    return invalid_engine("{}: o_strides [{}, {}, {}, {}] make output elements overlap", what,
                          p.o_strides[0], p.o_strides[1], p.o_strides[2], p.o_strides[3]);
  return p;
}

std::vector<SdpaOperand> sdpa_operands(const SdpaParams& p) {
  std::vector<SdpaOperand> out = {{"Q", 0, p.dtype, p.q_extent(), false},
                                  {"K", 1, p.dtype, p.k_extent(), false},
                                  {"V", 2, p.dtype, p.v_extent(), false}};
  if (p.has_bias) out.push_back({"bias", p.bias_arg(), p.dtype, p.bias_extent(), false});
  if (p.has_seq_lens) {
    out.push_back({"seq_len_q", p.seq_len_q_arg(), 6, p.batch, false});  // ONNX 6: int32
    out.push_back({"seq_len_kv", p.seq_len_kv_arg(), 6, p.batch, false});
  }
  out.push_back({"O", p.o_arg(), p.dtype, p.o_extent(), true});
  return out;
}

std::string sdpa_cudnn_refusal(const SdpaParams& p) {
  if (p.head_dim % 8 != 0 || p.value_dim % 8 != 0)
    return fmt::format("cuDNN attention needs head dims that are multiples of 8 (D={}, Dv={})",
                       p.head_dim, p.value_dim);
  if (p.head_dim > 256 || p.value_dim > 256)
    return fmt::format("cuDNN attention takes head dims up to 256 (D={}, Dv={})", p.head_dim,
                       p.value_dim);
  return "";
}

double sdpa_flops(const SdpaParams& p) {
  const double d = 0.5 * (static_cast<double>(p.head_dim) + static_cast<double>(p.value_dim));
  const double f = 4.0 * static_cast<double>(p.batch) * static_cast<double>(p.heads) *
                   static_cast<double>(p.seq_q) * static_cast<double>(p.seq_kv) * d;
  return p.causal ? f / 2 : f;
}

std::string describe_sdpa(const SdpaParams& p) {
  std::string out = fmt::format("sdpa {} B={} H={}", dtype_text(p.dtype), p.batch, p.heads);
  if (p.kv_heads != p.heads) out += fmt::format(" (kv {})", p.kv_heads);
  out += fmt::format(" Lq={} Lk={} D={} Dv={} scale={:.6g}", p.seq_q, p.seq_kv, p.head_dim,
                     p.value_dim, p.scale);
  if (p.causal) out += " causal";
  if (p.has_bias) {
    const Strides& s = p.bias_strides;
    out += fmt::format(" bias[{},{},{},k]", s[0] ? "b" : "1", s[1] ? "h" : "1", s[2] ? "q" : "1");
  }
  if (p.has_seq_lens) out += " seqlens";
  out += fmt::format(" layout q={} k={} v={} o={}",
                     layout_text(p.q_strides, p.heads, p.seq_q, p.head_dim),
                     layout_text(p.k_strides, p.kv_heads, p.seq_kv, p.head_dim),
                     layout_text(p.v_strides, p.kv_heads, p.seq_kv, p.value_dim),
                     layout_text(p.o_strides, p.heads, p.seq_q, p.value_dim));
  out += p.engine < 0 ? std::string(" engine=heuristic") : fmt::format(" engine={}", p.engine);
  return out;
}

std::array<int64_t, kSdpaRangeFields> sdpa_range_fields(const SdpaParams& p) {
  std::array<int64_t, kSdpaRangeFields> f{p.batch, p.heads, p.kv_heads, p.seq_q, p.seq_kv};
  size_t at = 5;
  for (const Strides* s : {&p.q_strides, &p.k_strides, &p.v_strides, &p.o_strides, &p.bias_strides})
    for (int64_t v : *s) f[at++] = v;
  return f;
}

std::string sdpa_range_field_name(int field) {
  static const char* const kScalars[] = {"batch", "heads", "kv_heads", "seq_q", "seq_kv"};
  static const char* const kStrides[] = {"q_strides", "k_strides", "v_strides", "o_strides",
                                         "bias_strides"};
  if (field < 0 || field >= kSdpaRangeFields) return fmt::format("field {}", field);
  if (field < 5) return kScalars[field];
  return fmt::format("{}[{}]", kStrides[(field - 5) / 4], (field - 5) % 4);
}

Expected<SdpaParams> sdpa_params_at(const SdpaParams& built, const std::vector<int32_t>& sizes,
                                    const std::vector<int64_t>& values) {
  if (sizes.size() != static_cast<size_t>(kSdpaRangeFields))
    return invalid_engine("sdpa over a shape range: {} run-time fields, not {}", sizes.size(),
                          kSdpaRangeFields);
  std::array<int64_t, kSdpaRangeFields> f = sdpa_range_fields(built);
  for (size_t i = 0; i < f.size(); ++i) {
    if (sizes[i] < 0) continue;
    if (static_cast<size_t>(sizes[i]) >= values.size())
      return invalid_engine("sdpa {}: size {} of {}", sdpa_range_field_name(static_cast<int>(i)),
                            sizes[i], values.size());
    f[i] = values[static_cast<size_t>(sizes[i])];
  }
  SdpaParams p = built;
  p.batch = f[0];
  p.heads = f[1];
  p.kv_heads = f[2];
  p.seq_q = f[3];
  p.seq_kv = f[4];
  size_t at = 5;
  for (Strides* s : {&p.q_strides, &p.k_strides, &p.v_strides, &p.o_strides, &p.bias_strides})
    for (int64_t& v : *s) v = f[at++];
  // The same checks as untrusted bytes get (the values come from size programs).
  auto checked = decode_sdpa_params(encode_sdpa_params(p));
  if (!checked.ok()) return checked.status().with_context("sdpa parameters at this shape");
  return *checked;
}

}  // namespace graphc::engine
