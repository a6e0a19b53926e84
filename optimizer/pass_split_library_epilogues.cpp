// split-library-epilogues: a fused MatMul/Gemm/Conv group whose epilogue the
// target's library takes only in part (cuBLASLt takes a bias but not an erf
// GELU) becomes two nodes placed where the group was: (a) the anchor and the
// leading epilogue ops the library absorbs, writing the cut value, and (b) a
// fused elementwise group of the rest, reading it (target/epilogue_split.h
// says where the cut is and why it is exact). The emitter then lowers (a) to
// the library call and (b) to a generated kernel; the report, --dump-after and
// the engine all see the same two nodes. Without a target (PassContext::target
// unset) the pass does nothing.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <set>

#include "optimizer/passes.h"
#include "target/epilogue_split.h"
#include "target/target.h"

namespace graphc::optimizer {

namespace {

using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::ValueId;
using target::epilogue_op_count;
using target::find_split;
using target::kSplitEpilogueAttr;

// Builds the part of `body` made of `members` (body node ids, body order) as
// one node of the outer graph. `outer_of` maps the body values the part reads
// or writes across its boundary to outer ids (the group's inputs and outputs,
// the cut); embedded constants it reads are copied into its own body. A single
// member that reads no embedded constant stays a plain node when `allow_plain`.
Expected<Node> make_part(const Graph& body, const std::vector<NodeId>& members,
                         const std::map<ValueId, ValueId>& outer_of,
                         const std::set<ValueId>& part_outputs, ir::FusionKind kind,
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
  part_body->name = std::string(ir::fusion_kind_name(kind));
  Node group;
  group.op = ir::OpKind::FusedGroup;
  group.name = name;
  group.fusion = kind;
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

Expected<ir::Graph> split_groups(const ir::Graph& g, const target::Target& target) {
  Graph out = g;
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size() + 4);
  for (size_t id = 0; id < g.nodes.size(); ++id) {
    const Node& group = g.nodes[id];
    std::optional<size_t> taken;
    if (!group.dead && group.op == ir::OpKind::FusedGroup && group.body)
      taken = target.library_epilogue_ops(g, static_cast<NodeId>(id));
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
    ASSIGN_OR_RETURN(Node library, make_part(body, sp->library, outer_of, {sp->cut}, group.fusion,
                                             group.name, /*allow_plain=*/true));
    if (library.op == ir::OpKind::FusedGroup)
      library.attrs = group.attrs;  // fusion set by make_part
    const std::string stop = target.library_epilogue_stop(g, static_cast<NodeId>(id));
    library.attrs.set(kSplitEpilogueAttr, ir::Attribute::of_string(fmt::format(
                                              "{}{}", fmt::join(sp->generated_ops, ", "),
                                              stop.empty() ? "" : " (" + stop + ")")));
    ASSIGN_OR_RETURN(
        Node epilogue,
        make_part(body, sp->generated, outer_of, generated_outputs, ir::FusionKind::kElementwise,
                  out.unique_name(group.name + "/epilogue"), /*allow_plain=*/true));
    nodes.push_back(std::move(library));
    nodes.push_back(std::move(epilogue));
  }
  out.nodes = std::move(nodes);
  out.rebuild_producers();
  return out;
}

}  // namespace

Status split_library_epilogues(Graph& g, PassContext& ctx) {
  if (!ctx.target) return Status::ok_status();
  const int64_t before = g.live_node_count();
  ASSIGN_OR_RETURN(Graph split, split_groups(g, *ctx.target));
  ctx.count("split-library-epilogues: groups split", split.live_node_count() - before);
  g = std::move(split);
  return Status::ok_status();
}

}  // namespace graphc::optimizer
