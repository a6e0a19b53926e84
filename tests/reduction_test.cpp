// Reductions: Reduce*, ArgMax/ArgMin, Softmax/LogSoftmax/Hardmax, TopK,
// checked against hand-written loops on fresh random inputs, plus the
// importer's opset conversions and the error paths.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "importer/importer.h"
#include "ir/shape_inference.h"
#include "onnx/onnx.pb.h"
#include "reference/executor.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::attrs;
using graphc::testing::GraphBuilder;
using graphc::testing::random_tensor;
using graphc::testing::test_rng;

namespace {

Attribute I(int64_t v) { return Attribute::of_int(v); }

// Runs a built graph on `feeds` and returns the outputs in graph order.
std::vector<Tensor> run_graph(const Graph& g, const std::map<std::string, Tensor>& feeds) {
  auto r = reference::execute(g, feeds);
  if (!r.ok()) FAIL("execute failed: " << r.status().message());
  std::vector<Tensor> out;
  for (ValueId id : g.outputs) out.push_back(r->at(g.value(id).name));
  return out;
}

// Shape inference status for a graph (for error paths).
Status infer(GraphBuilder& b) {
  ShapeInferenceOptions opts;
  opts.evaluator = reference::constant_evaluator();
  return infer_shapes(b.graph(), opts);
}

// Multi-index of flat index f in shape s.
std::vector<int64_t> unravel(int64_t f, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = f % s[d];
    f /= s[d];
  }
  return idx;
}

// Independent reduction: groups every element by its index with reduced
// dims dropped (std::map keyed by the kept index = row-major output order).
std::vector<std::vector<double>> groups_of(const Tensor& x, const std::vector<bool>& reduced) {
  std::map<std::vector<int64_t>, std::vector<double>> m;
  for (int64_t f = 0; f < x.numel(); ++f) {
    auto idx = unravel(f, x.shape());
    std::vector<int64_t> key;
    for (size_t d = 0; d < idx.size(); ++d)
      if (!reduced[d]) key.push_back(idx[d]);
    m[key].push_back(x.get_f64(f));
  }
  std::vector<std::vector<double>> out;
  for (auto& [k, v] : m) out.push_back(v);
  return out;
}

using Formula = std::function<double(const std::vector<double>&)>;

const std::vector<std::pair<OpKind, Formula>>& reduce_formulas() {
  static const std::vector<std::pair<OpKind, Formula>> f = {
      {OpKind::ReduceSum,
       [](auto& v) {
         double s = 0;
         for (double e : v) s += e;
         return s;
       }},
      {OpKind::ReduceMean,
       [](auto& v) {
         double s = 0;
         for (double e : v) s += e;
         return s / v.size();
       }},
      {OpKind::ReduceMax, [](auto& v) { return *std::max_element(v.begin(), v.end()); }},
      {OpKind::ReduceMin, [](auto& v) { return *std::min_element(v.begin(), v.end()); }},
      {OpKind::ReduceProd,
       [](auto& v) {
         double s = 1;
         for (double e : v) s *= e;
         return s;
       }},
      {OpKind::ReduceL1,
       [](auto& v) {
         double s = 0;
         for (double e : v) s += std::fabs(e);
         return s;
       }},
      {OpKind::ReduceL2,
       [](auto& v) {
         double s = 0;
         for (double e : v) s += e * e;
         return std::sqrt(s);
       }},
      {OpKind::ReduceLogSum,
       [](auto& v) {
         double s = 0;
         for (double e : v) s += std::fabs(e);
         return std::log(s);
       }},
      {OpKind::ReduceLogSumExp,
       [](auto& v) {
         double s = 0;
         for (double e : v) s += std::exp(e);
         return std::log(s);
       }},
      {OpKind::ReduceSumSquare,
       [](auto& v) {
         double s = 0;
         for (double e : v) s += e * e;
         return s;
       }},
  };
  return f;
}

}  // namespace

TEST_CASE("Reduce* match hand-written reductions over random axes and keepdims", "[reduction]") {
  // Every Reduce op, float32 and float64, several axes sets (none, one,
  // negative, several) and keepdims 0/1, against grouping by kept index.
  struct AxesCase {
    std::vector<int64_t> axes;
    bool given;
  };
  std::vector<AxesCase> cases = {
      {{}, false}, {{1}, true}, {{-1}, true}, {{0, 2}, true}, {{2, 0, 1}, true}};
  for (DType dt : {DType::kFloat32, DType::kFloat64}) {
    for (const auto& [op, formula] : reduce_formulas()) {
      for (const auto& ac : cases) {
        for (int64_t keep : {0, 1}) {
          GraphBuilder b;
          Shape shape = {3, 4, 5};
          auto x = b.input("x", dt, shape);
          std::vector<ValueId> ins = {x};
          if (ac.given)
            ins.push_back(b.constant("axes", Tensor::from_i64(ac.axes, {(int64_t)ac.axes.size()})));
          b.output(b.node(op, ins, attrs({{"keepdims", I(keep)}})));
          Graph g = b.build();
          // LogSum needs positive sums: feed |x| for it (the formula takes |e|).
          Tensor xt = random_tensor(dt, shape, test_rng(), -2, 2);
          if (op == OpKind::ReduceLogSum)
            for (int64_t i = 0; i < xt.numel(); ++i) xt.set_f64(i, std::fabs(xt.get_f64(i)));
          Tensor y = run_graph(g, {{"x", xt}})[0];
          std::vector<bool> red(3, !ac.given);
          for (int64_t a : ac.axes) red[(size_t)(a < 0 ? a + 3 : a)] = true;
          Shape expect_shape;
          for (size_t d = 0; d < 3; ++d)
            if (!red[d])
              expect_shape.push_back(shape[d]);
            else if (keep)
              expect_shape.push_back(1);
          INFO(op_name(op) << " axes " << ac.axes.size() << " keep " << keep);
          REQUIRE(y.shape() == expect_shape);
          auto groups = groups_of(xt, red);
          REQUIRE((int64_t)groups.size() == y.numel());
          for (size_t o = 0; o < groups.size(); ++o) {
            double e = formula(groups[o]);
            CHECK(std::fabs(y.get_f64((int64_t)o) - e) <= 1e-5 * (1 + std::fabs(e)));
          }
        }
      }
    }
  }
}

TEST_CASE("Reduce on integers is exact and wraps like the dtype", "[reduction]") {
  // int64 sums beyond 2^53 stay exact; int32 products and min/max are exact.
  GraphBuilder b;
  auto x = b.input("x", DType::kInt64, {2, 3});
  auto ax = b.constant("axes", Tensor::from_i64({1}, {1}));
  b.output(b.node(OpKind::ReduceSum, {x, ax}, attrs({{"keepdims", I(0)}})));
  b.output(b.node(OpKind::ReduceMax, {x, ax}, attrs({{"keepdims", I(0)}})));
  b.output(b.node(OpKind::ReduceMean, {x, ax}, attrs({{"keepdims", I(0)}})));
  Graph g = b.build();
  int64_t big = (int64_t{1} << 60) + 1;
  Tensor xt = Tensor::from_i64({big, 3, 5, -7, 2, -4}, {2, 3});
  auto out = run_graph(g, {{"x", xt}});
  CHECK(out[0].to_i64_vector() == std::vector<int64_t>{big + 8, -9});
  CHECK(out[1].to_i64_vector() == std::vector<int64_t>{big, 2});
  CHECK(out[2].to_i64_vector() == std::vector<int64_t>{(big + 8) / 3, -3});  // -9/3, truncation

  GraphBuilder b2;
  auto x2 = b2.input("x", DType::kInt32, {4});
  b2.output(b2.node(OpKind::ReduceProd, {x2}, attrs({{"keepdims", I(1)}})));
  b2.output(b2.node(OpKind::ReduceL1, {x2}));
  b2.output(b2.node(OpKind::ReduceSumSquare, {x2}));
  Graph g2 = b2.build();
  Tensor i32 = random_tensor(DType::kInt32, {4}, test_rng(), -30, 30);
  auto v = i32.to_i64_vector();
  auto o2 = run_graph(g2, {{"x", i32}});
  CHECK(o2[0].dtype() == DType::kInt32);
  CHECK(o2[0].shape() == Shape{1});
  CHECK(o2[0].get_i64(0) == v[0] * v[1] * v[2] * v[3]);
  CHECK(o2[1].get_i64(0) == std::abs(v[0]) + std::abs(v[1]) + std::abs(v[2]) + std::abs(v[3]));
  CHECK(o2[2].get_i64(0) == v[0] * v[0] + v[1] * v[1] + v[2] * v[2] + v[3] * v[3]);
}

TEST_CASE("Reduce over an empty set gives each op's identity", "[reduction]") {
  // Shape 2x0x4 reduced over axis 1: sum 0, prod 1, max -inf (int: dtype
  // min), min +inf (int: dtype max), logsum -inf, logsumexp -inf.
  auto run_empty = [](OpKind op, DType dt) {
    GraphBuilder b;
    auto x = b.input("x", dt, {2, 0, 4});
    auto ax = b.constant("axes", Tensor::from_i64({1}, {1}));
    b.output(b.node(op, {x, ax}));
    Graph g = b.build();
    Tensor y = run_graph(g, {{"x", Tensor(dt, {2, 0, 4})}})[0];
    REQUIRE(y.shape() == Shape{2, 1, 4});
    return y;
  };
  double inf = std::numeric_limits<double>::infinity();
  CHECK(run_empty(OpKind::ReduceSum, DType::kFloat32).get_f64(3) == 0.0);
  CHECK(run_empty(OpKind::ReduceProd, DType::kFloat32).get_f64(3) == 1.0);
  CHECK(run_empty(OpKind::ReduceMax, DType::kFloat32).get_f64(3) == -inf);
  CHECK(run_empty(OpKind::ReduceMin, DType::kFloat32).get_f64(3) == inf);
  CHECK(run_empty(OpKind::ReduceLogSum, DType::kFloat32).get_f64(3) == -inf);
  CHECK(run_empty(OpKind::ReduceLogSumExp, DType::kFloat32).get_f64(3) == -inf);
  CHECK(run_empty(OpKind::ReduceL2, DType::kFloat32).get_f64(3) == 0.0);
  CHECK(run_empty(OpKind::ReduceMax, DType::kInt32).get_i64(0) == INT32_MIN);
  CHECK(run_empty(OpKind::ReduceMin, DType::kInt32).get_i64(0) == INT32_MAX);
  CHECK(run_empty(OpKind::ReduceMin, DType::kUInt8).get_i64(0) == 255);
  CHECK(run_empty(OpKind::ReduceMax, DType::kBool).get_i64(0) == 0);
}

TEST_CASE("noop_with_empty_axes keeps every dim, empty axes otherwise reduce all", "[reduction]") {
  // With noop=1 and empty axes ReduceSumSquare is Square and ReduceMean the
  // identity; with noop=0 empty axes reduce over everything.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 3});
  auto empty = b.constant("axes", Tensor::from_i64({}, {0}));
  b.output(b.node(OpKind::ReduceSumSquare, {x, empty}, attrs({{"noop_with_empty_axes", I(1)}})));
  b.output(b.node(OpKind::ReduceSum, {x, empty}, attrs({{"keepdims", I(0)}})));
  b.output(b.node(OpKind::ReduceMean, {x}, attrs({{"noop_with_empty_axes", I(1)}})));
  Graph g = b.build();
  Tensor xt = random_tensor(DType::kFloat32, {2, 3}, test_rng());
  auto out = run_graph(g, {{"x", xt}});
  REQUIRE(out[0].shape() == Shape{2, 3});
  REQUIRE(out[1].shape() == Shape{});
  REQUIRE(out[2].shape() == Shape{2, 3});
  double total = 0;
  for (int64_t i = 0; i < 6; ++i) {
    double v = xt.get_f64(i);
    total += v;
    CHECK(out[0].get_f64(i) == Approx(v * v));
    CHECK(out[2].get_f64(i) == v);
  }
  CHECK(out[1].get_f64(0) == Approx(total).margin(1e-6));
}

TEST_CASE("Reduce rejects bad axes with clear errors", "[reduction]") {
  // Repeated axes, out-of-range axes, run-time axes, an axes attribute in IR, bool Sum.
  auto try_axes = [](std::vector<int64_t> axes) {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {2, 3});
    auto ax = b.constant("axes", Tensor::from_i64(axes, {(int64_t)axes.size()}));
    b.output(b.node(OpKind::ReduceSum, {x, ax}));
    return infer(b);
  };
  Status rep = try_axes({1, -1});
  CHECK(rep.code() == ErrorCode::kInvalidModel);
  CHECK(rep.message().find("more than once") != std::string::npos);
  Status oor = try_axes({2});
  CHECK(oor.code() == ErrorCode::kInvalidModel);
  CHECK(oor.message().find("out of range") != std::string::npos);

  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 3});
  auto ax = b.input("axes", DType::kInt64, {1});
  b.output(b.node(OpKind::ReduceMax, {x, ax}));
  Status rt = infer(b);
  CHECK(rt.code() == ErrorCode::kUnsupported);
  CHECK(rt.message().find("axes") != std::string::npos);

  GraphBuilder b2;
  auto x2 = b2.input("x", DType::kFloat32, {2, 3});
  b2.output(b2.node(OpKind::ReduceMean, {x2}, attrs({{"axes", Attribute::of_ints({0})}})));
  CHECK(!infer(b2).ok());

  GraphBuilder b3;
  auto x3 = b3.input("x", DType::kBool, {2, 3});
  b3.output(b3.node(OpKind::ReduceSum, {x3}));
  CHECK(infer(b3).code() == ErrorCode::kInvalidModel);
}

TEST_CASE("ArgMax/ArgMin match a hand-written scan, ties and select_last_index", "[reduction]") {
  // Random ints in a small range (many ties) along each axis; first index of
  // the extreme by default, last with select_last_index=1; output int64.
  Shape shape = {3, 4, 5};
  for (OpKind op : {OpKind::ArgMax, OpKind::ArgMin})
    for (int64_t axis : {0, 1, -1})
      for (int64_t last : {0, 1})
        for (int64_t keep : {0, 1}) {
          GraphBuilder b;
          auto x = b.input("x", DType::kInt32, shape);
          b.output(b.node(
              op, {x},
              attrs({{"axis", I(axis)}, {"select_last_index", I(last)}, {"keepdims", I(keep)}})));
          Graph g = b.build();
          Tensor xt = random_tensor(DType::kInt32, shape, test_rng(), -2, 2);
          Tensor y = run_graph(g, {{"x", xt}})[0];
          REQUIRE(y.dtype() == DType::kInt64);
          size_t a = (size_t)(axis < 0 ? axis + 3 : axis);
          Shape es = shape;
          if (keep)
            es[a] = 1;
          else
            es.erase(es.begin() + (long)a);
          REQUIRE(y.shape() == es);
          // Walk all output positions (keepdims form) and scan the axis.
          Shape kept = shape;
          kept[a] = 1;
          for (int64_t o = 0; o < shape_numel(kept); ++o) {
            auto idx = unravel(o, kept);
            int64_t best = -1;
            int64_t best_v = 0;
            for (int64_t j = 0; j < shape[a]; ++j) {
              idx[a] = j;
              int64_t flat = (idx[0] * shape[1] + idx[1]) * shape[2] + idx[2];
              int64_t v = xt.get_i64(flat);
              bool better = best < 0 || (op == OpKind::ArgMax ? v > best_v : v < best_v) ||
                            (last && v == best_v);
              if (better) {
                best = j;
                best_v = v;
              }
            }
            CHECK(y.get_i64(o) == best);
          }
        }
}

TEST_CASE("Softmax family over one axis matches the textbook formulas", "[reduction]") {
  // Opset-13 semantics: normalise along `axis` only; large inputs stay finite
  // (max subtracted); Hardmax marks the first maximum.
  Shape shape = {2, 3, 4};
  for (int64_t axis : {0, 1, 2, -1}) {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, shape);
    b.output(b.node(OpKind::Softmax, {x}, attrs({{"axis", I(axis)}})));
    b.output(b.node(OpKind::LogSoftmax, {x}, attrs({{"axis", I(axis)}})));
    b.output(b.node(OpKind::Hardmax, {x}, attrs({{"axis", I(axis)}})));
    Graph g = b.build();
    Tensor xt = random_tensor(DType::kFloat32, shape, test_rng(), 995, 1005);
    xt.set_f64(1, xt.get_f64(0));  // a tie for Hardmax along the last axis
    auto out = run_graph(g, {{"x", xt}});
    size_t a = (size_t)(axis < 0 ? axis + 3 : axis);
    for (int64_t f = 0; f < xt.numel(); ++f) {
      auto idx = unravel(f, shape);
      double sum = 0, mx = -1e300;
      int64_t first_max = -1;
      for (int64_t j = 0; j < shape[a]; ++j) {
        auto k = idx;
        k[a] = j;
        double v = xt.get_f64((k[0] * shape[1] + k[1]) * shape[2] + k[2]);
        if (v > mx) {
          mx = v;
          first_max = j;
        }
      }
      for (int64_t j = 0; j < shape[a]; ++j) {
        auto k = idx;
        k[a] = j;
        sum += std::exp(xt.get_f64((k[0] * shape[1] + k[1]) * shape[2] + k[2]) - mx);
      }
      double v = xt.get_f64(f);
      CHECK(out[0].get_f64(f) == Approx(std::exp(v - mx) / sum).margin(1e-6));
      CHECK(out[1].get_f64(f) == Approx(v - mx - std::log(sum)).margin(1e-5));
      CHECK(out[2].get_f64(f) == (idx[a] == first_max ? 1.0 : 0.0));
    }
  }
}

TEST_CASE("Softmax with _legacy_coerce_2d normalises over all dims from axis", "[reduction]") {
  // Opset < 13 meaning: [2,3,4] at axis 1 is a 2x12 matrix; each row sums to 1.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat64, {2, 3, 4});
  b.output(b.node(OpKind::Softmax, {x}, attrs({{"axis", I(1)}, {"_legacy_coerce_2d", I(1)}})));
  b.output(b.node(OpKind::Hardmax, {x}, attrs({{"axis", I(1)}, {"_legacy_coerce_2d", I(1)}})));
  Graph g = b.build();
  Tensor xt = random_tensor(DType::kFloat64, {2, 3, 4}, test_rng());
  auto out = run_graph(g, {{"x", xt}});
  for (int64_t r = 0; r < 2; ++r) {
    double sum = 0;
    int64_t arg = 0;
    for (int64_t c = 0; c < 12; ++c) {
      sum += std::exp(xt.get_f64(r * 12 + c));
      if (xt.get_f64(r * 12 + c) > xt.get_f64(r * 12 + arg)) arg = c;
    }
    for (int64_t c = 0; c < 12; ++c) {
      CHECK(out[0].get_f64(r * 12 + c) == Approx(std::exp(xt.get_f64(r * 12 + c)) / sum));
      CHECK(out[1].get_f64(r * 12 + c) == (c == arg ? 1.0 : 0.0));
    }
  }
}

TEST_CASE("Softmax rejects bad axes and integer inputs", "[reduction]") {
  // axis out of range, integer dtype, scalar input.
  auto try_softmax = [](DType dt, Shape s, int64_t axis) {
    GraphBuilder b;
    auto x = b.input("x", dt, s);
    b.output(b.node(OpKind::LogSoftmax, {x}, attrs({{"axis", I(axis)}})));
    return infer(b);
  };
  CHECK(try_softmax(DType::kFloat32, {2, 3}, 2).code() == ErrorCode::kInvalidModel);
  CHECK(try_softmax(DType::kFloat32, {2, 3}, -3).code() == ErrorCode::kInvalidModel);
  CHECK(try_softmax(DType::kInt32, {2, 3}, 1).code() == ErrorCode::kInvalidModel);
  CHECK(try_softmax(DType::kFloat32, {}, -1).code() == ErrorCode::kInvalidModel);
  CHECK(try_softmax(DType::kFloat32, {2, 3}, 1).ok());
}

TEST_CASE("TopK matches a stable hand sort: largest, smallest, ties, int64", "[reduction]") {
  // K values along each axis; equal values come out lower index first;
  // int64 values beyond 2^53 keep their exact bits.
  Shape shape = {3, 6};
  for (int64_t axis : {0, 1, -1})
    for (int64_t largest : {0, 1}) {
      size_t a = (size_t)(axis < 0 ? axis + 2 : axis);
      int64_t k = shape[a] - 1;
      GraphBuilder b;
      auto x = b.input("x", DType::kInt64, shape);
      auto kt = b.constant("k", Tensor::from_i64({k}, {1}));
      b.node(OpKind::TopK, {x, kt}, attrs({{"axis", I(axis)}, {"largest", I(largest)}}), 2);
      const Node& n = b.graph().nodes.back();
      b.output(n.outputs[0]);
      b.output(n.outputs[1]);
      Graph g = b.build();
      Tensor xt = random_tensor(DType::kInt64, shape, test_rng(), -3, 3);
      for (int64_t i = 0; i < xt.numel(); ++i)
        xt.set_i64(i, xt.get_i64(i) * (int64_t{1} << 55) + 1);
      auto out = run_graph(g, {{"x", xt}});
      Shape es = shape;
      es[a] = k;
      REQUIRE(out[0].shape() == es);
      REQUIRE(out[1].dtype() == DType::kInt64);
      int64_t other = shape[1 - a];
      for (int64_t o = 0; o < other; ++o) {
        auto at = [&](int64_t j) { return a == 0 ? j * shape[1] + o : o * shape[1] + j; };
        auto out_at = [&](int64_t j) { return a == 0 ? j * shape[1] + o : o * k + j; };
        // Selection sort by hand: repeatedly take the best remaining, lowest index on ties.
        std::vector<bool> used((size_t)shape[a], false);
        for (int64_t j = 0; j < k; ++j) {
          int64_t best = -1;
          for (int64_t c = 0; c < shape[a]; ++c) {
            if (used[(size_t)c]) continue;
            if (best < 0) {
              best = c;
              continue;
            }
            int64_t vc = xt.get_i64(at(c)), vb = xt.get_i64(at(best));
            if (largest ? vc > vb : vc < vb) best = c;
          }
          used[(size_t)best] = true;
          CHECK(out[1].get_i64(out_at(j)) == best);
          CHECK(out[0].get_i64(out_at(j)) == xt.get_i64(at(best)));
        }
      }
    }
}

TEST_CASE("TopK rejects K out of range and a run-time K", "[reduction]") {
  // K > dim and K < 0 are invalid models; K from a graph input cannot size the output.
  auto try_k = [](int64_t k) {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {2, 3});
    auto kt = b.constant("k", Tensor::from_i64({k}, {1}));
    b.output(b.node(OpKind::TopK, {x, kt}, {}, 2));
    return infer(b);
  };
  CHECK(try_k(3).ok());
  Status big = try_k(4);
  CHECK(big.code() == ErrorCode::kInvalidModel);
  CHECK(big.message().find("K = 4") != std::string::npos);
  CHECK(try_k(-1).code() == ErrorCode::kInvalidModel);
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 3});
  auto kt = b.input("k", DType::kInt64, {1});
  b.output(b.node(OpKind::TopK, {x, kt}, {}, 2));
  CHECK(infer(b).code() == ErrorCode::kUnsupported);
}

namespace {

// A one-node ONNX model: inputs x (float, `shape`), one output per name in `outs`.
struct OnnxNode {
  std::string op;
  int64_t opset;
  Shape shape;
  std::vector<std::pair<std::string, std::vector<int64_t>>> int_attrs;  // size 1 -> INT
  int num_outputs = 1;
};

Expected<Graph> import_one(const OnnxNode& spec) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  auto* os = m.add_opset_import();
  os->set_domain("");
  os->set_version(spec.opset);
  auto* g = m.mutable_graph();
  g->set_name("t");
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : spec.shape) tt->mutable_shape()->add_dim()->set_dim_value(d);
  auto* n = g->add_node();
  n->set_op_type(spec.op);
  n->set_name("n");
  n->add_input("x");
  for (int o = 0; o < spec.num_outputs; ++o) {
    std::string out_name = fmt::format("y{}", o);
    n->add_output(out_name);
    g->add_output()->set_name(out_name);
  }
  for (const auto& [name, vals] : spec.int_attrs) {
    auto* a = n->add_attribute();
    a->set_name(name);
    if (vals.size() == 1 && name != "axes") {
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(vals[0]);
    } else {
      a->set_type(onnx::AttributeProto::INTS);
      for (int64_t v : vals) a->add_ints(v);
    }
  }
  std::string bytes;
  m.SerializeToString(&bytes);
  auto graph = importer::import_model_bytes(bytes, "", "test");
  if (!graph.ok()) return graph.status();
  ShapeInferenceOptions opts;
  opts.evaluator = reference::constant_evaluator();
  Status st = infer_shapes(*graph, opts);
  if (!st.ok()) return st;
  return graph;
}

}  // namespace

TEST_CASE("Importer moves old-opset axes and k attributes into constant inputs", "[reduction]") {
  // ReduceMean opset 13 / ReduceSum opset 11 take axes as an attribute; TopK
  // opset 9 takes k as an attribute. The results equal hand computations.
  auto rm = import_one({"ReduceMean", 13, {2, 3}, {{"axes", {1}}, {"keepdims", {0}}}});
  REQUIRE(rm.ok());
  const Node& n = rm->nodes[0];
  REQUIRE(n.inputs.size() == 2);
  REQUIRE(rm->value(n.inputs[1]).constant);
  CHECK(rm->value(n.inputs[1]).constant->to_i64_vector() == std::vector<int64_t>{1});
  CHECK(!n.attrs.has("axes"));
  Tensor xt = random_tensor(DType::kFloat32, {2, 3}, test_rng());
  Tensor y = run_graph(*rm, {{"x", xt}})[0];
  REQUIRE(y.shape() == Shape{2});
  for (int64_t r = 0; r < 2; ++r)
    CHECK(y.get_f64(r) ==
          Approx((xt.get_f64(r * 3) + xt.get_f64(r * 3 + 1) + xt.get_f64(r * 3 + 2)) / 3));

  auto rs = import_one({"ReduceSum", 11, {2, 3}, {{"axes", {0}}}});
  REQUIRE(rs.ok());
  CHECK(rs->value(rs->outputs[0]).shape == Shape{1, 3});

  auto tk = import_one({"TopK", 9, {5}, {{"k", {2}}}, 2});
  REQUIRE(tk.ok());
  CHECK(!tk->nodes[0].attrs.has("k"));
  CHECK(tk->value(tk->outputs[0]).shape == Shape{2});
  Tensor x5 = random_tensor(DType::kFloat32, {5}, test_rng());
  auto v = x5.to_f64_vector();
  std::sort(v.rbegin(), v.rend());
  auto out = run_graph(*tk, {{"x", x5}});
  CHECK(out[0].get_f64(0) == v[0]);
  CHECK(out[0].get_f64(1) == v[1]);

  // ReduceMean at opset 18 must not carry an axes attribute.
  auto bad = import_one({"ReduceMean", 18, {2, 3}, {{"axes", {1}}}});
  CHECK(!bad.ok());
}

TEST_CASE("Importer keeps opset<13 Softmax's 2-D coercion", "[reduction]") {
  // Softmax opset 11 on [2,3,4] with the default axis 1 normalises each of
  // the 2 rows of 12; opset 13 with axis 1 normalises each column of 3.
  Tensor xt = random_tensor(DType::kFloat32, {2, 3, 4}, test_rng());
  auto legacy = import_one({"Softmax", 11, {2, 3, 4}, {}});
  REQUIRE(legacy.ok());
  CHECK(legacy->nodes[0].attrs.get_int("_legacy_coerce_2d", 0) == 1);
  CHECK(legacy->nodes[0].attrs.get_int("axis", 0) == 1);
  Tensor y = run_graph(*legacy, {{"x", xt}})[0];
  for (int64_t r = 0; r < 2; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < 12; ++c) sum += std::exp(xt.get_f64(r * 12 + c));
    for (int64_t c = 0; c < 12; ++c)
      CHECK(y.get_f64(r * 12 + c) == Approx(std::exp(xt.get_f64(r * 12 + c)) / sum));
  }
  auto modern = import_one({"Softmax", 13, {2, 3, 4}, {{"axis", {1}}}});
  REQUIRE(modern.ok());
  CHECK(!modern->nodes[0].attrs.has("_legacy_coerce_2d"));
  Tensor y13 = run_graph(*modern, {{"x", xt}})[0];
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 4; ++c) {
      double sum = 0;
      for (int64_t j = 0; j < 3; ++j) sum += y13.get_f64((r * 3 + j) * 4 + c);
      CHECK(sum == Approx(1.0));
    }
  auto lsm = import_one({"LogSoftmax", 9, {2, 3}, {{"axis", {0}}}});
  REQUIRE(lsm.ok());
  Tensor x6 = random_tensor(DType::kFloat32, {2, 3}, test_rng());
  Tensor yl = run_graph(*lsm, {{"x", x6}})[0];
  double s = 0;
  for (int64_t i = 0; i < 6; ++i) s += std::exp(x6.get_f64(i));
  for (int64_t i = 0; i < 6; ++i) CHECK(yl.get_f64(i) == Approx(x6.get_f64(i) - std::log(s)));
}
