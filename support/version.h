// graphc's version: `graphc --version` and the producer field of engine files.
#pragma once

namespace graphc {
inline constexpr const char* kVersion = "0.1.0";
}  // namespace graphc
