// Elementwise binary and variadic ops: broadcasting, exact integer arithmetic,
// mixed-dtype Pow, Mod/Div/BitShift semantics, bool outputs, errors.
#include <cmath>
#include <functional>
#include <limits>

#include "tests/elementwise_test_util.h"

using namespace graphc;
using namespace graphc::ewtest;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Checks out[i] == f(a[i'], b[i'']) under broadcasting, through doubles.
void check_binary_f(const Tensor& a, const Tensor& b, const Tensor& out,
                    const std::function<double(double, double)>& f, double tol) {
  for (int64_t i = 0; i < out.numel(); ++i) {
    auto idx = unravel(i, out.shape());
    double want = f(a.get_f64(bcast_index(idx, a.shape())), b.get_f64(bcast_index(idx, b.shape())));
    CHECK(std::fabs(out.get_f64(i) - want) <= tol * (1 + std::fabs(want)));
  }
}
}  // namespace

TEST_CASE("float arithmetic broadcasts multidirectionally", "[elementwise]") {
  // Add/Sub/Mul/Div on random float32 {2,1,4} x {3,1} -> {2,3,4}, float64 scalar x {5}.
  Tensor a = rnd(DType::kFloat32, {2, 1, 4});
  Tensor b = rnd(DType::kFloat32, {3, 1}, 0.5, 2);
  const std::vector<std::pair<OpKind, std::function<double(double, double)>>> ops = {
      {OpKind::Add, [](double x, double y) { return x + y; }},
      {OpKind::Sub, [](double x, double y) { return x - y; }},
      {OpKind::Mul, [](double x, double y) { return x * y; }},
      {OpKind::Div, [](double x, double y) { return x / y; }},
  };
  for (const auto& [op, f] : ops) {
    Tensor out = run1(op, {a, b});
    REQUIRE(out.shape() == Shape{2, 3, 4});
    REQUIRE(out.dtype() == DType::kFloat32);
    check_binary_f(a, b, out, f, 1e-6);
    Tensor s = rnd(DType::kFloat64, {});
    Tensor v = rnd(DType::kFloat64, {5}, 0.5, 2);
    check_binary_f(s, v, run1(op, {s, v}), f, 1e-15);
  }
  Status bad = infer_only(OpKind::Add, {{DType::kFloat32, {2, 3}}, {DType::kFloat32, {4}}});
  CHECK(!bad.ok());
  CHECK(contains(bad.message(), "broadcast"));
  CHECK(!infer_only(OpKind::Add, {{DType::kFloat32, {2}}, {DType::kFloat64, {2}}}).ok());
  CHECK(!infer_only(OpKind::Mul, {{DType::kBool, {2}}, {DType::kBool, {2}}}).ok());
}

TEST_CASE("integer arithmetic is exact and wraps", "[elementwise]") {
  // int64 beyond 2^53, uint8 wrap-around, Div truncating toward zero.
  const int64_t big = (int64_t{1} << 60) + 1;
  Tensor a = i64({big, big, -7, 7, -7}, {5});
  Tensor b = i64({1, big, 2, -2, -2}, {5});
  CHECK(run1(OpKind::Add, {a, b}).to_i64_vector() ==
        std::vector<int64_t>{big + 1, 2 * big, -5, 5, -9});
  CHECK(run1(OpKind::Sub, {a, b}).to_i64_vector() == std::vector<int64_t>{big - 1, 0, -9, 9, -5});
  CHECK(run1(OpKind::Div, {a, b}).to_i64_vector() == std::vector<int64_t>{big, 1, -3, -3, 3});
  Tensor u = make<uint64_t>(DType::kUInt8, {250, 3, 16}, {3});
  Tensor v = make<uint64_t>(DType::kUInt8, {10, 5, 16}, {3});
  CHECK(run1(OpKind::Add, {u, v}).to_i64_vector() == std::vector<int64_t>{4, 8, 32});
  CHECK(run1(OpKind::Sub, {u, v}).to_i64_vector() == std::vector<int64_t>{240, 254, 0});
  CHECK(run1(OpKind::Mul, {u, v}).to_i64_vector() == std::vector<int64_t>{196, 15, 0});
  // Random int32 against a hand loop (C++ integer division truncates toward zero).
  Tensor x = rnd(DType::kInt32, {4, 3}, -1000, 1000);
  Tensor y = rnd(DType::kInt32, {3}, 1, 9);
  Tensor q = run1(OpKind::Div, {x, y});
  Tensor m = run1(OpKind::Mul, {x, y});
  for (int64_t i = 0; i < 12; ++i) {
    CHECK(q.get_i64(i) == x.get_i64(i) / y.get_i64(i % 3));
    CHECK(m.get_i64(i) == x.get_i64(i) * y.get_i64(i % 3));
  }
  // Integer division by zero is a run-time error, not a crash.
  auto dz = run_op(OpKind::Div, {i32({1, 2}, {2}), i32({1, 0}, {2})});
  CHECK(!dz.ok());
  CHECK(contains(dz.status().message(), "zero"));
}

TEST_CASE("Mod follows the divisor's sign unless fmod = 1", "[elementwise]") {
  // Python % for ints with fmod=0; C fmod for fmod=1 and for floats; random ints.
  using ir::Attribute;
  auto fmod1 = testing::attrs({{"fmod", Attribute::of_int(1)}});
  Tensor a = i64({7, -7, 7, -7, 0}, {5});
  Tensor b = i64({3, 3, -3, -3, 5}, {5});
  CHECK(run1(OpKind::Mod, {a, b}).to_i64_vector() == std::vector<int64_t>{1, 2, -2, -1, 0});
  CHECK(run1(OpKind::Mod, {a, b}, fmod1).to_i64_vector() == std::vector<int64_t>{1, -1, 1, -1, 0});
  Tensor fa = f32({7.5, -7.5, 7.5, -7.5}, {4}), fb = f32({2, 2, -2, -2}, {4});
  CHECK(run1(OpKind::Mod, {fa, fb}, fmod1).to_f64_vector() ==
        std::vector<double>{1.5, -1.5, 1.5, -1.5});
  Tensor x = rnd(DType::kInt16, {20}, -300, 300);
  Tensor y = rnd(DType::kInt16, {20}, 1, 40);
  for (int64_t i = 0; i < 20; ++i)
    if (i % 2) y.set_i64(i, -y.get_i64(i));
  Tensor r = run1(OpKind::Mod, {x, y});
  for (int64_t i = 0; i < 20; ++i) {
    int64_t xv = x.get_i64(i), yv = y.get_i64(i);
    int64_t want = ((xv % yv) + yv) % yv;  // Python semantics
    CHECK(r.get_i64(i) == want);
  }
  Tensor mu = run1(OpKind::Mod, {make<uint64_t>(DType::kUInt32, {4000000000u, 9}, {2}),
                                 make<uint64_t>(DType::kUInt32, {7, 4}, {2})});
  CHECK(mu.to_i64_vector() == std::vector<int64_t>{4000000000 % 7, 1});
  CHECK(!run_op(OpKind::Mod, {i64({1}, {1}), i64({0}, {1})}).ok());
  // Floats with fmod = 0 (opset 28): floor-mod, the divisor's sign, signed zeros.
  const double inf = std::numeric_limits<double>::infinity();
  Tensor fm =
      run1(OpKind::Mod, {make<double>(DType::kFloat64, {7.5, -7.5, 7.5, -0.0, 3, -3, 0.0}, {7}),
                         make<double>(DType::kFloat64, {2, 2, -2, 5, inf, inf, -4}, {7})});
  CHECK(fm.to_f64_vector() == std::vector<double>{1.5, 0.5, -0.5, 0, 3, inf, 0});
  CHECK(std::signbit(fm.get_f64(3)) == false);  // sign of the divisor
  CHECK(std::signbit(fm.get_f64(6)) == true);
  Tensor fx = rnd(DType::kFloat32, {32}, -50, 50), fy = rnd(DType::kFloat32, {32}, 0.5, 9);
  for (int64_t i = 0; i < 32; i += 2) fy.set_f64(i, -fy.get_f64(i));
  Tensor fr = run1(OpKind::Mod, {fx, fy});
  for (int64_t i = 0; i < 32; ++i) {
    double xv = fx.get_f64(i), yv = fy.get_f64(i);
    CHECK(fr.get_f64(i) == Approx(xv - std::floor(xv / yv) * yv).margin(1e-4));
  }
  CHECK(!infer_only(OpKind::Mod, {{DType::kInt32, {2}}, {DType::kInt32, {2}}},
                    testing::attrs({{"fmod", Attribute::of_int(2)}}))
             .ok());
}

TEST_CASE("Pow keeps the base dtype with any exponent dtype", "[elementwise]") {
  // float32^int64, int32^float32 (truncated), exact int64^int64, random float64.
  Tensor fb = f32({2, -3, 0.5}, {3});
  Tensor ie = i64({3, 2, -1}, {3});
  Tensor p = run1(OpKind::Pow, {fb, ie});
  CHECK(p.dtype() == DType::kFloat32);
  CHECK(p.to_f64_vector() == std::vector<double>{8, 9, 2});
  Tensor ib = i32({2, 9, -8}, {3});
  Tensor fe = f32({0.5, 0.5, 1.0 / 3.0}, {3});
  Tensor q = run1(OpKind::Pow, {ib, fe});
  CHECK(q.dtype() == DType::kInt32);
  // pow(-8, 1/3) is NaN in real arithmetic; NaN -> int32 is INT32_MIN (numpy astype on x86).
  CHECK(q.to_i64_vector() == std::vector<int64_t>{1, 3, INT32_MIN});
  Tensor big = run1(OpKind::Pow, {i64({3, -2, 2, 1, -1}, {5}), i64({39, 63, -1, -5, -5}, {5})});
  int64_t p39 = 1;
  for (int k = 0; k < 39; ++k) p39 *= 3;
  CHECK(big.to_i64_vector() == std::vector<int64_t>{p39, INT64_MIN, 0, 1, -1});
  Tensor x = rnd(DType::kFloat64, {2, 3}, 0.1, 3);
  Tensor e = rnd(DType::kFloat64, {3}, -2, 2);
  check_binary_f(
      x, e, run1(OpKind::Pow, {x, e}), [](double u, double w) { return std::pow(u, w); }, 1e-14);
  CHECK(!run_op(OpKind::Pow, {i32({0}, {1}), i32({-2}, {1})}).ok());
  CHECK(!infer_only(OpKind::Pow, {{DType::kBool, {2}}, {DType::kInt32, {2}}}).ok());
}

TEST_CASE("BitShift shifts integers both ways", "[elementwise]") {
  // Random uint8/uint64 values and amounts, including amounts >= the bit width.
  using ir::Attribute;
  auto dir = [](const char* d) { return testing::attrs({{"direction", Attribute::of_string(d)}}); };
  for (DType dt : {DType::kUInt8, DType::kUInt16, DType::kUInt32, DType::kUInt64}) {
    int bits = static_cast<int>(ir::dtype_size(dt)) * 8;
    Tensor x = rnd(dt, {12}, 1, 250);
    Tensor s = rnd(dt, {12}, 0, bits + 3);
    Tensor l = run1(OpKind::BitShift, {x, s}, dir("LEFT"));
    Tensor r = run1(OpKind::BitShift, {x, s}, dir("RIGHT"));
    for (int64_t i = 0; i < 12; ++i) {
      uint64_t xv = x.get_u64(i), sv = s.get_u64(i);
      uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
      CHECK(l.get_u64(i) == (sv >= static_cast<uint64_t>(bits) ? 0 : (xv << sv) & mask));
      CHECK(r.get_u64(i) == (sv >= static_cast<uint64_t>(bits) ? 0 : xv >> sv));
    }
  }
  // Signed (opset 28): arithmetic right shift; out-of-range amounts leave the sign fill.
  Tensor sx = i32({-20, -20, 20, -1, -20, 5, INT32_MIN}, {7});
  Tensor ss = i32({2, 40, 40, 31, -1, 31, 1}, {7});
  CHECK(run1(OpKind::BitShift, {sx, ss}, dir("RIGHT")).to_i64_vector() ==
        std::vector<int64_t>{-5, -1, 0, -1, -1, 0, INT32_MIN / 2});
  CHECK(run1(OpKind::BitShift, {sx, ss}, dir("LEFT")).to_i64_vector() ==
        std::vector<int64_t>{-80, 0, 0, INT32_MIN, 0, INT32_MIN, 0});
  CHECK(!infer_only(OpKind::BitShift, {{DType::kFloat32, {2}}, {DType::kFloat32, {2}}}, dir("LEFT"))
             .ok());
  CHECK(
      !infer_only(OpKind::BitShift, {{DType::kUInt8, {2}}, {DType::kUInt8, {2}}}, dir("UP")).ok());
  CHECK(!infer_only(OpKind::BitShift, {{DType::kUInt8, {2}}, {DType::kUInt8, {2}}}).ok());
}

TEST_CASE("comparisons and logical ops produce bool", "[elementwise]") {
  // Random int16 {3,1} vs {4}; Equal on bools; And/Or/Xor against a truth table.
  Tensor a = rnd(DType::kInt16, {3, 1}, -3, 3);
  Tensor b = rnd(DType::kInt16, {4}, -3, 3);
  const std::vector<std::pair<OpKind, std::function<bool(int64_t, int64_t)>>> ops = {
      {OpKind::Equal, [](int64_t x, int64_t y) { return x == y; }},
      {OpKind::Less, [](int64_t x, int64_t y) { return x < y; }},
      {OpKind::LessOrEqual, [](int64_t x, int64_t y) { return x <= y; }},
      {OpKind::Greater, [](int64_t x, int64_t y) { return x > y; }},
      {OpKind::GreaterOrEqual, [](int64_t x, int64_t y) { return x >= y; }},
  };
  for (const auto& [op, f] : ops) {
    Tensor out = run1(op, {a, b});
    REQUIRE(out.dtype() == DType::kBool);
    REQUIRE(out.shape() == Shape{3, 4});
    for (int64_t i = 0; i < 12; ++i)
      CHECK((out.get_i64(i) != 0) == f(a.get_i64(i / 4), b.get_i64(i % 4)));
  }
  Tensor n = run1(OpKind::Equal, {f32({kNaN, 1}, {2}), f32({kNaN, 1}, {2})});
  CHECK(n.to_i64_vector() == std::vector<int64_t>{0, 1});
  Tensor p = boolean({0, 0, 1, 1}, {4}), q = boolean({0, 1, 0, 1}, {4});
  CHECK(run1(OpKind::And, {p, q}).to_i64_vector() == std::vector<int64_t>{0, 0, 0, 1});
  CHECK(run1(OpKind::Or, {p, q}).to_i64_vector() == std::vector<int64_t>{0, 1, 1, 1});
  CHECK(run1(OpKind::Xor, {p, q}).to_i64_vector() == std::vector<int64_t>{0, 1, 1, 0});
  CHECK(run1(OpKind::Equal, {p, q}).to_i64_vector() == std::vector<int64_t>{1, 0, 0, 1});
  Status st = infer_only(OpKind::And, {{DType::kInt32, {2}}, {DType::kInt32, {2}}});
  CHECK(!st.ok());
  CHECK(contains(st.message(), "bool"));
  CHECK(!infer_only(OpKind::Less, {{DType::kBool, {2}}, {DType::kBool, {2}}}).ok());
}

TEST_CASE("PRelu slope broadcasts to X only", "[elementwise]") {
  // Random X {2,3,4} with slope {3,1}; a slope that would grow X is an error.
  Tensor x = rnd(DType::kFloat32, {2, 3, 4});
  Tensor s = rnd(DType::kFloat32, {3, 1}, 0.1, 1);
  Tensor y = run1(OpKind::PRelu, {x, s});
  REQUIRE(y.shape() == Shape{2, 3, 4});
  check_binary_f(
      x, s, y, [](double v, double k) { return v < 0 ? k * v : v; }, 1e-6);
  Tensor xi = i64({-4, 5}, {2});
  CHECK(run1(OpKind::PRelu, {xi, i64({3}, {1})}).to_i64_vector() == std::vector<int64_t>{-12, 5});
  Status st = infer_only(OpKind::PRelu, {{DType::kFloat32, {3}}, {DType::kFloat32, {2, 3}}});
  CHECK(!st.ok());
  CHECK(contains(st.message(), "slope"));
}

TEST_CASE("Max, Min, Sum, Mean fold any number of broadcast inputs", "[elementwise]") {
  // Three random inputs {2,1}, {3}, {2,3}: float32 and int32 (exact); NaN propagates.
  for (DType dt : {DType::kFloat32, DType::kInt32, DType::kUInt16}) {
    Tensor a = rnd(dt, {2, 1}, 0, 90), b = rnd(dt, {3}, 0, 90), c = rnd(dt, {2, 3}, 0, 90);
    auto at = [&](const Tensor& t, int64_t i) {
      return t.get_f64(bcast_index(unravel(i, {2, 3}), t.shape()));
    };
    Tensor mx = run1(OpKind::Max, {a, b, c}), mn = run1(OpKind::Min, {a, b, c});
    Tensor sm = run1(OpKind::Sum, {a, b, c}), me = run1(OpKind::Mean, {a, b, c});
    REQUIRE(me.dtype() == dt);
    for (int64_t i = 0; i < 6; ++i) {
      double u = at(a, i), v = at(b, i), w = at(c, i);
      CHECK(mx.get_f64(i) == std::max({u, v, w}));
      CHECK(mn.get_f64(i) == std::min({u, v, w}));
      CHECK(sm.get_f64(i) == Approx(u + v + w).epsilon(1e-6));
      double mean = (u + v + w) / 3;
      CHECK(me.get_f64(i) == Approx(dt == DType::kFloat32 ? mean : std::trunc(mean)).epsilon(1e-6));
    }
  }
  Tensor one = rnd(DType::kInt64, {4}, -9, 9);
  CHECK(run1(OpKind::Sum, {one}).to_i64_vector() == one.to_i64_vector());
  Tensor m = run1(OpKind::Max, {f32({kNaN, 1}, {2}), f32({0, kNaN}, {2})});
  CHECK(std::isnan(m.get_f64(0)));
  CHECK(std::isnan(m.get_f64(1)));
  const int64_t big = (int64_t{1} << 61) + 1;
  CHECK(run1(OpKind::Sum, {i64({big}, {1}), i64({big}, {1}), i64({-1}, {1})}).to_i64_vector() ==
        std::vector<int64_t>{2 * big - 1});
  CHECK(run1(OpKind::Mean, {i64({-7}, {1}), i64({0}, {1})}).to_i64_vector() ==
        std::vector<int64_t>{-3});
  CHECK(!infer_only(OpKind::Max, {{DType::kFloat32, {2}}, {DType::kInt32, {2}}}).ok());
  CHECK(!infer_only(OpKind::Sum, {{DType::kBool, {2}}}).ok());
  CHECK(!infer_only(OpKind::Mean, {{DType::kFloat32, {2}}, {DType::kFloat32, {3}}}).ok());
}
