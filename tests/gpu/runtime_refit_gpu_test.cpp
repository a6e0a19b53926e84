// Engine::refit_weights and graphc_engine_refit: a loaded engine takes the
// weights of a refit engine file in place (read back from the device, they
// are the file's weights section), its contexts keep running and, on a GPU,
// give what a fresh load of the refit engine gives; an engine of another
// model, one without a refit record and a damaged weights section are
// refused, the first two and the damaged one (checked first) with the
// device's weights untouched; a damaged one uploaded without the check
// leaves the engine refusing to run until a good refit. [copy-only]: ctest
// runs these on the stand-in driver too (copies are real there, kernels
// do nothing, so outputs are compared on a GPU only).
#include <dlfcn.h>

#include <catch2/catch.hpp>

#include "runtime/engine_impl.h"
#include "runtime/engine_loader.h"
#include "runtime/graphc_runtime.h"
#include "tests/onnx_builder.h"
#include "tests/refit_test_util.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::runtime;
using graphc::testing::TempDir;

namespace {

bool on_stand_in_driver() {
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return lib && ::dlsym(lib, "graphc_fake_cuda_live_allocations");
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The engine's weights as the device holds them.
std::string device_weights(const Engine& e) {
  const Engine::Impl& impl = e.impl();
  std::string out(static_cast<size_t>(impl.weights_bytes), '\0');
  impl.api->cuCtxSetCurrent(impl.context);
  REQUIRE(impl.api->cuMemcpyDtoH(out.data(), impl.weights, out.size()) == CUDA_SUCCESS);
  return out;
}

std::string weights_section(const std::string& engine_path) {
  auto contents = engine::read_engine_file(engine_path);
  REQUIRE(contents.ok());
  return contents->weights;
}

// The outputs of one run on the same input.
std::vector<std::string> run_once(ExecutionContext& ctx, const std::string& input) {
  std::vector<std::string> outputs(ctx.engine().bindings().size() - 1);
  for (size_t i = 0; i < outputs.size(); ++i)
    outputs[i].resize(static_cast<size_t>(ctx.engine().bindings()[i + 1].bytes));
  const std::string_view in[] = {input};
  Status st = ctx.run_host(in, outputs);
  INFO(st.message());
  REQUIRE(st.ok());
  return outputs;
}

struct Engines {
  TempDir dir;
  std::string old_engine, refit_engine, other_engine;
};

// mlp built, refit with new weights, and conv_block built: three files.
void make_engines(Engines& e) {
  const std::string mlp = testing::source_path("models/mlp.onnx");
  auto old_bytes = testing::built_engine_bytes(testing::refit_test_flags(mlp));
  REQUIRE(old_bytes.ok());
  e.old_engine = e.dir.write("old.engine", *old_bytes);
  const std::string new_model =
      e.dir.write("new.onnx", testing::reweighted_model(mlp, testing::test_rng()));
  auto refit = testing::refit_engine_bytes(e.old_engine, new_model);
  INFO((refit.ok() ? "" : refit.status().message()));
  REQUIRE(refit.ok());
  e.refit_engine = e.dir.write("refit.engine", *refit);
  auto other = testing::built_engine_bytes(
      testing::refit_test_flags(testing::source_path("models/conv_block.onnx")));
  REQUIRE(other.ok());
  e.other_engine = e.dir.write("other.engine", *other);
}

std::shared_ptr<const engine::EngineFile> open(const std::string& path) {
  auto file = engine::EngineFile::open(path);
  REQUIRE(file.ok());
  return std::move(*file);
}

}  // namespace

TEST_CASE("refit_weights puts a refit engine's weights on the device in place",
          "[gpu][runtime][copy-only][refit]") {
  Engines e;
  make_engines(e);
  auto engine = load_engine_file(e.old_engine);
  INFO((engine.ok() ? "" : engine.status().message()));
  REQUIRE(engine.ok());
  auto ctx = (*engine)->create_context();
  REQUIRE(ctx.ok());
  const ir::Tensor x = testing::random_tensor(ir::DType::kFloat32, {4, 64}, testing::test_rng());
  const std::string input(reinterpret_cast<const char*>(x.data()), x.byte_size());
  const auto before = run_once(**ctx, input);
  CHECK(device_weights(**engine) == weights_section(e.old_engine));

  Status st = (*engine)->refit_weights(*open(e.refit_engine));
  INFO(st.message());
  REQUIRE(st.ok());
  const std::string new_weights = weights_section(e.refit_engine);
  CHECK(new_weights != weights_section(e.old_engine));
  CHECK(device_weights(**engine) == new_weights);
  const auto after = run_once(**ctx, input);  // the same context, its CUDA graph reused
  if (!on_stand_in_driver()) {
    auto fresh = load_engine_file(e.refit_engine);
    REQUIRE(fresh.ok());
    auto fresh_ctx = (*fresh)->create_context();
    REQUIRE(fresh_ctx.ok());
    CHECK(after == run_once(**fresh_ctx, input));
    CHECK(after != before);
  }

  SECTION("an engine of another model is refused, the weights untouched") {
    Status other = (*engine)->refit_weights(*open(e.other_engine));
    INFO(other.message());
    CHECK(other.code() == ErrorCode::kInvalidEngine);
    CHECK(contains(other.message(), "is not the loaded engine with other weights"));
    CHECK(device_weights(**engine) == new_weights);
  }
  SECTION("a damaged weights section is refused before the device is touched") {
    std::string bytes = testing::read_file_bytes(e.refit_engine);
    bytes.back() = static_cast<char>(bytes.back() ^ 0x40);  // the last weights byte
    const std::string damaged = e.dir.write("damaged.engine", bytes);
    Status bad = (*engine)->refit_weights(*open(e.old_engine));  // back to the old weights
    REQUIRE(bad.ok());
    bad = (*engine)->refit_weights(*open(damaged));
    INFO(bad.message());
    CHECK(contains(bad.message(), "checksum mismatch"));
    CHECK(device_weights(**engine) == weights_section(e.old_engine));
    run_once(**ctx, input);
  }
  SECTION("a damaged section uploaded unchecked stops the contexts until a good refit") {
    std::string bytes = testing::read_file_bytes(e.refit_engine);
    bytes.back() = static_cast<char>(bytes.back() ^ 0x40);
    const std::string damaged = e.dir.write("damaged.engine", bytes);
    RefitOptions unchecked;
    unchecked.verify_first = false;
    unchecked.upload_chunk_bytes = 4096;  // several chunks through the staging
    Status bad = (*engine)->refit_weights(*open(damaged), unchecked);
    INFO(bad.message());
    CHECK(contains(bad.message(), "they are now incomplete"));
    Status run = (*ctx)->enqueue();
    CHECK(contains(run.message(), "the engine's weights are incomplete"));
    REQUIRE((*engine)->refit_weights(*open(e.refit_engine), unchecked).ok());
    CHECK(device_weights(**engine) == new_weights);
    CHECK(run_once(**ctx, input) == after);
  }
}

TEST_CASE("an engine without a refit record cannot be refit", "[gpu][runtime][copy-only][refit]") {
  Engines e;
  make_engines(e);
  auto contents = engine::read_engine_file(e.old_engine);
  REQUIRE(contents.ok());
  contents->manifest.clear_refit();
  REQUIRE(engine::write_engine_file(e.dir.file("norecord.engine"), *contents).ok());
  auto old = load_engine_file(e.dir.file("norecord.engine"));
  REQUIRE(old.ok());
  Status st = (*old)->refit_weights(*open(e.refit_engine));
  CHECK(st.code() == ErrorCode::kInvalidEngine);
  CHECK(contains(st.message(), "the loaded engine has no refit record"));
  // Nor can a loaded engine take a file without one.
  auto loaded = load_engine_file(e.old_engine);
  REQUIRE(loaded.ok());
  st = (*loaded)->refit_weights(*open(e.dir.file("norecord.engine")));
  CHECK(st.code() == ErrorCode::kInvalidEngine);
  CHECK(contains(st.message(), "built before refit support"));
}

TEST_CASE("graphc_engine_refit through the C API", "[gpu][runtime][copy-only][refit]") {
  Engines e;
  make_engines(e);
  graphc_engine* engine = nullptr;
  REQUIRE(graphc_engine_load(e.old_engine.c_str(), &engine) == GRAPHC_OK);
  CHECK(graphc_engine_refit(engine, nullptr) == GRAPHC_ERROR_INVALID_ARGUMENT);
  CHECK(graphc_engine_refit(nullptr, e.refit_engine.c_str()) == GRAPHC_ERROR_INVALID_ARGUMENT);
  CHECK(graphc_engine_refit(engine, e.dir.file("missing.engine").c_str()) ==
        GRAPHC_ERROR_NOT_FOUND);
  CHECK(graphc_engine_refit(engine, e.other_engine.c_str()) == GRAPHC_ERROR_INVALID_ENGINE);
  CHECK(contains(graphc_last_error(), "is not the loaded engine with other weights"));
  CHECK(graphc_engine_refit(engine, e.refit_engine.c_str()) == GRAPHC_OK);
  CHECK(std::string(graphc_last_error()).empty());
  graphc_engine_destroy(engine);
}
