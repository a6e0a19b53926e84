#include "emit/cuda/codegen_util.h"

#include <fmt/format.h>

#include "emit/cuda/cuda_ops.h"

namespace graphc::emit {

using ir::DType;

std::string sanitize(const std::string& s, size_t max_len) {
  std::string r;
  for (char ch : s) {
    if (r.size() >= max_len) break;
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
    r += ok ? ch : '_';
  }
  return r;
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

std::string kernel_entry_name(const std::string& family, const std::string& source) {
  const size_t eol = source.find('\n');
  const std::string code = eol == std::string::npos ? source : source.substr(eol + 1);
  return fmt::format("{}_{:016x}", family, fnv1a(code));
}

std::string constant_array(const std::string& name, const ir::Tensor& t) {
  std::string type, items;
  const auto n = static_cast<size_t>(t.numel());
  const size_t sz = ir::dtype_size(t.dtype());
  type = sz == 1   ? "unsigned char"
         : sz == 2 ? "unsigned short"
         : sz == 4 ? "unsigned int"
                   : "unsigned long long";
  for (size_t i = 0; i < n; ++i) {
    uint64_t bits = 0;
    for (size_t b = 0; b < sz; ++b)
      bits |= uint64_t{t.data()[i * sz + b]} << (8 * b);  // little endian
    items += fmt::format("{}0x{:x}ull", i ? ", " : "", bits);
  }
  // An empty tensor still needs a valid declaration (C++ has no zero-size arrays).
  if (n == 0) return fmt::format("__device__ const {} {}[1] = {{0}};\n", type, name);
  return fmt::format("__device__ const {} {}[{}] = {{{}}};\n", type, name, n, items);
}

std::string constant_load(const std::string& name, DType t, const std::string& idx) {
  std::string e = name + "[" + idx + "]";
  switch (t) {
    case DType::kFloat32: return "__uint_as_float(" + e + ")";
    case DType::kFloat64: return "__longlong_as_double((long long)" + e + ")";
    case DType::kFloat16: return "__half2float(__ushort_as_half(" + e + "))";
    case DType::kBFloat16: return "__bfloat162float(__ushort_as_bfloat16(" + e + "))";
    case DType::kBool: return "(" + e + " != 0)";
    default: return "((" + cuda::compute_type(t) + ")" + e + ")";
  }
}

std::string scalar_literal(const ir::Tensor& t) {
  if (ir::is_narrow_float(t.dtype()))  // the stored code itself (NaN payloads and signs kept)
    return fmt::format("((unsigned char)0x{:x})", t.data()[0]);
  if (ir::is_unsigned_integer(t.dtype())) return cuda::uint_literal(t.dtype(), t.get_u64(0));
  if (ir::is_integer(t.dtype()) || t.dtype() == DType::kBool)
    return cuda::int_literal(t.dtype(), t.get_i64(0));
  return cuda::literal(t.dtype(), t.get_f64(0));
}

}  // namespace graphc::emit
