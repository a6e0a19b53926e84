// A dense host tensor: dtype, static shape and bytes (row-major).
// Used for initializers, folded constants and reference-executor values.
// The byte buffer is shared and copy-on-write by convention: code that wants
// to mutate calls mutable_data(), which un-shares first. A tensor may also
// read bytes it does not own (BorrowedBytes: a weight in a mapped
// external-data file), which mutable_data() copies first.
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

// Read-only bytes held elsewhere, kept alive by the tensors that read them.
class BorrowedBytes {
 public:
  virtual ~BorrowedBytes() = default;
  virtual const uint8_t* data() const = 0;
  virtual size_t size() const = 0;
  // The reader is done with the bytes for now: a mapping drops their resident
  // pages (read again from the file if touched later), so a build that
  // streams its weights never holds them all in memory.
  virtual void release_resident() const {}
};

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor; the shape must be validated by the caller.
  Tensor(DType dtype, Shape shape);
  // Allocates after checking numel and byte size fit within max_bytes.
  static Expected<Tensor> allocate(DType dtype, Shape shape, int64_t max_bytes = INT64_MAX);
  // A tensor reading `bytes` in place; their size must be the shape's and
  // their address aligned for the dtype (caller checks).
  static Tensor borrowing(DType dtype, Shape shape, std::shared_ptr<const BorrowedBytes> bytes);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const { return numel_; }
  size_t byte_size() const { return borrowed_ ? borrowed_->size() : data_ ? data_->size() : 0; }
  bool empty_storage() const { return !data_ && !borrowed_; }
  bool is_borrowed() const { return borrowed_ != nullptr; }

  const uint8_t* data() const {
    return borrowed_ ? borrowed_->data() : data_ ? data_->data() : nullptr;
  }
  uint8_t* mutable_data();
  // Done reading for now (see BorrowedBytes::release_resident); no-op for
  // owned bytes.
  void release_resident() const {
    if (borrowed_) borrowed_->release_resident();
  }
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
  std::shared_ptr<const BorrowedBytes> borrowed_;  // set: data_ is null
};

}  // namespace graphc::ir
