#include "runtime/cudnn.h"

#include <dlfcn.h>
#include <fmt/ranges.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>

namespace graphc::runtime {

namespace {

using engine::ConvActivation;
using engine::ConvLayout;
using engine::ConvOp;
using engine::ConvParams;

constexpr const char* kDefaultLibrary = "libcudnn.so.9";
// Loaded from the shim's folder first: the legacy convolution API lives in
// libcudnn_cnn, which needs libcudnn_ops and libcudnn_graph. (The graph API's
// engines and heuristics, which attention uses, libcudnn_graph opens itself
// through its $ORIGIN run path.)
constexpr const char* kSubLibraries[] = {"libcudnn_graph.so.9", "libcudnn_ops.so.9",
                                         "libcudnn_cnn.so.9"};
std::atomic<int> g_load_attempts{0};

cudnnDataType_t data_type(int32_t dtype) {
  return dtype == 10 ? CUDNN_DATA_HALF : dtype == 16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

bool strict_fp32(const ConvParams& p) {
  return p.dtype == 1 && p.compute == engine::ConvCompute::kF32;
}

// fp32 without --allow-tf32 must not use TF32 tensor cores: only FMA kernels.
cudnnMathType_t requested_math(const ConvParams& p) {
  return strict_fp32(p) ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
}

// The descriptors' dims: N, channels, then the spatial dims, a 1-D conv as 2-D with H = 1.
std::vector<int> nd_dims(const ConvParams& p, int64_t channels, const ConvParams::Dims& spatial) {
  std::vector<int> d{static_cast<int>(p.n), static_cast<int>(channels)};
  if (p.spatial_rank == 1) d.push_back(1);
  for (int32_t i = 0; i < p.spatial_rank; ++i) d.push_back(static_cast<int>(spatial[i]));
  return d;
}

// Packed strides for `dims` (N, C, spatial...) in NCHW or channels-last order.
std::vector<int> packed_strides(const std::vector<int>& dims, ConvLayout layout) {
  std::vector<int> s(dims.size(), 1);
  if (layout == ConvLayout::kNchw) {
    for (size_t i = dims.size() - 1; i-- > 0;) s[i] = s[i + 1] * dims[i + 1];
    return s;
  }
  int inner = dims[1];  // C is innermost, then the spatial dims, then N
  s[1] = 1;
  for (size_t i = dims.size() - 1; i >= 2; --i) {
    s[i] = inner;
    inner *= dims[i];
  }
  s[0] = inner;
  return s;
}

Status set_tensor(const CudnnApi& api, cudnnTensorDescriptor_t* t, const ConvParams& p,
                  const std::vector<int>& dims, ConvLayout layout, const char* what) {
  RETURN_IF_ERROR(check_cudnn(api, api.cudnnCreateTensorDescriptor(t),
                              fmt::format("cudnnCreateTensorDescriptor ({})", what)));
  const std::vector<int> strides = packed_strides(dims, layout);
  return check_cudnn(
      api,
      api.cudnnSetTensorNdDescriptor(*t, data_type(p.dtype), static_cast<int>(dims.size()),
                                     dims.data(), strides.data()),
      fmt::format("cudnnSetTensorNdDescriptor ({} {})", what, fmt::join(dims, "x")));
}

void* ptr(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

const char* op_text(const ConvParams& p) {
  return p.op == ConvOp::kForward ? "forward" : "backward-data";
}

// Sets the math type and asks the workspace `algo` needs; an error when cuDNN
// does not support `algo` for this conv.
Expected<size_t> workspace_for(const CudnnApi& api, cudnnHandle_t h, const ConvDescriptors& d,
                               const ConvParams& p, int algo, cudnnMathType_t math) {
  RETURN_IF_ERROR(check_cudnn(api, api.cudnnSetConvolutionMathType(d.conv, math),
                              "cudnnSetConvolutionMathType"));
  size_t bytes = 0;
  if (p.op == ConvOp::kForward) {
    RETURN_IF_ERROR(check_cudnn(
        api,
        api.cudnnGetConvolutionForwardWorkspaceSize(
            h, d.x, d.w, d.conv, d.y, static_cast<cudnnConvolutionFwdAlgo_t>(algo), &bytes),
        fmt::format("cudnnGetConvolutionForwardWorkspaceSize (algorithm {})", algo)));
  } else {
    // Backward data: dy is graphc's x, dx graphc's y.
    RETURN_IF_ERROR(check_cudnn(
        api,
        api.cudnnGetConvolutionBackwardDataWorkspaceSize(
            h, d.w, d.x, d.conv, d.y, static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), &bytes),
        fmt::format("cudnnGetConvolutionBackwardDataWorkspaceSize (algorithm {})", algo)));
  }
  return bytes;
}

// Algorithms whose rounding is that of a direct convolution (one fp32
// accumulation per output): the implicit-GEMM, GEMM and direct ones. FFT and
// Winograd transform the operands and round in the transformed domain, so
// their error grows with the filter and tile sizes; graphc never picks or
// records them (correctness first, as TensorRT users expect from fp32).
bool full_precision_algorithm(ConvOp op, int algo) {
  if (op == ConvOp::kForward)
    return algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
           algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
           algo == CUDNN_CONVOLUTION_FWD_ALGO_GEMM || algo == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT;
  return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 || algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
}

// cuDNN's fused call takes an identity activation only with IMPLICIT_PRECOMP_GEMM.
bool uses_fused_call(const ConvParams& p, int algorithm) {
  return p.op == ConvOp::kForward && p.has_bias &&
         (p.activation == ConvActivation::kRelu ||
          algorithm == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
}

// cuDNN's ranked candidates: (algorithm, status, memory, math type).
struct Candidate {
  int algo;
  cudnnStatus_t status;
  size_t memory;
  cudnnMathType_t math;
};

Expected<std::vector<Candidate>> heuristic(const CudnnApi& api, cudnnHandle_t h,
                                           const ConvDescriptors& d, const ConvParams& p) {
  std::vector<Candidate> out;
  int found = 0;
  if (p.op == ConvOp::kForward) {
    cudnnConvolutionFwdAlgoPerf_t r[CUDNN_CONVOLUTION_FWD_ALGO_COUNT] = {};
    RETURN_IF_ERROR(
        check_cudnn(api,
                    api.cudnnGetConvolutionForwardAlgorithm_v7(
                        h, d.x, d.w, d.conv, d.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, r),
                    "cudnnGetConvolutionForwardAlgorithm_v7"));
    for (int i = 0; i < found; ++i)
      out.push_back({static_cast<int>(r[i].algo), r[i].status, r[i].memory, r[i].mathType});
  } else {
    cudnnConvolutionBwdDataAlgoPerf_t r[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT] = {};
    RETURN_IF_ERROR(
        check_cudnn(api,
                    api.cudnnGetConvolutionBackwardDataAlgorithm_v7(
                        h, d.w, d.x, d.conv, d.y, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &found, r),
                    "cudnnGetConvolutionBackwardDataAlgorithm_v7"));
    for (int i = 0; i < found; ++i)
      out.push_back({static_cast<int>(r[i].algo), r[i].status, r[i].memory, r[i].mathType});
  }
  return out;
}

// `p` set up with at most `limit` bytes of workspace (launch `index`, for messages).
Expected<std::unique_ptr<ConvSetup>> setup_conv(const CudnnApi& api, cudnnHandle_t h,
                                                const ConvParams& p, uint64_t limit, size_t index) {
  auto s = std::make_unique<ConvSetup>();
  s->params = p;
  const std::string what =
      fmt::format("cuDNN conv (launch {}: {})", index, engine::describe_conv(p));
  auto desc = make_conv_descriptors(api, p);
  if (!desc.ok()) return desc.status().with_context(what);
  s->desc = std::move(*desc);
  const ConvDescriptors& d = *s->desc;
  // Strict fp32 keeps FMA math whatever the candidate says; otherwise the
  // candidate's own math type (tensor cores where it has them).
  auto math_of = [&](cudnnMathType_t candidate) {
    return strict_fp32(p) ? CUDNN_FMA_MATH : candidate;
  };
  bool chosen = false;
  std::string rejected;
  if (p.algorithm >= 0 && !full_precision_algorithm(p.op, p.algorithm)) {
    rejected = fmt::format("recorded algorithm {} is an FFT/Winograd one (reduced precision); ",
                           p.algorithm);
  } else if (p.algorithm >= 0) {
    auto ws = workspace_for(api, h, d, p, p.algorithm, requested_math(p));
    if (ws.ok() && *ws <= limit) {
      s->algorithm = p.algorithm;
      s->workspace_bytes = *ws;
      s->recorded = true;
      s->note = fmt::format("recorded algorithm {}", p.algorithm);
      chosen = true;
    } else {
      rejected = fmt::format(
          "recorded algorithm {} unusable here ({}); ", p.algorithm,
          ws.ok() ? fmt::format("{} bytes of workspace > {}", *ws, limit) : ws.status().message());
    }
  }
  if (!chosen) {
    RETURN_IF_ERROR(check_cudnn(api, api.cudnnSetConvolutionMathType(d.conv, requested_math(p)),
                                "cudnnSetConvolutionMathType")
                        .with_context(what));
    auto cands = heuristic(api, h, d, p);
    if (!cands.ok()) return cands.status().with_context(what);
    std::string tried;
    for (const Candidate& c : *cands) {
      if (c.status != CUDNN_STATUS_SUCCESS || !full_precision_algorithm(p.op, c.algo)) continue;
      auto ws = workspace_for(api, h, d, p, c.algo, math_of(c.math));
      if (!ws.ok() || *ws > limit) {
        tried += fmt::format(" {}({})", c.algo,
                             ws.ok() ? fmt::format("{} B", *ws) : ws.status().message());
        continue;
      }
      s->algorithm = c.algo;
      s->workspace_bytes = *ws;
      s->note = fmt::format("{}heuristic {} algorithm {} (math {}, {} B workspace)", rejected,
                            op_text(p), c.algo, static_cast<int>(math_of(c.math)), *ws);
      chosen = true;
      break;
    }
    if (!chosen)
      return unsupported(
          "{}: cuDNN's heuristic offers no usable {} algorithm within {} bytes of "
          "workspace (tried:{})",
          what, op_text(p), limit, tried.empty() ? " none" : tried);
  }
  s->fused = uses_fused_call(p, s->algorithm);
  return s;
}

}  // namespace

ConvDescriptors::~ConvDescriptors() {
  if (!api) return;
  for (cudnnTensorDescriptor_t t : {x, y, bias})
    if (t) api->cudnnDestroyTensorDescriptor(t);
  if (w) api->cudnnDestroyFilterDescriptor(w);
  if (conv) api->cudnnDestroyConvolutionDescriptor(conv);
  if (act) api->cudnnDestroyActivationDescriptor(act);
}

Expected<std::unique_ptr<ConvDescriptors>> make_conv_descriptors(const CudnnApi& api,
                                                                 const ConvParams& p) {
  auto d = std::make_unique<ConvDescriptors>();
  d->api = &api;
  RETURN_IF_ERROR(set_tensor(api, &d->x, p, nd_dims(p, p.c, p.in), p.layout, "x"));
  RETURN_IF_ERROR(set_tensor(api, &d->y, p, nd_dims(p, p.k, p.out), p.layout, "y"));
  // The bias: one value per output channel, [1, K, 1, ...] (contiguous in either layout).
  std::vector<int> bias_dims(nd_dims(p, p.k, p.out).size(), 1);
  bias_dims[1] = static_cast<int>(p.k);
  RETURN_IF_ERROR(set_tensor(api, &d->bias, p, bias_dims, ConvLayout::kNchw, "bias"));
  // Filter dims: forward [K, C/groups, filter]; backward data (the forward
  // conv from y to x) [C, K/groups, filter], as ONNX stores ConvTranspose's W.
  const bool fwd = p.op == ConvOp::kForward;
  std::vector<int> wdims = nd_dims(p, fwd ? p.c / p.groups : p.k / p.groups, p.filter);
  wdims[0] = static_cast<int>(fwd ? p.k : p.c);
  RETURN_IF_ERROR(
      check_cudnn(api, api.cudnnCreateFilterDescriptor(&d->w), "cudnnCreateFilterDescriptor"));
  RETURN_IF_ERROR(
      check_cudnn(api,
                  api.cudnnSetFilterNdDescriptor(
                      d->w, data_type(p.dtype),
                      p.layout == ConvLayout::kNhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                      static_cast<int>(wdims.size()), wdims.data()),
                  fmt::format("cudnnSetFilterNdDescriptor ({})", fmt::join(wdims, "x"))));
  std::vector<int> pads, strides, dilations;
  if (p.spatial_rank == 1) {  // the H = 1 dim
    pads.push_back(0);
    strides.push_back(1);
    dilations.push_back(1);
  }
  for (int32_t i = 0; i < p.spatial_rank; ++i) {
    pads.push_back(static_cast<int>(p.pads_begin[i]));
    strides.push_back(static_cast<int>(p.strides[i]));
    dilations.push_back(static_cast<int>(p.dilations[i]));
  }
  RETURN_IF_ERROR(check_cudnn(api, api.cudnnCreateConvolutionDescriptor(&d->conv),
                              "cudnnCreateConvolutionDescriptor"));
  // Cross-correlation is what ONNX Conv computes; fp16/bf16 accumulate in fp32.
  RETURN_IF_ERROR(
      check_cudnn(api,
                  api.cudnnSetConvolutionNdDescriptor(d->conv, static_cast<int>(pads.size()),
                                                      pads.data(), strides.data(), dilations.data(),
                                                      CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                  "cudnnSetConvolutionNdDescriptor"));
  RETURN_IF_ERROR(
      check_cudnn(api, api.cudnnSetConvolutionGroupCount(d->conv, static_cast<int>(p.groups)),
                  "cudnnSetConvolutionGroupCount"));
  RETURN_IF_ERROR(check_cudnn(api, api.cudnnSetConvolutionMathType(d->conv, requested_math(p)),
                              "cudnnSetConvolutionMathType"));
  RETURN_IF_ERROR(check_cudnn(api, api.cudnnCreateActivationDescriptor(&d->act),
                              "cudnnCreateActivationDescriptor"));
  // ONNX Relu keeps NaN (max(x, 0) of NaN is NaN in the reference).
  RETURN_IF_ERROR(check_cudnn(
      api,
      api.cudnnSetActivationDescriptor(
          d->act,
          p.activation == ConvActivation::kRelu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
          CUDNN_PROPAGATE_NAN, 0.0),
      "cudnnSetActivationDescriptor"));
  return d;
}

Expected<CudnnApi> load_cudnn_from(const std::string& path) {
  std::string file = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    file = (path.empty() || path.back() == '/' ? path : path + "/") + kDefaultLibrary;
  const auto slash = file.rfind('/');
  if (slash != std::string::npos) {
    // Best effort: a sub-library that is missing or fails here is loaded (or
    // reported) by the shim itself when it needs it.
    const std::string dir = file.substr(0, slash + 1);
    for (const char* sub : kSubLibraries) ::dlopen((dir + sub).c_str(), RTLD_NOW | RTLD_GLOBAL);
  }
  void* lib = ::dlopen(file.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    const char* err = ::dlerror();
    return unsupported(
        "this engine runs convolutions or attention through cuDNN, but {} could not be loaded "
        "({}); install "
        "cuDNN 9 or set GRAPHC_CUDNN_PATH to libcudnn.so.9 or its folder, or rebuild the engine "
        "with --conv generated",
        file, err ? err : "unknown error");
  }
  CudnnApi api;
  api.path = file;
#define GRAPHC_CUDNN_LOAD(name)                                         \
  api.name = reinterpret_cast<decltype(api.name)>(::dlsym(lib, #name)); \
  if (!api.name) return unsupported("{} lacks {} (graphc needs cuDNN 9)", file, #name);
  GRAPHC_CUDNN_FUNCTIONS(GRAPHC_CUDNN_LOAD)
#undef GRAPHC_CUDNN_LOAD
  const size_t version = api.cudnnGetVersion();
  if (version / 10000 != 9)
    return unsupported("{} is cuDNN {}, graphc needs cuDNN 9", file, version);
  return api;
}

Expected<const CudnnApi*> load_cudnn() {
  ++g_load_attempts;
  static const Expected<CudnnApi> loaded = [] {
    const char* env = std::getenv("GRAPHC_CUDNN_PATH");
    return load_cudnn_from(env && *env ? env : kDefaultLibrary);
  }();
  if (!loaded.ok()) return loaded.status();
  return &*loaded;
}

int cudnn_load_attempts() { return g_load_attempts.load(); }

Status check_cudnn(const CudnnApi& api, cudnnStatus_t status, const std::string& what) {
  if (status == CUDNN_STATUS_SUCCESS) return Status::ok_status();
  const char* text = api.cudnnGetErrorString ? api.cudnnGetErrorString(status) : nullptr;
  return device_error("{}: cuDNN error {} ({})", what, static_cast<int>(status), text ? text : "");
}

Expected<std::unique_ptr<EngineConvs>> EngineConvs::create(const std::vector<Launch>& launches,
                                                            const Executable* exe) {
  auto out = std::unique_ptr<EngineConvs>(new EngineConvs());
  out->setups_.resize(launches.size());
  out->varying_.assign(launches.size(), false);
  bool any = false;
  for (const Launch& l : launches) any |= l.conv() != nullptr;
  if (!any) return out;
  ASSIGN_OR_RETURN(out->api_, load_cudnn());
  const CudnnApi& api = *out->api_;
  RETURN_IF_ERROR(check_cudnn(api, api.cudnnCreate(&out->handle_), "cudnnCreate"));
  for (size_t i = 0; i < launches.size(); ++i) {
    const ConvLaunch* call = launches[i].conv();
    if (!call) continue;
    ASSIGN_OR_RETURN(out->setups_[i], setup_conv(api, out->handle_, call->params,
                                                 call->workspace_bytes, i));
    out->workspace_bytes_ =
        std::max<uint64_t>(out->workspace_bytes_, out->setups_[i]->workspace_bytes);
    if (call->sizes.empty()) continue;
    if (!exe || &exe->launches != &launches)
      return internal_error("conv launch {} has run-time sizes, but no shape ranges were given", i);
    out->varying_[i] = true;
    // The workspace for the range: what the set-ups at each profile's
    // corners need (each within the call's limit); other shapes choose
    // within it (setup_at).
    ASSIGN_OR_RETURN(auto corners, conv_params_at_profile_corners(*exe, i));
    for (const ConvParams& at : corners) {
      if (at == call->params) continue;
      ASSIGN_OR_RETURN(const ConvSetup* s,
                       out->at_shapes_.get(engine::encode_conv_params(at), [&] {
                         return setup_conv(api, out->handle_, at, call->workspace_bytes, i);
                       }));
      out->workspace_bytes_ = std::max<uint64_t>(out->workspace_bytes_, s->workspace_bytes);
    }
  }
  return out;
}

Expected<const ConvSetup*> EngineConvs::setup_at(size_t launch, const ConvParams& at) const {
  const ConvSetup* built = setup(launch);
  if (!built) return internal_error("launch {} is not a conv", launch);
  if (at == built->params) return built;
  if (launch >= varying_.size() || !varying_[launch])
    return internal_error("conv launch {} has fixed sizes ({}), not {}", launch,
                          engine::describe_conv(built->params), engine::describe_conv(at));
  return at_shapes_.get(engine::encode_conv_params(at), [&] {
    return setup_conv(*api_, handle_, at, workspace_bytes_, launch);
  });
}

EngineConvs::~EngineConvs() {
  setups_.clear();  // descriptors before the handle
  at_shapes_.clear();
  if (api_ && handle_) api_->cudnnDestroy(handle_);
}

Expected<std::unique_ptr<ContextConvs>> ContextConvs::create(const EngineConvs& engine,
                                                             const DriverApi& driver) {
  auto out = std::unique_ptr<ContextConvs>(new ContextConvs());
  out->engine_ = &engine;
  if (!engine.api()) return out;  // no convolutions
  out->driver_ = &driver;
  const CudnnApi& api = *engine.api();
  RETURN_IF_ERROR(check_cudnn(api, api.cudnnCreate(&out->handle_), "cudnnCreate"));
  if (engine.workspace_bytes() > 0)
    RETURN_IF_ERROR(device_alloc(driver, &out->workspace_, engine.workspace_bytes(),
                                 "allocating the cuDNN workspace"));
  return out;
}

ContextConvs::~ContextConvs() {
  if (!engine_ || !engine_->api()) return;
  if (handle_) engine_->api()->cudnnDestroy(handle_);
  if (workspace_) driver_->cuMemFree(workspace_);
}

// One conv as the runtime runs it: the fused call when set up so (falling
// back for good when cuDNN refuses it), else the convolution, then the bias,
// residual and ReLU. The handle's stream is the caller's.
Status enqueue_conv(const CudnnApi& api, cudnnHandle_t h, const ConvSetup& s,
                    const ConvOperands& o) {
  const ConvParams& p = s.params;
  const ConvDescriptors& d = *s.desc;
  const float one = 1.0f, zero = 0.0f;
  if (s.fused && s.fused_refused.load(std::memory_order_relaxed) == 0) {
    // Without a residual, z is y with alpha2 = 0 (cuDNN then does not read it).
    const float alpha2 = o.z ? 1.0f : 0.0f;
    const cudnnStatus_t st = api.cudnnConvolutionBiasActivationForward(
        h, &one, d.x, o.x, d.w, o.w, d.conv, static_cast<cudnnConvolutionFwdAlgo_t>(s.algorithm),
        o.workspace, s.workspace_bytes, &alpha2, d.y, o.z ? o.z : o.y, d.bias, o.bias, d.act, d.y,
        o.y);
    // BAD_PARAM (2xxx) or NOT_SUPPORTED (3xxx): no fused kernel for this case.
    if (st < CUDNN_STATUS_BAD_PARAM || st >= CUDNN_STATUS_INTERNAL_ERROR)
      return check_cudnn(api, st, "cudnnConvolutionBiasActivationForward");
    s.fused_refused.store(static_cast<int>(st), std::memory_order_relaxed);
  }
  if (o.z == o.y) return internal_error("the residual shares the output's memory");
  if (p.op == ConvOp::kForward) {
    RETURN_IF_ERROR(
        check_cudnn(api,
                    api.cudnnConvolutionForward(h, &one, d.x, o.x, d.w, o.w, d.conv,
                                                static_cast<cudnnConvolutionFwdAlgo_t>(s.algorithm),
                                                o.workspace, s.workspace_bytes, &zero, d.y, o.y),
                    "cudnnConvolutionForward"));
  } else {
    RETURN_IF_ERROR(check_cudnn(
        api,
        api.cudnnConvolutionBackwardData(h, &one, d.w, o.w, d.x, o.x, d.conv,
                                         static_cast<cudnnConvolutionBwdDataAlgo_t>(s.algorithm),
                                         o.workspace, s.workspace_bytes, &zero, d.y, o.y),
        "cudnnConvolutionBackwardData"));
  }
  if (o.bias)
    RETURN_IF_ERROR(check_cudnn(api, api.cudnnAddTensor(h, &one, d.bias, o.bias, &one, d.y, o.y),
                                "cudnnAddTensor (bias)"));
  if (o.z)
    RETURN_IF_ERROR(check_cudnn(api, api.cudnnAddTensor(h, &one, d.y, o.z, &one, d.y, o.y),
                                "cudnnAddTensor (residual)"));
  if (p.activation == ConvActivation::kRelu)
    RETURN_IF_ERROR(
        check_cudnn(api, api.cudnnActivationForward(h, d.act, &one, d.y, o.y, &zero, d.y, o.y),
                    "cudnnActivationForward (ReLU)"));
  return Status::ok_status();
}

Status ContextConvs::run(size_t launch, const std::vector<CUdeviceptr>& args, CUstream stream,
                         const ConvSetup* at_shape) const {
  const ConvSetup* s = at_shape ? at_shape : engine_->setup(launch);
  if (!s || !handle_) return internal_error("conv launch {} is not set up", launch);
  const ConvParams& p = s->params;
  if (args.size() != static_cast<size_t>(p.num_args()))
    return internal_error("conv launch {} got {} arguments, not {}", launch, args.size(),
                          p.num_args());
  const CudnnApi& api = *engine_->api();
  const std::string where = fmt::format("cuDNN conv (launch {})", launch);
  RETURN_IF_ERROR(check_cudnn(
      api, api.cudnnSetStream(handle_, reinterpret_cast<cudaStream_t>(stream)), "cudnnSetStream"));
  ConvOperands o;
  o.x = ptr(args[0]);
  o.w = ptr(args[1]);
  o.bias = p.has_bias ? ptr(args[static_cast<size_t>(p.bias_arg())]) : nullptr;
  o.z = p.has_residual ? ptr(args[static_cast<size_t>(p.residual_arg())]) : nullptr;
  o.y = ptr(args[static_cast<size_t>(p.y_arg())]);
  o.workspace = ptr(workspace_);
  return enqueue_conv(api, handle_, *s, o).with_context(where);
}

// The median GPU time of one `enqueue()` call (which enqueues on `stream`),
// measured as the engine runs it: captured into a CUDA graph and replayed,
// so the host's per-call cost (large for cuDNN's fused call, and different
// per algorithm) does not count; timed call by call, a 30 us convolution
// measured 200 us. 3 warm-up calls outside capture first (cuDNN builds its
// plans there, as the runtime's warm-up run does), then the median of 7
// replays of 5 captured calls.
template <typename Enqueue>
Expected<float> time_captured(const DriverApi& a, CUstream stream, Enqueue enqueue) {
  constexpr int kWarmUp = 3, kSamples = 7, kCallsPerGraph = 5;
  CUevent start = nullptr, stop = nullptr;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  auto body = [&]() -> Expected<float> {
    GRAPHC_CU(a, cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
    GRAPHC_CU(a, cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
    for (int i = 0; i < kWarmUp; ++i) RETURN_IF_ERROR(enqueue());
    GRAPHC_CU(a, cuStreamSynchronize(stream), "the warm-up calls");
    GRAPHC_CU(a, cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
              "cuStreamBeginCapture");
    Status captured = Status::ok_status();
    for (int i = 0; i < kCallsPerGraph && captured.ok(); ++i) captured = enqueue();
    const CUresult ended = a.cuStreamEndCapture(stream, &graph);
    RETURN_IF_ERROR(captured.with_context("capturing the calls into a CUDA graph"));
    RETURN_IF_ERROR(check_cuda(a, ended, "cuStreamEndCapture"));
    GRAPHC_CU(a, cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags");
    GRAPHC_CU(a, cuGraphLaunch(exec, stream), "cuGraphLaunch");  // first replay uploads it
    std::vector<float> samples;
    for (int s = 0; s < kSamples; ++s) {
      GRAPHC_CU(a, cuEventRecord(start, stream), "cuEventRecord");
      GRAPHC_CU(a, cuGraphLaunch(exec, stream), "cuGraphLaunch");
      GRAPHC_CU(a, cuEventRecord(stop, stream), "cuEventRecord");
      GRAPHC_CU(a, cuEventSynchronize(stop), "cuEventSynchronize");
      float ms = 0;
      GRAPHC_CU(a, cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
      samples.push_back(ms / kCallsPerGraph);
    }
    std::nth_element(samples.begin(), samples.begin() + kSamples / 2, samples.end());
    return samples[kSamples / 2];
  };
  auto result = body();
  if (exec) a.cuGraphExecDestroy(exec);
  if (graph) a.cuGraphDestroy(graph);
  if (start) a.cuEventDestroy(start);
  if (stop) a.cuEventDestroy(stop);
  return result;
}

Expected<std::vector<ConvAlgoTiming>> time_conv_algorithms(const ConvParams& p,
                                                           uint64_t workspace_limit, int device) {
  ASSIGN_OR_RETURN(const DriverApi* driver, load_driver());
  RETURN_IF_ERROR(device_usable());
  const DriverApi& a = *driver;
  ASSIGN_OR_RETURN(const CudnnApi* api_ptr, load_cudnn());
  const CudnnApi& api = *api_ptr;
  CUdevice dev = 0;
  GRAPHC_CU(a, cuDeviceGet(&dev, device), "cuDeviceGet");
  CUcontext ctx = nullptr;
  GRAPHC_CU(a, cuDevicePrimaryCtxRetain(&ctx, dev), "retaining the primary context");
  // Everything acquired below is released on every path.
  cudnnHandle_t h = nullptr;
  CUstream stream = nullptr;
  std::vector<CUdeviceptr> buffers;
  std::unique_ptr<ConvDescriptors> desc;
  auto body = [&]() -> Expected<std::vector<ConvAlgoTiming>> {
    GRAPHC_CU(a, cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    RETURN_IF_ERROR(check_cudnn(api, api.cudnnCreate(&h), "cudnnCreate"));
    ASSIGN_OR_RETURN(desc, make_conv_descriptors(api, p));
    const size_t elem = p.dtype == 1 ? 4 : 2;
    auto alloc = [&](uint64_t bytes, const char* what) -> Expected<CUdeviceptr> {
      CUdeviceptr d = 0;
      RETURN_IF_ERROR(device_alloc(a, &d, std::max<uint64_t>(bytes, 1), what));
      buffers.push_back(d);
      // Finite values (0x3c bytes: ~0.0115 in fp32/bf16, ~1.06 in fp16), not NaN garbage.
      GRAPHC_CU(a, cuMemsetD8(d, 0x3c, std::max<uint64_t>(bytes, 1)), "filling a buffer");
      return d;
    };
    ASSIGN_OR_RETURN(CUdeviceptr x, alloc(static_cast<uint64_t>(p.x_elements()) * elem, "x"));
    ASSIGN_OR_RETURN(CUdeviceptr w, alloc(static_cast<uint64_t>(p.w_elements()) * elem, "w"));
    ASSIGN_OR_RETURN(CUdeviceptr y, alloc(static_cast<uint64_t>(p.y_elements()) * elem, "y"));
    ASSIGN_OR_RETURN(CUdeviceptr ws, alloc(workspace_limit, "the workspace"));
    RETURN_IF_ERROR(check_cudnn(api, api.cudnnSetConvolutionMathType(desc->conv, requested_math(p)),
                                "cudnnSetConvolutionMathType"));
    std::vector<ConvAlgoTiming> out;
    auto add = [&](int algo, cudnnStatus_t st, float ms, size_t memory, cudnnMathType_t math) {
      ConvAlgoTiming t;
      t.algorithm = algo;
      t.ok = st == CUDNN_STATUS_SUCCESS;
      t.ms = ms;
      t.workspace_bytes = memory;
      t.math_type = static_cast<int>(math);
      t.status = api.cudnnGetErrorString(st);
      out.push_back(std::move(t));
    };
    int found = 0;
    if (p.op == ConvOp::kForward) {
      cudnnConvolutionFwdAlgoPerf_t r[CUDNN_CONVOLUTION_FWD_ALGO_COUNT] = {};
      RETURN_IF_ERROR(
          check_cudnn(api,
                      api.cudnnFindConvolutionForwardAlgorithmEx(
                          h, desc->x, ptr(x), desc->w, ptr(w), desc->conv, desc->y, ptr(y),
                          CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, r, ptr(ws), workspace_limit),
                      "cudnnFindConvolutionForwardAlgorithmEx"));
      for (int i = 0; i < found; ++i)
        add(static_cast<int>(r[i].algo), r[i].status, r[i].time, r[i].memory, r[i].mathType);
    } else {
      cudnnConvolutionBwdDataAlgoPerf_t r[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT] = {};
      RETURN_IF_ERROR(check_cudnn(
          api,
          api.cudnnFindConvolutionBackwardDataAlgorithmEx(
              h, desc->w, ptr(w), desc->x, ptr(x), desc->conv, desc->y, ptr(y),
              CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &found, r, ptr(ws), workspace_limit),
          "cudnnFindConvolutionBackwardDataAlgorithmEx"));
      for (int i = 0; i < found; ++i)
        add(static_cast<int>(r[i].algo), r[i].status, r[i].time, r[i].memory, r[i].mathType);
    }
    for (ConvAlgoTiming& t : out)
      if (t.ok && !full_precision_algorithm(p.op, t.algorithm)) {
        t.ok = false;
        t.status = "FFT/Winograd: reduced precision, never recorded";
      }
    // Strict fp32 must not record an algorithm that ran on tensor cores.
    if (strict_fp32(p))
      for (ConvAlgoTiming& t : out)
        if (t.ok && t.math_type != CUDNN_FMA_MATH && t.math_type != CUDNN_DEFAULT_MATH) {
          t.ok = false;
          t.status = "uses tensor-core math, not allowed for fp32 without --allow-tf32";
        }
    // cuDNN timed the bare convolution, call by call; the engine replays the
    // fused call (or conv + bias + residual + ReLU) from a CUDA graph. On the
    // H100 the two rankings differed (an fp16 NHWC ResNet-50 tuned on them ran
    // 9x slower), so every candidate is timed again as the engine runs it
    // (enqueue_conv, replayed from a graph), and that time decides.
    void* bias = nullptr;
    void* z = nullptr;
    if (p.has_bias) {
      ASSIGN_OR_RETURN(CUdeviceptr b, alloc(static_cast<uint64_t>(p.k) * elem, "the bias"));
      bias = ptr(b);
    }
    if (p.has_residual) {
      ASSIGN_OR_RETURN(CUdeviceptr r, alloc(static_cast<uint64_t>(p.y_elements()) * elem, "z"));
      z = ptr(r);
    }
    // The fills ran on the legacy stream, which a non-blocking stream does not wait for.
    GRAPHC_CU(a, cuCtxSynchronize(), "filling the timing buffers");
    GRAPHC_CU(a, cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    RETURN_IF_ERROR(check_cudnn(api, api.cudnnSetStream(h, reinterpret_cast<cudaStream_t>(stream)),
                                "cudnnSetStream"));
    for (ConvAlgoTiming& t : out) {
      if (!t.ok) continue;
      t.bare_ms = t.ms;
      ConvSetup setup;
      setup.params = p;
      setup.params.algorithm = t.algorithm;
      ASSIGN_OR_RETURN(setup.desc, make_conv_descriptors(api, setup.params));
      setup.algorithm = t.algorithm;
      setup.workspace_bytes = t.workspace_bytes;
      setup.fused = uses_fused_call(p, t.algorithm);
      const ConvOperands o{ptr(x), ptr(w), bias, z, ptr(y), ptr(ws)};
      auto timed = time_captured(a, stream, [&] { return enqueue_conv(api, h, setup, o); });
      if (!timed.ok()) {
        t.ok = false;
        t.status = "failed as the engine runs it: " + timed.status().message();
        continue;
      }
      t.ms = *timed;
      t.fused = setup.fused && setup.fused_refused.load() == 0;
    }
    std::stable_sort(out.begin(), out.end(), [](const ConvAlgoTiming& l, const ConvAlgoTiming& r) {
      if (l.ok != r.ok) return l.ok;
      return l.ok && l.ms < r.ms;
    });
    GRAPHC_CU(a, cuCtxSynchronize(), "finishing the timed convolutions");
    return out;
  };
  auto result = body();
  desc.reset();
  if (h) api.cudnnDestroy(h);
  if (stream) a.cuStreamDestroy(stream);
  for (CUdeviceptr b : buffers) a.cuMemFree(b);
  a.cuDevicePrimaryCtxRelease(dev);
  return result;
}

}  // namespace graphc::runtime
