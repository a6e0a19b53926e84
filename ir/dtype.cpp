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
constexpr std::array<DTypeInfo, 13> kDTypes{{
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
  return t == DType::kInt8 || t == DType::kInt16 || t == DType::kInt32 || t == DType::kInt64;
}
bool is_unsigned_integer(DType t) {
  return t == DType::kUInt8 || t == DType::kUInt16 || t == DType::kUInt32 || t == DType::kUInt64;
}
bool is_integer(DType t) { return is_signed_integer(t) || is_unsigned_integer(t); }

}  // namespace graphc::ir
