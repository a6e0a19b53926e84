#include "reference/contraction_util.h"

#include <type_traits>

#include "support/half.h"

namespace graphc::reference::detail {

using ir::DType;

namespace {
template <typename From, typename To, typename Fn>
void convert(const From* src, To* dst, int64_t n, Fn fn) {
  for (int64_t i = 0; i < n; ++i) dst[i] = fn(src[i]);
}
}  // namespace

std::vector<double> load_f64(const ir::Tensor& t) {
  const int64_t n = t.numel();
  std::vector<double> out(static_cast<size_t>(n));
  double* dst = out.data();
  switch (t.dtype()) {
    case DType::kFloat32:
      convert(t.data_as<float>(), dst, n, [](float v) { return static_cast<double>(v); });
      break;
    case DType::kFloat64: convert(t.data_as<double>(), dst, n, [](double v) { return v; }); break;
    case DType::kFloat16:
      convert(t.data_as<uint16_t>(), dst, n,
              [](uint16_t v) { return static_cast<double>(half_bits_to_float(v)); });
      break;
    case DType::kBFloat16:
      convert(t.data_as<uint16_t>(), dst, n,
              [](uint16_t v) { return static_cast<double>(bf16_bits_to_float(v)); });
      break;
    default:  // not reached for validated graphs; the generic path is still correct
      for (int64_t i = 0; i < n; ++i) dst[i] = t.get_f64(i);
      break;
  }
  return out;
}

void store_f64(ir::Tensor& t, const double* values) {
  const int64_t n = t.numel();
  switch (t.dtype()) {
    case DType::kFloat32:
      convert(values, t.mutable_data_as<float>(), n,
              [](double v) { return static_cast<float>(v); });
      break;
    case DType::kFloat64:
      convert(values, t.mutable_data_as<double>(), n, [](double v) { return v; });
      break;
    case DType::kFloat16:
      convert(values, t.mutable_data_as<uint16_t>(), n,
              [](double v) { return float_to_half_bits(static_cast<float>(v)); });
      break;
    case DType::kBFloat16:
      convert(values, t.mutable_data_as<uint16_t>(), n,
              [](double v) { return float_to_bf16_bits(static_cast<float>(v)); });
      break;
    default:
      for (int64_t i = 0; i < n; ++i) t.set_f64(i, values[i]);
      break;
  }
}

std::vector<uint64_t> load_wrapped(const ir::Tensor& t) {
  const int64_t n = t.numel();
  std::vector<uint64_t> out(static_cast<size_t>(n));
  uint64_t* dst = out.data();
  auto sext = [](auto v) { return static_cast<uint64_t>(static_cast<int64_t>(v)); };
  auto zext = [](auto v) { return static_cast<uint64_t>(v); };
  switch (t.dtype()) {
    case DType::kInt8: convert(t.data_as<int8_t>(), dst, n, sext); break;
    case DType::kInt16: convert(t.data_as<int16_t>(), dst, n, sext); break;
    case DType::kInt32: convert(t.data_as<int32_t>(), dst, n, sext); break;
    case DType::kInt64: convert(t.data_as<int64_t>(), dst, n, sext); break;
    case DType::kUInt8: convert(t.data_as<uint8_t>(), dst, n, zext); break;
    case DType::kUInt16: convert(t.data_as<uint16_t>(), dst, n, zext); break;
    case DType::kUInt32: convert(t.data_as<uint32_t>(), dst, n, zext); break;
    case DType::kUInt64: convert(t.data_as<uint64_t>(), dst, n, zext); break;
    default:
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<uint64_t>(t.get_i64(i));
      break;
  }
  return out;
}

void store_wrapped(ir::Tensor& t, const uint64_t* values) {
  const int64_t n = t.numel();
  auto to = [&](auto* dst) {
    using T = std::remove_pointer_t<decltype(dst)>;
    convert(values, dst, n, [](uint64_t v) { return static_cast<T>(v); });
  };
  switch (t.dtype()) {
    case DType::kInt8: to(t.mutable_data_as<int8_t>()); break;
    case DType::kInt16: to(t.mutable_data_as<int16_t>()); break;
    case DType::kInt32: to(t.mutable_data_as<int32_t>()); break;
    case DType::kInt64: to(t.mutable_data_as<int64_t>()); break;
    case DType::kUInt8: to(t.mutable_data_as<uint8_t>()); break;
    case DType::kUInt16: to(t.mutable_data_as<uint16_t>()); break;
    case DType::kUInt32: to(t.mutable_data_as<uint32_t>()); break;
    case DType::kUInt64: to(t.mutable_data_as<uint64_t>()); break;
    default:
      for (int64_t i = 0; i < n; ++i) t.set_u64(i, values[i]);
      break;
  }
}

}  // namespace graphc::reference::detail
