// Builds ONNX ModelProto in C++ with the generated protobuf classes, so the
// importer and CLI tests need no Python. Header-only (tests/CMakeLists.txt
// compiles only *_test.cpp files besides test_main/test_util).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <variant>
#include <vector>

#include "onnx/onnx.pb.h"

namespace graphc::testing {

// One dim of a value_info: a fixed size or a symbolic name.
using Dim = std::variant<int64_t, std::string>;

class OnnxModel {
 public:
  explicit OnnxModel(int64_t opset = 17, const std::string& graph_name = "test") {
    model_.set_ir_version(8);
    model_.set_producer_name("graphc tests");
    set_opset("", opset);
    model_.mutable_graph()->set_name(graph_name);
  }

  void set_opset(const std::string& domain, int64_t version) {
    for (auto& os : *model_.mutable_opset_import())
      if (os.domain() == domain) {
        os.set_version(version);
        return;
      }
    auto* os = model_.add_opset_import();
    os->set_domain(domain);
    os->set_version(version);
  }

  onnx::ValueInfoProto* input(const std::string& name, int32_t elem_type, std::vector<Dim> dims) {
    auto* vi = graph()->add_input();
    fill_value_info(vi, name, elem_type, dims);
    return vi;
  }
  onnx::ValueInfoProto* output(const std::string& name,
                               int32_t elem_type = onnx::TensorProto::FLOAT,
                               std::vector<Dim> dims = {}) {
    auto* vi = graph()->add_output();
    fill_value_info(vi, name, elem_type, dims);
    return vi;
  }
  onnx::TensorProto* initializer(onnx::TensorProto t) {
    auto* p = graph()->add_initializer();
    *p = std::move(t);
    return p;
  }
  onnx::NodeProto* node(const std::string& op, std::vector<std::string> inputs,
                        std::vector<std::string> outputs, const std::string& name = "",
                        const std::string& domain = "") {
    auto* n = graph()->add_node();
    n->set_op_type(op);
    if (!name.empty()) n->set_name(name);
    if (!domain.empty()) n->set_domain(domain);
    for (auto& i : inputs) n->add_input(i);
    for (auto& o : outputs) n->add_output(o);
    return n;
  }

  onnx::GraphProto* graph() { return model_.mutable_graph(); }
  onnx::ModelProto& proto() { return model_; }
  std::string bytes() const {
    std::string s;
    model_.SerializeToString(&s);
    return s;
  }
  void write(const std::string& path) const {
    std::ofstream out(path, std::ios::binary);
    out << bytes();
  }

 private:
  static void fill_value_info(onnx::ValueInfoProto* vi, const std::string& name, int32_t elem_type,
                              const std::vector<Dim>& dims) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem_type);
    auto* shape = tt->mutable_shape();
    for (const auto& d : dims) {
      auto* dim = shape->add_dim();
      if (std::holds_alternative<int64_t>(d))
        dim->set_dim_value(std::get<int64_t>(d));
      else
        dim->set_dim_param(std::get<std::string>(d));
    }
  }
  onnx::ModelProto model_;
};

// Attribute helpers (append to a node).
inline onnx::AttributeProto* attr_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
  return a;
}
inline onnx::AttributeProto* attr_float(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
  return a;
}
inline onnx::AttributeProto* attr_ints(onnx::NodeProto* n, const std::string& name,
                                       std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (auto x : v) a->add_ints(x);
  return a;
}
inline onnx::AttributeProto* attr_floats(onnx::NodeProto* n, const std::string& name,
                                         std::vector<float> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (auto x : v) a->add_floats(x);
  return a;
}
inline onnx::AttributeProto* attr_tensor(onnx::NodeProto* n, const std::string& name,
                                         onnx::TensorProto t) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = std::move(t);
  return a;
}

// A TensorProto with raw_data holding `values` (host byte order = little endian).
template <typename T>
onnx::TensorProto raw_tensor(const std::string& name, int32_t data_type, std::vector<int64_t> dims,
                             const std::vector<T>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(data_type);
  for (auto d : dims) t.add_dims(d);
  t.set_raw_data(
      std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)));
  return t;
}
inline onnx::TensorProto float_tensor(const std::string& name, std::vector<int64_t> dims,
                                      const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (auto d : dims) t.add_dims(d);
  for (auto v : values) t.add_float_data(v);
  return t;
}
inline onnx::TensorProto int64_tensor(const std::string& name, std::vector<int64_t> dims,
                                      const std::vector<int64_t>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  for (auto d : dims) t.add_dims(d);
  for (auto v : values) t.add_int64_data(v);
  return t;
}

// A fresh temporary folder, removed with everything in it when the object dies.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "graphc_test_XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data())) path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // Writes `bytes` to `name` inside the folder; returns the full path.
  std::string write(const std::string& name, const std::string& bytes) const {
    std::string p = file(name);
    std::ofstream out(p, std::ios::binary);
    out << bytes;
    return p;
  }

 private:
  std::string path_;
};

}  // namespace graphc::testing
