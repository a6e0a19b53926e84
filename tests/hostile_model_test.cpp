// Hostile ONNX bytes: messages nested past the recursion limit, length
// prefixes claiming more bytes than the file has, dims of 0, -1, 2^62 and
// int64-overflowing products, huge declared tensors with tiny payloads. Each is
// refused with a Status (or, for legal-but-empty shapes, loads); none crashes
// or allocates the declared size (the sanitizer build would report either).
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "driver/load_model.h"
#include "importer/importer.h"
#include "tests/cli_util.h"
#include "tests/onnx_builder.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::testing;
using onnx::TensorProto;

namespace {

constexpr int64_t k2p62 = int64_t{1} << 62;

// Imports `m` from a file and runs shape inference (driver::load_model).
Status load(const OnnxModel& m) {
  TempDir dir;
  m.write(dir.file("m.onnx"));
  auto g = driver::load_model(dir.file("m.onnx"));
  return g.ok() ? Status::ok_status() : g.status();
}

std::string refusal(const OnnxModel& m) {
  Status st = load(m);
  REQUIRE_FALSE(st.ok());
  return st.message();
}

OnnxModel relu_model(std::vector<Dim> dims) {
  OnnxModel m;
  m.input("x", TensorProto::FLOAT, dims);
  m.node("Relu", {"x"}, {"y"}, "relu");
  m.output("y");
  return m;
}

// Varint as protobuf writes it.
std::string varint(uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
  return s;
}

}  // namespace

TEST_CASE("models nested past the protobuf recursion limit are refused", "[importer][hostile]") {
  // If -> then_branch graph -> If -> ... 200 levels: the parser stops at the
  // recursion limit (64) instead of recursing off the stack.
  onnx::GraphProto inner;
  inner.set_name("leaf");
  for (int level = 0; level < 200; ++level) {
    onnx::GraphProto outer;
    outer.set_name("g" + std::to_string(level));
    auto* n = outer.add_node();
    n->set_op_type("If");
    auto* a = n->add_attribute();
    a->set_name("then_branch");
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = std::move(inner);
    inner = std::move(outer);
  }
  OnnxModel m;
  *m.graph() = std::move(inner);
  auto g = importer::import_model_bytes(m.bytes(), "", "deep.onnx");
  REQUIRE_FALSE(g.ok());
  CHECK(contains(g.status().message(), "nested deeper than 64"));
}

TEST_CASE("a length prefix claiming more bytes than the file has is refused",
          "[importer][hostile]") {
  OnnxModel m = relu_model({int64_t{2}});
  std::string good = m.bytes();
  // Field 7 (graph), wire type 2, claiming 1 GiB / 2^62 bytes, followed by 5.
  for (uint64_t claimed : {uint64_t{1} << 30, uint64_t{1} << 62, uint64_t{0xffffffff}}) {
    std::string bad =
        good + std::string(1, static_cast<char>((7 << 3) | 2)) + varint(claimed) + "abcde";
    auto g = importer::import_model_bytes(bad, "", "lying.onnx");
    REQUIRE_FALSE(g.ok());
    CHECK(contains(g.status().message(), "not a valid ONNX protobuf"));
  }
  // A raw_data length prefix inside an initializer, cut off mid-payload.
  OnnxModel w;
  w.initializer(raw_tensor<float>("w", TensorProto::FLOAT, {256}, std::vector<float>(256, 1.f)));
  w.output("w");
  std::string bytes = w.bytes();
  auto g = importer::import_model_bytes(bytes.substr(0, bytes.size() - 100), "", "cut.onnx");
  CHECK_FALSE(g.ok());
}

TEST_CASE("input dims of 0, -1, 2^62 and overflowing products", "[importer][hostile]") {
  // 0 is a legal empty tensor.
  CHECK(load(relu_model({int64_t{0}, int64_t{3}})).ok());
  CHECK_FALSE(load(relu_model({int64_t{-1}})).ok());
  CHECK(contains(refusal(relu_model({k2p62})), "limit"));
  // 2^32 * 2^32 overflows int64: refused, not wrapped to 0.
  std::string e = refusal(relu_model({int64_t{1} << 32, int64_t{1} << 32}));
  CHECK((contains(e, "limit") || contains(e, "overflow")));
  e = refusal(relu_model({k2p62, k2p62, int64_t{4}}));
  CHECK((contains(e, "limit") || contains(e, "overflow")));
  // An overflow hidden behind a 0: still refused or empty, never a wrap.
  (void)load(relu_model({int64_t{0}, k2p62, k2p62}));
}

TEST_CASE("huge declared initializers with tiny payloads are refused before allocation",
          "[importer][hostile]") {
  // Each declares >= 2^40 elements with a payload of one value; the importer
  // must compare the declared size with the limit and the payload first.
  auto refused = [](TensorProto t) {
    OnnxModel m;
    m.initializer(std::move(t));
    m.output("w");
    return refusal(m);
  };
  CHECK(contains(refused(raw_tensor<float>("w", TensorProto::FLOAT, {k2p62}, {1.f})), "'w'"));
  CHECK(contains(refused(float_tensor("w", {int64_t{1} << 20, int64_t{1} << 20}, {1.f})), "'w'"));
  CHECK(contains(refused(int64_tensor("w", {k2p62, k2p62}, {1})), "'w'"));
  CHECK(contains(refused(raw_tensor<float>("w", TensorProto::FLOAT, {-1}, {1.f})), "'w'"));
  CHECK(contains(refused(raw_tensor<float>("w", TensorProto::FLOAT, {4, -4}, {1.f})), "'w'"));
  // A payload shorter than the (small) declared size is refused too.
  CHECK(contains(refused(raw_tensor<float>("w", TensorProto::FLOAT, {8}, {1.f, 2.f})), "'w'"));
}
