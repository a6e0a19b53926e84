// The cuBLASLt call an engine built from one quantized GEMM records (int8
// and float8 tests): its descriptor and operand dtypes, the engine re-read
// and loaded, and a D tensor of another dtype refused by the writer's and
// reader's validation.
#pragma once

#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "engine_format/engine_file.h"
#include "engine_format/matmul_params.h"
#include "runtime/engine_loader.h"
#include "tests/engine_test_util.h"
#include "tests/test_util.h"

namespace graphc::testing {

// Decodes `rounds` copies of the encoded params `good` with 1-4 random bytes
// changed: a refusal must say kInvalidEngine, anything accepted must encode
// back to the same bytes and goes to `check`. Returns how many were refused.
template <typename Check>
int check_corrupted_matmul_params(const std::string& good, int rounds, Check check) {
  std::mt19937& rng = test_rng();
  std::uniform_int_distribution<size_t> at(0, good.size() - 1);
  std::uniform_int_distribution<int> byte(0, 255), flips(1, 4);
  int refused = 0;
  for (int round = 0; round < rounds; ++round) {
    std::string bytes = good;
    for (int f = flips(rng); f > 0; --f) bytes[at(rng)] = static_cast<char>(byte(rng));
    auto d = engine::decode_matmul_params(bytes);
    if (!d.ok()) {
      CHECK(d.status().code() == ErrorCode::kInvalidEngine);
      ++refused;
      continue;
    }
    CHECK(engine::encode_matmul_params(*d) == bytes);
    check(*d);
  }
  return refused;
}

// A 33 x 64 x 96 "TN" cuBLASLt matmul of `dtype` operands (ONNX dtype), the
// shape the int8 and float8 descriptor tests start from.
inline engine::MatmulParams tn_matmul_params(int32_t dtype) {
  engine::MatmulParams p;
  p.dtype = dtype;
  p.trans_b = true;
  p.m = 33;
  p.n = 64;
  p.k = 96;
  p.lda = 96;
  p.ldb = 96;
  p.ldc = 64;
  p.stride_d = 33 * 64;
  return p;
}

struct CublasLtRecord {
  int64_t m = 0, n = 0, k = 0;
  int32_t weight_dtype = 0, d_dtype = 0;  // ONNX dtypes of args 1 and 2
  int32_t wrong_d_dtype = 0;              // a D dtype validation must refuse
};

inline engine::MatmulParams check_cublaslt_record(const engine::EngineContents& built,
                                                  const CublasLtRecord& want) {
  const engine::Kernel* call = nullptr;
  for (const auto& k : built.manifest.kernels())
    if (k.has_library_call()) call = &k;
  REQUIRE(call);
  CHECK(call->library_call().library() == "cublasLt");
  auto p = engine::decode_matmul_params(call->library_call().params());
  REQUIRE(p.ok());
  CHECK(p->m == want.m);
  CHECK(p->n == want.n);
  CHECK(p->k == want.k);
  CHECK(built.manifest.tensors(call->args(1)).dtype() == want.weight_dtype);  // weights [N, K]
  CHECK(built.manifest.tensors(call->args(2)).dtype() == want.d_dtype);
  auto reread = engine::parse_engine(engine::testing::serialize_ok(built));
  INFO(reread.status().message());
  REQUIRE(reread.ok());
  auto exe = runtime::executable_from_engine(*reread, 90);
  INFO(exe.status().message());
  REQUIRE(exe.ok());
  engine::EngineContents bad = built;
  for (auto& k : *bad.manifest.mutable_kernels())
    if (k.has_library_call()) bad.manifest.mutable_tensors(k.args(2))->set_dtype(want.wrong_d_dtype);
  auto bytes = engine::serialize_engine(bad);  // the writer validates as the reader does
  CHECK_FALSE((bytes.ok() && engine::parse_engine(*bytes).ok()));
  return *p;
}

// `change` made to valid params `p` makes the reader refuse them, saying `why`.
template <typename Change>
void check_matmul_params_refused(engine::MatmulParams p, Change change, const std::string& why) {
  change(p);
  auto d = engine::decode_matmul_params(engine::encode_matmul_params(p));
  INFO(why);
  REQUIRE_FALSE(d.ok());
  CHECK(d.status().code() == ErrorCode::kInvalidEngine);
  CHECK(d.status().message().find(why) != std::string::npos);
}

}  // namespace graphc::testing
