// Einsum equations: parsing and validation against the operand shapes.
// Shared by the shape rule and the reference kernel.
//
// Every index of the equation becomes a "label" with one extent: each letter
// is a label, and the dims an ellipsis stands for become labels too (right
// aligned across operands and broadcast numpy-style, so an operand's ellipsis
// dim of size 1 is broadcast against a larger one). Letters must have the same
// extent wherever they appear (a repeated letter in one operand takes the
// diagonal). Labels not in the output are summed over.
#pragma once

#include <string>
#include <vector>

#include "ir/tensor.h"
#include "support/status.h"

namespace graphc::ir {

struct EinsumPlan {
  std::vector<int64_t> label_dims;               // extent of each label
  std::vector<std::vector<int>> operand_labels;  // per operand, per axis: label id
  std::vector<int> output_labels;                // per output axis: label id
  Shape output_shape;
};

// Parses `equation` (spaces ignored; explicit "->" or implicit output) for
// operands of the given shapes. Errors are invalid_model naming the term.
Expected<EinsumPlan> plan_einsum(const std::string& equation, const std::vector<Shape>& shapes);

}  // namespace graphc::ir
