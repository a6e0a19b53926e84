// Importing elementwise ops across opsets: Clip-6 bounds as attributes,
// Dropout-7/10 ratio attribute and Dropout-7 mask dtype, run end to end.
#include <cmath>

#include "importer/importer.h"
#include "onnx/onnx.pb.h"
#include "tests/elementwise_test_util.h"

using namespace graphc;
using namespace graphc::ewtest;

namespace {

void add_value(onnx::ValueInfoProto* v, const std::string& name, int elem_type,
               const std::vector<int64_t>& dims) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

// A one-node model: float input "x" of `dims`, outputs `outs` (first is "y").
onnx::ModelProto one_node_model(int64_t opset, const std::string& op, int num_outputs,
                                const std::vector<int64_t>& dims) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("t");
  add_value(g->add_input(), "x", onnx::TensorProto::FLOAT, dims);
  auto* n = g->add_node();
  n->set_op_type(op);
  n->add_input(std::string("x"));
  n->add_output(std::string("y"));
  add_value(g->add_output(), "y", onnx::TensorProto::FLOAT, dims);
  if (num_outputs > 1) {
    n->add_output(std::string("mask"));
    add_value(g->add_output(), "mask", onnx::TensorProto::BOOL, dims);
  }
  return m;
}

void add_float_attr(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

Expected<std::map<std::string, Tensor>> import_and_run(const onnx::ModelProto& m, const Tensor& x) {
  std::string bytes;
  m.SerializeToString(&bytes);
  ASSIGN_OR_RETURN(ir::Graph g, importer::import_model_bytes(bytes, "", "test model"));
  ir::ShapeInferenceOptions opts;
  opts.evaluator = reference::constant_evaluator();
  RETURN_IF_ERROR(ir::infer_shapes(g, opts));
  return reference::execute(g, {{"x", x}});
}

}  // namespace

TEST_CASE("Clip opset 6 keeps float bounds as _min/_max and clips by them", "[elementwise]") {
  // Random input through an imported Clip-6 with min/max attributes, and with max only.
  Tensor x = rnd(DType::kFloat32, {3, 4}, -3, 3);
  onnx::ModelProto m = one_node_model(7, "Clip", 1, {3, 4});  // opset 7 uses Clip-6
  add_float_attr(m.mutable_graph()->mutable_node(0), "min", -0.5f);
  add_float_attr(m.mutable_graph()->mutable_node(0), "max", 1.25f);
  std::string bytes;
  m.SerializeToString(&bytes);
  auto g = importer::import_model_bytes(bytes, "", "clip6");
  REQUIRE(g.ok());
  const ir::Node& node = g->nodes.at(0);
  CHECK(node.attrs.has("_min"));
  CHECK(node.attrs.has("_max"));
  CHECK(!node.attrs.has("min"));
  auto r = import_and_run(m, x);
  INFO(r.status().message());
  REQUIRE(r.ok());
  const Tensor& y = r->at("y");
  for (int64_t i = 0; i < x.numel(); ++i)
    CHECK(y.get_f64(i) == std::clamp(x.get_f64(i), -0.5, 1.25));

  onnx::ModelProto only_max = one_node_model(10, "Clip", 1, {3, 4});
  add_float_attr(only_max.mutable_graph()->mutable_node(0), "max", 0.0f);
  auto r2 = import_and_run(only_max, x);
  REQUIRE(r2.ok());
  for (int64_t i = 0; i < x.numel(); ++i)
    CHECK(r2->at("y").get_f64(i) == std::min(x.get_f64(i), 0.0));

  // A bound of the wrong attribute kind is an error, not a silent default.
  onnx::ModelProto bad = one_node_model(7, "Clip", 1, {3, 4});
  auto* a = bad.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("min");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("low");
  std::string bad_bytes;
  bad.SerializeToString(&bad_bytes);
  auto bg = importer::import_model_bytes(bad_bytes, "", "clip_bad");
  CHECK(!bg.ok());
}

TEST_CASE("Dropout opsets 7, 10 and 12 import to the inference identity", "[elementwise]") {
  // ratio attribute dropped (opset < 12); opset 7 mask in the data dtype; opset 10 bool mask.
  Tensor x = rnd(DType::kFloat32, {2, 5});
  for (int64_t opset : {7, 10, 12}) {
    INFO("opset " << opset);
    onnx::ModelProto m = one_node_model(opset, "Dropout", 2, {2, 5});
    if (opset < 12) add_float_attr(m.mutable_graph()->mutable_node(0), "ratio", 0.3f);
    auto r = import_and_run(m, x);
    INFO(r.status().message());
    REQUIRE(r.ok());
    CHECK(r->at("y").same_bytes(x));
    const Tensor& mask = r->at("mask");
    CHECK(mask.dtype() == (opset < 10 ? DType::kFloat32 : DType::kBool));
    CHECK(mask.to_f64_vector() == std::vector<double>(10, 1.0));
  }
}
