// A BERT-style self-attention block as Hugging Face's exporter writes it
// (opset 17, no Attention op: fuse-attention finds it), with symbolic batch
// and seq, for engines built over a shape range (tests/attention_range_test.cpp
// builds them, tests/gpu/shape_range_gpu_test.cpp runs them):
//   q/k/v = x·W + b, split into heads (Reshape [0, 0, H, D], Transpose; K to
//   [B, H, D, S]), scores / sqrt(D) + (1 - attention_mask) * -100 over the
//   keys (Unsqueeze to [B, 1, 1, S]), Softmax, ·V, heads merged, y = ·Wo + bo.
// `projections` false: q, k, v are inputs ([batch, seq, hidden]) and y the
// merged heads (the attention alone: float16 engines of it run the flash kernel).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "tests/onnx_builder.h"
#include "tests/test_util.h"

namespace graphc::testing {

inline OnnxModel bert_attention_block(int64_t hidden, int64_t heads, bool projections) {
  const int64_t d = hidden / heads;
  OnnxModel m(17, "bert_attention");
  auto weights = [&](const std::string& name, std::vector<int64_t> shape, float scale) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      v[static_cast<size_t>(i)] = scale * (static_cast<float>((i * 37) % 23) / 11.0f - 1.0f);
    m.initializer(float_tensor(name, shape, v));
  };
  m.initializer(int64_tensor("split_shape", {4}, {0, 0, heads, d}));
  m.initializer(int64_tensor("merge_shape", {3}, {0, 0, hidden}));
  m.initializer(int64_tensor("mask_axes", {2}, {1, 2}));
  m.initializer(float_tensor("one", {}, {1.0f}));
  // -100 rather than the exporter's -10000: `run --check` feeds masks uniform
  // in [-1, 1], and biases of 10^4 would leave fp32 scores a few ulps of 10^4.
  m.initializer(float_tensor("neg", {}, {-100.0f}));
  m.initializer(float_tensor("sqrt_d", {}, {std::sqrt(static_cast<float>(d))}));
  m.input("attention_mask", onnx::TensorProto::FLOAT, {Dim("batch"), Dim("seq")});
  if (projections) {
    m.input("x", onnx::TensorProto::FLOAT, {Dim("batch"), Dim("seq"), hidden});
    for (const char* t : {"q", "k", "v", "o"}) {
      weights(std::string("w") + t, {hidden, hidden}, 1.0f / std::sqrt(static_cast<float>(hidden)));
      weights(std::string("b") + t, {hidden}, 0.1f);
    }
    for (const std::string t : {"q", "k", "v"}) {
      m.node("MatMul", {"x", "w" + t}, {t + "_mm"}, t + "_proj");
      m.node("Add", {t + "_mm", "b" + t}, {t}, t + "_bias");
    }
  } else {
    for (const char* t : {"q", "k", "v"})
      m.input(t, onnx::TensorProto::FLOAT, {Dim("batch"), Dim("seq"), hidden});
  }
  for (const std::string t : {"q", "k", "v"}) {
    m.node("Reshape", {t, "split_shape"}, {t + "_4d"}, t + "_split");
    attr_ints(m.node("Transpose", {t + "_4d"}, {t + "_t"}, t + "_transpose"), "perm",
              t == "k" ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 2, 1, 3});
  }
  m.node("MatMul", {"q_t", "k_t"}, {"scores"}, "qk");
  m.node("Div", {"scores", "sqrt_d"}, {"scaled"}, "scale");
  m.node("Sub", {"one", "attention_mask"}, {"inv_mask"}, "mask_invert");
  m.node("Mul", {"inv_mask", "neg"}, {"bias2d"}, "mask_bias");
  m.node("Unsqueeze", {"bias2d", "mask_axes"}, {"bias4d"}, "mask_unsqueeze");
  m.node("Add", {"scaled", "bias4d"}, {"masked"}, "mask_add");
  attr_int(m.node("Softmax", {"masked"}, {"probs"}, "softmax"), "axis", -1);
  m.node("MatMul", {"probs", "v_t"}, {"ctx"}, "pv");
  attr_ints(m.node("Transpose", {"ctx"}, {"ctx_t"}, "merge_transpose"), "perm", {0, 2, 1, 3});
  m.node("Reshape", {"ctx_t", "merge_shape"}, {projections ? "merged" : "y"}, "merge");
  if (projections) {
    m.node("MatMul", {"merged", "wo"}, {"o_mm"}, "o_proj");
    m.node("Add", {"o_mm", "bo"}, {"y"}, "o_bias");
  }
  m.output("y");
  return m;
}

}  // namespace graphc::testing
