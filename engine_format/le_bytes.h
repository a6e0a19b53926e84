// Little-endian fixed-width encoding of plain values, for the descriptors and
// files graphc writes byte by byte (library-call descriptors, the timing
// cache), so their layout does not depend on the compiler or the host.
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
  // A u32 length, then the bytes.
  void put_bytes(std::string_view bytes) {
    put(static_cast<uint32_t>(bytes.size()));
    out.append(bytes);
  }
  std::string out;
};

// Reads past the end yield zeros and set failed(): callers check sizes first
// or check failed() once at the end.
class LeReader {
 public:
  explicit LeReader(std::string_view in) : in_(in) {}
  template <typename T>
  T get() {
    T v{};
    if (in_.size() - pos_ < sizeof(T)) {
      failed_ = true;
      pos_ = in_.size();
      return v;
    }
    unsigned char b[sizeof(T)];
    std::memcpy(b, in_.data() + pos_, sizeof(T));
    if constexpr (std::endian::native == std::endian::big)
      for (size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
    pos_ += sizeof(T);
    std::memcpy(&v, b, sizeof(T));
    return v;
  }
  // A u32 length (at most `max_bytes`), then the bytes.
  std::string_view get_bytes(size_t max_bytes) {
    const uint32_t n = get<uint32_t>();
    if (failed_ || n > max_bytes || in_.size() - pos_ < n) {
      failed_ = true;
      pos_ = in_.size();
      return {};
    }
    std::string_view out = in_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  bool failed() const { return failed_; }
  size_t remaining() const { return in_.size() - pos_; }

 private:
  std::string_view in_;
  size_t pos_ = 0;
  bool failed_ = false;
};

}  // namespace graphc::engine
