// The GPU test suite (tests/gpu/*_gpu_test.cpp). Without a CUDA driver and
// device it prints why and exits 77, which ctest reports as "Skipped" (CI has
// no GPU); on the GPU machine every test runs.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>

#include "runtime/cuda_driver.h"

int main(int argc, char* argv[]) {
  auto driver = graphc::runtime::load_driver();
  if (!driver.ok()) {
    std::printf("SKIPPED: GPU tests need a CUDA device: %s\n", driver.status().message().c_str());
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
