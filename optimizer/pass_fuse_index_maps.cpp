// fuse-index-maps: chains of pure index-mapping ops (Transpose, Reshape/
// Flatten/Squeeze/Unsqueeze, Slice, Concat, constant Pad, Expand, Split,
// Gather with constant indices, Tile) and the plain elementwise ops around
// them become one elementwise FusedGroup whose loads go through the composed
// index map (emit/cuda/cuda_index_map.cpp renders it; the reference executor
// runs its body). Swin's window partition/reverse, its cyclic shift exported
// as Slice + Concat and the padding around them each cost a copy through HBM
// otherwise.
//
// A group grows upwards from its one output through producers whose every
// read is inside the group (an index map read elsewhere too is copied into
// the group: Swin's q, k and v Gathers each read the one QKV Transpose), and
// is kept only when it saves a launch (two or more members that are kernels,
// not views). Runs after the other fusion
// passes, so it takes only what they left: it never breaks up a GEMM
// epilogue or a normalization group. Transposes that move the last axis stay
// alone (their own kernel tiles through shared memory to keep both sides
// coalesced). Over a shape range a member's map must hold at every shape
// (ir::index_map_follows_range: what it cuts, picks or splits along does not
// vary; its elementwise members broadcast only dims of one element); the
// kernel then reads its varying sizes at run time.
#include <algorithm>
#include <optional>
#include <set>

#include "ir/index_map.h"
#include "optimizer/fusion_group.h"
#include "optimizer/passes.h"

namespace graphc::optimizer {

using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::OpKind;
using ir::ValueId;

namespace {

constexpr size_t kMaxMembers = 24;  // keeps the rendered kernel (a nested walk) small

bool plain_dtype(ir::DType t) {
  return (ir::is_float(t) || ir::is_integer(t) || t == ir::DType::kBool) &&
         !ir::is_sub_byte_integer(t);
}

bool dtypes_ok(const Graph& g, const Node& n) {
  for (ValueId v : n.inputs)
    if (v != ir::kNoValue && (!plain_dtype(g.value(v).dtype) || !g.value(v).has_shape))
      return false;
  for (ValueId v : n.outputs)
    if (v != ir::kNoValue && (!plain_dtype(g.value(v).dtype) || !g.value(v).has_shape))
      return false;
  return true;
}

// The graph and, over a shape range, its symbolic shapes (recomputed after
// each group is made: ids and values change).
struct Scope {
  const Graph& g;
  const ir::SymbolicShapes* sym = nullptr;
};

// Over a range, shape arithmetic (Shape -> Gather -> Mul -> Concat feeding a
// Reshape) stays as it is: a fused group's output is not followed as shape
// values.
bool shape_arithmetic(const Scope& s, const Node& n) {
  if (!s.sym) return false;
  for (ValueId v : n.outputs)
    if (v != ir::kNoValue && s.sym->values[static_cast<size_t>(v)].elements) return true;
  return false;
}

bool is_index_map(const Scope& s, const Node& n) {
  const Graph& g = s.g;
  if (n.dead || n.op == OpKind::FusedGroup || !dtypes_ok(g, n)) return false;
  auto step = ir::index_map_step(g, n);
  if (!step.ok()) return false;
  // A transpose that moves the last axis keeps its tiled kernel.
  if (step->kind == ir::IndexMapStep::Kind::kTranspose && !step->perm.empty() &&
      step->perm.back() != static_cast<int64_t>(step->perm.size()) - 1)
    return false;
  return !s.sym || (!shape_arithmetic(s, n) && ir::index_map_follows_range(g, n, *s.sym).ok());
}

bool is_plain_elementwise(const Scope& s, const Node& n) {
  return !n.dead && n.op != OpKind::FusedGroup && ir::is_elementwise(n.op) &&
         n.op != OpKind::Identity && n.outputs.size() == 1 && dtypes_ok(s.g, n) &&
         (!s.sym || (!shape_arithmetic(s, n) && ir::broadcast_follows_range(s.g, n, *s.sym).ok()));
}

bool is_view(const Node& n) { return ir::op_info(n.op).traits.view; }

std::vector<size_t> data_inputs(const Node& n) {
  if (ir::is_elementwise(n.op)) {
    std::vector<size_t> all;
    for (size_t i = 0; i < n.inputs.size(); ++i) all.push_back(i);
    return all;
  }
  return ir::index_map_data_inputs(n);
}

// True when every read of every output of `p` is by a member of `group`.
bool read_only_inside(const Graph& g, const Node& p, const std::set<NodeId>& group) {
  for (ValueId out : p.outputs) {
    if (out == ir::kNoValue) continue;
    if (g.is_graph_output(out)) return false;
    for (NodeId c : g.consumers(out))
      if (!group.count(c)) return false;
  }
  return true;
}

// True when every reader of `p`'s output could take its own copy of `p`.
bool copies_may_replace(const Scope& s, const Node& p) {
  const ValueId out = p.outputs[0];
  if (s.g.is_graph_output(out)) return false;
  for (NodeId c : s.g.consumers(out))
    if (!is_index_map(s, s.g.node(c)) && !is_plain_elementwise(s, s.g.node(c))) return false;
  return true;
}

struct Plan {
  std::vector<NodeId> members;
  // Index maps also read outside the group: the group gets its own copy
  // (one more way to address the same bytes, no arithmetic), whose input
  // becomes the group's. Once every reader has one, the original is dead.
  std::vector<NodeId> shared;
};

// The members of the group whose output is `seed`'s, grown upwards.
Plan plan_group(const Scope& s, NodeId seed) {
  const Graph& g = s.g;
  Plan plan;
  std::vector<NodeId>& members = plan.members;
  members.push_back(seed);
  std::set<NodeId> in_group{seed};
  for (size_t k = 0; k < members.size() && members.size() < kMaxMembers; ++k) {
    const Node& n = g.node(members[k]);
    if (std::find(plan.shared.begin(), plan.shared.end(), members[k]) != plan.shared.end())
      continue;  // a copy reads its input from outside
    for (size_t i : data_inputs(n)) {
      const ValueId v = n.input(i);
      if (v == ir::kNoValue) continue;
      const NodeId p = g.value(v).producer;
      if (p < 0 || in_group.count(p)) continue;
      const Node& pn = g.node(p);
      const bool map = is_index_map(s, pn);
      if (!map && !is_plain_elementwise(s, pn)) continue;
      in_group.insert(p);
      const bool inside = read_only_inside(g, pn, in_group);
      if (!inside && !(map && pn.outputs.size() == 1)) {
        in_group.erase(p);
        continue;
      }
      members.push_back(p);
      if (fusion_creates_cycle(g, members)) {
        members.pop_back();
        in_group.erase(p);
        continue;
      }
      if (!inside) plan.shared.push_back(p);
    }
  }
  return plan;
}

// Gives the group its own copy of each shared member, read by the members
// that read the original. The copy goes right after the original, so the
// node order stays topological (materialize_group relies on it).
void copy_shared(Graph& g, Plan& plan) {
  for (size_t k = 0; k < plan.members.size(); ++k) {
    const NodeId original = plan.members[k];
    if (std::find(plan.shared.begin(), plan.shared.end(), original) == plan.shared.end())
      continue;
    const ValueId from = g.node(original).outputs[0];
    Node copy = g.node(original);
    copy.name = g.unique_name(copy.name + "/copy");
    ir::Value out = g.value(from);
    out.name = g.unique_name(out.name + "/copy");
    out.constant.reset();
    const ValueId to = g.add_value(std::move(out));
    copy.outputs = {to};
    for (NodeId r : plan.members)
      if (r != original)
        for (auto& in : g.node(r).inputs)
          if (in == from) in = to;
    const NodeId at = g.insert_node_before(original + 1, std::move(copy));
    for (NodeId& m : plan.members)
      if (m >= at) ++m;
    for (NodeId& m : plan.shared)
      if (m >= at) ++m;
    plan.members[k] = at;
  }
}

// Parameter inputs (pads, starts, shapes, indices) that are build-time
// constants move into the body, so the kernel gets only the data it reads.
void embed_parameters(Graph& g, NodeId id) {
  Node& fused = g.node(id);
  auto body = std::make_shared<Graph>(*fused.body);
  std::set<ValueId> data;  // body values read as data
  for (const auto& n : body->nodes)
    for (size_t i : data_inputs(n))
      if (n.input(i) != ir::kNoValue) data.insert(n.inputs[i]);
  for (ValueId v : body->outputs) data.insert(v);
  for (size_t i = fused.inputs.size(); i-- > 0;) {
    const ir::Value& outer = g.value(fused.inputs[i]);
    const ValueId bv = body->inputs[i];
    if (!outer.constant || data.count(bv)) continue;
    body->value(bv).constant = outer.constant;
    body->inputs.erase(body->inputs.begin() + static_cast<std::ptrdiff_t>(i));
    fused.inputs.erase(fused.inputs.begin() + static_cast<std::ptrdiff_t>(i));
  }
  fused.body = std::move(body);
}

}  // namespace

Status fuse_index_maps(Graph& g, PassContext& ctx) {
  std::optional<ir::SymbolicShapes> sym;
  auto scope = [&]() -> Expected<Scope> {
    if (ctx.shape_range && !sym) {
      ASSIGN_OR_RETURN(sym, ir::infer_symbolic_shapes(g, *ctx.shape_range));
    }
    return Scope{g, sym ? &*sym : nullptr};
  };
  // Seeds from the last node up, by name (ids change as groups form): each
  // group is planned from its output, before its producers are seeds.
  std::vector<std::string> names;
  {
    ASSIGN_OR_RETURN(Scope s, scope());
    for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it)
      if (!it->dead && (is_index_map(s, *it) || is_plain_elementwise(s, *it)))
        names.push_back(it->name);
  }
  std::set<std::string> taken;  // members of groups made so far
  for (const auto& name : names) {
    if (taken.count(name)) continue;
    NodeId seed = -1;
    for (size_t i = 0; i < g.nodes.size() && seed < 0; ++i)
      if (!g.nodes[i].dead && g.nodes[i].name == name) seed = static_cast<NodeId>(i);
    if (seed < 0 || g.node(seed).outputs.size() != 1) continue;
    const ValueId out = g.node(seed).outputs[0];
    if (out == ir::kNoValue || (!g.is_graph_output(out) && g.consumers(out).empty())) continue;
    ASSIGN_OR_RETURN(Scope sc, scope());
    Plan plan = plan_group(sc, seed);
    // A shared member counts as a launch saved when each of its readers may
    // take a copy (the original goes once the last one has); a copy itself
    // never adds a launch.
    int kernels = 0, maps = 0;
    for (NodeId m : plan.members) {
      const bool shared =
          std::find(plan.shared.begin(), plan.shared.end(), m) != plan.shared.end();
      kernels += is_view(g.node(m)) || (shared && !copies_may_replace(sc, g.node(m))) ? 0 : 1;
      maps += ir::is_elementwise(g.node(m).op) ? 0 : 1;
    }
    if (kernels < 2 || maps == 0) continue;
    for (NodeId m : plan.members) taken.insert(g.node(m).name);
    copy_shared(g, plan);
    const auto& members = plan.members;
    ASSIGN_OR_RETURN(NodeId made, materialize_group(g, members, ir::FusionKind::kElementwise));
    embed_parameters(g, made);
    sym.reset();  // the graph changed
    ctx.count("fuse-index-maps: groups");
    ctx.count("fuse-index-maps: groups (nodes fused)", static_cast<int64_t>(members.size()));
  }
  // Shared index maps whose every reader now has its own copy.
  return eliminate_dead_code(g, ctx);
}

}  // namespace graphc::optimizer
