#include "ir/tensor.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "support/checked_math.h"
#include "support/half.h"

namespace graphc::ir {

std::string shape_to_string(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += 'x';
    s += shape[i] < 0 ? std::string("?") : std::to_string(shape[i]);
  }
  return s;
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Expected<int64_t> checked_shape_numel(const Shape& shape) {
  auto n = checked_numel(shape);
  if (!n) return out_of_range("shape {} has a negative dim or its element count overflows int64",
                              shape_to_string(shape));
  return *n;
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  numel_ = shape_numel(shape_);
  data_ = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(numel_) * dtype_size(dtype_));
}

Expected<Tensor> Tensor::allocate(DType dtype, Shape shape, int64_t max_bytes) {
  ASSIGN_OR_RETURN(int64_t n, checked_shape_numel(shape));
  auto bytes = checked_mul(n, static_cast<int64_t>(dtype_size(dtype)));
  if (!bytes || *bytes > max_bytes)
    return out_of_range("tensor of shape {} and dtype {} exceeds the {}-byte limit",
                        shape_to_string(shape), dtype_name(dtype), max_bytes);
  return Tensor(dtype, std::move(shape));
}

Tensor Tensor::borrowing(DType dtype, Shape shape, std::shared_ptr<const BorrowedBytes> bytes) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = shape_numel(t.shape_);
  t.borrowed_ = std::move(bytes);
  return t;
}

uint8_t* Tensor::mutable_data() {
  if (borrowed_) {
    data_ = std::make_shared<std::vector<uint8_t>>(borrowed_->data(),
                                                   borrowed_->data() + borrowed_->size());
    borrowed_.reset();
  }
  if (!data_) return nullptr;
  if (data_.use_count() > 1) data_ = std::make_shared<std::vector<uint8_t>>(*data_);
  return data_->data();
}

double Tensor::get_f64(int64_t i) const {
  const uint8_t* p = data();
  switch (dtype_) {
    case DType::kFloat32: return reinterpret_cast<const float*>(p)[i];
    case DType::kFloat64: return reinterpret_cast<const double*>(p)[i];
    case DType::kFloat16: return half_bits_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
    case DType::kBFloat16: return bf16_bits_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
    case DType::kUInt64: return static_cast<double>(reinterpret_cast<const uint64_t*>(p)[i]);
    default:
      if (auto mf = minifloat_of(dtype_)) return minifloat_to_double(*mf, p[i]);
      return static_cast<double>(get_i64(i));
  }
}

int64_t Tensor::get_i64(int64_t i) const {
  const uint8_t* p = data();
  switch (dtype_) {
    case DType::kInt8: return reinterpret_cast<const int8_t*>(p)[i];
    case DType::kInt16: return reinterpret_cast<const int16_t*>(p)[i];
    case DType::kInt32: return reinterpret_cast<const int32_t*>(p)[i];
    case DType::kInt64: return reinterpret_cast<const int64_t*>(p)[i];
    case DType::kUInt8: return reinterpret_cast<const uint8_t*>(p)[i];
    case DType::kUInt16: return reinterpret_cast<const uint16_t*>(p)[i];
    case DType::kUInt32: return reinterpret_cast<const uint32_t*>(p)[i];
    case DType::kUInt64: return static_cast<int64_t>(reinterpret_cast<const uint64_t*>(p)[i]);
    case DType::kBool: return p[i] ? 1 : 0;
    case DType::kInt4:
    case DType::kInt2: return reinterpret_cast<const int8_t*>(p)[i];
    case DType::kUInt4:
    case DType::kUInt2: return p[i];
    default: {
      double v = get_f64(i);
      if (std::isnan(v)) return 0;
      if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
      if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
      return static_cast<int64_t>(v);  // truncation toward zero, as C casts
    }
  }
}

uint64_t Tensor::get_u64(int64_t i) const {
  if (dtype_ == DType::kUInt64) return data_as<uint64_t>()[i];
  if (is_float(dtype_) || is_narrow_float(dtype_)) {
    double v = get_f64(i);
    if (std::isnan(v) || v <= 0) return v <= -1 ? static_cast<uint64_t>(static_cast<int64_t>(v)) : 0;
    if (v >= 1.8446744073709552e19) return std::numeric_limits<uint64_t>::max();
    return static_cast<uint64_t>(v);
  }
  return static_cast<uint64_t>(get_i64(i));
}

void Tensor::set_f64(int64_t i, double v) {
  uint8_t* p = mutable_data();
  switch (dtype_) {
    case DType::kFloat32: reinterpret_cast<float*>(p)[i] = static_cast<float>(v); return;
    case DType::kFloat64: reinterpret_cast<double*>(p)[i] = v; return;
    case DType::kFloat16:
      reinterpret_cast<uint16_t*>(p)[i] = float_to_half_bits(static_cast<float>(v));
      return;
    case DType::kBFloat16:
      reinterpret_cast<uint16_t*>(p)[i] = float_to_bf16_bits(static_cast<float>(v));
      return;
    case DType::kBool: p[i] = v != 0.0 ? 1 : 0; return;
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
    case DType::kFloat4E2M1:  // saturating, as ONNX's Cast by default
      p[i] = double_to_minifloat(*minifloat_of(dtype_), v, /*saturate=*/true);
      return;
    case DType::kUInt64:
    case DType::kUInt32:
    case DType::kUInt16:
    case DType::kUInt8:
      if (std::isnan(v)) return set_u64(i, 0);
      if (v < 0) return set_i64(i, static_cast<int64_t>(v));
      if (v >= 1.8446744073709552e19) return set_u64(i, UINT64_MAX);
      return set_u64(i, static_cast<uint64_t>(v));
    default: {
      if (std::isnan(v)) return set_i64(i, 0);
      if (v >= 9.2233720368547758e18) return set_i64(i, INT64_MAX);
      if (v <= -9.2233720368547758e18) return set_i64(i, INT64_MIN);
      return set_i64(i, static_cast<int64_t>(v));
    }
  }
}

void Tensor::set_i64(int64_t i, int64_t v) {
  uint8_t* p = mutable_data();
  switch (dtype_) {
    case DType::kInt8: reinterpret_cast<int8_t*>(p)[i] = static_cast<int8_t>(v); return;
    case DType::kInt16: reinterpret_cast<int16_t*>(p)[i] = static_cast<int16_t>(v); return;
    case DType::kInt32: reinterpret_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); return;
    case DType::kInt64: reinterpret_cast<int64_t*>(p)[i] = v; return;
    case DType::kUInt8: reinterpret_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); return;
    case DType::kUInt16: reinterpret_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v); return;
    case DType::kUInt32: reinterpret_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v); return;
    case DType::kUInt64: reinterpret_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v); return;
    case DType::kBool: p[i] = v != 0 ? 1 : 0; return;
    case DType::kInt4:
    case DType::kInt2:
    case DType::kUInt4:
    case DType::kUInt2: p[i] = wrap_sub_byte(dtype_, v); return;
    default: set_f64(i, static_cast<double>(v)); return;
  }
}

void Tensor::set_u64(int64_t i, uint64_t v) {
  if (dtype_ == DType::kUInt64) {
    mutable_data_as<uint64_t>()[i] = v;
  } else if (is_float(dtype_) || is_narrow_float(dtype_)) {
    set_f64(i, static_cast<double>(v));
  } else {
    set_i64(i, static_cast<int64_t>(v));
  }
}

Tensor Tensor::reshaped(Shape shape) const {
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::cast_to(DType dtype) const {
  if (dtype == dtype_) return *this;
  Tensor out(dtype, shape_);
  for (int64_t i = 0; i < numel_; ++i) {
    if (is_float(dtype_) || is_float(dtype) || is_narrow_float(dtype_) || is_narrow_float(dtype)) {
      if (dtype_ == DType::kUInt64 && !is_float(dtype)) out.set_u64(i, get_u64(i));
      else out.set_f64(i, get_f64(i));
    } else if (dtype_ == DType::kUInt64) {
      out.set_u64(i, get_u64(i));
    } else {
      out.set_i64(i, get_i64(i));
    }
  }
  return out;
}

std::vector<int64_t> Tensor::to_i64_vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) v[static_cast<size_t>(i)] = get_i64(i);
  return v;
}

std::vector<double> Tensor::to_f64_vector() const {
  std::vector<double> v(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) v[static_cast<size_t>(i)] = get_f64(i);
  return v;
}

Tensor Tensor::from_i64(const std::vector<int64_t>& values, Shape shape) {
  Tensor t(DType::kInt64, std::move(shape));
  if (!values.empty()) std::memcpy(t.mutable_data(), values.data(), values.size() * 8);
  return t;
}

Tensor Tensor::from_f32(const std::vector<float>& values, Shape shape) {
  Tensor t(DType::kFloat32, std::move(shape));
  if (!values.empty()) std::memcpy(t.mutable_data(), values.data(), values.size() * 4);
  return t;
}

bool Tensor::same_bytes(const Tensor& other) const {
  if (dtype_ != other.dtype_ || shape_ != other.shape_) return false;
  if (byte_size() != other.byte_size()) return false;
  return byte_size() == 0 || std::memcmp(data(), other.data(), byte_size()) == 0;
}

}  // namespace graphc::ir
