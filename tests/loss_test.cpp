// Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss checked
// against hand-written loops on fresh random inputs (every reduction, with and
// without weights, ignore_index, several ranks and dtypes), plus error paths.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <optional>

#include "ir/shape_inference.h"
#include "reference/executor.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::GraphBuilder;
using graphc::testing::random_tensor;
using graphc::testing::test_rng;

namespace {

struct LossCase {
  OpKind op = OpKind::NegativeLogLikelihoodLoss;
  DType dtype = DType::kFloat32;
  DType target_dtype = DType::kInt64;
  Shape x_shape;
  std::string reduction = "mean";
  bool weighted = false;
  std::optional<int64_t> ignore_index;
  bool log_prob = false;  // SCE: ask for the second output
};

struct LossRun {
  Tensor x, target, weight;
  std::vector<Tensor> outputs;
};

Status infer(GraphBuilder& b) {
  ShapeInferenceOptions opts;
  opts.evaluator = reference::constant_evaluator();
  return infer_shapes(b.graph(), opts);
}

// Builds the one-node graph of `c` (inputs x, target [, weight]).
GraphBuilder build_graph(const LossCase& c) {
  GraphBuilder b;
  Shape t_shape{c.x_shape[0]};
  t_shape.insert(t_shape.end(), c.x_shape.begin() + 2, c.x_shape.end());
  std::vector<ValueId> ins{b.input("x", c.dtype, c.x_shape), b.input("t", c.target_dtype, t_shape)};
  if (c.weighted) ins.push_back(b.input("w", c.dtype, {c.x_shape[1]}));
  AttributeMap a;
  a.set("reduction", Attribute::of_string(c.reduction));
  if (c.ignore_index) a.set("ignore_index", Attribute::of_int(*c.ignore_index));
  ValueId y = b.node(c.op, ins, a, c.log_prob ? 2 : 1, "loss");
  b.output(y);
  if (c.log_prob) b.output(b.graph().nodes.back().outputs[1]);
  return b;
}

// Random inputs; when the case has an ignore_index, about a third of the
// targets are set to it.
LossRun run_case(const LossCase& c) {
  auto& rng = test_rng();
  GraphBuilder b = build_graph(c);
  Graph g = b.build();
  LossRun r;
  int64_t C = c.x_shape[1];
  r.x = random_tensor(c.dtype, c.x_shape, rng, -3.0, 3.0);
  r.target = random_tensor(c.target_dtype, g.value(g.inputs[1]).shape, rng, 0, double(C - 1));
  if (c.ignore_index) {
    std::uniform_int_distribution<int> third(0, 2);
    for (int64_t i = 0; i < r.target.numel(); ++i)
      if (third(rng) == 0) r.target.set_i64(i, *c.ignore_index);
  }
  std::map<std::string, Tensor> feeds{{"x", r.x}, {"t", r.target}};
  if (c.weighted) {
    r.weight = random_tensor(c.dtype, {C}, rng, 0.25, 2.0);
    feeds["w"] = r.weight;
  }
  auto out = reference::execute(g, feeds);
  if (!out.ok()) FAIL("execute failed: " << out.status().message());
  for (ValueId id : g.outputs) r.outputs.push_back(out->at(g.value(id).name));
  return r;
}

// The expected outputs by a direct loop: per-element losses (target shape),
// the reduced scalar, and log-probabilities for SCE.
struct Want {
  std::vector<double> per_element;
  double reduced = 0;
  std::vector<double> log_prob;
};

Want expected_of(const LossCase& c, const LossRun& r) {
  const Shape& s = c.x_shape;
  int64_t N = s[0], C = s[1], D = 1;
  for (size_t i = 2; i < s.size(); ++i) D *= s[i];
  Want e;
  e.log_prob.assign(size_t(r.x.numel()), 0.0);
  // x element (n, c, d) sits at flat index (n*C + c)*D + d.
  auto xv = [&](int64_t n, int64_t k, int64_t d) { return r.x.get_f64((n * C + k) * D + d); };
  auto value = [&](int64_t n, int64_t k, int64_t d) {
    if (c.op == OpKind::NegativeLogLikelihoodLoss) return xv(n, k, d);
    double denom = 0;
    for (int64_t j = 0; j < C; ++j) denom += std::exp(xv(n, j, d));
    return std::log(std::exp(xv(n, k, d)) / denom);
  };
  if (c.op == OpKind::SoftmaxCrossEntropyLoss)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < C; ++k)
        for (int64_t d = 0; d < D; ++d) e.log_prob[size_t((n * C + k) * D + d)] = value(n, k, d);
  double num = 0, den = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      int64_t t = r.target.get_i64(n * D + d);
      if (c.ignore_index && t == *c.ignore_index) {
        e.per_element.push_back(0.0);
        continue;
      }
      double w = c.weighted ? r.weight.get_f64(t) : 1.0;
      double l = -w * value(n, t, d);
      e.per_element.push_back(l);
      num += l;
      den += w;
    }
  e.reduced = c.reduction == "sum" ? num : num / den;
  return e;
}

double tolerance(DType t) {
  if (t == DType::kFloat16) return 2e-2;
  if (t == DType::kBFloat16) return 1e-1;
  if (t == DType::kFloat64) return 1e-10;
  return 1e-4;
}

void check_case(const LossCase& c) {
  CAPTURE(op_name(c.op), dtype_name(c.dtype), shape_to_string(c.x_shape), c.reduction, c.weighted,
          c.ignore_index.value_or(-999), c.log_prob);
  LossRun r = run_case(c);
  Want e = expected_of(c, r);
  const Tensor& y = r.outputs[0];
  REQUIRE(y.dtype() == c.dtype);
  double tol = tolerance(c.dtype);
  if (c.reduction == "none") {
    REQUIRE(y.shape() == r.target.shape());
    for (int64_t i = 0; i < y.numel(); ++i)
      REQUIRE(std::abs(y.get_f64(i) - e.per_element[size_t(i)]) <=
              tol * (1 + std::abs(e.per_element[size_t(i)])));
  } else {
    REQUIRE(y.shape() == Shape{});
    REQUIRE(std::abs(y.get_f64(0) - e.reduced) <= tol * (1 + std::abs(e.reduced)));
  }
  if (c.log_prob) {
    const Tensor& lp = r.outputs[1];
    REQUIRE(lp.dtype() == c.dtype);
    REQUIRE(lp.shape() == c.x_shape);
    for (int64_t i = 0; i < lp.numel(); ++i)
      REQUIRE(std::abs(lp.get_f64(i) - e.log_prob[size_t(i)]) <=
              tol * (1 + std::abs(e.log_prob[size_t(i)])));
  }
}

}  // namespace

TEST_CASE("Losses match a hand-written loop for every reduction, with and without weights",
          "[loss]") {
  // Both ops, ranks 2..4, reductions none/sum/mean, with/without weight, int32/int64 targets.
  for (OpKind op : {OpKind::NegativeLogLikelihoodLoss, OpKind::SoftmaxCrossEntropyLoss})
    for (const Shape& s : {Shape{5, 4}, Shape{3, 5, 2}, Shape{2, 3, 4, 2}})
      for (const char* red : {"none", "sum", "mean"})
        for (bool weighted : {false, true})
          for (DType tt : {DType::kInt64, DType::kInt32}) {
            LossCase c;
            c.op = op;
            c.x_shape = s;
            c.reduction = red;
            c.weighted = weighted;
            c.target_dtype = tt;
            check_case(c);
          }
}

TEST_CASE("ignore_index zeroes those elements and removes them from the mean's denominator",
          "[loss]") {
  // ignore_index inside [0, C), negative and >= C; with and without weight.
  for (OpKind op : {OpKind::NegativeLogLikelihoodLoss, OpKind::SoftmaxCrossEntropyLoss})
    for (int64_t ii : {int64_t{1}, int64_t{-1}, int64_t{-100}, int64_t{7}})
      for (const char* red : {"none", "sum", "mean"})
        for (bool weighted : {false, true}) {
          LossCase c;
          c.op = op;
          c.x_shape = {6, 4, 3};
          c.reduction = red;
          c.weighted = weighted;
          c.ignore_index = ii;
          check_case(c);
        }
}

TEST_CASE("SoftmaxCrossEntropyLoss's log_prob output is log_softmax over axis 1", "[loss]") {
  // Second output requested: shape/dtype of the input, values log(softmax) by a direct loop.
  for (const char* red : {"none", "mean"}) {
    LossCase c;
    c.op = OpKind::SoftmaxCrossEntropyLoss;
    c.x_shape = {3, 5, 2, 2};
    c.reduction = red;
    c.weighted = true;
    c.ignore_index = 0;
    c.log_prob = true;
    check_case(c);
  }
}

TEST_CASE("Losses in float16, bfloat16 and float64 keep the input dtype", "[loss]") {
  // Reduced-precision inputs computed in float/double and stored in their own dtype.
  for (OpKind op : {OpKind::NegativeLogLikelihoodLoss, OpKind::SoftmaxCrossEntropyLoss})
    for (DType t : {DType::kFloat16, DType::kBFloat16, DType::kFloat64})
      for (const char* red : {"none", "sum", "mean"}) {
        LossCase c;
        c.op = op;
        c.dtype = t;
        c.x_shape = {4, 3, 2};
        c.reduction = red;
        c.weighted = true;
        c.log_prob = op == OpKind::SoftmaxCrossEntropyLoss;
        check_case(c);
      }
}

TEST_CASE("Loss with known values: NLL mean divides by the sum of applied weights", "[loss]") {
  // x = [[-1,-2,-3],[-4,-5,-6]], target = [2, 0], weight = [0.5, 1, 2]:
  // losses 2*3 = 6 and 0.5*4 = 2; mean = 8 / 2.5 = 3.2.
  GraphBuilder b;
  ValueId x = b.input("x", DType::kFloat32, {2, 3});
  ValueId t = b.input("t", DType::kInt64, {2});
  ValueId w = b.input("w", DType::kFloat32, {3});
  b.output(b.node(OpKind::NegativeLogLikelihoodLoss, {x, t, w}, {}, 1, "loss"));
  Graph g = b.build();
  auto out = reference::execute(g, {{"x", Tensor::from_f32({-1, -2, -3, -4, -5, -6}, {2, 3})},
                                    {"t", Tensor::from_i64({2, 0}, {2})},
                                    {"w", Tensor::from_f32({0.5f, 1, 2}, {3})}});
  REQUIRE(out.ok());
  REQUIRE(out->at("loss:0").get_f64(0) == Approx(3.2));
}

TEST_CASE("Out-of-range targets are an error Status from the kernel", "[loss]") {
  // A target of C or -1 (not ignore_index) fails at run time with a message naming input 1.
  for (OpKind op : {OpKind::NegativeLogLikelihoodLoss, OpKind::SoftmaxCrossEntropyLoss})
    for (int64_t bad : {int64_t{3}, int64_t{-1}, int64_t{1000}}) {
      GraphBuilder b;
      ValueId x = b.input("x", DType::kFloat32, {2, 3});
      ValueId t = b.input("t", DType::kInt64, {2});
      AttributeMap a;
      a.set("ignore_index", Attribute::of_int(-100));
      b.output(b.node(op, {x, t}, a, 1, "loss"));
      Graph g = b.build();
      auto out = reference::execute(g, {{"x", random_tensor(DType::kFloat32, {2, 3}, test_rng())},
                                        {"t", Tensor::from_i64({1, bad}, {2})}});
      REQUIRE_FALSE(out.ok());
      CHECK(out.status().message().find("target") != std::string::npos);
    }
}

TEST_CASE("Loss shape rules reject bad attributes, dtypes and shapes", "[loss]") {
  // Each malformed node gives an error Status from shape inference, no crash.
  struct Bad {
    const char* what;
    DType x_dtype;
    Shape x_shape;
    DType t_dtype;
    Shape t_shape;
    std::optional<Shape> w_shape;
    std::string reduction;
  };
  const std::vector<Bad> bad = {
      {"reduction", DType::kFloat32, {2, 3}, DType::kInt64, {2}, std::nullopt, "average"},
      {"rank", DType::kFloat32, {3}, DType::kInt64, {3}, std::nullopt, "mean"},
      {"int input", DType::kInt32, {2, 3}, DType::kInt64, {2}, std::nullopt, "mean"},
      {"float target", DType::kFloat32, {2, 3}, DType::kFloat32, {2}, std::nullopt, "mean"},
      {"target shape", DType::kFloat32, {2, 3, 4}, DType::kInt64, {2, 5}, std::nullopt, "mean"},
      {"target rank", DType::kFloat32, {2, 3, 4}, DType::kInt64, {2}, std::nullopt, "none"},
      {"weight shape", DType::kFloat32, {2, 3}, DType::kInt64, {2}, Shape{4}, "sum"},
      {"weight rank", DType::kFloat32, {2, 3}, DType::kInt64, {2}, Shape{1, 3}, "sum"},
  };
  for (OpKind op : {OpKind::NegativeLogLikelihoodLoss, OpKind::SoftmaxCrossEntropyLoss})
    for (const auto& c : bad) {
      CAPTURE(op_name(op), c.what);
      GraphBuilder b;
      std::vector<ValueId> ins{b.input("x", c.x_dtype, c.x_shape),
                               b.input("t", c.t_dtype, c.t_shape)};
      if (c.w_shape) ins.push_back(b.input("w", DType::kFloat32, *c.w_shape));
      AttributeMap a;
      a.set("reduction", Attribute::of_string(c.reduction));
      b.output(b.node(op, ins, a, 1, "loss"));
      Status st = infer(b);
      REQUIRE_FALSE(st.ok());
    }
}
