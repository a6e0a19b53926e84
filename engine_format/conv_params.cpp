#include "engine_format/conv_params.h"

#include <fmt/format.h>

#include <climits>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "engine_format/le_bytes.h"
#include "support/checked_math.h"

namespace graphc::engine {

namespace {

// Little-endian fixed-width fields, in this order (version 1):
//   u32 version, i32 dtype, u8 op, u8 layout, u8 compute, u8 activation,
//   u8 has_bias, u8 has_residual, u8 spatial_rank, u8 zero,
//   i64 n c k groups, i64[3] each of in filter out pads_begin pads_end
//   strides dilations, i32 algorithm, u32 zero.
constexpr size_t kEncodedBytes = 4 + 4 + 8 + 4 * 8 + 7 * 3 * 8 + 4 + 4;

// Product of n, channels and the first `rank` dims; -1 on overflow.
int64_t elements(int64_t n, int64_t channels, const ConvParams::Dims& dims, int32_t rank) {
  std::vector<int64_t> all{n, channels};
  for (int32_t i = 0; i < rank && i < ConvParams::kMaxSpatial; ++i)
    all.push_back(dims[static_cast<size_t>(i)]);
  return checked_numel(all).value_or(-1);
}

std::string dims_text(const ConvParams::Dims& d, int32_t rank) {
  std::string s;
  for (int32_t i = 0; i < rank; ++i)
    s += fmt::format("{}{}", i ? "x" : "", d[static_cast<size_t>(i)]);
  return s;
}

const char* dtype_text(int32_t dtype) {
  return dtype == 10 ? "fp16" : dtype == 16 ? "bf16" : "fp32";
}

}  // namespace

int64_t ConvParams::x_elements() const { return elements(n, c, in, spatial_rank); }
int64_t ConvParams::y_elements() const { return elements(n, k, out, spatial_rank); }
int64_t ConvParams::w_elements() const {
  if (groups < 1) return -1;
  // Forward: [K, C/groups, filter]; backward data: [C, K/groups, filter].
  return op == ConvOp::kForward ? elements(k, c / groups, filter, spatial_rank)
                                : elements(c, k / groups, filter, spatial_rank);
}

int64_t conv_forward_out_dim(int64_t in, int64_t filter, int64_t pad_begin, int64_t pad_end,
                             int64_t stride, int64_t dilation) {
  if (stride < 1 || filter < 1 || dilation < 1) return 0;
  auto reach = checked_mul(filter - 1, dilation);  // effective window - 1
  auto padded = checked_add(in, pad_begin);
  if (padded) padded = checked_add(*padded, pad_end);
  if (!reach || !padded || *padded <= *reach) return 0;
  return (*padded - *reach - 1) / stride + 1;
}

std::string encode_conv_params(const ConvParams& p) {
  LeWriter w;
  w.put<uint32_t>(ConvParams::kVersion);
  w.put<int32_t>(p.dtype);
  w.put<uint8_t>(static_cast<uint8_t>(p.op));
  w.put<uint8_t>(static_cast<uint8_t>(p.layout));
  w.put<uint8_t>(static_cast<uint8_t>(p.compute));
  w.put<uint8_t>(static_cast<uint8_t>(p.activation));
  w.put<uint8_t>(p.has_bias);
  w.put<uint8_t>(p.has_residual);
  w.put<uint8_t>(static_cast<uint8_t>(p.spatial_rank));
  w.put<uint8_t>(0);
  for (int64_t v : {p.n, p.c, p.k, p.groups}) w.put<int64_t>(v);
  for (const ConvParams::Dims* d :
       {&p.in, &p.filter, &p.out, &p.pads_begin, &p.pads_end, &p.strides, &p.dilations})
    for (int64_t v : *d) w.put<int64_t>(v);
  w.put<int32_t>(p.algorithm);
  w.put<uint32_t>(0);
  return std::move(w.out);
}

Expected<ConvParams> decode_conv_params(std::string_view bytes) {
  const char* what = "cudnn conv params";
  if (bytes.size() < 4) return invalid_engine("{}: {} bytes", what, bytes.size());
  LeReader r(bytes);
  const auto version = r.get<uint32_t>();
  if (version != ConvParams::kVersion)
    return invalid_engine("{}: version {}, this reader knows {}", what, version,
                          ConvParams::kVersion);
  if (bytes.size() != kEncodedBytes)
    return invalid_engine("{}: {} bytes, version 1 has {}", what, bytes.size(), kEncodedBytes);
  ConvParams p;
  p.dtype = r.get<int32_t>();
  const auto op = r.get<uint8_t>();
  const auto layout = r.get<uint8_t>();
  const auto compute = r.get<uint8_t>();
  const auto activation = r.get<uint8_t>();
  const auto has_bias = r.get<uint8_t>();
  const auto has_residual = r.get<uint8_t>();
  p.spatial_rank = r.get<uint8_t>();
  const auto pad8 = r.get<uint8_t>();
  for (int64_t* f : {&p.n, &p.c, &p.k, &p.groups}) *f = r.get<int64_t>();
  for (ConvParams::Dims* d :
       {&p.in, &p.filter, &p.out, &p.pads_begin, &p.pads_end, &p.strides, &p.dilations})
    for (int64_t& v : *d) v = r.get<int64_t>();
  p.algorithm = r.get<int32_t>();
  const auto pad32 = r.get<uint32_t>();

  if (p.dtype != 1 && p.dtype != 10 && p.dtype != 16)
    return invalid_engine("{}: dtype {} (float, float16 or bfloat16)", what, p.dtype);
  if (op > 1) return invalid_engine("{}: unknown op {}", what, op);
  p.op = static_cast<ConvOp>(op);
  if (layout > 1) return invalid_engine("{}: unknown layout {}", what, layout);
  p.layout = static_cast<ConvLayout>(layout);
  if (compute > 1) return invalid_engine("{}: unknown compute type {}", what, compute);
  if (compute == 1 && p.dtype != 1)
    return invalid_engine("{}: TF32 compute on a non-float32 conv", what);
  p.compute = static_cast<ConvCompute>(compute);
  if (activation > 1) return invalid_engine("{}: unknown activation {}", what, activation);
  p.activation = static_cast<ConvActivation>(activation);
  if (has_bias > 1) return invalid_engine("{}: has_bias is {}, not 0 or 1", what, has_bias);
  if (has_residual > 1)
    return invalid_engine("{}: has_residual is {}, not 0 or 1", what, has_residual);
  p.has_bias = has_bias;
  p.has_residual = has_residual;
  if (pad8 != 0 || pad32 != 0) return invalid_engine("{}: reserved bytes are not zero", what);
  if (p.spatial_rank < 1 || p.spatial_rank > ConvParams::kMaxSpatial)
    return invalid_engine("{}: spatial_rank {} (1 to {})", what, p.spatial_rank,
                          ConvParams::kMaxSpatial);
  // The legacy cuDNN API takes every dim, and indexes every tensor, as int.
  constexpr int64_t kMax = INT32_MAX;
  for (auto [name, v] : {std::pair{"n", p.n}, {"c", p.c}, {"k", p.k}, {"groups", p.groups}})
    if (v < 1 || v > kMax)
      return invalid_engine("{}: {} = {} is outside [1, {}]", what, name, v, kMax);
  if (p.c % p.groups != 0 || p.k % p.groups != 0)
    return invalid_engine("{}: groups {} does not divide C={} and K={}", what, p.groups, p.c, p.k);
  const auto rank = static_cast<size_t>(p.spatial_rank);
  const std::pair<const char*, const ConvParams::Dims*> dims[] = {{"in", &p.in},
                                                                  {"filter", &p.filter},
                                                                  {"out", &p.out},
                                                                  {"pads_begin", &p.pads_begin},
                                                                  {"pads_end", &p.pads_end},
                                                                  {"strides", &p.strides},
                                                                  {"dilations", &p.dilations}};
  for (auto [name, d] : dims) {
    const bool pad = std::string_view(name).starts_with("pads");
    for (size_t i = 0; i < ConvParams::kMaxSpatial; ++i) {
      const int64_t v = (*d)[i];
      if (i >= rank) {
        if (v != 0)
          return invalid_engine("{}: {}[{}] = {} past spatial_rank {} (must be 0)", what, name, i,
                                v, p.spatial_rank);
        continue;
      }
      if (v < (pad ? 0 : 1) || v > kMax)
        return invalid_engine("{}: {}[{}] = {} is outside [{}, {}]", what, name, i, v, pad ? 0 : 1,
                              kMax);
    }
  }
  for (size_t i = 0; i < rank; ++i) {
    if (p.pads_begin[i] != p.pads_end[i])
      return invalid_engine(
          "{}: pads_begin[{}] = {} and pads_end[{}] = {} differ (cuDNN takes "
          "symmetric pads)",
          what, i, p.pads_begin[i], i, p.pads_end[i]);
    // Forward: out from in; backward data is the forward conv from out to in.
    const bool fwd = p.op == ConvOp::kForward;
    const int64_t from = fwd ? p.in[i] : p.out[i], to = fwd ? p.out[i] : p.in[i];
    const int64_t expect = conv_forward_out_dim(from, p.filter[i], p.pads_begin[i], p.pads_end[i],
                                                p.strides[i], p.dilations[i]);
    if (expect != to)
      return invalid_engine("{}: {}[{}] = {}, but the window over {} gives {}", what,
                            fwd ? "out" : "in", i, to, from, expect);
  }
  for (auto [name, v] :
       {std::pair{"x", p.x_elements()}, {"w", p.w_elements()}, {"y", p.y_elements()}})
    if (v < 1 || v > kMax)
      return invalid_engine("{}: {} has {} elements (cuDNN's legacy API indexes with int)", what,
                            name, v);
  const int32_t algorithms = p.op == ConvOp::kForward ? ConvParams::kForwardAlgorithms
                                                      : ConvParams::kBackwardDataAlgorithms;
  if (p.algorithm < -1 || p.algorithm >= algorithms)
    return invalid_engine("{}: algorithm {} is outside [-1, {})", what, p.algorithm, algorithms);
  return p;
}

Expected<ConvParams> conv_params_at(const ConvParams& built, std::span<const int64_t> sizes) {
  const auto rank = static_cast<size_t>(built.spatial_rank);
  if (sizes.size() != static_cast<size_t>(conv_range_sizes(built.spatial_rank)))
    return invalid_engine("cudnn conv: {} run-time sizes for a conv of spatial rank {} (want {})",
                          sizes.size(), built.spatial_rank, conv_range_sizes(built.spatial_rank));
  ConvParams at = built;
  at.n = sizes[0];
  for (size_t i = 0; i < rank; ++i) {
    at.in[i] = sizes[1 + i];
    at.out[i] = sizes[1 + rank + i];
  }
  if (!(at == built)) at.algorithm = -1;  // the recorded one was chosen at the built shape
  auto checked = decode_conv_params(encode_conv_params(at));
  if (!checked.ok()) return checked.status().with_context(fmt::format("at N={} {}->{}", at.n,
                                                                      dims_text(at.in, built.spatial_rank),
                                                                      dims_text(at.out, built.spatial_rank)));
  return checked;
}

std::string describe_conv(const ConvParams& p) {
  const int32_t r = p.spatial_rank;
  std::string out =
      fmt::format("{}{}d {}{} {} N={} C={}->K={} {}->{} f={} s={} p={} d={}",
                  p.op == ConvOp::kForward ? "conv" : "conv_transpose", r, dtype_text(p.dtype),
                  p.compute == ConvCompute::kF32FastTf32 ? "/tf32" : "",
                  p.layout == ConvLayout::kNhwc ? "NHWC" : "NCHW", p.n, p.c, p.k,
                  dims_text(p.in, r), dims_text(p.out, r), dims_text(p.filter, r),
                  dims_text(p.strides, r), dims_text(p.pads_begin, r), dims_text(p.dilations, r));
  if (p.groups > 1) out += fmt::format(" g={}", p.groups);
  std::string epi;
  if (p.has_bias) epi = "bias";
  if (p.has_residual) epi += (epi.empty() ? "" : "+") + std::string("residual");
  if (p.activation == ConvActivation::kRelu) epi += (epi.empty() ? "" : "+") + std::string("relu");
  out += " epilogue=" + (epi.empty() ? std::string("none") : epi);
  out += p.algorithm < 0 ? std::string(" algo=heuristic") : fmt::format(" algo={}", p.algorithm);
  return out;
}

}  // namespace graphc::engine
