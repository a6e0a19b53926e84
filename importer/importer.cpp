#include "importer/importer.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>

#include "importer/node_importers.h"
#include "importer/tensor_proto.h"
#include "onnx/onnx.pb.h"

namespace graphc::importer {

using ir::DType;
using ir::Graph;
using ir::Tensor;
using ir::ValueId;

namespace {

Expected<std::string> read_file_limited(const std::string& path, int64_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return not_found("cannot open '{}': no such file", path);
  if (S_ISDIR(st.st_mode)) return invalid_argument("'{}' is a directory, not a model file", path);
  if (st.st_size > max_bytes)
    return out_of_range("'{}' is {} bytes, over the {}-byte limit", path, st.st_size, max_bytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot read '{}'", path);
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  in.read(bytes.data(), st.st_size);
  if (in.gcount() != st.st_size) return io_error("short read of '{}'", path);
  return bytes;
}

template <typename Message>
Status parse_limited(std::string_view bytes, Message& msg, int recursion_limit,
                     const std::string& what) {
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(static_cast<int>(std::min<size_t>(bytes.size() + 1, INT32_MAX)));
  coded.SetRecursionLimit(recursion_limit);
  if (!msg.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    return invalid_model("{} is not a valid ONNX protobuf (truncated, corrupted or not ONNX)", what);
  return Status::ok_status();
}

// Converts an AttributeProto; graphs and sparse tensors inside attributes are
// not supported (If/Loop/Scan are out of scope anyway).
Expected<ir::Attribute> convert_attribute(const onnx::AttributeProto& a,
                                          const TensorLoadContext& tctx) {
  using onnx::AttributeProto;
  switch (a.type()) {
    case AttributeProto::INT: return ir::Attribute::of_int(a.i());
    case AttributeProto::FLOAT: return ir::Attribute::of_float(a.f());
    case AttributeProto::STRING: return ir::Attribute::of_string(a.s());
    case AttributeProto::INTS:
      return ir::Attribute::of_ints(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
    case AttributeProto::FLOATS:
      return ir::Attribute::of_floats(std::vector<double>(a.floats().begin(), a.floats().end()));
    case AttributeProto::STRINGS:
      return ir::Attribute::of_strings(std::vector<std::string>(a.strings().begin(), a.strings().end()));
    case AttributeProto::TENSOR: {
      ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(a.t(), tctx));
      return ir::Attribute::of_tensor(std::move(t));
    }
    case AttributeProto::SPARSE_TENSOR: {
      ASSIGN_OR_RETURN(Tensor t, tensor_from_sparse_proto(a.sparse_tensor(), tctx));
      return ir::Attribute::of_tensor(std::move(t));
    }
    case AttributeProto::UNDEFINED:
      // Old exporters leave type unset; infer it from the populated field.
      if (a.has_i()) return ir::Attribute::of_int(a.i());
      if (a.has_f()) return ir::Attribute::of_float(a.f());
      if (a.has_s()) return ir::Attribute::of_string(a.s());
      if (a.ints_size()) return ir::Attribute::of_ints({a.ints().begin(), a.ints().end()});
      if (a.floats_size()) return ir::Attribute::of_floats({a.floats().begin(), a.floats().end()});
      return invalid_model("attribute '{}' has no type and no value", a.name());
    default:
      return unsupported("attribute '{}' of type {} is not supported", a.name(),
                         AttributeProto::AttributeType_Name(a.type()));
  }
}

// Constant node in any of its forms -> a tensor.
Expected<Tensor> constant_node_value(const onnx::NodeProto& n, const TensorLoadContext& tctx) {
  if (n.attribute_size() != 1)
    return invalid_model("Constant must have exactly one value attribute, has {}", n.attribute_size());
  const auto& a = n.attribute(0);
  const std::string& k = a.name();
  if (k == "value") return tensor_from_proto(a.t(), tctx);
  if (k == "sparse_value") return tensor_from_sparse_proto(a.sparse_tensor(), tctx);
  if (k == "value_float") return Tensor::from_f32({a.f()}, {});
  if (k == "value_floats")
    return Tensor::from_f32(std::vector<float>(a.floats().begin(), a.floats().end()),
                            {static_cast<int64_t>(a.floats_size())});
  if (k == "value_int") return Tensor::scalar_i64(a.i());
  if (k == "value_ints")
    return Tensor::from_i64(std::vector<int64_t>(a.ints().begin(), a.ints().end()),
                            {static_cast<int64_t>(a.ints_size())});
  if (k == "value_string" || k == "value_strings")
    return unsupported("string constants are not supported");
  return invalid_model("Constant has unknown attribute '{}'", k);
}

struct ValueTypeInfo {
  DType dtype = DType::kUndefined;
  ir::Shape shape;
  std::vector<std::string> dim_names;
  bool has_shape = false;
};

Expected<ValueTypeInfo> convert_value_info(const onnx::ValueInfoProto& vi) {
  ValueTypeInfo out;
  if (!vi.type().has_tensor_type())
    return unsupported("'{}' is not a tensor (sequences, maps and optionals are not supported)",
                       vi.name());
  const auto& tt = vi.type().tensor_type();
  auto dt = ir::dtype_from_onnx(tt.elem_type());
  if (!dt)
    return unsupported("'{}' has element type {}, which graphc does not support", vi.name(),
                       tt.elem_type());
  out.dtype = *dt;
  if (tt.has_shape()) {
    out.has_shape = true;
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value()) {
        if (d.dim_value() < 0)
          return invalid_model("'{}' has a negative dim {}", vi.name(), d.dim_value());
        out.shape.push_back(d.dim_value());
        out.dim_names.emplace_back();
      } else {
        out.shape.push_back(-1);
        out.dim_names.push_back(d.dim_param().empty() ? std::string("?") : d.dim_param());
      }
    }
  }
  return out;
}

std::string domain_label(const std::string& domain) { return domain.empty() ? "ai.onnx" : domain; }

}  // namespace

const std::vector<OpAlias>& op_aliases();

Expected<Graph> import_model_bytes(std::string_view bytes, const std::string& model_dir,
                                   const std::string& display_name, const ImportOptions& options) {
  if (static_cast<int64_t>(bytes.size()) > options.max_model_bytes)
    return out_of_range("'{}' is larger than the {}-byte model limit", display_name,
                        options.max_model_bytes);
  if (bytes.empty()) return invalid_model("'{}' is empty, not an ONNX model", display_name);
  onnx::ModelProto model;
  RETURN_IF_ERROR(parse_limited(bytes, model, options.recursion_limit, "'" + display_name + "'"));
  if (!model.has_graph() || (model.opset_import_size() == 0 && model.ir_version() == 0))
    return invalid_model("'{}' is not an ONNX model (no graph or opset_import)", display_name);

  Graph g;
  g.name = model.graph().name();
  g.producer = model.producer_name() + (model.producer_version().empty() ? "" : " " + model.producer_version());
  std::unordered_map<std::string, int64_t> opsets;
  for (const auto& os : model.opset_import()) {
    std::string dom = os.domain() == "ai.onnx" ? "" : os.domain();
    opsets[dom] = os.version();
  }
  if (!opsets.count("")) opsets[""] = model.ir_version() >= 3 ? 0 : 1;
  g.opset = opsets[""];
  if (g.opset < kMinOpset || g.opset > kMaxOpset)
    return unsupported("'{}' uses opset {} of ai.onnx; graphc reads opsets {} to {}", display_name,
                       g.opset, kMinOpset, kMaxOpset);

  TensorLoadContext tctx{model_dir, options.max_tensor_bytes};
  const auto& graph = model.graph();
  std::unordered_map<std::string, ValueId> by_name;

  auto define = [&](const std::string& name, ir::Value v) -> Expected<ValueId> {
    if (name.empty()) return invalid_model("a graph value has an empty name");
    if (by_name.count(name))
      return invalid_model("duplicate name '{}': it is defined more than once", name);
    v.name = name;
    ValueId id = g.add_value(std::move(v));
    by_name[name] = id;
    return id;
  };

  // Initializers (weights).
  for (const auto& init : graph.initializer()) {
    auto t = tensor_from_proto(init, tctx);
    if (!t.ok()) return t.status().with_context(fmt::format("initializer '{}'", init.name()));
    ir::Value v;
    v.dtype = t->dtype();
    v.shape = t->shape();
    v.has_shape = true;
    v.constant = std::move(*t);
    v.is_initializer = true;
    ASSIGN_OR_RETURN(ValueId id, define(init.name(), std::move(v)));
    (void)id;
  }
  for (const auto& sp : graph.sparse_initializer()) {
    auto t = tensor_from_sparse_proto(sp, tctx);
    if (!t.ok()) return t.status().with_context(fmt::format("sparse initializer '{}'", sp.values().name()));
    ir::Value v;
    v.dtype = t->dtype();
    v.shape = t->shape();
    v.has_shape = true;
    v.constant = std::move(*t);
    v.is_initializer = true;
    ASSIGN_OR_RETURN(ValueId id, define(sp.values().name(), std::move(v)));
    (void)id;
  }
  // Graph inputs; an input that is also an initializer (IR < 4 style) stays a constant.
  for (const auto& in : graph.input()) {
    auto it = by_name.find(in.name());
    if (it != by_name.end()) {
      if (g.value(it->second).is_initializer) continue;
      return invalid_model("duplicate graph input '{}'", in.name());
    }
    auto info = convert_value_info(in);
    if (!info.ok()) return info.status().with_context("graph input");
    ir::Value v;
    v.dtype = info->dtype;
    v.shape = info->shape;
    v.dim_names = info->dim_names;
    v.has_shape = info->has_shape;
    ASSIGN_OR_RETURN(ValueId id, define(in.name(), std::move(v)));
    g.inputs.push_back(id);
  }

  // Nodes: first collect every unsupported op so the user sees all at once.
  const auto& table = importer_table();
  std::vector<std::string> unsupported_nodes;
  auto node_label = [](const onnx::NodeProto& n, int index) {
    return n.name().empty() ? fmt::format("{}_{}", n.op_type(), index) : n.name();
  };
  auto resolve_kind = [&](const onnx::NodeProto& n) -> std::pair<std::optional<ir::OpKind>, OpImporter> {
    if (!(n.domain().empty() || n.domain() == "ai.onnx")) return {std::nullopt, nullptr};
    for (const auto& alias : op_aliases())
      if (n.op_type() == alias.onnx_name) return {alias.kind, alias.importer};
    auto kind = ir::op_from_name(n.op_type());
    if (!kind) return {std::nullopt, nullptr};
    return {kind, table[static_cast<size_t>(*kind)]};
  };
  auto is_alias = [](const onnx::NodeProto& n) {
    for (const auto& alias : op_aliases())
      if (n.op_type() == alias.onnx_name) return true;
    return false;
  };
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& n = graph.node(i);
    if (n.op_type() == "Constant" && (n.domain().empty() || n.domain() == "ai.onnx")) continue;
    auto [kind, imp] = resolve_kind(n);
    std::string dom = n.domain() == "ai.onnx" ? "" : n.domain();
    if (!kind) {
      auto os = opsets.find(dom);
      unsupported_nodes.push_back(fmt::format(
          "unsupported operator {} ({}, opset {}) at node '{}'", n.op_type(), domain_label(dom),
          os == opsets.end() ? std::string("not imported") : std::to_string(os->second),
          node_label(n, i)));
    } else if (ir::op_info(*kind).introduced_opset > g.opset && !is_alias(n)) {
      // (An alias such as Upsample -> Resize exists in opsets older than the
      // graphc op it maps to; its importer checks its own opset range.)
      unsupported_nodes.push_back(fmt::format(
          "operator {} at node '{}' does not exist in opset {} (introduced in opset {})",
          n.op_type(), node_label(n, i), g.opset, ir::op_info(*kind).introduced_opset));
    }
  }
  if (!unsupported_nodes.empty()) {
    std::string msg = fmt::format("'{}' has {} node(s) graphc cannot compile:", display_name,
                                  unsupported_nodes.size());
    for (const auto& line : unsupported_nodes) msg += "\n  " + line;
    return unsupported("{}", msg);
  }

  std::set<std::string> node_names;
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& n = graph.node(i);
    std::string name = node_label(n, i);
    if (!node_names.insert(name).second) {
      // Node names are not required to be unique in ONNX; reports need them to be.
      std::string base = name;
      for (int k = 1; !node_names.insert(name = fmt::format("{}_{}", base, k)).second; ++k) {
      }
    }
    std::string where = fmt::format("node '{}' ({})", name, n.op_type());
    if (n.op_type() == "Constant" && (n.domain().empty() || n.domain() == "ai.onnx")) {
      if (n.output_size() != 1) return invalid_model("{}: Constant must have one output", where);
      auto t = constant_node_value(n, tctx);
      if (!t.ok()) return t.status().with_context(where);
      ir::Value v;
      v.dtype = t->dtype();
      v.shape = t->shape();
      v.has_shape = true;
      v.constant = std::move(*t);
      auto id = define(n.output(0), std::move(v));
      if (!id.ok()) return id.status().with_context(where);
      continue;
    }
    auto [kind, imp] = resolve_kind(n);
    NodeImportContext ctx{g, n, g.opset, {}};
    ctx.node.op = *kind;
    ctx.node.name = name;
    for (const auto& in : n.input()) {
      if (in.empty()) {
        ctx.node.inputs.push_back(ir::kNoValue);
        continue;
      }
      auto it = by_name.find(in);
      if (it == by_name.end())
        return invalid_model("{} reads '{}', which is not a graph input, an initializer or the "
                             "output of an earlier node",
                             where, in);
      ctx.node.inputs.push_back(it->second);
    }
    for (const auto& a : n.attribute()) {
      if (!a.ref_attr_name().empty())
        return unsupported("{}: attribute '{}' refers to a function attribute", where, a.name());
      auto attr = convert_attribute(a, tctx);
      if (!attr.ok()) return attr.status().with_context(where);
      ctx.node.attrs.set(a.name(), std::move(*attr));
    }
    // Outputs: trailing empty names are dropped, inner ones are omitted outputs.
    int nout = n.output_size();
    while (nout > 0 && n.output(nout - 1).empty()) --nout;
    for (int o = 0; o < nout; ++o) {
      if (n.output(o).empty()) {
        ctx.node.outputs.push_back(ir::kNoValue);
        continue;
      }
      auto id = define(n.output(o), ir::Value{});
      if (!id.ok()) return id.status().with_context(where);
      ctx.node.outputs.push_back(*id);
    }
    if (imp) {
      Status st = imp(ctx);
      if (!st.ok()) return st.with_context(where);
    }
    const auto& info = ir::op_info(ctx.node.op);
    auto nin = static_cast<int>(ctx.node.inputs.size());
    while (nin > info.min_inputs && ctx.node.inputs[static_cast<size_t>(nin) - 1] == ir::kNoValue) --nin;
    ctx.node.inputs.resize(static_cast<size_t>(nin));
    if (nin < info.min_inputs || (info.max_inputs >= 0 && nin > info.max_inputs))
      return invalid_model("{} has {} inputs; {} takes {} to {}", where, nin, info.name,
                           info.min_inputs,
                           info.max_inputs < 0 ? std::string("any") : std::to_string(info.max_inputs));
    for (int k = 0; k < info.min_inputs; ++k)
      if (ctx.node.inputs[static_cast<size_t>(k)] == ir::kNoValue)
        return invalid_model("{}: required input {} is empty", where, k);
    auto nouts = static_cast<int>(ctx.node.outputs.size());
    if (nouts < info.min_outputs || (info.max_outputs >= 0 && nouts > info.max_outputs))
      return invalid_model("{} has {} outputs; {} produces {} to {}", where, nouts, info.name,
                           info.min_outputs,
                           info.max_outputs < 0 ? std::string("any") : std::to_string(info.max_outputs));
    g.add_node(std::move(ctx.node));
  }

  for (const auto& out : graph.output()) {
    auto it = by_name.find(out.name());
    if (it == by_name.end())
      return invalid_model("graph output '{}' is not produced by any node", out.name());
    g.outputs.push_back(it->second);
    // Keep declared output dtype for checking later (shape inference is ours).
  }
  if (g.outputs.empty()) return invalid_model("'{}' declares no graph outputs", display_name);
  return g;
}

Expected<Graph> import_model_file(const std::string& path, const ImportOptions& options) {
  ASSIGN_OR_RETURN(std::string bytes, read_file_limited(path, options.max_model_bytes));
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  auto g = import_model_bytes(bytes, dir, path, options);
  if (!g.ok()) return g.status().with_context(path);
  return g;
}

Expected<Tensor> read_tensor_proto_file(const std::string& path) {
  ASSIGN_OR_RETURN(std::string bytes, read_file_limited(path, int64_t{2} << 30));
  onnx::TensorProto proto;
  RETURN_IF_ERROR(parse_limited(bytes, proto, 64, "'" + path + "'"));
  TensorLoadContext tctx{std::filesystem::path(path).parent_path().string(), int64_t{16} << 30};
  auto t = tensor_from_proto(proto, tctx);
  if (!t.ok()) return t.status().with_context(path);
  return t;
}

}  // namespace graphc::importer
