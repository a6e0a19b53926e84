// The algorithm an engine records for a library call (LibraryCall.algorithm,
// .algorithm_config, .tuned_ms), so the runtime runs exactly what `graphc
// build --tune` measured instead of asking the library's heuristic at load.
//
// cuBLASLt: the algorithm's configuration as cublasLtMatmulAlgoConfigGetAttribute
// reads it back (a cublasLtMatmulAlgo_t is opaque; its attributes are the
// stable, documented way to rebuild it with cublasLtMatmulAlgoInit +
// ConfigSetAttribute), in a versioned fixed little-endian layout checked field
// by field. cuDNN: the cudnnConvolutionFwdAlgo_t in LibraryCall.algorithm; no
// config bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "support/status.h"

namespace graphc::engine {

struct CublasLtAlgorithm {
  static constexpr uint32_t kVersion = 1;
  int32_t algo_id = 0;            // CUBLASLT_ALGO_CONFIG_ID
  uint32_t tile_id = 0;           // cublasLtMatmulTile_t
  int32_t splitk_num = 1;         // CUBLASLT_ALGO_CONFIG_SPLITK_NUM
  uint32_t reduction_scheme = 0;  // cublasLtReductionScheme_t
  uint32_t cta_swizzling = 0;     // 0 or 1
  uint32_t custom_option = 0;
  uint32_t stages_id = 0;         // cublasLtMatmulStages_t
  uint16_t inner_shape_id = 0;    // cublasLtMatmulInnerShape_t
  uint16_t cluster_shape_id = 0;  // cublasLtClusterShape_t
  uint64_t workspace_bytes = 0;   // what this algorithm needs; at most the call's workspace
  // Where it was chosen, for reports and the runtime's fallback warning.
  uint32_t library_version = 0;     // cublasLtGetVersion(), e.g. 130100
  uint32_t compute_capability = 0;  // 90 for sm_90

  bool operator==(const CublasLtAlgorithm&) const = default;
};

std::string encode_cublaslt_algorithm(const CublasLtAlgorithm& a);
// Checks version, size and every field; an invalid_engine error names it.
Expected<CublasLtAlgorithm> decode_cublaslt_algorithm(std::string_view bytes);
// "algo 21 tile 128x128 stages 64x3 splitK 1 reduction none swizzle 0 custom 0
// inner 0 cluster 0 workspace 0 B"
std::string describe_cublaslt_algorithm(const CublasLtAlgorithm& a);
// "128x128", "64x3" ("#N" for values this graphc's table does not name).
std::string cublaslt_tile_name(uint32_t tile_id);
std::string cublaslt_stages_name(uint32_t stages_id);

// What a LibraryCall records, checked as the engine validator and the timing
// cache need it: `algorithm` in range for the library (-1: heuristic at load),
// a config only where the library has one and that decodes with its id equal to
// `algorithm` and its workspace within `workspace_limit`, tuned_ms finite,
// >= 0 and 0 unless an algorithm is recorded.
Status check_recorded_algorithm(std::string_view library, int64_t algorithm,
                                std::string_view config, double tuned_ms, uint64_t workspace_limit);

// "heuristic at load" or "tuned: algo 21 tile 128x128 ... (0.123 ms)" for reports;
// assumes check_recorded_algorithm passed.
std::string describe_recorded_algorithm(std::string_view library, int64_t algorithm,
                                        std::string_view config, double tuned_ms);

// Bounds: cuBLASLt algorithm ids are small (tens); cuDNN forward algorithms
// are 0..7. A legacy cuBLASLt call without config bytes stores a heuristic
// result index in [-1, kMaxHeuristicIndex).
inline constexpr int64_t kMaxAlgorithmId = 1 << 16;
inline constexpr int64_t kMaxHeuristicIndex = 64;
inline constexpr double kMaxTunedMs = 1e7;

}  // namespace graphc::engine
