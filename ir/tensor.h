// A dense host tensor: dtype, static shape and bytes (row-major).
// Used for initializers, folded constants and reference-executor values.
// The byte buffer is shared and copy-on-write by convention: code that wants
// to mutate calls mutable_data(), which un-shares first.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "support/status.h"

namespace graphc::ir {

using Shape = std::vector<int64_t>;

std::string shape_to_string(const Shape& shape);  // "1x3x224x224", "scalar" for rank 0
int64_t shape_numel(const Shape& shape);          // caller guarantees a validated shape
Expected<int64_t> checked_shape_numel(const Shape& shape);  // rejects negatives/overflow

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor; the shape must be validated by the caller.
  Tensor(DType dtype, Shape shape);
  // Allocates after checking numel and byte size fit within max_bytes.
  static Expected<Tensor> allocate(DType dtype, Shape shape, int64_t max_bytes = INT64_MAX);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const { return numel_; }
  size_t byte_size() const { return data_ ? data_->size() : 0; }
  bool empty_storage() const { return !data_; }

  const uint8_t* data() const { return data_ ? data_->data() : nullptr; }
  uint8_t* mutable_data();
  template <typename T>
  const T* data_as() const { return reinterpret_cast<const T*>(data()); }
  template <typename T>
  T* mutable_data_as() { return reinterpret_cast<T*>(mutable_data()); }

  // Element access with conversion; the simple, obviously-right path used by
  // the reference executor. fp16/bf16 are converted through float.
  double get_f64(int64_t i) const;
  int64_t get_i64(int64_t i) const;
  uint64_t get_u64(int64_t i) const;
  void set_f64(int64_t i, double v);
  void set_i64(int64_t i, int64_t v);
  void set_u64(int64_t i, uint64_t v);

  // Same bytes, new shape (numel must match).
  Tensor reshaped(Shape shape) const;
  // Converts every element (float via double, integers via int64/uint64).
  Tensor cast_to(DType dtype) const;
  // All values as int64 / double (for shape tensors and tests).
  std::vector<int64_t> to_i64_vector() const;
  std::vector<double> to_f64_vector() const;

  static Tensor from_i64(const std::vector<int64_t>& values, Shape shape);
  static Tensor from_f32(const std::vector<float>& values, Shape shape);
  static Tensor scalar_i64(int64_t v) { return from_i64({v}, {}); }

  bool same_bytes(const Tensor& other) const;

 private:
  DType dtype_ = DType::kUndefined;
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<std::vector<uint8_t>> data_;
};

}  // namespace graphc::ir
