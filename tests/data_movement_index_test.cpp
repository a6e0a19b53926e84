// Shape and data-movement ops, part 2: Gather, GatherElements, GatherND,
// ScatterElements, ScatterND (with reductions and index errors), the
// generators (ConstantOfShape, Range, EyeLike, OneHot), Trilu,
// DepthToSpace/SpaceToDepth, CumSum, and every dtype through the byte movers.
#include <catch2/catch.hpp>
#include <cmath>

#include "tests/data_movement_test_util.h"

using namespace graphc;
using namespace graphc::ir;
using namespace graphc::testing::dm;
using graphc::testing::attrs;
using graphc::testing::GraphBuilder;
using graphc::testing::random_tensor;
using graphc::testing::test_rng;

namespace {
// Random int64 (or int32) indices in [-dim, dim) of the given shape.
Tensor rand_indices(const Shape& shape, int64_t dim, DType dt = DType::kInt64) {
  Tensor t(dt, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_i64(i, rand_int(-dim, dim - 1));
  return t;
}
int64_t wrap(int64_t v, int64_t dim) { return v < 0 ? v + dim : v; }
}  // namespace

TEST_CASE("Gather with negative indices matches a hand loop", "[data_movement]") {
  // out[pre, idx..., post] = data[pre, wrap(indices[idx...]), post] for random
  // axes (negative too), int32/int64 indices and dtypes.
  for (int trial = 0; trial < 20; ++trial) {
    Shape ds = rand_shape(static_cast<size_t>(rand_int(1, 3)), 1, 4);
    auto r = static_cast<int64_t>(ds.size());
    int64_t axis = rand_int(-r, r - 1);
    auto ax = static_cast<size_t>(axis < 0 ? axis + r : axis);
    Shape is = rand_shape(static_cast<size_t>(rand_int(0, 2)), 1, 3);
    DType it = trial % 2 ? DType::kInt32 : DType::kInt64;
    DType dt = all_dtypes()[static_cast<size_t>(trial) % all_dtypes().size()];
    Tensor idx = rand_indices(is, ds[ax], it);
    GraphBuilder b;
    auto x = b.input("x", dt, ds);
    auto i = b.input("i", it, is);
    Tensor xv = random_tensor(dt, ds, test_rng());
    auto out = run1(b, b.node(OpKind::Gather, {x, i}, attrs({{"axis", ai(axis)}})),
                    {{"x", xv}, {"i", idx}});
    REQUIRE(out.ok());
    for (int64_t k = 0; k < out->numel(); ++k) {
      auto oi = unflat(k, out->shape());
      std::vector<int64_t> pos(oi.begin() + static_cast<int64_t>(ax),
                               oi.begin() + static_cast<int64_t>(ax + is.size()));
      std::vector<int64_t> di(oi.begin(), oi.begin() + static_cast<int64_t>(ax));
      di.push_back(wrap(idx.get_i64(flat(pos, is)), ds[ax]));
      di.insert(di.end(), oi.begin() + static_cast<int64_t>(ax + is.size()), oi.end());
      REQUIRE(same_elem(*out, k, xv, flat(di, ds)));
    }
  }
}

TEST_CASE("GatherElements and GatherND match hand loops", "[data_movement]") {
  // GatherElements: out[i] = data[i with i[axis] = wrap(indices[i])].
  // GatherND (batch_dims 0 and 1): each index tuple picks a slice of data.
  for (int trial = 0; trial < 10; ++trial) {
    Shape ds = rand_shape(3, 2, 4);
    int64_t axis = rand_int(-3, 2);
    auto ax = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
    Shape is = ds;
    for (size_t d = 0; d < 3; ++d) is[d] = d == ax ? rand_int(1, 5) : rand_int(1, ds[d]);
    Tensor idx = rand_indices(is, ds[ax]);
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat64, ds);
    auto i = b.input("i", DType::kInt64, is);
    Tensor xv = random_tensor(DType::kFloat64, ds, test_rng());
    auto out = run1(b, b.node(OpKind::GatherElements, {x, i}, attrs({{"axis", ai(axis)}})),
                    {{"x", xv}, {"i", idx}});
    REQUIRE(out.ok());
    REQUIRE(out->shape() == is);
    for (int64_t k = 0; k < out->numel(); ++k) {
      auto p = unflat(k, is);
      p[ax] = wrap(idx.get_i64(k), ds[ax]);
      REQUIRE(out->get_f64(k) == xv.get_f64(flat(p, ds)));
    }
  }
  for (int64_t batch_dims : {0, 1}) {
    Shape ds{2, 3, 4};
    Shape is{2, 5, 2};  // tuples of 2 indices
    GraphBuilder b;
    auto x = b.input("x", DType::kInt16, ds);
    auto i = b.input("i", DType::kInt64, is);
    Tensor idx(DType::kInt64, is);
    for (int64_t k = 0; k < idx.numel(); ++k) {
      auto p = unflat(k, is);
      int64_t dim = ds[static_cast<size_t>(batch_dims + p[2])];
      idx.set_i64(k, rand_int(-dim, dim - 1));
    }
    Tensor xv = random_tensor(DType::kInt16, ds, test_rng(), -1000, 1000);
    auto out = run1(b, b.node(OpKind::GatherND, {x, i}, attrs({{"batch_dims", ai(batch_dims)}})),
                    {{"x", xv}, {"i", idx}});
    REQUIRE(out.ok());
    Shape want = batch_dims == 0 ? Shape{2, 5, 4} : Shape{2, 5};
    REQUIRE(out->shape() == want);
    for (int64_t k = 0; k < out->numel(); ++k) {
      auto p = unflat(k, want);
      std::vector<int64_t> di;
      if (batch_dims == 1) di.push_back(p[0]);
      for (int64_t c = 0; c < 2; ++c) {
        int64_t v = idx.get_i64(flat({p[0], p[1], c}, is));
        di.push_back(wrap(v, ds[static_cast<size_t>(batch_dims + c)]));
      }
      if (batch_dims == 0) di.push_back(p[2]);
      REQUIRE(out->get_i64(k) == xv.get_i64(flat(di, ds)));
    }
  }
}

TEST_CASE("Out-of-range indices are error Statuses, not crashes", "[data_movement]") {
  // Every indexing kernel reports an index outside [-dim, dim) as an error
  // from execute(), naming the bad value.
  auto expect_error = [](OpKind op, Shape ds, Tensor idx, std::optional<Shape> upd) {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, ds);
    auto i = b.input("i", DType::kInt64, idx.shape());
    std::vector<ValueId> ins = {x, i};
    std::map<std::string, Tensor> feeds = {{"x", random_tensor(DType::kFloat32, ds, test_rng())},
                                           {"i", idx}};
    if (upd) {
      ins.push_back(b.input("u", DType::kFloat32, *upd));
      feeds["u"] = random_tensor(DType::kFloat32, *upd, test_rng());
    }
    auto out = run1(b, b.node(op, ins), feeds);
    REQUIRE(!out.ok());
    CHECK_THAT(out.status().message(), Catch::Contains("out of range"));
  };
  expect_error(OpKind::Gather, {3, 2}, Tensor::from_i64({0, 3}, {2}), {});
  expect_error(OpKind::Gather, {3, 2}, Tensor::from_i64({-4}, {1}), {});
  expect_error(OpKind::GatherElements, {3, 2}, Tensor::from_i64({0, 7}, {1, 2}), {});
  expect_error(OpKind::GatherND, {3, 2}, Tensor::from_i64({2, 2}, {1, 2}), {});
  expect_error(OpKind::ScatterElements, {3, 2}, Tensor::from_i64({5, 0}, {1, 2}), Shape{1, 2});
  expect_error(OpKind::ScatterND, {3, 2}, Tensor::from_i64({-4}, {1, 1}), Shape{1, 2});
}

namespace {
double reduce_ref(const std::string& r, double a, double b) {
  if (r == "add") return a + b;
  if (r == "mul") return a * b;
  if (r == "max") return std::max(a, b);
  if (r == "min") return std::min(a, b);
  return b;
}
}  // namespace

TEST_CASE("ScatterElements and ScatterND with every reduction", "[data_movement]") {
  // Starting from a copy of data, each update is combined (none/add/mul/max/min)
  // into the element its index names, in order; duplicates accumulate.
  for (std::string red : {"none", "add", "mul", "max", "min"}) {
    for (DType dt : {DType::kFloat32, DType::kInt32, DType::kFloat16}) {
      Shape ds{3, 4};
      int64_t axis = rand_int(-2, 1);
      auto ax = static_cast<size_t>(axis < 0 ? axis + 2 : axis);
      Shape is{2, 3};
      Tensor idx = rand_indices(is, ds[ax]);
      Tensor xv = random_tensor(dt, ds, test_rng(), -4, 4);
      Tensor uv = random_tensor(dt, is, test_rng(), -4, 4);
      GraphBuilder b;
      auto y = b.node(OpKind::ScatterElements,
                      {b.input("x", dt, ds), b.input("i", DType::kInt64, is), b.input("u", dt, is)},
                      attrs({{"axis", ai(axis)}, {"reduction", as(red)}}));
      auto out = run1(b, y, {{"x", xv}, {"i", idx}, {"u", uv}});
      REQUIRE(out.ok());
      std::vector<double> want = xv.to_f64_vector();
      for (int64_t k = 0; k < idx.numel(); ++k) {
        auto p = unflat(k, is);
        p[ax] = wrap(idx.get_i64(k), ds[ax]);
        auto& w = want[static_cast<size_t>(flat(p, ds))];
        Tensor tmp(dt, {});  // round like the kernel does, element by element
        tmp.set_f64(0, reduce_ref(red, w, uv.get_f64(k)));
        w = tmp.get_f64(0);
      }
      CHECK(out->to_f64_vector() == want);

      // ScatterND: indices [2, 1] address rows; updates [2, 4].
      Tensor rows = rand_indices({2, 1}, 3);
      Tensor ru = random_tensor(dt, {2, 4}, test_rng(), -4, 4);
      GraphBuilder n;
      auto z = n.node(
          OpKind::ScatterND,
          {n.input("x", dt, ds), n.input("i", DType::kInt64, {2, 1}), n.input("u", dt, {2, 4})},
          attrs({{"reduction", as(red)}}));
      auto out2 = run1(n, z, {{"x", xv}, {"i", rows}, {"u", ru}});
      REQUIRE(out2.ok());
      std::vector<double> want2 = xv.to_f64_vector();
      for (int64_t t = 0; t < 2; ++t)
        for (int64_t c = 0; c < 4; ++c) {
          auto& w = want2[static_cast<size_t>(wrap(rows.get_i64(t), 3) * 4 + c)];
          Tensor tmp(dt, {});
          tmp.set_f64(0, reduce_ref(red, w, ru.get_f64(t * 4 + c)));
          w = tmp.get_f64(0);
        }
      CHECK(out2->to_f64_vector() == want2);
    }
  }
  // Bad reduction name and mismatched updates shape are model errors.
  GraphBuilder b;
  b.output(b.node(OpKind::ScatterElements,
                  {b.input("x", DType::kFloat32, {3}), b.input("i", DType::kInt64, {2}),
                   b.input("u", DType::kFloat32, {2})},
                  attrs({{"reduction", as("sum")}})));
  CHECK_THAT(infer(b).message(), Catch::Contains("reduction"));
  GraphBuilder c;
  c.output(c.node(OpKind::ScatterND,
                  {c.input("x", DType::kFloat32, {3, 4}), c.input("i", DType::kInt64, {2, 1}),
                   c.input("u", DType::kFloat32, {2, 3})}));
  CHECK_THAT(infer(c).message(), Catch::Contains("updates shape"));
}

TEST_CASE("ConstantOfShape, Range and EyeLike generate known values", "[data_movement]") {
  // ConstantOfShape repeats its value attribute (default float32 0); Range has
  // max(ceil((limit-start)/delta), 0) elements start + i*delta; EyeLike puts
  // ones on diagonal k with the dtype attribute's type.
  {
    GraphBuilder b;
    auto c = b.node(
        OpKind::ConstantOfShape, {b.constant("s", ints({2, 3}))},
        attrs(
            {{"value", Attribute::of_tensor(Tensor::from_i64({7}, {1}).cast_to(DType::kInt32))}}));
    auto d = b.node(OpKind::ConstantOfShape, {b.constant("s2", ints({2}))});
    auto e = b.node(OpKind::ConstantOfShape, {b.constant("s3", Tensor(DType::kInt64, {0}))});
    auto out = run(b, {c, d, e}, {});
    REQUIRE(out.ok());
    CHECK((*out)[0].dtype() == DType::kInt32);
    CHECK((*out)[0].to_i64_vector() == std::vector<int64_t>(6, 7));
    CHECK((*out)[1].dtype() == DType::kFloat32);
    CHECK((*out)[1].to_f64_vector() == std::vector<double>{0, 0});
    CHECK((*out)[2].shape().empty());
  }
  auto range = [](Tensor s, Tensor l, Tensor d) -> Expected<Tensor> {
    GraphBuilder b;
    auto r = b.node(OpKind::Range, {b.constant("s", s), b.constant("l", l), b.constant("d", d)});
    return run1(b, r, {});
  };
  auto i32 = [](int64_t v) { return Tensor::scalar_i64(v).cast_to(DType::kInt32); };
  auto f32 = [](float v) { return Tensor::from_f32({v}, {}); };
  CHECK(range(i32(10), i32(1), i32(-3)).value().to_i64_vector() == std::vector<int64_t>{10, 7, 4});
  CHECK(range(i32(1), i32(10), i32(3)).value().to_i64_vector() == std::vector<int64_t>{1, 4, 7});
  CHECK(range(f32(1), f32(2.2f), f32(0.5f)).value().to_f64_vector() ==
        std::vector<double>{1, 1.5, 2});
  CHECK(range(i32(5), i32(1), i32(1)).value().numel() == 0);
  CHECK(range(Tensor::scalar_i64(INT64_MIN + 1), Tensor::scalar_i64(INT64_MAX),
              Tensor::scalar_i64(INT64_MAX))
            .value()
            .to_i64_vector() == std::vector<int64_t>{INT64_MIN + 1, 0});
  CHECK_THAT(range(i32(1), i32(2), i32(0)).status().message(), Catch::Contains("delta is 0"));
  CHECK_THAT(range(i32(1), f32(2), i32(1)).status().message(), Catch::Contains("dtype"));
  {  // float16 accumulates in float (stash_type 1, the default); stash_type 0 is refused.
    auto h = [](float v) { return Tensor::from_f32({v}, {}).cast_to(DType::kFloat16); };
    GraphBuilder b;
    auto r = b.node(OpKind::Range,
                    {b.constant("s", h(2048)), b.constant("l", h(2060)), b.constant("d", h(4))});
    CHECK(run1(b, r, {}).value().to_f64_vector() == std::vector<double>{2048, 2052, 2056});
    GraphBuilder b0;
    auto r0 = b0.node(OpKind::Range,
                      {b0.constant("s", h(0)), b0.constant("l", h(4)), b0.constant("d", h(1))},
                      attrs({{"stash_type", ai(0)}}));
    CHECK_THAT(run1(b0, r0, {}).status().message(), Catch::Contains("stash_type"));
  }

  for (int64_t k : {-2, 0, 1, 5}) {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {3, 4});
    auto y = b.node(OpKind::EyeLike, {x}, attrs({{"k", ai(k)}, {"dtype", ai(6)}}));
    auto out = run1(b, y, {{"x", random_tensor(DType::kFloat32, {3, 4}, test_rng())}});
    REQUIRE(out.ok());
    CHECK(out->dtype() == DType::kInt32);
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t c = 0; c < 4; ++c) CHECK(out->get_i64(r * 4 + c) == (c - r == k ? 1 : 0));
  }
}

TEST_CASE("OneHot: axis, negative indices and out-of-range rows", "[data_movement]") {
  // Indices [[1,-1],[5,0]] with depth 3 (a float depth, as some exporters
  // write it): -1 wraps to 2, 5 is out of range and gives an all-off row.
  for (int64_t axis : {-1, 0}) {
    GraphBuilder b;
    auto i = b.input("i", DType::kInt64, {2, 2});
    auto v = b.input("v", DType::kFloat32, {2});
    auto y = b.node(OpKind::OneHot, {i, b.constant("d", Tensor::from_f32({3}, {})), v},
                    attrs({{"axis", ai(axis)}}));
    auto out = run1(
        b, y,
        {{"i", Tensor::from_i64({1, -1, 5, 0}, {2, 2})}, {"v", Tensor::from_f32({-1, 7}, {2})}});
    REQUIRE(out.ok());
    // depth-last form: [i][j][k]
    std::vector<double> last = {-1, 7, -1, -1, -1, 7, -1, -1, -1, 7, -1, -1};
    if (axis == -1) {
      CHECK(out->shape() == Shape{2, 2, 3});
      CHECK(out->to_f64_vector() == last);
    } else {
      CHECK(out->shape() == Shape{3, 2, 2});
      for (int64_t k = 0; k < 3; ++k)
        for (int64_t ij = 0; ij < 4; ++ij)
          CHECK(out->get_f64(k * 4 + ij) == last[static_cast<size_t>(ij * 3 + k)]);
    }
  }
  GraphBuilder b;
  auto i = b.input("i", DType::kInt64, {2});
  b.output(b.node(OpKind::OneHot,
                  {i, b.constant("d", Tensor::scalar_i64(3)), b.input("v", DType::kFloat32, {3})}));
  CHECK_THAT(infer(b).message(), Catch::Contains("off_value"));
}

TEST_CASE("Trilu keeps the upper or lower triangle for any k", "[data_movement]") {
  // Element (.., r, c) survives iff c - r >= k (upper) or c - r <= k (lower).
  for (int trial = 0; trial < 12; ++trial) {
    Shape s{2, rand_int(1, 5), rand_int(1, 5)};
    int64_t k = rand_int(-6, 6);
    int64_t upper = trial % 2;
    GraphBuilder b;
    auto x = b.input("x", DType::kInt64, s);
    auto y = b.node(OpKind::Trilu, {x, b.constant("k", Tensor::scalar_i64(k))},
                    attrs({{"upper", ai(upper)}}));
    Tensor xv = random_tensor(DType::kInt64, s, test_rng(), 1, 100);
    auto out = run1(b, y, {{"x", xv}});
    REQUIRE(out.ok());
    for (int64_t i = 0; i < out->numel(); ++i) {
      auto p = unflat(i, s);
      bool keep = upper ? p[2] - p[1] >= k : p[2] - p[1] <= k;
      REQUIRE(out->get_i64(i) == (keep ? xv.get_i64(i) : 0));
    }
  }
}

TEST_CASE("DepthToSpace DCR/CRD follow the spec's reshape-transpose", "[data_movement]") {
  // DCR: [N, b, b, C', H, W] transposed [0,3,4,1,5,2]; CRD: [N, C', b, b, H, W]
  // transposed [0,1,4,2,5,3]. SpaceToDepth inverts DCR exactly.
  const int64_t n = 2, c = 3, b = 2, h = 2, w = 3;
  Shape in{n, c * b * b, h, w};
  Tensor xv = random_tensor(DType::kUInt16, in, test_rng(), 0, 60000);
  for (std::string mode : {"DCR", "CRD"}) {
    GraphBuilder g;
    auto x = g.input("x", DType::kUInt16, in);
    auto y = g.node(OpKind::DepthToSpace, {x}, attrs({{"blocksize", ai(b)}, {"mode", as(mode)}}));
    auto z = g.node(OpKind::SpaceToDepth, {y}, attrs({{"blocksize", ai(b)}}));
    auto out = run(g, {y, z}, {{"x", xv}});
    REQUIRE(out.ok());
    const Tensor& d2s = (*out)[0];
    REQUIRE(d2s.shape() == Shape{n, c, h * b, w * b});
    for (int64_t i = 0; i < d2s.numel(); ++i) {
      auto p = unflat(i, d2s.shape());  // n, c, y, x
      int64_t bi = p[2] % b, bj = p[3] % b;
      int64_t ch = mode == "DCR" ? bi * b * c + bj * c + p[1] : p[1] * b * b + bi * b + bj;
      REQUIRE(same_elem(d2s, i, xv, flat({p[0], ch, p[2] / b, p[3] / b}, in)));
    }
    if (mode == "DCR") CHECK((*out)[1].same_bytes(xv));
  }
  GraphBuilder g;
  auto x = g.input("x", DType::kFloat32, {1, 6, 2, 2});
  g.output(g.node(OpKind::DepthToSpace, {x}, attrs({{"blocksize", ai(2)}})));
  CHECK_THAT(infer(g).message(), Catch::Contains("multiple of blocksize"));
}

TEST_CASE("CumSum with exclusive and reverse on floats and ints", "[data_movement]") {
  // Running sums along a (possibly negative) axis input, against a hand loop in double / int64.
  for (int trial = 0; trial < 16; ++trial) {
    Shape s = rand_shape(3, 1, 4);
    int64_t axis = rand_int(-3, 2);
    auto ax = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
    bool exclusive = trial & 1, reverse = trial & 2;
    DType dt = trial & 4 ? DType::kInt64 : DType::kFloat64;
    Tensor xv = random_tensor(dt, s, test_rng(), -50, 50);
    GraphBuilder b;
    auto x = b.input("x", dt, s);
    auto y = b.node(OpKind::CumSum,
                    {x, b.constant("a", Tensor::scalar_i64(axis).cast_to(DType::kInt32))},
                    attrs({{"exclusive", ai(exclusive)}, {"reverse", ai(reverse)}}));
    auto out = run1(b, y, {{"x", xv}});
    REQUIRE(out.ok());
    for (int64_t i = 0; i < out->numel(); ++i) {
      auto p = unflat(i, s);
      double sum = 0;
      for (int64_t j = 0; j < s[ax]; ++j) {
        bool take =
            reverse ? (exclusive ? j > p[ax] : j >= p[ax]) : (exclusive ? j < p[ax] : j <= p[ax]);
        auto q = p;
        q[ax] = j;
        if (take) sum += xv.get_f64(flat(q, s));
      }
      REQUIRE(std::fabs(out->get_f64(i) - sum) < 1e-9);
    }
  }
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {3});
  b.output(b.node(OpKind::CumSum, {x, b.constant("a", Tensor::scalar_i64(1))}));
  CHECK_THAT(infer(b).message(), Catch::Contains("out of range"));
}

TEST_CASE("Byte-moving ops keep every dtype's bytes", "[data_movement]") {
  // For each dtype: Slice (reversed) -> Tile -> Pad(edge) -> Gather, compared
  // byte for byte with the composed index map.
  for (DType dt : all_dtypes()) {
    Shape s{3, 2};
    Tensor xv = random_tensor(dt, s, test_rng(), -100, 100);
    GraphBuilder b;
    auto x = b.input("x", dt, s);
    auto rev =
        b.node(OpKind::Slice, {x, b.constant("st", ints({-1})), b.constant("en", ints({INT64_MIN})),
                               b.constant("ax", ints({0})), b.constant("sp", ints({-1}))});
    auto tile = b.node(OpKind::Tile, {rev, b.constant("r", ints({1, 2}))});      // 3x4
    auto pad = b.node(OpKind::Pad, {tile, b.constant("p", ints({0, 1, 0, 0}))},  // 3x5
                      attrs({{"mode", as("edge")}}));
    auto g = b.node(OpKind::Gather, {pad, b.constant("i", ints({2, -3}))});  // 2x5
    auto out = run1(b, g, {{"x", xv}});
    REQUIRE(out.ok());
    REQUIRE(out->shape() == Shape{2, 5});
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t c = 0; c < 5; ++c) {
        int64_t pr = r == 0 ? 2 : 0;               // gathered row of the padded tensor
        int64_t tc = std::max<int64_t>(c - 1, 0);  // edge pad on the left
        int64_t xr = 2 - pr, xc = tc % 2;          // untile, unreverse
        REQUIRE(same_elem(*out, r * 5 + c, xv, xr * 2 + xc));
      }
  }
}

TEST_CASE("Indexing and generator shape rules reject bad inputs", "[data_movement]") {
  // Each malformed node is an error Status from shape inference (never a
  // crash), including an out-of-range constant index met during folding.
  auto check = [](const char* needle, auto&& build) {
    GraphBuilder b;
    b.output(build(b));
    Status st = infer(b);
    INFO(needle);
    REQUIRE(!st.ok());
    CHECK_THAT(st.message(), Catch::Contains(needle));
  };
  check("out of range", [](GraphBuilder& b) {  // folded at build time
    return b.node(OpKind::Gather,
                  {b.constant("d", ints({1, 2, 3})), b.constant("i", Tensor::scalar_i64(3))});
  });
  check("int32 or int64", [](GraphBuilder& b) {
    return b.node(OpKind::Gather,
                  {b.input("x", DType::kFloat32, {3}), b.input("i", DType::kFloat32, {1})});
  });
  check("axis 2 is out of range", [](GraphBuilder& b) {
    return b.node(OpKind::Gather,
                  {b.input("x", DType::kFloat32, {3, 2}), b.input("i", DType::kInt64, {1})},
                  attrs({{"axis", ai(2)}}));
  });
  check("rank", [](GraphBuilder& b) {
    return b.node(OpKind::GatherElements,
                  {b.input("x", DType::kFloat32, {3, 2}), b.input("i", DType::kInt64, {3})});
  });
  check("batch dim 0 differs", [](GraphBuilder& b) {
    return b.node(OpKind::GatherND,
                  {b.input("x", DType::kFloat32, {3, 2}), b.input("i", DType::kInt64, {2, 1})},
                  attrs({{"batch_dims", ai(1)}}));
  });
  check("last dim", [](GraphBuilder& b) {
    return b.node(OpKind::GatherND,
                  {b.input("x", DType::kFloat32, {3, 2}), b.input("i", DType::kInt64, {2, 3})});
  });
  check("2-D", [](GraphBuilder& b) {
    return b.node(OpKind::EyeLike, {b.input("x", DType::kFloat32, {3})});
  });
  check("rank >= 2", [](GraphBuilder& b) {
    return b.node(OpKind::Trilu, {b.input("x", DType::kFloat32, {3})});
  });
  check("rank 4", [](GraphBuilder& b) {
    return b.node(OpKind::SpaceToDepth, {b.input("x", DType::kFloat32, {1, 2, 4})},
                  attrs({{"blocksize", ai(2)}}));
  });
  check("blocksize", [](GraphBuilder& b) {
    return b.node(OpKind::DepthToSpace, {b.input("x", DType::kFloat32, {1, 4, 2, 2})},
                  attrs({{"blocksize", ai(0)}}));
  });
  check("negative dim", [](GraphBuilder& b) {
    return b.node(OpKind::ConstantOfShape, {b.constant("s", ints({2, -1}))});
  });
  check("does not take bool", [](GraphBuilder& b) {
    return b.node(OpKind::CumSum,
                  {b.input("x", DType::kBool, {3}), b.constant("a", Tensor::scalar_i64(0))});
  });
  // Hostile sizes: overflow and the tensor size limit are errors, not allocations.
  check("size limit", [](GraphBuilder& b) {
    return b.node(OpKind::Range, {b.constant("s", Tensor::scalar_i64(0)),
                                  b.constant("l", Tensor::scalar_i64(INT64_MAX)),
                                  b.constant("d", Tensor::scalar_i64(1))});
  });
  check("overflows", [](GraphBuilder& b) {
    return b.node(OpKind::Tile,
                  {b.input("x", DType::kFloat32, {2}), b.constant("r", ints({INT64_MAX}))});
  });
  check("invalid size", [](GraphBuilder& b) {
    return b.node(OpKind::Pad,
                  {b.input("x", DType::kFloat32, {2}), b.constant("p", ints({INT64_MAX, 1}))});
  });
  check("size limit", [](GraphBuilder& b) {
    return b.node(OpKind::OneHot, {b.input("i", DType::kInt64, {4}),
                                   b.constant("d", Tensor::scalar_i64(int64_t{1} << 62)),
                                   b.input("v", DType::kFloat32, {2})});
  });
  check("known at build time", [](GraphBuilder& b) {
    return b.node(OpKind::CumSum,
                  {b.input("x", DType::kFloat32, {3}), b.input("a", DType::kInt64, {})});
  });
}
