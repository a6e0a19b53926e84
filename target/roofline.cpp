#include "target/roofline.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace graphc::target {

namespace {

// The one table of peaks. Dense figures: NVIDIA's datasheets quote tensor-core
// rates "with sparsity", which are twice these.
//
// H100 SXM5 — "NVIDIA H100 Tensor Core GPU" datasheet: FP64 34, FP32 67,
//   TF32 989 / BF16 1,979 / FP16 1,979 / INT8 3,958 (sparse) → 494.7 / 989.4 /
//   989.4 / 1,978.9 dense; HBM3 3.35 TB/s. Non-tensor FP16/BF16 133.8 TFLOPS:
//   NVIDIA H100 architecture whitepaper, table "H100 SXM5".
// H200 SXM — "NVIDIA H200 Tensor Core GPU" datasheet: the same GH100 compute
//   as H100 SXM (FP64 34, FP32 67, TF32 989, BF16/FP16 1,979, INT8 3,958
//   sparse); HBM3e 4.8 TB/s.
// A100 SXM 80GB — "NVIDIA A100 Tensor Core GPU" datasheet: FP64 9.7, FP32
//   19.5, TF32 156, BF16/FP16 312, INT8 624 TOPS (dense); HBM2e 2,039 GB/s.
//   Non-tensor FP16 78, BF16 39 TFLOPS: NVIDIA A100 whitepaper, table 1.
// L4 — "NVIDIA L4 Tensor Core GPU" datasheet: FP32 30.3, TF32 120, FP16/BF16
//   242, INT8 485 TOPS (sparse) → 60 / 121 / 242.5 dense; GDDR6 300 GB/s.
//   Ada runs non-tensor FP16/BF16 at the FP32 rate and FP64 at 1/64 of it
//   (Ada architecture whitepaper).
// FP8 tensor cores (dense): the INT8 figure on H100/H200 (1,979) and L4
//   (242.5; 485 sparse) in the same datasheets; A100 has none.
// int8 on CUDA cores (DP4A: 4 multiply-adds per INT32 lane and issue) is
// derived, not a datasheet figure: 4 x the INT32 rate (H100 33.5, A100 19.5,
//   L4 15.2 TOPS: half the FP32 rate on Ada's INT32-capable half of the lanes).
constexpr GpuPeaks kH100{3350, 34, 67, 133.8, 133.8, 134, 494.7, 989.4, 989.4, 1978.9, 1978.9};
constexpr GpuPeaks kH200{4800, 34, 67, 133.8, 133.8, 134, 494.7, 989.4, 989.4, 1978.9, 1978.9};
constexpr GpuPeaks kA100{2039, 9.7, 19.5, 78, 39, 78, 156, 312, 312, 624, 0};
constexpr GpuPeaks kL4{300, 0.47, 30.3, 30.3, 30.3, 60.6, 60, 121, 121, 242.5, 242.5};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

Expected<Gpu> parse_gpu(std::string_view name) {
  const std::string n = lower(name);
  for (Gpu gpu : kAllGpus) {
    const std::string_view short_name = gpu_name(gpu);
    if (n == short_name || n == std::string(short_name) + "-sxm" ||
        n == std::string(short_name) + "-sxm5")
      return gpu;
  }
  return invalid_argument("--gpu '{}': expected h100, h200, a100 or l4", name);
}

std::string_view gpu_name(Gpu gpu) {
  switch (gpu) {
    case Gpu::kH100: return "h100";
    case Gpu::kH200: return "h200";
    case Gpu::kA100: return "a100";
    case Gpu::kL4: return "l4";
  }
  return "?";
}

std::string_view gpu_long_name(Gpu gpu) {
  switch (gpu) {
    case Gpu::kH100: return "NVIDIA H100 SXM";
    case Gpu::kH200: return "NVIDIA H200 SXM";
    case Gpu::kA100: return "NVIDIA A100 SXM 80GB";
    case Gpu::kL4: return "NVIDIA L4";
  }
  return "?";
}

Gpu gpu_for_sm(int sm) {
  if (sm == 80) return Gpu::kA100;
  if (sm == 89) return Gpu::kL4;
  return Gpu::kH100;
}

std::optional<Gpu> gpu_from_device_name(std::string_view device) {
  const std::string d = lower(device);
  if (d.find("h200") != std::string::npos) return Gpu::kH200;
  if (d.find("h100") != std::string::npos) return Gpu::kH100;
  if (d.find("a100") != std::string::npos) return Gpu::kA100;
  // "NVIDIA L4" but not "L40"/"L40S" (other chips).
  const size_t at = d.find(" l4");
  if (at != std::string::npos && (at + 3 == d.size() || !std::isdigit(static_cast<unsigned char>(
                                                             d[at + 3]))))
    return Gpu::kL4;
  return std::nullopt;
}

std::string_view math_name(Math math) {
  switch (math) {
    case Math::kNone: return "";
    case Math::kFp64: return "fp64";
    case Math::kFp32: return "fp32";
    case Math::kFp16: return "fp16";
    case Math::kBf16: return "bf16";
    case Math::kInt8: return "int8";
    case Math::kTf32Tc: return "tf32-tc";
    case Math::kFp16Tc: return "fp16-tc";
    case Math::kBf16Tc: return "bf16-tc";
    case Math::kInt8Tc: return "int8-tc";
    case Math::kFp8Tc: return "fp8-tc";
  }
  return "";
}

Math math_from_name(std::string_view name) {
  for (Math m : {Math::kFp64, Math::kFp32, Math::kFp16, Math::kBf16, Math::kInt8, Math::kTf32Tc,
                 Math::kFp16Tc, Math::kBf16Tc, Math::kInt8Tc, Math::kFp8Tc})
    if (math_name(m) == name) return m;
  return Math::kNone;
}

const GpuPeaks& gpu_peaks(Gpu gpu) {
  switch (gpu) {
    case Gpu::kH100: return kH100;
    case Gpu::kH200: return kH200;
    case Gpu::kA100: return kA100;
    case Gpu::kL4: return kL4;
  }
  return kH100;
}

double peak_tflops(Gpu gpu, Math math) {
  const GpuPeaks& p = gpu_peaks(gpu);
  switch (math) {
    case Math::kNone: return 0;
    case Math::kFp64: return p.fp64;
    case Math::kFp32: return p.fp32;
    case Math::kFp16: return p.fp16;
    case Math::kBf16: return p.bf16;
    case Math::kInt8: return p.int8;
    case Math::kTf32Tc: return p.tf32_tc;
    case Math::kFp16Tc: return p.fp16_tc;
    case Math::kBf16Tc: return p.bf16_tc;
    case Math::kInt8Tc: return p.int8_tc;
    case Math::kFp8Tc: return p.fp8_tc;
  }
  return 0;
}

Roofline roofline(Gpu gpu, Math math, int64_t flops, int64_t hbm_bytes) {
  Roofline r;
  const double peak = peak_tflops(gpu, math);
  // TFLOP/s = 1e6 FLOP/µs; GB/s = 1e3 bytes/µs.
  if (peak > 0 && flops > 0) r.compute_us = static_cast<double>(flops) / (peak * 1e6);
  if (hbm_bytes > 0) r.memory_us = static_cast<double>(hbm_bytes) / (gpu_peaks(gpu).hbm_gb_per_s * 1e3);
  return r;
}

}  // namespace graphc::target
