#include "support/npy.h"

#include <cctype>
#include <cstring>
#include <fstream>
#include <optional>

#include "support/checked_math.h"

namespace graphc::npy {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

struct TypeCode {
  char kind;  // 'f', 'i', 'u', 'b'
  size_t size;
  int32_t dtype;
  const char* name;
};

// ONNX TensorProto numbering.
constexpr TypeCode kTypes[] = {
    {'f', 2, 10, "float16"}, {'f', 4, 1, "float32"}, {'f', 8, 11, "float64"}, {'i', 1, 3, "int8"},
    {'i', 2, 5, "int16"},    {'i', 4, 6, "int32"},   {'i', 8, 7, "int64"},    {'u', 1, 2, "uint8"},
    {'u', 2, 4, "uint16"},   {'u', 4, 12, "uint32"}, {'u', 8, 13, "uint64"},  {'b', 1, 9, "bool"},
};

const TypeCode* find_type(int32_t dtype) {
  for (const auto& t : kTypes)
    if (t.dtype == dtype) return &t;
  return nullptr;
}

// The header is a Python dict literal: {'descr': '<f4', 'fortran_order':
// False, 'shape': (2, 3), }. This parser accepts exactly that grammar.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : s_(text) {}

  Status parse(std::string& descr, bool& fortran, std::vector<int64_t>& shape, size_t max_rank) {
    bool have_descr = false, have_order = false, have_shape = false;
    skip_space();
    if (!eat('{')) return error("expected '{'");
    while (true) {
      skip_space();
      if (eat('}')) break;
      ASSIGN_OR_RETURN(std::string key, string_literal());
      skip_space();
      if (!eat(':')) return error("expected ':' after '" + key + "'");
      skip_space();
      if (key == "descr" && !have_descr) {
        ASSIGN_OR_RETURN(descr, string_literal());
        have_descr = true;
      } else if (key == "fortran_order" && !have_order) {
        if (take_word("True")) {
          fortran = true;
        } else if (take_word("False")) {
          fortran = false;
        } else {
          return error("fortran_order must be True or False");
        }
        have_order = true;
      } else if (key == "shape" && !have_shape) {
        RETURN_IF_ERROR(tuple(shape, max_rank));
        have_shape = true;
      } else {
        return error("unexpected or repeated key '" + key + "'");
      }
      skip_space();
      if (eat(',')) continue;
      skip_space();
      if (eat('}')) break;
      return error("expected ',' or '}'");
    }
    skip_space();
    if (pos_ != s_.size()) return error("text after the closing '}'");
    if (!have_descr || !have_order || !have_shape)
      return error("the header needs 'descr', 'fortran_order' and 'shape'");
    return Status::ok_status();
  }

 private:
  Status error(const std::string& what) const {
    return invalid_argument("malformed .npy header at byte {}: {}", pos_, what);
  }
  void skip_space() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool take_word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  Expected<std::string> string_literal() {
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"'))
      return error("expected a quoted string");
    const char quote = s_[pos_++];
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      if (s_[pos_] == '\\' || out.size() > 64) return error("unsupported string");
      out.push_back(s_[pos_++]);
    }
    if (!eat(quote)) return error("unterminated string");
    return out;
  }
  Status tuple(std::vector<int64_t>& dims, size_t max_rank) {
    if (!eat('(')) return error("shape must be a tuple");
    while (true) {
      skip_space();
      if (eat(')')) break;
      if (pos_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[pos_])))
        return error("shape dimensions must be non-negative integers");
      int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        auto next = checked_mul(v, 10);
        if (next) next = checked_add(*next, s_[pos_] - '0');
        if (!next) return error("a shape dimension overflows int64");
        v = *next;
        ++pos_;
      }
      if (s_.substr(pos_, 1) == "L") ++pos_;  // Python 2 longs
      if (dims.size() >= max_rank) return error(fmt::format("rank above {}", max_rank));
      dims.push_back(v);
      skip_space();
      if (eat(',')) continue;
      skip_space();
      if (eat(')')) break;
      return error("expected ',' or ')' in the shape");
    }
    // Python needs "(5,)" for a 1-tuple; "(5)" is just 5.
    return Status::ok_status();
  }

  std::string_view s_;
  size_t pos_ = 0;
};

Expected<const TypeCode*> parse_descr(const std::string& descr) {
  if (descr.size() < 3)
    return unsupported("unsupported .npy dtype '{}' (graphc reads f2/f4/f8, i1..i8, u1..u8, b1)",
                       descr);
  const char order = descr[0];
  const char kind = descr[1];
  const std::string size_text = descr.substr(2);
  size_t size = 0;
  for (char c : size_text) {
    if (!std::isdigit(static_cast<unsigned char>(c)) || size > 16)
      return unsupported("unsupported .npy dtype '{}'", descr);
    size = size * 10 + static_cast<size_t>(c - '0');
  }
  const TypeCode* found = nullptr;
  for (const auto& t : kTypes)
    if (t.kind == kind && t.size == size) found = &t;
  if (!found)
    return unsupported("unsupported .npy dtype '{}' (graphc reads f2/f4/f8, i1..i8, u1..u8, b1)",
                       descr);
  if (order == '>' && size > 1)
    return unsupported(
        "big-endian .npy data ('{}') is not supported; save it little-endian "
        "(array.astype('<{}{}'))",
        descr, kind, size);
  if (order != '<' && order != '|' && order != '=' && order != '>')
    return unsupported("unsupported .npy byte order in '{}'", descr);
  return found;
}

}  // namespace

std::string dtype_name(int32_t dtype) {
  if (const TypeCode* t = find_type(dtype)) return t->name;
  if (dtype == 16) return "bfloat16";
  return fmt::format("dtype {}", dtype);
}

size_t dtype_size(int32_t dtype) {
  const TypeCode* t = find_type(dtype);
  return t ? t->size : 0;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) s += ",";
  return s + ")";
}

Expected<Array> parse(std::string_view bytes, const Limits& limits) {
  if (bytes.size() < kMagicSize + 4 || std::memcmp(bytes.data(), kMagic, kMagicSize) != 0)
    return invalid_argument("not a .npy file (no \\x93NUMPY magic)");
  const auto major = static_cast<uint8_t>(bytes[6]);
  size_t header_len = 0, prefix = 0;
  auto byte_at = [&](size_t i) { return static_cast<size_t>(static_cast<uint8_t>(bytes[i])); };
  if (major == 1) {
    header_len = byte_at(8) | byte_at(9) << 8;
    prefix = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return invalid_argument("truncated .npy file: the header is cut off");
    header_len = byte_at(8) | byte_at(9) << 8 | byte_at(10) << 16 | byte_at(11) << 24;
    prefix = 12;
  } else {
    return unsupported(".npy format version {}.{} is not supported (1.0, 2.0, 3.0 are)", major,
                       static_cast<int>(static_cast<uint8_t>(bytes[7])));
  }
  if (header_len > limits.max_header_bytes)
    return out_of_range(".npy header of {} bytes is above the limit of {}", header_len,
                        limits.max_header_bytes);
  if (bytes.size() - prefix < header_len)
    return invalid_argument("truncated .npy file: the header needs {} bytes, {} remain", header_len,
                            bytes.size() - prefix);
  std::string descr;
  bool fortran = false;
  Array out;
  HeaderParser parser(bytes.substr(prefix, header_len));
  RETURN_IF_ERROR(parser.parse(descr, fortran, out.shape, limits.max_rank));
  ASSIGN_OR_RETURN(const TypeCode* type, parse_descr(descr));
  if (fortran)
    return unsupported(
        "Fortran-order .npy data is not supported; save a C-order array "
        "(numpy.ascontiguousarray)");
  out.dtype = type->dtype;
  auto numel = checked_numel(out.shape);
  auto data_bytes = numel ? checked_mul(*numel, static_cast<int64_t>(type->size)) : std::nullopt;
  if (!data_bytes || static_cast<uint64_t>(*data_bytes) > limits.max_data_bytes)
    return out_of_range(".npy array {} {} is above the limit of {} bytes", dtype_name(out.dtype),
                        shape_string(out.shape), limits.max_data_bytes);
  const size_t data_start = prefix + header_len;
  const size_t have = bytes.size() - data_start;
  const auto need = static_cast<size_t>(*data_bytes);
  if (have < need)
    return invalid_argument("truncated .npy file: {} {} needs {} data bytes, the file has {}",
                            dtype_name(out.dtype), shape_string(out.shape), need, have);
  if (have > need)
    return invalid_argument(".npy file has {} bytes after the {} {} data", have - need,
                            dtype_name(out.dtype), shape_string(out.shape));
  out.data.assign(bytes.substr(data_start, need));
  if (out.dtype == 9)  // bool: numpy writes 0/1; any other byte is not a bool
    for (char c : out.data)
      if (c != 0 && c != 1) return invalid_argument(".npy bool data holds a byte other than 0/1");
  return out;
}

Expected<Array> read_file(const std::string& path, const Limits& limits) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return not_found("cannot open '{}': {}", path, std::strerror(errno));
  const std::streamoff size = in.tellg();
  if (size < 0) return io_error("cannot read '{}'", path);
  const uint64_t max_file = limits.max_data_bytes + limits.max_header_bytes + 16;
  if (static_cast<uint64_t>(size) > max_file)
    return out_of_range("'{}' has {} bytes, above the .npy limit of {}", path, size, max_file);
  std::string bytes(static_cast<size_t>(size), '\0');
  in.seekg(0);
  if (!in.read(bytes.data(), size)) return io_error("cannot read '{}'", path);
  auto parsed = parse(bytes, limits);
  if (!parsed.ok()) return parsed.status().with_context(path);
  return parsed;
}

Expected<std::string> serialize(int32_t dtype, const std::vector<int64_t>& shape,
                                std::string_view data) {
  const TypeCode* type = find_type(dtype);
  if (!type) return unsupported("{} has no .npy dtype", dtype_name(dtype));
  auto numel = checked_numel(shape);
  auto bytes = numel ? checked_mul(*numel, static_cast<int64_t>(type->size)) : std::nullopt;
  if (!bytes || static_cast<size_t>(*bytes) != data.size())
    return invalid_argument("{} {} needs {} bytes, got {}", dtype_name(dtype), shape_string(shape),
                            bytes ? *bytes : -1, data.size());
  std::string descr =
      std::string(type->size == 1 ? "|" : "<") + type->kind + std::to_string(type->size);
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape_string(shape) + ", }";
  // Pad with spaces and end with '\n' so magic + length + header is a
  // multiple of 64 (numpy's alignment).
  const size_t unpadded = kMagicSize + 4 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  if (header.size() > 0xffff) return out_of_range(".npy header too long for version 1.0");
  std::string out(kMagic, kMagicSize);
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  out += header;
  out.append(data);
  return out;
}

}  // namespace graphc::npy
