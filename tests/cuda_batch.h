// Test helper: many generated kernel sources as one translation unit, so a
// test compiling hundreds of kernels pays one NVRTC run per architecture.
// #include lines are hoisted to the top and each kernel's body goes into its
// own namespace (their helpers and constants never clash; the extern "C"
// entry names are unique by content hash already).
#pragma once

#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

namespace graphc::testing {

inline std::string combined_kernel_source(const std::vector<std::string>& sources) {
  std::set<std::string> includes;
  std::string bodies;
  for (size_t i = 0; i < sources.size(); ++i) {
    std::string body;
    size_t pos = 0;
    const std::string& src = sources[i];
    while (pos < src.size()) {
      size_t end = src.find('\n', pos);
      if (end == std::string::npos) end = src.size();
      std::string line = src.substr(pos, end - pos);
      if (line.rfind("#include", 0) == 0)
        includes.insert(line);
      else
        body += line + "\n";
      pos = end + 1;
    }
    bodies += fmt::format("namespace graphc_k{} {{\n{}}}  // namespace graphc_k{}\n", i, body, i);
  }
  std::string out;
  for (const auto& inc : includes) out += inc + "\n";
  return out + bodies;
}

}  // namespace graphc::testing
