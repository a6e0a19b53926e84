#include "runtime/cublaslt.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>

#include "runtime/cublaslt_algorithm.h"
#include "runtime/warnings.h"

namespace graphc::runtime {

namespace {

using engine::MatmulEpilogue;
using engine::MatmulParams;

constexpr const char* kDefaultLibrary = "libcublasLt.so.13";
constexpr int kHeuristicResults = 8;

cublasLtEpilogue_t epilogue_of(const MatmulParams& p) {
  switch (p.epilogue) {
    case MatmulEpilogue::kRelu:
      return p.has_bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    case MatmulEpilogue::kGeluTanh:
      return p.has_bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    case MatmulEpilogue::kNone: break;
  }
  return p.has_bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

template <typename T>
Status set_layout(const CublasLtApi& lt, cublasLtMatrixLayout_t l,
                  cublasLtMatrixLayoutAttribute_t a, T v, const char* what) {
  return check_cublaslt(lt, lt.cublasLtMatrixLayoutSetAttribute(l, a, &v, sizeof v), what);
}

// A column-major rows x cols layout with leading dim ld, `batch` matrices `stride` apart.
Status make_layout(const CublasLtApi& lt, cublasLtMatrixLayout_t* out, const MatmulParams& p,
                   cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
  RETURN_IF_ERROR(check_cublaslt(
      lt,
      lt.cublasLtMatrixLayoutCreate(out, type, static_cast<uint64_t>(rows),
                                    static_cast<uint64_t>(cols), ld),
      "cublasLtMatrixLayoutCreate"));
  if (p.batch > 1) {
    RETURN_IF_ERROR(set_layout(lt, *out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                               static_cast<int32_t>(p.batch), "setting the batch count"));
    RETURN_IF_ERROR(set_layout(lt, *out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, stride,
                               "setting the batch stride"));
  }
  return Status::ok_status();
}

template <typename T>
Status set_desc(const CublasLtApi& lt, cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a,
                T v, const char* what) {
  return check_cublaslt(lt, lt.cublasLtMatmulDescSetAttribute(d, a, &v, sizeof v), what);
}

Expected<cublasLtMatmulDesc_t> make_desc_impl(const CublasLtApi& lt, const MatmulParams& p,
                                              CUdeviceptr bias, CUdeviceptr d_scale) {
  cublasLtMatmulDesc_t d = nullptr;
  RETURN_IF_ERROR(
      check_cublaslt(lt,
                     lt.cublasLtMatmulDescCreate(&d, matmul_compute_type(p), matmul_scale_type(p)),
                     "cublasLtMatmulDescCreate"));
  Status st = [&]() -> Status {
    // cuBLASLt's A is graphc's B (and B is A): see the header.
    RETURN_IF_ERROR(set_desc(lt, d, CUBLASLT_MATMUL_DESC_TRANSA,
                             p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, "setting transa"));
    RETURN_IF_ERROR(set_desc(lt, d, CUBLASLT_MATMUL_DESC_TRANSB,
                             p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, "setting transb"));
    RETURN_IF_ERROR(
        set_desc(lt, d, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue_of(p), "setting the epilogue"));
    if (p.has_bias) {
      const void* ptr = reinterpret_cast<const void*>(static_cast<uintptr_t>(bias));
      RETURN_IF_ERROR(
          set_desc(lt, d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, ptr, "setting the bias pointer"));
      // cuBLASLt's default bias type is D's; a float8 D takes C's (float16/bfloat16).
      if (p.fp8())
        RETURN_IF_ERROR(set_desc(lt, d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                 static_cast<int32_t>(matmul_c_type(p)), "setting the bias type"));
    }
    if (p.fp8_output()) {
      // cuBLASLt multiplies the epilogue's float32 result by *d_scale (the
      // QuantizeLinear's 1 / y_scale) before rounding to e4m3; no amax.
      const void* ptr = reinterpret_cast<const void*>(static_cast<uintptr_t>(d_scale));
      RETURN_IF_ERROR(
          set_desc(lt, d, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, ptr, "setting the D scale"));
    }
    return Status::ok_status();
  }();
  if (!st.ok()) {
    lt.cublasLtMatmulDescDestroy(d);
    return st;
  }
  return d;
}

// The engine's recorded algorithm when it runs here, else the heuristic's
// first choice (with a warning when a recorded one was refused).
// `p`: the call's parameters (at one M, for a call whose M varies); the
// recorded algorithm is tried only where `use_recorded` (it was tuned at the
// M the engine was built at); `workspace_limit`: what the algorithm may use.
Expected<std::unique_ptr<MatmulSetup>> setup_matmul(const CublasLtApi& lt, cublasLtHandle_t handle,
                                                    const MatmulLaunch& call, const MatmulParams& p,
                                                    size_t index, bool use_recorded,
                                                    uint64_t workspace_limit) {
  const std::string what =
      fmt::format("cuBLASLt matmul (launch {}: {})", index, engine::describe_matmul(p));
  auto made = make_matmul_setup(lt, p);
  if (!made.ok()) return made.status().with_context(what);
  std::unique_ptr<MatmulSetup> s = std::move(*made);
  // Heuristics and checks read the bias and D scale pointers' alignment only:
  // every slot is 256-byte aligned.
  auto made_desc = make_desc_impl(lt, p, 256, 256);
  if (!made_desc.ok()) return made_desc.status().with_context(what);
  cublasLtMatmulDesc_t desc = *made_desc;
  auto pick = [&]() -> Status {
    if (call.recorded && use_recorded) {
      auto rebuilt =
          rebuild_cublaslt_algorithm(lt, handle, *s, desc, *call.recorded, workspace_limit,
                                     &s->workspace_bytes);
      if (rebuilt.ok()) {
        s->algo = *rebuilt;
        s->source = MatmulSetup::Source::kRecorded;
        return Status::ok_status();
      }
      s->source = MatmulSetup::Source::kFallback;
      s->fallback_reason = rebuilt.status().message();
      warn(fmt::format(
          "{}: the engine's recorded algorithm ({}) cannot run on this GPU/library: {}; using "
          "cuBLASLt's heuristic instead (rebuild the engine with --tune on this GPU)",
          what, engine::describe_cublaslt_algorithm(*call.recorded), s->fallback_reason));
    }
    ASSIGN_OR_RETURN(auto results,
                     matmul_heuristics(lt, handle, *s, desc, workspace_limit, kHeuristicResults));
    // Engines from before recorded configs may store a heuristic index.
    const size_t chosen = use_recorded && !call.recorded && call.heuristic_index >= 0 &&
                                  static_cast<size_t>(call.heuristic_index) < results.size()
                              ? static_cast<size_t>(call.heuristic_index)
                              : 0;
    s->algo = results[chosen].algo;
    s->workspace_bytes = results[chosen].workspaceSize;
    return Status::ok_status();
  };
  Status st = pick();
  lt.cublasLtMatmulDescDestroy(desc);
  if (!st.ok()) return st.with_context(what);
  return s;
}

}  // namespace

Expected<CublasLtApi> load_cublaslt_from(const std::string& path) {
  void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = ::dlerror();
    return unsupported(
        "this engine runs matmuls through cuBLASLt, but {} could not be loaded ({}); install "
        "cuBLAS 13 or set GRAPHC_CUBLASLT_PATH, or rebuild the engine with --gemm generated",
        path, err ? err : "unknown error");
  }
  CublasLtApi api;
#define GRAPHC_LT_LOAD(name)                                            \
  api.name = reinterpret_cast<decltype(api.name)>(::dlsym(lib, #name)); \
  if (!api.name) return unsupported("{} lacks {} (graphc needs cuBLASLt 13)", path, #name);
  GRAPHC_CUBLASLT_FUNCTIONS(GRAPHC_LT_LOAD)
#undef GRAPHC_LT_LOAD
  return api;
}

Expected<const CublasLtApi*> load_cublaslt() {
  static const Expected<CublasLtApi> loaded = [] {
    const char* env = std::getenv("GRAPHC_CUBLASLT_PATH");
    return load_cublaslt_from(env && *env ? env : kDefaultLibrary);
  }();
  if (!loaded.ok()) return loaded.status();
  return &*loaded;
}

Status check_cublaslt(const CublasLtApi& api, cublasStatus_t status, const std::string& what) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::ok_status();
  const char* name = api.cublasLtGetStatusName ? api.cublasLtGetStatusName(status) : nullptr;
  const char* text = api.cublasLtGetStatusString ? api.cublasLtGetStatusString(status) : nullptr;
  return device_error("{}: cuBLASLt error {} ({})", what, name ? name : std::to_string(status),
                      text ? text : "");
}

MatmulSetup::~MatmulSetup() {
  if (!api) return;
  for (cublasLtMatrixLayout_t l : {a, b, c, d})
    if (l) api->cublasLtMatrixLayoutDestroy(l);
}

Expected<std::unique_ptr<MatmulSetup>> make_matmul_setup(const CublasLtApi& lt,
                                                         const MatmulParams& p) {
  auto s = std::make_unique<MatmulSetup>();
  s->api = &lt;  // from here on ~MatmulSetup destroys what was made
  s->params = p;
  s->alpha = static_cast<float>(p.alpha);
  s->beta = static_cast<float>(p.beta);
  // graphc's B: stored K x N (or N x K when trans_b), row-major = column-major N x K (K x N).
  // An int8 matmul is cuBLASLt's "TN" IMMA form: graphc's B stored N x K
  // (trans_b) is its A transposed, int32 C and D.
  const cudaDataType_t in = matmul_data_type(p), out = matmul_output_type(p);
  RETURN_IF_ERROR(make_layout(lt, &s->a, p, in, p.trans_b ? p.k : p.n, p.trans_b ? p.n : p.k,
                              p.ldb, p.stride_b));
  RETURN_IF_ERROR(make_layout(lt, &s->b, p, in, p.trans_a ? p.m : p.k, p.trans_a ? p.k : p.m,
                              p.lda, p.stride_a));
  RETURN_IF_ERROR(make_layout(lt, &s->d, p, out, p.n, p.m, p.ldc, p.stride_d));
  // C's layout: its own where it has another type than D (a float8 D), even
  // unread (beta 0); else D's serves.
  const cudaDataType_t c_type = matmul_c_type(p);
  if (p.has_c || c_type != out)
    RETURN_IF_ERROR(make_layout(lt, &s->c, p, c_type, p.n, p.m, p.ldc, p.stride_c));
  return s;
}

Expected<cublasLtMatmulDesc_t> make_matmul_desc(const CublasLtApi& lt, const MatmulParams& p,
                                                CUdeviceptr bias, CUdeviceptr d_scale) {
  return make_desc_impl(lt, p, bias, d_scale);
}

Expected<std::vector<cublasLtMatmulHeuristicResult_t>> matmul_heuristics(
    const CublasLtApi& lt, cublasLtHandle_t handle, const MatmulSetup& s, cublasLtMatmulDesc_t desc,
    uint64_t workspace_limit, int count) {
  cublasLtMatmulPreference_t pref = nullptr;
  RETURN_IF_ERROR(check_cublaslt(lt, lt.cublasLtMatmulPreferenceCreate(&pref),
                                 "cublasLtMatmulPreferenceCreate"));
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(std::max(count, 1)));
  int found = 0;
  Status st = check_cublaslt(
      lt,
      lt.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                              &workspace_limit, sizeof workspace_limit),
      "setting the workspace limit");
  if (st.ok())
    st = check_cublaslt(
        lt,
        lt.cublasLtMatmulAlgoGetHeuristic(handle, desc, s.a, s.b, s.c ? s.c : s.d, s.d, pref,
                                          static_cast<int>(results.size()), results.data(), &found),
        "cublasLtMatmulAlgoGetHeuristic");
  lt.cublasLtMatmulPreferenceDestroy(pref);
  RETURN_IF_ERROR(st);
  results.resize(static_cast<size_t>(std::clamp(found, 0, static_cast<int>(results.size()))));
  std::erase_if(results, [](const cublasLtMatmulHeuristicResult_t& r) {
    return r.state != CUBLAS_STATUS_SUCCESS;
  });
  if (results.empty()) return unsupported("cuBLASLt has no algorithm for this matmul on this GPU");
  return results;
}

Expected<std::unique_ptr<EngineMatmuls>> EngineMatmuls::create(
    const std::vector<Launch>& launches) {
  auto out = std::unique_ptr<EngineMatmuls>(new EngineMatmuls());
  out->setups_.resize(launches.size());
  bool any = false;
  for (const Launch& l : launches) any |= l.matmul() != nullptr;
  if (!any) return out;
  ASSIGN_OR_RETURN(out->api_, load_cublaslt());
  const CublasLtApi& lt = *out->api_;
  RETURN_IF_ERROR(check_cublaslt(lt, lt.cublasLtCreate(&out->handle_), "cublasLtCreate"));
  out->varying_.resize(launches.size());
  for (size_t i = 0; i < launches.size(); ++i) {
    const MatmulLaunch* call = launches[i].matmul();
    if (!call) continue;
    ASSIGN_OR_RETURN(out->setups_[i], setup_matmul(lt, out->handle_, *call, call->params, i,
                                                   /*use_recorded=*/true, call->workspace_bytes));
    // Sized to what the chosen algorithms need, not to the calls' limits;
    // except where M varies: the algorithm at another M may want up to the limit.
    out->workspace_bytes_ = std::max(out->workspace_bytes_, out->setups_[i]->workspace_bytes);
    if (call->m_size >= 0) {
      out->varying_[i] = *call;
      out->workspace_bytes_ = std::max(out->workspace_bytes_, call->workspace_bytes);
    }
  }
  return out;
}

Expected<const MatmulSetup*> EngineMatmuls::setup_at(size_t launch, int64_t m) const {
  if (launch >= setups_.size() || !setups_[launch])
    return internal_error("launch {} is not a matmul", launch);
  const MatmulSetup* built = setups_[launch].get();
  if (m == built->params.m) return built;
  if (launch >= varying_.size() || !varying_[launch])
    return internal_error("matmul launch {} has a fixed M of {}, not {}", launch,
                          built->params.m, m);
  if (m < 1) return invalid_argument("matmul launch {}: M = {} at this shape", launch, m);
  const MatmulLaunch& call = *varying_[launch];
  MatmulParams at = call.params;
  at.m = m;
  std::string key = engine::encode_matmul_params(at);
  std::lock_guard<std::mutex> lock(at_rows_mutex_);
  auto found = at_rows_.find(key);
  if (found != at_rows_.end()) return found->second.get();
  ASSIGN_OR_RETURN(auto made, setup_matmul(*api_, handle_, call, at, launch,
                                           /*use_recorded=*/false, workspace_bytes_));
  return at_rows_.emplace(std::move(key), std::move(made)).first->second.get();
}

EngineMatmuls::~EngineMatmuls() {
  setups_.clear();  // layouts before the handle
  at_rows_.clear();
  if (api_ && handle_) api_->cublasLtDestroy(handle_);
}

Expected<std::unique_ptr<ContextMatmuls>> ContextMatmuls::create(const EngineMatmuls& engine,
                                                                 const DriverApi& driver) {
  auto out = std::unique_ptr<ContextMatmuls>(new ContextMatmuls());
  out->engine_ = &engine;
  if (!engine.api()) return out;  // no matmuls
  const CublasLtApi& lt = *engine.api();
  out->driver_ = &driver;
  RETURN_IF_ERROR(check_cublaslt(lt, lt.cublasLtCreate(&out->handle_), "cublasLtCreate"));
  if (engine.workspace_bytes() > 0)
    RETURN_IF_ERROR(device_alloc(driver, &out->workspace_, engine.workspace_bytes(),
                                 "allocating the cuBLASLt workspace"));
  // The float8 D scales (D_SCALE_POINTER takes device memory): one float per
  // launch that has one, uploaded once; the descriptors point into it.
  std::vector<float> scales;
  for (size_t i = 0; i < engine.launches(); ++i) {
    const MatmulSetup* s = engine.setup(i);
    if (!s || !s->params.fp8_output()) continue;
    out->d_scale_index_.resize(engine.launches(), -1);
    out->d_scale_index_[i] = static_cast<int64_t>(scales.size());
    scales.push_back(static_cast<float>(s->params.d_scale));
  }
  if (!scales.empty()) {
    const size_t bytes = scales.size() * sizeof(float);
    RETURN_IF_ERROR(device_alloc(driver, &out->d_scales_, bytes, "allocating the float8 D scales"));
    if (driver.cuMemcpyHtoD(out->d_scales_, scales.data(), bytes) != CUDA_SUCCESS)
      return device_error("uploading the float8 D scales failed");
  }
  return out;
}

ContextMatmuls::~ContextMatmuls() {
  if (!engine_ || !engine_->api()) return;
  for (cublasLtMatmulDesc_t d : descs_)
    if (d) engine_->api()->cublasLtMatmulDescDestroy(d);
  if (handle_) engine_->api()->cublasLtDestroy(handle_);
  if (workspace_) driver_->cuMemFree(workspace_);
  if (d_scales_) driver_->cuMemFree(d_scales_);
}

Status ContextMatmuls::set_bias(size_t launch, CUdeviceptr bias) {
  const MatmulSetup* s = engine_->setup(launch);
  if (!s) return internal_error("launch {} is not a matmul", launch);
  descs_.resize(std::max(descs_.size(), launch + 1), nullptr);
  if (descs_[launch]) {
    engine_->api()->cublasLtMatmulDescDestroy(descs_[launch]);
    descs_[launch] = nullptr;
  }
  const int64_t scale = launch < d_scale_index_.size() ? d_scale_index_[launch] : -1;
  const CUdeviceptr d_scale =
      scale < 0 ? 0 : d_scales_ + static_cast<CUdeviceptr>(scale) * sizeof(float);
  ASSIGN_OR_RETURN(descs_[launch], make_desc_impl(*engine_->api(), s->params, bias, d_scale));
  return Status::ok_status();
}

Status ContextMatmuls::run(size_t launch, const std::vector<CUdeviceptr>& args, CUstream stream,
                           const MatmulSetup* at_shape) const {
  const MatmulSetup* s = at_shape ? at_shape : engine_->setup(launch);
  if (!s || launch >= descs_.size() || !descs_[launch])
    return internal_error("matmul launch {} is not set up", launch);
  const MatmulParams& p = s->params;
  auto ptr = [&](int arg) {
    return reinterpret_cast<void*>(static_cast<uintptr_t>(args[static_cast<size_t>(arg)]));
  };
  void* d = ptr(p.d_arg());
  const void* c = s->c_address(p.has_c ? ptr(p.c_arg()) : nullptr, d);
  return check_cublaslt(*engine_->api(),
                        engine_->api()->cublasLtMatmul(
                            handle_, descs_[launch], s->alpha_ptr(), ptr(1), s->a, ptr(0), s->b,
                            s->beta_ptr(), c, s->c_layout(), d, s->d, &s->algo,
                            reinterpret_cast<void*>(static_cast<uintptr_t>(workspace_)),
                            engine_->workspace_bytes(), reinterpret_cast<cudaStream_t>(stream)),
                        fmt::format("cublasLtMatmul (launch {})", launch));
}

}  // namespace graphc::runtime
