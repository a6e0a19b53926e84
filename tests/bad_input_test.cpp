// Bad input end to end: the graphc binary on broken, hostile and unsupported
// models ([cli]), and models whose attributes contradict their shapes, which
// the op groups' shape rules must refuse naming node and attribute
// ([needs-ops]). Never a crash: exit codes stay below 128.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "driver/load_model.h"
#include "tests/cli_util.h"
#include "tests/onnx_builder.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::testing;
using onnx::TensorProto;

namespace {

// Runs `graphc inspect PATH` and checks it fails cleanly: exit 1, the path and
// every `expect` string in the output, no crash.
void expect_inspect_fails(const std::string& path, std::vector<std::string> expect,
                          const std::string& extra = "") {
  auto r = run_graphc("inspect " + path + " " + extra);
  INFO(r.output);
  CHECK_FALSE(r.crashed());
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "graphc: error: "));
  CHECK(contains(r.output, path));
  for (const auto& e : expect) CHECK(contains(r.output, e));
  CHECK_FALSE(contains(r.output, "terminate"));
}

std::vector<float> random_floats(size_t n) {
  auto t = random_tensor(ir::DType::kFloat32, {static_cast<int64_t>(n)}, test_rng(), -1.0, 1.0);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(t.get_f64(static_cast<int64_t>(i)));
  return v;
}

}  // namespace

TEST_CASE("graphc inspect on missing, empty and garbage files fails cleanly", "[cli]") {
  // Missing file, empty file, random bytes, a text file, a PNG header, a
  // truncated model, a folder and a FIFO: exit 1 with the path named.
  TempDir dir;
  expect_inspect_fails(dir.file("absent.onnx"), {"no such file"});
  expect_inspect_fails(dir.write("empty.onnx", ""), {"empty"});
  auto& rng = test_rng();
  std::uniform_int_distribution<int> byte(0, 255);
  for (int i = 0; i < 5; ++i) {
    std::string junk(777 + static_cast<size_t>(i) * 100, '\0');
    for (auto& c : junk) c = static_cast<char>(byte(rng));
    expect_inspect_fails(dir.write("random.onnx", junk), {});
  }
  expect_inspect_fails(dir.write("readme.onnx", "# graphc\nThis is not a model.\n"), {});
  expect_inspect_fails(dir.write("img.onnx", std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16)), {});
  std::ifstream in(source_path("models/transformer_block.onnx"), std::ios::binary);
  std::string full((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  expect_inspect_fails(dir.write("cut.onnx", full.substr(0, full.size() / 3)),
                       {"not a valid ONNX protobuf"});
  expect_inspect_fails(dir.path(), {"directory"});
  REQUIRE(::mkfifo(dir.file("fifo.onnx").c_str(), 0600) == 0);
  expect_inspect_fails(dir.file("fifo.onnx"), {"not a regular file"});
}

TEST_CASE("graphc inspect names unsupported operators, nodes and domains", "[cli]") {
  // A com.microsoft node and an unknown ai.onnx op: one error listing both,
  // each with its domain, opset and node name.
  TempDir dir;
  OnnxModel m(17);
  m.set_opset("com.microsoft", 1);
  m.input("x", TensorProto::FLOAT, {int64_t{2}, int64_t{8}});
  m.node("FusedGemm", {"x", "x"}, {"a"}, "fused", "com.microsoft");
  m.node("Frobnicate", {"a"}, {"y"}, "frob");
  m.output("y");
  m.write(dir.file("custom.onnx"));
  expect_inspect_fails(dir.file("custom.onnx"),
                       {"unsupported operator FusedGemm (com.microsoft, opset 1) at node 'fused'",
                        "unsupported operator Frobnicate (ai.onnx, opset 17) at node 'frob'"});
}

TEST_CASE("graphc inspect shows the part of a model it can compile around unsupported nodes",
          "[cli]") {
  // x -> relu -> add(bias) = a; a -> Foo (com.example, unsupported) -> Sigmoid -> y1;
  // a -> Tanh -> y2. The triage report lists every node, marks Foo and the
  // Sigmoid after it, and fuses the rest (y2 and the cut value a); exit 1.
  TempDir dir;
  OnnxModel m(17);
  m.set_opset("com.example", 1);
  m.input("x", TensorProto::FLOAT, {int64_t{4}, int64_t{8}});
  m.initializer(float_tensor("bias", {8}, random_floats(8)));
  m.node("Relu", {"x"}, {"r"}, "relu");
  m.node("Add", {"r", "bias"}, {"a"}, "add_bias");
  m.node("Foo", {"a"}, {"f"}, "foo", "com.example");
  m.node("Sigmoid", {"f"}, {"y1"}, "after_foo");
  m.node("Tanh", {"a"}, {"y2"}, "tanh");
  m.output("y1");
  m.output("y2");
  const std::string path = dir.file("partial.onnx");
  m.write(path);

  auto r = run_graphc("inspect " + path);
  INFO(r.output);
  CHECK_FALSE(r.crashed());
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "graphc: error: " + path +
                               ": unsupported operator Foo (com.example, opset 1) at node 'foo'"));
  CHECK(contains(r.output, "nodes     5 (1 unsupported, 1 after them not compiled)"));
  CHECK(std::regex_search(r.output, std::regex("\n  Foo +1 +UNSUPPORTED\n")));
  CHECK(std::regex_search(r.output, std::regex("\n  Sigmoid +1 +1 after an unsupported node\n")));
  CHECK(contains(r.output, "y1                       (not compiled: after unsupported node 'foo')"));
  CHECK(std::regex_search(r.output, std::regex("\n  after_foo +Sigmoid +after 'foo'\n")));
  CHECK(contains(r.output, "fusion report of the part graphc can compile (its outputs: y2, a)"));
  // relu and add_bias fuse into one kernel that makes a; tanh reads it.
  CHECK(std::regex_search(r.output, std::regex("kernels: 3 ONNX nodes -> [12] kernels")));
  CHECK(std::regex_search(r.output, std::regex("relu, add_bias")));

  auto j = run_graphc("inspect " + path + " --json");
  CHECK(j.exit_code == 1);
  auto brace = j.output.find('{');
  auto end = j.output.rfind('}');
  REQUIRE(brace != std::string::npos);
  REQUIRE(end != std::string::npos);
  auto doc = nlohmann::json::parse(j.output.substr(brace, end - brace + 1));
  CHECK(doc["node_count"] == 5);
  CHECK(doc["ops"]["Foo"] == 1);
  REQUIRE(doc["unsupported"].size() == 1);
  CHECK(doc["unsupported"][0]["node"] == "foo");
  CHECK(doc["unsupported"][0]["domain"] == "com.example");
  CHECK(doc["not_compiled"][0]["after"] == "foo");
  CHECK(doc["not_compiled_outputs"][0]["name"] == "y1");
  CHECK(doc["cut_values"] == nlohmann::json::array({"a"}));
  CHECK(doc["outputs"].size() == 1);
  CHECK(doc["fusion"].is_object());

  // --ir and --dot show a whole model: the strict error.
  auto ir = run_graphc("inspect " + path + " --ir");
  CHECK(ir.exit_code == 1);
  CHECK(contains(ir.output, "unsupported operator Foo"));
}

TEST_CASE("graphc inspect with only unsupported work left still lists the model", "[cli]") {
  // The unsupported node reads the graph input and a Constant (which stays a
  // constant, not an output): nothing before it to compile.
  TempDir dir;
  OnnxModel m(17);
  m.set_opset("com.example", 1);
  m.input("x", TensorProto::FLOAT, {int64_t{4}});
  attr_tensor(m.node("Constant", {}, {"c"}, "const"), "value", float_tensor("c", {4}, random_floats(4)));
  m.node("Foo", {"x", "c"}, {"f"}, "foo", "com.example");
  m.node("Relu", {"f"}, {"y"}, "relu");
  m.output("y");
  m.write(dir.file("nothing.onnx"));
  auto r = run_graphc("inspect " + dir.file("nothing.onnx"));
  INFO(r.output);
  CHECK_FALSE(r.crashed());
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "x                        float32[4]"));
  CHECK(contains(r.output, "no node before the unsupported ones to compile"));
  CHECK(contains(r.output, "unsupported operator Foo (com.example, opset 1) at node 'foo'"));
}

TEST_CASE("graphc inspect refuses broken graphs and hostile tensors", "[cli]") {
  // A cycle, an undefined input, an opset out of range, a 2^40-element
  // initializer with a 4-byte payload and external data escaping the folder:
  // each exits 1 with the node/tensor named.
  TempDir dir;
  {
    OnnxModel m;
    m.input("x", TensorProto::FLOAT, {int64_t{4}});
    m.node("Add", {"x", "b"}, {"a"}, "first");
    m.node("Relu", {"a"}, {"b"}, "second");
    m.output("b");
    m.write(dir.file("cycle.onnx"));
    expect_inspect_fails(dir.file("cycle.onnx"), {"cycle", "'first'", "'second'"});
  }
  {
    OnnxModel m;
    m.input("x", TensorProto::FLOAT, {int64_t{4}});
    m.node("Add", {"x", "nowhere"}, {"y"}, "adder");
    m.output("y");
    m.write(dir.file("undef.onnx"));
    expect_inspect_fails(dir.file("undef.onnx"), {"node 'adder' (Add) reads 'nowhere'"});
  }
  {
    OnnxModel m(29);
    m.input("x", TensorProto::FLOAT, {int64_t{4}});
    m.output("x");
    m.write(dir.file("opset29.onnx"));
    expect_inspect_fails(dir.file("opset29.onnx"), {"opset 29", "7 to 28"});
  }
  {
    OnnxModel m;
    m.initializer(raw_tensor<float>("giant", TensorProto::FLOAT, {int64_t{1} << 40},
                                    std::vector<float>{2.5f}));
    m.output("giant");
    m.write(dir.file("giant.onnx"));
    expect_inspect_fails(dir.file("giant.onnx"), {"'giant'", "limit"});
  }
  {
    std::filesystem::create_directory(dir.file("inner"));
    dir.write("secret.bin", std::string(16, 'S'));
    OnnxModel m;
    TensorProto t;
    t.set_name("w");
    t.set_data_type(TensorProto::FLOAT);
    t.add_dims(4);
    t.set_data_location(TensorProto::EXTERNAL);
    auto* e = t.add_external_data();
    e->set_key("location");
    e->set_value("../secret.bin");
    m.initializer(t);
    m.output("w");
    m.write(dir.file("inner/escape.onnx"));
    expect_inspect_fails(dir.file("inner/escape.onnx"), {"'w'", "leaves the model's folder"});
  }
}

// ---------------------------------------------------------------------------
// Shape-rule validation through whole models ([needs-ops]: the op groups'
// shape rules produce these errors). Each must name the node and the
// attribute (or input) at fault.

namespace {

// Loads `m` through the driver (import + shape inference); the error must
// name the file and "node 'NODE' (OP)". Returns what follows that context,
// so checks for an attribute name cannot match the node name or path.
std::string load_error(const OnnxModel& m, const std::string& node, const std::string& op) {
  TempDir dir;
  std::string path = dir.file("bad.onnx");
  m.write(path);
  auto g = driver::load_model(path);
  REQUIRE_FALSE(g.ok());
  const std::string& e = g.status().message();
  INFO(e);
  CHECK(contains(e, path));
  std::string where = fmt::format("node '{}' ({}): ", node, op);
  auto at = e.find(where);
  REQUIRE(at != std::string::npos);
  std::string detail = e.substr(at + where.size());
  CHECK_FALSE(contains(detail, "not implemented"));
  return detail;
}

OnnxModel conv_model(std::vector<int64_t> w_dims, std::vector<int64_t> pads,
                     std::vector<int64_t> kernel_shape = {}, std::vector<int64_t> strides = {}) {
  OnnxModel m(17);
  m.input("x", TensorProto::FLOAT, {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{8}});
  int64_t n = 1;
  for (auto d : w_dims) n *= d;
  m.initializer(float_tensor("w", w_dims, random_floats(static_cast<size_t>(n))));
  auto* c = m.node("Conv", {"x", "w"}, {"y"}, "n1");
  if (!pads.empty()) attr_ints(c, "pads", pads);
  if (!kernel_shape.empty()) attr_ints(c, "kernel_shape", kernel_shape);
  if (!strides.empty()) attr_ints(c, "strides", strides);
  m.output("y");
  return m;
}

OnnxModel unary_axis_model(const std::string& op, const std::string& attr, int64_t value,
                           int extra_inputs = 0) {
  OnnxModel m(17);
  m.input("x", TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
  std::vector<std::string> ins = {"x"};
  for (int i = 0; i < extra_inputs; ++i) ins.push_back("x");
  attr_int(m.node(op, ins, {"y"}, "n1"), attr, value);
  m.output("y");
  return m;
}

bool contains_any(const std::string& s, std::initializer_list<const char*> words) {
  for (auto w : words)
    if (contains(s, w)) return true;
  return false;
}

}  // namespace

TEST_CASE("Conv whose weight rank does not match the input is refused", "[importer][needs-ops]") {
  // x is 1x3x8x8 (rank 4) but W is 4x3x3 (rank 3): an error naming node
  // 'n1' and the weight/rank mismatch, not a crash.
  std::string e = load_error(conv_model({4, 3, 3}, {}), "n1", "Conv");
  CHECK(contains_any(e, {"rank", "weight", "Weight"}));
}

TEST_CASE("Conv pads, kernel_shape and strides must match the spatial rank",
          "[importer][needs-ops]") {
  // A 2-D convolution needs 4 pads, 2 kernel dims and 2 strides; each wrong
  // length is an error naming the node and the attribute.
  CHECK(contains(load_error(conv_model({4, 3, 3, 3}, {1, 1}), "n1", "Conv"), "pads"));
  CHECK(contains(load_error(conv_model({4, 3, 3, 3}, {1, 1, 1, 1, 1, 1}), "n1", "Conv"), "pads"));
  CHECK(contains(load_error(conv_model({4, 3, 3, 3}, {}, {3}), "n1", "Conv"), "kernel_shape"));
  CHECK(contains(load_error(conv_model({4, 3, 3, 3}, {}, {}, {1, 1, 1}), "n1", "Conv"), "strides"));
}

TEST_CASE("pooling pads must match the spatial rank", "[importer][needs-ops]") {
  // MaxPool over 1x3x8x8 with kernel 2x2 and 2 pads (needs 4): names node and 'pads'.
  OnnxModel m(17);
  m.input("x", TensorProto::FLOAT, {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{8}});
  auto* p = m.node("MaxPool", {"x"}, {"y"}, "n1");
  attr_ints(p, "kernel_shape", {2, 2});
  attr_ints(p, "pads", {0, 0});
  m.output("y");
  CHECK(contains(load_error(m, "n1", "MaxPool"), "pads"));
}

TEST_CASE("out-of-range axes are refused naming node and attribute", "[importer][needs-ops]") {
  // Rank-2 input: Softmax axis 2, Concat axis -3, Gather axis 5, Flatten axis 3,
  // LayerNormalization axis 2: each error names the node and 'axis'.
  CHECK(contains(load_error(unary_axis_model("Softmax", "axis", 2), "n1", "Softmax"), "axis"));
  CHECK(contains(load_error(unary_axis_model("Concat", "axis", -3, 1), "n1", "Concat"), "axis"));
  CHECK(contains(load_error(unary_axis_model("Flatten", "axis", 3), "n1", "Flatten"), "axis"));
  {
    OnnxModel m(17);
    m.input("x", TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
    m.initializer(int64_tensor("idx", {2}, {0, 1}));
    attr_int(m.node("Gather", {"x", "idx"}, {"y"}, "n1"), "axis", 5);
    m.output("y");
    CHECK(contains(load_error(m, "n1", "Gather"), "axis"));
  }
  {
    OnnxModel m(17);
    m.input("x", TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
    m.initializer(float_tensor("g", {3}, random_floats(3)));
    attr_int(m.node("LayerNormalization", {"x", "g"}, {"y"}, "n1"), "axis", 2);
    m.output("y");
    CHECK(contains(load_error(m, "n1", "LayerNormalization"), "axis"));
  }
}

TEST_CASE("Transpose perm must be a permutation of the rank", "[importer][needs-ops]") {
  // perm [0, 0] and perm [1, 0, 2] on a rank-2 input: errors naming 'perm'.
  for (std::vector<int64_t> perm : {std::vector<int64_t>{0, 0}, std::vector<int64_t>{1, 0, 2}}) {
    OnnxModel m(17);
    m.input("x", TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
    attr_ints(m.node("Transpose", {"x"}, {"y"}, "n1"), "perm", perm);
    m.output("y");
    CHECK(contains(load_error(m, "n1", "Transpose"), "perm"));
  }
}

TEST_CASE("shape contradictions between inputs are refused naming the node",
          "[importer][needs-ops]") {
  // MatMul 2x3 @ 4x5, Add 2x3 + 4, and Reshape of 6 elements to 4x2: each
  // an error naming the node.
  {
    OnnxModel m(17);
    m.input("x", TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
    m.initializer(float_tensor("w", {4, 5}, random_floats(20)));
    m.node("MatMul", {"x", "w"}, {"y"}, "n1");
    m.output("y");
    load_error(m, "n1", "MatMul");
  }
  {
    OnnxModel m(17);
    m.input("x", TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
    m.initializer(float_tensor("b", {4}, random_floats(4)));
    m.node("Add", {"x", "b"}, {"y"}, "n1");
    m.output("y");
    CHECK(contains(load_error(m, "n1", "Add"), "broadcast"));
  }
  {
    OnnxModel m(17);
    m.input("x", TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
    m.initializer(int64_tensor("shape", {2}, {4, 2}));
    m.node("Reshape", {"x", "shape"}, {"y"}, "n1");
    m.output("y");
    load_error(m, "n1", "Reshape");
  }
}

TEST_CASE("graphc inspect reports a shape-rule error with node and attribute", "[cli][needs-ops]") {
  // The same Conv pads error through the binary: exit 1, the file, the node
  // and 'pads' after the node context.
  TempDir dir;
  conv_model({4, 3, 3, 3}, {1, 1}).write(dir.file("conv.onnx"));
  auto r = run_graphc("inspect " + dir.file("conv.onnx"));
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, dir.file("conv.onnx")));
  auto at = r.output.find("node 'n1' (Conv): ");
  REQUIRE(at != std::string::npos);
  std::string detail = r.output.substr(at);
  CHECK(contains(detail, "pads"));
  CHECK_FALSE(contains(detail, "not implemented"));
}
