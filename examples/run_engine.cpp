// run_engine_cpp ENGINE: the C++ API (graphc/graphc_runtime.hpp) in one page.
// Loads an engine, lists its bindings, fills every input with a small
// deterministic pattern, runs it once and prints the first values of every
// float32 output. Exit status 0 on success, 1 on any error (graphc::Error's
// message on stderr).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <graphc/graphc_runtime.hpp>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s ENGINE\n", argv[0]);
    return 2;
  }
  try {
    std::printf("graphc runtime %s\n", graphc::runtime_version().c_str());
    graphc::Engine engine(argv[1]);
    const std::vector<graphc::Binding> bindings = engine.bindings();
    std::vector<std::vector<unsigned char>> buffers;
    std::vector<std::pair<const void*, uint64_t>> inputs;
    std::vector<std::pair<void*, uint64_t>> outputs;
    for (const graphc::Binding& b : bindings) {
      std::printf("%s %-20s %-8s [", b.is_input ? "input " : "output", b.name.c_str(),
                  graphc_dtype_name(b.dtype));
      for (size_t d = 0; d < b.shape.size(); ++d)
        std::printf(d ? ", %lld" : "%lld", static_cast<long long>(b.shape[d]));
      std::printf("]\n");
      buffers.emplace_back(b.bytes);
    }
    for (size_t i = 0; i < bindings.size(); ++i) {
      std::vector<unsigned char>& buf = buffers[i];
      if (!bindings[i].is_input) {
        outputs.emplace_back(buf.data(), buf.size());
        continue;
      }
      if (bindings[i].dtype == GRAPHC_DTYPE_FLOAT32)
        for (size_t k = 0; k + 4 <= buf.size(); k += 4) {
          const float v = std::sin(0.1f * static_cast<float>(k / 4));
          std::memcpy(buf.data() + k, &v, 4);
        }
      inputs.emplace_back(buf.data(), buf.size());
    }
    graphc::Context context = engine.create_context();
    context.run_host(inputs, outputs);
    for (size_t i = 0; i < bindings.size(); ++i) {
      if (bindings[i].is_input || bindings[i].dtype != GRAPHC_DTYPE_FLOAT32) continue;
      const size_t count = buffers[i].size() / 4;
      std::printf("%s:", bindings[i].name.c_str());
      for (size_t k = 0; k < count && k < 8; ++k) {
        float v;
        std::memcpy(&v, buffers[i].data() + 4 * k, 4);
        std::printf(" %g", v);
      }
      std::printf(count > 8 ? " ...\n" : "\n");
    }
  } catch (const graphc::Error& e) {
    std::fprintf(stderr, "run_engine_cpp: %s\n", e.what());
    return 1;
  }
  return 0;
}
