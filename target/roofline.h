// The roofline of a kernel on a given GPU: the least time its modelled
// arithmetic and HBM traffic can take at the chip's datasheet peaks,
// max(flops / peak FLOP/s of its math, bytes / HBM bandwidth). One table of
// peaks (roofline.cpp, each number with its datasheet); `graphc inspect --gpu`
// shows it per kernel and `graphc run --profile` measures against it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "support/status.h"

namespace graphc::target {

enum class Gpu : uint8_t { kH100, kH200, kA100, kL4 };
inline constexpr Gpu kAllGpus[] = {Gpu::kH100, Gpu::kH200, Gpu::kA100, Gpu::kL4};

// "h100", "h200", "a100", "l4" (case-insensitive; "h100-sxm" etc. too).
Expected<Gpu> parse_gpu(std::string_view name);
std::string_view gpu_name(Gpu gpu);       // "h100"
std::string_view gpu_long_name(Gpu gpu);  // "NVIDIA H100 SXM"
// The usual GPU of an architecture: sm_90 H100, sm_80 A100, sm_89 L4, else H100.
Gpu gpu_for_sm(int sm);
// From a CUDA device name ("NVIDIA H100 80GB HBM3"); nullopt if none matches.
std::optional<Gpu> gpu_from_device_name(std::string_view device);

// What a kernel's arithmetic runs on. kNone: its arithmetic is not modelled
// (elementwise, reductions, data movement: memory-bound on every listed GPU),
// its roofline is its HBM traffic alone.
enum class Math : uint8_t {
  kNone,
  kFp64,      // CUDA cores
  kFp32,      // CUDA cores (FFMA)
  kFp16,      // CUDA cores (HFMA2)
  kBf16,      // CUDA cores
  kInt8,      // CUDA cores (DP4A)
  kTf32Tc,    // tensor cores
  kFp16Tc,
  kBf16Tc,
  kInt8Tc,
  kFp8Tc,  // float8 e4m3/e5m2 (sm_89+)
};
// "", "fp64", "fp32", "fp16", "bf16", "int8", "tf32-tc", "fp16-tc", "bf16-tc",
// "int8-tc", "fp8-tc": the engine manifest records these words.
std::string_view math_name(Math math);
// The inverse of math_name; unknown words (a newer engine) read as kNone.
Math math_from_name(std::string_view name);

struct GpuPeaks {
  double hbm_gb_per_s = 0;  // 1 GB = 1e9 bytes
  // Dense (no structured sparsity) peaks in TFLOP/s (TOP/s for int8), at boost clock.
  double fp64 = 0, fp32 = 0, fp16 = 0, bf16 = 0, int8 = 0;
  double tf32_tc = 0, fp16_tc = 0, bf16_tc = 0, int8_tc = 0, fp8_tc = 0;
};
const GpuPeaks& gpu_peaks(Gpu gpu);
// Peak FLOP/s of `math` on `gpu`, in TFLOP/s; 0 for kNone.
double peak_tflops(Gpu gpu, Math math);

struct Roofline {
  double compute_us = 0;  // flops at the math's peak
  double memory_us = 0;   // bytes at the HBM bandwidth
  double us() const { return compute_us > memory_us ? compute_us : memory_us; }
  // "compute" or "memory": which limit the roofline is
  std::string_view bound() const { return compute_us > memory_us ? "compute" : "memory"; }
};
Roofline roofline(Gpu gpu, Math math, int64_t flops, int64_t hbm_bytes);

}  // namespace graphc::target
