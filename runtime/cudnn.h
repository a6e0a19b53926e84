// cuDNN 9, loaded at run time with dlopen like the driver and cuBLASLt
// (DESIGN principle 8): an engine without convolutions never loads it, graphc
// links without it, and a missing library is a clear error only for engines
// that call it. The library is GRAPHC_CUDNN_PATH when set (the file, or a
// folder holding libcudnn.so.9), else libcudnn.so.9 on the loader's path.
// libcudnn.so.9 is a shim that dlopens its sub-libraries (libcudnn_ops,
// libcudnn_cnn, libcudnn_graph, the engines) by name; loaded by full path,
// graphc first loads those from the same folder (RTLD_GLOBAL), so the shim
// finds them already loaded even where the folder is on no search path.
//
// The graph (backend) API's functions are in the table too: attention runs
// through it (runtime/cudnn_sdpa.h).
//
// The legacy convolution API (cudnn_cnn.h, cudnn_ops.h): per engine, the
// descriptors and the algorithm chosen at load (the engine's recorded one, or
// cuDNN's heuristic within the workspace limit); per execution context, its
// own handle (bound to the stream at each run) and a workspace allocated up
// front, so a captured CUDA graph allocates nothing.
//
// What runs, y = act(conv(x, w) + bias + residual):
//   - forward with a bias, and ReLU or the IMPLICIT_PRECOMP_GEMM algorithm
//     (the only one cuDNN allows with an identity activation): one
//     cudnnConvolutionBiasActivationForward (residual as z with alpha2 = 1);
//   - otherwise cudnnConvolutionForward (or cudnnConvolutionBackwardData for
//     ConvTranspose), then cudnnAddTensor for the bias and the residual and
//     cudnnActivationForward in place for the ReLU. A fused call that cuDNN
//     refuses (a NOT_SUPPORTED or BAD_PARAM status: a dtype or layout its
//     fused kernels lack) takes this path from then on; a real problem then
//     shows as the unfused calls' error.
// Before the first CUDA-graph capture each context runs its convolutions once
// eagerly, so whatever cuDNN does on a first call (loading kernels, the fused
// call's fallback) happens outside the capture.
//
// Over a shape range a conv's batch and spatial dims may vary: its
// descriptors and algorithm are set up per shape on first use and kept
// (EngineConvs::setup_at), chosen before the CUDA graph of that shape is
// captured, and each new set-up runs once eagerly in a context first.
#pragma once

#include <cudnn.h>

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "runtime/conv_shapes.h"
#include "runtime/cuda_driver.h"
#include "runtime/executable.h"

namespace graphc::runtime {

#define GRAPHC_CUDNN_FUNCTIONS(X)                 \
  X(cudnnGetVersion)                              \
  X(cudnnGetErrorString)                          \
  X(cudnnCreate)                                  \
  X(cudnnDestroy)                                 \
  X(cudnnSetStream)                               \
  X(cudnnCreateTensorDescriptor)                  \
  X(cudnnDestroyTensorDescriptor)                 \
  X(cudnnSetTensorNdDescriptor)                   \
  X(cudnnCreateFilterDescriptor)                  \
  X(cudnnDestroyFilterDescriptor)                 \
  X(cudnnSetFilterNdDescriptor)                   \
  X(cudnnCreateConvolutionDescriptor)             \
  X(cudnnDestroyConvolutionDescriptor)            \
  X(cudnnSetConvolutionNdDescriptor)              \
  X(cudnnSetConvolutionMathType)                  \
  X(cudnnSetConvolutionGroupCount)                \
  X(cudnnCreateActivationDescriptor)              \
  X(cudnnDestroyActivationDescriptor)             \
  X(cudnnSetActivationDescriptor)                 \
  X(cudnnGetConvolutionForwardAlgorithm_v7)       \
  X(cudnnGetConvolutionForwardWorkspaceSize)      \
  X(cudnnFindConvolutionForwardAlgorithmEx)       \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)  \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize) \
  X(cudnnFindConvolutionBackwardDataAlgorithmEx)  \
  X(cudnnConvolutionForward)                      \
  X(cudnnConvolutionBiasActivationForward)        \
  X(cudnnConvolutionBackwardData)                 \
  X(cudnnAddTensor)                               \
  X(cudnnActivationForward)                       \
  X(cudnnGetTensorNdDescriptor)                   \
  X(cudnnGetConvolutionNdForwardOutputDim)        \
  X(cudnnGetLastErrorString)                      \
  X(cudnnBackendCreateDescriptor)                 \
  X(cudnnBackendDestroyDescriptor)                \
  X(cudnnBackendSetAttribute)                     \
  X(cudnnBackendGetAttribute)                     \
  X(cudnnBackendFinalize)                         \
  X(cudnnBackendExecute)

struct CudnnApi {
#define GRAPHC_CUDNN_FIELD(name) decltype(&::name) name = nullptr;
  GRAPHC_CUDNN_FUNCTIONS(GRAPHC_CUDNN_FIELD)
#undef GRAPHC_CUDNN_FIELD
  std::string path;  // the library loaded
};

// Loads the library once (thread-safe); the error names the path tried.
Expected<const CudnnApi*> load_cudnn();
// Loads `path` (a file, or a folder holding libcudnn.so.9; uncached, for tests
// and load_cudnn). The handles stay open.
Expected<CudnnApi> load_cudnn_from(const std::string& path);
// How often load_cudnn was called in this process (tests: engines without
// convolutions never call it).
int cudnn_load_attempts();

// OK for CUDNN_STATUS_SUCCESS, else "<what>: cuDNN error <code> (text)".
Status check_cudnn(const CudnnApi& api, cudnnStatus_t status, const std::string& what);

// The tensor, filter, convolution and activation descriptors of one conv.
struct ConvDescriptors {
  const CudnnApi* api = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t act = nullptr;  // ReLU (or identity for the fused call)
  ~ConvDescriptors();
};
Expected<std::unique_ptr<ConvDescriptors>> make_conv_descriptors(const CudnnApi& api,
                                                                 const engine::ConvParams& p);

// Per engine: one entry per conv launch, read-only once built (but for the
// fused-call fallback flag), so contexts on several threads share it.
struct ConvSetup {
  engine::ConvParams params;
  std::unique_ptr<ConvDescriptors> desc;
  int algorithm = 0;           // cudnnConvolutionFwdAlgo_t or cudnnConvolutionBwdDataAlgo_t
  bool recorded = false;       // the engine's recorded algorithm (else the heuristic's)
  std::string note;            // how the algorithm was chosen, for logs and tests
  size_t workspace_bytes = 0;  // what `algorithm` needs
  bool fused = false;          // runs as one cudnnConvolutionBiasActivationForward
  // The cudnnStatus_t with which cuDNN refused the fused call (0: never):
  // from then on this conv runs unfused.
  mutable std::atomic<int> fused_refused{0};
};

// The device addresses of one conv call (bias and z null when absent).
struct ConvOperands {
  void *x = nullptr, *w = nullptr, *bias = nullptr, *z = nullptr, *y = nullptr;
  void* workspace = nullptr;  // at least setup.workspace_bytes
};
// Enqueues one conv as the runtime runs it (the fused call when `setup` says
// so, else the convolution then bias, residual and ReLU) on the handle's stream.
Status enqueue_conv(const CudnnApi& api, cudnnHandle_t handle, const ConvSetup& setup,
                    const ConvOperands& operands);

class EngineConvs {
 public:
  // Sets up every conv launch of `launches`; nothing is loaded when none is.
  // Needs the engine's CUDA context current. A conv whose sizes vary over
  // `exe`'s shape ranges (ConvLaunch::sizes) is also set up at each
  // profile's least, opt and largest shapes, and the workspace is the most
  // any of those set-ups needs (conv_shapes.h).
  static Expected<std::unique_ptr<EngineConvs>> create(const std::vector<Launch>& launches,
                                                       const Executable* exe = nullptr);
  ~EngineConvs();
  const CudnnApi* api() const { return api_; }
  const ConvSetup* setup(size_t launch) const {
    return launch < setups_.size() ? setups_[launch].get() : nullptr;
  }
  // The set-up of conv launch `launch` at params `at` (conv_params_at_shapes):
  // the load's own at the built shape, else made on first use of that shape
  // (descriptors, and cuDNN's heuristic within the workspace every context
  // has: an error naming the conv when no algorithm fits) and kept for the
  // engine's life, shared by launches with the same descriptor; thread-safe.
  Expected<const ConvSetup*> setup_at(size_t launch, const engine::ConvParams& at) const;
  // Set-ups made for shapes other than the built ones (tests, reports).
  size_t shapes_set_up() const { return at_shapes_.size(); }
  uint64_t workspace_bytes() const { return workspace_bytes_; }  // the largest call's

 private:
  const CudnnApi* api_ = nullptr;
  cudnnHandle_t handle_ = nullptr;  // for the heuristic and workspace queries
  std::vector<std::unique_ptr<ConvSetup>> setups_;
  std::vector<bool> varying_;  // per launch: its sizes vary over the shape range
  ShapeSetupCache<ConvSetup> at_shapes_;
  uint64_t workspace_bytes_ = 0;
};

// Per execution context: its own handle and workspace.
class ContextConvs {
 public:
  static Expected<std::unique_ptr<ContextConvs>> create(const EngineConvs& engine,
                                                        const DriverApi& driver);
  ~ContextConvs();
  uint64_t workspace_bytes() const { return engine_ ? engine_->workspace_bytes() : 0; }
  // Enqueues launch `i` with its argument addresses (x, w, [bias], [residual], y),
  // with the engine's set-up of the launch or `at_shape` (EngineConvs::setup_at).
  Status run(size_t launch, const std::vector<CUdeviceptr>& args, CUstream stream,
             const ConvSetup* at_shape = nullptr) const;
  // Whether this context has run set-up `s` yet: cuDNN's first call with a
  // descriptor may load kernels or allocate, so each runs once eagerly
  // before a CUDA-graph capture includes it.
  bool warmed(const ConvSetup* s) const { return warmed_.count(s) != 0; }
  void mark_warmed(const ConvSetup* s) { warmed_.insert(s); }

 private:
  const EngineConvs* engine_ = nullptr;
  const DriverApi* driver_ = nullptr;
  cudnnHandle_t handle_ = nullptr;
  CUdeviceptr workspace_ = 0;
  std::set<const ConvSetup*> warmed_;
};

// One algorithm as cuDNN measured it (cudnnFind*AlgorithmEx), for the tuner.
struct ConvAlgoTiming {
  int32_t algorithm = -1;  // cudnnConvolutionFwdAlgo_t / cudnnConvolutionBwdDataAlgo_t
  bool ok = false;         // ran: time and workspace are valid
  float ms = 0;            // its time as the engine runs it (epilogue included)
  float bare_ms = 0;       // cuDNN's own time for the convolution alone
  bool fused = false;      // ran as one cudnnConvolutionBiasActivationForward
  uint64_t workspace_bytes = 0;
  int math_type = 0;   // cudnnMathType_t it ran with
  std::string status;  // cuDNN's status text
};
// Times every algorithm cuDNN has for `p`'s convolution on device `device`
// (in the mode `p` asks: FMA only for strict fp32), on scratch buffers it
// allocates and frees, with at most `workspace_limit` bytes of workspace:
// cuDNN's search finds the candidates, each is then timed as the engine runs
// it (enqueue_conv: the fused call with its epilogue).
// Sorted fastest first, failed ones last. Record the fastest ok one as
// ConvParams::algorithm (and LibraryCall.algorithm).
Expected<std::vector<ConvAlgoTiming>> time_conv_algorithms(const engine::ConvParams& p,
                                                           uint64_t workspace_limit,
                                                           int device = 0);

}  // namespace graphc::runtime
