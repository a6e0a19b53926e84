// Small RNN/GRU/LSTM and Loop/Scan graphs on fresh random weights, shared by
// the CPU test of the lowering passes (recurrent_lowering_test.cpp) and the GPU
// test (gpu/recurrent_gpu_test.cpp).
#pragma once

#include <string>
#include <vector>

#include "ir/control_flow.h"
#include "tests/test_util.h"

namespace graphc::testing {

struct RecurrentCase {
  std::string name;
  ir::OpKind op;
  std::string direction = "forward";
  int64_t layout = 0;
  bool lens = false, init = false, peephole = false, lbr = false;
  double clip = 0;
};

inline std::vector<RecurrentCase> recurrent_cases() {
  using ir::OpKind;
  return {{"lstm forward peephole init", OpKind::LSTM, "forward", 0, false, true, true},
          {"lstm bidirectional lens layout1", OpKind::LSTM, "bidirectional", 1, true, true, true},
          {"lstm reverse clip", OpKind::LSTM, "reverse", 0, false, false, false, false, 0.5},
          {"gru bidirectional lbr lens", OpKind::GRU, "bidirectional", 0, true, true, false, true},
          {"gru reverse layout1", OpKind::GRU, "reverse", 1, false, true},
          {"rnn bidirectional lens", OpKind::RNN, "bidirectional", 0, true, true}};
}

// X [seq=5, batch=3, input=4] (or batch-first), hidden 6; W, R, B, P random constants.
inline ir::Graph recurrent_graph(const RecurrentCase& c) {
  using ir::DType;
  const int64_t S = 5, B = 3, I = 4, H = 6;
  const int64_t G = c.op == ir::OpKind::RNN ? 1 : c.op == ir::OpKind::GRU ? 3 : 4;
  const int64_t D = c.direction == "bidirectional" ? 2 : 1;
  auto& rng = test_rng();
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, c.layout == 0 ? ir::Shape{S, B, I} : ir::Shape{B, S, I});
  auto w = b.constant("w", random_tensor(DType::kFloat32, {D, G * H, I}, rng, -0.6, 0.6));
  auto r = b.constant("r", random_tensor(DType::kFloat32, {D, G * H, H}, rng, -0.6, 0.6));
  auto bias = b.constant("b", random_tensor(DType::kFloat32, {D, 2 * G * H}, rng, -0.5, 0.5));
  std::vector<ir::ValueId> ins{x, w, r, bias, ir::kNoValue, ir::kNoValue};
  if (c.lens) {
    ir::Tensor lens(DType::kInt32, {B});
    for (int64_t i = 0; i < B; ++i) lens.set_i64(i, i == 0 ? S : 1 + i);
    ins[4] = b.constant("lens", lens);
  }
  ir::Shape state = c.layout == 0 ? ir::Shape{D, B, H} : ir::Shape{B, D, H};
  if (c.init) ins[5] = b.input("h0", DType::kFloat32, state);
  if (c.op == ir::OpKind::LSTM) {
    ins.push_back(c.init ? b.input("c0", DType::kFloat32, state) : ir::kNoValue);
    ins.push_back(c.peephole ? b.constant("p", random_tensor(DType::kFloat32, {D, 3 * H}, rng, -0.5, 0.5))
                             : ir::kNoValue);
  }
  while (ins.back() == ir::kNoValue) ins.pop_back();
  ir::AttributeMap a;
  a.set("hidden_size", ir::Attribute::of_int(H));
  a.set("direction", ir::Attribute::of_string(c.direction));
  a.set("layout", ir::Attribute::of_int(c.layout));
  if (c.lbr) a.set("linear_before_reset", ir::Attribute::of_int(1));
  if (c.clip > 0) a.set("clip", ir::Attribute::of_float(c.clip));
  const int outs = c.op == ir::OpKind::LSTM ? 3 : 2;
  auto y = b.node(c.op, ins, a, outs, "rnn");
  for (int o = 0; o < outs; ++o) b.output(y + o);
  return b.build();
}

}  // namespace graphc::testing
