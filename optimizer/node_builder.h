// Appends the nodes a rewrite makes in place of one source node: fresh values
// named after it, constants, and nodes that record the source as absorbed
// (so reports still name the ONNX node). Shared by the quantized rewrites.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace graphc::optimizer {

struct NodeBuilder {
  ir::Graph& g;
  std::vector<ir::Node>& out;  // the rewritten node list, in order
  std::string src_name;        // the node being replaced

  ir::ValueId value(const std::string& hint, ir::DType dtype, const ir::Shape& shape);
  ir::ValueId constant(const std::string& hint, ir::Tensor t);
  // Appends a node; `result` kNoValue makes a fresh value of dtype/shape.
  ir::ValueId emit(ir::OpKind op, const std::string& hint, std::vector<ir::ValueId> inputs,
                   ir::DType dtype, const ir::Shape& shape, ir::ValueId result = ir::kNoValue,
                   ir::AttributeMap attrs = {});
  ir::ValueId cast(const std::string& hint, ir::ValueId in, ir::DType to,
                   ir::ValueId result = ir::kNoValue);
  // `in` reshaped to `shape` (a no-op when it already has it).
  ir::ValueId reshape(const std::string& hint, ir::ValueId in, const ir::Shape& shape);
  const ir::Shape& shape(ir::ValueId v) const { return g.value(v).shape; }
  ir::DType dtype(ir::ValueId v) const { return g.value(v).dtype; }
};

}  // namespace graphc::optimizer
