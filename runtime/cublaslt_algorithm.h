// A cuBLASLt algorithm as the engine records it (engine::CublasLtAlgorithm):
// read back from a heuristic result's cublasLtMatmulAlgo_t, and rebuilt from
// the record at load (cublasLtMatmulAlgoInit + ConfigSetAttribute) and checked
// with cublasLtMatmulAlgoCheck against this matmul on this device.
#pragma once

#include <cublasLt.h>

#include "engine_format/library_algorithm.h"
#include "runtime/cublaslt.h"

namespace graphc::runtime {

// The configuration attributes of `algo`; `workspace_bytes` (what it needs,
// from its heuristic result), the library version and `compute_capability`
// are recorded with them.
Expected<engine::CublasLtAlgorithm> read_cublaslt_algorithm(const CublasLtApi& api,
                                                            const cublasLtMatmulAlgo_t& algo,
                                                            uint64_t workspace_bytes,
                                                            uint32_t compute_capability);

// Sets every configuration attribute of `recorded` but its id on `algo`
// (cublasLtMatmulAlgoInit sets the id). Needs no GPU.
Status apply_cublaslt_config(const CublasLtApi& api, cublasLtMatmulAlgo_t* algo,
                             const engine::CublasLtAlgorithm& recorded);

// Rebuilds `recorded` for `setup`'s matmul (described by `desc`) and checks
// that this device and library can run it within `workspace_limit`; the error
// says which step refused it. `workspace_needed` (optional) gets what it needs here.
Expected<cublasLtMatmulAlgo_t> rebuild_cublaslt_algorithm(
    const CublasLtApi& api, cublasLtHandle_t handle, const MatmulSetup& setup,
    cublasLtMatmulDesc_t desc, const engine::CublasLtAlgorithm& recorded, uint64_t workspace_limit,
    uint64_t* workspace_needed = nullptr);

// cuBLASLt's compute type and per-operand data type for graphc's matmul
// descriptor (the same ones make_matmul_desc and the layouts use).
// int8 (docs/int8.md): int8 A and B, int32 compute, scale, C and D, the
// combination cuBLASLt documents for its IMMA kernels with int32 output.
cublasComputeType_t matmul_compute_type(const engine::MatmulParams& params);
cudaDataType_t matmul_data_type(const engine::MatmulParams& params);    // A and B
cudaDataType_t matmul_output_type(const engine::MatmulParams& params);  // D
cudaDataType_t matmul_c_type(const engine::MatmulParams& params);       // C and the bias
cudaDataType_t matmul_scale_type(const engine::MatmulParams& params);   // alpha, beta

}  // namespace graphc::runtime
