#include "driver/model_structure.h"

#include <fmt/ranges.h>

#include <array>
#include <map>
#include <set>

#include "engine_format/refit_record.h"
#include "ir/shape_inference.h"
#include "support/fnv.h"

namespace graphc::driver {

namespace {

using Item = engine::StructureItem;

// Each kind's parts, in the order of StructureItem.parts
// (docs/engine-format.md#refit-records).
constexpr std::array<const char*, 2> kValueParts = {"dtype", "shape"};
constexpr std::array<const char*, 3> kConstantParts = {"dtype", "shape", "value"};
constexpr std::array<const char*, 6> kNodeParts = {"operator",   "inputs",       "outputs",
                                                   "attributes", "output types", "sub-graphs"};

const char* kind_name(Item::Kind kind) {
  switch (kind) {
    case Item::INPUT: return "input";
    case Item::OUTPUT: return "output";
    case Item::CONSTANT: return "constant";
    default: return "node";
  }
}

const char* part_name(Item::Kind kind, int part) {
  if (kind == Item::NODE) return part < 6 ? kNodeParts[static_cast<size_t>(part)] : "?";
  if (kind == Item::CONSTANT) return part < 3 ? kConstantParts[static_cast<size_t>(part)] : "?";
  return part < 2 ? kValueParts[static_cast<size_t>(part)] : "?";
}

uint64_t dtype_hash(const ir::Value& v) {
  return Fnv1a64().i64(static_cast<int64_t>(v.dtype)).value();
}

uint64_t shape_hash(const ir::Value& v) {
  Fnv1a64 h;
  h.u64(v.has_shape ? 1 : 0).u64(v.shape.size());
  for (int64_t d : v.shape) h.i64(d);
  return h.value();
}

void hash_tensor(Fnv1a64& h, const ir::Tensor& t) {
  h.i64(static_cast<int64_t>(t.dtype())).u64(t.shape().size());
  for (int64_t d : t.shape()) h.i64(d);
  h.u64(t.byte_size()).bytes(t.data(), t.byte_size());
}

void hash_attribute(Fnv1a64& h, const ir::Attribute& a) {
  using K = ir::Attribute::Kind;
  h.i64(static_cast<int64_t>(a.kind));
  switch (a.kind) {
    case K::kInt: h.i64(a.i); break;
    case K::kFloat: h.bytes(&a.f, sizeof a.f); break;
    case K::kString: h.text(a.s); break;
    case K::kInts:
      h.u64(a.ints.size());
      for (int64_t v : a.ints) h.i64(v);
      break;
    case K::kFloats:
      h.u64(a.floats.size());
      for (double v : a.floats) h.bytes(&v, sizeof v);
      break;
    case K::kStrings:
      h.u64(a.strings.size());
      for (const auto& s : a.strings) h.text(s);
      break;
    case K::kTensor: hash_tensor(h, a.t); break;
  }
}

uint64_t fold(const google::protobuf::RepeatedPtrField<Item>& items) {
  Fnv1a64 h;
  h.u64(static_cast<uint64_t>(items.size()));
  for (const Item& item : items) {
    h.i64(item.kind()).text(item.name()).u64(static_cast<uint64_t>(item.parts_size()));
    for (uint64_t p : item.parts()) h.u64(p);
  }
  return h.value();
}

// The values whose constants shape inference reads, and, through constants
// inference propagated (a Shape -> Gather -> Concat chain), the constants
// those were computed from. Inference runs again on a copy (the tensors'
// bytes are shared, not copied) and reports each read.
Expected<std::set<ir::ValueId>> structural_reads(const ir::Graph& inferred) {
  ir::Graph copy = inferred;
  std::set<ir::ValueId> read;
  ir::ShapeInferenceOptions options;
  options.on_constant_read = [&](const ir::Graph& g, ir::ValueId id) {
    if (&g == &copy) read.insert(id);  // a sub-graph's reads are of its own values
  };
  RETURN_IF_ERROR(ir::infer_shapes(copy, options));
  std::vector<ir::ValueId> work(read.begin(), read.end());
  while (!work.empty()) {
    const ir::Value& v = inferred.value(work.back());
    work.pop_back();
    if (v.producer < 0 || !v.constant) continue;
    for (ir::ValueId in : inferred.node(v.producer).inputs)
      if (in != ir::kNoValue && inferred.value(in).constant && read.insert(in).second)
        work.push_back(in);
  }
  return read;
}

google::protobuf::RepeatedPtrField<Item> items_of(const ir::Graph& g,
                                                  const std::set<ir::ValueId>* reads);

uint64_t subgraph_hash(const ir::Graph& sub) {
  // Inside a sub-graph only one-element constants count as structural: its
  // reads are not tracked, and the plan comparison catches the rest.
  return fold(items_of(sub, nullptr));
}

Item& add_item(google::protobuf::RepeatedPtrField<Item>& items, Item::Kind kind,
               const std::string& name) {
  Item& item = *items.Add();
  item.set_kind(kind);
  item.set_name(name);
  return item;
}

google::protobuf::RepeatedPtrField<Item> items_of(const ir::Graph& g,
                                                  const std::set<ir::ValueId>* reads) {
  google::protobuf::RepeatedPtrField<Item> items;
  for (ir::ValueId id : g.inputs) {
    Item& item = add_item(items, Item::INPUT, g.value(id).name);
    item.add_parts(dtype_hash(g.value(id)));
    item.add_parts(shape_hash(g.value(id)));
  }
  // Constants some node reads (an unused initializer changes nothing), in
  // the model's order, which decides where the weights go.
  std::vector<bool> used(g.values.size(), false);
  for (const ir::Node& n : g.nodes)
    if (!n.dead)
      for (ir::ValueId in : n.inputs)
        if (in != ir::kNoValue) used[static_cast<size_t>(in)] = true;
  for (ir::ValueId out : g.outputs) used[static_cast<size_t>(out)] = true;
  for (size_t i = 0; i < g.values.size(); ++i) {
    const ir::Value& v = g.values[i];
    if (!used[i] || !v.constant || v.producer >= 0) continue;
    Item& item = add_item(items, Item::CONSTANT, v.name);
    item.add_parts(dtype_hash(v));
    item.add_parts(shape_hash(v));
    const bool structural =
        v.constant->numel() <= 1 || (reads && reads->count(static_cast<ir::ValueId>(i)));
    Fnv1a64 value;
    if (structural) hash_tensor(value, *v.constant);
    item.add_parts(structural ? value.value() : 0);
  }
  for (const ir::Node& n : g.nodes) {
    if (n.dead) continue;
    Item& item = add_item(items, Item::NODE, n.name);
    item.add_parts(Fnv1a64().text(ir::op_name(n.op)).value());
    Fnv1a64 ins, outs, attrs, types, subs;
    for (ir::ValueId in : n.inputs) ins.text(in == ir::kNoValue ? "" : g.value(in).name);
    for (ir::ValueId out : n.outputs) {
      outs.text(out == ir::kNoValue ? "" : g.value(out).name);
      if (out == ir::kNoValue) continue;
      types.u64(dtype_hash(g.value(out))).u64(shape_hash(g.value(out)));
    }
    for (const auto& [name, a] : n.attrs.items()) {
      attrs.text(name);
      hash_attribute(attrs, a);
    }
    for (const auto& sub : n.subgraphs) subs.u64(subgraph_hash(*sub));
    for (const Fnv1a64* h : {&ins, &outs, &attrs, &types, &subs}) item.add_parts(h->value());
  }
  for (ir::ValueId id : g.outputs) {
    Item& item = add_item(items, Item::OUTPUT, g.value(id).name);
    item.add_parts(dtype_hash(g.value(id)));
    item.add_parts(shape_hash(g.value(id)));
  }
  return items;
}

// --- messages: this model's side of a difference ---------------------------

std::string type_text(const ir::Value& v) {
  return fmt::format("{}[{}]", ir::dtype_name(v.dtype), ir::shape_to_string(v.shape));
}

std::string value_text(const ir::Tensor& t) {
  std::vector<std::string> items;
  for (int64_t i = 0; i < t.numel() && i < 8; ++i)
    items.push_back(ir::is_float(t.dtype()) ? fmt::format("{:g}", t.get_f64(i))
                                            : fmt::format("{}", t.get_i64(i)));
  return fmt::format("[{}{}]", fmt::join(items, ", "), t.numel() > 8 ? ", ..." : "");
}

const ir::Node* node_named(const ir::Graph& g, const std::string& name) {
  for (const ir::Node& n : g.nodes)
    if (!n.dead && n.name == name) return &n;
  return nullptr;
}

std::string names_of(const ir::Graph& g, const std::vector<ir::ValueId>& ids) {
  std::vector<std::string> names;
  for (ir::ValueId id : ids) names.push_back(id == ir::kNoValue ? "(none)" : g.value(id).name);
  return fmt::format("{}", fmt::join(names, ", "));
}

std::string part_text(const ir::Graph& g, const Item& item, int part) {
  if (item.kind() == Item::NODE) {
    const ir::Node* n = node_named(g, item.name());
    if (!n) return "?";
    switch (part) {
      case 0: return std::string(ir::op_name(n->op));
      case 1: return names_of(g, n->inputs);
      case 2: return names_of(g, n->outputs);
      case 3: {
        std::vector<std::string> attrs;
        for (const auto& [name, a] : n->attrs.items()) attrs.push_back(name + "=" + a.to_string());
        return attrs.empty() ? "none" : fmt::format("{}", fmt::join(attrs, ", "));
      }
      case 4: {
        std::vector<std::string> types;
        for (ir::ValueId out : n->outputs)
          if (out != ir::kNoValue)
            types.push_back(g.value(out).name + " " + type_text(g.value(out)));
        return fmt::format("{}", fmt::join(types, ", "));
      }
      default: return fmt::format("{} sub-graph(s)", n->subgraphs.size());
    }
  }
  auto id = g.find_value(item.name());
  if (!id) return "?";
  const ir::Value& v = g.value(*id);
  if (item.kind() == Item::CONSTANT && part == 2 && v.constant)
    return type_text(v) + " = " + value_text(*v.constant);
  return type_text(v);
}

std::string item_label(const ir::Graph& g, const Item& item) {
  std::string label = fmt::format("{} '{}'", kind_name(item.kind()), item.name());
  if (item.kind() == Item::NODE)
    if (const ir::Node* n = node_named(g, item.name()))
      label += fmt::format(" ({})", ir::op_name(n->op));
  return label;
}

std::string parts_difference(const ir::Graph& g, const Item& engine, const Item& model) {
  std::vector<int> differ;
  for (int p = 0; p < std::max(engine.parts_size(), model.parts_size()); ++p)
    if (p >= engine.parts_size() || p >= model.parts_size() || engine.parts(p) != model.parts(p))
      differ.push_back(p);
  std::vector<std::string> what;
  for (int p : differ) what.push_back(part_name(model.kind(), p));
  // "its shape differs", "its attributes differ", "its dtype and shape differ".
  const bool plural = differ.size() > 1 || what.front().back() == 's';
  std::string text =
      fmt::format("{}: its {} differ{} (this model's: {})", item_label(g, model),
                  fmt::join(what, " and "), plural ? "" : "s", part_text(g, model, differ.front()));
  if (model.kind() == Item::CONSTANT && differ.front() == 2)
    text +=
        "; a constant that decides shapes, or a one-element constant the kernels take as a "
        "literal, is part of the structure";
  return text;
}

std::string key_of(const Item& item) {
  return std::to_string(static_cast<int>(item.kind())) + ":" + item.name();
}

}  // namespace

Status describe_structure(const ir::Graph& inferred, engine::Refit& out) {
  ASSIGN_OR_RETURN(const std::set<ir::ValueId> reads, structural_reads(inferred));
  *out.mutable_structure() = items_of(inferred, &reads);
  out.set_structure_hash(fold(out.structure()));
  return Status::ok_status();
}

Status compare_structure(const engine::Refit& engine, const engine::Refit& model,
                         const ir::Graph& inferred) {
  const auto& want = engine.structure();
  const auto& have = model.structure();
  std::map<std::string, int> in_model;
  for (int i = 0; i < have.size(); ++i) in_model.emplace(key_of(have[i]), i);
  std::set<std::string> in_engine;
  // The first difference is described (from this model's graph), the rest counted.
  std::string first;
  size_t count = 0;
  auto differs = [&](const auto& describe) {
    if (count++ == 0) first = describe();
  };
  for (const Item& item : want) {
    in_engine.insert(key_of(item));
    auto it = in_model.find(key_of(item));
    if (it == in_model.end()) {
      differs([&] {
        return fmt::format("the engine's model has {} '{}', this model has none",
                           kind_name(item.kind()), item.name());
      });
      continue;
    }
    const Item& mine = have[it->second];
    if (mine.parts_size() != item.parts_size() ||
        !std::equal(mine.parts().begin(), mine.parts().end(), item.parts().begin()))
      differs([&] { return parts_difference(inferred, item, mine); });
  }
  for (const Item& item : have)
    if (!in_engine.count(key_of(item)))
      differs([&] {
        return fmt::format("this model has {}, which the engine's model has not",
                           item_label(inferred, item));
      });
  for (int i = 0; count == 0 && i < want.size() && i < have.size(); ++i)
    if (key_of(want[i]) != key_of(have[i]))
      differs([&] {
        return fmt::format(
            "the same items come in another order: {} is where the engine's model has {} '{}'",
            item_label(inferred, have[i]), kind_name(want[i].kind()), want[i].name());
      });
  if (count == 0 && engine.structure_hash() == model.structure_hash()) return Status::ok_status();
  if (count == 0) differs([] { return std::string("the structure hashes differ"); });
  return invalid_model(
      "this model's structure ({}) differs from the one the engine was built from ({}): {}{}; "
      "graphc refit needs the same graph, shapes and dtypes (rebuild with graphc build)",
      engine::structure_hash_text(model.structure_hash()),
      engine::structure_hash_text(engine.structure_hash()), first,
      count > 1 ? fmt::format(" (and {} more)", count - 1) : "");
}

}  // namespace graphc::driver
