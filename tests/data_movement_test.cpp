// Shape and data-movement ops, part 1: Shape/Size and constant folding of
// shape arithmetic, the Reshape family, Transpose, Concat, Split, Slice,
// Expand, Tile, Pad, the opset importers and error paths. Gather/Scatter and
// the generators are in data_movement_index_test.cpp.
#include <fmt/ranges.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <numeric>
#include <optional>

#include "importer/importer.h"
#include "onnx/onnx.pb.h"
#include "tests/data_movement_test_util.h"

using namespace graphc;
using namespace graphc::ir;
using namespace graphc::testing::dm;
using graphc::testing::attrs;
using graphc::testing::GraphBuilder;
using graphc::testing::random_tensor;
using graphc::testing::test_rng;

TEST_CASE("Shape -> Gather -> Unsqueeze -> Concat -> Reshape resolves statically",
          "[data_movement]") {
  // The classic exporter pattern: Shape's output is a build-time constant, the
  // shape arithmetic folds through the reference kernels and Reshape gets a
  // static output shape; the data passes through unchanged.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 3, 4});
  auto shp = b.node(OpKind::Shape, {x});
  auto d0 = b.node(OpKind::Gather, {shp, b.constant("zero", Tensor::scalar_i64(0))},
                   attrs({{"axis", ai(0)}}));
  auto d0v = b.node(OpKind::Unsqueeze, {d0, b.constant("axes", ints({0}))});
  auto target =
      b.node(OpKind::Concat, {d0v, b.constant("m1", ints({-1}))}, attrs({{"axis", ai(0)}}));
  auto y = b.node(OpKind::Reshape, {x, target});
  b.output(y);
  Graph g = b.build();
  REQUIRE(g.value(shp).constant);
  CHECK(g.value(shp).constant->to_i64_vector() == std::vector<int64_t>{2, 3, 4});
  REQUIRE(g.value(target).constant);
  CHECK(g.value(target).constant->to_i64_vector() == std::vector<int64_t>{2, -1});
  CHECK(g.value(y).shape == Shape{2, 12});
  Tensor xv = random_tensor(DType::kFloat32, {2, 3, 4}, test_rng());
  auto out = reference::execute(g, {{"x", xv}});
  REQUIRE(out.ok());
  const Tensor& yv = out->at(g.value(y).name);
  CHECK(yv.shape() == Shape{2, 12});
  CHECK(yv.same_bytes(xv.reshaped({2, 12})));
}

TEST_CASE("Shape start/end clamp and Size is a constant", "[data_movement]") {
  // Opset-15 Shape slicing: negative start/end count from the back and are
  // clamped to [0, rank]; end < start gives an empty shape. Size is numel.
  struct Case {
    int64_t start;
    std::optional<int64_t> end;
    std::vector<int64_t> want;
  };
  std::vector<Case> cases = {{0, {}, {5, 6, 7}}, {1, {}, {6, 7}},      {-1, {}, {7}},
                             {0, -1, {5, 6}},    {-10, {}, {5, 6, 7}}, {0, 10, {5, 6, 7}},
                             {2, 1, {}},         {1, 2, {6}},          {3, {}, {}}};
  for (const auto& c : cases) {
    GraphBuilder b;
    auto x = b.input("x", DType::kInt8, {5, 6, 7});
    AttributeMap a = attrs({{"start", ai(c.start)}});
    if (c.end) a.set("end", ai(*c.end));
    auto s = b.node(OpKind::Shape, {x}, a);
    auto n = b.node(OpKind::Size, {x});
    auto out = run(b, {s, n}, {{"x", random_tensor(DType::kInt8, {5, 6, 7}, test_rng())}});
    REQUIRE(out.ok());
    CHECK((*out)[0].to_i64_vector() == c.want);
    CHECK((*out)[1].shape().empty());
    CHECK((*out)[1].get_i64(0) == 210);
    CHECK(b.graph().value(s).constant->to_i64_vector() == c.want);
  }
}

TEST_CASE("Reshape: 0 copies, -1 infers, allowzero keeps zeros", "[data_movement]") {
  // Output shapes of Reshape for the special values, checked against hand-computed shapes;
  // the bytes must be unchanged.
  struct Case {
    Shape in;
    std::vector<int64_t> target;
    int64_t allowzero;
    Shape want;
  };
  std::vector<Case> cases = {
      {{2, 3, 4}, {0, -1}, 0, {2, 12}},  {{2, 3, 4}, {4, 0, -1}, 0, {4, 3, 2}},
      {{2, 3, 4}, {-1}, 0, {24}},        {{0, 3}, {3, 0}, 1, {3, 0}},
      {{2, 3}, {1, 6, 1}, 1, {1, 6, 1}}, {{4}, {2, -1, 2}, 0, {2, 1, 2}}};
  for (const auto& c : cases) {
    for (DType dt : {DType::kFloat16, DType::kUInt64, DType::kBool}) {
      GraphBuilder b;
      auto x = b.input("x", dt, c.in);
      auto y = b.node(OpKind::Reshape, {x, b.constant("s", ints(c.target))},
                      attrs({{"allowzero", ai(c.allowzero)}}));
      Tensor xv = random_tensor(dt, c.in, test_rng());
      auto out = run1(b, y, {{"x", xv}});
      REQUIRE(out.ok());
      CHECK(out->shape() == c.want);
      CHECK(out->same_bytes(xv.reshaped(c.want)));
    }
  }
}

TEST_CASE("Reshape rejects bad shapes with clear errors", "[data_movement]") {
  // Element-count mismatch, two -1s, 0 and -1 under allowzero, a 0 past the
  // input rank, and a non-int64 / non-1-D shape input are invalid_model errors.
  struct Case {
    std::vector<int64_t> target;
    int64_t allowzero;
    const char* needle;
  };
  std::vector<Case> cases = {{{5, -1}, 0, "multiple"},          {{2, 3, 5}, 0, "elements"},
                             {{-1, -1}, 0, "more than one -1"}, {{0, -1}, 1, "allowzero"},
                             {{2, 3, 4, 0}, 0, "rank"},         {{2, -2, 12}, 0, "invalid dim"}};
  for (const auto& c : cases) {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {2, 3, 4});
    auto y = b.node(OpKind::Reshape, {x, b.constant("s", ints(c.target))},
                    attrs({{"allowzero", ai(c.allowzero)}}));
    b.output(y);
    Status st = infer(b);
    REQUIRE(!st.ok());
    CHECK(st.code() == ErrorCode::kInvalidModel);
    CHECK_THAT(st.message(), Catch::Contains(c.needle));
  }
  {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {2, 3});
    b.output(b.node(OpKind::Reshape, {x, b.constant("s", ints({6}).cast_to(DType::kInt32))}));
    Status st = infer(b);
    CHECK(st.code() == ErrorCode::kInvalidModel);
    CHECK_THAT(st.message(), Catch::Contains("int64"));
  }
  {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {2, 3});
    b.output(b.node(OpKind::Reshape, {x, b.constant("s", Tensor::from_i64({6, 1}, {1, 2}))}));
    Status st = infer(b);
    CHECK(st.code() == ErrorCode::kInvalidModel);
    CHECK_THAT(st.message(), Catch::Contains("1-D"));
  }
}

TEST_CASE("Flatten, Squeeze and Unsqueeze shapes", "[data_movement]") {
  // Flatten axis in [-r, r]; Squeeze with negative axes and without axes;
  // Unsqueeze with negative and unsorted axes (indices of the output).
  auto shape_of = [](OpKind op, Shape in, AttributeMap a,
                     std::optional<std::vector<int64_t>> axes) -> Expected<Shape> {
    GraphBuilder b;
    auto x = b.input("x", DType::kInt16, in);
    std::vector<ValueId> ins = {x};
    if (axes) ins.push_back(b.constant("axes", ints(*axes)));
    auto y = b.node(op, ins, a);
    Tensor xv = random_tensor(DType::kInt16, in, test_rng());
    ASSIGN_OR_RETURN(Tensor out, run1(b, y, {{"x", xv}}));
    if (!out.same_bytes(xv.reshaped(out.shape()))) return internal_error("bytes changed");
    return out.shape();
  };
  Shape s{2, 3, 4, 5};
  CHECK(shape_of(OpKind::Flatten, s, attrs({{"axis", ai(0)}}), {}).value() == Shape{1, 120});
  CHECK(shape_of(OpKind::Flatten, s, {}, {}).value() == Shape{2, 60});
  CHECK(shape_of(OpKind::Flatten, s, attrs({{"axis", ai(4)}}), {}).value() == Shape{120, 1});
  CHECK(shape_of(OpKind::Flatten, s, attrs({{"axis", ai(-1)}}), {}).value() == Shape{24, 5});
  CHECK(shape_of(OpKind::Flatten, s, attrs({{"axis", ai(-4)}}), {}).value() == Shape{1, 120});
  CHECK(!shape_of(OpKind::Flatten, s, attrs({{"axis", ai(5)}}), {}).ok());
  CHECK(!shape_of(OpKind::Flatten, s, attrs({{"axis", ai(-5)}}), {}).ok());

  Shape q{1, 3, 1, 2};
  CHECK(shape_of(OpKind::Squeeze, q, {}, std::vector<int64_t>{-2}).value() == Shape{1, 3, 2});
  CHECK(shape_of(OpKind::Squeeze, q, {}, {}).value() == Shape{3, 2});
  CHECK(shape_of(OpKind::Squeeze, q, {}, std::vector<int64_t>{0, 2}).value() == Shape{3, 2});
  auto bad = shape_of(OpKind::Squeeze, q, {}, std::vector<int64_t>{1});
  CHECK(bad.status().code() == ErrorCode::kInvalidModel);
  CHECK_THAT(bad.status().message(), Catch::Contains("not 1"));
  bad = shape_of(OpKind::Squeeze, q, {}, std::vector<int64_t>{0, -4});
  CHECK_THAT(bad.status().message(), Catch::Contains("more than once"));
  bad = shape_of(OpKind::Squeeze, q, {}, std::vector<int64_t>{4});
  CHECK_THAT(bad.status().message(), Catch::Contains("out of range"));

  Shape u{3, 2};
  CHECK(shape_of(OpKind::Unsqueeze, u, {}, std::vector<int64_t>{-1, 0}).value() ==
        Shape{1, 3, 2, 1});
  CHECK(shape_of(OpKind::Unsqueeze, u, {}, std::vector<int64_t>{3, 1}).value() ==
        Shape{3, 1, 2, 1});
  CHECK(shape_of(OpKind::Unsqueeze, u, {}, std::vector<int64_t>{1}).value() == Shape{3, 1, 2});
  CHECK(!shape_of(OpKind::Unsqueeze, u, {}, std::vector<int64_t>{0, 0}).ok());
  CHECK(!shape_of(OpKind::Unsqueeze, u, {}, std::vector<int64_t>{3}).ok());
  CHECK(!shape_of(OpKind::Unsqueeze, u, {}, std::vector<int64_t>{-4}).ok());
}

TEST_CASE("Transpose matches a hand-written permutation on random shapes", "[data_movement]") {
  // out[i_0..i_r] = in[j] with j[perm[k]] = i_k, for random ranks, shapes,
  // permutations and dtypes; no perm reverses the dims.
  for (int trial = 0; trial < 30; ++trial) {
    auto rank = static_cast<size_t>(rand_int(0, 5));
    Shape in = rand_shape(rank);
    std::vector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    bool default_perm = trial % 5 == 0;
    if (default_perm)
      std::reverse(perm.begin(), perm.end());
    else
      std::shuffle(perm.begin(), perm.end(), test_rng());
    DType dt = all_dtypes()[static_cast<size_t>(trial) % all_dtypes().size()];
    GraphBuilder b;
    auto x = b.input("x", dt, in);
    auto y = b.node(OpKind::Transpose, {x},
                    default_perm ? AttributeMap{} : attrs({{"perm", ais(perm)}}));
    Tensor xv = random_tensor(dt, in, test_rng());
    auto out = run1(b, y, {{"x", xv}});
    REQUIRE(out.ok());
    Shape os(rank);
    for (size_t k = 0; k < rank; ++k) os[k] = in[static_cast<size_t>(perm[k])];
    REQUIRE(out->shape() == os);
    for (int64_t i = 0; i < out->numel(); ++i) {
      auto oi = unflat(i, os);
      std::vector<int64_t> ii(rank);
      for (size_t k = 0; k < rank; ++k) ii[static_cast<size_t>(perm[k])] = oi[k];
      REQUIRE(same_elem(*out, i, xv, flat(ii, in)));
    }
  }
}

TEST_CASE("Transpose rejects perms that are not permutations", "[data_movement]") {
  // Repeated, out-of-range, negative entries and wrong length are invalid_model errors.
  for (auto perm : std::vector<std::vector<int64_t>>{{0, 0, 1}, {0, 1}, {0, 1, 3}, {-1, 0, 1}}) {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {2, 3, 4});
    b.output(b.node(OpKind::Transpose, {x}, attrs({{"perm", ais(perm)}})));
    Status st = infer(b);
    CHECK(st.code() == ErrorCode::kInvalidModel);
    CHECK_THAT(st.message(), Catch::Contains("perm"));
  }
}

TEST_CASE("Concat with negative axes and zero-size inputs", "[data_movement]") {
  // Concatenation of random inputs (one of them empty along the axis) matches
  // a hand-written walk over the output.
  for (int trial = 0; trial < 20; ++trial) {
    auto rank = static_cast<size_t>(rand_int(1, 4));
    Shape base = rand_shape(rank);
    int64_t axis = rand_int(-static_cast<int64_t>(rank), static_cast<int64_t>(rank) - 1);
    auto ax = static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis);
    DType dt = all_dtypes()[static_cast<size_t>(trial) % all_dtypes().size()];
    GraphBuilder b;
    std::vector<ValueId> ins;
    std::map<std::string, Tensor> feeds;
    std::vector<Tensor> vals;
    int n = static_cast<int>(rand_int(1, 4));
    for (int k = 0; k < n; ++k) {
      Shape s = base;
      s[ax] = k == 1 ? 0 : rand_int(1, 3);
      std::string name = "x" + std::to_string(k);
      ins.push_back(b.input(name, dt, s));
      vals.push_back(random_tensor(dt, s, test_rng()));
      feeds[name] = vals.back();
    }
    auto out = run1(b, b.node(OpKind::Concat, ins, attrs({{"axis", ai(axis)}})), feeds);
    REQUIRE(out.ok());
    for (int64_t i = 0; i < out->numel(); ++i) {
      auto idx = unflat(i, out->shape());
      int64_t pos = idx[ax];
      size_t k = 0;
      while (pos >= vals[k].shape()[ax]) pos -= vals[k++].shape()[ax];
      idx[ax] = pos;
      REQUIRE(same_elem(*out, i, vals[k], flat(idx, vals[k].shape())));
    }
  }
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 3});
  auto z = b.input("z", DType::kFloat32, {3, 3});
  b.output(b.node(OpKind::Concat, {x, z}, attrs({{"axis", ai(1)}})));
  CHECK_THAT(infer(b).message(), Catch::Contains("differs"));
}

TEST_CASE("Split: split input, num_outputs with an uneven last chunk, equal parts",
          "[data_movement]") {
  // Chunk shapes and contents along the axis, against slicing by hand.
  struct Case {
    std::optional<std::vector<int64_t>> split;
    int64_t num_outputs_attr;
    int outputs;
    int64_t axis;
    std::vector<int64_t> want;
  };
  std::vector<Case> cases = {{{}, 4, 4, 1, {2, 2, 2, 1}},
                             {std::vector<int64_t>{3, 0, 4}, -1, 3, -1, {3, 0, 4}},
                             {{}, -1, 7, 1, {1, 1, 1, 1, 1, 1, 1}},
                             {{}, 3, 3, 1, {3, 3, 1}},
                             {{}, -1, 1, 0, {2}}};
  for (const auto& c : cases) {
    GraphBuilder b;
    Shape in{2, 7};
    auto x = b.input("x", DType::kUInt8, in);
    std::vector<ValueId> ins = {x};
    if (c.split) ins.push_back(b.constant("split", ints(*c.split)));
    AttributeMap a = attrs({{"axis", ai(c.axis)}});
    if (c.num_outputs_attr >= 0) a.set("num_outputs", ai(c.num_outputs_attr));
    ValueId first = b.node(OpKind::Split, ins, a, c.outputs);
    std::vector<ValueId> outs;
    for (int k = 0; k < c.outputs; ++k) outs.push_back(first + k);
    Tensor xv = random_tensor(DType::kUInt8, in, test_rng(), 0, 255);
    auto res = run(b, outs, {{"x", xv}});
    REQUIRE(res.ok());
    auto ax = static_cast<size_t>(c.axis < 0 ? c.axis + 2 : c.axis);
    int64_t offset = 0;
    for (size_t k = 0; k < outs.size(); ++k) {
      const Tensor& t = (*res)[k];
      Shape want = in;
      want[ax] = c.want[k];
      REQUIRE(t.shape() == want);
      for (int64_t i = 0; i < t.numel(); ++i) {
        auto idx = unflat(i, want);
        idx[ax] += offset;
        CHECK(same_elem(t, i, xv, flat(idx, in)));
      }
      offset += c.want[k];
    }
  }
  // Errors: uneven without num_outputs, split sum mismatch, too many chunks.
  auto split_error = [](std::optional<std::vector<int64_t>> split, int64_t num_attr, int outs) {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {7});
    std::vector<ValueId> ins = {x};
    if (split) ins.push_back(b.constant("split", ints(*split)));
    AttributeMap a;
    if (num_attr >= 0) a.set("num_outputs", ai(num_attr));
    b.node(OpKind::Split, ins, a, outs);
    return infer(b);
  };
  CHECK_THAT(split_error({}, -1, 3).message(), Catch::Contains("equal parts"));
  CHECK_THAT(split_error(std::vector<int64_t>{3, 3}, -1, 2).message(), Catch::Contains("sums to"));
  CHECK_THAT(split_error(std::vector<int64_t>{7}, -1, 2).message(), Catch::Contains("entries"));
  CHECK(split_error({}, 5, 4).code() == ErrorCode::kInvalidModel);
  CHECK(split_error({}, 6, 6).code() == ErrorCode::kInvalidModel);  // 7 into 6 chunks of 2
}

namespace {
// Indices a slice selects on one dim, by an independent rule: every position
// in the (normalized, clamped) half-open range reachable from start by whole
// steps, in step order.
std::vector<int64_t> naive_slice(int64_t dim, int64_t start, int64_t end, int64_t step) {
  int64_t s = start < 0 ? start + dim : start, e = end < 0 ? end + dim : end;
  // The spec (and onnxruntime) clamp a negative-step start into [0, dim-1]:
  // start -5 on a dim of 3 picks element 0, where numpy's x[-5::-1] is empty.
  s = step > 0 ? std::max<int64_t>(s, 0) : std::clamp<int64_t>(s, 0, dim - 1);
  std::vector<int64_t> picked;
  for (int64_t i = 0; i < dim; ++i) {
    bool in = step > 0 ? (s <= i && i < e && (i - s) % step == 0)
                       : (e < i && i <= s && (s - i) % -step == 0);
    if (in) picked.push_back(i);
  }
  if (step < 0) std::reverse(picked.begin(), picked.end());
  return picked;
}
}  // namespace

TEST_CASE("Slice with negative steps, clamping and INT64 sentinels", "[data_movement]") {
  // Random starts/ends/steps (including INT64_MAX/INT64_MIN and out-of-range
  // values) on random axes, against a per-dim membership rule.
  const std::vector<int64_t> specials = {INT64_MAX, INT64_MIN, -100, 100};
  for (int trial = 0; trial < 60; ++trial) {
    auto rank = static_cast<size_t>(rand_int(1, 4));
    Shape in = rand_shape(rank, 0, 6);
    std::vector<int64_t> axes(rank);
    std::iota(axes.begin(), axes.end(), 0);
    std::shuffle(axes.begin(), axes.end(), test_rng());
    axes.resize(static_cast<size_t>(rand_int(1, static_cast<int64_t>(rank))));
    std::vector<int64_t> starts, ends, steps, neg_axes;
    for (int64_t a : axes) {
      int64_t dim = in[static_cast<size_t>(a)];
      auto pick = [&]() {
        return rand_int(0, 4) == 0 ? specials[static_cast<size_t>(rand_int(0, 3))]
                                   : rand_int(-dim - 2, dim + 2);
      };
      starts.push_back(pick());
      ends.push_back(pick());
      int64_t st = rand_int(1, 3) * (rand_int(0, 1) ? 1 : -1);
      steps.push_back(st);
      neg_axes.push_back(rand_int(0, 1) ? a - static_cast<int64_t>(rank) : a);
    }
    GraphBuilder b;
    auto x = b.input("x", DType::kInt32, in);
    auto y = b.node(OpKind::Slice, {x, b.constant("s", ints(starts)), b.constant("e", ints(ends)),
                                    b.constant("a", ints(neg_axes)), b.constant("t", ints(steps))});
    Tensor xv = random_tensor(DType::kInt32, in, test_rng(), -1000, 1000);
    auto out = run1(b, y, {{"x", xv}});
    REQUIRE(out.ok());
    std::vector<std::vector<int64_t>> picks(rank);
    for (size_t d = 0; d < rank; ++d) {
      picks[d].resize(static_cast<size_t>(in[d]));
      std::iota(picks[d].begin(), picks[d].end(), 0);
    }
    for (size_t k = 0; k < axes.size(); ++k)
      picks[static_cast<size_t>(axes[k])] =
          naive_slice(in[static_cast<size_t>(axes[k])], starts[k], ends[k], steps[k]);
    Shape want(rank);
    for (size_t d = 0; d < rank; ++d) want[d] = static_cast<int64_t>(picks[d].size());
    INFO("shape " << shape_to_string(in) << " starts " << fmt::format("{}", fmt::join(starts, ","))
                  << " ends " << fmt::format("{}", fmt::join(ends, ",")) << " axes "
                  << fmt::format("{}", fmt::join(neg_axes, ",")) << " steps "
                  << fmt::format("{}", fmt::join(steps, ",")));
    REQUIRE(out->shape() == want);
    for (int64_t i = 0; i < out->numel(); ++i) {
      auto idx = unflat(i, want);
      for (size_t d = 0; d < rank; ++d) idx[d] = picks[d][static_cast<size_t>(idx[d])];
      REQUIRE(out->get_i64(i) == xv.get_i64(flat(idx, in)));
    }
  }
  // Known case: reverse a whole axis with the sentinels.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {4});
  auto y =
      b.node(OpKind::Slice, {x, b.constant("s", ints({-1})), b.constant("e", ints({INT64_MIN})),
                             b.constant("a", ints({0})), b.constant("t", ints({-1}))});
  auto out = run1(b, y, {{"x", Tensor::from_f32({1, 2, 3, 4}, {4})}});
  REQUIRE(out.ok());
  CHECK(out->to_f64_vector() == std::vector<double>{4, 3, 2, 1});
  // Errors: zero step and a repeated axis.
  for (auto [axes, steps] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{0, 1}, {1, 0}}, {{0, -2}, {1, 1}}}) {
    GraphBuilder e;
    auto xx = e.input("x", DType::kFloat32, {3, 4});
    e.output(
        e.node(OpKind::Slice, {xx, e.constant("s", ints({0, 0})), e.constant("e", ints({2, 2})),
                               e.constant("a", ints(axes)), e.constant("t", ints(steps))}));
    CHECK(infer(e).code() == ErrorCode::kInvalidModel);
  }
}

TEST_CASE("Expand broadcasts both ways and Tile repeats", "[data_movement]") {
  // Expand's output is broadcast(input, shape) (a 1 in shape keeps the input
  // dim); Tile's element i comes from input index i mod dim, per dim.
  struct ECase {
    Shape in;
    std::vector<int64_t> shape;
    Shape want;
  };
  for (const auto& c : std::vector<ECase>{{{3, 1}, {2, 1, 4}, {2, 3, 4}},
                                          {{2, 3}, {1}, {2, 3}},
                                          {{1}, {0}, {0}},
                                          {{4, 1, 2}, {4, 3, 1}, {4, 3, 2}}}) {
    GraphBuilder b;
    auto x = b.input("x", DType::kBFloat16, c.in);
    auto y = b.node(OpKind::Expand, {x, b.constant("s", ints(c.shape))});
    Tensor xv = random_tensor(DType::kBFloat16, c.in, test_rng());
    auto out = run1(b, y, {{"x", xv}});
    REQUIRE(out.ok());
    REQUIRE(out->shape() == c.want);
    size_t lead = c.want.size() - c.in.size();
    for (int64_t i = 0; i < out->numel(); ++i) {
      auto oi = unflat(i, c.want);
      std::vector<int64_t> ii(c.in.size());
      for (size_t d = 0; d < c.in.size(); ++d) ii[d] = c.in[d] == 1 ? 0 : oi[lead + d];
      REQUIRE(same_elem(*out, i, xv, flat(ii, c.in)));
    }
  }
  for (int trial = 0; trial < 10; ++trial) {
    auto rank = static_cast<size_t>(rand_int(1, 3));
    Shape in = rand_shape(rank);
    std::vector<int64_t> reps(rank);
    for (auto& r : reps) r = rand_int(0, 3);
    GraphBuilder b;
    auto x = b.input("x", DType::kInt64, in);
    auto y = b.node(OpKind::Tile, {x, b.constant("r", ints(reps))});
    Tensor xv = random_tensor(DType::kInt64, in, test_rng(), -1e6, 1e6);
    auto out = run1(b, y, {{"x", xv}});
    REQUIRE(out.ok());
    for (size_t d = 0; d < rank; ++d) REQUIRE(out->shape()[d] == in[d] * reps[d]);
    for (int64_t i = 0; i < out->numel(); ++i) {
      auto idx = unflat(i, out->shape());
      for (size_t d = 0; d < rank; ++d) idx[d] %= in[d];
      REQUIRE(out->get_i64(i) == xv.get_i64(flat(idx, in)));
    }
  }
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 3});
  b.output(b.node(OpKind::Expand, {x, b.constant("s", ints({4, 3}))}));
  CHECK(infer(b).code() == ErrorCode::kInvalidModel);
  GraphBuilder t;
  auto tx = t.input("x", DType::kFloat32, {2, 3});
  t.output(t.node(OpKind::Tile, {tx, t.constant("r", ints({2}))}));
  CHECK_THAT(infer(t).message(), Catch::Contains("repeats"));
}

namespace {
Expected<Tensor> run_pad(const Tensor& x, std::vector<int64_t> pads, const std::string& mode,
                         std::optional<Tensor> value, std::optional<std::vector<int64_t>> axes) {
  GraphBuilder b;
  auto xi = b.input("x", x.dtype(), x.shape());
  std::vector<ValueId> ins = {xi, b.constant("pads", ints(pads))};
  ins.push_back(value ? b.constant("value", *value) : kNoValue);
  if (axes) ins.push_back(b.constant("axes", ints(*axes)));
  auto y = b.node(OpKind::Pad, ins, attrs({{"mode", as(mode)}}));
  return run1(b, y, {{"x", x}});
}
}  // namespace

TEST_CASE("Pad modes constant, reflect, edge, wrap match numpy.pad", "[data_movement]") {
  // Expected values computed with numpy.pad on [[1,2,3],[4,5,6]] with pad
  // widths ((1,2),(2,3)); reflect/wrap pad further than the dim itself.
  Tensor x = Tensor::from_i64({1, 2, 3, 4, 5, 6}, {2, 3});
  std::vector<int64_t> pads = {1, 2, 2, 3};
  std::map<std::string, std::vector<int64_t>> want = {
      {"reflect", {6, 5, 4, 5, 6, 5, 4, 5, 3, 2, 1, 2, 3, 2, 1, 2, 6, 5, 4, 5,
                   6, 5, 4, 5, 3, 2, 1, 2, 3, 2, 1, 2, 6, 5, 4, 5, 6, 5, 4, 5}},
      {"edge", {1, 1, 1, 2, 3, 3, 3, 3, 1, 1, 1, 2, 3, 3, 3, 3, 4, 4, 4, 5,
                6, 6, 6, 6, 4, 4, 4, 5, 6, 6, 6, 6, 4, 4, 4, 5, 6, 6, 6, 6}},
      {"wrap", {5, 6, 4, 5, 6, 4, 5, 6, 2, 3, 1, 2, 3, 1, 2, 3, 5, 6, 4, 5,
                6, 4, 5, 6, 2, 3, 1, 2, 3, 1, 2, 3, 5, 6, 4, 5, 6, 4, 5, 6}}};
  for (const auto& [mode, values] : want) {
    auto out = run_pad(x, pads, mode, {}, {});
    REQUIRE(out.ok());
    CHECK(out->shape() == Shape{5, 8});
    CHECK(out->to_i64_vector() == values);
  }
  // Constant with a value input, padding only some sides.
  auto c = run_pad(x, {0, 1, 1, 0}, "constant", Tensor::from_i64({9}, {}), {});
  REQUIRE(c.ok());
  CHECK(c->to_i64_vector() == std::vector<int64_t>{9, 1, 2, 3, 9, 4, 5, 6, 9, 9, 9, 9});
  // Negative pads crop; axes (opset 18) restrict the padded dims.
  auto crop = run_pad(Tensor::from_f32({1, 2, 3, 4, 5}, {5}), {-1, 2}, "constant",
                      Tensor::from_f32({9}, {1}), {});
  REQUIRE(crop.ok());
  CHECK(crop->to_f64_vector() == std::vector<double>{2, 3, 4, 5, 9, 9});
  auto ax = run_pad(x, {1, 0}, "edge", {}, std::vector<int64_t>{-1});
  REQUIRE(ax.ok());
  CHECK(ax->to_i64_vector() == std::vector<int64_t>{1, 1, 2, 3, 4, 4, 5, 6});
  // Reflect on the cropped window: [2,3,4] reflected by 2 on the right.
  auto rc = run_pad(Tensor::from_f32({1, 2, 3, 4, 5}, {5}), {-1, 1}, "reflect", {}, {});
  REQUIRE(rc.ok());
  CHECK(rc->to_f64_vector() == std::vector<double>{2, 3, 4, 5, 4});
}

TEST_CASE("Pad validates pads, mode and value dtype", "[data_movement]") {
  // Wrong pads length, negative output size, unknown mode, a value of another
  // dtype and padding an empty dim in edge mode are invalid_model errors.
  Tensor x = Tensor::from_f32({1, 2, 3, 4}, {2, 2});
  CHECK_THAT(run_pad(x, {1, 1}, "constant", {}, {}).status().message(), Catch::Contains("pads"));
  CHECK_THAT(run_pad(x, {-3, 0, 0, 0}, "constant", {}, {}).status().message(),
             Catch::Contains("invalid size"));
  CHECK_THAT(run_pad(x, {1, 1, 1, 1}, "mirror", {}, {}).status().message(),
             Catch::Contains("mode"));
  CHECK_THAT(run_pad(x, {1, 1, 1, 1}, "constant", Tensor::scalar_i64(1), {}).status().message(),
             Catch::Contains("must match"));
  CHECK(run_pad(x, {1, 0}, "constant", {}, std::vector<int64_t>{0, 0}).status().code() ==
        ErrorCode::kInvalidModel);
  CHECK_THAT(
      run_pad(Tensor(DType::kFloat32, {0, 2}), {1, 0, 0, 0}, "edge", {}, {}).status().message(),
      Catch::Contains("no elements"));
}

namespace {
// A one-node ONNX model of the given opset with float inputs.
struct OnnxNode {
  std::string op;
  std::vector<std::pair<std::string, Shape>> inputs;
  int outputs = 1;
  std::function<void(onnx::NodeProto&)> attrs;
};
std::string model_bytes(int64_t opset, const OnnxNode& spec) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("t");
  auto* n = g->add_node();
  n->set_op_type(spec.op);
  n->set_name("n");
  for (const auto& [name, shape] : spec.inputs) {
    n->add_input(name);
    auto* vi = g->add_input();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : shape) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  for (int o = 0; o < spec.outputs; ++o) {
    n->add_output("y" + std::to_string(o));
    g->add_output()->set_name("y" + std::to_string(o));
  }
  if (spec.attrs) spec.attrs(*n);
  return m.SerializeAsString();
}
void add_ints(onnx::NodeProto& n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
Expected<std::vector<Tensor>> import_and_run(int64_t opset, const OnnxNode& spec,
                                             const std::vector<Tensor>& inputs) {
  ASSIGN_OR_RETURN(Graph g, importer::import_model_bytes(model_bytes(opset, spec), "", "test"));
  ShapeInferenceOptions o;
  o.evaluator = reference::constant_evaluator();
  RETURN_IF_ERROR(infer_shapes(g, o));
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) feeds[spec.inputs[i].first] = inputs[i];
  ASSIGN_OR_RETURN(auto res, reference::execute(g, feeds));
  std::vector<Tensor> out;
  for (int k = 0; k < spec.outputs; ++k) out.push_back(res.at("y" + std::to_string(k)));
  return out;
}
}  // namespace

TEST_CASE("Importer converts old-opset attributes to inputs", "[data_movement]") {
  // Squeeze/Unsqueeze-11 axes, Split-11 split, Slice-9 starts/ends/axes and
  // Pad-10 pads/value attributes give the same results as the newest forms.
  Tensor x = random_tensor(DType::kFloat32, {1, 4, 1}, test_rng());
  auto sq = import_and_run(
      11, {"Squeeze", {{"x", {1, 4, 1}}}, 1, [](onnx::NodeProto& n) { add_ints(n, "axes", {-1}); }},
      {x});
  REQUIRE(sq.ok());
  CHECK((*sq)[0].shape() == Shape{1, 4});
  auto usq = import_and_run(11,
                            {"Unsqueeze",
                             {{"x", {1, 4, 1}}},
                             1,
                             [](onnx::NodeProto& n) {
                               add_ints(n, "axes", {0, 4});
                             }},
                            {x});
  REQUIRE(usq.ok());
  CHECK((*usq)[0].shape() == Shape{1, 1, 4, 1, 1});

  Tensor v = Tensor::from_f32({0, 1, 2, 3, 4, 5}, {6});
  auto sp = import_and_run(11,
                           {"Split",
                            {{"x", {6}}},
                            2,
                            [](onnx::NodeProto& n) {
                              add_ints(n, "split", {2, 4});
                            }},
                           {v});
  REQUIRE(sp.ok());
  CHECK((*sp)[0].to_f64_vector() == std::vector<double>{0, 1});
  CHECK((*sp)[1].to_f64_vector() == std::vector<double>{2, 3, 4, 5});

  auto sl = import_and_run(9,
                           {"Slice",
                            {{"x", {6}}},
                            1,
                            [](onnx::NodeProto& n) {
                              add_ints(n, "starts", {-4});
                              add_ints(n, "ends", {1000});
                              add_ints(n, "axes", {0});
                            }},
                           {v});
  REQUIRE(sl.ok());
  CHECK((*sl)[0].to_f64_vector() == std::vector<double>{2, 3, 4, 5});

  auto pd = import_and_run(10,
                           {"Pad",
                            {{"x", {6}}},
                            1,
                            [](onnx::NodeProto& n) {
                              add_ints(n, "pads", {1, 2});
                              auto* a = n.add_attribute();
                              a->set_name("value");
                              a->set_type(onnx::AttributeProto::FLOAT);
                              a->set_f(-1.5f);
                            }},
                           {v});
  REQUIRE(pd.ok());
  CHECK((*pd)[0].to_f64_vector() == std::vector<double>{-1.5, 0, 1, 2, 3, 4, 5, -1.5, -1.5});
  // Slice-9 without ends is a model error, reported without a crash.
  auto bad = import_and_run(
      9, {"Slice", {{"x", {6}}}, 1, [](onnx::NodeProto& n) { add_ints(n, "starts", {0}); }}, {v});
  CHECK(bad.status().code() == ErrorCode::kInvalidModel);
}
