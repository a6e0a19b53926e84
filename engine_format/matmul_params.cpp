#include "engine_format/matmul_params.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <utility>

#include "engine_format/le_bytes.h"
#include "support/checked_math.h"

namespace graphc::engine {

namespace {

// Little-endian fixed-width fields, in this order (version 1):
//   u32 version, i32 dtype, u8 compute, u8 trans_a, u8 trans_b, u8 has_c,
//   u8 has_bias, u8 epilogue, 2 bytes zero (version 3: u8 D dtype, one zero
//   byte; version 4: u8 D dtype, u8 C dtype), i64 m n k batch lda ldb ldc,
//   i64 stride_a stride_b stride_c stride_d, f64 alpha beta (version 4: and
//   f64 d_scale).
constexpr size_t kEncodedBytes = 4 + 4 + 8 + 11 * 8 + 2 * 8;
constexpr size_t kEncodedBytesV4 = kEncodedBytes + 8;

// Elements of a row-major `rows` x `cols` matrix with leading dim `ld`,
// repeated `batch` times `stride` apart; nullopt on overflow.
std::optional<int64_t> extent(int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                              int64_t stride) {
  auto last_row = checked_mul(rows - 1, ld);
  auto batches = checked_mul(batch - 1, stride);
  if (!last_row || !batches) return std::nullopt;
  auto one = checked_add(*last_row, cols);
  return one ? checked_add(*one, *batches) : std::nullopt;
}

// Rows and columns of A, B and C/D as stored.
struct Stored {
  int64_t a_rows, a_cols, b_rows, b_cols;
};
Stored stored(const MatmulParams& p) {
  return {p.trans_a ? p.k : p.m, p.trans_a ? p.m : p.k, p.trans_b ? p.n : p.k,
          p.trans_b ? p.k : p.n};
}

// cuBLASLt's FP8 type table (sm_89/sm_90) for what version 4 adds: a float8
// D is scaled by d_scale and rounded, C and bias then float16 or bfloat16;
// a float32 D would take a bfloat16 bias, which graphc does not make.
Status check_fp8_epilogue(const MatmulParams& p, const char* what) {
  if (p.d_type == 17) {
    if (p.c_type != 10 && p.c_type != 16)
      return invalid_engine("{}: float8 D with C/bias dtype {} (float16 or bfloat16)", what,
                            p.c_type);
    if (!std::isfinite(p.d_scale) || !(p.d_scale > 0))
      return invalid_engine("{}: float8 D scale {} is not positive and finite", what, p.d_scale);
    return Status::ok_status();
  }
  if (p.c_type != 0 || p.d_scale != 0.0)
    return invalid_engine("{}: C dtype {} / D scale {} without a float8 D", what, p.c_type,
                          p.d_scale);
  if (p.d_type == 1 && p.has_bias)
    return invalid_engine("{}: float8 with a float32 D takes a bfloat16 bias (not made)", what);
  return Status::ok_status();
}

}  // namespace

int64_t MatmulParams::a_extent() const {
  const Stored s = stored(*this);
  return extent(s.a_rows, s.a_cols, lda, batch, stride_a).value_or(-1);
}
int64_t MatmulParams::b_extent() const {
  const Stored s = stored(*this);
  return extent(s.b_rows, s.b_cols, ldb, batch, stride_b).value_or(-1);
}
int64_t MatmulParams::c_extent() const {
  return has_c ? extent(m, n, ldc, batch, stride_c).value_or(-1) : 0;
}
int64_t MatmulParams::d_extent() const { return extent(m, n, ldc, batch, stride_d).value_or(-1); }

std::string encode_matmul_params(const MatmulParams& p) {
  LeWriter w;
  const bool v4 = p.fp8_epilogue();
  w.put<uint32_t>(p.int8()  ? MatmulParams::kVersionInt8
                  : v4      ? MatmulParams::kVersionFp8Epilogue
                  : p.fp8() ? MatmulParams::kVersionFp8
                            : MatmulParams::kVersion);
  w.put<int32_t>(p.dtype);
  w.put<uint8_t>(static_cast<uint8_t>(p.compute));
  w.put<uint8_t>(p.trans_a);
  w.put<uint8_t>(p.trans_b);
  w.put<uint8_t>(p.has_c);
  w.put<uint8_t>(p.has_bias);
  w.put<uint8_t>(static_cast<uint8_t>(p.epilogue));
  w.put<uint8_t>(static_cast<uint8_t>(p.fp8() ? p.d_type : 0));
  w.put<uint8_t>(static_cast<uint8_t>(v4 ? p.c_type : 0));
  for (int64_t v : {p.m, p.n, p.k, p.batch, p.lda, p.ldb, p.ldc, p.stride_a, p.stride_b, p.stride_c,
                    p.stride_d})
    w.put<int64_t>(v);
  w.put<double>(p.alpha);
  w.put<double>(p.beta);
  if (v4) w.put<double>(p.d_scale);
  return std::move(w.out);
}

Expected<MatmulParams> decode_matmul_params(std::string_view bytes) {
  if (bytes.size() < 4) return invalid_engine("cublasLt matmul params: {} bytes", bytes.size());
  LeReader r(bytes);
  const auto version = r.get<uint32_t>();
  if (version < MatmulParams::kVersion || version > MatmulParams::kVersionFp8Epilogue)
    return invalid_engine("cublasLt matmul params: version {}, this reader knows {} to {}", version,
                          MatmulParams::kVersion, MatmulParams::kVersionFp8Epilogue);
  const bool v4 = version == MatmulParams::kVersionFp8Epilogue;
  const size_t want_bytes = v4 ? kEncodedBytesV4 : kEncodedBytes;
  if (bytes.size() != want_bytes)
    return invalid_engine("cublasLt matmul params: {} bytes, version {} has {}", bytes.size(),
                          version, want_bytes);
  MatmulParams p;
  p.dtype = r.get<int32_t>();
  const auto compute = r.get<uint8_t>();
  const uint8_t flags[4] = {r.get<uint8_t>(), r.get<uint8_t>(), r.get<uint8_t>(), r.get<uint8_t>()};
  const auto epilogue = r.get<uint8_t>();
  const auto d_type = r.get<uint8_t>();
  const auto c_type = r.get<uint8_t>();
  for (int64_t* f : {&p.m, &p.n, &p.k, &p.batch, &p.lda, &p.ldb, &p.ldc, &p.stride_a, &p.stride_b,
                     &p.stride_c, &p.stride_d})
    *f = r.get<int64_t>();
  p.alpha = r.get<double>();
  p.beta = r.get<double>();
  if (v4) p.d_scale = r.get<double>();

  const char* what = "cublasLt matmul params";
  const bool int8 = version == MatmulParams::kVersionInt8;
  const bool fp8 = version == MatmulParams::kVersionFp8 || v4;
  if (int8 ? p.dtype != 3
           : fp8 ? p.dtype != 17 : (p.dtype != 1 && p.dtype != 10 && p.dtype != 16))
    return invalid_engine("{}: dtype {} ({})", what, p.dtype,
                          int8  ? "version 2: int8"
                          : v4  ? "version 4: float8 e4m3fn"
                          : fp8 ? "version 3: float8 e4m3fn"
                                : "float, float16 or bfloat16");
  if (compute > 2) return invalid_engine("{}: unknown compute type {}", what, compute);
  if (compute == 1 && p.dtype != 1)
    return invalid_engine("{}: TF32 compute on a non-float32 matmul", what);
  if ((compute == 2) != int8)
    return invalid_engine("{}: int32 compute goes with int8 operands, and only with them", what);
  p.compute = static_cast<MatmulCompute>(compute);
  for (int i = 0; i < 4; ++i)
    if (flags[i] > 1) return invalid_engine("{}: flag {} is {}, not 0 or 1", what, i, flags[i]);
  p.trans_a = flags[0];
  p.trans_b = flags[1];
  p.has_c = flags[2];
  p.has_bias = flags[3];
  if (epilogue > 2) return invalid_engine("{}: unknown epilogue {}", what, epilogue);
  p.epilogue = static_cast<MatmulEpilogue>(epilogue);
  if ((!v4 && c_type != 0) || (!fp8 && d_type != 0))
    return invalid_engine("{}: reserved bytes are not zero", what);
  if (fp8 && d_type != 1 && d_type != 10 && d_type != 16 && !(v4 && d_type == 17))
    return invalid_engine(
        "{}: float8 D dtype {} (float, float16 or bfloat16; version 4 also "
        "float8 e4m3fn)",
        what, d_type);
  p.d_type = fp8 ? d_type : 0;
  p.c_type = c_type;
  // cuBLASLt takes rows/cols as uint64 and leading dims as int64, but its
  // kernels index with 32 bits in places: stay within INT32_MAX per dim.
  constexpr int64_t kMaxDim = INT32_MAX;
  for (auto [name, v] : {std::pair{"m", p.m}, {"n", p.n}, {"k", p.k}, {"batch", p.batch}})
    if (v < 1 || v > kMaxDim)
      return invalid_engine("{}: {} = {} is outside [1, {}]", what, name, v, kMaxDim);
  const Stored s = stored(p);
  if (p.lda < s.a_cols || p.lda > kMaxDim)
    return invalid_engine("{}: lda {} for a {}-column A", what, p.lda, s.a_cols);
  if (p.ldb < s.b_cols || p.ldb > kMaxDim)
    return invalid_engine("{}: ldb {} for a {}-column B", what, p.ldb, s.b_cols);
  if (p.ldc < p.n || p.ldc > kMaxDim)
    return invalid_engine("{}: ldc {} for a {}-column D", what, p.ldc, p.n);
  for (auto [name, v] : {std::pair{"stride_a", p.stride_a},
                         {"stride_b", p.stride_b},
                         {"stride_c", p.stride_c},
                         {"stride_d", p.stride_d}})
    if (v < 0) return invalid_engine("{}: {} = {} is negative", what, name, v);
  if (!p.has_c && p.stride_c != 0) return invalid_engine("{}: stride_c without C", what);
  // D's batches must not overlap (a shared output would race).
  if (p.batch > 1 && p.stride_d < (p.m - 1) * p.ldc + p.n)
    return invalid_engine("{}: stride_d {} overlaps D's {}x{} batches", what, p.stride_d, p.m, p.n);
  if (p.a_extent() < 0 || p.b_extent() < 0 || p.c_extent() < 0 || p.d_extent() < 0)
    return invalid_engine("{}: operand extents overflow", what);
  if (!std::isfinite(p.alpha) || !std::isfinite(p.beta))
    return invalid_engine("{}: alpha {} / beta {} are not finite", what, p.alpha, p.beta);
  if (!p.has_c && p.beta != 0.0) return invalid_engine("{}: beta {} without C", what, p.beta);
  if (int8) {
    // cuBLASLt's IMMA kernels in row/column order ("TN": its A, graphc's B,
    // transposed), which is all graphc asks of it.
    if (p.trans_a || !p.trans_b)
      return invalid_engine("{}: int8 needs B stored N x K (trans_b) and A not transposed", what);
    if (p.has_c || p.has_bias || p.epilogue != MatmulEpilogue::kNone || p.alpha != 1.0)
      return invalid_engine("{}: int8 takes no C, bias, epilogue or alpha", what);
    for (auto [name, v] : {std::pair{"n", p.n}, {"k", p.k}, {"lda", p.lda}, {"ldb", p.ldb},
                           {"ldc", p.ldc}})
      if (v % 4 != 0)
        return invalid_engine("{}: int8 {} = {} is not a multiple of 4 (cuBLASLt IMMA)", what,
                              name, v);
  }
  if (fp8) {
    // cuBLASLt's FP8 kernels on sm_89/sm_90 take only "TN" (its A, graphc's
    // B, transposed), 16-byte aligned leading dims; graphc asks one matrix.
    if (p.trans_a || !p.trans_b)
      return invalid_engine("{}: float8 needs B stored N x K (trans_b) and A not transposed",
                            what);
    if (p.batch != 1) return invalid_engine("{}: float8 takes one matrix, not {}", what, p.batch);
    if (!v4 && p.fp8_epilogue())
      return invalid_engine("{}: version 3 float8 takes no C, bias or epilogue", what);
    if (v4 && !p.fp8_epilogue())
      return invalid_engine("{}: version 4 float8 without C, bias, epilogue or float8 D", what);
    RETURN_IF_ERROR(check_fp8_epilogue(p, what));
    if (p.alpha == 0.0) return invalid_engine("{}: float8 alpha is 0", what);
    for (auto [name, v] : {std::pair{"n", p.n}, {"k", p.k}, {"lda", p.lda}, {"ldb", p.ldb},
                           {"ldc", p.ldc}})
      if (v % 16 != 0)
        return invalid_engine("{}: float8 {} = {} is not a multiple of 16 (cuBLASLt FP8)", what,
                              name, v);
  }
  return p;
}

std::string_view matmul_epilogue_name(MatmulEpilogue e) {
  switch (e) {
    case MatmulEpilogue::kNone: return "none";
    case MatmulEpilogue::kRelu: return "relu";
    case MatmulEpilogue::kGeluTanh: return "gelu_tanh";
  }
  return "?";
}

std::string describe_matmul(const MatmulParams& p) {
  const char* dt = p.dtype == 10   ? "fp16"
                   : p.dtype == 16 ? "bf16"
                   : p.int8()      ? "int8->int32"
                   : p.fp8()       ? (p.d_type == 10   ? "e4m3->fp16"
                                      : p.d_type == 16 ? "e4m3->bf16"
                                      : p.d_type == 17 ? "e4m3->e4m3"
                                                       : "e4m3->fp32")
                                   : "fp32";
  std::string out =
      fmt::format("{}{} ", dt, p.compute == MatmulCompute::kF32FastTf32 ? "/tf32" : "");
  if (p.batch > 1) out += fmt::format("[{}x] ", p.batch);
  out += fmt::format("M={} N={} K={}", p.m, p.n, p.k);
  if (p.trans_a) out += " A^T";
  if (p.trans_b) out += " B^T";
  if (p.alpha != 1.0) out += fmt::format(" alpha={}", p.alpha);
  if (p.has_c) out += fmt::format(" +{}C", p.beta == 1.0 ? "" : fmt::format("{}*", p.beta));
  std::string epi;
  if (p.has_bias) epi = "bias";
  if (p.epilogue != MatmulEpilogue::kNone)
    epi += (epi.empty() ? "" : "+") + std::string(matmul_epilogue_name(p.epilogue));
  out += " epilogue=" + (epi.empty() ? std::string("none") : epi);
  if (p.fp8_output()) out += fmt::format(" d_scale={}", p.d_scale);
  return out;
}

}  // namespace graphc::engine
