#include "emit/library_split.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

namespace graphc::emit {

namespace {

using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::ValueId;

bool is_library_anchor(ir::OpKind op) {
  return op == ir::OpKind::MatMul || op == ir::OpKind::Gemm || op == ir::OpKind::Conv ||
         op == ir::OpKind::ConvTranspose;
}

// Builds the part of `body` made of `members` (body node ids, body order) as
// one node of the outer graph. `outer_of` maps the body values the part reads
// or writes across its boundary to outer ids (the group's inputs and outputs,
// the cut); embedded constants it reads are copied into its own body. A single
// member that reads no embedded constant stays a plain node when `allow_plain`.
Expected<Node> make_part(const Graph& body, const std::vector<NodeId>& members,
                         const std::map<ValueId, ValueId>& outer_of,
                         const std::set<ValueId>& part_outputs, const std::string& kind,
                         const std::string& name, bool allow_plain) {
  const std::set<NodeId> in_part(members.begin(), members.end());
  auto produced_inside = [&](ValueId v) {
    const NodeId p = body.value(v).producer;
    return p >= 0 && in_part.count(p) > 0;
  };
  auto outer = [&](ValueId v) -> Expected<ValueId> {
    auto it = outer_of.find(v);
    if (it == outer_of.end())
      return internal_error("split: body value '{}' has no value outside the group",
                            body.value(v).name);
    return it->second;
  };
  bool reads_embedded = false;
  for (NodeId m : members)
    for (ValueId in : body.node(m).inputs)
      if (in != ir::kNoValue && !produced_inside(in) && !outer_of.count(in)) reads_embedded = true;

  if (allow_plain && members.size() == 1 && !reads_embedded) {
    Node plain = body.node(members[0]);
    for (ValueId& in : plain.inputs) {
      if (in == ir::kNoValue) continue;
      ASSIGN_OR_RETURN(in, outer(in));
    }
    for (ValueId& out : plain.outputs) {
      if (out == ir::kNoValue) continue;
      if (!part_outputs.count(out))
        return internal_error("split: output '{}' of '{}' is not read after the split",
                              body.value(out).name, plain.name);
      ASSIGN_OR_RETURN(out, outer(out));
    }
    return plain;
  }

  auto part_body = std::make_shared<Graph>();
  part_body->opset = body.opset;
  part_body->name = kind;
  Node group;
  group.op = ir::OpKind::FusedGroup;
  group.name = name;
  group.attrs.set("kind", ir::Attribute::of_string(kind));
  std::map<ValueId, ValueId> to_part;  // body id -> part body id
  auto copy_value = [&](ValueId v) {
    const ir::Value& src = body.value(v);
    ir::Value copy;
    copy.name = src.name;
    copy.dtype = src.dtype;
    copy.shape = src.shape;
    copy.has_shape = src.has_shape;
    return part_body->add_value(std::move(copy));
  };
  for (NodeId m : members) {
    Node copy = body.node(m);
    for (ValueId& in : copy.inputs) {
      if (in == ir::kNoValue) continue;
      if (auto it = to_part.find(in); it != to_part.end()) {
        in = it->second;
        continue;
      }
      ValueId id;
      if (outer_of.count(in)) {
        id = copy_value(in);
        part_body->inputs.push_back(id);
        group.inputs.push_back(outer_of.at(in));
      } else if (body.value(in).constant && body.value(in).producer < 0) {
        id = part_body->add_constant(body.value(in).name, *body.value(in).constant);
      } else {
        return internal_error("split: '{}' reads '{}', which neither part writes", copy.name,
                              body.value(in).name);
      }
      to_part[in] = id;
      in = id;
    }
    for (ValueId& out : copy.outputs) {
      if (out == ir::kNoValue) continue;
      const ValueId body_out = out;
      out = copy_value(body_out);
      to_part[body_out] = out;
      if (part_outputs.count(body_out)) {
        part_body->outputs.push_back(out);
        ASSIGN_OR_RETURN(ValueId o, outer(body_out));
        group.outputs.push_back(o);
      }
    }
    part_body->add_node(std::move(copy));
  }
  if (group.outputs.empty()) return internal_error("split: part '{}' has no outputs", name);
  group.body = std::move(part_body);
  return group;
}

}  // namespace

size_t epilogue_op_count(const ir::Node& group) {
  if (group.op != ir::OpKind::FusedGroup || !group.body) return 0;
  size_t live = 0;
  for (const Node& n : group.body->nodes) live += n.dead ? 0 : 1;
  return live > 0 ? live - 1 : 0;
}

Expected<SplitPoint> find_split(const ir::Node& group, size_t taken) {
  if (group.op != ir::OpKind::FusedGroup || !group.body)
    return unsupported("'{}' is not a fused group", group.name);
  const Graph& body = *group.body;
  SplitPoint sp;
  for (size_t i = 0; i < body.nodes.size(); ++i) {
    const Node& n = body.nodes[i];
    if (n.dead || !is_library_anchor(n.op)) continue;
    if (sp.anchor >= 0) return unsupported("two anchors in one group");
    sp.anchor = static_cast<NodeId>(i);
  }
  if (sp.anchor < 0) return unsupported("no MatMul/Gemm/Conv in the group");
  const Node& anchor = body.node(sp.anchor);
  if (anchor.outputs.empty() || anchor.outputs[0] == ir::kNoValue)
    return unsupported("the anchor has no output");
  sp.library.push_back(sp.anchor);
  ValueId cur = anchor.outputs[0];
  for (size_t i = 0; i < taken; ++i) {
    // The library writes only its last value: each one before it must feed
    // the next op of the chain and nothing else.
    if (body.is_graph_output(cur))
      return unsupported("'{}' is read outside the group before the cut", body.value(cur).name);
    const auto users = body.consumers(cur);
    if (users.size() != 1) return unsupported("the epilogue branches before the cut");
    const Node& e = body.node(users[0]);
    if (!ir::is_elementwise(e.op) || e.outputs.size() != 1)
      return unsupported("epilogue op {} is not a one-output elementwise op", ir::op_name(e.op));
    sp.library.push_back(users[0]);
    cur = e.outputs[0];
  }
  sp.cut = cur;
  const ir::Value& cut = body.value(sp.cut);
  const std::set<NodeId> in_library(sp.library.begin(), sp.library.end());
  for (size_t i = 0; i < body.nodes.size(); ++i) {
    const Node& n = body.nodes[i];
    if (n.dead || in_library.count(static_cast<NodeId>(i))) continue;
    if (!ir::is_elementwise(n.op) || n.outputs.size() != 1 || n.outputs[0] == ir::kNoValue)
      return unsupported("epilogue op {} is not a one-output elementwise op", ir::op_name(n.op));
    if (body.value(n.outputs[0]).shape != cut.shape)
      return unsupported("epilogue op {} changes the shape", ir::op_name(n.op));
    for (ValueId in : n.inputs) {
      if (in == ir::kNoValue || in == sp.cut) continue;
      const NodeId p = body.value(in).producer;
      if (p >= 0 && in_library.count(p))
        return unsupported("epilogue op {} reads '{}', which the library does not write",
                           ir::op_name(n.op), body.value(in).name);
    }
    sp.generated.push_back(static_cast<NodeId>(i));
    sp.generated_ops.emplace_back(ir::op_name(n.op));
  }
  if (sp.generated.empty()) return unsupported("the library takes the whole epilogue");
  bool cut_read = body.is_graph_output(sp.cut);
  for (NodeId c : body.consumers(sp.cut)) cut_read |= !in_library.count(c);
  if (!cut_read) return unsupported("nothing reads the library's result");
  return sp;
}

Expected<ir::Graph> split_library_epilogues(const ir::Graph& g, const EpilogueTakes& takes) {
  Graph out = g;
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size() + 4);
  for (size_t id = 0; id < g.nodes.size(); ++id) {
    const Node& group = g.nodes[id];
    std::optional<size_t> taken;
    if (!group.dead && group.op == ir::OpKind::FusedGroup && group.body)
      taken = takes(g, static_cast<NodeId>(id));
    if (!taken || *taken >= epilogue_op_count(group)) {
      nodes.push_back(group);
      continue;
    }
    auto sp = find_split(group, *taken);
    if (!sp.ok())
      return internal_error("cannot split '{}' after {} epilogue ops: {}", group.name, *taken,
                            sp.status().message());
    const Graph& body = *group.body;
    if (body.inputs.size() != group.inputs.size() || body.outputs.size() != group.outputs.size())
      return internal_error("fused group '{}' does not match its body", group.name);
    std::map<ValueId, ValueId> outer_of;
    for (size_t i = 0; i < body.inputs.size(); ++i) outer_of[body.inputs[i]] = group.inputs[i];
    for (size_t i = 0; i < body.outputs.size(); ++i) outer_of[body.outputs[i]] = group.outputs[i];
    if (!outer_of.count(sp->cut)) {
      const ir::Value& cut = body.value(sp->cut);
      ir::Value v;
      v.name = out.unique_name(cut.name);
      v.dtype = cut.dtype;
      v.shape = cut.shape;
      v.has_shape = true;
      outer_of[sp->cut] = out.add_value(std::move(v));
    }
    std::set<ValueId> generated_outputs;
    for (NodeId n : sp->generated)
      if (body.is_graph_output(body.node(n).outputs[0]))
        generated_outputs.insert(body.node(n).outputs[0]);
    std::string kind = group.attrs.get_string("kind", "gemm");
    ASSIGN_OR_RETURN(Node library, make_part(body, sp->library, outer_of, {sp->cut}, kind,
                                             group.name, /*allow_plain=*/true));
    if (library.op == ir::OpKind::FusedGroup) library.attrs = group.attrs;
    library.attrs.set(kSplitEpilogueAttr, ir::Attribute::of_string(fmt::format(
                                              "{}", fmt::join(sp->generated_ops, ", "))));
    ASSIGN_OR_RETURN(Node epilogue,
                     make_part(body, sp->generated, outer_of, generated_outputs, "elementwise",
                               out.unique_name(group.name + "/epilogue"), /*allow_plain=*/true));
    nodes.push_back(std::move(library));
    nodes.push_back(std::move(epilogue));
  }
  out.nodes = std::move(nodes);
  out.rebuild_producers();
  return out;
}

}  // namespace graphc::emit
