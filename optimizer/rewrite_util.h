// Small graph-rewrite helpers shared by passes.
#pragma once

#include <cmath>
#include <optional>

#include "ir/graph.h"

namespace graphc::optimizer {

// Makes every reader of `from` read `to` instead, so the node producing `from`
// can go. Graph outputs keep their names: if `from` is a graph output, `to`
// takes over its name when `to` is a plain intermediate; otherwise returns
// false and changes nothing.
bool bypass_value(ir::Graph& g, ir::ValueId from, ir::ValueId to);

// True when the value is a build-time constant with no producing node.
inline bool is_constant(const ir::Graph& g, ir::ValueId id) {
  return id != ir::kNoValue && g.value(id).constant.has_value();
}

}  // namespace graphc::optimizer

namespace graphc::optimizer {

// The value's single element when it is a constant of one element.
std::optional<double> scalar_constant(const ir::Graph& g, ir::ValueId id);
// True when |scalar - want| <= tol * max(1, |want|).
bool is_scalar_near(const ir::Graph& g, ir::ValueId id, double want, double tol = 1e-4);
// The live node producing `id` when it has op `op`, else nullptr.
const ir::Node* producer_if(const ir::Graph& g, ir::ValueId id, ir::OpKind op);
// For a binary node, the operand that is not `known` (kNoValue if neither is).
ir::ValueId other_operand(const ir::Node& n, ir::ValueId known);
// Live consumers of `id` (excluding graph-output use).
int consumer_count(const ir::Graph& g, ir::ValueId id);

}  // namespace graphc::optimizer
