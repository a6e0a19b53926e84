// Turning a set of nodes into one FusedGroup node whose body is those nodes.
// The fusion passes decide membership; this file does the surgery and the
// safety check that a group never creates a cycle.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace graphc::optimizer {

// True when fusing `members` into one node would create a cycle: some input
// a member reads from outside the set depends (transitively) on a member.
bool fusion_creates_cycle(const ir::Graph& g, const std::vector<ir::NodeId>& members);

// Replaces `members` (live nodes) with one FusedGroup node of the given kind. Values the members
// read from outside become the group's inputs, except one-element constants, which are copied
// into the body (rendered as literals). Larger constants stay inputs, read from the engine's
// weights: a weight compiled into a kernel's code could not change without compiling it again
// (graphc refit), and a literal is only worth it for a scalar. Values read outside the group, or
// graph outputs, become its outputs (so a multi-consumer intermediate makes a multi-output group).
// Re-sorts the node list topologically. Returns the new node's id.
Expected<ir::NodeId> materialize_group(ir::Graph& g, const std::vector<ir::NodeId>& members,
                                       ir::FusionKind kind);

// Node ids in a live graph sorted into topological order (stable).
Status sort_nodes(ir::Graph& g);

// The ONNX node names a (possibly fused) node covers, for reports.
std::vector<std::string> covered_node_names(const ir::Node& n);

}  // namespace graphc::optimizer
