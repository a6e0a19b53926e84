// [contraction] Conv and ConvTranspose: random inputs against direct loops
// written here (1-D/2-D/3-D, groups, depthwise, strides, dilations, pads,
// auto_pad, bias, output_padding, output_shape), the adjoint identity
// <Conv(x), y> == <x, ConvTranspose(y)>, and error paths.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "tests/contraction_helpers.h"

using namespace graphc;
using namespace graphc::ir;
using namespace graphc::testing;
using namespace graphc::testing::contraction;

namespace {

using Ints = std::vector<int64_t>;

// Advances a multi-index over `dims`; false after the last one.
bool step(Ints& idx, const Ints& dims) {
  for (size_t d = idx.size(); d-- > 0;) {
    if (++idx[d] < dims[d]) return true;
    idx[d] = 0;
  }
  return false;
}

Attribute ints(Ints v) { return Attribute::of_ints(std::move(v)); }

// Direct convolution: y[n, oc, o] = b[oc] + sum_{c, k} x[n, g*C/G + c, o*s - pb + k*d] * w[oc, c,
// k].
Tensor naive_conv(const Tensor& X, const Tensor& W, const Tensor* B, int64_t G, const Ints& s,
                  const Ints& d, const Ints& pb, const Ints& out_sp) {
  const Shape& xs = X.shape();
  const Shape& ws = W.shape();
  const size_t S = xs.size() - 2;
  const int64_t N = xs[0], C = xs[1], M = ws[0], Cg = C / G, Mg = M / G;
  Ints ksp(ws.begin() + 2, ws.end()), isp(xs.begin() + 2, xs.end());
  Shape ys{N, M};
  ys.insert(ys.end(), out_sp.begin(), out_sp.end());
  Tensor Y(DType::kFloat64, ys);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oc = 0; oc < M; ++oc) {
      Ints o(S, 0);
      do {
        double acc = B ? B->get_f64(oc) : 0.0;
        for (int64_t c = 0; c < Cg; ++c) {
          Ints k(S, 0);
          do {
            Ints xi{n, (oc / Mg) * Cg + c};
            bool inside = true;
            for (size_t i = 0; i < S; ++i) {
              int64_t p = o[i] * s[i] - pb[i] + k[i] * d[i];
              inside = inside && p >= 0 && p < isp[i];
              xi.push_back(p);
            }
            if (!inside) continue;
            Ints wi{oc, c};
            wi.insert(wi.end(), k.begin(), k.end());
            acc += X.get_f64(flat(xs, xi)) * W.get_f64(flat(ws, wi));
          } while (step(k, ksp));
        }
        Ints yi{n, oc};
        yi.insert(yi.end(), o.begin(), o.end());
        Y.set_f64(flat(ys, yi), acc);
      } while (step(o, out_sp));
    }
  return Y;
}

// Direct transposed convolution (scatter): y[n, g*M/G + m, i*s - pb + k*d] += x[n, ic, i] * w[ic,
// m, k].
Tensor naive_conv_transpose(const Tensor& X, const Tensor& W, const Tensor* B, int64_t G,
                            const Ints& s, const Ints& d, const Ints& pb, const Ints& out_sp) {
  const Shape& xs = X.shape();
  const Shape& ws = W.shape();
  const size_t S = xs.size() - 2;
  const int64_t N = xs[0], C = xs[1], Mg = ws[1], M = Mg * G, Cg = C / G;
  Ints ksp(ws.begin() + 2, ws.end()), isp(xs.begin() + 2, xs.end());
  Shape ys{N, M};
  ys.insert(ys.end(), out_sp.begin(), out_sp.end());
  Tensor Y(DType::kFloat64, ys);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oc = 0; oc < M; ++oc) {
      Ints o(S, 0);
      do {
        Ints yi{n, oc};
        yi.insert(yi.end(), o.begin(), o.end());
        Y.set_f64(flat(ys, yi), B ? B->get_f64(oc) : 0.0);
      } while (step(o, out_sp));
    }
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ic = 0; ic < C; ++ic) {
      Ints i(S, 0);
      do {
        for (int64_t m = 0; m < Mg; ++m) {
          Ints k(S, 0);
          do {
            Ints yi{n, (ic / Cg) * Mg + m};
            bool inside = true;
            for (size_t a = 0; a < S; ++a) {
              int64_t p = i[a] * s[a] - pb[a] + k[a] * d[a];
              inside = inside && p >= 0 && p < out_sp[a];
              yi.push_back(p);
            }
            if (!inside) continue;
            Ints xi{n, ic}, wi{ic, m};
            xi.insert(xi.end(), i.begin(), i.end());
            wi.insert(wi.end(), k.begin(), k.end());
            int64_t off = flat(ys, yi);
            Y.set_f64(off, Y.get_f64(off) + X.get_f64(flat(xs, xi)) * W.get_f64(flat(ws, wi)));
          } while (step(k, ksp));
        }
      } while (step(i, isp));
    }
  return Y;
}

void check_close_to(const Tensor& got, const Tensor& want) {
  REQUIRE(got.shape() == want.shape());
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double w = want.get_f64(i);
    double err =
        std::fabs(got.get_f64(i) - w) / tolerance_for(got.dtype(), std::max(1.0, std::fabs(w)));
    worst = std::max(worst, err);
  }
  CHECK(worst <= 1.0);
}

struct ConvCase {
  Shape x, w;
  int64_t group;
  Ints strides, dilations, pads;  // pads: begin..., end...
  bool bias;
};

}  // namespace

TEST_CASE("Conv matches a direct loop: 1-D/2-D/3-D, groups, depthwise, strides, dilations, pads",
          "[contraction]") {
  // Random X, W, B for each configuration and float dtype vs naive_conv.
  auto& rng = test_rng();
  const std::vector<ConvCase> cases = {
      {{2, 3, 9}, {4, 3, 3}, 1, {2}, {1}, {1, 0}, true},                     // 1-D
      {{1, 4, 7, 6}, {6, 2, 3, 2}, 2, {2, 1}, {1, 2}, {1, 0, 2, 1}, true},   // grouped
      {{2, 4, 6, 6}, {4, 1, 3, 3}, 4, {1, 1}, {1, 1}, {1, 1, 1, 1}, false},  // depthwise
      {{1, 3, 8, 8}, {5, 3, 1, 1}, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, true},   // pointwise
      {{1, 3, 8, 8}, {5, 3, 1, 1}, 1, {2, 2}, {1, 1}, {0, 0, 0, 0}, false},  // strided 1x1
      {{1, 2, 5, 4, 6}, {3, 2, 2, 3, 2}, 1, {1, 2, 2}, {2, 1, 1}, {0, 1, 1, 1, 0, 0}, true},  // 3-D
      {{1, 1, 5, 5}, {1, 1, 3, 3}, 1, {1, 1}, {3, 3}, {4, 4, 4, 4}, true},  // pads > kernel
  };
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    for (const auto& c : cases) {
      INFO(dtype_name(dt) << " X " << shape_to_string(c.x) << " W " << shape_to_string(c.w)
                          << " group " << c.group);
      const size_t S = c.x.size() - 2;
      Tensor X = random_tensor(dt, c.x, rng), W = random_tensor(dt, c.w, rng);
      std::optional<Tensor> B;
      if (c.bias) B = random_tensor(dt, {c.w[0]}, rng);
      Ints pb(c.pads.begin(), c.pads.begin() + S), out_sp;
      for (size_t i = 0; i < S; ++i)
        out_sp.push_back(
            (c.x[i + 2] + c.pads[i] + c.pads[i + S] - ((c.w[i + 2] - 1) * c.dilations[i] + 1)) /
                c.strides[i] +
            1);
      Tensor Y = run_op(OpKind::Conv, {X, W, B},
                        attrs({{"group", Attribute::of_int(c.group)},
                               {"strides", ints(c.strides)},
                               {"dilations", ints(c.dilations)},
                               {"pads", ints(c.pads)}}));
      CHECK(Y.dtype() == dt);
      check_close_to(
          Y, naive_conv(X, W, B ? &*B : nullptr, c.group, c.strides, c.dilations, pb, out_sp));
    }
  }
}

TEST_CASE("Conv with pads far beyond the input (direct fallback path) matches a direct loop",
          "[contraction]") {
  // Pads of 1000 with stride 1000: a zero-padded copy would be mostly padding,
  // so the kernel takes its bounds-checked path; compare with naive_conv.
  auto& rng = test_rng();
  Tensor X = random_tensor(DType::kFloat32, {1, 2, 3, 4}, rng);
  Tensor W = random_tensor(DType::kFloat32, {3, 2, 2, 2}, rng);
  Tensor B = random_tensor(DType::kFloat32, {3}, rng);
  const Ints s{1000, 999}, d{1, 2}, pads{1000, 999, 1000, 1000};
  Ints out_sp;
  for (size_t i = 0; i < 2; ++i)
    out_sp.push_back((X.shape()[i + 2] + pads[i] + pads[i + 2] - ((2 - 1) * d[i] + 1)) / s[i] + 1);
  Tensor Y = run_op(OpKind::Conv, {X, W, B},
                    attrs({{"strides", ints(s)}, {"dilations", ints(d)}, {"pads", ints(pads)}}));
  check_close_to(Y, naive_conv(X, W, &B, 1, s, d, {1000, 999}, out_sp));
}

TEST_CASE("Conv auto_pad SAME_UPPER/SAME_LOWER/VALID and kernel_shape follow the spec",
          "[contraction]") {
  // SAME: output = ceil(in / stride), the odd pad goes at the end (UPPER) or
  // start (LOWER); VALID: no padding. Checked against naive_conv with the pads
  // derived here.
  auto& rng = test_rng();
  Tensor X = random_tensor(DType::kFloat32, {1, 2, 7, 8}, rng);
  Tensor W = random_tensor(DType::kFloat32, {3, 2, 3, 4}, rng);
  const Ints s{2, 3}, d{1, 2};
  for (std::string mode : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    INFO(mode);
    Ints pb, out_sp;
    for (size_t i = 0; i < 2; ++i) {
      int64_t in = X.shape()[i + 2], keff = (W.shape()[i + 2] - 1) * d[i] + 1;
      if (mode == "VALID") {
        out_sp.push_back((in - keff) / s[i] + 1);
        pb.push_back(0);
      } else {
        int64_t out = (in + s[i] - 1) / s[i];
        int64_t total = std::max<int64_t>(0, (out - 1) * s[i] + keff - in);
        out_sp.push_back(out);
        pb.push_back(mode == "SAME_UPPER" ? total / 2 : total - total / 2);
      }
    }
    Tensor Y = run_op(OpKind::Conv, {X, W},
                      attrs({{"auto_pad", Attribute::of_string(mode)},
                             {"kernel_shape", ints({3, 4})},
                             {"strides", ints(s)},
                             {"dilations", ints(d)}}));
    check_close_to(Y, naive_conv(X, W, nullptr, 1, s, d, pb, out_sp));
  }
}

TEST_CASE("ConvTranspose matches a direct scatter loop", "[contraction]") {
  // Random X, W, B with groups, strides, dilations, pads and output_padding vs
  // naive_conv_transpose.
  auto& rng = test_rng();
  struct Case {
    Shape x, w;
    int64_t group;
    Ints strides, dilations, pads, out_pad;
    bool bias;
  };
  const std::vector<Case> cases = {
      {{2, 2, 5}, {2, 3, 3}, 1, {2}, {1}, {1, 0}, {1}, true},
      {{1, 4, 3, 4}, {4, 2, 3, 2}, 2, {2, 3}, {1, 2}, {1, 0, 0, 2}, {1, 0}, true},
      {{3, 2, 3, 3}, {2, 1, 3, 3}, 2, {1, 1}, {1, 1}, {0, 0, 0, 0}, {0, 0}, false},
      {{1, 3, 4, 4}, {3, 1, 3, 3}, 3, {2, 2}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},  // depthwise
      {{1, 2, 3, 2, 3},
       {2, 2, 2, 3, 2},
       1,
       {2, 1, 2},
       {1, 2, 1},
       {0, 1, 0, 1, 0, 1},
       {1, 0, 0},
       true},
      {{1, 3, 4, 5}, {3, 2, 1, 1}, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, {0, 0}, true},  // pointwise
  };
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kFloat16}) {
    for (const auto& c : cases) {
      INFO(dtype_name(dt) << " X " << shape_to_string(c.x) << " W " << shape_to_string(c.w));
      const size_t S = c.x.size() - 2;
      Tensor X = random_tensor(dt, c.x, rng), W = random_tensor(dt, c.w, rng);
      std::optional<Tensor> B;
      if (c.bias) B = random_tensor(dt, {c.w[1] * c.group}, rng);
      Ints pb(c.pads.begin(), c.pads.begin() + S), out_sp;
      for (size_t i = 0; i < S; ++i)
        out_sp.push_back(c.strides[i] * (c.x[i + 2] - 1) + c.out_pad[i] +
                         (c.w[i + 2] - 1) * c.dilations[i] + 1 - c.pads[i] - c.pads[i + S]);
      Tensor Y = run_op(OpKind::ConvTranspose, {X, W, B},
                        attrs({{"group", Attribute::of_int(c.group)},
                               {"strides", ints(c.strides)},
                               {"dilations", ints(c.dilations)},
                               {"pads", ints(c.pads)},
                               {"output_padding", ints(c.out_pad)}}));
      check_close_to(Y, naive_conv_transpose(X, W, B ? &*B : nullptr, c.group, c.strides,
                                             c.dilations, pb, out_sp));
    }
  }
}

TEST_CASE("ConvTranspose output_shape and auto_pad SAME split the total padding per spec",
          "[contraction]") {
  // total = s*(in-1) + output_padding + (k-1)*d + 1 - out; SAME_UPPER puts
  // floor(total/2) at the start, other modes total - floor(total/2).
  auto& rng = test_rng();
  Tensor X = random_tensor(DType::kFloat32, {1, 1, 3, 3}, rng);
  Tensor W = random_tensor(DType::kFloat32, {1, 2, 3, 3}, rng);
  {  // output_shape 10x8 with strides 3x2: total = -1, -1 -> start pads 0, larger output
    Tensor Y = run_op(OpKind::ConvTranspose, {X, W},
                      attrs({{"strides", ints({3, 2})}, {"output_shape", ints({10, 8})}}));
    check_close_to(Y, naive_conv_transpose(X, W, nullptr, 1, {3, 2}, {1, 1}, {0, 0}, {10, 8}));
  }
  {  // output_shape 7x6 with strides 2x2: total = 0, 1 -> start pads 0, 1
    Tensor Y = run_op(OpKind::ConvTranspose, {X, W},
                      attrs({{"strides", ints({2, 2})}, {"output_shape", ints({7, 6})}}));
    check_close_to(Y, naive_conv_transpose(X, W, nullptr, 1, {2, 2}, {1, 1}, {0, 1}, {7, 6}));
  }
  for (std::string mode : {"SAME_UPPER", "SAME_LOWER"}) {  // out = in * stride = 6; total = 1
    INFO(mode);
    Tensor Y = run_op(OpKind::ConvTranspose, {X, W},
                      attrs({{"strides", ints({2, 2})}, {"auto_pad", Attribute::of_string(mode)}}));
    Ints pb = mode == "SAME_UPPER" ? Ints{0, 0} : Ints{1, 1};
    check_close_to(Y, naive_conv_transpose(X, W, nullptr, 1, {2, 2}, {1, 1}, pb, {6, 6}));
  }
}

TEST_CASE("ConvTranspose is the adjoint of Conv: <Conv(x), y> == <x, ConvTranspose(y)>",
          "[contraction]") {
  // An identity independent of any loop written here, for grouped, strided,
  // dilated, padded 2-D convolutions.
  auto& rng = test_rng();
  for (int64_t G : {1, 2}) {
    const Ints s{2, 3}, d{2, 1}, pads{1, 0, 2, 1};
    Tensor x = random_tensor(DType::kFloat64, {2, 4, 9, 10}, rng);
    Tensor W = random_tensor(DType::kFloat64, {6, 4 / G, 3, 3}, rng);
    auto conv_attrs = [&](Ints out_pad) {
      auto a = attrs({{"group", Attribute::of_int(G)},
                      {"strides", ints(s)},
                      {"dilations", ints(d)},
                      {"pads", ints(pads)}});
      if (!out_pad.empty()) a.set("output_padding", ints(out_pad));
      return a;
    };
    Tensor cx = run_op(OpKind::Conv, {x, W}, conv_attrs({}));
    Tensor y = random_tensor(DType::kFloat64, cx.shape(), rng);
    // Output padding that makes ConvTranspose(y) the shape of x.
    Ints out_pad;
    for (size_t i = 0; i < 2; ++i) {
      int64_t natural = s[i] * (cx.shape()[i + 2] - 1) + (3 - 1) * d[i] + 1 - pads[i] - pads[i + 2];
      out_pad.push_back(x.shape()[i + 2] - natural);
    }
    Tensor ty = run_op(OpKind::ConvTranspose, {y, W}, conv_attrs(out_pad));
    REQUIRE(ty.shape() == x.shape());
    double lhs = 0, rhs = 0;
    for (int64_t i = 0; i < cx.numel(); ++i) lhs += cx.get_f64(i) * y.get_f64(i);
    for (int64_t i = 0; i < x.numel(); ++i) rhs += x.get_f64(i) * ty.get_f64(i);
    CHECK(std::fabs(lhs - rhs) <= 1e-9 * std::max(1.0, std::fabs(lhs)));
  }
}

TEST_CASE("Conv and ConvTranspose reject inconsistent attributes and shapes", "[contraction]") {
  // Each bad model gives an error naming the attribute or input and values.
  const DType f = DType::kFloat32;
  auto bad = [&](OpKind op, std::vector<std::pair<DType, Shape>> ins, AttributeMap a,
                 const std::string& text) {
    Status st = infer_op(op, ins, a);
    INFO(op_name(op) << ": " << st.message());
    CHECK(st.code() == ErrorCode::kInvalidModel);
    CHECK(mentions(st, text));
  };
  const std::vector<std::pair<DType, Shape>> xw = {{f, {1, 4, 8, 8}}, {f, {6, 4, 3, 3}}};
  bad(OpKind::Conv, xw, attrs({{"pads", ints({1, 1})}}),
      "'pads' = [1, 1] has 2 entries; expected 4");
  bad(OpKind::Conv, xw, attrs({{"strides", ints({1})}}), "'strides'");
  bad(OpKind::Conv, xw, attrs({{"dilations", ints({1, 1, 1})}}), "'dilations'");
  bad(OpKind::Conv, xw, attrs({{"strides", ints({0, 1})}}), "strides must be >= 1");
  bad(OpKind::Conv, xw, attrs({{"pads", ints({1, 1, -1, 1})}}), "pads must be >= 0");
  bad(OpKind::Conv, {{f, {1, 4, 8, 8}}, {f, {6, 4, 3}}}, {}, "weight W has rank 3");
  bad(OpKind::Conv, {{f, {1, 4}}, {f, {6, 4}}}, {}, "rank >= 3");
  bad(OpKind::Conv, xw, attrs({{"group", Attribute::of_int(2)}}), "group = 2");
  bad(OpKind::Conv, {{f, {1, 4, 8, 8}}, {f, {5, 2, 3, 3}}},
      attrs({{"group", Attribute::of_int(2)}}), "not divisible by group");
  bad(OpKind::Conv, xw, attrs({{"group", Attribute::of_int(0)}}), "'group' = 0");
  bad(OpKind::Conv, {{f, {1, 4, 8, 8}}, {f, {6, 4, 3, 3}}, {f, {5}}}, {}, "bias B has shape 5");
  bad(OpKind::Conv, xw, attrs({{"kernel_shape", ints({3, 2})}}), "'kernel_shape' = [3, 2]");
  bad(OpKind::Conv, xw, attrs({{"auto_pad", Attribute::of_string("SAME")}}), "'auto_pad' = 'SAME'");
  bad(OpKind::Conv, {{f, {1, 4, 2, 8}}, {f, {6, 4, 3, 3}}}, {},
      "spatial dim 0 of the output would be 0");
  bad(OpKind::Conv, {{DType::kInt32, {1, 4, 8, 8}}, {DType::kInt32, {6, 4, 3, 3}}}, {},
      "element type int32");
  const std::vector<std::pair<DType, Shape>> xwt = {{f, {1, 4, 5, 5}}, {f, {4, 3, 3, 3}}};
  bad(OpKind::ConvTranspose, {{f, {1, 4, 5, 5}}, {f, {3, 4, 3, 3}}}, {}, "W.shape[0] must equal");
  bad(OpKind::ConvTranspose, xwt, attrs({{"group", Attribute::of_int(3)}}),
      "not divisible by group");
  bad(OpKind::ConvTranspose, xwt, attrs({{"output_padding", ints({1})}}), "'output_padding'");
  bad(OpKind::ConvTranspose, xwt, attrs({{"output_shape", ints({5, 5, 5})}}), "'output_shape'");
  bad(OpKind::ConvTranspose, xwt, attrs({{"pads", ints({4, 4, 4, 4})}, {"strides", ints({1, 1})}}),
      "would be -1");
  bad(OpKind::ConvTranspose, {{f, {1, 4, 5, 5}}, {f, {4, 3, 3, 3}}, {f, {4}}},
      attrs({{"group", Attribute::of_int(2)}}), "6 (output channels)");
  // Valid shapes for sanity: the same rule accepts them.
  CHECK(infer_op(OpKind::ConvTranspose, xwt, attrs({{"group", Attribute::of_int(2)}})).ok());
  CHECK(infer_op(OpKind::ConvTranspose, xwt).ok());
  CHECK(infer_op(OpKind::Conv, xw, attrs({{"pads", ints({1, 1, 1, 1})}})).ok());
}

TEST_CASE("Conv on ResNet-50-sized layers matches direct sums at random output elements",
          "[contraction]") {
  // The packed/tiled Conv path at full layer sizes (panels, partial tiles,
  // channel blocks), spot-checked against direct sums written here. With
  // GRAPHC_BENCH set, also prints each layer's CPU time.
  auto& rng = test_rng();
  struct Layer {
    const char* name;
    Shape x, w;
    Ints strides, pads;
    int64_t group;
  };
  const std::vector<Layer> layers = {
      {"conv1 7x7/2 3->64 @224", {1, 3, 224, 224}, {64, 3, 7, 7}, {2, 2}, {3, 3, 3, 3}, 1},
      {"3x3 64->64 @56", {1, 64, 56, 56}, {64, 64, 3, 3}, {1, 1}, {1, 1, 1, 1}, 1},
      {"1x1 256->64 @56", {1, 256, 56, 56}, {64, 256, 1, 1}, {1, 1}, {0, 0, 0, 0}, 1},
      {"3x3/2 128->128 @56", {1, 128, 56, 56}, {128, 128, 3, 3}, {2, 2}, {1, 1, 1, 1}, 1},
      {"3x3 512->512 @7", {1, 512, 7, 7}, {512, 512, 3, 3}, {1, 1}, {1, 1, 1, 1}, 1},
      {"3x3 dw 96 @28 (group 96)", {2, 96, 28, 28}, {96, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, 96},
      {"3x3 g32 256->256 @14", {1, 256, 14, 14}, {256, 8, 3, 3}, {1, 1}, {1, 1, 1, 1}, 32},
  };
  const bool bench = std::getenv("GRAPHC_BENCH") != nullptr;
  for (const auto& l : layers) {
    INFO(l.name);
    Tensor X = random_tensor(DType::kFloat32, l.x, rng);
    Tensor W = random_tensor(DType::kFloat32, l.w, rng);
    Tensor B = random_tensor(DType::kFloat32, {l.w[0]}, rng);
    std::clock_t start = std::clock();  // CPU time: the build machine is shared
    Tensor Y = run_op(OpKind::Conv, {X, W, B},
                      attrs({{"strides", ints(l.strides)},
                             {"pads", ints(l.pads)},
                             {"group", Attribute::of_int(l.group)}}));
    double secs = static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
    if (bench) {
      double macs = static_cast<double>(Y.numel()) * static_cast<double>(shape_numel(l.w)) /
                    static_cast<double>(l.w[0]);
      std::printf("%-28s %8.3f s CPU  %6.2f GMAC/s\n", l.name, secs, macs / secs * 1e-9);
    }
    const Shape& ys = Y.shape();
    const int64_t C = l.x[1], M = l.w[0], Cg = C / l.group, Mg = M / l.group;
    const int64_t K0 = l.w[2], K1 = l.w[3];
    std::uniform_int_distribution<int64_t> pick(0, Y.numel() - 1);
    double worst = 0;
    for (int trial = 0; trial < 64; ++trial) {
      int64_t at = trial == 0 ? Y.numel() - 1 : pick(rng);
      int64_t ox = at % ys[3], oy = (at / ys[3]) % ys[2], oc = (at / ys[3] / ys[2]) % M,
              n = at / ys[3] / ys[2] / M;
      double acc = B.get_f64(oc);
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t ky = 0; ky < K0; ++ky)
          for (int64_t kx = 0; kx < K1; ++kx) {
            int64_t iy = oy * l.strides[0] - l.pads[0] + ky,
                    ix = ox * l.strides[1] - l.pads[1] + kx;
            if (iy < 0 || iy >= l.x[2] || ix < 0 || ix >= l.x[3]) continue;
            int64_t ic = (oc / Mg) * Cg + c;
            acc += X.get_f64(((n * C + ic) * l.x[2] + iy) * l.x[3] + ix) *
                   W.get_f64(((oc * Cg + c) * K0 + ky) * K1 + kx);
          }
      worst = std::max(worst, std::fabs(Y.get_f64(at) - acc) / std::max(1.0, std::fabs(acc)));
    }
    CHECK(worst <= 1e-5);
  }
}
