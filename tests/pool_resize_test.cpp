// Pooling and resampling: MaxPool, AveragePool, GlobalAveragePool,
// GlobalMaxPool, Resize (and Upsample / Resize-10 through the importer).
// Every kernel check compares fresh random inputs against a hand-written
// loop or hand-computed values, not against graphc's own helpers.
#include <catch2/catch.hpp>
#include <cmath>
#include <optional>

#include "importer/importer.h"
#include "onnx/onnx.pb.h"
#include "reference/executor.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::attrs;
using graphc::testing::random_tensor;
using graphc::testing::test_rng;

namespace {

using Opt = std::optional<Tensor>;

// Builds one `op` node reading runtime input "x" and constants `consts` (for
// inputs 1..), runs shape inference and the reference executor.
Expected<std::vector<Tensor>> run_op(OpKind op, const Tensor& x, const std::vector<Opt>& consts,
                                     AttributeMap a, int num_outputs = 1) {
  testing::GraphBuilder b;
  std::vector<ValueId> ins = {b.input("x", x.dtype(), x.shape())};
  for (size_t i = 0; i < consts.size(); ++i)
    ins.push_back(consts[i] ? b.constant(fmt::format("c{}", i), *consts[i]) : kNoValue);
  ValueId first = b.node(op, ins, std::move(a), num_outputs, "n");
  for (int o = 0; o < num_outputs; ++o) b.output(first + o);
  Graph g = b.graph();
  ShapeInferenceOptions opts;
  opts.evaluator = reference::constant_evaluator();
  RETURN_IF_ERROR(infer_shapes(g, opts));
  ASSIGN_OR_RETURN(auto outs, reference::execute(g, {{"x", x}}));
  std::vector<Tensor> result;
  for (int o = 0; o < num_outputs; ++o) result.push_back(outs.at("n:" + std::to_string(o)));
  return result;
}

Tensor run1(OpKind op, const Tensor& x, const std::vector<Opt>& consts, AttributeMap a) {
  auto r = run_op(op, x, consts, std::move(a));
  INFO(r.status().message());
  REQUIRE(r.ok());
  return r.value()[0];
}

Status shape_error(OpKind op, DType dt, const Shape& shape, const std::vector<Opt>& consts,
                   AttributeMap a, int num_outputs = 1) {
  Tensor x(dt, shape);
  auto r = run_op(op, x, consts, std::move(a), num_outputs);
  return r.ok() ? Status::ok_status() : r.status();
}

Attribute ints(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }
Attribute str(const char* s) { return Attribute::of_string(s); }
Attribute one(int64_t v) { return Attribute::of_int(v); }
Tensor f32(std::vector<float> v) { return Tensor::from_f32(v, {static_cast<int64_t>(v.size())}); }
Tensor i64(std::vector<int64_t> v) { return Tensor::from_i64(v, {static_cast<int64_t>(v.size())}); }

// Independent 2-D pooling over N x C x H x W with explicit pads (no ceil
// mode): the obvious nested loops.
struct Pool2d {
  int64_t kh, kw, sh = 1, sw = 1, pt = 0, pl = 0, pb = 0, pr = 0, dh = 1, dw = 1;
};

}  // namespace

TEST_CASE("MaxPool 2x2 stride 2 matches a hand loop, with row-major Indices", "[pool_resize]") {
  // Checks values and the flattened Indices (batch/channel offset included).
  Tensor x = random_tensor(DType::kFloat32, {2, 3, 6, 8}, test_rng());
  auto r = run_op(OpKind::MaxPool, x, {},
                  attrs({{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}}), 2);
  REQUIRE(r.ok());
  const Tensor& y = r.value()[0];
  const Tensor& idx = r.value()[1];
  REQUIRE(y.shape() == Shape{2, 3, 3, 4});
  REQUIRE(idx.dtype() == DType::kInt64);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 4; ++j) {
          double best = -1e30;
          int64_t arg = -1;
          for (int64_t a = 0; a < 2; ++a)
            for (int64_t b = 0; b < 2; ++b) {
              int64_t flat = ((n * 3 + c) * 6 + 2 * i + a) * 8 + 2 * j + b;
              if (x.get_f64(flat) > best) best = x.get_f64(flat), arg = flat;
            }
          int64_t o = ((n * 3 + c) * 3 + i) * 4 + j;
          CHECK(y.get_f64(o) == best);
          CHECK(idx.get_i64(o) == arg);
        }
}

TEST_CASE("MaxPool storage_order=1 gives column-major Indices", "[pool_resize]") {
  // Indices = c*H*W + h + w*H for a 2-D input stored column-major.
  Tensor x = random_tensor(DType::kFloat32, {1, 2, 4, 5}, test_rng());
  auto r = run_op(OpKind::MaxPool, x, {},
                  attrs({{"kernel_shape", ints({2, 3})}, {"storage_order", one(1)}}), 2);
  REQUIRE(r.ok());
  const Tensor& y = r.value()[0];
  const Tensor& idx = r.value()[1];
  REQUIRE(y.shape() == Shape{1, 2, 3, 3});
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        double best = -1e30;
        int64_t bh = 0, bw = 0;
        for (int64_t a = 0; a < 2; ++a)
          for (int64_t b = 0; b < 3; ++b) {
            double v = x.get_f64((c * 4 + i + a) * 5 + j + b);
            if (v > best) best = v, bh = i + a, bw = j + b;
          }
        int64_t o = (c * 3 + i) * 3 + j;
        CHECK(y.get_f64(o) == best);
        CHECK(idx.get_i64(o) == c * 20 + bh + bw * 4);
      }
}

TEST_CASE("MaxPool with pads, strides and dilations on int8, uint8, int64, fp16", "[pool_resize]") {
  // Hand loop that skips padded positions; integers must be exact.
  Pool2d p{3, 2, 2, 1, 1, 0, 2, 1, 2, 2};
  const int64_t H = 7, W = 6;
  // out = floor((in + pads - ((k-1)*d+1)) / s) + 1
  const int64_t OH = (H + p.pt + p.pb - ((p.kh - 1) * p.dh + 1)) / p.sh + 1;
  const int64_t OW = (W + p.pl + p.pr - ((p.kw - 1) * p.dw + 1)) / p.sw + 1;
  for (auto [dt, lo, hi] : {std::tuple{DType::kInt8, -128.0, 127.0},
                            {DType::kUInt8, 0.0, 255.0},
                            {DType::kInt64, -9e15, 9e15},
                            {DType::kFloat16, -4.0, 4.0}}) {
    Tensor x = random_tensor(dt, {2, 2, H, W}, test_rng(), lo, hi);
    if (dt == DType::kInt64) x.set_i64(5, (int64_t{1} << 60) + 1);  // not representable in double
    Tensor y = run1(OpKind::MaxPool, x, {},
                    attrs({{"kernel_shape", ints({p.kh, p.kw})},
                           {"strides", ints({p.sh, p.sw})},
                           {"pads", ints({p.pt, p.pl, p.pb, p.pr})},
                           {"dilations", ints({p.dh, p.dw})}}));
    REQUIRE(y.shape() == Shape{2, 2, OH, OW});
    REQUIRE(y.dtype() == dt);
    for (int64_t c = 0; c < 4; ++c)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          int64_t best = -1;
          for (int64_t a = 0; a < p.kh; ++a)
            for (int64_t b = 0; b < p.kw; ++b) {
              int64_t h = i * p.sh - p.pt + a * p.dh, w = j * p.sw - p.pl + b * p.dw;
              if (h < 0 || h >= H || w < 0 || w >= W) continue;
              int64_t f = (c * H + h) * W + w;
              if (best < 0) {
                best = f;
                continue;
              }
              bool gt = dt == DType::kFloat16 ? x.get_f64(f) > x.get_f64(best)
                                              : x.get_i64(f) > x.get_i64(best);
              if (gt) best = f;
            }
          int64_t o = (c * OH + i) * OW + j;
          if (dt == DType::kFloat16)
            CHECK(y.get_f64(o) == x.get_f64(best));
          else
            CHECK(y.get_i64(o) == x.get_i64(best));
        }
  }
}

TEST_CASE("AveragePool with pads, both count_include_pad values", "[pool_resize]") {
  // count_include_pad=1 divides by kh*kw, 0 by the number of real elements.
  const int64_t H = 5, W = 6, OH = (H + 2 - 3) / 2 + 1, OW = (W + 2 - 3) / 2 + 1;
  for (int64_t cip : {0, 1}) {
    for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kFloat16}) {
      Tensor x = random_tensor(dt, {1, 3, H, W}, test_rng());
      Tensor y = run1(OpKind::AveragePool, x, {},
                      attrs({{"kernel_shape", ints({3, 3})},
                             {"strides", ints({2, 2})},
                             {"pads", ints({1, 1, 1, 1})},
                             {"count_include_pad", one(cip)}}));
      REQUIRE(y.shape() == Shape{1, 3, OH, OW});
      for (int64_t c = 0; c < 3; ++c)
        for (int64_t i = 0; i < OH; ++i)
          for (int64_t j = 0; j < OW; ++j) {
            double sum = 0;
            int n = 0;
            for (int64_t a = 0; a < 3; ++a)
              for (int64_t b = 0; b < 3; ++b) {
                int64_t h = i * 2 - 1 + a, w = j * 2 - 1 + b;
                if (h < 0 || h >= H || w < 0 || w >= W) continue;
                sum += x.get_f64((c * H + h) * W + w);
                ++n;
              }
            double want = sum / (cip ? 9 : n);
            double tol = dt == DType::kFloat16 ? 2e-3 : 1e-6;
            CHECK(y.get_f64((c * OH + i) * OW + j) == Approx(want).margin(tol));
          }
    }
  }
}

TEST_CASE("AveragePool ceil_mode averages partial windows over their valid part", "[pool_resize]") {
  // x = 1..16 in a 4x4 grid, kernel 3, stride 2, ceil_mode: windows at 2 run
  // past the input; by hand: [[6, 7.5], [12, 13.5]] for either count_include_pad.
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i + 1);
  Tensor x = Tensor::from_f32(v, {1, 1, 4, 4});
  for (int64_t cip : {0, 1}) {
    Tensor y = run1(OpKind::AveragePool, x, {},
                    attrs({{"kernel_shape", ints({3, 3})},
                           {"strides", ints({2, 2})},
                           {"ceil_mode", one(1)},
                           {"count_include_pad", one(cip)}}));
    REQUIRE(y.shape() == Shape{1, 1, 2, 2});
    CHECK(y.to_f64_vector() == std::vector<double>{6, 7.5, 12, 13.5});
  }
  // 2x2 input, pads 1, kernel 3, stride 3, ceil_mode: ceil(1/3)+1 = 2 windows,
  // but the second would start at 3 >= 2 + 1 (past input and left pad) and is
  // dropped; the one window [-1, 1]^2 holds 9 padded positions, so with
  // count_include_pad=1 the output is (sum of the 4 values) / 9.
  Tensor s = random_tensor(DType::kFloat32, {1, 1, 2, 2}, test_rng());
  Tensor y = run1(OpKind::AveragePool, s, {},
                  attrs({{"kernel_shape", ints({3, 3})},
                         {"strides", ints({3, 3})},
                         {"pads", ints({1, 1, 1, 1})},
                         {"ceil_mode", one(1)},
                         {"count_include_pad", one(1)}}));
  REQUIRE(y.shape() == Shape{1, 1, 1, 1});
  double sum = 0;
  for (int i = 0; i < 4; ++i) sum += s.get_f64(i);
  CHECK(y.get_f64(0) == Approx(sum / 9).margin(1e-6));
}

TEST_CASE("MaxPool ceil_mode output sizes follow the spec formula", "[pool_resize]") {
  // Sizes worked by hand from ceil((in + pads - ext) / s) + 1 and the
  // last-window rule.
  auto out_shape = [](int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe) {
    Tensor x = random_tensor(DType::kFloat32, {1, 1, in}, test_rng());
    Tensor y = run1(OpKind::MaxPool, x, {},
                    attrs({{"kernel_shape", ints({k})},
                           {"strides", ints({s})},
                           {"pads", ints({pb, pe})},
                           {"ceil_mode", one(1)}}));
    return y.shape()[2];
  };
  CHECK(out_shape(2, 1, 2, 0, 0) == 1);  // ceil(1/2)+1 = 2, but window 1 starts at 2 >= 2
  CHECK(out_shape(5, 2, 2, 0, 0) == 3);  // ceil(3/2)+1 = 3, last starts at 4 < 5
  CHECK(out_shape(6, 3, 2, 0, 0) == 3);  // ceil(3/2)+1 = 3
  CHECK(out_shape(4, 2, 3, 1, 1) == 2);  // ceil(4/3)+1 = 3, but 2*3 >= 4+1: drop -> 2
  CHECK(out_shape(7, 3, 2, 0, 0) == 3);  // exact: (7-3)/2+1 = 3
  CHECK(out_shape(2, 3, 3, 0, 0) == 1);  // ceil(-1/3)+1 = 1: one window [0, 2], tap 2 is outside
  // Floor mode with a kernel one larger than the input: floor(-1/1)+1 = 0, an empty output.
  Tensor x = random_tensor(DType::kFloat32, {1, 1, 5}, test_rng());
  CHECK(run1(OpKind::MaxPool, x, {}, attrs({{"kernel_shape", ints({6})}})).shape() ==
        Shape{1, 1, 0});
}

TEST_CASE("auto_pad SAME_UPPER, SAME_LOWER and VALID place the padding", "[pool_resize]") {
  // SAME with kernel 2 stride 1 pads one element: at the end (UPPER) or the
  // beginning (LOWER); VALID has none. Hand loops with those pads.
  const int64_t H = 4, W = 5;
  Tensor x = random_tensor(DType::kFloat32, {1, 2, H, W}, test_rng());
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    Tensor y = run1(OpKind::MaxPool, x, {},
                    attrs({{"kernel_shape", ints({2, 2})}, {"auto_pad", str(mode)}}));
    bool valid = std::string(mode) == "VALID";
    int64_t off = std::string(mode) == "SAME_LOWER" ? -1 : 0;
    int64_t OH = valid ? H - 1 : H, OW = valid ? W - 1 : W;
    REQUIRE(y.shape() == Shape{1, 2, OH, OW});
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          double best = -1e30;
          for (int64_t a = 0; a < 2; ++a)
            for (int64_t b = 0; b < 2; ++b) {
              int64_t h = i + off + a, w = j + off + b;
              if (h >= 0 && h < H && w >= 0 && w < W)
                best = std::max(best, x.get_f64((c * H + h) * W + w));
            }
          CHECK(y.get_f64((c * OH + i) * OW + j) == best);
        }
  }
  // SAME with stride 2: out = ceil(in / 2), average over real elements.
  Tensor z = run1(OpKind::AveragePool, x, {},
                  attrs({{"kernel_shape", ints({3, 3})},
                         {"strides", ints({2, 2})},
                         {"auto_pad", str("SAME_UPPER")}}));
  CHECK(z.shape() == Shape{1, 2, 2, 3});
}

TEST_CASE("1-D and 3-D pooling match hand loops", "[pool_resize]") {
  // 1-D average kernel 3 stride 1; 3-D max 2x2x2 stride 2.
  Tensor x1 = random_tensor(DType::kFloat32, {2, 3, 9}, test_rng());
  Tensor y1 = run1(OpKind::AveragePool, x1, {}, attrs({{"kernel_shape", ints({3})}}));
  REQUIRE(y1.shape() == Shape{2, 3, 7});
  for (int64_t c = 0; c < 6; ++c)
    for (int64_t i = 0; i < 7; ++i) {
      double want =
          (x1.get_f64(c * 9 + i) + x1.get_f64(c * 9 + i + 1) + x1.get_f64(c * 9 + i + 2)) / 3;
      CHECK(y1.get_f64(c * 7 + i) == Approx(want).margin(1e-6));
    }
  Tensor x3 = random_tensor(DType::kFloat64, {1, 2, 4, 6, 4}, test_rng());
  Tensor y3 = run1(OpKind::MaxPool, x3, {},
                   attrs({{"kernel_shape", ints({2, 2, 2})}, {"strides", ints({2, 2, 2})}}));
  REQUIRE(y3.shape() == Shape{1, 2, 2, 3, 2});
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t d = 0; d < 2; ++d)
      for (int64_t h = 0; h < 3; ++h)
        for (int64_t w = 0; w < 2; ++w) {
          double best = -1e30;
          for (int64_t a = 0; a < 2; ++a)
            for (int64_t b = 0; b < 2; ++b)
              for (int64_t e = 0; e < 2; ++e)
                best = std::max(best,
                                x3.get_f64(((c * 4 + 2 * d + a) * 6 + 2 * h + b) * 4 + 2 * w + e));
          CHECK(y3.get_f64(((c * 2 + d) * 3 + h) * 2 + w) == best);
        }
}

TEST_CASE("GlobalAveragePool and GlobalMaxPool reduce every spatial dim to 1", "[pool_resize]") {
  // Hand mean / max per (n, c) plane; fp16 computed in float.
  for (DType dt : {DType::kFloat32, DType::kFloat16}) {
    Tensor x = random_tensor(dt, {2, 3, 4, 5}, test_rng());
    Tensor avg = run1(OpKind::GlobalAveragePool, x, {}, {});
    Tensor mx = run1(OpKind::GlobalMaxPool, x, {}, {});
    REQUIRE(avg.shape() == Shape{2, 3, 1, 1});
    REQUIRE(mx.shape() == Shape{2, 3, 1, 1});
    for (int64_t c = 0; c < 6; ++c) {
      double sum = 0, best = -1e30;
      for (int64_t i = 0; i < 20; ++i) {
        sum += x.get_f64(c * 20 + i);
        best = std::max(best, x.get_f64(c * 20 + i));
      }
      CHECK(avg.get_f64(c) == Approx(sum / 20).margin(dt == DType::kFloat16 ? 2e-3 : 1e-6));
      CHECK(mx.get_f64(c) == best);
    }
  }
  Tensor x3 = random_tensor(DType::kFloat32, {1, 2, 3, 2, 2}, test_rng());
  CHECK(run1(OpKind::GlobalMaxPool, x3, {}, {}).shape() == Shape{1, 2, 1, 1, 1});
}

TEST_CASE("pooling rejects bad attributes with clear errors", "[pool_resize]") {
  // Each misuse is an error Status naming the problem, never a crash.
  auto err = [](AttributeMap a, Shape s = {1, 1, 5, 5}, DType dt = DType::kFloat32,
                OpKind op = OpKind::MaxPool) {
    Status st = shape_error(op, dt, s, {}, std::move(a));
    CHECK(!st.ok());
    return st.message();
  };
  CHECK_THAT(err({}), Catch::Contains("kernel_shape"));
  CHECK_THAT(err(attrs({{"kernel_shape", ints({2})}})), Catch::Contains("kernel_shape"));
  CHECK_THAT(err(attrs({{"kernel_shape", ints({2, 2})}, {"pads", ints({1, 1})}})),
             Catch::Contains("pads"));
  CHECK_THAT(err(attrs({{"kernel_shape", ints({2, 2})}, {"pads", ints({-1, 0, 0, 0})}})),
             Catch::Contains("pads"));
  CHECK_THAT(err(attrs({{"kernel_shape", ints({2, 2})}, {"strides", ints({0, 1})}})),
             Catch::Contains("strides"));
  CHECK_THAT(err(attrs({{"kernel_shape", ints({2, 0})}})), Catch::Contains("kernel_shape"));
  CHECK_THAT(err(attrs({{"kernel_shape", ints({2, 2})}, {"dilations", ints({1})}})),
             Catch::Contains("dilations"));
  CHECK_THAT(err(attrs({{"kernel_shape", ints({2, 2})}, {"auto_pad", str("SAME")}})),
             Catch::Contains("auto_pad"));
  CHECK_THAT(err(attrs({{"kernel_shape", ints({2, 2})}, {"ceil_mode", one(2)}})),
             Catch::Contains("ceil_mode"));
  CHECK_THAT(err(attrs({{"kernel_shape", ints({7, 7})}})), Catch::Contains("kernel extent"));
  CHECK_THAT(err(attrs({{"kernel_shape", ints({2})}}), {1, 5}), Catch::Contains("rank"));
  CHECK_THAT(err(attrs({{"kernel_shape", ints({2, 2})}, {"pads", ints({3, 0, 0, 0})}})),
             Catch::Contains("padding"));
  CHECK_THAT(err(attrs({{"kernel_shape", ints({2, 2})}}), {1, 1, 5, 5}, DType::kInt32,
                 OpKind::AveragePool),
             Catch::Contains("float"));
  CHECK_THAT(err({}, {1, 1, 5, 5}, DType::kInt64, OpKind::GlobalAveragePool),
             Catch::Contains("float"));
  CHECK_THAT(err(attrs({{"kernel_shape", ints({int64_t{1} << 40, 2})}})),
             Catch::Contains("kernel_shape"));
}

// ---------------------------------------------------------------- Resize

TEST_CASE("Resize nearest asymmetric floor copies int64 exactly", "[pool_resize]") {
  // out[i][j] = x[floor(i / 2)][floor(j / 3)]; values beyond 2^53 survive.
  Tensor x = random_tensor(DType::kInt64, {1, 2, 3, 2}, test_rng(), -1e18, 1e18);
  x.set_i64(0, (int64_t{1} << 62) + 3);
  Tensor y = run1(OpKind::Resize, x, {Opt{}, f32({1, 1, 2, 3})},
                  attrs({{"coordinate_transformation_mode", str("asymmetric")},
                         {"nearest_mode", str("floor")}}));
  REQUIRE(y.shape() == Shape{1, 2, 6, 6});
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t j = 0; j < 6; ++j)
        CHECK(y.get_i64((c * 6 + i) * 6 + j) == x.get_i64((c * 3 + i / 2) * 2 + j / 3));
}

TEST_CASE("Resize bilinear align_corners matches the textbook formula", "[pool_resize]") {
  // src = i * (in - 1) / (out - 1), blend the two neighbours in each axis.
  const int64_t H = 3, W = 4, OH = 5, OW = 7;
  Tensor x = random_tensor(DType::kFloat32, {1, 1, H, W}, test_rng());
  Tensor y = run1(
      OpKind::Resize, x, {Opt{}, Opt{}, i64({1, 1, OH, OW})},
      attrs({{"mode", str("linear")}, {"coordinate_transformation_mode", str("align_corners")}}));
  REQUIRE(y.shape() == Shape{1, 1, OH, OW});
  for (int64_t i = 0; i < OH; ++i)
    for (int64_t j = 0; j < OW; ++j) {
      double sy = static_cast<double>(i) * (H - 1) / (OH - 1),
             sx = static_cast<double>(j) * (W - 1) / (OW - 1);
      int64_t y0 = static_cast<int64_t>(sy), x0 = static_cast<int64_t>(sx);
      int64_t y1 = std::min(y0 + 1, H - 1), x1 = std::min(x0 + 1, W - 1);
      double fy = sy - y0, fx = sx - x0;
      auto at = [&](int64_t a, int64_t b) { return x.get_f64(a * W + b); };
      double want = (1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x1)) +
                    fy * ((1 - fx) * at(y1, x0) + fx * at(y1, x1));
      CHECK(y.get_f64(i * OW + j) == Approx(want).margin(1e-5));
    }
}

TEST_CASE("Resize linear half_pixel (up and down) matches a clamped formula", "[pool_resize]") {
  // src = (i + 0.5) / scale - 0.5 clamped into [0, in-1] (edge replication).
  for (float scale : {2.5f, 0.6f, 1.75f}) {
    const int64_t W = 6;
    const auto OW = static_cast<int64_t>(std::floor(W * static_cast<double>(scale)));
    Tensor x = random_tensor(DType::kFloat64, {2, W}, test_rng());
    Tensor y = run1(OpKind::Resize, x, {Opt{}, f32({1, scale})}, attrs({{"mode", str("linear")}}));
    REQUIRE(y.shape() == Shape{2, OW});
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t j = 0; j < OW; ++j) {
        double s = std::clamp((j + 0.5) / static_cast<double>(scale) - 0.5, 0.0,
                              static_cast<double>(W - 1));
        auto x0 = static_cast<int64_t>(std::floor(s));
        int64_t x1 = std::min(x0 + 1, W - 1);
        double want = (1 - (s - x0)) * x.get_f64(r * W + x0) + (s - x0) * x.get_f64(r * W + x1);
        CHECK(y.get_f64(r * OW + j) == Approx(want).margin(1e-9));
      }
  }
}

TEST_CASE("Resize nearest modes pick the rounded source index", "[pool_resize]") {
  // half_pixel source coordinates, rounded per nearest_mode, clamped.
  const int64_t W = 5, OW = 8;
  Tensor x = random_tensor(DType::kUInt8, {1, W}, test_rng(), 0, 255);
  const double s = static_cast<double>(OW) / W;
  for (const char* mode : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
    Tensor y =
        run1(OpKind::Resize, x, {Opt{}, Opt{}, i64({1, OW})}, attrs({{"nearest_mode", str(mode)}}));
    for (int64_t j = 0; j < OW; ++j) {
      double src = (j + 0.5) / s - 0.5;
      std::string m = mode;
      double fl = std::floor(src), frac = src - fl;
      double pick = m == "floor"                ? fl
                    : m == "ceil"               ? std::ceil(src)
                    : m == "round_prefer_floor" ? (frac <= 0.5 ? fl : fl + 1)
                                                : (frac < 0.5 ? fl : fl + 1);
      auto k = std::clamp<int64_t>(static_cast<int64_t>(pick), 0, W - 1);
      CHECK(y.get_i64(j) == x.get_i64(k));
    }
  }
}

TEST_CASE("Resize tf_crop_and_resize uses roi and extrapolation_value", "[pool_resize]") {
  // x_src = r0*(in-1) + i*(r1-r0)*(in-1)/(out-1); outside [0, in-1] -> 7.5.
  const int64_t W = 5, OW = 4;
  Tensor x = random_tensor(DType::kFloat32, {1, W}, test_rng());
  const double r0 = 0.4, r1 = 1.3;
  Tensor roi = Tensor::from_f32({0.f, 0.4f, 1.f, 1.3f}, {4});
  Tensor y = run1(OpKind::Resize, x, {roi, Opt{}, i64({1, OW})},
                  attrs({{"mode", str("linear")},
                         {"coordinate_transformation_mode", str("tf_crop_and_resize")},
                         {"extrapolation_value", Attribute::of_float(7.5)}}));
  for (int64_t j = 0; j < OW; ++j) {
    double s = static_cast<float>(r0) * (W - 1) +
               j * (static_cast<float>(r1) - static_cast<float>(r0)) * (W - 1) / (OW - 1);
    if (s > W - 1) {
      CHECK(y.get_f64(j) == 7.5);
      continue;
    }
    auto x0 = static_cast<int64_t>(std::floor(s));
    int64_t x1 = std::min(x0 + 1, W - 1);
    double want = (1 - (s - x0)) * x.get_f64(x0) + (s - x0) * x.get_f64(x1);
    CHECK(y.get_f64(j) == Approx(want).margin(1e-5));
  }
  CHECK(y.get_f64(OW - 1) == 7.5);  // 0.4*4 + 3*0.9*4/3 = 5.2 > 4
}

TEST_CASE("Resize axes and keep_aspect_ratio_policy size the output", "[pool_resize]") {
  // X 1x1x4x6, sizes (3,3) on axes (2,3): not_larger scale = min(3/4, 3/6) = 0.5
  // -> 2x3; not_smaller scale = 0.75 -> 3x5 (round half up of 4.5); stretch 3x3.
  Tensor x = random_tensor(DType::kFloat32, {1, 1, 4, 6}, test_rng());
  auto shape_for = [&](const char* policy) {
    return run1(OpKind::Resize, x, {Opt{}, Opt{}, i64({3, 3})},
                attrs({{"axes", ints({2, -1})}, {"keep_aspect_ratio_policy", str(policy)}}))
        .shape();
  };
  CHECK(shape_for("not_larger") == Shape{1, 1, 2, 3});
  CHECK(shape_for("not_smaller") == Shape{1, 1, 3, 5});
  CHECK(shape_for("stretch") == Shape{1, 1, 3, 3});
  // axes (3, 2) with scales (2, 1): only the last dim doubles; nearest
  // half_pixel round_prefer_floor at scale 2 copies x[j / 2].
  Tensor y = run1(OpKind::Resize, x, {Opt{}, f32({2, 1})}, attrs({{"axes", ints({3, 2})}}));
  REQUIRE(y.shape() == Shape{1, 1, 4, 12});
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 12; ++j) CHECK(y.get_f64(i * 12 + j) == x.get_f64(i * 6 + j / 2));
}

TEST_CASE("Resize antialias linear downsampling uses a stretched triangle filter",
          "[pool_resize]") {
  // Scale 1/2, half_pixel: output j samples x = 2j + 0.5 with weights
  // proportional to 1 - |i - x| / 2 over i in x-2..x+2: 1/8, 3/8, 3/8, 1/8
  // (interior outputs; the border ones replicate edges).
  const int64_t W = 12;
  Tensor x = random_tensor(DType::kFloat32, {1, W}, test_rng());
  Tensor y = run1(OpKind::Resize, x, {Opt{}, f32({1, 0.5f})},
                  attrs({{"mode", str("linear")}, {"antialias", one(1)}}));
  REQUIRE(y.shape() == Shape{1, 6});
  for (int64_t j = 1; j < 5; ++j) {
    int64_t c = 2 * j;  // x = c + 0.5
    double want =
        (x.get_f64(c - 1) + 3 * x.get_f64(c) + 3 * x.get_f64(c + 1) + x.get_f64(c + 2)) / 8;
    CHECK(y.get_f64(j) == Approx(want).margin(1e-6));
  }
  // Upsampling with antialias is plain linear.
  Tensor up = run1(OpKind::Resize, x, {Opt{}, f32({1, 2})},
                   attrs({{"mode", str("linear")}, {"antialias", one(1)}}));
  Tensor plain = run1(OpKind::Resize, x, {Opt{}, f32({1, 2})}, attrs({{"mode", str("linear")}}));
  CHECK(testing::max_abs_diff(up, plain) < 1e-12);
}

TEST_CASE("Resize linear on int8 rounds and saturates, bf16 computes in float", "[pool_resize]") {
  // 1-D int8 [-128, 127] doubled with align_corners: midpoint -0.5 rounds to
  // even (0); bf16 output equals the float blend rounded to bf16.
  Tensor x(DType::kInt8, {1, 2});
  x.set_i64(0, -128);
  x.set_i64(1, 127);
  Tensor y = run1(
      OpKind::Resize, x, {Opt{}, Opt{}, i64({1, 3})},
      attrs({{"mode", str("linear")}, {"coordinate_transformation_mode", str("align_corners")}}));
  CHECK(y.to_i64_vector() == std::vector<int64_t>{-128, 0, 127});
  Tensor b = random_tensor(DType::kBFloat16, {1, 2}, test_rng());
  Tensor yb = run1(
      OpKind::Resize, b, {Opt{}, Opt{}, i64({1, 3})},
      attrs({{"mode", str("linear")}, {"coordinate_transformation_mode", str("align_corners")}}));
  Tensor want(DType::kBFloat16, {1, 1});
  want.set_f64(0, (b.get_f64(0) + b.get_f64(1)) / 2);
  CHECK(yb.get_f64(1) == want.get_f64(0));
}

TEST_CASE("Resize rejects bad inputs with clear errors", "[pool_resize]") {
  // Invalid models (bad mode, scales/sizes/axes/roi, attributes, bool input to
  // an interpolating mode) fail with a message naming the culprit.
  Shape s = {1, 1, 4, 4};
  auto err = [&](std::vector<Opt> c, AttributeMap a, DType dt = DType::kFloat32) {
    Status st = shape_error(OpKind::Resize, dt, s, c, std::move(a));
    CHECK(!st.ok());
    return st;
  };
  Status bad_mode = err({Opt{}, f32({1, 1, 2, 2})}, attrs({{"mode", str("bicubic")}}));
  CHECK(bad_mode.code() == ErrorCode::kInvalidModel);
  CHECK_THAT(bad_mode.message(), Catch::Contains("bicubic"));
  CHECK_THAT(
      err({Opt{}, f32({1, 1, 2, 2})}, attrs({{"mode", str("cubic")}}), DType::kBool).message(),
      Catch::Contains("cubic"));
  CHECK_THAT(
      err({Opt{}, f32({1, 1, 2, 2})},
          attrs({{"mode", str("cubic")}, {"cubic_coeff_a", Attribute::of_float(std::nan(""))}}))
          .message(),
      Catch::Contains("cubic_coeff_a"));
  CHECK_THAT(
      err({Opt{}, f32({1, 1, 2, 2})}, attrs({{"mode", str("cubic")}, {"exclude_outside", one(2)}}))
          .message(),
      Catch::Contains("exclude_outside"));
  CHECK_THAT(err({Opt{}, f32({1, 1, 2, 2}), i64({1, 1, 8, 8})}, {}).message(),
             Catch::Contains("both"));
  CHECK_THAT(err({}, {}).message(), Catch::Contains("scales and sizes"));
  CHECK_THAT(err({Opt{}, f32({2, 2})}, {}).message(), Catch::Contains("scales"));
  CHECK_THAT(err({Opt{}, f32({1, 1, 0, 2})}, {}).message(), Catch::Contains("> 0"));
  CHECK_THAT(err({Opt{}, f32({1, 1, -2, 2})}, {}).message(), Catch::Contains("> 0"));
  CHECK_THAT(err({Opt{}, Opt{}, i64({1, 1, -3, 2})}, {}).message(), Catch::Contains("sizes"));
  CHECK_THAT(err({Opt{}, Opt{}, i64({1, 1, 3})}, {}).message(), Catch::Contains("sizes"));
  CHECK_THAT(err({Opt{}, f32({2, 2})}, attrs({{"axes", ints({2, 4})}})).message(),
             Catch::Contains("axes"));
  CHECK_THAT(err({Opt{}, f32({2, 2})}, attrs({{"axes", ints({2, -2})}})).message(),
             Catch::Contains("repeated"));
  CHECK_THAT(err({Opt{}, f32({1, 1, 2, 2})},
                 attrs({{"coordinate_transformation_mode", str("tf_crop_and_resize")}}))
                 .message(),
             Catch::Contains("roi"));
  CHECK_THAT(err({f32({0, 0, 1}), f32({1, 1, 2, 2})},
                 attrs({{"coordinate_transformation_mode", str("tf_crop_and_resize")}}))
                 .message(),
             Catch::Contains("roi"));
  CHECK_THAT(
      err({Opt{}, f32({1, 1, 2, 2})}, attrs({{"coordinate_transformation_mode", str("bogus")}}))
          .message(),
      Catch::Contains("bogus"));
  CHECK_THAT(err({Opt{}, f32({1, 1, 2, 2})}, attrs({{"nearest_mode", str("nearest")}})).message(),
             Catch::Contains("nearest_mode"));
  CHECK_THAT(
      err({Opt{}, f32({1, 1, 2, 2})}, attrs({{"mode", str("linear")}}), DType::kBool).message(),
      Catch::Contains("bool"));
  CHECK_THAT(err({Opt{}, f32({1, 1, 1e30f, 2})}, {}).message(), Catch::Contains("too large"));
}

// ---------------------------------------------------------------- importer

namespace {

// A one-node ONNX model: `op` at `opset` reading x (float 1x1x2x2), optional
// initializer "scales" as its second input, output y.
std::string tiny_model(const char* op, int64_t opset, bool scales_input,
                       const std::vector<float>& scales, bool scales_attr) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  auto* os = m.add_opset_import();
  os->set_domain("");
  os->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {1, 1, 2, 2}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  auto* out = g->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto* n = g->add_node();
  n->set_op_type(op);
  n->add_input("x");
  n->add_output("y");
  if (scales_input) {
    n->add_input("scales");
    auto* init = g->add_initializer();
    init->set_name("scales");
    init->set_data_type(onnx::TensorProto::FLOAT);
    init->add_dims(static_cast<int64_t>(scales.size()));
    for (float f : scales) init->add_float_data(f);
  }
  if (scales_attr) {
    auto* a = n->add_attribute();
    a->set_name("scales");
    a->set_type(onnx::AttributeProto::FLOATS);
    for (float f : scales) a->add_floats(f);
  }
  return m.SerializeAsString();
}

Expected<Tensor> run_model(const std::string& bytes, const Tensor& x) {
  ASSIGN_OR_RETURN(Graph g, importer::import_model_bytes(bytes, "", "tiny"));
  ShapeInferenceOptions opts;
  opts.evaluator = reference::constant_evaluator();
  RETURN_IF_ERROR(infer_shapes(g, opts));
  ASSIGN_OR_RETURN(auto outs, reference::execute(g, {{"x", x}}));
  return outs.at("y");
}

}  // namespace

TEST_CASE("Upsample (opsets 7, 9) and Resize-10 import as nearest floor Resize", "[pool_resize]") {
  // Nearest with scales (1, 1, 2, 3) repeats each element: y[i][j] = x[i/2][j/3].
  Tensor x = random_tensor(DType::kFloat32, {1, 1, 2, 2}, test_rng());
  const std::vector<float> sc = {1, 1, 2, 3};
  for (auto [op, opset, as_input] : {std::tuple{"Upsample", 7, false},
                                     {"Upsample", 8, false},
                                     {"Upsample", 9, true},
                                     {"Resize", 10, true}}) {
    INFO(op << " opset " << opset);
    auto y = run_model(tiny_model(op, opset, as_input, sc, !as_input), x);
    INFO(y.status().message());
    REQUIRE(y.ok());
    REQUIRE(y->shape() == Shape{1, 1, 4, 6});
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 6; ++j)
        CHECK(y->get_f64(i * 6 + j) == x.get_f64((i / 2) * 2 + j / 3));
  }
  // Downsampling Resize-10 by 0.5: 2x2 -> 1x1, source coordinate 0 -> x[0].
  auto down = run_model(tiny_model("Resize", 10, true, {1, 1, 0.5f, 0.5f}, false), x);
  REQUIRE(down.ok());
  REQUIRE(down->shape() == Shape{1, 1, 1, 1});
  CHECK(down->get_f64(0) == x.get_f64(0));
  // Errors: Upsample-7 without scales, Upsample in opset 10, scales < 1.
  CHECK(!run_model(tiny_model("Upsample", 7, false, sc, false), x).ok());
  CHECK(!run_model(tiny_model("Upsample", 10, true, sc, false), x).ok());
  CHECK(!run_model(tiny_model("Upsample", 7, false, {1, 1, 0.5f, 1}, true), x).ok());
}
