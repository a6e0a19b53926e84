// The GPU test suite (tests/gpu/*_gpu_test.cpp). Without a CUDA driver and
// device it prints why and exits 77, which ctest reports as "Skipped" (CI has
// no GPU); on the GPU machine every test runs.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <string_view>

#include "runtime/cuda_driver.h"

int main(int argc, char* argv[]) {
  // Listing the tests needs no GPU (scripts/gpu_sanitize.sh lists them to split jobs).
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]).rfind("--list", 0) == 0) return Catch::Session().run(argc, argv);
  auto driver = graphc::runtime::load_driver();
  if (!driver.ok()) {
    std::printf("SKIPPED: GPU tests need a CUDA device: %s\n", driver.status().message().c_str());
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
