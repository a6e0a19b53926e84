// Loading an engine file streams its weights to the device through pinned
// staging buffers (runtime/weights_upload.h): the device holds exactly the
// file's weights, whatever the chunk size; the staging is freed; a corrupted
// weights section is refused with nothing left allocated. The engine is made
// of copies only, so it runs on the stand-in driver too ([copy-only]), where
// deferred copies catch a staging buffer refilled before its copy ran.
#include <dlfcn.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>

#include "engine_format/engine_file.h"
#include "runtime/engine.h"
#include "runtime/engine_loader.h"
#include "runtime/weights_upload.h"

using namespace graphc;
using namespace graphc::runtime;

namespace {

namespace fs = std::filesystem;

template <typename Fn>
Fn fake_hook(const char* name) {
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return lib ? reinterpret_cast<Fn>(::dlsym(lib, name)) : nullptr;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

struct TempFile {
  std::string path = (fs::temp_directory_path() /
                      ("graphc_weights_stream_" + std::to_string(::getpid()) + ".engine"))
                         .string();
  ~TempFile() { std::remove(path.c_str()); }
};

// x -> y (a copy), and every weight byte -> w_out: the whole section is one
// uint8 tensor, so the output shows every uploaded byte.
engine::EngineContents weights_echo_engine(size_t weights_bytes, uint32_t seed) {
  engine::EngineContents c;
  engine::Manifest& m = c.manifest;
  m.set_producer("graphc 0.1.0");
  m.set_graph_name("weights_echo");
  m.set_precision("fp32");
  auto tensor = [&](const char* name, int64_t bytes, engine::Tensor::Location loc) {
    engine::Tensor* t = m.add_tensors();
    t->set_name(name);
    t->set_dtype(2);  // uint8
    t->add_shape(bytes);
    t->set_location(loc);
    t->set_bytes(static_cast<uint64_t>(bytes));
  };
  tensor("x", 64, engine::Tensor::INPUT);
  tensor("y", 64, engine::Tensor::OUTPUT);
  tensor("w", static_cast<int64_t>(weights_bytes), engine::Tensor::WEIGHTS);
  tensor("w_out", static_cast<int64_t>(weights_bytes), engine::Tensor::OUTPUT);
  auto bind = [](engine::Binding* b, const char* name, int tensor) {
    b->set_name(name);
    b->set_tensor(tensor);
  };
  bind(m.add_inputs(), "x", 0);
  bind(m.add_outputs(), "y", 1);
  bind(m.add_outputs(), "w_out", 3);
  for (auto [from, to] : {std::pair{0, 1}, std::pair{2, 3}}) {
    engine::Kernel* k = m.add_kernels();
    k->set_name("copy");
    k->set_copy(true);
    k->add_args(from);
    k->add_args(to);
  }
  m.set_weights_bytes(weights_bytes);
  std::mt19937 rng(seed);
  c.weights.resize(weights_bytes);
  for (char& ch : c.weights) ch = static_cast<char>(rng());
  return c;
}

}  // namespace

TEST_CASE("an engine file's weights stream to the device in chunks, byte for byte",
          "[gpu][runtime][copy-only][weights]") {
  auto defer = fake_hook<void (*)(int)>("graphc_fake_cuda_defer_async");
  auto live_host = fake_hook<int (*)()>("graphc_fake_cuda_live_host_allocations");
  TempFile file;
  const size_t weights = (3 << 20) + 768;  // 3 MiB and a partial last chunk
  const engine::EngineContents c = weights_echo_engine(weights, 7);
  REQUIRE(engine::write_engine_file(file.path, c).ok());
  for (size_t chunk : {size_t{1} << 20, size_t{4096} + 256, kDefaultUploadChunkBytes}) {
    INFO("chunk " << chunk);
    const int host_before = live_host ? live_host() : 0;
    if (defer) defer(1);  // copies run only when waited for, as on a GPU
    EngineOptions options;
    options.upload_chunk_bytes = chunk;
    auto engine = load_engine_file(file.path, options);
    if (defer) defer(0);
    INFO((engine.ok() ? "" : engine.status().message()));
    REQUIRE(engine.ok());
    CHECK((*engine)->weights_bytes() == static_cast<int64_t>(weights));
    if (live_host) CHECK(live_host() == host_before);  // the staging is freed
    auto ctx = (*engine)->create_context();
    REQUIRE(ctx.ok());
    const std::string x(64, '\x31');
    std::string_view in[] = {x};
    std::vector<std::string> out(2);
    REQUIRE((*ctx)->run_host(in, out).ok());
    CHECK(out[0] == x);
    REQUIRE(out[1].size() == weights);
    CHECK(out[1] == c.weights);
  }
  if (!defer) WARN("on a real driver: the stand-in's deferred-copy check does not apply");
}

TEST_CASE("a corrupted weights section is refused at load, nothing left allocated",
          "[gpu][runtime][copy-only][weights]") {
  auto live = fake_hook<size_t (*)()>("graphc_fake_cuda_live_allocations");
  auto live_host = fake_hook<int (*)()>("graphc_fake_cuda_live_host_allocations");
  TempFile file;
  const engine::EngineContents c = weights_echo_engine((2 << 20) + 256, 11);
  REQUIRE(engine::write_engine_file(file.path, c).ok());
  {
    std::fstream f(file.path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-1000, std::ios::end);
    const char byte = static_cast<char>(f.get() ^ 0x40);
    f.seekp(-1000, std::ios::end);
    f.put(byte);
  }
  const size_t before = live ? live() : 0;
  const int host_before = live_host ? live_host() : 0;
  EngineOptions options;
  options.upload_chunk_bytes = 1 << 20;
  auto engine = load_engine_file(file.path, options);
  REQUIRE_FALSE(engine.ok());
  CHECK(contains(engine.status().message(), "(weights) is corrupted: checksum mismatch"));
  CHECK(contains(engine.status().message(), file.path));
  if (live) CHECK(live() == before);
  if (live_host) CHECK(live_host() == host_before);
}
