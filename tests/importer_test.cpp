// Importer: every initializer dtype and encoding, Constant nodes, opsets,
// unsupported operators, graph structure errors, hostile tensors and files.
// (External data: importer_external_test.cpp.)
#include "importer/importer.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <limits>

#include "support/half.h"
#include "tests/cli_util.h"
#include "tests/onnx_builder.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::testing;
using ir::DType;
using onnx::TensorProto;

namespace {

Expected<ir::Graph> import(const OnnxModel& m) {
  return importer::import_model_bytes(m.bytes(), "", "test.onnx");
}

// The constant value named `name` in an imported graph.
const ir::Tensor& constant_of(const ir::Graph& g, const std::string& name) {
  auto id = g.find_value(name);
  REQUIRE(id.has_value());
  REQUIRE(g.value(*id).constant.has_value());
  return *g.value(*id).constant;
}

// Imports a model whose only content is initializer `t`, listed as the output.
ir::Tensor import_initializer(const TensorProto& t) {
  OnnxModel m;
  m.initializer(t);
  m.output(t.name(), t.data_type());
  auto g = import(m);
  INFO(g.status().message());
  REQUIRE(g.ok());
  return constant_of(*g, t.name());
}

std::string error_of(const OnnxModel& m) {
  auto g = import(m);
  REQUIRE_FALSE(g.ok());
  return g.status().message();
}

// Random values of integer type T over its whole range, with both extremes.
template <typename T>
std::vector<T> random_ints(size_t n) {
  std::uniform_int_distribution<int64_t> small(std::numeric_limits<T>::min() < 0 ? -100 : 1, 100);
  std::vector<T> v;
  v.push_back(std::numeric_limits<T>::min());
  v.push_back(std::numeric_limits<T>::max());
  auto& rng = test_rng();
  for (size_t i = 2; i < n; ++i) {
    if constexpr (sizeof(T) == 8 && std::is_unsigned_v<T>) {
      v.push_back(static_cast<T>(rng()) << 32 | rng());  // above INT64_MAX too
    } else {
      std::uniform_int_distribution<int64_t> d(static_cast<int64_t>(std::numeric_limits<T>::min()),
                                               static_cast<int64_t>(std::numeric_limits<T>::max()));
      v.push_back(static_cast<T>(i % 2 ? d(rng) : small(rng)));
    }
  }
  return v;
}

template <typename T>
TensorProto with_dims(TensorProto t, const std::vector<T>& v) {
  t.add_dims(2);
  t.add_dims(static_cast<int64_t>(v.size() / 2));
  return t;
}

// Checks an imported integer tensor element by element against `v`.
template <typename T>
void check_ints(const ir::Tensor& t, DType dt, const std::vector<T>& v) {
  REQUIRE(t.dtype() == dt);
  REQUIRE(t.shape() == ir::Shape{2, static_cast<int64_t>(v.size() / 2)});
  for (size_t i = 0; i < v.size(); ++i) {
    if constexpr (std::is_unsigned_v<T>)
      CHECK(t.get_u64(static_cast<int64_t>(i)) == static_cast<uint64_t>(v[i]));
    else
      CHECK(t.get_i64(static_cast<int64_t>(i)) == static_cast<int64_t>(v[i]));
  }
}

template <typename T>
void check_int_dtype(int32_t onnx_type, DType dt) {
  auto v = random_ints<T>(10);
  // raw_data: the little-endian bytes of T.
  TensorProto raw = with_dims(raw_tensor<T>("w", onnx_type, {}, v), v);
  check_ints(import_initializer(raw), dt, v);
  // Typed field: int64_data for int64, uint64_data for uint32/uint64, int32_data otherwise.
  TensorProto typed;
  typed.set_name("w");
  typed.set_data_type(onnx_type);
  typed = with_dims(typed, v);
  for (T x : v) {
    if constexpr (std::is_same_v<T, int64_t>)
      typed.add_int64_data(x);
    else if constexpr (std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>)
      typed.add_uint64_data(x);
    else
      typed.add_int32_data(static_cast<int32_t>(x));
  }
  check_ints(import_initializer(typed), dt, v);
}

}  // namespace

TEST_CASE("integer initializers of every width load from raw_data and typed fields", "[importer]") {
  // Random values over each type's full range (extremes included) survive the
  // import exactly, from raw bytes and from the typed protobuf field.
  check_int_dtype<int8_t>(TensorProto::INT8, DType::kInt8);
  check_int_dtype<int16_t>(TensorProto::INT16, DType::kInt16);
  check_int_dtype<int32_t>(TensorProto::INT32, DType::kInt32);
  check_int_dtype<int64_t>(TensorProto::INT64, DType::kInt64);
  check_int_dtype<uint8_t>(TensorProto::UINT8, DType::kUInt8);
  check_int_dtype<uint16_t>(TensorProto::UINT16, DType::kUInt16);
  check_int_dtype<uint32_t>(TensorProto::UINT32, DType::kUInt32);
  check_int_dtype<uint64_t>(TensorProto::UINT64, DType::kUInt64);
}

TEST_CASE("float and double initializers load from raw_data and typed fields", "[importer]") {
  // Random floats/doubles (plus denormal and huge values) are bit-exact after import.
  auto& rng = test_rng();
  std::uniform_real_distribution<double> d(-1e3, 1e3);
  std::vector<float> f = {1.5e-42f, -3.0e38f};
  std::vector<double> g = {4.9e-324, -1.7e308};
  while (f.size() < 8) f.push_back(static_cast<float>(d(rng)));
  while (g.size() < 8) g.push_back(d(rng));
  for (bool typed : {false, true}) {
    TensorProto tf = typed ? float_tensor("f", {2, 4}, f)
                           : raw_tensor<float>("f", TensorProto::FLOAT, {2, 4}, f);
    TensorProto td = raw_tensor<double>("d", TensorProto::DOUBLE, {4, 2}, g);
    if (typed) {
      td.clear_raw_data();
      for (double x : g) td.add_double_data(x);
    }
    ir::Tensor a = import_initializer(tf), b = import_initializer(td);
    REQUIRE(a.dtype() == DType::kFloat32);
    REQUIRE(b.dtype() == DType::kFloat64);
    CHECK(a.shape() == ir::Shape{2, 4});
    CHECK(b.shape() == ir::Shape{4, 2});
    CHECK(std::memcmp(a.data(), f.data(), f.size() * 4) == 0);
    CHECK(std::memcmp(b.data(), g.data(), g.size() * 8) == 0);
  }
}

TEST_CASE("float16 and bfloat16 initializers keep their bit patterns", "[importer]") {
  // Known bit patterns (1.0, -2.0, 65504, 3.140625 ...) plus random ones are
  // stored unchanged from raw_data and from int32_data, and read back as the
  // right values.
  auto& rng = test_rng();
  std::vector<uint16_t> h = {0x3C00, 0xC000, 0x7BFF, 0x0001};   // 1, -2, 65504, 2^-24
  std::vector<uint16_t> bf = {0x3F80, 0x4049, 0xC2F7, 0x0080};  // 1, 3.140625, -123.5, 2^-126
  std::uniform_int_distribution<int> bits(0, 0x7BFF);           // finite, either sign below
  for (int i = 0; i < 6; ++i) {
    h.push_back(static_cast<uint16_t>(bits(rng) | (i % 2 ? 0x8000 : 0)));
    bf.push_back(static_cast<uint16_t>(bits(rng) | (i % 2 ? 0x8000 : 0)));
  }
  for (bool typed : {false, true}) {
    for (auto [onnx_type, dt, v] : {std::tuple{TensorProto::FLOAT16, DType::kFloat16, h},
                                    std::tuple{TensorProto::BFLOAT16, DType::kBFloat16, bf}}) {
      TensorProto t = raw_tensor<uint16_t>("w", onnx_type, {10}, v);
      if (typed) {
        t.clear_raw_data();
        for (uint16_t x : v) t.add_int32_data(x);
      }
      ir::Tensor out = import_initializer(t);
      REQUIRE(out.dtype() == dt);
      REQUIRE(out.numel() == 10);
      for (int64_t i = 0; i < 10; ++i)
        CHECK(out.data_as<uint16_t>()[i] == v[static_cast<size_t>(i)]);
    }
  }
  TensorProto t = raw_tensor<uint16_t>("w", TensorProto::FLOAT16, {10}, h);
  ir::Tensor half = import_initializer(t);
  CHECK(half.get_f64(0) == 1.0);
  CHECK(half.get_f64(1) == -2.0);
  CHECK(half.get_f64(2) == 65504.0);
  CHECK(half.get_f64(3) == std::ldexp(1.0, -24));
  ir::Tensor b16 = import_initializer(raw_tensor<uint16_t>("w", TensorProto::BFLOAT16, {10}, bf));
  CHECK(b16.get_f64(0) == 1.0);
  CHECK(b16.get_f64(1) == 3.140625);
  CHECK(b16.get_f64(2) == -123.5);
  CHECK(b16.get_f64(3) == std::ldexp(1.0, -126));
}

TEST_CASE("bool initializers load from raw_data and int32_data", "[importer]") {
  // A bool pattern loads from both encodings; a raw byte of 7 is read as true.
  std::vector<uint8_t> v = {1, 0, 0, 1, 1, 1, 0, 7};
  ir::Tensor a = import_initializer(raw_tensor<uint8_t>("b", TensorProto::BOOL, {8}, v));
  TensorProto typed;
  typed.set_name("b");
  typed.set_data_type(TensorProto::BOOL);
  typed.add_dims(8);
  for (uint8_t x : v) typed.add_int32_data(x);
  ir::Tensor b = import_initializer(typed);
  for (const auto& t : {a, b}) {
    REQUIRE(t.dtype() == DType::kBool);
    for (int64_t i = 0; i < 8; ++i) CHECK(t.get_i64(i) == (v[static_cast<size_t>(i)] ? 1 : 0));
    CHECK(t.data()[7] == 1);
  }
}

TEST_CASE("unsupported element types are named", "[importer]") {
  // STRING and complex initializers are refused as unsupported, naming the tensor and type.
  TensorProto s;
  s.set_name("labels");
  s.set_data_type(TensorProto::STRING);
  s.add_dims(1);
  s.add_string_data("cat");
  OnnxModel m;
  m.initializer(s);
  m.output("labels");
  auto g = import(m);
  REQUIRE_FALSE(g.ok());
  CHECK(g.status().code() == ErrorCode::kUnsupported);
  CHECK(contains(g.status().message(), "labels"));
  CHECK(contains(g.status().message(), "STRING"));
  OnnxModel m2;
  TensorProto c = raw_tensor<float>("z", TensorProto::COMPLEX64, {1}, std::vector<float>{1.f, 2.f});
  m2.initializer(c);
  m2.output("z");
  CHECK(contains(error_of(m2), "COMPLEX64"));
  OnnxModel m3;
  TensorProto u = raw_tensor<float>("u", 999, {1}, std::vector<float>{1.f});
  m3.initializer(u);
  m3.output("u");
  CHECK(contains(error_of(m3), "999"));
}

TEST_CASE("Constant nodes in every form become constant values", "[importer]") {
  // value (dense tensor), value_float(s), value_int(s) and sparse_value (linear
  // and coordinate indices) all import as constants with the right dtype,
  // shape and values.
  auto& rng = test_rng();
  std::vector<float> dense(6);
  for (auto& x : dense)
    x = static_cast<float>(random_tensor(DType::kFloat32, {}, rng, 1, 9).get_f64(0));
  OnnxModel m(13);
  attr_tensor(m.node("Constant", {}, {"c_value"}, "k0"), "value", float_tensor("", {2, 3}, dense));
  attr_float(m.node("Constant", {}, {"c_float"}, "k1"), "value_float", 3.25f);
  attr_floats(m.node("Constant", {}, {"c_floats"}, "k2"), "value_floats", {1.5f, -2.25f, 7.0f});
  attr_int(m.node("Constant", {}, {"c_int"}, "k3"), "value_int", -42);
  attr_ints(m.node("Constant", {}, {"c_ints"}, "k4"), "value_ints", {3, -1, 9000000000});
  {
    auto* a = m.node("Constant", {}, {"c_sparse"}, "k5")->add_attribute();
    a->set_name("sparse_value");
    a->set_type(onnx::AttributeProto::SPARSE_TENSOR);
    auto* sp = a->mutable_sparse_tensor();
    sp->add_dims(2);
    sp->add_dims(4);
    *sp->mutable_values() = float_tensor("", {3}, {5.5f, -1.25f, 2.0f});
    *sp->mutable_indices() = int64_tensor("", {3}, {1, 4, 7});
  }
  {
    auto* a = m.node("Constant", {}, {"c_sparse2d"}, "k6")->add_attribute();
    a->set_name("sparse_value");
    a->set_type(onnx::AttributeProto::SPARSE_TENSOR);
    auto* sp = a->mutable_sparse_tensor();
    sp->add_dims(2);
    sp->add_dims(4);
    *sp->mutable_values() = int64_tensor("", {2}, {-9, 11});
    *sp->mutable_indices() = int64_tensor("", {2, 2}, {0, 3, 1, 2});
  }
  for (auto name : {"c_value", "c_float", "c_floats", "c_int", "c_ints", "c_sparse", "c_sparse2d"})
    m.output(name);
  auto g = import(m);
  INFO(g.status().message());
  REQUIRE(g.ok());
  const auto& v = constant_of(*g, "c_value");
  CHECK(v.dtype() == DType::kFloat32);
  CHECK(v.shape() == ir::Shape{2, 3});
  for (int64_t i = 0; i < 6; ++i) CHECK(v.get_f64(i) == dense[static_cast<size_t>(i)]);
  const auto& f = constant_of(*g, "c_float");
  CHECK((f.dtype() == DType::kFloat32 && f.shape().empty() && f.get_f64(0) == 3.25));
  const auto& fs = constant_of(*g, "c_floats");
  CHECK(fs.shape() == ir::Shape{3});
  CHECK(fs.to_f64_vector() == std::vector<double>{1.5, -2.25, 7.0});
  const auto& i = constant_of(*g, "c_int");
  CHECK((i.dtype() == DType::kInt64 && i.shape().empty() && i.get_i64(0) == -42));
  const auto& is = constant_of(*g, "c_ints");
  CHECK(is.dtype() == DType::kInt64);
  CHECK(is.to_i64_vector() == std::vector<int64_t>{3, -1, 9000000000});
  const auto& sp = constant_of(*g, "c_sparse");
  CHECK(sp.shape() == ir::Shape{2, 4});
  CHECK(sp.to_f64_vector() == std::vector<double>{0, 5.5, 0, 0, -1.25, 0, 0, 2.0});
  const auto& sp2 = constant_of(*g, "c_sparse2d");
  CHECK(sp2.dtype() == DType::kInt64);
  CHECK(sp2.to_i64_vector() == std::vector<int64_t>{0, 0, 0, -9, 0, 0, 11, 0});
  CHECK(g->live_node_count() == 0);  // Constant nodes are values, not nodes
}

TEST_CASE("sparse initializers load, bad sparse indices are refused", "[importer]") {
  // A graph-level sparse initializer densifies; an out-of-range or
  // mismatched index tensor is an error naming the sparse tensor.
  auto make = [](std::vector<int64_t> idx, std::vector<int64_t> idx_dims) {
    OnnxModel m;
    auto* sp = m.graph()->add_sparse_initializer();
    sp->add_dims(3);
    sp->add_dims(3);
    *sp->mutable_values() = float_tensor("emb", {2}, {4.5f, -7.0f});
    *sp->mutable_indices() = int64_tensor("", idx_dims, idx);
    m.output("emb");
    return m;
  };
  auto g = import(make({2, 8}, {2}));
  INFO(g.status().message());
  REQUIRE(g.ok());
  CHECK(constant_of(*g, "emb").to_f64_vector() ==
        std::vector<double>{0, 0, 4.5, 0, 0, 0, 0, 0, -7});
  CHECK(contains(error_of(make({2, 9}, {2})), "out of range"));
  CHECK(contains(error_of(make({0, 1, 3, 0}, {2, 2})), "out of range"));
  CHECK(contains(error_of(make({2}, {1})), "do not match"));
  CHECK(contains(error_of(make({2, -1}, {2})), "emb"));
}

TEST_CASE("bad Constant nodes are refused with the node named", "[importer]") {
  // Two value attributes, a mistyped one, an unknown one, string constants,
  // an empty 'value' and inputs on a Constant are all errors naming the node.
  {
    OnnxModel m;
    auto* n = m.node("Constant", {}, {"c"}, "two");
    attr_int(n, "value_int", 3);
    attr_float(n, "value_float", 2.f);
    m.output("c");
    std::string e = error_of(m);
    CHECK(contains(e, "node 'two' (Constant)"));
    CHECK(contains(e, "exactly one"));
  }
  {
    OnnxModel m;
    attr_floats(m.node("Constant", {}, {"c"}, "mistyped"), "value_int", {1.f});
    m.output("c");
    std::string e = error_of(m);
    CHECK(contains(e, "'mistyped'"));
    CHECK(contains(e, "value_int"));
    CHECK(contains(e, "INT"));
  }
  {
    OnnxModel m;
    attr_int(m.node("Constant", {}, {"c"}, "odd"), "value_complex", 1);
    m.output("c");
    CHECK(contains(error_of(m), "unknown attribute 'value_complex'"));
  }
  {
    OnnxModel m;
    auto* a = m.node("Constant", {}, {"c"}, "str")->add_attribute();
    a->set_name("value_string");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s("hello");
    m.output("c");
    auto g = import(m);
    REQUIRE_FALSE(g.ok());
    CHECK(g.status().code() == ErrorCode::kUnsupported);
    CHECK(contains(g.status().message(), "'str'"));
  }
  {
    OnnxModel m;
    auto* a = m.node("Constant", {}, {"c"}, "empty")->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    m.output("c");
    CHECK(contains(error_of(m), "holds no tensor"));
  }
}

TEST_CASE("opsets outside 1..28 are refused with the range", "[importer]") {
  // Opset 29 (newer than ONNX 1.23) and 0 of the default domain are unsupported;
  // the message gives the model's opset and the supported range. 1 (legacy, no
  // nodes), 7, 21, 22 and 28 import.
  for (int64_t opset : {29, 0}) {
    OnnxModel m(opset);
    m.input("x", TensorProto::FLOAT, {int64_t{2}});
    m.output("x");
    auto g = import(m);
    REQUIRE_FALSE(g.ok());
    CHECK(g.status().code() == ErrorCode::kUnsupported);
    CHECK(contains(g.status().message(), fmt::format("opset {} of ai.onnx", opset)));
    CHECK(contains(g.status().message(), "7 to 28"));
    CHECK(contains(g.status().message(), "test.onnx"));
  }
  for (int64_t opset : {1, 7, 21, 22, 28}) {
    OnnxModel m(opset);
    m.input("x", TensorProto::FLOAT, {int64_t{2}});
    m.output("x");
    CHECK(import(m).ok());
  }
}

TEST_CASE("unsupported operators are all listed at once with domain, opset and node",
          "[importer]") {
  // One custom-domain node gives exactly "unsupported operator X (domain,
  // opset N) at node 'n'"; several unsupported nodes are all listed in one error.
  {
    OnnxModel m(17);
    m.set_opset("com.microsoft", 1);
    m.input("x", TensorProto::FLOAT, {int64_t{2}, int64_t{4}});
    m.node("FusedGemm", {"x", "x"}, {"y"}, "fg", "com.microsoft");
    m.output("y");
    auto g = import(m);
    REQUIRE_FALSE(g.ok());
    CHECK(g.status().code() == ErrorCode::kUnsupported);
    CHECK(contains(g.status().message(),
                   "unsupported operator FusedGemm (com.microsoft, opset 1) at node 'fg'"));
  }
  OnnxModel m(17);
  m.set_opset("com.microsoft", 1);
  m.input("x", TensorProto::FLOAT, {int64_t{2}, int64_t{4}});
  m.node("Relu", {"x"}, {"r"}, "fine");
  m.node("FusedGemm", {"r", "r"}, {"a"}, "fg", "com.microsoft");
  m.node("NotARealOp", {"a"}, {"b"}, "fake");
  m.node("TreeEnsembleRegressor", {"b"}, {"c"}, "", "ai.onnx.ml");
  m.node("Gelu", {"c"}, {"y"}, "too_new");  // Gelu arrived in opset 20
  m.output("y");
  auto g = import(m);
  REQUIRE_FALSE(g.ok());
  const std::string& e = g.status().message();
  CHECK(g.status().code() == ErrorCode::kUnsupported);
  CHECK(contains(e, "4 nodes"));
  CHECK(contains(e, "unsupported operator FusedGemm (com.microsoft, opset 1) at node 'fg'"));
  CHECK(contains(e, "unsupported operator NotARealOp (ai.onnx, opset 17) at node 'fake'"));
  CHECK(contains(e,
                 "unsupported operator TreeEnsembleRegressor (ai.onnx.ml, opset not imported) "
                 "at node 'TreeEnsembleRegressor_3'"));
  CHECK(contains(e, "Gelu at node 'too_new' does not exist in opset 17 (introduced in opset 20)"));
  CHECK_FALSE(contains(e, "'fine'"));
}

TEST_CASE("a model without a default-domain opset names the ai.onnx nodes", "[importer]") {
  // opset_import lists only com.microsoft, yet a Relu is used: the error says
  // the model does not import ai.onnx and names the node.
  OnnxModel m(17);
  m.proto().clear_opset_import();
  m.set_opset("com.microsoft", 1);
  m.input("x", TensorProto::FLOAT, {int64_t{3}});
  m.node("Relu", {"x"}, {"y"}, "r");
  m.output("y");
  std::string e = error_of(m);
  CHECK(contains(e, "Relu at node 'r'"));
  CHECK(contains(e, "does not import"));
}

TEST_CASE("duplicate value names are refused", "[importer]") {
  // Two initializers, a node output shadowing an initializer or input, two
  // nodes producing one value, a repeated graph input or output: each names the value.
  auto w = float_tensor("w", {2}, {1.5f, -0.5f});
  {
    OnnxModel m;
    m.initializer(w);
    m.initializer(w);
    m.output("w");
    CHECK(contains(error_of(m), "duplicate name 'w'"));
  }
  {
    OnnxModel m;
    m.input("x", TensorProto::FLOAT, {int64_t{2}});
    m.initializer(w);
    m.node("Relu", {"x"}, {"w"}, "r");
    m.output("w");
    std::string e = error_of(m);
    CHECK(contains(e, "duplicate name 'w'"));
    CHECK(contains(e, "node 'r' (Relu)"));
  }
  {
    OnnxModel m;
    m.input("x", TensorProto::FLOAT, {int64_t{2}});
    m.node("Relu", {"x"}, {"x"}, "r");
    m.output("x");
    CHECK(contains(error_of(m), "duplicate name 'x'"));
  }
  {
    OnnxModel m;
    m.input("x", TensorProto::FLOAT, {int64_t{2}});
    m.node("Relu", {"x"}, {"y"}, "a");
    m.node("Neg", {"x"}, {"y"}, "b");
    m.output("y");
    std::string e = error_of(m);
    CHECK(contains(e, "duplicate name 'y'"));
    CHECK(contains(e, "node 'a' (Relu)"));
    CHECK(contains(e, "node 'b' (Neg)"));
  }
  {
    OnnxModel m;
    m.input("x", TensorProto::FLOAT, {int64_t{2}});
    m.input("x", TensorProto::FLOAT, {int64_t{2}});
    m.output("x");
    CHECK(contains(error_of(m), "duplicate graph input 'x'"));
  }
  {
    OnnxModel m;
    m.input("x", TensorProto::FLOAT, {int64_t{2}});
    m.output("x");
    m.output("x");
    CHECK(contains(error_of(m), "graph output 'x' is listed twice"));
  }
}

TEST_CASE("an initializer also listed as a graph input stays a constant", "[importer]") {
  // IR < 4 models list weights among the inputs; they must not become runtime inputs.
  OnnxModel m;
  m.input("x", TensorProto::FLOAT, {int64_t{2}});
  m.input("w", TensorProto::FLOAT, {int64_t{2}});
  m.initializer(float_tensor("w", {2}, {2.5f, -1.0f}));
  m.node("Add", {"x", "w"}, {"y"}, "add");
  m.output("y");
  auto g = import(m);
  INFO(g.status().message());
  REQUIRE(g.ok());
  REQUIRE(g->inputs.size() == 1);
  CHECK(g->value(g->inputs[0]).name == "x");
  CHECK(constant_of(*g, "w").to_f64_vector() == std::vector<double>{2.5, -1.0});
}

TEST_CASE("a node input nobody produces is refused", "[importer]") {
  // Reading an undefined name names the node and the value; so does a graph
  // output nobody produces.
  OnnxModel m;
  m.input("x", TensorProto::FLOAT, {int64_t{2}});
  m.node("Add", {"x", "ghost"}, {"y"}, "adder");
  m.output("y");
  std::string e = error_of(m);
  CHECK(contains(e, "node 'adder' (Add) reads 'ghost'"));
  OnnxModel m2;
  m2.input("x", TensorProto::FLOAT, {int64_t{2}});
  m2.node("Relu", {"x"}, {"y"}, "r");
  m2.output("z");
  CHECK(contains(error_of(m2), "graph output 'z' is not produced"));
  OnnxModel m3;
  m3.input("x", TensorProto::FLOAT, {int64_t{2}});
  CHECK(contains(error_of(m3), "declares no graph outputs"));
}

TEST_CASE("graph cycles are refused naming the nodes on the cycle", "[importer]") {
  // a -> b -> c -> a and a self-loop: both errors say "cycle" and name the nodes.
  OnnxModel m;
  m.input("x", TensorProto::FLOAT, {int64_t{2}});
  m.node("Add", {"x", "c_out"}, {"a_out"}, "a");
  m.node("Relu", {"a_out"}, {"b_out"}, "b");
  m.node("Neg", {"b_out"}, {"c_out"}, "c");
  m.output("c_out");
  std::string e = error_of(m);
  CHECK(contains(e, "cycle"));
  CHECK(contains(e, "'a'"));
  CHECK(contains(e, "'b'"));
  CHECK(contains(e, "'c'"));
  OnnxModel self;
  self.input("x", TensorProto::FLOAT, {int64_t{2}});
  self.node("Add", {"x", "loop"}, {"loop"}, "selfish");
  self.output("loop");
  std::string e2 = error_of(self);
  CHECK(contains(e2, "cycle"));
  CHECK(contains(e2, "'selfish'"));
}

TEST_CASE("nodes listed out of order are imported in topological order", "[importer]") {
  // ONNX wants sorted nodes but exporters slip; a DAG listed backwards imports
  // with each node after its producers.
  OnnxModel m;
  m.input("x", TensorProto::FLOAT, {int64_t{2}});
  m.node("Neg", {"b"}, {"y"}, "third");
  m.node("Relu", {"a"}, {"b"}, "second");
  m.node("Abs", {"x"}, {"a"}, "first");
  m.output("y");
  auto g = import(m);
  INFO(g.status().message());
  REQUIRE(g.ok());
  REQUIRE(g->nodes.size() == 3);
  CHECK(g->nodes[0].name == "first");
  CHECK(g->nodes[1].name == "second");
  CHECK(g->nodes[2].name == "third");
}

TEST_CASE("node arity, duplicate attributes and graph attributes are checked", "[importer]") {
  // Relu with two inputs, a repeated attribute name, and a GRAPH attribute
  // are errors naming the node.
  OnnxModel m;
  m.input("x", TensorProto::FLOAT, {int64_t{2}});
  m.node("Relu", {"x", "x"}, {"y"}, "two_in");
  m.output("y");
  CHECK(contains(error_of(m), "node 'two_in' (Relu) has 2 inputs; Relu takes 1 to 1"));
  OnnxModel m2;
  m2.input("x", TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
  auto* n = m2.node("Softmax", {"x"}, {"y"}, "sm");
  attr_int(n, "axis", 1);
  attr_int(n, "axis", 0);
  m2.output("y");
  CHECK(contains(error_of(m2), "node 'sm' (Softmax): attribute 'axis' appears more than once"));
  OnnxModel m3;
  m3.input("x", TensorProto::FLOAT, {int64_t{2}});
  auto* a = m3.node("Relu", {"x"}, {"y"}, "g")->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name("sub");
  m3.output("y");
  auto g = import(m3);
  REQUIRE_FALSE(g.ok());
  CHECK(g.status().code() == ErrorCode::kUnsupported);
  CHECK(contains(g.status().message(), "node 'g' (Relu)"));
  CHECK(contains(g.status().message(), "GRAPH"));
}

TEST_CASE("negative and overflowing dims are refused", "[importer]") {
  // Initializer dims [-2, 3], [2^40, 2^40] and graph input dims likewise are
  // invalid models, named in the message.
  OnnxModel a;
  a.initializer(raw_tensor<float>("neg", TensorProto::FLOAT, {-2, 3}, std::vector<float>(6, 1.f)));
  a.output("neg");
  CHECK(contains(error_of(a), "initializer 'neg'"));
  CHECK(contains(error_of(a), "negative dim -2"));
  OnnxModel b;
  int64_t big = int64_t{1} << 40;
  b.initializer(raw_tensor<float>("ovf", TensorProto::FLOAT, {big, big}, std::vector<float>{1.f}));
  b.output("ovf");
  CHECK(contains(error_of(b), "'ovf'"));
  CHECK(contains(error_of(b), "overflows"));
  OnnxModel c;
  c.input("x", TensorProto::FLOAT, {int64_t{-1}, int64_t{3}});
  c.output("x");
  CHECK(contains(error_of(c), "'x' has a negative dim -1"));
  OnnxModel d;
  d.input("x", TensorProto::FLOAT, {big, std::string("batch"), big});
  d.output("x");
  CHECK(contains(error_of(d), "overflows"));
}

TEST_CASE("payloads that do not match the shape are refused before allocating", "[importer]") {
  // raw_data of the wrong size, typed fields with the wrong count, and a huge
  // declared shape (2^40 elements, or 2^31 under the byte limit) with a tiny
  // payload all fail at once with a message, without allocating the tensor.
  OnnxModel a;
  a.initializer(raw_tensor<float>("w", TensorProto::FLOAT, {3}, std::vector<float>{1.f, 2.f}));
  a.output("w");
  CHECK(contains(error_of(a), "raw_data has 8 bytes but shape 3 of float32 needs 12"));
  OnnxModel b;
  b.initializer(int64_tensor("k", {2, 2}, {1, 2, 3}));
  b.output("k");
  CHECK(contains(error_of(b), "'k' declares shape 2x2 (4 elements) but int64_data holds 3"));
  OnnxModel huge;
  huge.initializer(
      raw_tensor<float>("huge", TensorProto::FLOAT, {int64_t{1} << 40}, std::vector<float>{1.f}));
  huge.output("huge");
  auto g = import(huge);
  REQUIRE_FALSE(g.ok());
  CHECK(g.status().code() == ErrorCode::kOutOfRange);
  CHECK(contains(g.status().message(), "'huge'"));
  // 8 GiB is under the 16 GiB tensor limit: only the payload check stops it.
  OnnxModel under;
  under.initializer(
      raw_tensor<float>("big", TensorProto::FLOAT, {int64_t{1} << 31}, std::vector<float>{1.f}));
  under.output("big");
  CHECK(contains(error_of(under), "raw_data has 4 bytes"));
  OnnxModel typed;
  typed.initializer(float_tensor("big", {int64_t{1} << 31}, {1.f, 2.f}));
  typed.output("big");
  CHECK(contains(error_of(typed), "float_data holds 2"));
}

TEST_CASE("messages nested past the recursion limit are refused", "[importer]") {
  // A graph input whose type nests sequence types 500 deep fails to parse
  // (the nesting limit protects the stack); 5 deep parses and is then refused
  // as "not a tensor".
  for (int depth : {500, 5}) {
    OnnxModel m;
    auto* vi = m.graph()->add_input();
    vi->set_name("x");
    onnx::TypeProto* t = vi->mutable_type();
    for (int i = 0; i < depth; ++i) t = t->mutable_sequence_type()->mutable_elem_type();
    t->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
    m.output("x");
    std::string e = error_of(m);
    if (depth == 500)
      CHECK(contains(e, "nested deeper than 64"));
    else
      CHECK(contains(e, "'x' is not a tensor"));
  }
}

TEST_CASE("errors from import_model_bytes start with the display name", "[importer]") {
  // Every failure names the model it came from.
  OnnxModel m;
  m.input("x", TensorProto::FLOAT, {int64_t{2}});
  m.node("Relu", {"nope"}, {"y"}, "r");
  m.output("y");
  auto g = importer::import_model_bytes(m.bytes(), "", "models/thing.onnx");
  REQUIRE_FALSE(g.ok());
  CHECK(g.status().message().rfind("models/thing.onnx: ", 0) == 0);
}

TEST_CASE("graphc's reserved '_' attributes cannot come from a model", "[importer]") {
  // _trans_b on a MatMul would silently transpose an operand: refused, naming it.
  OnnxModel m;
  m.input("a", TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
  m.input("b", TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
  auto* n = m.node("MatMul", {"a", "b"}, {"y"}, "mm");
  attr_int(n, "_trans_b", 1);
  m.output("y");
  auto g = import(m);
  REQUIRE_FALSE(g.ok());
  CHECK(contains(g.status().message(), "'_trans_b'"));
  CHECK(contains(g.status().message(), "node 'mm'"));
}
