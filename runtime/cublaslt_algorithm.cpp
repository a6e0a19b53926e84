#include "runtime/cublaslt_algorithm.h"

#include <fmt/format.h>

namespace graphc::runtime {

namespace {

template <typename T>
Status get_attr(const CublasLtApi& lt, const cublasLtMatmulAlgo_t& algo,
                cublasLtMatmulAlgoConfigAttributes_t attr, T* out, const char* name) {
  size_t written = 0;
  RETURN_IF_ERROR(check_cublaslt(
      lt, lt.cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, out, sizeof(T), &written),
      fmt::format("reading the algorithm's {}", name)));
  if (written != sizeof(T))
    return device_error("reading the algorithm's {}: cuBLASLt wrote {} bytes, expected {}", name,
                        written, sizeof(T));
  return Status::ok_status();
}

template <typename T>
Status set_attr(const CublasLtApi& lt, cublasLtMatmulAlgo_t* algo,
                cublasLtMatmulAlgoConfigAttributes_t attr, T value, const char* name) {
  return check_cublaslt(lt, lt.cublasLtMatmulAlgoConfigSetAttribute(algo, attr, &value, sizeof(T)),
                        fmt::format("setting the algorithm's {}", name));
}

}  // namespace

cublasComputeType_t matmul_compute_type(const engine::MatmulParams& p) {
  if (p.compute == engine::MatmulCompute::kI32) return CUBLAS_COMPUTE_32I;
  return p.compute == engine::MatmulCompute::kF32FastTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                          : CUBLAS_COMPUTE_32F;
}

namespace {
// float16, bfloat16 or float32 by ONNX dtype.
cudaDataType_t float_type(int32_t onnx) {
  return onnx == 10 ? CUDA_R_16F : onnx == 16 ? CUDA_R_16BF : CUDA_R_32F;
}
}  // namespace

cudaDataType_t matmul_data_type(const engine::MatmulParams& p) {
  if (p.int8()) return CUDA_R_8I;
  if (p.fp8()) return CUDA_R_8F_E4M3;
  return float_type(p.dtype);
}

cudaDataType_t matmul_output_type(const engine::MatmulParams& p) {
  // cuBLASLt's FP8 GEMM writes float32, float16, bfloat16 or (scaled) float8 e4m3 here.
  if (p.fp8()) return p.d_type == 17 ? CUDA_R_8F_E4M3 : float_type(p.d_type);
  return p.int8() ? CUDA_R_32I : matmul_data_type(p);
}

cudaDataType_t matmul_c_type(const engine::MatmulParams& p) {
  // A float8 D takes C (and the bias) in float16 or bfloat16 (cuBLAS's FP8 table).
  if (p.fp8_output()) return float_type(p.c_type);
  return matmul_output_type(p);
}

cudaDataType_t matmul_scale_type(const engine::MatmulParams& p) {
  return p.int8() ? CUDA_R_32I : CUDA_R_32F;
}

Expected<engine::CublasLtAlgorithm> read_cublaslt_algorithm(const CublasLtApi& lt,
                                                            const cublasLtMatmulAlgo_t& algo,
                                                            uint64_t workspace_bytes,
                                                            uint32_t compute_capability) {
  engine::CublasLtAlgorithm a;
  RETURN_IF_ERROR(get_attr(lt, algo, CUBLASLT_ALGO_CONFIG_ID, &a.algo_id, "id"));
  RETURN_IF_ERROR(get_attr(lt, algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &a.tile_id, "tile"));
  RETURN_IF_ERROR(get_attr(lt, algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &a.splitk_num, "split-K"));
  RETURN_IF_ERROR(get_attr(lt, algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &a.reduction_scheme,
                           "reduction scheme"));
  RETURN_IF_ERROR(
      get_attr(lt, algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &a.cta_swizzling, "CTA swizzling"));
  RETURN_IF_ERROR(
      get_attr(lt, algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &a.custom_option, "custom option"));
  RETURN_IF_ERROR(get_attr(lt, algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &a.stages_id, "stages"));
  RETURN_IF_ERROR(
      get_attr(lt, algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, &a.inner_shape_id, "inner shape"));
  RETURN_IF_ERROR(get_attr(lt, algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &a.cluster_shape_id,
                           "cluster shape"));
  a.workspace_bytes = workspace_bytes;
  a.library_version = static_cast<uint32_t>(lt.cublasLtGetVersion());
  a.compute_capability = compute_capability;
  // What cuBLASLt hands back must be what the engine format accepts.
  auto checked = engine::decode_cublaslt_algorithm(engine::encode_cublaslt_algorithm(a));
  if (!checked.ok())
    return checked.status().with_context("the algorithm cuBLASLt returned does not fit the record");
  return a;
}

Status apply_cublaslt_config(const CublasLtApi& lt, cublasLtMatmulAlgo_t* algo,
                             const engine::CublasLtAlgorithm& a) {
  RETURN_IF_ERROR(set_attr(lt, algo, CUBLASLT_ALGO_CONFIG_TILE_ID, a.tile_id, "tile"));
  RETURN_IF_ERROR(set_attr(lt, algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, a.splitk_num, "split-K"));
  RETURN_IF_ERROR(set_attr(lt, algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, a.reduction_scheme,
                           "reduction scheme"));
  RETURN_IF_ERROR(
      set_attr(lt, algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, a.cta_swizzling, "CTA swizzling"));
  RETURN_IF_ERROR(
      set_attr(lt, algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, a.custom_option, "custom option"));
  RETURN_IF_ERROR(set_attr(lt, algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, a.stages_id, "stages"));
  RETURN_IF_ERROR(
      set_attr(lt, algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, a.inner_shape_id, "inner shape"));
  RETURN_IF_ERROR(set_attr(lt, algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, a.cluster_shape_id,
                           "cluster shape"));
  return Status::ok_status();
}

Expected<cublasLtMatmulAlgo_t> rebuild_cublaslt_algorithm(
    const CublasLtApi& lt, cublasLtHandle_t handle, const MatmulSetup& s, cublasLtMatmulDesc_t desc,
    const engine::CublasLtAlgorithm& a, uint64_t workspace_limit, uint64_t* workspace_needed) {
  const cudaDataType_t type = matmul_data_type(s.params), out = matmul_output_type(s.params),
                       c_type = matmul_c_type(s.params);
  cublasLtMatmulAlgo_t algo{};
  RETURN_IF_ERROR(check_cublaslt(
      lt,
      lt.cublasLtMatmulAlgoInit(handle, matmul_compute_type(s.params), matmul_scale_type(s.params),
                                type, type, c_type, out, a.algo_id, &algo),
      fmt::format("cublasLtMatmulAlgoInit(algo {})", a.algo_id)));
  RETURN_IF_ERROR(apply_cublaslt_config(lt, &algo, a));
  cublasLtMatmulHeuristicResult_t result{};
  RETURN_IF_ERROR(check_cublaslt(
      lt, lt.cublasLtMatmulAlgoCheck(handle, desc, s.a, s.b, s.c ? s.c : s.d, s.d, &algo, &result),
      "cublasLtMatmulAlgoCheck"));
  if (result.workspaceSize > workspace_limit)
    return unsupported("it needs {} bytes of workspace here; the call has {}", result.workspaceSize,
                       workspace_limit);
  if (workspace_needed) *workspace_needed = result.workspaceSize;
  return algo;
}

}  // namespace graphc::runtime
