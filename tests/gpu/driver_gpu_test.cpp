// The lazily loaded CUDA driver on a real GPU: device query, memory round trip.
#include <catch2/catch.hpp>
#include <vector>

#include "runtime/cuda_driver.h"

using namespace graphc::runtime;

TEST_CASE("the driver loads and reports a device with its SM version", "[gpu]") {
  // cuDeviceGet/cuDeviceGetAttribute through the dlopen'd driver.
  auto api = load_driver();
  REQUIRE(api.ok());
  CUdevice dev;
  REQUIRE((*api)->cuDeviceGet(&dev, 0) == CUDA_SUCCESS);
  int major = 0, minor = 0;
  REQUIRE((*api)->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) ==
          CUDA_SUCCESS);
  REQUIRE((*api)->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) ==
          CUDA_SUCCESS);
  CHECK(major >= 7);
  char name[256] = {};
  REQUIRE((*api)->cuDeviceGetName(name, sizeof name, dev) == CUDA_SUCCESS);
  std::printf("device 0: %s, sm_%d%d\n", name, major, minor);
}

TEST_CASE("device memory round-trips bytes", "[gpu]") {
  // Random bytes host -> device -> host through a retained primary context.
  auto api_or = load_driver();
  REQUIRE(api_or.ok());
  const DriverApi& api = **api_or;
  CUdevice dev;
  CUcontext ctx;
  REQUIRE(api.cuDeviceGet(&dev, 0) == CUDA_SUCCESS);
  REQUIRE(api.cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS);
  REQUIRE(api.cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
  std::vector<unsigned char> host(4096), back(4096);
  for (size_t i = 0; i < host.size(); ++i)
    host[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
  CUdeviceptr d = 0;
  REQUIRE(api.cuMemAlloc(&d, host.size()) == CUDA_SUCCESS);
  REQUIRE(api.cuMemcpyHtoD(d, host.data(), host.size()) == CUDA_SUCCESS);
  REQUIRE(api.cuMemcpyDtoH(back.data(), d, back.size()) == CUDA_SUCCESS);
  CHECK(back == host);
  CHECK(api.cuMemFree(d) == CUDA_SUCCESS);
  CHECK(check_cuda(api, CUDA_ERROR_INVALID_VALUE, "probe")
            .message()
            .find("CUDA_ERROR_INVALID_VALUE") != std::string::npos);
  api.cuDevicePrimaryCtxRelease(dev);
}
