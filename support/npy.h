// NumPy .npy files (format versions 1.0, 2.0 and 3.0): little-endian, C order,
// the fixed-size numeric dtypes f2/f4/f8, i1..i8, u1..u8 and b1. Files are
// untrusted input: the header is parsed with limits and every field checked;
// Fortran order, big-endian data and other dtypes are refused with a message
// saying so. Element types use the ONNX TensorProto numbering (= ir::DType and
// the engine manifest) so support/ needs no other module.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "support/status.h"

namespace graphc::npy {

struct Limits {
  size_t max_header_bytes = 64 * 1024;  // numpy itself writes a few hundred
  size_t max_rank = 32;
  uint64_t max_data_bytes = 16ull << 30;
};

struct Array {
  int32_t dtype = 0;  // ONNX numbering: 1 float32, 7 int64, 9 bool, 10 float16 ...
  std::vector<int64_t> shape;
  std::string data;  // numel * element size bytes, little-endian, C order
};

// "float32", "int64", ... for the dtypes .npy carries; "dtype N" otherwise.
std::string dtype_name(int32_t dtype);
// Bytes per element of a dtype .npy can carry; 0 for others (bfloat16 has no
// .npy type).
size_t dtype_size(int32_t dtype);
// "(2, 3)" as numpy prints shapes; "()" for a scalar.
std::string shape_string(const std::vector<int64_t>& shape);

Expected<Array> parse(std::string_view bytes, const Limits& limits = {});
Expected<Array> read_file(const std::string& path, const Limits& limits = {});

// The .npy bytes (version 1.0, header padded to 64 bytes as numpy writes it).
// `data` must hold exactly numel * element size bytes.
Expected<std::string> serialize(int32_t dtype, const std::vector<int64_t>& shape,
                                std::string_view data);

}  // namespace graphc::npy
