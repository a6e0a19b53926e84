// Elementwise unary ops and Where/Clip/Cast/CastLike/Identity/Dropout:
// reference kernels against independent computations, shape rules, errors.
#include <cmath>
#include <functional>
#include <limits>

#include "tests/elementwise_test_util.h"

using namespace graphc;
using namespace graphc::ewtest;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

struct UnaryCase {
  OpKind op;
  std::function<double(double)> f;
  double lo, hi;  // input range where the function is defined
};
}  // namespace

TEST_CASE("float unary ops match libm on fresh random inputs", "[elementwise]") {
  // Each float-only unary op, float32/float64/float16, against a double loop.
  std::vector<UnaryCase> cases = {
      {OpKind::Exp, [](double x) { return std::exp(x); }, -3, 3},
      {OpKind::Log, [](double x) { return std::log(x); }, 0.1, 5},
      {OpKind::Sqrt, [](double x) { return std::sqrt(x); }, 0, 5},
      {OpKind::Reciprocal, [](double x) { return 1 / x; }, 0.5, 3},
      {OpKind::Sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, -8, 8},
      {OpKind::Tanh, [](double x) { return std::tanh(x); }, -3, 3},
      {OpKind::HardSwish, [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); }, -5, 5},
      {OpKind::Softplus, [](double x) { return std::log(std::exp(x) + 1); }, -5, 5},
      {OpKind::Softsign, [](double x) { return x / (1 + std::fabs(x)); }, -5, 5},
      {OpKind::Erf, [](double x) { return std::erf(x); }, -2, 2},
      {OpKind::Sin, [](double x) { return std::sin(x); }, -4, 4},
      {OpKind::Cos, [](double x) { return std::cos(x); }, -4, 4},
      {OpKind::Tan, [](double x) { return std::tan(x); }, -1.2, 1.2},
      {OpKind::Asin, [](double x) { return std::asin(x); }, -0.99, 0.99},
      {OpKind::Acos, [](double x) { return std::acos(x); }, -0.99, 0.99},
      {OpKind::Atan, [](double x) { return std::atan(x); }, -4, 4},
      {OpKind::Sinh, [](double x) { return std::sinh(x); }, -3, 3},
      {OpKind::Cosh, [](double x) { return std::cosh(x); }, -3, 3},
      {OpKind::Asinh, [](double x) { return std::asinh(x); }, -3, 3},
      {OpKind::Acosh, [](double x) { return std::acosh(x); }, 1, 4},
      {OpKind::Atanh, [](double x) { return std::atanh(x); }, -0.95, 0.95},
      {OpKind::Floor, [](double x) { return std::floor(x); }, -4, 4},
      {OpKind::Ceil, [](double x) { return std::ceil(x); }, -4, 4},
      {OpKind::Relu, [](double x) { return x > 0 ? x : 0; }, -2, 2},
      {OpKind::Abs, [](double x) { return std::fabs(x); }, -2, 2},
      {OpKind::Neg, [](double x) { return -x; }, -2, 2},
      {OpKind::Gelu, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -3, 3},
  };
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kFloat16}) {
    for (const auto& c : cases) {
      Tensor x = rnd(dt, {3, 5}, c.lo, c.hi);
      Tensor y = run1(c.op, {x});
      INFO(ir::op_name(c.op) << " " << ir::dtype_name(dt));
      REQUIRE(y.dtype() == dt);
      REQUIRE(y.shape() == Shape{3, 5});
      double tol = dt == DType::kFloat16 ? 4e-3 : dt == DType::kFloat32 ? 2e-6 : 1e-12;
      for (int64_t i = 0; i < x.numel(); ++i) {
        double want = c.f(x.get_f64(i));
        CHECK(std::fabs(y.get_f64(i) - want) <= tol * (1 + std::fabs(want)));
      }
    }
  }
}

TEST_CASE("activation attributes and their defaults", "[elementwise]") {
  // LeakyRelu/Elu/Selu/Celu/HardSigmoid/ThresholdedRelu/Shrink/Gelu-tanh
  // with defaults and with random attribute values.
  using ir::Attribute;
  Tensor x = rnd(DType::kFloat64, {4, 6}, -3, 3);
  std::uniform_real_distribution<double> d(0.1, 2.0);
  double a = d(testing::test_rng()), g = d(testing::test_rng());
  auto check = [&](OpKind op, ir::AttributeMap attrs, std::function<double(double)> f) {
    Tensor y = run1(op, {x}, attrs);
    INFO(ir::op_name(op));
    for (int64_t i = 0; i < x.numel(); ++i)
      CHECK(y.get_f64(i) == Approx(f(x.get_f64(i))).margin(1e-12));
  };
  auto elu = [](double v, double al) { return v < 0 ? al * (std::exp(v) - 1) : v; };
  check(OpKind::LeakyRelu, {}, [](double v) { return v < 0 ? 0.01 * v : v; });
  check(OpKind::LeakyRelu, testing::attrs({{"alpha", Attribute::of_float(a)}}),
        [a](double v) { return v < 0 ? a * v : v; });
  check(OpKind::Elu, {}, [&](double v) { return elu(v, 1.0); });
  check(OpKind::Elu, testing::attrs({{"alpha", Attribute::of_float(a)}}),
        [&](double v) { return elu(v, a); });
  const double sa = 1.6732632423543772, sg = 1.0507009873554805;
  check(OpKind::Selu, {}, [&](double v) { return sg * (v > 0 ? v : sa * (std::exp(v) - 1)); });
  check(OpKind::Selu,
        testing::attrs({{"alpha", Attribute::of_float(a)}, {"gamma", Attribute::of_float(g)}}),
        [&](double v) { return g * (v > 0 ? v : a * (std::exp(v) - 1)); });
  check(OpKind::Celu, {}, [&](double v) { return elu(v, 1.0); });
  check(OpKind::Celu, testing::attrs({{"alpha", Attribute::of_float(a)}}),
        [&](double v) { return std::max(0.0, v) + std::min(0.0, a * (std::exp(v / a) - 1)); });
  check(OpKind::HardSigmoid, {}, [](double v) { return std::clamp(0.2 * v + 0.5, 0.0, 1.0); });
  check(OpKind::HardSigmoid,
        testing::attrs({{"alpha", Attribute::of_float(a)}, {"beta", Attribute::of_float(g)}}),
        [&](double v) { return std::clamp(a * v + g, 0.0, 1.0); });
  check(OpKind::ThresholdedRelu, {}, [](double v) { return v > 1.0 ? v : 0.0; });
  check(OpKind::ThresholdedRelu, testing::attrs({{"alpha", Attribute::of_float(a)}}),
        [&](double v) { return v > a ? v : 0.0; });
  check(OpKind::Shrink, {}, [](double v) { return v < -0.5 ? v : v > 0.5 ? v : 0.0; });
  check(OpKind::Shrink,
        testing::attrs({{"bias", Attribute::of_float(g)}, {"lambd", Attribute::of_float(a)}}),
        [&](double v) { return v < -a  ? v + g
                               : v > a ? v - g
                                       : 0.0; });
  check(
      OpKind::Gelu, testing::attrs({{"approximate", Attribute::of_string("tanh")}}), [](double v) {
        return 0.5 * v *
               (1 + std::tanh(std::sqrt(2 / 3.14159265358979323846) * (v + 0.044715 * v * v * v)));
      });
}

TEST_CASE("Round halves to even, Sign, Abs, Neg, Relu on integers are exact", "[elementwise]") {
  // Known values: rounding ties, integer sign/abs/neg including INT64_MIN wrap.
  Tensor r = run1(OpKind::Round, {f32({0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6, 3.5}, {8})});
  CHECK(r.to_f64_vector() == std::vector<double>{0, 2, 2, -0, -2, 2, -3, 4});
  const int64_t big = (int64_t{1} << 60) + 7;
  Tensor xi = i64({-big, 0, 5, INT64_MIN}, {4});
  CHECK(run1(OpKind::Sign, {xi}).to_i64_vector() == std::vector<int64_t>{-1, 0, 1, -1});
  CHECK(run1(OpKind::Abs, {xi}).to_i64_vector() == std::vector<int64_t>{big, 0, 5, INT64_MIN});
  CHECK(run1(OpKind::Neg, {xi}).to_i64_vector() == std::vector<int64_t>{big, 0, -5, INT64_MIN});
  CHECK(run1(OpKind::Relu, {xi}).to_i64_vector() == std::vector<int64_t>{0, 0, 5, 0});
  Tensor u = make<uint64_t>(DType::kUInt8, {0, 7, 255}, {3});
  CHECK(run1(OpKind::Sign, {u}).to_i64_vector() == std::vector<int64_t>{0, 1, 1});
  CHECK(run1(OpKind::Abs, {u}).to_i64_vector() == std::vector<int64_t>{0, 7, 255});
  Tensor s = run1(OpKind::Sign, {f32({-2.5, 0, 3, kNaN}, {4})});
  CHECK(s.get_f64(0) == -1);
  CHECK(s.get_f64(1) == 0);
  CHECK(s.get_f64(2) == 1);
  CHECK(std::isnan(s.get_f64(3)));
}

TEST_CASE("random integer Abs/Neg/Sign against a hand loop", "[elementwise]") {
  // Fresh int8/int32/int64 inputs over the full small range.
  for (DType dt : {DType::kInt8, DType::kInt32, DType::kInt64}) {
    Tensor x = rnd(dt, {17}, -100, 100);
    Tensor a = run1(OpKind::Abs, {x}), n = run1(OpKind::Neg, {x}), s = run1(OpKind::Sign, {x});
    for (int64_t i = 0; i < 17; ++i) {
      int64_t v = x.get_i64(i);
      CHECK(a.get_i64(i) == (v < 0 ? -v : v));
      CHECK(n.get_i64(i) == -v);
      CHECK(s.get_i64(i) == (v > 0) - (v < 0));
    }
  }
}

TEST_CASE("IsNaN, IsInf with detect flags, and Not produce bool", "[elementwise]") {
  // Special values through IsNaN/IsInf; random bools through Not.
  Tensor x = f32({1.0, kNaN, kInf, -kInf, -3.0}, {5});
  Tensor n = run1(OpKind::IsNaN, {x});
  CHECK(n.dtype() == DType::kBool);
  CHECK(n.to_i64_vector() == std::vector<int64_t>{0, 1, 0, 0, 0});
  CHECK(run1(OpKind::IsInf, {x}).to_i64_vector() == std::vector<int64_t>{0, 0, 1, 1, 0});
  using ir::Attribute;
  CHECK(run1(OpKind::IsInf, {x}, testing::attrs({{"detect_negative", Attribute::of_int(0)}}))
            .to_i64_vector() == std::vector<int64_t>{0, 0, 1, 0, 0});
  CHECK(run1(OpKind::IsInf, {x}, testing::attrs({{"detect_positive", Attribute::of_int(0)}}))
            .to_i64_vector() == std::vector<int64_t>{0, 0, 0, 1, 0});
  Tensor b = rnd(DType::kBool, {2, 9});
  Tensor nb = run1(OpKind::Not, {b});
  for (int64_t i = 0; i < b.numel(); ++i) CHECK(nb.get_i64(i) == 1 - b.get_i64(i));
}

TEST_CASE("float16 and bfloat16 unary results are stored in their own dtype", "[elementwise]") {
  // Exp on fp16/bf16: computed in float, rounded once to the storage type.
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    Tensor x = rnd(dt, {8}, -2, 2);
    Tensor y = run1(OpKind::Exp, {x});
    REQUIRE(y.dtype() == dt);
    for (int64_t i = 0; i < 8; ++i) {
      float want = std::exp(static_cast<float>(x.get_f64(i)));
      Tensor w(dt, {1});
      w.set_f64(0, want);
      CHECK(y.get_f64(i) == w.get_f64(0));
    }
  }
}

TEST_CASE("Where broadcasts condition, X and Y", "[elementwise]") {
  // Random bool condition {2,1,3}, X {4,1}, Y {3}; hand loop over the output.
  Tensor c = rnd(DType::kBool, {2, 1, 3});
  Tensor x = rnd(DType::kInt64, {4, 1}, -50, 50);
  Tensor y = rnd(DType::kInt64, {3}, -50, 50);
  Tensor out = run1(OpKind::Where, {c, x, y});
  REQUIRE(out.shape() == Shape{2, 4, 3});
  for (int64_t i = 0; i < out.numel(); ++i) {
    auto idx = unravel(i, out.shape());
    bool cv = c.get_i64(bcast_index(idx, c.shape())) != 0;
    int64_t want =
        cv ? x.get_i64(bcast_index(idx, x.shape())) : y.get_i64(bcast_index(idx, y.shape()));
    CHECK(out.get_i64(i) == want);
  }
  CHECK(!infer_only(OpKind::Where,
                    {{DType::kInt32, {2}}, {DType::kFloat32, {2}}, {DType::kFloat32, {2}}})
             .ok());
  CHECK(!infer_only(OpKind::Where,
                    {{DType::kBool, {2}}, {DType::kFloat32, {2}}, {DType::kInt32, {2}}})
             .ok());
}

TEST_CASE("Clip with optional bounds, integers and legacy attributes", "[elementwise]") {
  // Bounds as inputs (both, only max, min > max), int8, and `_min`/`_max` attributes.
  Tensor x = rnd(DType::kFloat32, {20}, -3, 3);
  Tensor lo = f32({-1.0}, {}), hi = f32({0.5}, {});
  Tensor both = run1(OpKind::Clip, {x, lo, hi});
  Tensor only_max = run1(OpKind::Clip, {x, std::nullopt, hi});
  Tensor swapped = run1(OpKind::Clip, {x, hi, lo});  // min 0.5 > max -1
  Tensor none = run1(OpKind::Clip, {x});
  using ir::Attribute;
  Tensor legacy = run1(OpKind::Clip, {x}, testing::attrs({{"_min", Attribute::of_float(-1.0)}}));
  for (int64_t i = 0; i < 20; ++i) {
    double v = x.get_f64(i);
    CHECK(both.get_f64(i) == static_cast<float>(std::min(std::max(v, -1.0), 0.5)));
    CHECK(only_max.get_f64(i) == static_cast<float>(std::min(v, 0.5)));
    CHECK(swapped.get_f64(i) == -1.0);
    CHECK(none.get_f64(i) == v);
    CHECK(legacy.get_f64(i) == std::max(v, -1.0));
  }
  Tensor xi = rnd(DType::kInt8, {16}, -128, 127);
  Tensor ci = run1(OpKind::Clip, {xi, make<int64_t>(DType::kInt8, {-10}, {}),
                                  make<int64_t>(DType::kInt8, {20}, {})});
  for (int64_t i = 0; i < 16; ++i)
    CHECK(ci.get_i64(i) == std::clamp<int64_t>(xi.get_i64(i), -10, 20));
  Tensor nan = run1(OpKind::Clip, {f32({kNaN}, {1}), lo, hi});
  CHECK(std::isnan(nan.get_f64(0)));
  // Errors: a non-scalar bound, a bound of another dtype, a bool input.
  CHECK(!infer_only(OpKind::Clip, {{DType::kFloat32, {4}}, {DType::kFloat32, {2}}}).ok());
  CHECK(!infer_only(OpKind::Clip, {{DType::kFloat32, {4}}, {DType::kFloat64, {}}}).ok());
  CHECK(!infer_only(OpKind::Clip, {{DType::kBool, {4}}}).ok());
}

TEST_CASE("Cast converts like numpy astype", "[elementwise]") {
  // float->int truncation and out-of-range values, ->bool, int64 exactness, wrap.
  using ir::Attribute;
  auto to = [](DType d) {
    return testing::attrs({{"to", Attribute::of_int(static_cast<int64_t>(d))}});
  };
  Tensor x = f64({2.9, -2.9, 300.7, -1.5, kNaN, kInf, 0.0}, {7});
  CHECK(run1(OpKind::Cast, {x}, to(DType::kInt32)).to_i64_vector() ==
        std::vector<int64_t>{2, -2, 300, -1, INT32_MIN, INT32_MIN, 0});
  CHECK(run1(OpKind::Cast, {x}, to(DType::kInt8)).to_i64_vector() ==
        std::vector<int64_t>{2, -2, 44, -1, 0, 0, 0});
  CHECK(run1(OpKind::Cast, {x}, to(DType::kUInt8)).to_i64_vector() ==
        std::vector<int64_t>{2, 254, 44, 255, 0, 0, 0});
  CHECK(run1(OpKind::Cast, {x}, to(DType::kBool)).to_i64_vector() ==
        std::vector<int64_t>{1, 1, 1, 1, 1, 1, 0});
  const int64_t big = (int64_t{1} << 62) + 3;  // not representable in double
  Tensor xi = i64({big, -big, 255, 256}, {4});
  Tensor back =
      run1(OpKind::Cast, {run1(OpKind::Cast, {xi}, to(DType::kUInt64))}, to(DType::kInt64));
  CHECK(back.to_i64_vector() == xi.to_i64_vector());
  CHECK(run1(OpKind::Cast, {xi}, to(DType::kUInt8)).to_i64_vector() ==
        std::vector<int64_t>{3, 253, 255, 0});
  Tensor xf = run1(OpKind::Cast, {xi}, to(DType::kFloat32));
  CHECK(xf.dtype() == DType::kFloat32);
  CHECK(xf.get_f64(0) == static_cast<double>(static_cast<float>(big)));
  // Random float32 -> float16 -> float32 stays within fp16 precision.
  Tensor r = rnd(DType::kFloat32, {32}, -100, 100);
  Tensor h = run1(OpKind::Cast, {r}, to(DType::kFloat16));
  REQUIRE(h.dtype() == DType::kFloat16);
  for (int64_t i = 0; i < 32; ++i)
    CHECK(h.get_f64(i) == half_bits_to_float(float_to_half_bits(static_cast<float>(r.get_f64(i)))));
  // CastLike takes the dtype of input 1.
  Tensor like = run1(OpKind::CastLike, {r, i32({0}, {1})});
  CHECK(like.dtype() == DType::kInt32);
  for (int64_t i = 0; i < 32; ++i) CHECK(like.get_i64(i) == static_cast<int64_t>(r.get_f64(i)));
}

TEST_CASE("Cast rejects unsupported and malformed target types", "[elementwise]") {
  // to = STRING / FLOAT8E8M0 -> unsupported naming the type; missing or bad `to` -> error.
  using ir::Attribute;
  auto cast_to = [](int64_t t) {
    return infer_only(OpKind::Cast, {{DType::kFloat32, {2}}},
                      testing::attrs({{"to", Attribute::of_int(t)}}));
  };
  Status s = cast_to(8);
  CHECK(s.code() == ErrorCode::kUnsupported);
  CHECK(contains(s.message(), "STRING"));
  Status f8 = cast_to(24);
  CHECK(f8.code() == ErrorCode::kUnsupported);
  CHECK(contains(f8.message(), "FLOAT8E8M0"));
  CHECK(cast_to(17).ok());  // float8e4m3fn is supported
  CHECK(!cast_to(-3).ok());
  CHECK(!cast_to(1000).ok());
  CHECK(!infer_only(OpKind::Cast, {{DType::kFloat32, {2}}}).ok());
  CHECK(!infer_only(OpKind::Cast, {{DType::kFloat32, {2}}},
                    testing::attrs({{"to", Attribute::of_string("FLOAT")}}))
             .ok());
}

TEST_CASE("Identity and inference-mode Dropout pass data through", "[elementwise]") {
  // Identity copies; Dropout returns data and an all-true mask; training errors.
  Tensor x = rnd(DType::kFloat32, {3, 4});
  CHECK(run1(OpKind::Identity, {x}).same_bytes(x));
  auto r = run_op(OpKind::Dropout, {x, f32({0.3}, {})}, {}, 2);
  REQUIRE(r.ok());
  CHECK((*r)[0].same_bytes(x));
  CHECK((*r)[1].dtype() == DType::kBool);
  CHECK((*r)[1].to_i64_vector() == std::vector<int64_t>(12, 1));
  // opset 7-9 form: mask in the data's dtype.
  using ir::Attribute;
  auto old =
      run_op(OpKind::Dropout, {x}, testing::attrs({{"_mask_like_input", Attribute::of_int(1)}}), 2);
  REQUIRE(old.ok());
  CHECK((*old)[1].dtype() == DType::kFloat32);
  CHECK((*old)[1].to_f64_vector() == std::vector<double>(12, 1.0));
  // training_mode = true: build-time constant -> unsupported; at run time too.
  Tensor t = boolean({1}, {});
  auto train_const = run_op(OpKind::Dropout, {x, f32({0.5}, {}), t}, {}, 1, true);
  CHECK(train_const.status().code() == ErrorCode::kUnsupported);
  auto train_run = run_op(OpKind::Dropout, {x, f32({0.5}, {}), t});
  CHECK(train_run.status().code() == ErrorCode::kUnsupported);
  // ratio 0 in training mode is the identity.
  auto zero = run_op(OpKind::Dropout, {x, f32({0.0}, {}), t}, {}, 2);
  REQUIRE(zero.ok());
  CHECK((*zero)[0].same_bytes(x));
  auto not_training = run_op(OpKind::Dropout, {x, f32({0.5}, {}), boolean({0}, {})});
  REQUIRE(not_training.ok());
  CHECK(!infer_only(OpKind::Dropout, {{DType::kInt32, {2}}}).ok());
}

TEST_CASE("constant inputs fold through the same kernels", "[elementwise]") {
  // A node with constant inputs is evaluated during shape inference; same result.
  Tensor x = rnd(DType::kFloat32, {5});
  auto r = run_op(OpKind::Sigmoid, {x}, {}, 1, true);
  REQUIRE(r.ok());
  CHECK(testing::max_abs_diff((*r)[0], run1(OpKind::Sigmoid, {x})) == 0.0);
}

TEST_CASE("unary shape rules reject wrong dtypes and bad attributes", "[elementwise]") {
  // Dtype families and attribute kinds/values; the message names the problem.
  using ir::Attribute;
  Status st = infer_only(OpKind::Not, {{DType::kFloat32, {2}}});
  CHECK(!st.ok());
  CHECK(contains(st.message(), "bool"));
  CHECK(!infer_only(OpKind::Exp, {{DType::kInt32, {2}}}).ok());
  CHECK(!infer_only(OpKind::Sqrt, {{DType::kBool, {2}}}).ok());
  CHECK(!infer_only(OpKind::Neg, {{DType::kUInt8, {2}}}).ok());
  CHECK(!infer_only(OpKind::IsNaN, {{DType::kInt64, {2}}}).ok());
  CHECK(!infer_only(OpKind::Abs, {{DType::kBool, {2}}}).ok());
  Status g = infer_only(OpKind::Gelu, {{DType::kFloat32, {2}}},
                        testing::attrs({{"approximate", Attribute::of_string("fast")}}));
  CHECK(!g.ok());
  CHECK(contains(g.message(), "approximate"));
  CHECK(!infer_only(OpKind::Celu, {{DType::kFloat32, {2}}},
                    testing::attrs({{"alpha", Attribute::of_float(0.0)}}))
             .ok());
  Status kind = infer_only(OpKind::LeakyRelu, {{DType::kFloat32, {2}}},
                           testing::attrs({{"alpha", Attribute::of_int(1)}}));
  CHECK(!kind.ok());
  CHECK(contains(kind.message(), "alpha"));
  CHECK(!infer_only(OpKind::IsInf, {{DType::kFloat32, {2}}},
                    testing::attrs({{"detect_negative", Attribute::of_int(2)}}))
             .ok());
}
