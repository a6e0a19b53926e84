#include "runtime/cudnn_sdpa.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <utility>

#include "runtime/warnings.h"

namespace graphc::runtime {

namespace {

using engine::SdpaParams;
using Dims4 = std::array<int64_t, 4>;

// The note of the last setup this thread made (last_sdpa_setup_note).
thread_local std::string t_last_note;

// Unique ids of the tensors the variant pack binds (the rest are virtual).
constexpr int64_t kUidQ = 1, kUidK = 2, kUidV = 3, kUidO = 4, kUidBias = 5, kUidSeqQ = 6,
                  kUidSeqKv = 7, kUidScale = 8, kUidNegInfPad = 9, kUidNegInfCausal = 10;
constexpr int64_t kFirstVirtualUid = 100;
// What cuDNN's frontend gives every tensor; graphc's buffers are 256-byte aligned.
constexpr int64_t kAlignment = 16;

// "...; cuDNN's last error: <text>" (empty when cuDNN has none).
// cuDNN's message for the last error of this thread, read (which clears it)
// and folded onto one line, at most `limit` characters.
std::string take_last_error(const CudnnApi& api, size_t limit = 1500) {
  char text[8192] = {};
  if (api.cudnnGetLastErrorString) api.cudnnGetLastErrorString(text, sizeof text - 1);
  std::string out;
  for (const char* c = text; *c && out.size() < limit; ++c) {
    if (*c == '\n') {
      if (!out.empty() && out.back() != ' ') out += " | ";
      continue;
    }
    out += *c;
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '|')) out.pop_back();
  return out;
}

// Reading clears it: before a step, so that what a failure reports is its own.
void drain_last_error(const CudnnApi& api) { (void)take_last_error(api, 0); }

std::string last_error(const CudnnApi& api) {
  const std::string text = take_last_error(api);
  return text.empty() ? text : "; cuDNN's last error: " + text;
}

// BAD_PARAM (2xxx) and NOT_SUPPORTED (3xxx): cuDNN refuses what it was given.
bool refused(cudnnStatus_t st) { return st >= 2000 && st < 4000; }

// OK, or "<what>: cuDNN error <code> (<name>); cuDNN's last error: <text>",
// kUnsupported when cuDNN refused, kDevice otherwise.
Status sdpa_status(const CudnnApi& api, cudnnStatus_t st, const std::string& what) {
  if (st == CUDNN_STATUS_SUCCESS) return Status::ok_status();
  const char* name = api.cudnnGetErrorString ? api.cudnnGetErrorString(st) : nullptr;
  std::string message = fmt::format("{}: cuDNN error {} ({}){}", what, static_cast<int>(st),
                                    name ? name : "", last_error(api));
  return Status(refused(st) ? ErrorCode::kUnsupported : ErrorCode::kDevice, std::move(message));
}

std::string dims_text(const Dims4& d) { return fmt::format("[{}]", fmt::join(d, ",")); }

cudnnDataType_t io_type(const SdpaParams& p) {
  return p.dtype == 16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
}

void* ptr(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

// One backend descriptor, destroyed with its owner.
class Desc {
 public:
  Desc() = default;
  Desc(const CudnnApi* api, cudnnBackendDescriptor_t d) : api_(api), d_(d) {}
  Desc(Desc&& o) noexcept : api_(o.api_), d_(std::exchange(o.d_, nullptr)) {}
  Desc& operator=(Desc&& o) noexcept {
    if (this != &o) {
      reset();
      api_ = o.api_;
      d_ = std::exchange(o.d_, nullptr);
    }
    return *this;
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  ~Desc() { reset(); }
  void reset() {
    if (d_) api_->cudnnBackendDestroyDescriptor(d_);
    d_ = nullptr;
  }
  cudnnBackendDescriptor_t release() { return std::exchange(d_, nullptr); }
  cudnnBackendDescriptor_t get() const { return d_; }

 private:
  const CudnnApi* api_ = nullptr;
  cudnnBackendDescriptor_t d_ = nullptr;
};

struct TensorSpec {
  const char* name;
  int64_t uid;
  cudnnDataType_t type;
  Dims4 dims, strides;
  bool is_virtual = false;
  bool by_value = false;
};

// Where plans are made for: a device through a cuDNN handle, or one that
// cuDNN's device-properties descriptor describes (no GPU needed).
struct Target {
  cudnnHandle_t handle = nullptr;
  cudnnBackendDescriptor_t device = nullptr;
};

#define GRAPHC_SDPA_SET(b, d, what, attr, type, count, values) \
  RETURN_IF_ERROR((b).set((d), (what), (attr), #attr, (type), (count), (values)))

}  // namespace

class SdpaPlan {
 public:
  explicit SdpaPlan(const CudnnApi& api) : api(&api) {}
  ~SdpaPlan() {  // the plan, then what it was made of, newest first
    plan.reset();
    config.reset();
    while (!owned.empty()) owned.pop_back();
  }
  SdpaPlan(const SdpaPlan&) = delete;
  SdpaPlan& operator=(const SdpaPlan&) = delete;
  const CudnnApi* api;
  // Declared in creation order: destroyed in reverse (the plan first).
  std::vector<Desc> owned;  // tensors, operations, the operation graph, engines
  Desc config;              // the engine configuration the plan runs
  Desc plan;
  cudnnBackendDescriptor_t graph = nullptr;  // in `owned`
  // The variant pack's non-virtual tensors: ids, and where each comes from
  // (an operand index, or a by-value host scalar below).
  std::vector<int64_t> uids;
  std::vector<int> sources;        // >= 0: SdpaOperands slot; < 0: -1 - index into scalars
  std::array<float, 3> scalars{};  // scale, -inf (padding), -inf (causal): stable addresses
  // cuDNN documents execution plans as unsafe to execute from several threads
  // at once; contexts on different threads serialise their (host-side) enqueues.
  mutable std::mutex execute_mutex;
};

namespace {

// Operand slots of SdpaOperands for the variant pack.
enum Slot : int { kSlotQ, kSlotK, kSlotV, kSlotBias, kSlotSeqQ, kSlotSeqKv, kSlotO };

void* operand(const SdpaOperands& o, int slot) {
  switch (slot) {
    case kSlotQ: return o.q;
    case kSlotK: return o.k;
    case kSlotV: return o.v;
    case kSlotBias: return o.bias;
    case kSlotSeqQ: return o.seq_len_q;
    case kSlotSeqKv: return o.seq_len_kv;
    default: return o.o;
  }
}

// Creates, sets and finalizes backend descriptors, keeping them in `plan`,
// every failure naming the step, the descriptor, the attribute and cuDNN's words.
class GraphBuilder {
 public:
  GraphBuilder(const CudnnApi& api, SdpaPlan& plan) : api_(api), plan_(plan) {}

  Expected<cudnnBackendDescriptor_t> make(cudnnBackendDescriptorType_t type,
                                          const std::string& what) {
    cudnnBackendDescriptor_t d = nullptr;
    RETURN_IF_ERROR(sdpa_status(
        api_, api_.cudnnBackendCreateDescriptor(type, &d),
        fmt::format("{}: cudnnBackendCreateDescriptor (type {})", what, static_cast<int>(type))));
    plan_.owned.emplace_back(&api_, d);
    return d;
  }

  Status set(cudnnBackendDescriptor_t d, const std::string& what, cudnnBackendAttributeName_t attr,
             const char* attr_name, cudnnBackendAttributeType_t type, int64_t count,
             const void* values) {
    drain_last_error(api_);
    return sdpa_status(
        api_, api_.cudnnBackendSetAttribute(d, attr, type, count, values),
        fmt::format("{}: cudnnBackendSetAttribute({}, type {}, {} element{})", what, attr_name,
                    static_cast<int>(type), count, count == 1 ? "" : "s"));
  }

  Status finalize(cudnnBackendDescriptor_t d, const std::string& what) {
    drain_last_error(api_);
    return sdpa_status(api_, api_.cudnnBackendFinalize(d),
                       fmt::format("{}: cudnnBackendFinalize", what));
  }

  Expected<cudnnBackendDescriptor_t> tensor(const TensorSpec& t) {
    const std::string what =
        fmt::format("tensor '{}' (uid {}, type {}, dims {}, strides {}{}{})", t.name, t.uid,
                    static_cast<int>(t.type), dims_text(t.dims), dims_text(t.strides),
                    t.is_virtual ? ", virtual" : "", t.by_value ? ", by value" : "");
    ASSIGN_OR_RETURN(cudnnBackendDescriptor_t d, make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, what));
    const cudnnDataType_t type = t.type;
    const int64_t uid = t.uid, alignment = kAlignment;
    const bool yes = true;
    GRAPHC_SDPA_SET(*this, d, what, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    GRAPHC_SDPA_SET(*this, d, what, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4,
                    t.dims.data());
    GRAPHC_SDPA_SET(*this, d, what, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4,
                    t.strides.data());
    GRAPHC_SDPA_SET(*this, d, what, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    GRAPHC_SDPA_SET(*this, d, what, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1,
                    &alignment);
    if (t.is_virtual)
      GRAPHC_SDPA_SET(*this, d, what, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes);
    if (t.by_value)
      GRAPHC_SDPA_SET(*this, d, what, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &yes);
    RETURN_IF_ERROR(finalize(d, what));
    return d;
  }

  // A virtual tensor with a fresh uid.
  Expected<cudnnBackendDescriptor_t> temp(const char* name, cudnnDataType_t type, const Dims4& dims,
                                          const Dims4& strides) {
    return tensor({name, next_uid_++, type, dims, strides, true, false});
  }

  // y = mode(x [, b] [, t]); `axis` for GEN_INDEX. Both alphas 1, as cuDNN's frontend sets them.
  Status pointwise(const char* name, cudnnPointwiseMode_t mode, cudnnDataType_t math,
                   cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                   cudnnBackendDescriptor_t t, cudnnBackendDescriptor_t y, int64_t axis = -1) {
    const std::string what = fmt::format("pointwise '{}' (mode {}, math type {})", name,
                                         static_cast<int>(mode), static_cast<int>(math));
    ASSIGN_OR_RETURN(cudnnBackendDescriptor_t pw,
                     make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, what + " descriptor"));
    GRAPHC_SDPA_SET(*this, pw, what, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1,
                    &mode);
    GRAPHC_SDPA_SET(*this, pw, what, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1,
                    &math);
    if (mode == CUDNN_POINTWISE_GEN_INDEX)
      GRAPHC_SDPA_SET(*this, pw, what, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
    RETURN_IF_ERROR(finalize(pw, what + " descriptor"));
    ASSIGN_OR_RETURN(cudnnBackendDescriptor_t op,
                     make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, what + " operation"));
    const std::string op_what = what + " operation";
    const float one = 1.0f;
    GRAPHC_SDPA_SET(*this, op, op_what, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw);
    GRAPHC_SDPA_SET(*this, op, op_what, CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    if (b)
      GRAPHC_SDPA_SET(*this, op, op_what, CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
    if (t)
      GRAPHC_SDPA_SET(*this, op, op_what, CUDNN_ATTR_OPERATION_POINTWISE_TDESC,
                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t);
    GRAPHC_SDPA_SET(*this, op, op_what, CUDNN_ATTR_OPERATION_POINTWISE_YDESC,
                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    GRAPHC_SDPA_SET(*this, op, op_what, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1,
                    &one);
    GRAPHC_SDPA_SET(*this, op, op_what, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1,
                    &one);
    RETURN_IF_ERROR(finalize(op, op_what));
    ops_.push_back(op);
    return Status::ok_status();
  }

  // y = reduce(x) over the dims where y has extent 1.
  Status reduction(const char* name, cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x,
                   cudnnBackendDescriptor_t y) {
    const std::string what = fmt::format("reduction '{}' (op {})", name, static_cast<int>(mode));
    const cudnnDataType_t math = CUDNN_DATA_FLOAT;
    ASSIGN_OR_RETURN(cudnnBackendDescriptor_t rd,
                     make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, what + " descriptor"));
    GRAPHC_SDPA_SET(*this, rd, what, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1,
                    &math);
    GRAPHC_SDPA_SET(*this, rd, what, CUDNN_ATTR_REDUCTION_OPERATOR,
                    CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode);
    RETURN_IF_ERROR(finalize(rd, what + " descriptor"));
    const std::string op_what = what + " operation";
    ASSIGN_OR_RETURN(cudnnBackendDescriptor_t op,
                     make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, op_what));
    GRAPHC_SDPA_SET(*this, op, op_what, CUDNN_ATTR_OPERATION_REDUCTION_XDESC,
                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    GRAPHC_SDPA_SET(*this, op, op_what, CUDNN_ATTR_OPERATION_REDUCTION_YDESC,
                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    GRAPHC_SDPA_SET(*this, op, op_what, CUDNN_ATTR_OPERATION_REDUCTION_DESC,
                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd);
    RETURN_IF_ERROR(finalize(op, op_what));
    ops_.push_back(op);
    return Status::ok_status();
  }

  // c = a · b with fp32 accumulation; the overrides (per-batch M, N, K) when given.
  Status matmul(const char* name, cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b,
                cudnnBackendDescriptor_t c, cudnnBackendDescriptor_t m_override,
                cudnnBackendDescriptor_t n_override, cudnnBackendDescriptor_t k_override) {
    const std::string what = fmt::format("matmul '{}'", name);
    const cudnnDataType_t math = CUDNN_DATA_FLOAT;
    ASSIGN_OR_RETURN(cudnnBackendDescriptor_t md,
                     make(CUDNN_BACKEND_MATMUL_DESCRIPTOR, what + " descriptor"));
    GRAPHC_SDPA_SET(*this, md, what, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &math);
    RETURN_IF_ERROR(finalize(md, what + " descriptor"));
    const std::string op_what = what + " operation";
    ASSIGN_OR_RETURN(cudnnBackendDescriptor_t op,
                     make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, op_what));
    GRAPHC_SDPA_SET(*this, op, op_what, CUDNN_ATTR_OPERATION_MATMUL_ADESC,
                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a);
    GRAPHC_SDPA_SET(*this, op, op_what, CUDNN_ATTR_OPERATION_MATMUL_BDESC,
                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
    GRAPHC_SDPA_SET(*this, op, op_what, CUDNN_ATTR_OPERATION_MATMUL_CDESC,
                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c);
    GRAPHC_SDPA_SET(*this, op, op_what, CUDNN_ATTR_OPERATION_MATMUL_DESC,
                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &md);
    if (m_override)
      GRAPHC_SDPA_SET(*this, op, op_what, CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC,
                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &m_override);
    if (n_override)
      GRAPHC_SDPA_SET(*this, op, op_what, CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC,
                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n_override);
    if (k_override)
      GRAPHC_SDPA_SET(*this, op, op_what, CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC,
                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &k_override);
    RETURN_IF_ERROR(finalize(op, op_what));
    ops_.push_back(op);
    return Status::ok_status();
  }

  const std::vector<cudnnBackendDescriptor_t>& ops() const { return ops_; }

 private:
  const CudnnApi& api_;
  SdpaPlan& plan_;
  std::vector<cudnnBackendDescriptor_t> ops_;  // in graph order
  int64_t next_uid_ = kFirstVirtualUid;
};

// The bias as cuDNN takes it: a dim the params broadcast (stride 0) has
// extent 1, and a dim of extent 1 gets the stride of a packed tensor around
// the next dim (cuDNN's frontend users pass such strides for [1, 1, Lq, Lk]).
std::pair<Dims4, Dims4> bias_layout(const SdpaParams& p) {
  Dims4 dims{p.batch, p.heads, p.seq_q, p.seq_kv};
  Dims4 strides = p.bias_strides;
  for (size_t i = 0; i < 3; ++i)
    if (strides[i] == 0) dims[i] = 1;
  for (size_t i = 3; i-- > 0;)
    if (dims[i] == 1) strides[i] = strides[i + 1] * dims[i + 1];
  return {dims, strides};
}

// Builds the operation graph (see the header) into `plan`.
Status build_graph(const CudnnApi& api, cudnnHandle_t handle, const SdpaParams& p, SdpaPlan& plan,
                   bool finalize_graph = true) {
  GraphBuilder b(api, plan);
  const cudnnDataType_t io = io_type(p);
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  const Dims4 scalar{1, 1, 1, 1};
  // cuDNN before 9.10 wants the lowest float rather than -inf for its masks
  // (as cuDNN's frontend does).
  const float neg_inf = api.cudnnGetVersion() < 91000 ? std::numeric_limits<float>::lowest()
                                                      : -std::numeric_limits<float>::infinity();
  plan.scalars = {p.scale, neg_inf, neg_inf};
  auto bind = [&](int64_t uid, int source) {
    plan.uids.push_back(uid);
    plan.sources.push_back(source);
  };

  const Dims4 score_dims{p.batch, p.heads, p.seq_q, p.seq_kv};
  const Dims4 score_strides{p.heads * p.seq_q * p.seq_kv, p.seq_q * p.seq_kv, p.seq_kv, 1};
  const Dims4 row_dims{p.batch, p.heads, p.seq_q, 1};
  const Dims4 row_strides{p.heads * p.seq_q, p.seq_q, 1, 1};

  ASSIGN_OR_RETURN(
      auto q, b.tensor({"Q", kUidQ, io, {p.batch, p.heads, p.seq_q, p.head_dim}, p.q_strides}));
  bind(kUidQ, kSlotQ);
  // cuDNN's first matmul takes Kᵀ: K's strides with the last two swapped.
  const Dims4 kt_strides{p.k_strides[0], p.k_strides[1], p.k_strides[3], p.k_strides[2]};
  ASSIGN_OR_RETURN(
      auto kt,
      b.tensor(
          {"K (transposed)", kUidK, io, {p.batch, p.kv_heads, p.head_dim, p.seq_kv}, kt_strides}));
  bind(kUidK, kSlotK);
  ASSIGN_OR_RETURN(
      auto v,
      b.tensor({"V", kUidV, io, {p.batch, p.kv_heads, p.seq_kv, p.value_dim}, p.v_strides}));
  bind(kUidV, kSlotV);
  ASSIGN_OR_RETURN(
      auto o, b.tensor({"O", kUidO, io, {p.batch, p.heads, p.seq_q, p.value_dim}, p.o_strides}));
  bind(kUidO, kSlotO);
  cudnnBackendDescriptor_t seq_q = nullptr, seq_kv = nullptr;
  if (p.has_seq_lens) {
    const Dims4 per_batch{p.batch, 1, 1, 1};
    ASSIGN_OR_RETURN(seq_q, b.tensor({"seq_len_q", kUidSeqQ, CUDNN_DATA_INT32, per_batch, scalar}));
    bind(kUidSeqQ, kSlotSeqQ);
    ASSIGN_OR_RETURN(seq_kv,
                     b.tensor({"seq_len_kv", kUidSeqKv, CUDNN_DATA_INT32, per_batch, scalar}));
    bind(kUidSeqKv, kSlotSeqKv);
  }

  // S = Q·Kᵀ, scaled.
  ASSIGN_OR_RETURN(auto s, b.temp("bmm1 output", f32, score_dims, score_strides));
  RETURN_IF_ERROR(b.matmul("bmm1", q, kt, s, seq_q, seq_kv, nullptr));
  ASSIGN_OR_RETURN(auto scale,
                   b.tensor({"attention scale", kUidScale, f32, scalar, scalar, false, true}));
  bind(kUidScale, -1 - 0);
  ASSIGN_OR_RETURN(auto scaled, b.temp("scaled scores", f32, score_dims, score_strides));
  RETURN_IF_ERROR(b.pointwise("attn_scale", CUDNN_POINTWISE_MUL, f32, s, scale, nullptr, scaled));
  s = scaled;

  if (p.has_bias) {
    auto [dims, strides] = bias_layout(p);
    ASSIGN_OR_RETURN(auto bias, b.tensor({"bias", kUidBias, io, dims, strides}));
    bind(kUidBias, kSlotBias);
    ASSIGN_OR_RETURN(auto biased, b.temp("biased scores", f32, score_dims, score_strides));
    RETURN_IF_ERROR(b.pointwise("bias_add", CUDNN_POINTWISE_ADD, f32, s, bias, nullptr, biased));
    s = biased;
  }

  if (p.has_seq_lens) {
    ASSIGN_OR_RETURN(auto row,
                     b.temp("padding row index", CUDNN_DATA_INT32, score_dims, score_strides));
    RETURN_IF_ERROR(b.pointwise("gen_row_idx_padding", CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32,
                                s, nullptr, nullptr, row, 2));
    ASSIGN_OR_RETURN(auto col,
                     b.temp("padding column index", CUDNN_DATA_INT32, score_dims, score_strides));
    RETURN_IF_ERROR(b.pointwise("gen_col_idx_padding", CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32,
                                s, nullptr, nullptr, col, 3));
    ASSIGN_OR_RETURN(auto row_ok,
                     b.temp("row < seq_len_q", CUDNN_DATA_BOOLEAN, score_dims, score_strides));
    RETURN_IF_ERROR(b.pointwise("lt_row_sq_padding", CUDNN_POINTWISE_CMP_LT, CUDNN_DATA_BOOLEAN,
                                row, seq_q, nullptr, row_ok));
    ASSIGN_OR_RETURN(auto col_ok,
                     b.temp("col < seq_len_kv", CUDNN_DATA_BOOLEAN, score_dims, score_strides));
    RETURN_IF_ERROR(b.pointwise("lt_col_skv_padding", CUDNN_POINTWISE_CMP_LT, CUDNN_DATA_BOOLEAN,
                                col, seq_kv, nullptr, col_ok));
    ASSIGN_OR_RETURN(auto keep,
                     b.temp("padding keep mask", CUDNN_DATA_BOOLEAN, score_dims, score_strides));
    RETURN_IF_ERROR(b.pointwise("and_row_col_padding", CUDNN_POINTWISE_LOGICAL_AND,
                                CUDNN_DATA_BOOLEAN, row_ok, col_ok, nullptr, keep));
    ASSIGN_OR_RETURN(auto fill,
                     b.tensor({"-inf (padding)", kUidNegInfPad, f32, scalar, scalar, false, true}));
    bind(kUidNegInfPad, -1 - 1);
    ASSIGN_OR_RETURN(auto masked, b.temp("padded scores", f32, score_dims, score_strides));
    RETURN_IF_ERROR(
        b.pointwise("select_padding", CUDNN_POINTWISE_BINARY_SELECT, f32, s, fill, keep, masked));
    s = masked;
  }

  if (p.causal) {
    ASSIGN_OR_RETURN(auto row,
                     b.temp("causal row index", CUDNN_DATA_INT32, score_dims, score_strides));
    RETURN_IF_ERROR(b.pointwise("gen_row_idx_causal", CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32,
                                s, nullptr, nullptr, row, 2));
    ASSIGN_OR_RETURN(auto col,
                     b.temp("causal column index", CUDNN_DATA_INT32, score_dims, score_strides));
    RETURN_IF_ERROR(b.pointwise("gen_col_idx_causal", CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32,
                                s, nullptr, nullptr, col, 3));
    ASSIGN_OR_RETURN(auto keep,
                     b.temp("row >= col", CUDNN_DATA_BOOLEAN, score_dims, score_strides));
    RETURN_IF_ERROR(b.pointwise("row_greater_than_col", CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN,
                                row, col, nullptr, keep));
    ASSIGN_OR_RETURN(
        auto fill, b.tensor({"-inf (causal)", kUidNegInfCausal, f32, scalar, scalar, false, true}));
    bind(kUidNegInfCausal, -1 - 2);
    ASSIGN_OR_RETURN(auto masked, b.temp("causal scores", f32, score_dims, score_strides));
    RETURN_IF_ERROR(
        b.pointwise("binary_select", CUDNN_POINTWISE_BINARY_SELECT, f32, s, fill, keep, masked));
    s = masked;
  }

  // Softmax with its (virtual) statistics, as the flash-attention engines expect.
  ASSIGN_OR_RETURN(auto max, b.temp("row max", f32, row_dims, row_strides));
  RETURN_IF_ERROR(b.reduction("Max", CUDNN_REDUCE_TENSOR_MAX, s, max));
  ASSIGN_OR_RETURN(auto shifted, b.temp("scores - max", f32, score_dims, score_strides));
  RETURN_IF_ERROR(b.pointwise("sub", CUDNN_POINTWISE_SUB, f32, s, max, nullptr, shifted));
  ASSIGN_OR_RETURN(auto e, b.temp("exp", f32, score_dims, score_strides));
  RETURN_IF_ERROR(b.pointwise("exp", CUDNN_POINTWISE_EXP, f32, shifted, nullptr, nullptr, e));
  ASSIGN_OR_RETURN(auto sum, b.temp("row sum", f32, row_dims, row_strides));
  RETURN_IF_ERROR(b.reduction("sum", CUDNN_REDUCE_TENSOR_ADD, e, sum));
  ASSIGN_OR_RETURN(auto log_sum, b.temp("log row sum", f32, row_dims, row_strides));
  RETURN_IF_ERROR(b.pointwise("log", CUDNN_POINTWISE_LOG, f32, sum, nullptr, nullptr, log_sum));
  ASSIGN_OR_RETURN(auto stats, b.temp("softmax stats", f32, row_dims, row_strides));
  RETURN_IF_ERROR(b.pointwise("add", CUDNN_POINTWISE_ADD, f32, max, log_sum, nullptr, stats));
  // The second matmul reads the probabilities in the I/O type (cuDNN needs its A type so).
  ASSIGN_OR_RETURN(auto probs, b.temp("softmax", io, score_dims, score_strides));
  RETURN_IF_ERROR(b.pointwise("div", CUDNN_POINTWISE_DIV, f32, e, sum, nullptr, probs));

  RETURN_IF_ERROR(b.matmul("bmm2", probs, v, o, seq_q, nullptr, seq_kv));

  const std::string what = fmt::format("operation graph ({} operations)", b.ops().size());
  ASSIGN_OR_RETURN(plan.graph, b.make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, what));
  GRAPHC_SDPA_SET(b, plan.graph, what, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                  static_cast<int64_t>(b.ops().size()), b.ops().data());
  // Without a handle (a device described by its properties, or none) cuDNN
  // finalizes the graph on the host.
  if (handle)
    GRAPHC_SDPA_SET(b, plan.graph, what, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1,
                    &handle);
  if (!finalize_graph) return Status::ok_status();
  Status finalized = b.finalize(plan.graph, what);
  if (!finalized.ok())
    return Status(finalized.code(),
                  finalized.message() + " (cuDNN has no engine for this attention graph)");
  return Status::ok_status();
}

// What an engine configuration runs: its global index and notes, for the
// setup's note; best effort (an unknown value is -1 / empty).
struct EngineInfo {
  int64_t index = -1;
  std::vector<std::string> notes;
};

EngineInfo engine_info(const CudnnApi& api, cudnnBackendDescriptor_t config) {
  EngineInfo info;
  cudnnBackendDescriptor_t eng = nullptr;
  if (api.cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) !=
      CUDNN_STATUS_SUCCESS)
    return info;
  Desc owner(&api, eng);
  int64_t n = 0;
  if (api.cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                   &eng) != CUDNN_STATUS_SUCCESS)
    return info;
  int64_t index = -1;
  if (api.cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n,
                                   &index) == CUDNN_STATUS_SUCCESS)
    info.index = index;
  cudnnBackendBehaviorNote_t behavior[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT] = {};
  n = 0;
  if (api.cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                   CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &n,
                                   behavior) == CUDNN_STATUS_SUCCESS)
    for (int64_t i = 0; i < n && i < CUDNN_BEHAVIOR_NOTE_TYPE_COUNT; ++i) {
      if (behavior[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION)
        info.notes.push_back("runtime-compiled");
      else if (behavior[i] == CUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API)
        info.notes.push_back("native CUDA graph");
    }
  cudnnBackendNumericalNote_t numeric[CUDNN_NUMERICAL_NOTE_TYPE_COUNT] = {};
  n = 0;
  if (api.cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                   CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n,
                                   numeric) == CUDNN_STATUS_SUCCESS)
    for (int64_t i = 0; i < n && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; ++i) {
      if (numeric[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC)
        info.notes.push_back("non-deterministic");
      else if (numeric[i] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)
        info.notes.push_back("reduced-precision reduction");
    }
  return info;
}

// A plan for `config` on `handle` within `limit` bytes of workspace, or why not.
struct PlanTry {
  Desc plan;
  uint64_t workspace = 0;
};
Expected<PlanTry> try_plan(const CudnnApi& api, const Target& target,
                           cudnnBackendDescriptor_t config, uint64_t limit,
                           const std::string& what) {
  drain_last_error(api);
  cudnnBackendDescriptor_t d = nullptr;
  RETURN_IF_ERROR(sdpa_status(
      api, api.cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &d),
      what + ": cudnnBackendCreateDescriptor (execution plan)"));
  PlanTry out;
  out.plan = Desc(&api, d);
  if (target.handle)
    RETURN_IF_ERROR(
        sdpa_status(api,
                    api.cudnnBackendSetAttribute(d, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                                                 CUDNN_TYPE_HANDLE, 1, &target.handle),
                    what + ": cudnnBackendSetAttribute(CUDNN_ATTR_EXECUTION_PLAN_HANDLE)"));
  else
    RETURN_IF_ERROR(
        sdpa_status(api,
                    api.cudnnBackendSetAttribute(d, CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP,
                                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &target.device),
                    what + ": cudnnBackendSetAttribute(CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP)"));
  RETURN_IF_ERROR(
      sdpa_status(api,
                  api.cudnnBackendSetAttribute(d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &config),
                  what + ": cudnnBackendSetAttribute(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG)"));
  RETURN_IF_ERROR(sdpa_status(api, api.cudnnBackendFinalize(d),
                              what + ": execution plan cudnnBackendFinalize"));
  int64_t n = 0, bytes = 0;
  RETURN_IF_ERROR(
      sdpa_status(api,
                  api.cudnnBackendGetAttribute(d, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                               CUDNN_TYPE_INT64, 1, &n, &bytes),
                  what + ": cudnnBackendGetAttribute(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE)"));
  if (bytes < 0) return internal_error("{}: cuDNN reports {} bytes of workspace", what, bytes);
  out.workspace = static_cast<uint64_t>(bytes);
  if (out.workspace > limit)
    return unsupported("{}: needs {} bytes of workspace, the call allows {}", what, bytes, limit);
  return out;
}

// The engine configuration of the params' recorded engine (no knobs set).
Expected<Desc> recorded_config(const CudnnApi& api, const Target& target, SdpaPlan& plan,
                               int64_t index) {
  drain_last_error(api);
  GraphBuilder b(api, plan);
  const std::string what = fmt::format("recorded engine {}", index);
  ASSIGN_OR_RETURN(cudnnBackendDescriptor_t eng, b.make(CUDNN_BACKEND_ENGINE_DESCRIPTOR, what));
  GRAPHC_SDPA_SET(b, eng, what, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                  &plan.graph);
  GRAPHC_SDPA_SET(b, eng, what, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &index);
  if (!target.handle)
    GRAPHC_SDPA_SET(b, eng, what, CUDNN_ATTR_ENGINE_DEVICEPROP, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                    &target.device);
  RETURN_IF_ERROR(b.finalize(eng, what));
  cudnnBackendDescriptor_t cfg = nullptr;
  RETURN_IF_ERROR(
      sdpa_status(api, api.cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg),
                  what + ": cudnnBackendCreateDescriptor (engine config)"));
  Desc config(&api, cfg);
  GRAPHC_SDPA_SET(b, cfg, what + " config", CUDNN_ATTR_ENGINECFG_ENGINE,
                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &eng);
  RETURN_IF_ERROR(b.finalize(cfg, what + " config"));
  return config;
}

// The heuristics' engine configurations for the graph in `mode`, best first.
// With none, `why_none` gets cuDNN's account (each engine's refusal in its
// support checks), the most telling message when cuDNN takes no part of a call.
Expected<std::vector<Desc>> heuristic_configs(const CudnnApi& api, const Target& target,
                                              cudnnBackendDescriptor_t graph,
                                              cudnnBackendHeurMode_t mode, const std::string& what,
                                              std::string* why_none) {
  drain_last_error(api);
  cudnnBackendDescriptor_t h = nullptr;
  RETURN_IF_ERROR(
      sdpa_status(api, api.cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &h),
                  what + ": cudnnBackendCreateDescriptor"));
  Desc heur(&api, h);
  RETURN_IF_ERROR(
      sdpa_status(api,
                  api.cudnnBackendSetAttribute(h, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph),
                  what + ": cudnnBackendSetAttribute(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH)"));
  RETURN_IF_ERROR(sdpa_status(
      api,
      api.cudnnBackendSetAttribute(h, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode),
      what + ": cudnnBackendSetAttribute(CUDNN_ATTR_ENGINEHEUR_MODE)"));
  if (!target.handle)
    RETURN_IF_ERROR(
        sdpa_status(api,
                    api.cudnnBackendSetAttribute(h, CUDNN_ATTR_ENGINEHEUR_DEVICEPROP,
                                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &target.device),
                    what + ": cudnnBackendSetAttribute(CUDNN_ATTR_ENGINEHEUR_DEVICEPROP)"));
  RETURN_IF_ERROR(sdpa_status(api, api.cudnnBackendFinalize(h), what + ": cudnnBackendFinalize"));
  int64_t count = 0;
  RETURN_IF_ERROR(
      sdpa_status(api,
                  api.cudnnBackendGetAttribute(h, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
                  what + ": cudnnBackendGetAttribute(CUDNN_ATTR_ENGINEHEUR_RESULTS, count)"));
  std::vector<Desc> configs;
  if (count <= 0) {
    *why_none = take_last_error(api, 3000);
    return configs;
  }
  count = std::min<int64_t>(count, 64);
  std::vector<cudnnBackendDescriptor_t> raw(static_cast<size_t>(count), nullptr);
  for (auto& r : raw) {
    RETURN_IF_ERROR(
        sdpa_status(api, api.cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &r),
                    what + ": cudnnBackendCreateDescriptor (engine config)"));
    configs.emplace_back(&api, r);
  }
  int64_t got = 0;
  RETURN_IF_ERROR(sdpa_status(
      api,
      api.cudnnBackendGetAttribute(h, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                   count, &got, raw.data()),
      what + ": cudnnBackendGetAttribute(CUDNN_ATTR_ENGINEHEUR_RESULTS)"));
  configs.resize(static_cast<size_t>(std::clamp<int64_t>(got, 0, count)));
  // cuDNN drops the configurations that fail its support checks here.
  if (configs.empty()) *why_none = take_last_error(api, 3000);
  return configs;
}

std::string engine_text(const EngineInfo& info) {
  std::string out = info.index >= 0 ? fmt::format("engine {}", info.index) : "engine ?";
  if (!info.notes.empty()) out += fmt::format(" ({})", fmt::join(info.notes, ", "));
  return out;
}

}  // namespace

namespace {

Expected<std::unique_ptr<SdpaSetup>> setup_for(const CudnnApi& api, const Target& target,
                                               const SdpaParams& p, uint64_t workspace_limit) {
  if (!target.handle && !target.device)
    return internal_error("a cuDNN attention plan needs a handle or a device description");
  if (std::string why = engine::sdpa_cudnn_refusal(p); !why.empty()) return unsupported("{}", why);
  auto s = std::make_unique<SdpaSetup>();
  s->params = p;
  auto plan = std::make_shared<SdpaPlan>(api);
  RETURN_IF_ERROR(build_graph(api, target.handle, p, *plan));
  const size_t version = api.cudnnGetVersion();
  std::vector<std::string> tried;
  auto accept = [&](Desc config, PlanTry made, const std::string& how) {
    const EngineInfo info = engine_info(api, config.get());
    plan->config = std::move(config);
    plan->plan = std::move(made.plan);
    s->workspace_bytes = made.workspace;
    s->engine_index = info.index;
    s->note = fmt::format("cuDNN {}: {} ({}), {} B workspace", version, engine_text(info), how,
                          made.workspace);
    if (!tried.empty()) s->note += fmt::format("; passed over: {}", fmt::join(tried, "; "));
    t_last_note = s->note;
  };
  if (p.engine >= 0) {
    auto config = recorded_config(api, target, *plan, p.engine);
    Status why = config.status();
    if (config.ok()) {
      auto made = try_plan(api, target, config->get(), workspace_limit,
                           fmt::format("recorded engine {}", p.engine));
      if (made.ok()) {
        s->recorded = true;
        accept(std::move(*config), std::move(*made), "recorded");
        s->plan = std::move(plan);
        return s;
      }
      why = made.status();
    }
    tried.push_back(why.message());
    warn(
        fmt::format("cuDNN attention: the recorded engine {} cannot run here ({}); using cuDNN's "
                    "heuristics",
                    p.engine, why.message()));
  }
  for (auto [mode, mode_name] : {std::pair{CUDNN_HEUR_MODE_A, "heuristic mode A"},
                                 {CUDNN_HEUR_MODE_FALLBACK, "fallback list"}}) {
    std::string why_none;
    auto configs = heuristic_configs(api, target, plan->graph, mode, mode_name, &why_none);
    if (!configs.ok()) {
      tried.push_back(configs.status().message());
      continue;
    }
    if (configs->empty())
      tried.push_back(fmt::format("{}: no engine configuration{}", mode_name,
                                  why_none.empty() ? "" : " (cuDNN: " + why_none + ")"));
    for (size_t i = 0; i < configs->size(); ++i) {
      const std::string what =
          fmt::format("{} candidate {} of {} ({})", mode_name, i + 1, configs->size(),
                      engine_text(engine_info(api, (*configs)[i].get())));
      auto made = try_plan(api, target, (*configs)[i].get(), workspace_limit, what);
      if (!made.ok()) {
        tried.push_back(made.status().message());
        continue;
      }
      accept(std::move((*configs)[i]), std::move(*made),
             fmt::format("{}, candidate {} of {}", mode_name, i + 1, configs->size()));
      s->plan = std::move(plan);
      return s;
    }
  }
  t_last_note = "no plan";
  return unsupported(
      "cuDNN {} has no execution plan for {} within {} bytes of workspace: {}", version,
      engine::describe_sdpa(p), workspace_limit,
      tried.empty() ? std::string("no candidates") : fmt::format("{}", fmt::join(tried, "; ")));
}

}  // namespace

std::string last_sdpa_setup_note() { return t_last_note; }

Status check_sdpa_graph(const CudnnApi& api, cudnnHandle_t handle, const SdpaParams& p,
                        bool finalize_graph) {
  SdpaPlan plan(api);
  return build_graph(api, handle, p, plan, finalize_graph);
}

Expected<std::unique_ptr<SdpaSetup>> make_sdpa_setup(const CudnnApi& api, cudnnHandle_t handle,
                                                     const SdpaParams& p,
                                                     uint64_t workspace_limit) {
  if (!handle) return internal_error("make_sdpa_setup needs a cuDNN handle");
  return setup_for(api, Target{handle, nullptr}, p, workspace_limit);
}

Expected<std::string> plan_sdpa_for_device(const CudnnApi& api, const SdpaParams& p,
                                           std::string_view device_json, uint64_t workspace_limit) {
  if (api.cudnnGetVersion() < 90800)
    return unsupported("cuDNN {} cannot describe a device without one (needs 9.8)",
                       api.cudnnGetVersion());
  cudnnBackendDescriptor_t d = nullptr;
  RETURN_IF_ERROR(
      sdpa_status(api, api.cudnnBackendCreateDescriptor(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, &d),
                  "device properties: cudnnBackendCreateDescriptor"));
  Desc device(&api, d);
  RETURN_IF_ERROR(sdpa_status(
      api,
      api.cudnnBackendSetAttribute(d, CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
                                   static_cast<int64_t>(device_json.size()), device_json.data()),
      "device properties: cudnnBackendSetAttribute(CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION)"));
  RETURN_IF_ERROR(
      sdpa_status(api, api.cudnnBackendFinalize(d), "device properties: cudnnBackendFinalize"));
  ASSIGN_OR_RETURN(auto setup, setup_for(api, Target{nullptr, d}, p, workspace_limit));
  return setup->note;
}

Status enqueue_sdpa(const CudnnApi& api, cudnnHandle_t handle, const SdpaSetup& setup,
                    const SdpaOperands& operands, cudnnBackendDescriptor_t own_plan) {
  const SdpaPlan& plan = *setup.plan;
  std::vector<void*> pointers;
  pointers.reserve(plan.uids.size());
  for (int source : plan.sources)
    pointers.push_back(source >= 0
                           ? operand(operands, source)
                           : const_cast<float*>(&plan.scalars[static_cast<size_t>(-1 - source)]));
  void* workspace = operands.workspace;
  cudnnBackendDescriptor_t vp = nullptr;
  RETURN_IF_ERROR(
      sdpa_status(api, api.cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp),
                  "variant pack: cudnnBackendCreateDescriptor"));
  Desc owner(&api, vp);
  const auto n = static_cast<int64_t>(plan.uids.size());
  RETURN_IF_ERROR(
      sdpa_status(api,
                  api.cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                                               CUDNN_TYPE_INT64, n, plan.uids.data()),
                  "variant pack: cudnnBackendSetAttribute(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS)"));
  RETURN_IF_ERROR(
      sdpa_status(api,
                  api.cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                               CUDNN_TYPE_VOID_PTR, n, pointers.data()),
                  "variant pack: cudnnBackendSetAttribute(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS)"));
  RETURN_IF_ERROR(
      sdpa_status(api,
                  api.cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                               CUDNN_TYPE_VOID_PTR, 1, &workspace),
                  "variant pack: cudnnBackendSetAttribute(CUDNN_ATTR_VARIANT_PACK_WORKSPACE)"));
  RETURN_IF_ERROR(
      sdpa_status(api, api.cudnnBackendFinalize(vp), "variant pack: cudnnBackendFinalize"));
  if (own_plan)  // a context's own plan: only its thread executes it
    return sdpa_status(api, api.cudnnBackendExecute(handle, own_plan, vp),
                       "cudnnBackendExecute (the context's own plan)");
  std::lock_guard<std::mutex> lock(plan.execute_mutex);
  return sdpa_status(api, api.cudnnBackendExecute(handle, plan.plan.get(), vp),
                     "cudnnBackendExecute");
}

namespace {

// A plan of `setup`'s engine configuration made with a context's `handle`
// (the caller destroys it).
Expected<cudnnBackendDescriptor_t> make_context_plan(const CudnnApi& api, cudnnHandle_t handle,
                                                     const SdpaSetup& setup) {
  ASSIGN_OR_RETURN(PlanTry made, try_plan(api, Target{handle, nullptr}, setup.plan->config.get(),
                                          setup.workspace_bytes,
                                          "the engine's configuration on a context's handle"));
  return made.plan.release();
}

}  // namespace

Expected<std::unique_ptr<EngineSdpas>> EngineSdpas::create(const std::vector<Launch>& launches) {
  auto out = std::unique_ptr<EngineSdpas>(new EngineSdpas());
  out->setups_.resize(launches.size());
  auto where = [&](size_t i) {
    const Launch& l = launches[i];
    return fmt::format("cuDNN attention (launch {}{}: {})", i,
                       l.name.empty() ? std::string() : " '" + l.name + "'",
                       engine::describe_sdpa(l.sdpa()->params));
  };
  bool any = false;
  for (size_t i = 0; i < launches.size(); ++i) {
    if (!launches[i].sdpa()) continue;
    any = true;
    // What cuDNN is documented not to take fails before cuDNN is loaded.
    if (std::string why = engine::sdpa_cudnn_refusal(launches[i].sdpa()->params); !why.empty())
      return unsupported("{}: {}", where(i), why);
  }
  if (!any) return out;
  ASSIGN_OR_RETURN(out->api_, load_cudnn());
  const CudnnApi& api = *out->api_;
  RETURN_IF_ERROR(check_cudnn(api, api.cudnnCreate(&out->handle_), "cudnnCreate (attention)"));
  // Equal calls (the layers of a transformer) share one graph and plan.
  std::map<std::pair<std::string, uint64_t>, std::shared_ptr<SdpaSetup>> built;
  for (size_t i = 0; i < launches.size(); ++i) {
    const Launch& l = launches[i];
    const SdpaLaunch* attn = l.sdpa();
    if (!attn) continue;
    auto key = std::make_pair(engine::encode_sdpa_params(attn->params), attn->workspace_bytes);
    auto it = built.find(key);
    if (it == built.end()) {
      auto made = make_sdpa_setup(api, out->handle_, attn->params, attn->workspace_bytes);
      if (!made.ok()) return made.status().with_context(where(i));
      it = built.emplace(std::move(key), std::shared_ptr<SdpaSetup>(std::move(*made))).first;
    }
    out->setups_[i] = it->second;
    out->workspace_bytes_ = std::max<uint64_t>(out->workspace_bytes_, it->second->workspace_bytes);
  }
  return out;
}

EngineSdpas::~EngineSdpas() {
  setups_.clear();  // plans before the handle
  if (api_ && handle_) api_->cudnnDestroy(handle_);
}

Expected<std::unique_ptr<ContextSdpas>> ContextSdpas::create(const EngineSdpas& engine,
                                                             const DriverApi& driver) {
  auto out = std::unique_ptr<ContextSdpas>(new ContextSdpas());
  out->engine_ = &engine;
  if (!engine.api()) return out;  // no attention calls
  out->driver_ = &driver;
  const CudnnApi& api = *engine.api();
  RETURN_IF_ERROR(
      check_cudnn(api, api.cudnnCreate(&out->handle_), "cudnnCreate (a context's attention)"));
  if (engine.workspace_bytes() > 0)
    RETURN_IF_ERROR(device_alloc(driver, &out->workspace_, engine.workspace_bytes(),
                                 "allocating the cuDNN attention workspace"));
  for (size_t i = 0; i < engine.launches(); ++i) {
    const SdpaSetup* s = engine.setup(i);
    if (!s || !s->params.has_seq_lens || out->full_lengths_.count(s)) continue;
    const SdpaParams& p = s->params;
    std::vector<int32_t> lengths(static_cast<size_t>(p.batch), static_cast<int32_t>(p.seq_q));
    lengths.resize(static_cast<size_t>(2 * p.batch), static_cast<int32_t>(p.seq_kv));
    CUdeviceptr d = 0;
    RETURN_IF_ERROR(device_alloc(driver, &d, lengths.size() * sizeof(int32_t),
                                 "allocating the attention warm-up's sequence lengths"));
    out->full_lengths_.emplace(s, d);
    GRAPHC_CU(driver, cuMemcpyHtoD(d, lengths.data(), lengths.size() * sizeof(int32_t)),
              "writing the attention warm-up's sequence lengths");
  }
  return out;
}

ContextSdpas::~ContextSdpas() {
  if (!engine_ || !engine_->api()) return;
  for (auto& [setup, plan] : own_plans_) engine_->api()->cudnnBackendDestroyDescriptor(plan);
  for (auto& [setup, lengths] : full_lengths_) driver_->cuMemFree(lengths);
  if (handle_) engine_->api()->cudnnDestroy(handle_);
  if (workspace_) driver_->cuMemFree(workspace_);
}

Status ContextSdpas::run(size_t launch, const std::vector<CUdeviceptr>& args,
                         CUstream stream) const {
  const SdpaSetup* s = engine_ ? engine_->setup(launch) : nullptr;
  if (!s || !handle_) return internal_error("attention launch {} is not set up", launch);
  const SdpaParams& p = s->params;
  if (args.size() != static_cast<size_t>(p.num_args()))
    return internal_error("attention launch {} got {} arguments, not {}", launch, args.size(),
                          p.num_args());
  const CudnnApi& api = *engine_->api();
  const std::string where = fmt::format("cuDNN attention (launch {})", launch);
  RETURN_IF_ERROR(check_cudnn(api,
                              api.cudnnSetStream(handle_, reinterpret_cast<cudaStream_t>(stream)),
                              "cudnnSetStream")
                      .with_context(where));
  SdpaOperands o;
  o.q = ptr(args[0]);
  o.k = ptr(args[1]);
  o.v = ptr(args[2]);
  if (p.has_bias) o.bias = ptr(args[static_cast<size_t>(p.bias_arg())]);
  if (p.has_seq_lens) {
    o.seq_len_q = ptr(args[static_cast<size_t>(p.seq_len_q_arg())]);
    o.seq_len_kv = ptr(args[static_cast<size_t>(p.seq_len_kv_arg())]);
  }
  o.o = ptr(args[static_cast<size_t>(p.o_arg())]);
  o.workspace = ptr(workspace_);
  auto own = own_plans_.find(s);
  Status st = enqueue_sdpa(api, handle_, *s, o, own == own_plans_.end() ? nullptr : own->second);
  // cuDNN executes a plan with any handle of its device; should it refuse the
  // engine's plan on this context's handle (on the first, eager call: never
  // inside a capture), the context makes its own plan of the same engine
  // configuration and keeps it.
  if (!st.ok() && st.code() == ErrorCode::kUnsupported && own == own_plans_.end() && !warmed_up_) {
    auto made = make_context_plan(api, handle_, *s);
    if (!made.ok())
      return st.with_context(
          where + fmt::format(" (and a plan of its own failed too: {})", made.status().message()));
    own_plans_.emplace(s, *made);
    warn(
        fmt::format("{}: cuDNN refused the engine's plan on this context's handle ({}); the "
                    "context uses a plan of its own",
                    where, st.message()));
    st = enqueue_sdpa(api, handle_, *s, o, *made);
  }
  return st.with_context(where);
}

Status ContextSdpas::warm_up(size_t launch, const std::vector<CUdeviceptr>& args,
                             CUstream stream) const {
  const SdpaSetup* s = engine_ ? engine_->setup(launch) : nullptr;
  const int q_arg = s ? s->params.seq_len_q_arg() : -1;
  const int kv_arg = s ? s->params.seq_len_kv_arg() : -1;
  if (q_arg < 0 || kv_arg < 0 || static_cast<size_t>(kv_arg) >= args.size())
    return run(launch, args, stream);
  auto lengths = full_lengths_.find(s);
  if (lengths == full_lengths_.end())
    return internal_error("attention launch {} has no warm-up sequence lengths", launch);
  std::vector<CUdeviceptr> safe = args;
  safe[static_cast<size_t>(q_arg)] = lengths->second;
  safe[static_cast<size_t>(kv_arg)] =
      lengths->second + static_cast<CUdeviceptr>(s->params.batch) * sizeof(int32_t);
  return run(launch, safe, stream);
}

Expected<std::string> probe_sdpa(const SdpaParams& p, uint64_t workspace_limit, int device) {
  ASSIGN_OR_RETURN(const DriverApi* driver, load_driver());
  RETURN_IF_ERROR(device_usable());
  const DriverApi& a = *driver;
  ASSIGN_OR_RETURN(const CudnnApi* api, load_cudnn());
  CUdevice dev = 0;
  GRAPHC_CU(a, cuDeviceGet(&dev, device), "cuDeviceGet");
  CUcontext ctx = nullptr;
  GRAPHC_CU(a, cuDevicePrimaryCtxRetain(&ctx, dev), "retaining the primary context");
  cudnnHandle_t h = nullptr;
  auto body = [&]() -> Expected<std::string> {
    GRAPHC_CU(a, cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    RETURN_IF_ERROR(check_cudnn(*api, api->cudnnCreate(&h), "cudnnCreate"));
    ASSIGN_OR_RETURN(auto setup, make_sdpa_setup(*api, h, p, workspace_limit));
    return setup->note;
  };
  auto result = body();
  if (h) api->cudnnDestroy(h);
  a.cuDevicePrimaryCtxRelease(dev);
  return result;
}

}  // namespace graphc::runtime
