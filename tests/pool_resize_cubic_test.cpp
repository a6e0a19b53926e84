// Resize mode "cubic" (Keys' cubic convolution, cubic_coeff_a, exclude_outside,
// antialias, every coordinate_transformation_mode, axes, integer and fp16
// outputs). Random-input checks compare against hand-written loops built on
// the textbook kernel definition; fixed-input checks compare against values
// the ONNX reference implementation (onnx 1.23, op_resize.py) printed once.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <optional>

#include "reference/executor.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::attrs;
using graphc::testing::random_tensor;
using graphc::testing::test_rng;

namespace {

using Opt = std::optional<Tensor>;

// One Resize node reading runtime input "x" and constant roi/scales/sizes;
// shape inference, then the reference executor.
Expected<Tensor> resize(const Tensor& x, const std::vector<Opt>& consts, AttributeMap a) {
  testing::GraphBuilder b;
  std::vector<ValueId> ins = {b.input("x", x.dtype(), x.shape())};
  for (size_t i = 0; i < consts.size(); ++i)
    ins.push_back(consts[i] ? b.constant(fmt::format("c{}", i), *consts[i]) : kNoValue);
  b.output(b.node(OpKind::Resize, ins, std::move(a), 1, "n"));
  Graph g = b.graph();
  ShapeInferenceOptions opts;
  opts.evaluator = reference::constant_evaluator();
  RETURN_IF_ERROR(infer_shapes(g, opts));
  ASSIGN_OR_RETURN(auto outs, reference::execute(g, {{"x", x}}));
  return outs.at("n:0");
}

Tensor resize_ok(const Tensor& x, const std::vector<Opt>& consts, AttributeMap a) {
  auto r = resize(x, consts, std::move(a));
  INFO(r.status().message());
  REQUIRE(r.ok());
  return *r;
}

Attribute str(const char* s) { return Attribute::of_string(s); }
Attribute one(int64_t v) { return Attribute::of_int(v); }
Attribute flt(double v) { return Attribute::of_float(v); }
Attribute ints(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }
Tensor f32(std::vector<float> v) { return Tensor::from_f32(v, {static_cast<int64_t>(v.size())}); }
Tensor i64(std::vector<int64_t> v) { return Tensor::from_i64(v, {static_cast<int64_t>(v.size())}); }

// Keys' cubic convolution kernel, textbook piecewise form.
double keys(double t, double a) {
  t = std::fabs(t);
  if (t <= 1) return (a + 2) * t * t * t - (a + 3) * t * t + 1;
  if (t < 2) return a * t * t * t - 5 * a * t * t + 8 * a * t - 4 * a;
  return 0;
}

// Source coordinate of output j for the plain modes (scale = out/in as the
// spec's float scale; out_w = scale * in).
double source(const std::string& mode, int64_t j, double scale, int64_t in) {
  const double out_w = scale * static_cast<double>(in);
  const double y = static_cast<double>(j);
  if (mode == "asymmetric") return y / scale;
  if (mode == "align_corners") return out_w == 1 ? 0 : y * (in - 1) / (out_w - 1);
  if (mode == "pytorch_half_pixel") return out_w == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
  return (y + 0.5) / scale - 0.5;  // half_pixel
}

// Weighted taps of one output sample on an axis of length `in`: every
// integer position i with a nonzero filter value, read edge-clamped;
// `support_scale` < 1 stretches the kernel (antialias). exclude_outside drops
// the taps outside [0, in) and renormalises.
std::vector<std::pair<int64_t, double>> cubic_taps(double src, int64_t in, double a,
                                                   bool exclude_outside,
                                                   double support_scale = 1.0) {
  std::vector<std::pair<int64_t, double>> taps;
  double sum = 0;
  const auto c = static_cast<int64_t>(std::floor(src));
  for (int64_t i = c - 12; i <= c + 12; ++i) {
    double w = keys((static_cast<double>(i) - src) * support_scale, a);
    if (w == 0 || (exclude_outside && (i < 0 || i >= in))) continue;
    taps.emplace_back(std::clamp<int64_t>(i, 0, in - 1), w);
    sum += w;
  }
  if (support_scale != 1.0 || exclude_outside)
    for (auto& t : taps) t.second /= sum;
  return taps;
}

}  // namespace

TEST_CASE("Resize cubic 1-D matches Keys' convolution for each coordinate mode", "[pool_resize]") {
  // y[j] = sum_i k_a(i - src(j)) x[clamp(i)] over the 4 taps around src, for
  // half_pixel / asymmetric / align_corners / pytorch_half_pixel, up and
  // down scales, a = -0.75 (default) and -0.5, with and without
  // exclude_outside (weights of taps outside the input dropped, renormalised).
  const int64_t W = 7;
  for (const char* mode : {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"})
    for (float scale : {2.25f, 0.75f, 1.5f, 0.4f})
      for (double a : {-0.75, -0.5})
        for (bool excl : {false, true}) {
          INFO(mode << " scale " << scale << " a " << a << " exclude_outside " << excl);
          Tensor x = random_tensor(DType::kFloat64, {2, W}, test_rng());
          AttributeMap at = attrs({{"mode", str("cubic")},
                                   {"coordinate_transformation_mode", str(mode)},
                                   {"exclude_outside", one(excl ? 1 : 0)}});
          if (a != -0.75) at.set("cubic_coeff_a", flt(a));
          Tensor y = resize_ok(x, {Opt{}, f32({1, scale})}, at);
          const auto OW = static_cast<int64_t>(std::floor(W * static_cast<double>(scale)));
          REQUIRE(y.shape() == Shape{2, OW});
          for (int64_t r = 0; r < 2; ++r)
            for (int64_t j = 0; j < OW; ++j) {
              double want = 0;
              for (auto [i, w] : cubic_taps(source(mode, j, scale, W), W, a, excl))
                want += w * x.get_f64(r * W + i);
              CHECK(y.get_f64(r * OW + j) == Approx(want).margin(1e-9));
            }
        }
}

TEST_CASE("Resize bicubic NCHW is the separable 2-D Keys filter", "[pool_resize]") {
  // float32 1x2x5x6 with scales (1, 1, 1.6, 0.5): each output is the double
  // sum over the 4x4 neighbourhood of k(dy) * k(dx) * x, edge-clamped.
  const int64_t H = 5, W = 6;
  Tensor x = random_tensor(DType::kFloat32, {1, 2, H, W}, test_rng());
  Tensor y = resize_ok(x, {Opt{}, f32({1, 1, 1.6f, 0.5f})}, attrs({{"mode", str("cubic")}}));
  const int64_t OH = 8, OW = 3;
  REQUIRE(y.shape() == Shape{1, 2, OH, OW});
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j) {
        double want = 0;
        for (auto [p, wy] : cubic_taps(source("half_pixel", i, 1.6f, H), H, -0.75, false))
          for (auto [q, wx] : cubic_taps(source("half_pixel", j, 0.5f, W), W, -0.75, false))
            want += wy * wx * x.get_f64((c * H + p) * W + q);
        CHECK(y.get_f64((c * OH + i) * OW + j) == Approx(want).margin(1e-5));
      }
}

TEST_CASE("Resize cubic antialias stretches the kernel by 1/scale when downsampling",
          "[pool_resize]") {
  // Downsampling by s < 1: weights proportional to k(s * (i - src)) over every
  // i with a nonzero value (|i - src| < 2 / s), normalised to sum 1, taps read
  // edge-clamped (or dropped with exclude_outside). Upsampling: plain cubic.
  const int64_t W = 13;
  for (int64_t OW : {6, 4, 9})
    for (bool excl : {false, true}) {
      INFO("output " << OW << " exclude_outside " << excl);
      Tensor x = random_tensor(DType::kFloat64, {1, 2, W}, test_rng());
      Tensor y = resize_ok(x, {Opt{}, Opt{}, i64({1, 2, OW})},
                           attrs({{"mode", str("cubic")},
                                  {"antialias", one(1)},
                                  {"exclude_outside", one(excl ? 1 : 0)}}));
      REQUIRE(y.shape() == Shape{1, 2, OW});
      const double s = static_cast<double>(OW) / W;
      for (int64_t r = 0; r < 2; ++r)
        for (int64_t j = 0; j < OW; ++j) {
          double want = 0;
          for (auto [i, w] : cubic_taps(source("half_pixel", j, s, W), W, -0.75, excl, s))
            want += w * x.get_f64(r * W + i);
          CHECK(y.get_f64(r * OW + j) == Approx(want).margin(1e-9));
        }
    }
  Tensor x = random_tensor(DType::kFloat32, {1, 5}, test_rng());
  Tensor up =
      resize_ok(x, {Opt{}, f32({1, 2.5f})}, attrs({{"mode", str("cubic")}, {"antialias", one(1)}}));
  Tensor plain = resize_ok(x, {Opt{}, f32({1, 2.5f})}, attrs({{"mode", str("cubic")}}));
  CHECK(testing::max_abs_diff(up, plain) < 1e-6);
}

TEST_CASE("Resize cubic tf_crop_and_resize with axes on a 3-D tensor", "[pool_resize]") {
  // X 4x3x6, axes (2, 0), sizes (5, 3), roi starts (-0.1, 0.2) ends (1.1, 0.9):
  // src = r0*(in-1) + j*(r1-r0)*(in-1)/(out-1); an output whose source lies
  // outside [0, in-1] on either resized axis is extrapolation_value (-3),
  // otherwise the separable cubic sum. Axis 1 is untouched.
  const int64_t A = 4, B = 3, C = 6, OA = 3, OC = 5;
  Tensor x = random_tensor(DType::kFloat32, {A, B, C}, test_rng());
  const float rc0 = -0.1f, ra0 = 0.2f, rc1 = 1.1f, ra1 = 0.9f;  // axis 2 first, as in axes
  Tensor roi = f32({rc0, ra0, rc1, ra1});
  Tensor y = resize_ok(x, {roi, Opt{}, i64({OC, OA})},
                       attrs({{"mode", str("cubic")},
                              {"axes", ints({2, 0})},
                              {"coordinate_transformation_mode", str("tf_crop_and_resize")},
                              {"extrapolation_value", flt(-3)}}));
  REQUIRE(y.shape() == Shape{OA, B, OC});
  auto src = [](int64_t j, double r0, double r1, int64_t in, int64_t out) {
    return r0 * (in - 1) + static_cast<double>(j) * (r1 - r0) * (in - 1) / (out - 1);
  };
  int extrapolated = 0;
  for (int64_t i = 0; i < OA; ++i)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t k = 0; k < OC; ++k) {
        const double sa = src(i, ra0, ra1, A, OA), sc = src(k, rc0, rc1, C, OC);
        const double got = y.get_f64((i * B + b) * OC + k);
        if (sa < 0 || sa > A - 1 || sc < 0 || sc > C - 1) {
          ++extrapolated;
          CHECK(got == Approx(-3).margin(1e-5));
          continue;
        }
        double want = 0;
        for (auto [p, wa] : cubic_taps(sa, A, -0.75, false))
          for (auto [q, wc] : cubic_taps(sc, C, -0.75, false))
            want += wa * wc * x.get_f64((p * B + b) * C + q);
        CHECK(got == Approx(want).margin(1e-5));
      }
  CHECK(extrapolated == 2 * OA * B);  // the first and last columns of axis 2
}

TEST_CASE("Resize cubic on integers rounds half to even and saturates, fp16 in float",
          "[pool_resize]") {
  // Cubic overshoots at steps: uint8 0/255 steps go below 0 and above 255 and
  // clamp; int32 outputs round to nearest (half to even); fp16 stores the float
  // result rounded to fp16.
  Tensor u(DType::kUInt8, {1, 6});
  const int64_t vals[] = {0, 255, 255, 0, 0, 255};
  for (int64_t i = 0; i < 6; ++i) u.set_i64(i, vals[i]);
  auto want_1d = [](const Tensor& x, int64_t W, double scale, int64_t j) {
    double v = 0;
    for (auto [i, w] : cubic_taps(source("half_pixel", j, scale, W), W, -0.75, false))
      v += w * x.get_f64(i);
    return v;
  };
  Tensor yu = resize_ok(u, {Opt{}, f32({1, 2})}, attrs({{"mode", str("cubic")}}));
  REQUIRE(yu.shape() == Shape{1, 12});
  bool clamped_low = false, clamped_high = false;
  for (int64_t j = 0; j < 12; ++j) {
    double v = want_1d(u, 6, 2.0, j);
    clamped_low |= v < 0;
    clamped_high |= v > 255;
    CHECK(yu.get_i64(j) == static_cast<int64_t>(std::clamp(std::nearbyint(v), 0.0, 255.0)));
  }
  CHECK(clamped_low);
  CHECK(clamped_high);

  Tensor xi = random_tensor(DType::kInt32, {1, 5}, test_rng(), -1000, 1000);
  Tensor yi = resize_ok(xi, {Opt{}, f32({1, 2.5f})}, attrs({{"mode", str("cubic")}}));
  REQUIRE(yi.shape() == Shape{1, 12});
  for (int64_t j = 0; j < 12; ++j)
    CHECK(yi.get_i64(j) == static_cast<int64_t>(std::nearbyint(want_1d(xi, 5, 2.5, j))));

  Tensor xh = random_tensor(DType::kFloat16, {1, 5}, test_rng());
  Tensor yh = resize_ok(xh, {Opt{}, f32({1, 2.5f})}, attrs({{"mode", str("cubic")}}));
  REQUIRE(yh.dtype() == DType::kFloat16);
  Tensor want(DType::kFloat16, {1, 12});
  for (int64_t j = 0; j < 12; ++j) want.set_f64(j, want_1d(xh, 5, 2.5, j));
  CHECK(testing::max_abs_diff(yh, want) <= 1e-3);
}

TEST_CASE("Resize cubic matches values printed by the ONNX reference implementation",
          "[pool_resize]") {
  // Input 1x7 [0.5, -1.25, 2, 0.75, -0.5, 1.5, 3] (float64); expected outputs
  // from onnx.reference (op_resize.py, onnx 1.23), computed once.
  Tensor x(DType::kFloat64, {1, 7});
  const double xs[] = {0.5, -1.25, 2.0, 0.75, -0.5, 1.5, 3.0};
  for (int64_t i = 0; i < 7; ++i) x.set_f64(i, xs[i]);
  struct Case {
    const char* what;
    std::vector<Opt> consts;
    AttributeMap a;
    std::vector<double> want;
  };
  const std::vector<Case> cases = {
      {"scales 0.6",
       {Opt{}, f32({1, 0.6f})},
       attrs({{"mode", str("cubic")}}),
       {-0.23148062825202942, 1.9999996721744537, -0.3981494754552841, 2.1944447457790375}},
      {"scales 0.6 antialias",
       {Opt{}, f32({1, 0.6f})},
       attrs({{"mode", str("cubic")}, {"antialias", one(1)}}),
       {-0.26987957487365966, 1.0250002040040858, 0.08795170165111282, 1.8933729409739586}},
      {"sizes 3 antialias, a=-0.5, exclude_outside",
       {Opt{}, Opt{}, i64({1, 3})},
       attrs({{"mode", str("cubic")},
              {"antialias", one(1)},
              {"cubic_coeff_a", flt(-0.5)},
              {"exclude_outside", one(1)}}),
       {0.07963733596912123, 0.6324789458982538, 1.6421367195851166}},
      {"tf_crop_and_resize roi (-0.1, 1.2), sizes 5, extrapolation 9",
       {f32({0, -0.1f, 1, 1.2f}), Opt{}, i64({1, 5})},
       attrs({{"mode", str("cubic")},
              {"coordinate_transformation_mode", str("tf_crop_and_resize")},
              {"extrapolation_value", flt(9)}}),
       {9.0, -0.28739041090011597, 0.1689375638961792, 2.050783395767212, 9.0}},
      {"half_pixel_symmetric scales 1.7",
       {Opt{}, f32({1, 1.7f})},
       attrs({{"mode", str("cubic")},
              {"coordinate_transformation_mode", str("half_pixel_symmetric")}}),
       {0.4104921966791153, -1.0219317376613617, -0.7035925537347794, 1.581416755914688,
        1.9394461512565613, 0.75, -0.30587124824523926, -0.33513104915618896, 0.8825554251670837,
        2.225880444049835, 2.9349681437015533}},
      {"pytorch_half_pixel sizes 4, a=-0.6",
       {Opt{}, Opt{}, i64({1, 4})},
       attrs({{"mode", str("cubic")},
              {"coordinate_transformation_mode", str("pytorch_half_pixel")},
              {"cubic_coeff_a", flt(-0.6f)}}),
       {-0.2866211384534836, 2.0816408693790436, -0.5098641812801361, 2.5781241953372955}},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    Tensor y = resize_ok(x, c.consts, c.a);
    REQUIRE(y.numel() == static_cast<int64_t>(c.want.size()));
    for (size_t i = 0; i < c.want.size(); ++i)
      CHECK(y.get_f64(static_cast<int64_t>(i)) == Approx(c.want[i]).margin(1e-12));
  }
}
