// Element types graphc understands. Values match ONNX TensorProto.DataType
// so the importer can convert with a range check.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace graphc::ir {

enum class DType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
};

size_t dtype_size(DType t);              // bytes per element; 0 for undefined
std::string_view dtype_name(DType t);    // "float32", "int64", ...
std::optional<DType> dtype_from_onnx(int32_t onnx_type);  // nullopt: unsupported (string, complex, fp8...)
std::optional<DType> dtype_from_name(std::string_view name);
bool is_float(DType t);     // float16/bfloat16/float32/float64
bool is_integer(DType t);   // signed or unsigned integers (not bool)
bool is_signed_integer(DType t);
bool is_unsigned_integer(DType t);

}  // namespace graphc::ir
