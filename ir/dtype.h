// Element types graphc understands. Values match ONNX TensorProto.DataType
// so the importer can convert with a range check.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "support/minifloat.h"

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
  // Narrow types (ONNX 1.14+), one byte per element in graphc's tensors and
  // on the device: 4- and 2-bit values unpacked (ONNX files pack them, the
  // importer unpacks), float8/float4 as their bit patterns.
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUInt4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kUInt2 = 25,
  kInt2 = 26,
};

size_t dtype_size(DType t);              // bytes per element; 0 for undefined
std::string_view dtype_name(DType t);    // "float32", "int64", ...
std::optional<DType> dtype_from_onnx(int32_t onnx_type);  // nullopt: unsupported (string, complex, fp8...)
std::optional<DType> dtype_from_name(std::string_view name);
bool is_float(DType t);     // float16/bfloat16/float32/float64
bool is_narrow_float(DType t);  // float8 (4 kinds) and float4e2m1: stored bits, no arithmetic
bool is_sub_byte_integer(DType t);  // int4/uint4/int2/uint2 (stored one per byte)
int sub_byte_bits(DType t);         // 4 or 2 for those, else 0
std::optional<MiniFloat> minifloat_of(DType t);  // the format of a narrow float type
// v wrapped into a sub-byte integer type (two's complement for int4/int2), as
// the byte graphc stores (sign-extended for the signed types).
uint8_t wrap_sub_byte(DType t, int64_t v);
bool is_integer(DType t);   // signed or unsigned integers (not bool)
bool is_signed_integer(DType t);
bool is_unsigned_integer(DType t);

}  // namespace graphc::ir
