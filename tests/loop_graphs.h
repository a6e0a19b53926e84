// Loops on a run-time trip count and/or condition (graph inputs), built in
// IR, with random inputs: shared by the CPU test of their plan
// (loop_plan_test.cpp), the kernel emulator (graphc_kernel_emulator loops)
// and the GPU test (gpu/loop_gpu_test.cpp). Each case has the trip counts to
// try (a feed per count: M, or the condition's bound K).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "tests/test_util.h"

namespace graphc::testing {

struct LoopCase {
  std::string name;
  ir::Graph graph;                  // shape-inferred, unoptimized
  std::string count_input;          // the input that sets the trip count
  std::vector<int64_t> counts;      // values of it to run (0, 1, a few, many)
};

namespace loop_detail {

inline ir::AttributeMap attr_int(const std::string& name, int64_t v) {
  ir::AttributeMap a;
  a.set(name, ir::Attribute::of_int(v));
  return a;
}

// A Loop node with `inputs` (M, cond, carried..., captured...) and `body`;
// returns its outputs.
inline std::vector<ir::ValueId> add_loop(GraphBuilder& g, std::vector<ir::ValueId> inputs,
                                         int64_t captures, ir::Graph body, int outputs,
                                         const std::string& name) {
  g.node(ir::OpKind::Loop, std::move(inputs), attr_int("_captures", captures), outputs, name);
  ir::Node& n = g.graph().nodes.back();
  n.subgraphs.push_back(std::make_shared<const ir::Graph>(std::move(body)));
  return n.outputs;
}

}  // namespace loop_detail

// for i < M: y = tanh(y * a + x) + 0.01 * i  (x, a captured; no condition input)
inline LoopCase loop_for_case() {
  using ir::DType;
  using ir::OpKind;
  GraphBuilder b;
  auto i = b.input("i", DType::kInt64, {});
  auto c = b.input("cond_in", DType::kBool, {});
  auto y = b.input("y_in", DType::kFloat32, {2, 3});
  auto x = b.input("x_cap", DType::kFloat32, {2, 3});
  auto a = b.input("a_cap", DType::kFloat32, {2, 3});
  auto t = b.node(OpKind::Tanh, {b.node(OpKind::Add, {b.node(OpKind::Mul, {y, a}), x})});
  auto fi = b.node(OpKind::Cast, {i}, loop_detail::attr_int("to", 1));
  auto step = b.constant("step", ir::Tensor::from_f32({0.01f}, {}));
  auto y_out = b.node(OpKind::Add, {t, b.node(OpKind::Mul, {fi, step})});
  b.output(b.node(OpKind::Identity, {c}));
  b.output(y_out);
  GraphBuilder g;
  auto m = g.input("M", DType::kInt64, {});
  auto y0 = g.input("y0", DType::kFloat32, {2, 3});
  auto xo = g.input("x", DType::kFloat32, {2, 3});
  auto ao = g.input("a", DType::kFloat32, {2, 3});
  auto outs = loop_detail::add_loop(g, {m, ir::kNoValue, y0, xo, ao}, 2, b.graph(), 1, "for_loop");
  g.output(outs[0]);
  return {"for loop on a run-time M", g.build(), "M", {0, 1, 4, 37}};
}

// while n < K: (p, q) = (q, p + q * w); n += 1  (a condition input, no M; a swap)
inline LoopCase loop_while_case() {
  using ir::DType;
  using ir::OpKind;
  GraphBuilder b;
  b.input("i", DType::kInt64, {});
  b.input("cond_in", DType::kBool, {});
  auto n = b.input("n_in", DType::kInt64, {});
  auto p = b.input("p_in", DType::kFloat32, {4});
  auto q = b.input("q_in", DType::kFloat32, {4});
  auto k = b.input("k_cap", DType::kInt64, {});
  auto w = b.input("w_cap", DType::kFloat32, {4});
  auto n_out = b.node(OpKind::Add, {n, b.constant("one", ir::Tensor::scalar_i64(1))});
  b.output(b.node(OpKind::Less, {n_out, k}));
  b.output(n_out);
  b.output(q);
  b.output(b.node(OpKind::Add, {p, b.node(OpKind::Mul, {q, w})}));
  GraphBuilder g;
  auto c0 = g.input("c0", DType::kBool, {});
  auto ko = g.input("K", DType::kInt64, {});
  auto p0 = g.input("p0", DType::kFloat32, {4});
  auto q0 = g.input("q0", DType::kFloat32, {4});
  auto wo = g.input("w", DType::kFloat32, {4});
  auto n0 = g.constant("n0", ir::Tensor::scalar_i64(0));
  auto outs = loop_detail::add_loop(g, {ir::kNoValue, c0, n0, p0, q0, ko, wo}, 2, b.graph(), 3,
                                    "while_loop");
  for (auto o : outs) g.output(o);
  return {"while loop on a run-time condition with a swap", g.build(), "K", {0, 1, 6, 25}};
}

// for i < M while sum(y) < 8: y = y + |x|  (whichever ends first; y0 >= 0 by |.|)
inline LoopCase loop_m_and_cond_case() {
  using ir::DType;
  using ir::OpKind;
  GraphBuilder b;
  b.input("i", DType::kInt64, {});
  b.input("cond_in", DType::kBool, {});
  auto y = b.input("y_in", DType::kFloat32, {5});
  auto x = b.input("x_cap", DType::kFloat32, {5});
  auto y_out = b.node(OpKind::Add, {y, b.node(OpKind::Abs, {x})});
  auto s = b.node(OpKind::ReduceSum, {y_out}, loop_detail::attr_int("keepdims", 0));
  b.output(b.node(OpKind::Less, {s, b.constant("limit", ir::Tensor::from_f32({8.0f}, {}))}));
  b.output(y_out);
  GraphBuilder g;
  auto m = g.input("M", DType::kInt64, {});
  auto c0 = g.input("c0", DType::kBool, {});
  auto y0 = g.node(OpKind::Abs, {g.input("y0", DType::kFloat32, {5})});
  auto xo = g.input("x", DType::kFloat32, {5});
  auto outs = loop_detail::add_loop(g, {m, c0, y0, xo}, 1, b.graph(), 1, "bounded_while");
  g.output(outs[0]);
  return {"loop on a run-time M and condition", g.build(), "M", {0, 1, 3, 60}};
}

// for i < M: (for j < N: y = y * 0.5 + x); y = y + 1  (a loop in a loop body)
inline LoopCase loop_nested_case() {
  using ir::DType;
  using ir::OpKind;
  GraphBuilder inner;
  inner.input("j", DType::kInt64, {});
  auto ic = inner.input("cond_in", DType::kBool, {});
  auto iy = inner.input("y_in", DType::kFloat32, {3});
  auto ix = inner.input("x_cap", DType::kFloat32, {3});
  inner.output(ic);
  inner.output(inner.node(
      OpKind::Add, {inner.node(OpKind::Mul, {iy, inner.constant("half", ir::Tensor::from_f32({0.5f}, {}))}),
                    ix}));
  GraphBuilder b;
  b.input("i", DType::kInt64, {});
  auto c = b.input("cond_in", DType::kBool, {});
  auto y = b.input("y_in", DType::kFloat32, {3});
  auto n = b.input("n_cap", DType::kInt64, {});
  auto x = b.input("x_cap", DType::kFloat32, {3});
  auto yi = loop_detail::add_loop(b, {n, ir::kNoValue, y, x}, 1, inner.graph(), 1, "inner_loop");
  b.output(c);
  b.output(b.node(OpKind::Add, {yi[0], b.constant("one", ir::Tensor::from_f32({1.0f}, {}))}));
  GraphBuilder g;
  auto m = g.input("M", DType::kInt64, {});
  auto no = g.input("N", DType::kInt64, {});
  auto y0 = g.input("y0", DType::kFloat32, {3});
  auto xo = g.input("x", DType::kFloat32, {3});
  auto outs = loop_detail::add_loop(g, {m, ir::kNoValue, y0, no, xo}, 2, b.graph(), 1, "outer_loop");
  g.output(outs[0]);
  return {"nested loops on run-time counts", g.build(), "M", {0, 1, 5}};
}

inline std::vector<LoopCase> loop_cases() {
  return {loop_for_case(), loop_while_case(), loop_m_and_cond_case(), loop_nested_case()};
}

// Random inputs (floats in [-1, 1]) with the trip count input set to `count`
// (the nested case's N is 3; a while loop starts true).
inline std::map<std::string, ir::Tensor> loop_feeds(const LoopCase& c, int64_t count) {
  std::map<std::string, ir::Tensor> feeds;
  for (ir::ValueId id : c.graph.inputs) {
    const ir::Value& v = c.graph.value(id);
    if (v.dtype == ir::DType::kFloat32) {
      feeds[v.name] = random_tensor(v.dtype, v.shape, test_rng(), -1, 1);
    } else if (v.dtype == ir::DType::kBool) {
      ir::Tensor t(ir::DType::kBool, v.shape);
      t.set_i64(0, 1);
      feeds[v.name] = t;
    } else {
      feeds[v.name] = ir::Tensor::scalar_i64(v.name == c.count_input ? count : 3);
    }
  }
  return feeds;
}

}  // namespace graphc::testing
