// graphc refit in-process (cmd/refit_pipeline.h): every shipped model, and
// fp16/bf16, channels-last with BatchNorm folded, generated kernels and a
// shape range, refit with new random weights gives exactly the bytes of a
// fresh build of the new model; a model whose graph, shapes, dtypes,
// attributes or structural constants differ is refused naming the item and
// part; new weights that change the plan are refused naming the kernel; an
// engine without a refit record is refused; the record survives a round
// trip through the build flags.
#include "driver/refit.h"

#include <google/protobuf/util/message_differencer.h>

#include <catch2/catch.hpp>

#include "cmd/build_recipe.h"
#include "driver/timing_cache.h"
#include "engine_format/conv_params.h"
#include "engine_format/library_algorithm.h"
#include "engine_format/refit_record.h"
#include "support/half.h"
#include "tests/cli_util.h"
#include "tests/onnx_builder.h"
#include "tests/refit_test_util.h"
#include "tests/test_util.h"

using namespace graphc;
using graphc::testing::contains;
using graphc::testing::OnnxModel;
using graphc::testing::TempDir;

namespace {

// Builds `f` for the model at `model` into ENGINE, builds `f` for the model
// with new random weights, refits ENGINE with that model; the refit must be
// the fresh build, byte for byte, and differ from ENGINE.
void check_refit_is_fresh_build(cli::BuildFlags f, const std::string& model) {
  TempDir dir;
  const std::string engine_path = dir.file("old.engine");
  const std::string new_model =
      dir.write("new.onnx", testing::reweighted_model(model, testing::test_rng()));
  f.model = model;
  auto old_bytes = testing::built_engine_bytes(f);
  INFO((old_bytes.ok() ? "" : old_bytes.status().message()));
  REQUIRE(old_bytes.ok());
  dir.write("old.engine", *old_bytes);
  f.model = new_model;
  auto fresh = testing::built_engine_bytes(f);
  INFO((fresh.ok() ? "" : fresh.status().message()));
  REQUIRE(fresh.ok());
  auto refit = testing::refit_engine_bytes(engine_path, new_model);
  INFO((refit.ok() ? "" : refit.status().message()));
  REQUIRE(refit.ok());
  CHECK(refit->size() == fresh->size());
  CHECK(*refit == *fresh);
  CHECK(*refit != *old_bytes);  // the weights did change
  auto header = engine::read_engine_header(*refit);
  REQUIRE(header.ok());
  CHECK(header->format_version == engine::kFormatVersionRefit);
  CHECK(header->min_reader_version < engine::kFormatVersionRefit);
}

cli::BuildFlags flags(const std::string& precision = "fp32") {
  cli::BuildFlags f = testing::refit_test_flags("");
  f.opt.precision = precision;
  return f;
}

// x [batch, 8] -> MatMul W [8, 16] -> Add b -> act(alpha) -> Mul s (one
// element) -> Reshape(shape) -> y: a model to vary one thing at a time.
struct Small {
  int32_t dtype = onnx::TensorProto::FLOAT;
  int64_t batch = 2;
  std::string act = "LeakyRelu";
  float alpha = 0.1f;
  std::vector<int64_t> bias_dims = {16};
  std::vector<int64_t> shape = {4, -1};
  float scale = 0.5f;
  bool extra_node = false;
  uint32_t seed = 1;
};

onnx::TensorProto tensor(const std::string& name, int32_t dtype, std::vector<int64_t> dims,
                         std::mt19937& rng, float fixed = 0) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::uniform_real_distribution<float> u(0.25f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = fixed != 0 ? fixed : (rng() % 2 ? u(rng) : -u(rng));
  if (dtype == onnx::TensorProto::FLOAT) return testing::raw_tensor(name, dtype, dims, v);
  std::vector<uint16_t> h;
  for (float x : v) h.push_back(float_to_half_bits(x));
  return testing::raw_tensor(name, dtype, dims, h);
}

std::string small_model(const Small& s) {
  std::mt19937 rng(s.seed);
  OnnxModel m(17, "small");
  m.input("x", s.dtype, {s.batch, 8});
  auto* y = m.graph()->add_output();  // no declared shape: inferred
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(s.dtype);
  m.initializer(tensor("W", s.dtype, {8, 16}, rng));
  m.initializer(tensor("b", s.dtype, s.bias_dims, rng));
  m.initializer(tensor("s", s.dtype, {}, rng, s.scale));
  m.initializer(testing::int64_tensor("shape", {2}, s.shape));
  m.node("MatMul", {"x", "W"}, {"mm"}, "mm");
  m.node("Add", {"mm", "b"}, {"biased"}, "bias");
  testing::attr_float(m.node(s.act, {"biased"}, {"a"}, "act"), "alpha", s.alpha);
  std::string scaled_in = "a";
  if (s.extra_node) {
    m.node("Neg", {"a"}, {"negated"}, "extra");
    scaled_in = "negated";
  }
  m.node("Mul", {scaled_in, "s"}, {"scaled"}, "scale");
  m.node("Reshape", {"scaled", "shape"}, {"y"}, "reshape");
  return m.bytes();
}

// Refit an engine of the base Small model with `variant`: the error.
Status refit_small(const Small& variant) {
  TempDir dir;
  cli::BuildFlags f = flags();
  f.model = dir.write("base.onnx", small_model(Small{}));
  auto base = testing::built_engine_bytes(f);
  if (!base.ok()) return base.status().with_context("building the base model");
  const std::string engine_path = dir.write("base.engine", *base);
  auto refit =
      testing::refit_engine_bytes(engine_path, dir.write("variant.onnx", small_model(variant)));
  return refit.ok() ? Status::ok_status() : refit.status();
}

void check_refused(const Small& variant, const std::string& names) {
  Status st = refit_small(variant);
  INFO(st.message());
  CHECK(st.code() == ErrorCode::kInvalidModel);
  CHECK(contains(st.message(), "differs from the one the engine was built from"));
  CHECK(contains(st.message(), names));
  CHECK(contains(st.message(), "rebuild with graphc build"));
}

}  // namespace

TEST_CASE("refit of each shipped model with new weights gives the bytes of a fresh build",
          "[refit]") {
  const std::string mlp = testing::source_path("models/mlp.onnx");
  const std::string conv = testing::source_path("models/conv_block.onnx");
  const std::string transformer = testing::source_path("models/transformer_block.onnx");
  SECTION("mlp fp32") { check_refit_is_fresh_build(flags(), mlp); }
  // Its 10-element bias was compiled into the GEMM's code before refit support.
  SECTION("mlp fp16") { check_refit_is_fresh_build(flags("fp16"), mlp); }
  SECTION("mlp generated GEMMs, two archs") {
    cli::BuildFlags f = flags();
    f.archs = {"sm_90", "sm_80"};
    f.lowering.gemm = "generated";
    check_refit_is_fresh_build(f, mlp);
  }
  // BatchNorm folded into the convs; fp16 convs run channels-last through cuDNN.
  SECTION("conv_block fp32") { check_refit_is_fresh_build(flags(), conv); }
  SECTION("conv_block fp16 channels-last") { check_refit_is_fresh_build(flags("fp16"), conv); }
  SECTION("conv_block fp16 generated convs") {
    cli::BuildFlags f = flags("fp16");
    f.lowering.conv = "generated";
    check_refit_is_fresh_build(f, conv);
  }
  SECTION("transformer_block fp32") {
    cli::BuildFlags f = flags();
    f.shapes.shapes = {"x:2x16x64"};
    check_refit_is_fresh_build(f, transformer);
  }
  SECTION("transformer_block bf16, cuBLASLt") {
    cli::BuildFlags f = flags("bf16");
    f.shapes.shapes = {"x:512x16x64"};  // large enough for cuBLASLt and split epilogues
    check_refit_is_fresh_build(f, transformer);
  }
}

TEST_CASE("refit keeps the algorithms a timing cache recorded, as a fresh build with it does",
          "[refit][tune]") {
  // A cache "from a GPU machine" for every library call: cuBLASLt configs
  // (mlp, all cuBLASLt) and cuDNN algorithms, which live in the conv
  // descriptor too (conv_block fp16).
  for (const char* name : {"mlp", "conv_block"}) {
    INFO(name);
    TempDir dir;
    cli::BuildFlags f = flags(std::string(name) == "mlp" ? "fp32" : "fp16");
    if (std::string(name) == "mlp") f.lowering.gemm = "cublaslt";
    f.model = testing::source_path(std::string("models/") + name + ".onnx");
    auto plain = cli::build_engine_from_flags(f, {});
    REQUIRE(plain.ok());
    driver::TimingCache cache;
    int32_t next = 1;
    for (const auto& k : plain->contents.manifest.kernels()) {
      if (!k.has_library_call()) continue;
      const engine::LibraryCall& c = k.library_call();
      const bool lt = c.library() == "cublasLt";
      engine::CublasLtAlgorithm a;
      a.algo_id = 20 + next;
      a.tile_id = 20;
      a.stages_id = 15;
      a.splitk_num = 1;
      a.library_version = 130100;
      a.compute_capability = 90;
      cache.put(
          {"NVIDIA H100 80GB HBM3", 90, c.library(), lt ? 130100u : 91900u, c.op(), c.params(),
           c.workspace_bytes()},
          {lt ? a.algo_id : next % 2, lt ? engine::encode_cublaslt_algorithm(a) : "", 0.01 * next});
      ++next;
    }
    REQUIRE(cache.size() > 0);
    f.timing_cache = dir.write("timing.cache", cache.serialize());
    check_refit_is_fresh_build(f, f.model);
    auto tuned = cli::build_engine_from_flags(f, {});
    REQUIRE(tuned.ok());
    int recorded = 0;
    for (const auto& k : tuned->contents.manifest.kernels())
      recorded += k.has_library_call() && k.library_call().tuned_ms() > 0;
    CHECK(recorded > 0);
  }
}

TEST_CASE("refit of an engine that serves a shape range gives the bytes of a fresh build",
          "[refit]") {
  // A GEMM of run-time M with a fused bias, ReLU and residual, then a
  // LayerNormalization: kernels that take run-time sizes.
  TempDir dir;
  OnnxModel m(17, "ranged");
  m.input("x", onnx::TensorProto::FLOAT, {std::string("batch"), 4, 16});
  m.output("y", onnx::TensorProto::FLOAT, {std::string("batch"), 4, 16});
  std::mt19937 rng(7);
  m.initializer(tensor("W", onnx::TensorProto::FLOAT, {16, 16}, rng));
  m.initializer(tensor("b", onnx::TensorProto::FLOAT, {16}, rng));
  m.initializer(tensor("gamma", onnx::TensorProto::FLOAT, {16}, rng));
  m.initializer(tensor("beta", onnx::TensorProto::FLOAT, {16}, rng));
  m.node("MatMul", {"x", "W"}, {"mm"}, "mm");
  m.node("Add", {"mm", "b"}, {"biased"}, "bias");
  m.node("Relu", {"biased"}, {"a"}, "relu");
  m.node("Add", {"a", "x"}, {"res"}, "residual");
  testing::attr_int(m.node("LayerNormalization", {"res", "gamma", "beta"}, {"y"}, "ln"), "axis",
                    -1);
  cli::BuildFlags f = flags();
  f.shapes.min = {"x:1x4x16"};
  f.shapes.opt = {"x:4x4x16"};
  f.shapes.max = {"x:32x4x16"};
  f.shapes.profiles = {"x:2x4x16/2x4x16/8x4x16"};
  check_refit_is_fresh_build(f, dir.write("ranged.onnx", m.bytes()));
}

TEST_CASE("refit accepts the same structure with other weights and refuses any other structure",
          "[refit]") {
  Small other_weights;
  other_weights.seed = 99;
  Status same = refit_small(other_weights);
  INFO(same.message());
  CHECK(same.ok());

  Small v;
  SECTION("an input shape") {
    v.batch = 3;
    v.shape = {6, -1};
    check_refused(v, "input 'x': its shape differs (this model's: float32[3x8])");
  }
  SECTION("an input dtype") {
    v.dtype = onnx::TensorProto::FLOAT16;
    check_refused(v, "input 'x': its dtype differs (this model's: float16[2x8])");
  }
  SECTION("an operator") {
    v.act = "Elu";
    check_refused(v, "node 'act' (Elu): its operator differs (this model's: Elu)");
  }
  SECTION("an attribute") {
    v.alpha = 0.2f;
    check_refused(v, "node 'act' (LeakyRelu): its attributes differ (this model's: alpha=0.2");
  }
  SECTION("a weight's shape") {
    v.bias_dims = {1, 16};
    check_refused(v, "constant 'b': its shape differs (this model's: float32[1x16])");
  }
  SECTION("a shape constant with the same result") {
    // [4, -1] and [-1, 8] both make [4, 8]: the value is the structure.
    v.shape = {-1, 8};
    check_refused(v, "constant 'shape': its value differs (this model's: int64[2] = [-1, 8])");
  }
  SECTION("a one-element constant the kernels take as a literal") {
    v.scale = 0.75f;
    check_refused(v, "constant 's': its value differs (this model's: float32[scalar] = [0.75])");
  }
  SECTION("a node more") {
    v.extra_node = true;
    check_refused(v,
                  "node 'scale' (Mul): its inputs differ (this model's: negated, s) (and 1 more)");
  }
}

TEST_CASE("refit refuses an engine without a refit record", "[refit]") {
  TempDir dir;
  cli::BuildFlags f = flags();
  f.model = dir.write("base.onnx", small_model(Small{}));
  auto built = cli::build_engine_from_flags(f, {});
  REQUIRE(built.ok());
  REQUIRE(built->contents.manifest.has_refit());
  built->contents.manifest.clear_refit();  // as graphc wrote engines before format 5
  auto bytes = engine::serialize_engine(built->contents);
  REQUIRE(bytes.ok());
  auto header = engine::read_engine_header(*bytes);
  REQUIRE(header.ok());
  CHECK(header->format_version == header->min_reader_version);  // as before: not 5
  const std::string path = dir.write("old.engine", *bytes);
  auto refit = testing::refit_engine_bytes(path, f.model);
  REQUIRE(!refit.ok());
  CHECK(refit.status().code() == ErrorCode::kInvalidEngine);
  CHECK(
      contains(refit.status().message(), "has no refit record: it was built before refit support"));
  CHECK(contains(refit.status().message(), "rebuild it"));
}

TEST_CASE("refit refuses new weights that change the plan, naming the kernel", "[refit]") {
  // A weight beyond float16's range keeps its MatMul in float32: the same
  // structure compiles to other kernels.
  TempDir dir;
  cli::BuildFlags f = flags("fp16");
  f.model = testing::source_path("models/mlp.onnx");
  auto base = testing::built_engine_bytes(f);
  REQUIRE(base.ok());
  const std::string engine_path = dir.write("mlp.engine", *base);
  onnx::ModelProto m;
  m.ParseFromString(testing::reweighted_model(f.model, testing::test_rng()));
  for (auto& t : *m.mutable_graph()->mutable_initializer())
    if (t.name() == "fc1.weight") {
      float big = 1e6f;
      std::memcpy(t.mutable_raw_data()->data(), &big, sizeof big);
    }
  std::string bytes;
  m.SerializeToString(&bytes);
  auto refit = testing::refit_engine_bytes(engine_path, dir.write("big.onnx", bytes));
  REQUIRE(!refit.ok());
  INFO(refit.status().message());
  CHECK(refit.status().code() == ErrorCode::kInvalidModel);
  CHECK(contains(refit.status().message(), "compiles to a different engine"));
  CHECK(contains(refit.status().message(), "kernels[1]"));
  CHECK(contains(refit.status().message(), "ONNX nodes fc0/MatMul"));
}

TEST_CASE("the refit record holds the build's options and gives the same flags back", "[refit]") {
  cli::BuildFlags f = flags("fp16");
  f.archs = {"sm_80", "sm_90"};
  f.opt.convert_io = true;
  f.opt.disable_pass = {"fuse-elementwise", "cse", "fuse-elementwise"};
  f.lowering.gemm = "generated";
  f.lowering.conv = "cudnn";
  f.lowering.allow_tf32 = true;
  f.shapes.min = {"x:1x16"};
  f.shapes.opt = {"x:4x16"};
  f.shapes.max = {"x:8x16"};
  f.shapes.shapes = {"m:2x2"};
  f.shapes.profiles = {"x:2x16/2x16/4x16"};
  auto profiles = cli::parse_shape_profiles(f.shapes);
  REQUIRE(profiles.ok());
  const engine::BuildRecipe recipe = cli::record_recipe(f, f.archs, *profiles);
  CHECK(driver::recipe_flags(recipe) ==
        "--arch sm_80 --arch sm_90 --precision fp16 --convert-io --disable-pass cse "
        "--disable-pass fuse-elementwise --gemm generated --conv cudnn --allow-tf32 --shape m:2x2 "
        "--min-shape x:1x16 --opt-shape x:4x16 --max-shape x:8x16 --shape-profile "
        "x:2x16/2x16/4x16");
  const cli::BuildFlags back = cli::flags_from_recipe(recipe);
  const engine::BuildRecipe again =
      cli::record_recipe(back, cli::recipe_archs(recipe), cli::recipe_profiles(recipe));
  CHECK(google::protobuf::util::MessageDifferencer::Equals(recipe, again));
}

TEST_CASE("a refit record that does not match the engine's modules is refused", "[refit]") {
  TempDir dir;
  cli::BuildFlags f = flags();
  f.model = dir.write("base.onnx", small_model(Small{}));
  auto built = cli::build_engine_from_flags(f, {});
  REQUIRE(built.ok());
  REQUIRE(built->contents.manifest.refit().module_sources_size() > 0);
  built->contents.manifest.mutable_refit()->add_module_sources(1);
  auto bytes = engine::serialize_engine(built->contents);
  REQUIRE(!bytes.ok());
  CHECK(contains(bytes.status().message(), "module source hashes for"));
}

TEST_CASE("manifest_difference names the first field, both values and the kernel", "[refit]") {
  engine::Manifest a;
  for (const char* name : {"k0", "k1"}) {
    engine::Kernel* k = a.add_kernels();
    k->set_name(name);
    k->add_onnx_nodes(std::string(name) + "_node");
    for (int d = 0; d < 3; ++d) k->add_grid(4);
  }
  engine::Manifest b = a;
  CHECK(engine::manifest_difference(a, b, "A", "B").empty());
  b.mutable_kernels(1)->set_grid(0, 8);
  b.set_arena_bytes(512);  // kernels are named before the rest
  CHECK(engine::manifest_difference(a, b, "A", "B") ==
        "kernels[1].grid[0] (kernel 1 'k1', ONNX nodes k1_node): 4 in A, 8 in B");
  b = a;
  b.add_kernels()->set_name("k2");
  CHECK(contains(engine::manifest_difference(a, b, "A", "B"),
                 "kernels[2] (kernel 2 'k2'): none in A"));
}
