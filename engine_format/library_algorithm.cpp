#include "engine_format/library_algorithm.h"

#include <fmt/format.h>

#include <cmath>
#include <iterator>

#include "engine_format/le_bytes.h"

namespace graphc::engine {

namespace {

#include "engine_format/cublaslt_names.inc"

// Version 1, little-endian: u32 version, i32 algo_id, u32 tile_id,
// i32 splitk_num, u32 reduction_scheme, u32 cta_swizzling, u32 custom_option,
// u32 stages_id, u16 inner_shape_id, u16 cluster_shape_id, u64 workspace_bytes,
// u32 library_version, u32 compute_capability.
constexpr size_t kEncodedBytes = 4 * 8 + 2 * 2 + 8 + 4 * 2;

// cuBLASLt's documented limits (cublasLt.h): split-K up to the k extent,
// reduction scheme a bit in CUBLASLT_REDUCTION_SCHEME_MASK, swizzling 0 or 1.
constexpr int32_t kMaxSplitK = 1 << 16;
constexpr uint32_t kReductionMask = 0x7;
constexpr uint64_t kMaxWorkspace = 1ull << 30;

template <size_t N>
std::string enum_name(const std::string_view (&names)[N], uint32_t v) {
  if (v < N && !names[v].empty()) return std::string(names[v]);
  return fmt::format("#{}", v);
}

std::string reduction_name(uint32_t r) {
  switch (r) {
    case 0: return "none";
    case 1: return "inplace";
    case 2: return "compute-type";
    case 4: return "output-type";
    default: return fmt::format("#{}", r);
  }
}

}  // namespace

std::string encode_cublaslt_algorithm(const CublasLtAlgorithm& a) {
  LeWriter w;
  w.put<uint32_t>(CublasLtAlgorithm::kVersion);
  w.put<int32_t>(a.algo_id);
  w.put<uint32_t>(a.tile_id);
  w.put<int32_t>(a.splitk_num);
  w.put<uint32_t>(a.reduction_scheme);
  w.put<uint32_t>(a.cta_swizzling);
  w.put<uint32_t>(a.custom_option);
  w.put<uint32_t>(a.stages_id);
  w.put<uint16_t>(a.inner_shape_id);
  w.put<uint16_t>(a.cluster_shape_id);
  w.put<uint64_t>(a.workspace_bytes);
  w.put<uint32_t>(a.library_version);
  w.put<uint32_t>(a.compute_capability);
  return std::move(w.out);
}

Expected<CublasLtAlgorithm> decode_cublaslt_algorithm(std::string_view bytes) {
  const char* what = "cublasLt algorithm config";
  if (bytes.size() < 4) return invalid_engine("{}: {} bytes", what, bytes.size());
  LeReader r(bytes);
  const auto version = r.get<uint32_t>();
  if (version != CublasLtAlgorithm::kVersion)
    return invalid_engine("{}: version {}, this reader knows {}", what, version,
                          CublasLtAlgorithm::kVersion);
  if (bytes.size() != kEncodedBytes)
    return invalid_engine("{}: {} bytes, version 1 has {}", what, bytes.size(), kEncodedBytes);
  CublasLtAlgorithm a;
  a.algo_id = r.get<int32_t>();
  a.tile_id = r.get<uint32_t>();
  a.splitk_num = r.get<int32_t>();
  a.reduction_scheme = r.get<uint32_t>();
  a.cta_swizzling = r.get<uint32_t>();
  a.custom_option = r.get<uint32_t>();
  a.stages_id = r.get<uint32_t>();
  a.inner_shape_id = r.get<uint16_t>();
  a.cluster_shape_id = r.get<uint16_t>();
  a.workspace_bytes = r.get<uint64_t>();
  a.library_version = r.get<uint32_t>();
  a.compute_capability = r.get<uint32_t>();
  if (a.algo_id < 0 || a.algo_id >= kMaxAlgorithmId)
    return invalid_engine("{}: algo id {} is outside [0, {})", what, a.algo_id, kMaxAlgorithmId);
  if (a.tile_id >= kMaxAlgorithmId || a.stages_id >= kMaxAlgorithmId ||
      a.custom_option >= kMaxAlgorithmId)
    return invalid_engine("{}: tile {}, stages {} or custom option {} is out of range", what,
                          a.tile_id, a.stages_id, a.custom_option);
  if (a.splitk_num < 1 || a.splitk_num > kMaxSplitK)
    return invalid_engine("{}: split-K {} is outside [1, {}]", what, a.splitk_num, kMaxSplitK);
  if ((a.reduction_scheme & ~kReductionMask) != 0)
    return invalid_engine("{}: unknown reduction scheme {}", what, a.reduction_scheme);
  if (a.cta_swizzling > 1)
    return invalid_engine("{}: CTA swizzling {} (0 or 1)", what, a.cta_swizzling);
  if (a.workspace_bytes > kMaxWorkspace)
    return invalid_engine("{}: workspace {} bytes exceeds {}", what, a.workspace_bytes,
                          kMaxWorkspace);
  if (a.compute_capability > 1000)
    return invalid_engine("{}: compute capability {}", what, a.compute_capability);
  return a;
}

std::string cublaslt_tile_name(uint32_t tile_id) { return enum_name(kCublasLtTileNames, tile_id); }
std::string cublaslt_stages_name(uint32_t stages_id) {
  return enum_name(kCublasLtStagesNames, stages_id);
}

std::string describe_cublaslt_algorithm(const CublasLtAlgorithm& a) {
  return fmt::format(
      "algo {} tile {} stages {} splitK {} reduction {} swizzle {} custom {} inner {} cluster {}",
      a.algo_id, cublaslt_tile_name(a.tile_id), cublaslt_stages_name(a.stages_id), a.splitk_num,
      reduction_name(a.reduction_scheme), a.cta_swizzling, a.custom_option, a.inner_shape_id,
      a.cluster_shape_id);
}

Status check_recorded_algorithm(std::string_view library, int64_t algorithm,
                                std::string_view config, double tuned_ms,
                                uint64_t workspace_limit) {
  if (!std::isfinite(tuned_ms) || tuned_ms < 0 || tuned_ms > kMaxTunedMs)
    return invalid_engine("tuned time {} ms is outside [0, {}]", tuned_ms, kMaxTunedMs);
  if (tuned_ms > 0 && algorithm < 0)
    return invalid_engine("a tuned time ({} ms) without a recorded algorithm", tuned_ms);
  if (library == "cublasLt" && !config.empty()) {
    ASSIGN_OR_RETURN(CublasLtAlgorithm a, decode_cublaslt_algorithm(config));
    if (algorithm != a.algo_id)
      return invalid_engine("algorithm {} differs from its config's algo id {}", algorithm,
                            a.algo_id);
    if (a.workspace_bytes > workspace_limit)
      return invalid_engine("the recorded algorithm needs {} bytes of workspace; the call has {}",
                            a.workspace_bytes, workspace_limit);
    return Status::ok_status();
  }
  if (!config.empty())
    return invalid_engine("{} calls record no algorithm config ({} bytes given)", library,
                          config.size());
  // cuBLASLt without a config: a heuristic result index (engines before the
  // config existed); cuDNN: the algorithm enum.
  const int64_t limit = library == "cublasLt" ? kMaxHeuristicIndex : kMaxAlgorithmId;
  if (algorithm < -1 || algorithm >= limit)
    return invalid_engine("algorithm {} is outside [-1, {})", algorithm, limit);
  return Status::ok_status();
}

std::string describe_recorded_algorithm(std::string_view library, int64_t algorithm,
                                        std::string_view config, double tuned_ms) {
  if (algorithm < 0) return "heuristic at load";
  std::string what;
  if (library == "cublasLt" && !config.empty()) {
    auto a = decode_cublaslt_algorithm(config);
    what = a.ok() ? describe_cublaslt_algorithm(*a) : "algo " + std::to_string(algorithm);
  } else if (library == "cublasLt") {
    what = fmt::format("heuristic #{} at load", algorithm);
  } else {
    what = fmt::format("algo {}", algorithm);
  }
  if (tuned_ms <= 0) return what;
  return fmt::format("tuned: {} ({:.3f} ms)", what, tuned_ms);
}

}  // namespace graphc::engine
