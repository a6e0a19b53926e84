// Timing cuBLASLt's candidate algorithms for one matmul on the GPU, for
// `graphc build --tune`: up to N heuristic candidates (the engine's workspace
// limit), each run on device buffers of the matmul's sizes filled with random
// data — a few warm-up launches, then the median of CUDA-event-timed launches —
// and its output checked against the heuristic's first choice, so a candidate
// that is fast but wrong is never kept.
#pragma once

#include <string>
#include <vector>

#include "engine_format/library_algorithm.h"
#include "engine_format/matmul_params.h"
#include "support/status.h"

namespace graphc::runtime {

struct MatmulTimingOptions {
  int device = 0;           // CUDA device ordinal
  int max_candidates = 16;  // heuristic results asked for
  int warmup = 3;           // untimed launches per candidate
  int iterations = 10;      // timed launches per candidate (the median is kept)
};

struct MatmulCandidate {
  int rank = 0;  // position in cuBLASLt's heuristic order (0: what load would pick)
  engine::CublasLtAlgorithm algorithm;
  double median_ms = 0;     // when status is ok
  double max_abs_diff = 0;  // of its output against rank 0's
  Status status;            // why it was rejected (failed to run, wrong output)
};

struct MatmulTuning {
  std::vector<MatmulCandidate> candidates;  // heuristic order
  int best = -1;                            // index of the fastest valid candidate
};

// An error when nothing could be timed at all (no GPU, no cuBLASLt, no
// candidate ran); single candidates that fail are reported in their status.
Expected<MatmulTuning> tune_cublaslt_matmul(const engine::MatmulParams& params,
                                            uint64_t workspace_limit,
                                            const MatmulTimingOptions& options = {});

// cublasLtGetVersion() of the library the runtime loads (130100 for 13.1.0).
Expected<uint32_t> cublaslt_version();

}  // namespace graphc::runtime
