#include "ir/dtype.h"

#include <array>
#include <utility>

namespace graphc::ir {

namespace {
struct DTypeInfo {
  DType type;
  size_t size;
  std::string_view name;
};
constexpr std::array<DTypeInfo, 22> kDTypes{{
    {DType::kFloat32, 4, "float32"},
    {DType::kUInt8, 1, "uint8"},
    {DType::kInt8, 1, "int8"},
    {DType::kUInt16, 2, "uint16"},
    {DType::kInt16, 2, "int16"},
    {DType::kInt32, 4, "int32"},
    {DType::kInt64, 8, "int64"},
    {DType::kBool, 1, "bool"},
    {DType::kFloat16, 2, "float16"},
    {DType::kFloat64, 8, "float64"},
    {DType::kUInt32, 4, "uint32"},
    {DType::kUInt64, 8, "uint64"},
    {DType::kBFloat16, 2, "bfloat16"},
    {DType::kFloat8E4M3FN, 1, "float8e4m3fn"},
    {DType::kFloat8E4M3FNUZ, 1, "float8e4m3fnuz"},
    {DType::kFloat8E5M2, 1, "float8e5m2"},
    {DType::kFloat8E5M2FNUZ, 1, "float8e5m2fnuz"},
    {DType::kUInt4, 1, "uint4"},
    {DType::kInt4, 1, "int4"},
    {DType::kFloat4E2M1, 1, "float4e2m1"},
    {DType::kUInt2, 1, "uint2"},
    {DType::kInt2, 1, "int2"},
}};

const DTypeInfo* find(DType t) {
  for (const auto& info : kDTypes)
    if (info.type == t) return &info;
  return nullptr;
}
}  // namespace

size_t dtype_size(DType t) {
  const auto* info = find(t);
  return info ? info->size : 0;
}

std::string_view dtype_name(DType t) {
  const auto* info = find(t);
  return info ? info->name : std::string_view("undefined");
}

std::optional<DType> dtype_from_onnx(int32_t onnx_type) {
  const auto* info = find(static_cast<DType>(onnx_type));
  if (!info) return std::nullopt;
  return info->type;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& info : kDTypes)
    if (info.name == name) return info.type;
  return std::nullopt;
}

bool is_float(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16 ||
         t == DType::kFloat64;
}
bool is_signed_integer(DType t) {
  return t == DType::kInt8 || t == DType::kInt16 || t == DType::kInt32 || t == DType::kInt64 ||
         t == DType::kInt4 || t == DType::kInt2;
}
bool is_unsigned_integer(DType t) {
  return t == DType::kUInt8 || t == DType::kUInt16 || t == DType::kUInt32 || t == DType::kUInt64 ||
         t == DType::kUInt4 || t == DType::kUInt2;
}
bool is_narrow_float(DType t) {
  return t == DType::kFloat8E4M3FN || t == DType::kFloat8E4M3FNUZ || t == DType::kFloat8E5M2 ||
         t == DType::kFloat8E5M2FNUZ || t == DType::kFloat4E2M1;
}
std::optional<MiniFloat> minifloat_of(DType t) {
  switch (t) {
    case DType::kFloat8E4M3FN: return MiniFloat::kE4M3FN;
    case DType::kFloat8E4M3FNUZ: return MiniFloat::kE4M3FNUZ;
    case DType::kFloat8E5M2: return MiniFloat::kE5M2;
    case DType::kFloat8E5M2FNUZ: return MiniFloat::kE5M2FNUZ;
    case DType::kFloat4E2M1: return MiniFloat::kE2M1;
    default: return std::nullopt;
  }
}
uint8_t wrap_sub_byte(DType t, int64_t v) {
  const int bits = sub_byte_bits(t);
  const auto mask = static_cast<uint64_t>((1u << bits) - 1);
  uint64_t low = static_cast<uint64_t>(v) & mask;
  if (is_signed_integer(t) && (low >> (bits - 1)) != 0) low |= ~mask;  // sign-extend
  return static_cast<uint8_t>(low);
}
bool is_sub_byte_integer(DType t) { return sub_byte_bits(t) != 0; }
int sub_byte_bits(DType t) {
  if (t == DType::kInt4 || t == DType::kUInt4) return 4;
  if (t == DType::kInt2 || t == DType::kUInt2) return 2;
  return 0;
}
bool is_integer(DType t) { return is_signed_integer(t) || is_unsigned_integer(t); }

}  // namespace graphc::ir
