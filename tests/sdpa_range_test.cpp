// cuDNN SDPA over a shape range (emit/library/sdpa_range.h, Kernel.preferred_call,
// runtime/cudnn_sdpa.h) without a GPU: the run-time fields of the call, the
// build's choice (the call's params at a shape are the ones a static build of
// that shape records), what stays generated and why, inspect's account, and
// damaged preferred calls refused by name.
// (The per-shape plans' cache and worker: background_plans_test.cpp; plans
// and results on a GPU: tests/gpu/sdpa_range_gpu_test.cpp.)
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "engine_format/engine_file.h"
#include "engine_format/sdpa_params.h"
#include "engine_format/shape_range.h"
#include "tests/attention_range_models.h"
#include "tests/cli_util.h"
#include "tests/onnx_builder.h"

using namespace graphc;
using namespace graphc::testing;
using engine::SdpaParams;

namespace {

SdpaParams bshd_params(int64_t b, int64_t h, int64_t l, int64_t d) {
  SdpaParams p;
  p.batch = b;
  p.heads = p.kv_heads = h;
  p.seq_q = p.seq_kv = l;
  p.head_dim = p.value_dim = d;
  p.q_strides = p.k_strides = p.v_strides = p.o_strides = engine::packed_bshd_strides(h, l, d);
  p.scale = 0.125f;
  p.has_bias = true;
  p.bias_strides = {l, 0, 0, 1};
  return p;
}

const engine::Kernel* attention_kernel(const engine::EngineContents& c) {
  for (const auto& k : c.manifest.kernels())
    if (k.name().rfind("attention/", 0) == 0 || k.name().rfind("cudnn_sdpa/", 0) == 0) return &k;
  return nullptr;
}

// The fp16 BERT-style attention alone (q, k, v [batch, seq, 128], 2 heads,
// an additive mask [batch, seq]) over batch x seq.
struct CoreModel {
  TempDir dir;
  std::string onnx = dir.file("core.onnx");
  CoreModel() { bert_attention_block(128, 2, false).write(onnx); }
  static std::string profile(const std::string& mn, const std::string& opt, const std::string& mx) {
    auto qkv = [&](const std::string& b, const std::string& s) { return b + "x" + s + "x128"; };
    auto split = [](const std::string& bs) { return std::make_pair(bs.substr(0, bs.find('x')), bs.substr(bs.find('x') + 1)); };
    auto [b0, s0] = split(mn);
    auto [b1, s1] = split(opt);
    auto [b2, s2] = split(mx);
    std::string out;
    for (const char* t : {"q", "k", "v"})
      out += std::string(out.empty() ? "" : ",") + t + ":" + qkv(b0, s0) + "/" + qkv(b1, s1) + "/" +
             qkv(b2, s2);
    return out + ",attention_mask:" + mn + "/" + opt + "/" + mx;
  }
  CliResult build_range(const std::string& engine, const std::string& extra = "") const {
    return run_graphc("build " + onnx + " --shape-profile " + profile("1x16", "4x64", "8x256") +
                      " --arch sm_90 --precision fp16 " + extra + " -o " + engine);
  }
  CliResult build_static(int64_t b, int64_t s, const std::string& engine) const {
    const std::string qkv = std::to_string(b) + "x" + std::to_string(s) + "x128";
    return run_graphc("build " + onnx + " --shape q:" + qkv + ",k:" + qkv + ",v:" + qkv +
                      ",attention_mask:" + std::to_string(b) + "x" + std::to_string(s) +
                      " --arch sm_90 --precision fp16 -o " + engine);
  }
};

// The preferred call's params at symbol values `symbols` (the engine's order).
Expected<SdpaParams> preferred_at(const engine::EngineContents& c, const engine::Kernel& k,
                                  const std::vector<int64_t>& symbols) {
  const auto programs = engine::size_programs(c.manifest.shape_range());
  std::vector<int64_t> values;
  for (const auto& p : programs) {
    auto v = evaluate_size_program(p, symbols);
    values.push_back(v.ok() ? *v : -1);
  }
  auto built = engine::decode_sdpa_params(k.preferred_call().params());
  if (!built.ok()) return built.status();
  return engine::sdpa_params_at(*built, {k.preferred_call().sizes().begin(), k.preferred_call().sizes().end()},
                                values);
}

}  // namespace

TEST_CASE("sdpa params follow the shape through their run-time fields", "[sdpa-range]") {
  const SdpaParams built = bshd_params(4, 2, 64, 64);
  // batch, seq_q, seq_kv and every stride that holds the sequence length vary.
  std::vector<int32_t> sizes(engine::kSdpaRangeFields, -1);
  sizes[0] = 0;  // batch
  sizes[3] = sizes[4] = 1;  // seq_q, seq_kv
  for (int t = 0; t < 4; ++t) sizes[static_cast<size_t>(5 + 4 * t)] = 2;  // [b] stride = seq*H*D
  sizes[21] = 1;  // the bias' batch stride is the key length
  const std::vector<int64_t> values = {3, 77, 77 * 2 * 64};
  auto at = engine::sdpa_params_at(built, sizes, values);
  REQUIRE(at.ok());
  CHECK(*at == bshd_params(3, 2, 77, 64));
  CHECK(engine::sdpa_range_fields(*at)[0] == 3);
  CHECK(engine::sdpa_range_field_name(3) == "seq_q");
  CHECK(engine::sdpa_range_field_name(21) == "bias_strides[0]");
  // All fixed: the built params.
  auto same = engine::sdpa_params_at(built, std::vector<int32_t>(engine::kSdpaRangeFields, -1), {});
  REQUIRE(same.ok());
  CHECK(*same == built);
  // A field count other than 25, an index past the values, or params that
  // are not valid at the shape (a batch of 0) are refused by name.
  CHECK(engine::sdpa_params_at(built, {0, 1}, values).status().code() == ErrorCode::kInvalidEngine);
  std::vector<int32_t> far = sizes;
  far[0] = 9;
  auto past = engine::sdpa_params_at(built, far, values);
  CHECK_THAT(past.status().message(), Catch::Contains("sdpa batch: size 9 of 3"));
  auto zero = engine::sdpa_params_at(built, sizes, {0, 77, 77 * 2 * 64});
  CHECK(zero.status().code() == ErrorCode::kInvalidEngine);
  CHECK_THAT(zero.status().message(), Catch::Contains("sdpa parameters at this shape"));
}

TEST_CASE("attention over a shape range prefers cuDNN SDPA with each shape's parameters",
          "[sdpa-range][shape-range][attention]") {
  CoreModel m;
  const std::string range = m.dir.file("range.engine");
  auto built = m.build_range(range);
  INFO(built.output);
  REQUIRE(built.exit_code == 0);
  auto c = engine::read_engine_file(range);
  REQUIRE(c.ok());
  // A compatible addition: the writer's version is 6, any reader of ranges reads it.
  auto header = engine::read_engine_file_header(range);
  REQUIRE(header.ok());
  CHECK(header->format_version == engine::kFormatVersionPreferredCall);
  CHECK(header->min_reader_version == engine::kFormatVersionShapeRange);
  const engine::Kernel* k = attention_kernel(*c);
  REQUIRE(k != nullptr);
  // The generated kernel with run-time sizes stays: the fallback.
  CHECK_THAT(k->module_entry(), Catch::StartsWith("graphc_attn_f16_d64"));
  CHECK(k->size_block_size() > 0);
  CHECK_FALSE(k->has_library_call());
  REQUIRE(k->has_preferred_call());
  const engine::LibraryCall& call = k->preferred_call();
  CHECK(call.library() == "cudnn");
  CHECK(call.op() == "sdpa");
  REQUIRE(call.sizes_size() == engine::kSdpaRangeFields);
  CHECK(call.sizes(0) >= 0);  // batch
  CHECK(call.sizes(1) < 0);   // heads fixed
  CHECK(call.sizes(3) >= 0);  // seq_q
  CHECK(call.sizes(4) >= 0);  // seq_kv
  REQUIRE(c->manifest.shape_range().symbols_size() == 2);
  const bool batch_first = c->manifest.shape_range().symbols(0) == "batch";

  // At each shape the call is what a static build of that shape records.
  for (auto [b, s] : {std::pair<int64_t, int64_t>{4, 64}, {2, 16}, {8, 256}, {3, 77}, {7, 129}}) {
    INFO("batch " << b << " seq " << s);
    const std::string fixed = m.dir.file("static.engine");
    auto sb = m.build_static(b, s, fixed);
    INFO(sb.output);
    REQUIRE(sb.exit_code == 0);
    auto sc = engine::read_engine_file(fixed);
    REQUIRE(sc.ok());
    const engine::Kernel* sk = attention_kernel(*sc);
    REQUIRE(sk != nullptr);
    REQUIRE(sk->has_library_call());
    auto want = engine::decode_sdpa_params(sk->library_call().params());
    REQUIRE(want.ok());
    auto got = preferred_at(*c, *k, batch_first ? std::vector<int64_t>{b, s}
                                                : std::vector<int64_t>{s, b});
    REQUIRE(got.ok());
    CHECK(engine::describe_sdpa(*got) == engine::describe_sdpa(*want));
    CHECK(*got == *want);
  }
  // At batch 1 the static build broadcasts the mask (stride 0 on a dim of 1),
  // the range keeps its stride: the same call either way.
  auto one = preferred_at(*c, *k, batch_first ? std::vector<int64_t>{1, 16} : std::vector<int64_t>{16, 1});
  REQUIRE(one.ok());
  CHECK(one->batch == 1);
  CHECK(one->seq_kv == 16);
  CHECK(one->bias_strides == SdpaParams::Strides{16, 0, 0, 1});

  // inspect says which implementation runs each attention kernel, and why.
  auto report = run_graphc("inspect " + range);
  INFO(report.output);
  CHECK(contains(report.output, "attention over the shape range"));
  CHECK(contains(report.output, "cuDNN fused SDPA, planned per shape"));
  CHECK(contains(report.output, "per shape the faster of it and the generated kernel"));
  CHECK(contains(report.output, "1 attention kernel cuDNN runs per shape"));
  auto json = run_graphc("inspect " + range + " --json");
  CHECK(contains(json.output, "\"preferred_call\""));
  CHECK(contains(json.output, "\"preferred_library_calls\": 1"));
  CHECK(contains(json.output, "\"lowering\": \"cuDNN fused SDPA, planned per shape"));
  auto model = run_graphc("inspect " + m.onnx + " --precision fp16 --shape-profile " +
                          CoreModel::profile("1x16", "4x64", "8x256"));
  INFO(model.output);
  CHECK(contains(model.output, "planned per shape at run time (the generated kernel where cuDNN "
                               "refuses a shape)"));
}

// Over a range the exporters' Shape -> Gather -> Concat arithmetic stays, so
// GPT-2's head merge (Transpose then Reshape) is also read by the Shape that
// sizes the Reshape: the attention still takes the 3-D form (no head split
// or merge transposes), as in a static build, the Shape reading a view.
TEST_CASE("GPT-2's head merge read by a Shape folds into the attention over a range",
          "[sdpa-range][shape-range][attention]") {
  TempDir dir;
  const std::string engine = dir.file("gpt2.engine");
  auto built = run_graphc("build " + source_path("models/tiny/gpt2_tiny.onnx") +
                          " --min-shape input_ids:1x16,attention_mask:1x16 --opt-shape "
                          "input_ids:8x64,attention_mask:8x64 --max-shape "
                          "input_ids:32x128,attention_mask:32x128 --precision fp16 --arch sm_90 -o " +
                          engine);
  INFO(built.output);
  REQUIRE(built.exit_code == 0);
  auto c = engine::read_engine_file(engine);
  REQUIRE(c.ok());
  int attention = 0;
  for (const auto& k : c->manifest.kernels()) {
    INFO(k.name());
    CHECK_FALSE(contains(k.name(), "transpose"));
    if (!k.has_preferred_call()) continue;
    ++attention;
    auto p = engine::decode_sdpa_params(k.preferred_call().params());
    REQUIRE(p.ok());
    CHECK(contains(engine::describe_sdpa(*p), "q=bshd k=bshd v=bshd o=bshd"));
  }
  CHECK(attention == 2);
}

TEST_CASE("attention cuDNN cannot take over the range stays generated, saying why",
          "[sdpa-range][shape-range][attention]") {
  CoreModel m;
  // --attention generated: no preferred call.
  auto gen = m.build_range(m.dir.file("gen.engine"), "--attention generated");
  INFO(gen.output);
  REQUIRE(gen.exit_code == 0);
  auto c = engine::read_engine_file(m.dir.file("gen.engine"));
  REQUIRE(c.ok());
  const engine::Kernel* k = attention_kernel(*c);
  REQUIRE(k != nullptr);
  CHECK_FALSE(k->has_preferred_call());
  auto header = engine::read_engine_file_header(m.dir.file("gen.engine"));
  REQUIRE(header.ok());
  CHECK(header->format_version < engine::kFormatVersionPreferredCall);
  auto report = run_graphc("inspect " + m.dir.file("gen.engine"));
  CHECK(contains(report.output, "generated: sizes at run time (cuDNN SDPA does not take this "
                                "attention at every shape of the range"));

  // A mask over the keys that is one value long (broadcast over the keys):
  // cuDNN takes one value per key, so no shape of the range goes to cuDNN.
  TempDir dir;
  OnnxModel short_mask(23);
  for (const char* x : {"q", "k", "v"})
    short_mask.input(x, onnx::TensorProto::FLOAT16, {Dim("batch"), int64_t{2}, Dim("seq"), int64_t{64}});
  short_mask.input("mask", onnx::TensorProto::FLOAT16, {Dim("batch"), int64_t{1}, int64_t{1}, int64_t{1}});
  short_mask.node("Attention", {"q", "k", "v", "mask"}, {"y"}, "attn");
  short_mask.output("y");
  short_mask.write(dir.file("short.onnx"));
  const std::string p = "q:1x2x16x64/2x2x32x64/4x2x64x64,k:1x2x16x64/2x2x32x64/4x2x64x64,"
                        "v:1x2x16x64/2x2x32x64/4x2x64x64,mask:1x1x1x1/2x1x1x1/4x1x1x1";
  auto r = run_graphc("inspect " + dir.file("short.onnx") + " --shape-profile " + p);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.output, "attn: generated"));
  CHECK_FALSE(contains(r.output, "planned per shape"));
}

TEST_CASE("damaged preferred attention calls are refused by name",
          "[sdpa-range][shape-range][engine-format]") {
  CoreModel m;
  const std::string out = m.dir.file("range.engine");
  auto built = m.build_range(out);
  INFO(built.output);
  REQUIRE(built.exit_code == 0);
  auto good = engine::read_engine_file(out);
  REQUIRE(good.ok());
  int index = -1;
  for (int i = 0; i < good->manifest.kernels_size(); ++i)
    if (good->manifest.kernels(i).has_preferred_call()) index = i;
  REQUIRE(index >= 0);
  auto refused = [&](const std::function<void(engine::EngineContents&, engine::Kernel&)>& damage,
                     const std::string& says) {
    engine::EngineContents c = *good;
    damage(c, *c.manifest.mutable_kernels(index));
    auto bytes = engine::serialize_engine(c);
    INFO(says);
    REQUIRE_FALSE(bytes.ok());
    CHECK(bytes.status().code() == ErrorCode::kInvalidEngine);
    CHECK_THAT(bytes.status().message(), Catch::Contains(says));
  };
  using K = engine::Kernel;
  using C = engine::EngineContents;
  refused([](C&, K& k) { k.mutable_preferred_call()->set_library("cublasLt"); },
          "only cudnn sdpa may be preferred");
  refused([](C&, K& k) { k.mutable_preferred_call()->mutable_sizes()->RemoveLast(); },
          "24 run-time fields, an sdpa over a shape range has 25");
  refused([](C&, K& k) { k.mutable_preferred_call()->set_sizes(0, 5000); },
          "preferred call: size index 5000 is out of range");
  refused([](C&, K& k) {  // the batch follows the keys' length: past the tensors
            k.mutable_preferred_call()->set_sizes(0, k.preferred_call().sizes(4));
          },
          "needs more than tensor");
  refused([](C&, K& k) { k.mutable_preferred_call()->set_tuned_ms(1.0); }, "no tuned algorithm");
  refused([](C&, K& k) { k.mutable_args()->RemoveLast(); }, "takes 5 tensors, not 4");
  refused([](C& c, K&) { c.manifest.clear_shape_range(); }, "but the engine no shape range");
  refused([](C&, K& k) { k.set_copy(true); }, "only a generated kernel has a preferred");
  // The same bytes without the field are a valid engine that runs the kernel.
  engine::EngineContents plain = *good;
  plain.manifest.mutable_kernels(index)->clear_preferred_call();
  auto bytes = engine::serialize_engine(plain);
  REQUIRE(bytes.ok());
  REQUIRE(engine::parse_engine(*bytes).ok());
  auto header = engine::read_engine_header(*bytes);
  REQUIRE(header.ok());
  CHECK(header->format_version < engine::kFormatVersionPreferredCall);
}
