// Shape profiles: parsing, the checks against the model, and the range check
// that infers shapes over the whole range (driver/shape_profiles.h).
#include "driver/shape_profiles.h"

#include <catch2/catch.hpp>
#include <random>

#include "driver/load_model.h"
#include "tests/onnx_builder.h"
#include "tests/shape_profile_test_util.h"

using namespace graphc;
using graphc::testing::OnnxModel;
using onnx::TensorProto;

namespace {


// x [batch, seq, 8] * Unsqueeze(mask [batch, seq], -1), then Reshape to
// [batch, -1, 4, 2] ("batch" and "seq" are the model's dim names).
ir::Graph masked_model(bool with_reshape) {
  OnnxModel m(17);
  m.input("x", TensorProto::FLOAT, {std::string("batch"), std::string("seq"), int64_t{8}});
  m.input("mask", TensorProto::FLOAT, {std::string("batch"), std::string("seq")});
  m.initializer(testing::int64_tensor("axes", {1}, {-1}));
  m.node("Unsqueeze", {"mask", "axes"}, {"m3"}, "unsqueeze");
  m.node("Mul", {"x", "m3"}, {with_reshape ? "xm" : "y"}, "mul");
  if (with_reshape) {
    // [batch, seq*8/8, 4, 2]: seq*8 elements per batch split 4x2: always fine.
    m.initializer(testing::int64_tensor("shape", {4}, {0, -1, 4, 2}));
    m.node("Reshape", {"xm", "shape"}, {"y"}, "reshape");
  }
  m.output("y");
  return testing::import_unbound(m, "masked.onnx");
}

// x [n, len] reshaped to [n, -1, 4]: every len must be a multiple of 4.
ir::Graph multiple_of_4_model() {
  OnnxModel m(17);
  m.input("x", TensorProto::FLOAT, {std::string("n"), std::string("len")});
  m.initializer(testing::int64_tensor("shape", {3}, {0, -1, 4}));
  m.node("Reshape", {"x", "shape"}, {"y"}, "split_by_4");
  m.output("y");
  return testing::import_unbound(m, "by4.onnx");
}


std::string error_of(const Status& st) {
  REQUIRE_FALSE(st.ok());
  return st.message();
}

}  // namespace

TEST_CASE("shape ranges and profiles parse from the CLI's spellings", "[shape-profiles]") {
  auto r = driver::parse_shape_range("1x8x64/8x128x64/32x512x64");
  REQUIRE(r.ok());
  CHECK(r->min == ir::Shape{1, 8, 64});
  CHECK(r->opt == ir::Shape{8, 128, 64});
  CHECK(r->max == ir::Shape{32, 512, 64});
  CHECK_FALSE(r->is_static());
  auto fixed = driver::parse_shape_range("2x3");
  REQUIRE(fixed.ok());
  CHECK(fixed->is_static());
  CHECK(fixed->opt == ir::Shape{2, 3});
  CHECK(driver::range_to_string(*r) == "1x8x64 / 8x128x64 / 32x512x64");
  CHECK(driver::range_to_string(*fixed) == "2x3");

  for (const char* bad : {"1x8/2x8", "1x8/2x8/3x8/4x8", "1xq/2x8/3x8", "", "1x8//3x8", "-1x8"})
    CHECK_FALSE(driver::parse_shape_range(bad).ok());

  auto p = driver::parse_profile_flag("x:1x8/8x128/32x512,mask:1x8/8x128/32x512");
  REQUIRE(p.ok());
  CHECK(p->inputs.size() == 2);
  CHECK(p->inputs.at("mask").max == ir::Shape{32, 512});
  CHECK(p->at_opt().at("x") == ir::Shape{8, 128});
  CHECK_THAT(error_of(driver::parse_profile_flag("x:1x8/8x8/9x8,x:1x8").status()),
             Catch::Contains("gives input 'x' twice"));
  CHECK_THAT(error_of(driver::parse_profile_flag("1x8/8x8/9x8").status()),
             Catch::Contains("NAME:MIN/OPT/MAX"));
  CHECK_THAT(error_of(driver::parse_profile_flag("x:1x8/8x8").status()),
             Catch::Contains("input 'x'"));
}

TEST_CASE("a range must be ordered min <= opt <= max in every dim", "[shape-profiles]") {
  auto check = [](const char* text) {
    auto r = driver::parse_shape_range(text);
    REQUIRE(r.ok());
    return driver::check_range("input 'x'", *r);
  };
  CHECK(check("1x8/8x8/16x8").ok());
  CHECK_THAT(error_of(check("4x8/2x8/16x8")), Catch::Contains("input 'x' dim 0: opt 2 is below min 4"));
  CHECK_THAT(error_of(check("1x8/8x8/16x4")), Catch::Contains("dim 1: max 4 is below opt 8"));
  CHECK_THAT(error_of(check("1x8/8x8x1/16x8")), Catch::Contains("different ranks"));
}

TEST_CASE("a profile is checked against the model's inputs before any work", "[shape-profiles]") {
  const ir::Graph g = masked_model(false);
  auto check = [&](const std::string& text) {
    return driver::check_profile_against_model(g, testing::profile_of(text), 0);
  };
  CHECK(check("x:1x1x8/2x16x8/8x64x8,mask:1x1/2x16/8x64").ok());
  CHECK_THAT(error_of(check("x:1x1x8/2x16x8/8x64x8,mask:1x1/2x16/8x64,z:1")),
             Catch::Contains("names 'z', which is not a model input (inputs: x, mask)"));
  CHECK_THAT(error_of(check("x:1x1/2x16/8x64,mask:1x1/2x16/8x64")),
             Catch::Contains("input 'x': the range 1x1 / 2x16 / 8x64 has rank 2, but the model "
                             "declares rank 3"));
  CHECK_THAT(error_of(check("x:1x1x8/2x16x8/8x64x16,mask:1x1/2x16/8x64")),
             Catch::Contains("input 'x' dim 2: the model fixes it at 8, the range is 8..16"));
  CHECK_THAT(error_of(check("x:1x1x8/2x16x8/8x64x8")),
             Catch::Contains("does not give input 'mask'"));
  // "seq" is one model dim: both inputs must give it the same range.
  CHECK_THAT(error_of(check("x:1x1x8/2x16x8/8x64x8,mask:1x1/2x16/8x32")),
             Catch::Contains("are the model's dim 'seq', but their ranges differ"));
}

TEST_CASE("range check points cover the corners, the extremes and odd sizes inside",
          "[shape-profiles]") {
  const ir::Graph g = masked_model(false);
  const auto p = testing::profile_of("x:1x16x8/4x64x8/32x512x8,mask:1x16/4x64/32x512");
  const auto points = driver::range_check_points(g, p);
  bool saw_min = false, saw_max = false, saw_opt = false, saw_odd_inside = false;
  for (const auto& point : points) {
    const ir::Shape& x = point.at("x");
    const ir::Shape& mask = point.at("mask");
    // Dims the model names alike move together.
    CHECK(x[0] == mask[0]);
    CHECK(x[1] == mask[1]);
    CHECK(x[2] == 8);
    CHECK((x[0] >= 1 && x[0] <= 32 && x[1] >= 16 && x[1] <= 512));
    saw_min |= x == ir::Shape{1, 16, 8};
    saw_max |= x == ir::Shape{32, 512, 8};
    saw_opt |= x == ir::Shape{4, 64, 8};
    saw_odd_inside |= x[0] % 2 == 1 && x[0] > 1 && x[0] < 32 && x[1] % 2 == 1;
  }
  CHECK(saw_min);
  CHECK(saw_max);
  CHECK(saw_opt);
  CHECK(saw_odd_inside);
  // 3 + 2 per free dim + 4 corners + 2 inside, less repeats (the corners
  // include all-min and all-max).
  CHECK(points.size() >= 8);
  // A static profile has one point.
  CHECK(driver::range_check_points(g, testing::profile_of("x:2x3x8,mask:2x3")).size() == 1);
}

TEST_CASE("the range check infers shapes over the range and names what fails",
          "[shape-profiles]") {
  size_t points = 0;
  const ir::Graph masked = masked_model(true);
  REQUIRE(driver::check_profile_over_range(
              masked, testing::profile_of("x:1x1x8/4x64x8/32x512x8,mask:1x1/4x64/32x512"), 0, &points)
              .ok());
  CHECK(points >= 8);

  const ir::Graph by4 = multiple_of_4_model();
  // Multiples of 4 only at min, opt and max: the odd sizes inside fail.
  const std::string msg =
      error_of(driver::check_profile_over_range(by4, testing::profile_of("x:1x8/2x64/8x512"), 0));
  CHECK_THAT(msg, Catch::Contains("profile 0: the model does not take the input shapes x:"));
  CHECK_THAT(msg, Catch::Contains("split_by_4"));
  // A static shape that is a multiple of 4 passes; one that is not fails.
  CHECK(driver::check_profile_over_range(by4, testing::profile_of("x:3x12"), 0).ok());
  CHECK_THAT(error_of(driver::check_profile_over_range(by4, testing::profile_of("x:3x13"), 0)),
             Catch::Contains("x:3x13"));
  // Profile checks run first.
  CHECK_THAT(error_of(driver::check_profile_over_range(by4, testing::profile_of("y:1x8"), 2)),
             Catch::Contains("profile 2 names 'y'"));
}

TEST_CASE("malformed shape and profile flags are refused, never crash", "[shape-profiles]") {
  // A small fuzz of the flag syntax: random strings over its alphabet.
  std::mt19937 rng(1234);
  const std::string alphabet = "x:/,0123456789-+ ab";
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text(rng() % 24, ' ');
    for (char& c : text) c = alphabet[rng() % alphabet.size()];
    auto p = driver::parse_profile_flag(text);
    if (p.ok()) {
      ++accepted;
      for (const auto& [name, r] : p->inputs) {
        CHECK_FALSE(name.empty());
        (void)driver::check_range(name, r);  // any answer, no crash
      }
    }
    (void)driver::parse_shape_range(text);
  }
  CHECK(accepted > 0);  // the alphabet reaches valid flags too
}
