// Importer: external data. A valid reference loads; anything that could read
// outside the model's folder, through a link, or past the file is refused.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "importer/importer.h"
#include "tests/cli_util.h"
#include "tests/onnx_builder.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::testing;
using onnx::TensorProto;

namespace {

// A float initializer 'w' of `dims` whose data lives in `location`.
onnx::TensorProto external_tensor(const std::vector<int64_t>& dims, const std::string& location,
                                  const std::string& offset = "", const std::string& length = "") {
  TensorProto t;
  t.set_name("w");
  t.set_data_type(TensorProto::FLOAT);
  for (auto d : dims) t.add_dims(d);
  t.set_data_location(TensorProto::EXTERNAL);
  auto add = [&](const char* k, const std::string& v) {
    if (v.empty()) return;
    auto* e = t.add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add("location", location);
  add("offset", offset);
  add("length", length);
  return t;
}

// Writes model.onnx into `dir` with initializer `t` as its output; imports it.
Expected<ir::Graph> import_with(const std::string& dir, const TensorProto& t,
                                const std::string& model_name = "model.onnx") {
  OnnxModel m;
  m.initializer(t);
  m.output("w");
  std::string path = dir + "/" + model_name;
  m.write(path);
  return importer::import_model_file(path);
}

std::string bytes_of(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// The error of an import that must fail; it must name the tensor 'w'.
std::string refusal(const std::string& dir, const TensorProto& t) {
  auto g = import_with(dir, t);
  REQUIRE_FALSE(g.ok());
  INFO(g.status().message());
  CHECK(contains(g.status().message(), "'w'"));
  return g.status().message();
}

}  // namespace

TEST_CASE("external data within the model's folder loads", "[importer]") {
  // Random floats at offset 16 of weights.bin (after junk bytes), in a file next
  // to the model and in a subfolder, load exactly; without offset/length the
  // whole file is read.
  TempDir dir;
  auto vals = random_tensor(ir::DType::kFloat32, {6}, test_rng(), 0.5, 9.0).to_f64_vector();
  std::vector<float> f(vals.begin(), vals.end());
  dir.write("weights.bin", std::string(16, '\x7f') + bytes_of(f));
  std::filesystem::create_directory(dir.file("sub"));
  dir.write("sub/part.bin", bytes_of(f));
  for (const auto& t :
       {external_tensor({2, 3}, "weights.bin", "16", "24"),
        external_tensor({2, 3}, "./sub/part.bin"), external_tensor({6}, "sub//part.bin", "0")}) {
    auto g = import_with(dir.path(), t);
    INFO(g.status().message());
    REQUIRE(g.ok());
    const auto& w = *g->value(*g->find_value("w")).constant;
    REQUIRE(w.numel() == 6);
    for (int64_t i = 0; i < 6; ++i) CHECK(w.get_f64(i) == f[static_cast<size_t>(i)]);
  }
}

TEST_CASE("external weights are read in place from a mapping, copied where they must be",
          "[importer]") {
  // A large model's weights are not copied into the build's memory: an
  // aligned float tensor reads its bytes from the mapped file; a misaligned
  // one is copied (so reads stay aligned). Both hold the file's values, and
  // writing to a mapped tensor copies it first and leaves the file alone.
  TempDir dir;
  auto vals = random_tensor(ir::DType::kFloat32, {6}, test_rng(), -3.0, 3.0).to_f64_vector();
  std::vector<float> f(vals.begin(), vals.end());
  dir.write("w.bin", std::string(16, '\x7f') + bytes_of(f) + std::string(3, '\x01') + bytes_of(f));
  struct Case {
    const char* offset;
    bool borrowed;
  };
  for (Case c : {Case{"16", true}, Case{"43", false}}) {
    INFO("offset " << c.offset);
    auto g = import_with(dir.path(), external_tensor({2, 3}, "w.bin", c.offset, "24"));
    INFO(g.status().message());
    REQUIRE(g.ok());
    ir::Tensor w = *g->value(*g->find_value("w")).constant;
    CHECK(w.is_borrowed() == c.borrowed);
    for (int64_t i = 0; i < 6; ++i) CHECK(w.get_f64(i) == f[static_cast<size_t>(i)]);
    w.release_resident();  // a hint: the values read back the same
    for (int64_t i = 0; i < 6; ++i) CHECK(w.get_f64(i) == f[static_cast<size_t>(i)]);
    w.set_f64(0, 42.0);
    CHECK_FALSE(w.is_borrowed());
    CHECK(w.get_f64(0) == 42.0);
    CHECK(w.get_f64(5) == f[5]);
  }
  std::ifstream in(dir.file("w.bin"), std::ios::binary);
  std::string now((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(now == std::string(16, '\x7f') + bytes_of(f) + std::string(3, '\x01') + bytes_of(f));
}

TEST_CASE("external data paths leaving the model's folder are refused", "[importer]") {
  // Absolute paths, '..' anywhere, backslashes and empty/"." locations are
  // refused before any file is opened; each message gives the reason.
  TempDir dir;
  dir.write("weights.bin", std::string(24, '\x41'));
  std::filesystem::create_directory(dir.file("sub"));
  std::string abs = dir.file("weights.bin");
  CHECK(contains(refusal(dir.path(), external_tensor({6}, abs)), "absolute"));
  CHECK(contains(refusal(dir.path(), external_tensor({6}, "/etc/passwd")), "absolute"));
  // The model sits in sub/, the data one level up.
  auto g = import_with(dir.file("sub"), external_tensor({6}, "../weights.bin"));
  REQUIRE_FALSE(g.ok());
  CHECK(contains(g.status().message(), "leaves the model's folder"));
  CHECK(contains(refusal(dir.path(), external_tensor({6}, "sub/../../weights.bin")),
                 "leaves the model's folder"));
  CHECK(contains(refusal(dir.path(), external_tensor({6}, "sub/../weights.bin")),
                 "leaves the model's folder"));
  CHECK(contains(refusal(dir.path(), external_tensor({6}, "..\\weights.bin")), "backslash"));
  CHECK(contains(refusal(dir.path(), external_tensor({6}, ".")), "names no file"));
  CHECK(contains(refusal(dir.path(), external_tensor({6}, "")), "empty location"));
  CHECK(contains(refusal(dir.path(), external_tensor({6}, "sub")), "not a regular file"));
  CHECK(contains(refusal(dir.path(), external_tensor({6}, "missing.bin")), "does not exist"));
  CHECK(contains(refusal(dir.path(), external_tensor({6}, "weights.bin/x")), "not a folder"));
}

TEST_CASE("external data through symlinks or hard links is refused", "[importer]") {
  // A symlinked file, a symlinked parent folder and a hard-linked file are all
  // refused, even though their targets are inside the model's folder.
  TempDir dir;
  std::vector<float> f = {1.5f, -2.5f, 3.5f, -4.5f, 5.5f, -6.5f};
  dir.write("weights.bin", bytes_of(f));
  std::filesystem::create_directory(dir.file("real"));
  dir.write("real/w.bin", bytes_of(f));
  dir.write("solo.bin", bytes_of(f));
  REQUIRE(::symlink("weights.bin", dir.file("link.bin").c_str()) == 0);
  REQUIRE(::symlink("real", dir.file("linkdir").c_str()) == 0);
  REQUIRE(::link(dir.file("solo.bin").c_str(), dir.file("hard.bin").c_str()) == 0);
  // The real files load (weights.bin has one link; real/w.bin too).
  REQUIRE(import_with(dir.path(), external_tensor({6}, "weights.bin")).ok());
  REQUIRE(import_with(dir.path(), external_tensor({6}, "real/w.bin")).ok());
  std::string e = refusal(dir.path(), external_tensor({6}, "link.bin"));
  CHECK(contains(e, "symbolic link"));
  e = refusal(dir.path(), external_tensor({6}, "linkdir/w.bin"));
  CHECK(contains(e, "symbolic link"));
  CHECK(contains(e, "linkdir"));
  e = refusal(dir.path(), external_tensor({6}, "hard.bin"));
  CHECK(contains(e, "hard link"));
}

TEST_CASE("external data offsets and lengths are checked", "[importer]") {
  // Negative offset, an offset near INT64_MAX (overflow of offset + length),
  // a length that is not a number, a length not matching the shape, and a file
  // shorter than offset + length: all refused with the numbers in the message.
  TempDir dir;
  std::vector<float> f = {1.5f, -2.5f, 3.5f, -4.5f, 5.5f, -6.5f, 7.5f, -8.5f, 9.5f, -10.5f};
  dir.write("weights.bin", bytes_of(f));  // 40 bytes
  CHECK(contains(refusal(dir.path(), external_tensor({6}, "weights.bin", "-4")),
                 "negative offset -4"));
  CHECK(contains(refusal(dir.path(), external_tensor({6}, "weights.bin", "9223372036854775800")),
                 "beyond the file"));
  CHECK(contains(
      refusal(dir.path(), external_tensor({6}, "weights.bin", "0", "99999999999999999999999")),
      "not an int64"));
  CHECK(
      contains(refusal(dir.path(), external_tensor({6}, "weights.bin", "12abc")), "not an int64"));
  CHECK(
      contains(refusal(dir.path(), external_tensor({6}, "weights.bin", "0", "4611686018427387904")),
               "does not match"));
  // 100 floats (400 bytes) from a 40-byte file; then 6 floats at offset 24.
  CHECK(contains(refusal(dir.path(), external_tensor({100}, "weights.bin")), "beyond the file"));
  CHECK(contains(refusal(dir.path(), external_tensor({6}, "weights.bin", "24", "24")),
                 "offset 24 + length 24 is beyond the file's 40 bytes"));
  // A declared 2^40-element tensor is refused on its size before the file is read.
  auto g = import_with(dir.path(), external_tensor({int64_t{1} << 40}, "weights.bin"));
  REQUIRE_FALSE(g.ok());
  CHECK(g.status().code() == ErrorCode::kOutOfRange);
}

TEST_CASE("external data is refused for a model read from memory", "[importer]") {
  // import_model_bytes with no folder cannot resolve locations.
  OnnxModel m;
  m.initializer(external_tensor({6}, "weights.bin"));
  m.output("w");
  auto g = importer::import_model_bytes(m.bytes(), "", "mem.onnx");
  REQUIRE_FALSE(g.ok());
  CHECK(contains(g.status().message(), "read from memory"));
}

TEST_CASE("bad model files are refused with the file named", "[importer]") {
  // A missing file, an empty one, truncated copies of a shipped model, random
  // bytes, a text file, a PNG header, a folder and a FIFO all fail with an
  // error naming the path (and the FIFO does not block).
  TempDir dir;
  auto expect_error = [](const std::string& path, const std::string& what) {
    auto g = importer::import_model_file(path);
    REQUIRE_FALSE(g.ok());
    INFO(g.status().message());
    CHECK(contains(g.status().message(), path));
    if (!what.empty()) CHECK(contains(g.status().message(), what));
  };
  expect_error(dir.file("absent.onnx"), "no such file");
  expect_error(dir.write("empty.onnx", ""), "empty");
  expect_error(dir.write("notes.onnx", "This is a text file, not a model.\nSecond line.\n"), "");
  expect_error(dir.write("image.onnx", std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16)), "");
  expect_error(dir.path(), "directory");
  REQUIRE(::mkfifo(dir.file("pipe.onnx").c_str(), 0600) == 0);
  expect_error(dir.file("pipe.onnx"), "not a regular file");

  std::ifstream in(source_path("models/mlp.onnx"), std::ios::binary);
  std::string model((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(model.size() > 1000);
  for (size_t cut : {model.size() - 1, model.size() / 2, size_t{10}, size_t{1}})
    expect_error(dir.write("cut.onnx", model.substr(0, cut)), "");

  auto& rng = test_rng();
  std::uniform_int_distribution<int> byte(0, 255), len(1, 4096);
  for (int i = 0; i < 200; ++i) {
    std::string junk(static_cast<size_t>(len(rng)), '\0');
    for (auto& c : junk) c = static_cast<char>(byte(rng));
    auto g = importer::import_model_file(dir.write("junk.onnx", junk));
    CHECK_FALSE(g.ok());  // no crash, no hang, an error
  }
}
