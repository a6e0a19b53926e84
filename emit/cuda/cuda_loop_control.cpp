#include "emit/cuda/cuda_loop_control.h"

#include <fmt/format.h>

namespace graphc::emit {

Expected<LoopControlKernel> loop_control_kernel(ir::DType trip_count, bool has_cond) {
  const char* m_type = nullptr;
  if (trip_count == ir::DType::kInt64) m_type = "long long";
  else if (trip_count == ir::DType::kInt32) m_type = "int";
  else if (trip_count != ir::DType::kUndefined)
    return unsupported("a Loop trip count of dtype {} (graphc takes int64 or int32)",
                       ir::dtype_name(trip_count));
  LoopControlKernel k;
  k.entry = fmt::format("graphc_loop_control{}{}", m_type ? (trip_count == ir::DType::kInt64 ? "_m64" : "_m32") : "",
                        has_cond ? "_c" : "");
  std::string params;
  if (m_type) params += fmt::format("const {}* __restrict__ trip_count, ", m_type);
  if (has_cond) params += "const unsigned char* __restrict__ cond_in, ";
  // cudaGraphSetConditional is a device-runtime builtin the driver resolves
  // at module load (NVRTC compiles it to CUBIN without -rdc or cudadevrt);
  // declared here since NVRTC has no cuda_runtime.h.
  k.source = fmt::format(
      R"(// graphc: the control kernel of a Loop (emit/cuda/cuda_loop_control.h).
typedef unsigned long long graphc_cond_handle;
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(graphc_cond_handle handle,
                                                                      unsigned int value);
struct GraphcLoopLaunch {{
  graphc_cond_handle handle;
  int mode;
  int pad;
}};
extern "C" __global__ void {0}({1}const unsigned char* body_cond, long long* iter,
                               unsigned char* cond, int* flag, GraphcLoopLaunch launch) {{
  const bool step = (launch.mode & 1) != 0;
  const long long i = step ? *iter + 1 : 0;
  const bool c = step ? *body_cond != 0 : {2};
  *iter = i;
  *cond = c ? 1 : 0;
  const unsigned int go = ({3}c) ? 1u : 0u;
  *flag = static_cast<int>(go);
  if (launch.mode & 2) cudaGraphSetConditional(launch.handle, go);
}}
)",
      k.entry, params, has_cond ? "*cond_in != 0" : "true",
      m_type ? "i < static_cast<long long>(*trip_count) && " : "");
  return k;
}

}  // namespace graphc::emit
