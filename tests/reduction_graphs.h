// One-node graphs of the reduction family (Reduce*, ArgMax/ArgMin, the
// Softmax family, TopK, the normalizations) and the fused groups the
// optimizer builds around them, shared by the NVRTC compile tests
// (reduction_emit_test.cpp) and the GPU-vs-reference tests
// (gpu/reduction_gpu_test.cpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "optimizer/pass.h"
#include "tests/test_util.h"

namespace graphc::testing::reduction_graphs {

inline ir::Graph reduce(ir::OpKind op, ir::DType dt, const ir::Shape& shape,
                        std::optional<std::vector<int64_t>> axes, bool keepdims = true,
                        bool noop_with_empty_axes = false) {
  GraphBuilder b;
  auto x = b.input("x", dt, shape);
  std::vector<ir::ValueId> ins{x};
  if (axes)
    ins.push_back(
        b.constant("axes", ir::Tensor::from_i64(*axes, {static_cast<int64_t>(axes->size())})));
  b.output(b.node(op, ins,
                  attrs({{"keepdims", ir::Attribute::of_int(keepdims ? 1 : 0)},
                         {"noop_with_empty_axes", ir::Attribute::of_int(noop_with_empty_axes)}})));
  return b.build();
}

inline ir::Graph arg(ir::OpKind op, ir::DType dt, const ir::Shape& shape, int64_t axis,
                     bool keepdims, bool last) {
  GraphBuilder b;
  auto x = b.input("x", dt, shape);
  b.output(b.node(op, {x},
                  attrs({{"axis", ir::Attribute::of_int(axis)},
                         {"keepdims", ir::Attribute::of_int(keepdims ? 1 : 0)},
                         {"select_last_index", ir::Attribute::of_int(last ? 1 : 0)}})));
  return b.build();
}

// `legacy`: opset < 13 semantics (the input flattened to 2-D at `axis`).
inline ir::Graph softmax(ir::OpKind op, ir::DType dt, const ir::Shape& shape, int64_t axis,
                         bool legacy = false) {
  GraphBuilder b;
  auto x = b.input("x", dt, shape);
  ir::AttributeMap a = attrs({{"axis", ir::Attribute::of_int(axis)}});
  if (legacy) a.set("_legacy_coerce_2d", ir::Attribute::of_int(1));
  b.output(b.node(op, {x}, a));
  return b.build();
}

inline ir::Graph topk(ir::DType dt, const ir::Shape& shape, int64_t axis, int64_t k, bool largest) {
  GraphBuilder b;
  auto x = b.input("x", dt, shape);
  auto kk = b.constant("k", ir::Tensor::from_i64({k}, {1}));
  auto v = b.node(ir::OpKind::TopK, {x, kk},
                  attrs({{"axis", ir::Attribute::of_int(axis)},
                         {"largest", ir::Attribute::of_int(largest ? 1 : 0)}}),
                  2);
  b.output(v);
  b.output(v + 1);
  return b.build();
}

// LayerNormalization over [axis, rank) with Scale of the normalised dims'
// shape, an optional B and optional Mean / InvStdDev outputs.
inline ir::Graph layer_norm(ir::DType dt, const ir::Shape& shape, int64_t axis, bool bias,
                            bool stats, int64_t stash_onnx_type = 1) {
  GraphBuilder b;
  auto x = b.input("x", dt, shape);
  const int64_t rank = static_cast<int64_t>(shape.size());
  const size_t first = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  ir::Shape norm(shape.begin() + static_cast<std::ptrdiff_t>(first), shape.end());
  std::vector<ir::ValueId> ins{x, b.input("scale", dt, norm)};
  if (bias) ins.push_back(b.input("bias", dt, norm));
  auto y = b.node(ir::OpKind::LayerNormalization, ins,
                  attrs({{"axis", ir::Attribute::of_int(axis)},
                         {"epsilon", ir::Attribute::of_float(1e-5)},
                         {"stash_type", ir::Attribute::of_int(stash_onnx_type)}}),
                  stats ? 3 : 1);
  b.output(y);
  if (stats) {
    b.output(y + 1);
    b.output(y + 2);
  }
  return b.build();
}

inline ir::Graph channel_norm(ir::OpKind op, ir::DType dt, const ir::Shape& shape) {
  GraphBuilder b;
  auto x = b.input("x", dt, shape);
  const ir::Shape c{shape[1]};
  std::vector<ir::ValueId> ins{x, b.input("scale", dt, c), b.input("bias", dt, c)};
  if (op == ir::OpKind::BatchNormalization) {
    ins.push_back(b.input("mean", dt, c));
    ins.push_back(b.input("var", dt, c));
  }
  b.output(b.node(op, ins, attrs({{"epsilon", ir::Attribute::of_float(1e-3)}})));
  return b.build();
}

inline ir::Graph mvn(ir::DType dt, const ir::Shape& shape, std::vector<int64_t> axes) {
  GraphBuilder b;
  auto x = b.input("x", dt, shape);
  b.output(b.node(ir::OpKind::MeanVarianceNormalization, {x},
                  attrs({{"axes", ir::Attribute::of_ints(std::move(axes))}})));
  return b.build();
}

inline ir::Graph lrn(ir::DType dt, const ir::Shape& shape, int64_t size) {
  GraphBuilder b;
  auto x = b.input("x", dt, shape);
  b.output(b.node(ir::OpKind::LRN, {x},
                  attrs({{"size", ir::Attribute::of_int(size)},
                         {"alpha", ir::Attribute::of_float(2e-3)},
                         {"beta", ir::Attribute::of_float(0.75)},
                         {"bias", ir::Attribute::of_float(1.5)}})));
  return b.build();
}

// NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss on input [N, C, d...]
// with int64 targets drawn by the caller's inputs (name "target"), an
// optional class weight and ignore_index.
inline ir::Graph loss(ir::OpKind op, ir::DType dt, const ir::Shape& shape,
                      const std::string& reduction, bool weight, bool ignore,
                      bool log_prob = false) {
  GraphBuilder b;
  auto x = b.input("x", dt, shape);
  ir::Shape ts{shape[0]};
  ts.insert(ts.end(), shape.begin() + 2, shape.end());
  std::vector<ir::ValueId> ins{x, b.input("target", ir::DType::kInt64, ts)};
  if (weight) ins.push_back(b.input("weight", dt, {shape[1]}));
  ir::AttributeMap a = attrs({{"reduction", ir::Attribute::of_string(reduction)}});
  if (ignore) a.set("ignore_index", ir::Attribute::of_int(1));
  const bool two = op == ir::OpKind::SoftmaxCrossEntropyLoss && log_prob;
  auto y = b.node(op, ins, a, two ? 2 : 1);
  b.output(y);
  if (two) b.output(y + 1);
  return b.build();
}

// Attention-style softmax: (x * scale + mask) -> Softmax(-1) -> Relu, fused
// by the optimizer into one reduction group.
inline ir::Graph fused_softmax(ir::DType dt, const ir::Shape& shape) {
  GraphBuilder b;
  auto x = b.input("x", dt, shape);
  ir::Shape mask_shape(shape.size(), 1);
  mask_shape.back() = shape.back();
  auto mask = b.input("mask", dt, mask_shape);
  auto scale = b.constant("scale", ir::Tensor::from_f32({0.125f}, {}).cast_to(dt), false);
  auto pre = b.node(ir::OpKind::Add, {b.node(ir::OpKind::Mul, {x, scale}), mask});
  auto sm = b.node(ir::OpKind::Softmax, {pre}, attrs({{"axis", ir::Attribute::of_int(-1)}}));
  b.output(b.node(ir::OpKind::Relu, {sm}));
  ir::Graph g = b.build();
  optimizer::PassContext ctx;
  (void)optimizer::run_passes(g, ctx);
  return g;
}

// Transformer-style residual add -> LayerNormalization(-1) -> Relu.
inline ir::Graph fused_layer_norm(ir::DType dt, const ir::Shape& shape) {
  GraphBuilder b;
  auto x = b.input("x", dt, shape);
  auto res = b.input("res", dt, shape);
  const ir::Shape c{shape.back()};
  auto sum = b.node(ir::OpKind::Add, {x, res});
  auto ln =
      b.node(ir::OpKind::LayerNormalization, {sum, b.input("scale", dt, c), b.input("bias", dt, c)},
             attrs({{"axis", ir::Attribute::of_int(-1)}}));
  b.output(b.node(ir::OpKind::Relu, {ln}));
  ir::Graph g = b.build();
  optimizer::PassContext ctx;
  (void)optimizer::run_passes(g, ctx);
  return g;
}

// Sum over the last axis of exp(x) - 1, then * 0.5: a Reduce with a
// prologue and an epilogue.
inline ir::Graph fused_reduce(ir::DType dt, const ir::Shape& shape) {
  GraphBuilder b;
  auto x = b.input("x", dt, shape);
  auto e = b.node(ir::OpKind::Exp, {x});
  auto axes = b.constant("axes", ir::Tensor::from_i64({-1}, {1}));
  auto r =
      b.node(ir::OpKind::ReduceSum, {e, axes}, attrs({{"keepdims", ir::Attribute::of_int(1)}}));
  auto half = b.constant("half", ir::Tensor::from_f32({0.5f}, {}).cast_to(dt), false);
  b.output(b.node(ir::OpKind::Mul, {r, half}));
  ir::Graph g = b.build();
  optimizer::PassContext ctx;
  (void)optimizer::run_passes(g, ctx);
  return g;
}

}  // namespace graphc::testing::reduction_graphs
