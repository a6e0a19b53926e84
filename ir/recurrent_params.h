// RNN, GRU and LSTM (ONNX opsets 7-22): the node's attributes resolved
// against its input shapes, with every check the spec implies. Shared by the
// importer (attribute checks), the shape rule and the reference kernel, so
// all of them read one geometry.
//
// Inputs:  X, W, R, B?, sequence_lens?, initial_h?, (LSTM) initial_c?, P?
// Outputs: Y?, Y_h?, (LSTM) Y_c?
// layout 0: X [seq, batch, input], Y [seq, dirs, batch, hidden], Y_h [dirs, batch, hidden]
// layout 1: X [batch, seq, input], Y [batch, seq, dirs, hidden], Y_h [batch, dirs, hidden]
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/op_table.h"
#include "ir/tensor.h"
#include "support/status.h"

namespace graphc::ir {

enum RecurrentInput : size_t {
  kRnnX = 0,
  kRnnW = 1,
  kRnnR = 2,
  kRnnB = 3,
  kRnnSeqLens = 4,
  kRnnInitialH = 5,
  kRnnInitialC = 6,  // LSTM only
  kRnnP = 7,         // LSTM only: peepholes [dirs, 3*hidden] in order i, o, f
};

enum class RnnDirection { kForward, kReverse, kBidirectional };

// One activation function of the ONNX list with its alpha/beta resolved.
struct RnnActivation {
  enum class Kind {
    kRelu, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh,
    kHardSigmoid, kElu, kSoftsign, kSoftplus
  };
  Kind kind = Kind::kTanh;
  double alpha = 0, beta = 0;
  double apply(double x) const;
};

struct RecurrentParams {
  OpKind op = OpKind::LSTM;
  int64_t gates = 4;  // RNN 1, GRU 3 (z, r, h), LSTM 4 (i, o, f, c)
  RnnDirection direction = RnnDirection::kForward;
  int64_t num_directions = 1;
  int64_t layout = 0;
  int64_t seq_len = 0, batch = 0, input_size = 0, hidden = 0;
  DType dtype = DType::kUndefined;
  std::optional<double> clip;  // pre-activations are clipped to [-clip, clip]
  bool linear_before_reset = false;  // GRU
  bool input_forget = false;         // LSTM: f = 1 - i
  // Per direction: RNN f; GRU f, g; LSTM f, g, h.
  std::vector<std::vector<RnnActivation>> activations;

  Shape y_shape() const;
  Shape state_shape() const;  // Y_h, Y_c, initial_h, initial_c
};

// Activations each op applies per direction (1, 2 or 3).
int64_t recurrent_activation_count(OpKind op);

// Checks the attributes alone (the importer calls it before shapes are known).
Status check_recurrent_attributes(OpKind op, const AttributeMap& attrs);

// Attributes and input shapes (nullptr = omitted input) resolved; every
// mismatch is an error naming the input and the dims.
Expected<RecurrentParams> recurrent_params(OpKind op, const AttributeMap& attrs,
                                           const std::vector<const Shape*>& shapes,
                                           const std::vector<DType>& dtypes);

}  // namespace graphc::ir
