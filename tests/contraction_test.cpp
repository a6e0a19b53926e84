// [contraction] MatMul, Gemm and Einsum: random inputs against naive loops
// written here, exact integer results, and error paths.
#include <catch2/catch.hpp>
#include <cmath>

#include "tests/contraction_helpers.h"

using namespace graphc;
using namespace graphc::ir;
using namespace graphc::testing;
using namespace graphc::testing::contraction;

namespace {

// numpy matmul written out: promote 1-D operands, broadcast batch dims
// right-aligned, sum over k. Returns the output shape and values.
std::pair<Shape, std::vector<double>> naive_matmul(const Tensor& A, const Tensor& B) {
  Shape a = A.shape(), b = B.shape();
  bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), 1);
  if (b1) b.push_back(1);
  size_t ra = a.size() - 2, rb = b.size() - 2, r = std::max(ra, rb);
  Shape batch(r);
  for (size_t d = 0; d < r; ++d) {
    int64_t da = d + ra >= r ? a[d + ra - r] : 1, db = d + rb >= r ? b[d + rb - r] : 1;
    batch[d] = std::max(da, db);
  }
  int64_t M = a[ra], K = a[ra + 1], N = b[rb + 1];
  Shape out = batch;
  if (!a1) out.push_back(M);
  if (!b1) out.push_back(N);
  std::vector<double> v;
  std::vector<int64_t> bi(r, 0);
  int64_t nb = 1;
  for (int64_t d : batch) nb *= d;
  for (int64_t t = 0; t < nb; ++t) {
    // batch index of t
    int64_t rem = t;
    for (size_t d = r; d-- > 0;) {
      bi[d] = rem % batch[d];
      rem /= batch[d];
    }
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t p = 0; p < K; ++p) {
          std::vector<int64_t> ia, ib;
          for (size_t d = 0; d < ra; ++d) ia.push_back(a[d] == 1 ? 0 : bi[d + r - ra]);
          for (size_t d = 0; d < rb; ++d) ib.push_back(b[d] == 1 ? 0 : bi[d + r - rb]);
          ia.push_back(i);
          ia.push_back(p);
          ib.push_back(p);
          ib.push_back(j);
          s += A.get_f64(flat(a, ia)) * B.get_f64(flat(b, ib));
        }
        v.push_back(s);
      }
  }
  return {out, v};
}

void check_close(const Tensor& got, const Shape& shape, const std::vector<double>& want) {
  REQUIRE(got.shape() == shape);
  REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < got.numel(); ++i) {
    double w = want[static_cast<size_t>(i)];
    double tol =
        is_float(got.dtype()) ? tolerance_for(got.dtype(), std::max(1.0, std::fabs(w))) : 0;
    INFO("element " << i << " dtype " << dtype_name(got.dtype()));
    CHECK(std::fabs(got.get_f64(i) - w) <= tol);
  }
}

}  // namespace

TEST_CASE("MatMul matches a naive loop with 1-D promotion and batch broadcasting",
          "[contraction]") {
  // Random operands of many shape pairs and float dtypes vs naive_matmul.
  auto& rng = test_rng();
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 4}, {4, 5}},    {{2, 3, 4}, {2, 4, 3}}, {{3, 1, 3, 4}, {1, 2, 4, 2}},
      {{4}, {4}},          {{4}, {2, 4, 3}},       {{2, 3, 4}, {4}},
      {{5, 2, 3}, {3, 6}}, {{2, 3}, {4, 1, 3, 2}}, {{1, 2, 4, 3}, {3}},
      {{1, 7}, {7, 1}},    {{2, 1, 2, 3}, {3, 3}},
  };
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    for (const auto& [sa, sb] : cases) {
      INFO(dtype_name(dt) << " " << shape_to_string(sa) << " @ " << shape_to_string(sb));
      Tensor A = random_tensor(dt, sa, rng), B = random_tensor(dt, sb, rng);
      Tensor Y = run_op(OpKind::MatMul, {A, B});
      CHECK(Y.dtype() == dt);
      auto [shape, want] = naive_matmul(A, B);
      check_close(Y, shape, want);
    }
  }
}

TEST_CASE("MatMul on integer types is exact and wraps like the narrow type", "[contraction]") {
  // int32/int64/uint32/uint64 random operands vs naive sums; int64 values
  // beyond 2^53 (not representable in double) and int32 overflow wrap.
  auto& rng = test_rng();
  for (DType dt : {DType::kInt32, DType::kInt64, DType::kUInt32, DType::kUInt64}) {
    double lo = is_signed_integer(dt) ? -20 : 0;
    Tensor A = random_tensor(dt, {2, 3, 5}, rng, lo, 20),
           B = random_tensor(dt, {5, 4}, rng, lo, 20);
    Tensor Y = run_op(OpKind::MatMul, {A, B});
    auto [shape, want] = naive_matmul(A, B);
    check_close(Y, shape, want);
  }
  // 3037000493^2 + 1 = 9223371994482243050: exact in int64, not in double.
  Tensor A = Tensor::from_i64({3037000493, 1}, {1, 2});
  Tensor B = Tensor::from_i64({3037000493, 1}, {2, 1});
  Tensor Y = run_op(OpKind::MatMul, {A, B});
  CHECK(Y.get_i64(0) == 9223371994482243050LL);
  // int32: 65536 * 65536 wraps to 0, plus 7.
  Tensor A32 = Tensor::from_i64({65536, 7}, {1, 2}).cast_to(DType::kInt32);
  Tensor B32 = Tensor::from_i64({65536, 1}, {2, 1}).cast_to(DType::kInt32);
  CHECK(run_op(OpKind::MatMul, {A32, B32}).get_i64(0) == 7);
}

TEST_CASE("MatMul rejects mismatched inner dims, scalars and mixed dtypes", "[contraction]") {
  // Shape-rule errors name the shapes involved.
  Status st = infer_op(OpKind::MatMul, {{DType::kFloat32, {3, 4}}, {DType::kFloat32, {5, 6}}});
  REQUIRE(!st.ok());
  CHECK(mentions(st, "3x4"));
  CHECK(mentions(st, "5x6"));
  CHECK(!infer_op(OpKind::MatMul, {{DType::kFloat32, {}}, {DType::kFloat32, {3}}}).ok());
  CHECK(!infer_op(OpKind::MatMul, {{DType::kFloat32, {2, 3, 4}}, {DType::kFloat32, {3, 4, 2}}})
             .ok());  // batch 2 vs 3
  CHECK(!infer_op(OpKind::MatMul, {{DType::kFloat32, {3, 4}}, {DType::kFloat64, {4, 2}}}).ok());
  CHECK(!infer_op(OpKind::MatMul, {{DType::kInt8, {3, 4}}, {DType::kInt8, {4, 2}}}).ok());
}

TEST_CASE("Gemm matches a naive loop for every transpose, alpha, beta and C shape",
          "[contraction]") {
  // Y = alpha * op(A) op(B) + beta * C with C absent, scalar, 1-D, row, column, full.
  auto& rng = test_rng();
  const int64_t M = 3, K = 5, N = 4;
  const std::vector<std::optional<Shape>> c_shapes = {std::nullopt, Shape{},     Shape{1},
                                                      Shape{N},     Shape{1, N}, Shape{M, 1},
                                                      Shape{M, N},  Shape{1, 1}};
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kFloat16}) {
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (const auto& cs : c_shapes) {
          double alpha = ta ? 0.75 : 1.0, beta = tb ? -1.5 : 1.0;
          Tensor A = random_tensor(dt, ta ? Shape{K, M} : Shape{M, K}, rng);
          Tensor B = random_tensor(dt, tb ? Shape{N, K} : Shape{K, N}, rng);
          std::optional<Tensor> C;
          if (cs) C = random_tensor(dt, *cs, rng);
          auto a = attrs({{"transA", Attribute::of_int(ta)},
                          {"transB", Attribute::of_int(tb)},
                          {"alpha", Attribute::of_float(alpha)},
                          {"beta", Attribute::of_float(beta)}});
          INFO(dtype_name(dt) << " transA=" << ta << " transB=" << tb
                              << " C=" << (cs ? shape_to_string(*cs) : "none"));
          Tensor Y = run_op(OpKind::Gemm, {A, B, C}, a);
          std::vector<double> want;
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
              double s = 0;
              for (int64_t p = 0; p < K; ++p)
                s += A.get_f64(ta ? p * M + i : i * K + p) * B.get_f64(tb ? j * K + p : p * N + j);
              s *= alpha;
              if (C) {
                const Shape& c = C->shape();
                int64_t ci = c.size() == 2 && c[0] != 1 ? i : 0;
                int64_t cj = !c.empty() && c.back() != 1 ? j : 0;
                s += beta * C->get_f64(ci * (c.empty() ? 1 : c.back()) + cj);
              }
              want.push_back(s);
            }
          check_close(Y, {M, N}, want);
        }
  }
}

TEST_CASE("Gemm on int64 is exact, bad C shape and ranks are errors", "[contraction]") {
  // Integer Gemm with integral alpha/beta vs a hand loop; shape-rule errors.
  auto& rng = test_rng();
  Tensor A = random_tensor(DType::kInt64, {2, 3}, rng, -9, 9);
  Tensor B = random_tensor(DType::kInt64, {3, 2}, rng, -9, 9);
  Tensor C = random_tensor(DType::kInt64, {2}, rng, -9, 9);
  Tensor Y = run_op(OpKind::Gemm, {A, B, C},
                    attrs({{"alpha", Attribute::of_float(2)}, {"beta", Attribute::of_float(-3)}}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 2; ++j) {
      int64_t s = 0;
      for (int64_t p = 0; p < 3; ++p) s += A.get_i64(i * 3 + p) * B.get_i64(p * 2 + j);
      CHECK(Y.get_i64(i * 2 + j) == 2 * s - 3 * C.get_i64(j));
    }
  Status st =
      infer_op(OpKind::Gemm,
               {{DType::kFloat32, {3, 5}}, {DType::kFloat32, {5, 4}}, {DType::kFloat32, {3, 3}}});
  REQUIRE(!st.ok());
  CHECK(mentions(st, "C has shape 3x3"));
  CHECK(!infer_op(OpKind::Gemm, {{DType::kFloat32, {2, 3, 5}}, {DType::kFloat32, {5, 4}}}).ok());
  CHECK(!infer_op(OpKind::Gemm, {{DType::kFloat32, {3, 5}}, {DType::kFloat32, {4, 4}}}).ok());
  CHECK(infer_op(OpKind::Gemm, {{DType::kFloat32, {5, 3}}, {DType::kFloat32, {4, 5}}},
                 attrs({{"transA", Attribute::of_int(1)}, {"transB", Attribute::of_int(1)}}))
            .ok());
}

namespace {
Tensor einsum(const std::string& eq, const std::vector<std::optional<Tensor>>& ins) {
  return run_op(OpKind::Einsum, ins, attrs({{"equation", Attribute::of_string(eq)}}));
}
}  // namespace

TEST_CASE("Einsum matches explicit loops for matmul, batched matmul, diagonal and transpose",
          "[contraction]") {
  // Each equation vs the loop nest it denotes, written out by hand.
  auto& rng = test_rng();
  const DType f = DType::kFloat32;
  {  // ij,jk->ik
    Tensor A = random_tensor(f, {3, 4}, rng), B = random_tensor(f, {4, 5}, rng);
    Tensor Y = einsum("ij,jk->ik", {A, B});
    std::vector<double> want;
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 5; ++k) {
        double s = 0;
        for (int j = 0; j < 4; ++j) s += A.get_f64(i * 4 + j) * B.get_f64(j * 5 + k);
        want.push_back(s);
      }
    check_close(Y, {3, 5}, want);
  }
  {  // bij,bjk->bik at 2x64x64 (also checks the evaluation is not silly-slow)
    Tensor A = random_tensor(f, {2, 64, 64}, rng), B = random_tensor(f, {2, 64, 64}, rng);
    Tensor Y = einsum("bij, bjk -> bik", {A, B});
    std::vector<double> want;
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < 64; ++i)
        for (int k = 0; k < 64; ++k) {
          double s = 0;
          for (int j = 0; j < 64; ++j)
            s += A.get_f64((b * 64 + i) * 64 + j) * B.get_f64((b * 64 + j) * 64 + k);
          want.push_back(s);
        }
    check_close(Y, {2, 64, 64}, want);
  }
  {  // ii->i (diagonal) and ii (implicit: trace)
    Tensor A = random_tensor(f, {5, 5}, rng);
    std::vector<double> diag;
    double trace = 0;
    for (int i = 0; i < 5; ++i) {
      diag.push_back(A.get_f64(i * 5 + i));
      trace += A.get_f64(i * 5 + i);
    }
    check_close(einsum("ii->i", {A}), {5}, diag);
    check_close(einsum("ii", {A}), {}, {trace});
  }
  {  // ...ij->...ji with two batch dims
    Tensor A = random_tensor(f, {2, 3, 4, 5}, rng);
    Tensor Y = einsum("...ij->...ji", {A});
    std::vector<double> want;
    for (int p = 0; p < 2; ++p)
      for (int q = 0; q < 3; ++q)
        for (int j = 0; j < 5; ++j)
          for (int i = 0; i < 4; ++i) want.push_back(A.get_f64(((p * 3 + q) * 4 + i) * 5 + j));
    check_close(Y, {2, 3, 5, 4}, want);
  }
}

TEST_CASE("Einsum implicit output, ellipsis broadcasting, three operands and integers",
          "[contraction]") {
  // Implicit output is the sorted once-used letters; '...' broadcasts size-1
  // dims; a three-operand chain; int64 stays exact.
  auto& rng = test_rng();
  const DType f = DType::kFloat64;
  {  // "ba,ac" implicit -> "bc"
    Tensor A = random_tensor(f, {3, 2}, rng), B = random_tensor(f, {2, 4}, rng);
    Tensor Y = einsum("ba,ac", {A, B});
    std::vector<double> want;
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c) {
        double s = 0;
        for (int a = 0; a < 2; ++a) s += A.get_f64(b * 2 + a) * B.get_f64(a * 4 + c);
        want.push_back(s);
      }
    check_close(Y, {3, 4}, want);
  }
  {  // "...ij,...jk->...ik" with batch (2,1) vs (3): broadcast to (2,3)
    Tensor A = random_tensor(f, {2, 1, 2, 3}, rng), B = random_tensor(f, {3, 3, 2}, rng);
    Tensor Y = einsum("...ij,...jk->...ik", {A, B});
    std::vector<double> want;
    for (int p = 0; p < 2; ++p)
      for (int q = 0; q < 3; ++q)
        for (int i = 0; i < 2; ++i)
          for (int k = 0; k < 2; ++k) {
            double s = 0;
            for (int j = 0; j < 3; ++j)
              s += A.get_f64((p * 2 + i) * 3 + j) * B.get_f64((q * 3 + j) * 2 + k);
            want.push_back(s);
          }
    check_close(Y, {2, 3, 2, 2}, want);
  }
  {  // "ij,jk,kl->il" and "i,i" (inner product) and "ij->" (total sum)
    Tensor A = random_tensor(f, {2, 3}, rng), B = random_tensor(f, {3, 4}, rng),
           C = random_tensor(f, {4, 2}, rng);
    std::vector<double> want;
    for (int i = 0; i < 2; ++i)
      for (int l = 0; l < 2; ++l) {
        double s = 0;
        for (int j = 0; j < 3; ++j)
          for (int k = 0; k < 4; ++k)
            s += A.get_f64(i * 3 + j) * B.get_f64(j * 4 + k) * C.get_f64(k * 2 + l);
        want.push_back(s);
      }
    check_close(einsum("ij,jk,kl->il", {A, B, C}), {2, 2}, want);
    double dot = 0, total = 0;
    for (int i = 0; i < 6; ++i) total += A.get_f64(i);
    Tensor u = random_tensor(f, {6}, rng), v = random_tensor(f, {6}, rng);
    for (int i = 0; i < 6; ++i) dot += u.get_f64(i) * v.get_f64(i);
    check_close(einsum("i,i", {u, v}), {}, {dot});
    check_close(einsum("ij->", {A}), {}, {total});
  }
  {  // int64 "bii->bi" diagonal per batch, exact
    Tensor A = random_tensor(DType::kInt64, {2, 3, 3}, rng, -100, 100);
    Tensor Y = einsum("bii->bi", {A});
    REQUIRE(Y.shape() == Shape{2, 3});
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < 3; ++i) CHECK(Y.get_i64(b * 3 + i) == A.get_i64((b * 3 + i) * 3 + i));
  }
  {  // bfloat16 stored as bfloat16
    Tensor A = random_tensor(DType::kBFloat16, {3, 4}, rng);
    Tensor Y = einsum("ij->i", {A});
    std::vector<double> want;
    for (int i = 0; i < 3; ++i) {
      double s = 0;
      for (int j = 0; j < 4; ++j) s += A.get_f64(i * 4 + j);
      want.push_back(s);
    }
    CHECK(Y.dtype() == DType::kBFloat16);
    check_close(Y, {3}, want);
  }
}

TEST_CASE("Einsum rejects equations that do not fit the inputs", "[contraction]") {
  // Term count, rank, extents, unknown or repeated output letters, bad characters.
  auto eq = [](const std::string& e) { return attrs({{"equation", Attribute::of_string(e)}}); };
  const DType f = DType::kFloat32;
  auto bad = [&](const std::string& e, std::vector<std::pair<DType, Shape>> ins,
                 const std::string& text) {
    Status st = infer_op(OpKind::Einsum, ins, eq(e));
    INFO(e << ": " << st.message());
    CHECK(!st.ok());
    CHECK(mentions(st, text));
  };
  bad("ij,jk->ik", {{f, {2, 3}}}, "2 input term(s)");
  bad("ijk->i", {{f, {2, 3}}}, "rank 2");
  bad("ij,jk->ik", {{f, {2, 3}}, {f, {4, 5}}}, "letter 'j'");
  bad("ij->ik", {{f, {2, 3}}}, "output letter 'k'");
  bad("ij->ii", {{f, {2, 3}}}, "more than once");
  bad("i1->i", {{f, {2, 3}}}, "character '1'");
  bad("..i.->i", {{f, {2, 3}}}, "'.'");
  bad("...ij->ij", {{f, {4, 2, 3}}}, "no '...'");
  bad("...i,...i->...i", {{f, {2, 3}}, {f, {4, 3}}}, "broadcast");
  CHECK(!infer_op(OpKind::Einsum, {{f, {2}}}).ok());     // no equation attribute
  CHECK(!infer_op(OpKind::Einsum, {}, eq("->")).ok());   // no inputs: an error, not a crash
  CHECK(!infer_op(OpKind::MatMul, {{f, {2, 2}}}).ok());  // missing input B
  {  // 1000^4 loop steps: the kernel refuses instead of running for hours
    GraphBuilder b;
    std::vector<ValueId> ids;
    std::map<std::string, Tensor> feeds;
    for (int i = 0; i < 4; ++i) {
      std::string name = fmt::format("v{}", i);
      ids.push_back(b.input(name, f, {1000}));
      feeds[name] = random_tensor(f, {1000}, test_rng());
    }
    b.output(b.node(OpKind::Einsum, ids, eq("a,b,c,d->")));
    Graph g = b.build();
    auto r = reference::execute(g, feeds);
    REQUIRE(!r.ok());
    CHECK(r.status().code() == ErrorCode::kUnsupported);
  }
  CHECK(infer_op(OpKind::Einsum, {{f, {4, 2, 3}}}, eq("...ij->...")).ok());
}
