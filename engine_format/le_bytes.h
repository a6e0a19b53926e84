// Fixed-width little-endian fields for the library-call descriptors
// (matmul_params, conv_params): the bytes do not depend on the host.
#pragma once

#include <bit>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

namespace graphc::engine {

class LeWriter {
 public:
  template <typename T>
  void put(T v) {
    unsigned char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    if constexpr (std::endian::native == std::endian::big)
      for (size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
    out.append(reinterpret_cast<const char*>(b), sizeof(T));
  }
  std::string out;
};

// The caller checks the size first: get() does not.
class LeReader {
 public:
  explicit LeReader(std::string_view in) : in_(in) {}
  template <typename T>
  T get() {
    unsigned char b[sizeof(T)];
    std::memcpy(b, in_.data() + pos_, sizeof(T));
    if constexpr (std::endian::native == std::endian::big)
      for (size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
    pos_ += sizeof(T);
    T v;
    std::memcpy(&v, b, sizeof(T));
    return v;
  }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

}  // namespace graphc::engine
