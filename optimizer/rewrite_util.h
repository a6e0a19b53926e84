// Small graph-rewrite helpers shared by passes.
#pragma once

#include <cmath>
#include <optional>

#include "ir/graph.h"
#include "support/status.h"

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

// A QDQ layer's quantized activation (fuse-qdq-matmul, fuse-qdq-conv):
// DequantizeLinear(xq int8/uint8, a constant positive per-tensor scale, a
// constant scalar zero point) producing `v`.
struct QdqActivation {
  ir::ValueId xq = ir::kNoValue;
  double scale = 0;
  int64_t zero_point = 0;
};
// The match, or Unsupported saying why ("" when `v` is no DequantizeLinear).
Expected<QdqActivation> match_int8_activation(const ir::Graph& g, ir::ValueId v);
// OK when the DequantizeLinear's zero point is absent or constant zeros (a
// quantized weight's); Unsupported naming `what` otherwise.
Status zero_points_are_zero(const ir::Graph& g, const ir::Node& dq, const char* what);

}  // namespace graphc::optimizer
