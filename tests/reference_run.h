// Small Catch helpers for tests that compare a graph before and after the
// optimizer on the reference executor.
#pragma once

#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>

#include "ir/graph.h"
#include "reference/executor.h"

namespace graphc::testing {

// The reference executor's outputs of `g` on `feeds`; the test stops when it fails.
inline std::map<std::string, ir::Tensor> run_reference(
    const ir::Graph& g, const std::map<std::string, ir::Tensor>& feeds) {
  auto out = reference::execute(g, feeds);
  INFO(out.status().message());
  REQUIRE(out.ok());
  return *out;
}

// Ops in the graph, fused groups' bodies included.
inline std::multiset<ir::OpKind> ops_of(const ir::Graph& g) {
  std::multiset<ir::OpKind> out;
  for (const ir::Node& n : g.nodes) {
    if (n.dead) continue;
    out.insert(n.op);
    if (n.body)
      for (ir::OpKind o : ops_of(*n.body)) out.insert(o);
  }
  return out;
}

}  // namespace graphc::testing
