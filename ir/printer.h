// Stable text form of an ir::Graph (graphc inspect --ir, golden tests) and a
// Graphviz dump (--dot). Stable: depends only on the graph, never on pointers.
#pragma once

#include <string>

#include "ir/graph.h"

namespace graphc::ir {

std::string print_graph(const Graph& graph);
std::string graph_to_dot(const Graph& graph);
std::string value_type_string(const Value& v);  // "float32[1x3x224x224]"

}  // namespace graphc::ir
