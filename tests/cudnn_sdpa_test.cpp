// cuDNN attention (library "cudnn", op "sdpa") without a GPU: the sdpa
// descriptor's byte format and every-field validation, engines recording an
// sdpa call and rejecting bad ones, the runtime refusing launches that do not
// fit their tensors, libcudnn loaded only for engines that call it, and,
// where cuDNN is installed, the graph's descriptors against cuDNN itself
// (every tensor, operation and the operation graph finalized on the host;
// cuDNN's attention engines taking the graph for an H100 described by
// cuDNN's device-properties JSON, up to the point where they need a GPU).
#include "runtime/cudnn_sdpa.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <limits>

#include "driver/engine_build.h"
#include "runtime/engine_loader.h"
#include "engine_format/sdpa_params.h"
#include "runtime/engine.h"
#include "runtime/warnings.h"
#include "tests/engine_test_util.h"

using namespace graphc;
using graphc::engine::SdpaParams;

namespace {

bool has(const std::string& text, const std::string& part) {
  return engine::testing::contains(text, part);
}

// GQA, cross attention, odd lengths, Q and O as [B, L, H*D], a [1, 1, Lq, Lk]
// bias, causal, sequence lengths and a recorded engine: every field non-default.
SdpaParams sample_params() {
  SdpaParams p;
  p.dtype = 16;
  p.batch = 3;
  p.heads = 8;
  p.kv_heads = 2;
  p.seq_q = 77;
  p.seq_kv = 129;
  p.head_dim = 64;
  p.value_dim = 32;
  p.q_strides = engine::packed_bshd_strides(p.heads, p.seq_q, p.head_dim);
  p.k_strides = engine::packed_bhsd_strides(p.kv_heads, p.seq_kv, p.head_dim);
  p.v_strides = engine::packed_bhsd_strides(p.kv_heads, p.seq_kv, p.value_dim);
  p.o_strides = engine::packed_bshd_strides(p.heads, p.seq_q, p.value_dim);
  p.scale = 0.125f;
  p.causal = true;
  p.has_bias = true;
  p.bias_strides = {0, 0, p.seq_kv, 1};
  p.has_seq_lens = true;
  p.engine = 3;
  return p;
}

// The plain case: fp16 [B, H, L, D], no masks.
SdpaParams plain_params(int64_t b = 2, int64_t h = 4, int64_t lq = 64, int64_t lk = 64,
                        int64_t d = 64) {
  SdpaParams p;
  p.batch = b;
  p.heads = p.kv_heads = h;
  p.seq_q = lq;
  p.seq_kv = lk;
  p.head_dim = p.value_dim = d;
  p.q_strides = p.o_strides = engine::packed_bhsd_strides(h, lq, d);
  p.k_strides = p.v_strides = engine::packed_bhsd_strides(h, lk, d);
  p.scale = 1.0f / std::sqrt(static_cast<float>(d));
  return p;
}

}  // namespace

TEST_CASE("cuDNN sdpa params round-trip and reject every bad field", "[cudnn][sdpa]") {
  const SdpaParams p = sample_params();
  const std::string bytes = engine::encode_sdpa_params(p);
  CHECK(bytes.size() == 240);
  auto back = engine::decode_sdpa_params(bytes);
  INFO((back.ok() ? "" : back.status().message()));
  REQUIRE(back.ok());
  CHECK(*back == p);
  CHECK(engine::encode_sdpa_params(*back) == bytes);
  CHECK(engine::describe_sdpa(p) ==
        "sdpa bf16 B=3 H=8 (kv 2) Lq=77 Lk=129 D=64 Dv=32 scale=0.125 causal bias[1,1,q,k] "
        "seqlens layout q=bshd k=bhsd v=bhsd o=bshd engine=3");
  // Little-endian, in the documented order.
  CHECK(bytes.substr(0, 4) == std::string("\x01\x00\x00\x00", 4));
  CHECK(bytes.substr(4, 4) == std::string("\x10\x00\x00\x00", 4));  // dtype 16

  auto refused = [&](const std::string& b, const std::string& part) {
    auto r = engine::decode_sdpa_params(b);
    REQUIRE_FALSE(r.ok());
    INFO(r.status().message());
    CHECK(r.status().code() == ErrorCode::kInvalidEngine);
    CHECK(has(r.status().message(), "cudnn sdpa params"));
    CHECK(has(r.status().message(), part));
  };
  auto with = [&](auto edit) {
    SdpaParams q = p;
    edit(q);
    return engine::encode_sdpa_params(q);
  };
  auto byte_set = [&](size_t at, char v) {
    std::string b = bytes;
    b[at] = v;
    return b;
  };
  // Every truncation and any extension.
  refused("", "0 bytes");
  refused(bytes.substr(0, 3), "3 bytes");
  for (size_t n = 4; n < bytes.size(); ++n) refused(bytes.substr(0, n), "version 1 has 240");
  refused(bytes + "x", "241 bytes, version 1 has 240");
  refused(byte_set(0, 2), "version 2, this reader knows 1");
  refused(with([](auto& q) { q.dtype = 1; }), "dtype 1 (float16 or bfloat16)");
  refused(with([](auto& q) { q.dtype = 11; }), "dtype 11");
  refused(byte_set(8, 2), "causal is 2");
  refused(byte_set(9, 7), "has_bias is 7");
  refused(byte_set(10, 2), "has_seq_lens is 2");
  refused(byte_set(11, 1), "reserved");
  refused(byte_set(239, 1), "reserved");
  refused(with([](auto& q) { q.scale = std::numeric_limits<float>::quiet_NaN(); }),
          "scale nan is not finite");
  refused(with([](auto& q) { q.scale = std::numeric_limits<float>::infinity(); }), "not finite");
  refused(with([](auto& q) { q.engine = -2; }), "engine -2 is outside [-1, 65536)");
  refused(with([](auto& q) { q.engine = 1 << 16; }), "engine 65536");
  refused(with([](auto& q) { q.batch = 0; }), "batch = 0 is outside");
  refused(with([](auto& q) { q.heads = -8; }), "heads = -8");
  refused(with([](auto& q) { q.kv_heads = 0; }), "kv_heads = 0");
  refused(with([](auto& q) { q.seq_q = int64_t{1} << 31; }), "seq_q = 2147483648");
  refused(with([](auto& q) { q.seq_kv = 0; }), "seq_kv = 0");
  refused(with([](auto& q) { q.head_dim = 0; }), "head_dim = 0");
  refused(with([](auto& q) { q.value_dim = -1; }), "value_dim = -1");
  refused(with([](auto& q) { q.kv_heads = 3; }), "kv_heads 3 does not divide heads 8");
  refused(with([](auto& q) {
            q.batch = q.heads = q.seq_q = q.seq_kv = int64_t{1} << 20;
            q.kv_heads = 1;
          }),
          "the score matrix B*H*Lq*Lk");
  refused(with([](auto& q) { q.q_strides[3] = 2; }), "q_strides[3] = 2; the feature dim");
  refused(with([](auto& q) { q.k_strides[0] = -1; }), "k_strides[0] = -1 is outside");
  refused(with([](auto& q) { q.v_strides[1] = int64_t{1} << 50; }), "v_strides[1]");
  refused(with([](auto& q) { q.o_strides[3] = 0; }), "o_strides[3] = 0");
  refused(with([](auto& q) { q.o_strides[1] = 1; }), "make output elements overlap");
  refused(with([](auto& q) { q.o_strides[0] = 0; }), "make output elements overlap");
  refused(with([](auto& q) {
            q.has_bias = false;
            q.bias_strides = {0, 0, 0, 1};
          }),
          "bias_strides[3] = 1 without a bias");
  refused(with([](auto& q) { q.bias_strides[3] = 0; }), "bias_strides[3] = 0; the key dim");
  refused(with([](auto& q) { q.bias_strides[2] = -5; }), "bias_strides[2] = -5");
  refused(with([](auto& q) {
            q.q_strides = {int64_t{1} << 45, int64_t{1} << 45, int64_t{1} << 45, 1};
          }),
          "Q spans");
  // Every single-byte change is either refused or decodes to different
  // params: no byte is ignored.
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string b = bytes;
    b[i] = static_cast<char>(b[i] ^ 0x5a);
    auto r = engine::decode_sdpa_params(b);
    INFO("byte " << i);
    CHECK((!r.ok() || !(*r == p)));
  }
  // The defaults that make sense decode: no bias, no masks, heuristics, a
  // zero scale, MQA, a broadcast bias over everything but the keys.
  for (auto edit : std::vector<std::function<void(SdpaParams&)>>{
           [](SdpaParams& q) {
             q.has_bias = q.causal = q.has_seq_lens = false;
             q.bias_strides = {};
             q.engine = -1;
           },
           [](SdpaParams& q) { q.scale = 0.0f; }, [](SdpaParams& q) { q.kv_heads = 1; },
           [](SdpaParams& q) {
             q.bias_strides = {0, 0, 0, 1};
           },
           [](SdpaParams& q) {
             q.bias_strides = {8 * 77 * 129, 77 * 129, 129, 1};
           },
           // K and V sharing one [B, L, 2, Hkv, D] buffer-like layout (strided views).
           [](SdpaParams& q) {
             q.k_strides = {129 * 2 * 2 * 64, 64, 2 * 2 * 64, 1};
             q.v_strides = {129 * 2 * 2 * 32, 32, 2 * 2 * 32, 1};
           }}) {
    SdpaParams q = p;
    edit(q);
    auto r = engine::decode_sdpa_params(engine::encode_sdpa_params(q));
    INFO((r.ok() ? "" : r.status().message()));
    CHECK(r.ok());
  }
}

TEST_CASE("sdpa params: extents, operands, layouts, FLOPs", "[cudnn][sdpa]") {
  const SdpaParams p = sample_params();
  // Packed layouts span exactly their elements.
  CHECK(p.q_extent() == 3 * 8 * 77 * 64);
  CHECK(p.k_extent() == 3 * 2 * 129 * 64);
  CHECK(p.v_extent() == 3 * 2 * 129 * 32);
  CHECK(p.o_extent() == 3 * 8 * 77 * 32);
  CHECK(p.bias_extent() == 77 * 129);  // broadcast over batch and heads
  CHECK(engine::packed_bhsd_strides(8, 77, 64) == SdpaParams::Strides{8 * 77 * 64, 77 * 64, 64, 1});
  CHECK(engine::packed_bshd_strides(8, 77, 64) == SdpaParams::Strides{77 * 8 * 64, 64, 8 * 64, 1});
  // Q, K, V, bias, seq_len_q, seq_len_kv, O.
  CHECK(p.num_args() == 7);
  CHECK(p.bias_arg() == 3);
  CHECK(p.seq_len_q_arg() == 4);
  CHECK(p.seq_len_kv_arg() == 5);
  CHECK(p.o_arg() == 6);
  const auto ops = engine::sdpa_operands(p);
  REQUIRE(ops.size() == 7);
  const char* roles[] = {"Q", "K", "V", "bias", "seq_len_q", "seq_len_kv", "O"};
  for (size_t i = 0; i < ops.size(); ++i) {
    CHECK(std::string(ops[i].role) == roles[i]);
    CHECK(ops[i].arg == static_cast<int>(i));
    CHECK(ops[i].dtype == (i == 4 || i == 5 ? 6 : 16));
    CHECK(ops[i].output == (i == 6));
  }
  CHECK(ops[4].elements == 3);
  const SdpaParams plain = plain_params();
  CHECK(plain.num_args() == 4);
  CHECK(plain.bias_arg() == -1);
  CHECK(plain.seq_len_q_arg() == -1);
  CHECK(plain.o_arg() == 3);
  CHECK(plain.bias_extent() == 0);
  CHECK(engine::sdpa_operands(plain).size() == 4);
  SdpaParams no_bias_masks = p;
  no_bias_masks.has_bias = false;
  no_bias_masks.bias_strides = {};
  CHECK(no_bias_masks.seq_len_q_arg() == 3);
  CHECK(no_bias_masks.o_arg() == 5);
  // FLOPs: 4·B·H·Lq·Lk·D, halved when causal (D the mean of the two head dims).
  CHECK(engine::sdpa_flops(plain) == 4.0 * 2 * 4 * 64 * 64 * 64);
  SdpaParams causal = plain;
  causal.causal = true;
  CHECK(engine::sdpa_flops(causal) == 2.0 * 2 * 4 * 64 * 64 * 64);
  // What cuDNN is documented not to take.
  CHECK(engine::sdpa_cudnn_refusal(plain).empty());
  CHECK(engine::sdpa_cudnn_refusal(plain_params(1, 1, 8, 8, 256)).empty());
  CHECK(has(engine::sdpa_cudnn_refusal(plain_params(1, 1, 8, 8, 12)), "multiples of 8"));
  CHECK(has(engine::sdpa_cudnn_refusal(plain_params(1, 1, 8, 8, 264)), "up to 256"));
  CHECK(engine::describe_sdpa(plain) ==
        "sdpa fp16 B=2 H=4 Lq=64 Lk=64 D=64 Dv=64 scale=0.125 layout q=bhsd k=bhsd v=bhsd "
        "o=bhsd engine=heuristic");
}

namespace {

// Q[2,4,64,64], K, V and O an engine reads and writes (inputs and output) and
// one cuDNN sdpa call; with `bias` a [1,1,64,64] bias input, with `lens` the
// two int32 sequence-length inputs.
engine::EngineContents sdpa_engine(bool bias = true, bool lens = true) {
  using engine::Tensor;
  SdpaParams p = plain_params();
  p.has_bias = bias;
  if (bias) p.bias_strides = {0, 0, 64, 1};
  p.has_seq_lens = lens;
  p.causal = true;
  engine::EngineContents c;
  engine::Manifest& m = c.manifest;
  m.set_producer("graphc 0.1.0");
  m.set_graph_name("attention");
  m.set_precision("fp16");
  const uint64_t qkv_bytes = 2 * 4 * 64 * 64 * 2;
  int index = 0;
  auto input = [&](const char* name, int dtype, std::vector<int64_t> shape, uint64_t bytes) {
    engine::testing::add_tensor(m, name, dtype, shape, Tensor::INPUT, 0, bytes);
    engine::Binding* b = m.add_inputs();
    b->set_name(name);
    b->set_tensor(index);
    return index++;
  };
  std::vector<int> args;
  args.push_back(input("q", 10, {2, 4, 64, 64}, qkv_bytes));
  args.push_back(input("k", 10, {2, 4, 64, 64}, qkv_bytes));
  args.push_back(input("v", 10, {2, 4, 64, 64}, qkv_bytes));
  if (bias) args.push_back(input("mask", 10, {1, 1, 64, 64}, 64 * 64 * 2));
  if (lens) {
    args.push_back(input("seq_len_q", 6, {2}, 8));
    args.push_back(input("seq_len_kv", 6, {2}, 8));
  }
  engine::testing::add_tensor(m, "o", 10, {2, 4, 64, 64}, Tensor::OUTPUT, 0, qkv_bytes);
  engine::Binding* out = m.add_outputs();
  out->set_name("o");
  out->set_tensor(index);
  args.push_back(index++);
  m.set_arena_bytes(0);
  m.set_weights_bytes(0);
  engine::Kernel* k = m.add_kernels();
  k->set_name("attention_0");
  k->set_kind("attention");
  for (int a : args) k->add_args(a);
  k->add_onnx_nodes("Attention_0");
  engine::LibraryCall* call = k->mutable_library_call();
  call->set_library("cudnn");
  call->set_op("sdpa");
  call->set_algorithm(-1);
  call->set_workspace_bytes(64 << 20);
  call->set_params(engine::encode_sdpa_params(p));
  return c;
}

engine::Kernel& attention_kernel(engine::EngineContents& c) {
  return *c.manifest.mutable_kernels(0);
}

}  // namespace

TEST_CASE("engines record cuDNN sdpa calls, the reader hands them to the runtime",
          "[cudnn][sdpa][engine]") {
  engine::EngineContents c = sdpa_engine();
  const std::string bytes = engine::testing::serialize_ok(c);
  CHECK(engine::testing::serialize_ok(c) == bytes);  // deterministic
  auto parsed = engine::parse_engine(bytes);
  INFO((parsed.ok() ? "" : parsed.status().message()));
  REQUIRE(parsed.ok());
  auto exe = runtime::executable_from_engine(*parsed, 90);
  INFO((exe.ok() ? "" : exe.status().message()));
  REQUIRE(exe.ok());
  REQUIRE(exe->launches.size() == 1);
  const runtime::Launch& l = exe->launches[0];
  REQUIRE(l.sdpa());
  CHECK_FALSE(l.conv());
  CHECK_FALSE(l.matmul());
  CHECK(l.sdpa()->params ==
        *engine::decode_sdpa_params(c.manifest.kernels(0).library_call().params()));
  CHECK(l.args == std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6});
  CHECK(l.sdpa()->workspace_bytes == 64 << 20);
  CHECK(l.kind == "cudnn sdpa");
  // Without bias and lengths: Q, K, V, O.
  engine::EngineContents plain = sdpa_engine(false, false);
  auto reread = engine::parse_engine(engine::testing::serialize_ok(plain));
  REQUIRE(reread.ok());
  auto plain_exe = runtime::executable_from_engine(*reread, 90);
  REQUIRE(plain_exe.ok());
  CHECK(plain_exe->launches[0].args.size() == 4);
}

TEST_CASE("manifest validation rejects bad cuDNN sdpa calls", "[cudnn][sdpa][engine]") {
  using graphc::engine::testing::expect_invalid_manifest;
  auto edit = [](auto fn, const std::string& part) {
    engine::EngineContents c = sdpa_engine();
    fn(attention_kernel(c), c.manifest);
    expect_invalid_manifest(c, part);
  };
  auto with_params = [](engine::Kernel& k, auto change) {
    auto p = *engine::decode_sdpa_params(k.library_call().params());
    change(p);
    k.mutable_library_call()->set_params(engine::encode_sdpa_params(p));
  };
  edit([](engine::Kernel& k, auto&) { k.mutable_library_call()->set_params("junk"); },
       "cudnn sdpa params: version");
  edit([](engine::Kernel& k, auto&) { k.mutable_library_call()->set_op("attention"); },
       "unknown cudnn op 'attention' (conv or sdpa)");
  edit([](engine::Kernel& k, auto&) { k.mutable_library_call()->set_algorithm(2); },
       "records algorithm 2, its sdpa params engine -1");
  edit([](engine::Kernel& k, auto&) { k.mutable_args()->RemoveLast(); }, "takes 7 tensors, not 6");
  edit([&](engine::Kernel& k, auto&) { with_params(k, [](auto& p) { p.has_seq_lens = false; }); },
       "takes 5 tensors, not 7");
  edit([&](engine::Kernel& k, auto&) { with_params(k, [](auto& p) { p.q_strides[0] *= 2; }); },
       "Q tensor 'q' has 65536 bytes; the sdpa reaches 49152 elements");
  edit([&](engine::Kernel& k, auto&) { with_params(k, [](auto& p) { p.dtype = 16; }); },
       "Q tensor 'q' has dtype 10, the sdpa 16");
  edit([](engine::Kernel& k, auto&) { k.set_args(4, k.args(0)); },
       "seq_len_q tensor 'q' has dtype 10, the sdpa 6");
  edit(
      [](engine::Kernel&, auto& m) {
        m.mutable_tensors(3)->set_shape(2, 63);
        m.mutable_tensors(3)->set_bytes(63 * 64 * 2);
      },
      "bias tensor 'mask' has 8064 bytes; the sdpa reaches 4096 elements");
  edit(
      [](engine::Kernel& k, auto&) {
        // The output written over the value tensor.
        k.set_args(6, k.args(2));
      },
      "the sdpa writes tensor 'v', which is input");
  edit([](engine::Kernel& k, auto&) { k.set_module_entry("f"); }, "no module entry");
}

TEST_CASE("the runtime rejects attention launches inconsistent with their tensors",
          "[cudnn][sdpa][runtime]") {
  // Checked before the driver is loaded: errors on a machine without a GPU too.
  SdpaParams p = plain_params();
  p.has_bias = true;
  p.bias_strides = {0, 0, 64, 1};
  runtime::Executable exe;
  auto slot = [&](const char* name, runtime::TensorSlot::Location loc, int64_t bytes) {
    exe.tensors.push_back({name, loc, 0, bytes, 10, {bytes / 2}});
    return static_cast<int32_t>(exe.tensors.size() - 1);
  };
  const int64_t qkv = p.q_extent() * 2;
  const int32_t q = slot("q", runtime::TensorSlot::Location::kInput, qkv);
  const int32_t k = slot("k", runtime::TensorSlot::Location::kInput, qkv);
  const int32_t v = slot("v", runtime::TensorSlot::Location::kInput, qkv);
  const int32_t b = slot("bias", runtime::TensorSlot::Location::kInput, 64 * 64 * 2);
  const int32_t o = slot("o", runtime::TensorSlot::Location::kOutput, qkv);
  exe.inputs = {q, k, v, b};
  exe.outputs = {o};
  runtime::Launch l;
  l.op = runtime::SdpaLaunch{p};
  l.args = {q, k, v, b, o};
  auto refused = [&](runtime::Launch bad, const std::string& part) {
    runtime::Executable e = exe;
    e.launches = {std::move(bad)};
    auto eng = runtime::Engine::create(e);
    REQUIRE_FALSE(eng.ok());
    INFO(eng.status().message());
    CHECK(has(eng.status().message(), part));
  };
  runtime::Launch short_args = l;
  short_args.args.pop_back();
  refused(short_args, "attention launch takes 5 slots");
  runtime::Launch small = l;
  small.args[0] = b;  // the bias slot as Q
  refused(small, "attention operand Q 'bias' (8192 bytes) is smaller than 32768 elements");
}

TEST_CASE("libcudnn is loaded for attention only when an engine has some",
          "[cudnn][sdpa][runtime]") {
  const int before = runtime::cudnn_load_attempts();
  runtime::Executable exe;
  std::vector<runtime::Launch>& launches = exe.launches;
  launches.resize(3);
  auto none = runtime::EngineSdpas::create(exe);
  REQUIRE(none.ok());
  CHECK((*none)->api() == nullptr);
  CHECK((*none)->workspace_bytes() == 0);
  CHECK((*none)->setup(1) == nullptr);
  CHECK(runtime::cudnn_load_attempts() == before);
  // A call cuDNN is documented not to take is refused before cuDNN is loaded
  // (kUnsupported: a compiler can keep its generated kernel for it).
  launches[1].op = runtime::SdpaLaunch{plain_params(1, 2, 16, 16, 12)};
  launches[1].name = "attention_1";
  auto odd = runtime::EngineSdpas::create(exe);
  REQUIRE_FALSE(odd.ok());
  CHECK(odd.status().code() == ErrorCode::kUnsupported);
  CHECK(odd.status().message() ==
        "cuDNN attention (launch 1 'attention_1': sdpa fp16 B=1 H=2 Lq=16 Lk=16 D=12 Dv=12 "
        "scale=0.288675 layout q=bhsd k=bhsd v=bhsd o=bhsd engine=heuristic): cuDNN attention "
        "needs head dims that are multiples of 8 (D=12, Dv=12)");
  CHECK(runtime::cudnn_load_attempts() == before);
}

namespace {

// An H100 as cuDNN's device-properties JSON describes it (the keys cuDNN 9.19
// reads), so heuristics and plans can be asked for on a machine without one.
constexpr const char* kH100Json =
    R"({"maxGridSize":[2147483647,65535,65535],"maxBlockSize":[1024,1024,64],)"
    R"("regsPerBlock":65536,"multiProcessorCount":132,"warpSize":32,)"
    R"("maxSharedMemoryPerBlock":49152,"maxSharedMemoryPerBlockOptin":232448,)"
    R"("reservedSharedMemoryPerBlock":1024,"maxRegistersPerSM":65536,"maxCtasPerSM":32,)"
    R"("maxThreadsPerBlock":1024,"maxThreadsPerSM":2048,"pciDeviceId":9008,"isTccDriver":0,)"
    R"("supportCoopLaunch":1,"totalGlobalMem":85030567936,"smClockRateKHz":1980000,)"
    R"("memClockRateKHz":2619000,"l2CacheSize":52428800,"cudaDeviceId":0,"deviceVer":900,)"
    R"("driverVer":13000,"deviceName":"NVIDIA H100 80GB HBM3"})";

// The attention variants the GPU test runs, as params.
std::vector<std::pair<std::string, SdpaParams>> host_variants() {
  std::vector<std::pair<std::string, SdpaParams>> out;
  out.emplace_back("plain fp16 d64", plain_params());
  SdpaParams odd = plain_params(2, 4, 77, 129, 128);
  odd.dtype = 16;
  out.emplace_back("bf16 d128 cross odd", odd);
  SdpaParams causal = plain_params(1, 2, 100, 100, 64);
  causal.causal = true;
  out.emplace_back("causal", causal);
  SdpaParams bias = plain_params(2, 4, 33, 65, 64);
  bias.has_bias = true;
  bias.bias_strides = {4 * 33 * 65, 0, 65, 1};  // [B, 1, Lq, Lk]
  out.emplace_back("bias [B,1,Lq,Lk]", bias);
  SdpaParams gqa = sample_params();
  gqa.engine = -1;
  out.emplace_back("everything", gqa);
  SdpaParams d256 = plain_params(1, 2, 64, 64, 256);
  out.emplace_back("d256", d256);
  return out;
}

const runtime::CudnnApi* installed_cudnn() {
  const char* dir = "/usr/local/cuda/lib64";
  if (!std::filesystem::exists(std::string(dir) + "/libcudnn.so.9")) return nullptr;
  static auto api = runtime::load_cudnn_from(dir);
  return api.ok() ? &*api : nullptr;
}

}  // namespace

TEST_CASE("cuDNN takes the attention graph's descriptors (host-only cuDNN calls)",
          "[cudnn][sdpa][runtime]") {
  // Every tensor, operation and the operation graph finalized by the real
  // cuDNN, with no GPU: each attribute's type and count, and the graph's
  // consistency, as cuDNN checks them.
  const runtime::CudnnApi* api = installed_cudnn();
  if (!api) return;
  INFO("cuDNN " << api->cudnnGetVersion());
  for (const auto& [name, p] : host_variants()) {
    INFO(name << ": " << engine::describe_sdpa(p));
    REQUIRE(engine::decode_sdpa_params(engine::encode_sdpa_params(p)).ok());
    Status st = runtime::check_sdpa_graph(*api, nullptr, p);
    INFO(st.message());
    CHECK(st.ok());
  }
}

TEST_CASE("cuDNN's attention engines take the graph for an H100 described as JSON",
          "[cudnn][sdpa][runtime]") {
  // cuDNN >= 9.8 plans for a device described by its properties. Without a
  // GPU the runtime-compiled flash-attention engines stop where they need the
  // driver (NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING, 3008) only after
  // their graph-pattern checks (a graph they do not take stops at
  // NOT_SUPPORTED, 3000, as the other engines do): at least one engine index
  // must get that far (or plan) for every variant.
  const runtime::CudnnApi* api = installed_cudnn();
  if (!api || api->cudnnGetVersion() < 90800) return;
  // Each refused recorded engine is a warning (falling back to the heuristics): kept quiet here.
  int warnings = 0;
  auto previous = runtime::set_warning_sink([&](const std::string&) { ++warnings; });
  for (const auto& [name, base] : host_variants()) {
    std::string seen;
    bool taken = false;
    for (int32_t engine = 0; engine < 16 && !taken; ++engine) {
      SdpaParams p = base;
      p.engine = engine;
      auto planned = runtime::plan_sdpa_for_device(*api, p, kH100Json, 256 << 20);
      if (planned.ok()) {
        taken = true;
        seen += fmt::format("\n  engine {}: planned ({})", engine, *planned);
        break;
      }
      const std::string& why = planned.status().message();
      CHECK(planned.status().code() == ErrorCode::kUnsupported);
      taken = has(why, fmt::format("recorded engine {} config: cudnnBackendFinalize: cuDNN error "
                                   "3008 (CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING)",
                                   engine));
      seen += fmt::format("\n  engine {}: {}", engine, why.substr(0, 300));
    }
    INFO(name << ": " << engine::describe_sdpa(base) << seen);
    CHECK(taken);
  }
  runtime::set_warning_sink(previous);
  CHECK(warnings > 0);
  // A head dim cuDNN does not take is refused before any cuDNN call.
  auto odd = runtime::plan_sdpa_for_device(*api, plain_params(1, 1, 8, 8, 12), kH100Json, 0);
  REQUIRE_FALSE(odd.ok());
  CHECK(odd.status().code() == ErrorCode::kUnsupported);
  CHECK(has(odd.status().message(), "multiples of 8"));
}
