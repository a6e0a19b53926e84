// The cuDNN attention operation graph (see cudnn_sdpa.h): the backend
// tensors and operations of one call (Q·Kᵀ, scale, bias, padding and causal
// masks, softmax with its statistics, P·V), built and finalized into an
// SdpaPlan by GraphBuilder, every failure naming the step; the recorded
// engine's configuration on that graph; check_sdpa_graph.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cudnn_sdpa.h"
#include "runtime/cudnn_sdpa_internal.h"

namespace graphc::runtime {

namespace {

using engine::SdpaParams;
using Dims4 = std::array<int64_t, 4>;

// Unique ids of the tensors the variant pack binds (the rest are virtual).
constexpr int64_t kUidQ = 1, kUidK = 2, kUidV = 3, kUidO = 4, kUidBias = 5, kUidSeqQ = 6,
                  kUidSeqKv = 7, kUidScale = 8, kUidNegInfPad = 9, kUidNegInfCausal = 10;
constexpr int64_t kFirstVirtualUid = 100;
// What cuDNN's frontend gives every tensor; graphc's buffers are 256-byte aligned.
constexpr int64_t kAlignment = 16;

std::string dims_text(const Dims4& d) { return fmt::format("[{}]", fmt::join(d, ",")); }

cudnnDataType_t io_type(const SdpaParams& p) {
  return p.dtype == 16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
}

struct TensorSpec {
  const char* name;
  int64_t uid;
  cudnnDataType_t type;
  Dims4 dims, strides;
  bool is_virtual = false;
  bool by_value = false;
};

#define GRAPHC_SDPA_SET(b, d, what, attr, type, count, values) \
  RETURN_IF_ERROR((b).set((d), (what), (attr), #attr, (type), (count), (values)))

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

}  // namespace

// Builds the operation graph (see the header) into `plan`.
Status build_graph(const CudnnApi& api, cudnnHandle_t handle, const SdpaParams& p, SdpaPlan& plan,
                   bool finalize_graph) {
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

Status check_sdpa_graph(const CudnnApi& api, cudnnHandle_t handle, const SdpaParams& p,
                        bool finalize_graph) {
  SdpaPlan plan(api);
  return build_graph(api, handle, p, plan, finalize_graph);
}

}  // namespace graphc::runtime
