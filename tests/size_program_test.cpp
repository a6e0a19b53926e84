// Size programs (support/size_program.h): what dynamic engines evaluate at run
// time. A dim expression's program computes what the expression does at
// random points, and damaged programs are refused rather than run.
#include <catch2/catch.hpp>
#include <climits>
#include <random>

#include "ir/dim_expr.h"
#include "support/size_program.h"
#include "tests/test_util.h"

using namespace graphc;
using ir::DimExpr;

namespace {

// A random expression over `symbols` symbols, `depth` levels of operations.
DimExpr random_expr(std::mt19937& rng, int symbols, int depth) {
  std::uniform_int_distribution<int> pick(0, depth > 0 ? 7 : 1);
  auto leaf = [&]() -> DimExpr {
    std::uniform_int_distribution<int> which(0, symbols);
    const int w = which(rng);
    if (w == symbols) return DimExpr(std::uniform_int_distribution<int64_t>(-9, 64)(rng));
    return DimExpr::symbol(w);
  };
  const int op = pick(rng);
  if (op <= 1) return leaf();
  const DimExpr a = random_expr(rng, symbols, depth - 1), b = random_expr(rng, symbols, depth - 1);
  switch (op) {
    case 2: return a + b;
    case 3: return a - b;
    case 4: return a * b;
    case 5: return DimExpr::floor_div(a, DimExpr::max(b, DimExpr(1)));
    case 6: return DimExpr::min(a, b);
    default: return DimExpr::max(a, b);
  }
}

SizeProgram program(std::vector<int64_t> code) { return SizeProgram{std::move(code)}; }

}  // namespace

TEST_CASE("a dim expression's size program computes the expression", "[size_program]") {
  auto& rng = testing::test_rng();
  std::uniform_int_distribution<int64_t> value(1, 600);
  int compared = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const DimExpr e = random_expr(rng, 3, 3);
    const SizeProgram p = e.to_program();
    REQUIRE(validate_size_program(p, 3).ok());
    for (int point = 0; point < 5; ++point) {
      const std::vector<int64_t> symbols{value(rng), value(rng), value(rng)};
      auto want = e.evaluate(symbols);
      auto got = evaluate_size_program(p, symbols);
      INFO(e.to_string() << " = " << size_program_to_string(p) << " at " << symbols[0] << ","
                         << symbols[1] << "," << symbols[2]);
      REQUIRE(want.ok() == got.ok());
      if (want.ok()) {
        CHECK(*got == *want);
        ++compared;
      }
    }
  }
  CHECK(compared > 1000);
  const std::vector<std::string> names{"batch", "seq"};
  const DimExpr bs = DimExpr::symbol(0) * DimExpr::symbol(1) * DimExpr(64);
  CHECK(size_program_to_string(bs.to_program(), names) == "64*batch*seq");
  const DimExpr half = DimExpr::floor_div(DimExpr::symbol(1) + DimExpr(1), DimExpr(2));
  CHECK(size_program_to_string(half.to_program(), names) == "(seq + 1)/2");
  using P = SizeProgram;
  CHECK(size_program_to_string(program({P::kSymbol, 0, P::kConstant, 2, P::kConstant, 3, P::kSub,
                                        P::kSub}),
                               names) == "batch - (2 - 3)");
  CHECK(size_program_to_string(program({P::kConstant, 1}), names) == "1");
  CHECK(size_program_to_string(program({P::kAdd}), names) == "(invalid size program)");
  CHECK(*evaluate_size_program(DimExpr(7).to_program(), {}) == 7);
  CHECK(*evaluate_size_program(DimExpr(0).to_program(), {}) == 0);
}

TEST_CASE("size programs: floor division, overflow and division by zero", "[size_program]") {
  using P = SizeProgram;
  CHECK(*evaluate_size_program(program({P::kConstant, -7, P::kConstant, 2, P::kFloorDiv}), {}) == -4);
  CHECK(*evaluate_size_program(program({P::kSymbol, 0, P::kConstant, 3, P::kFloorDiv}),
                               std::vector<int64_t>{9}) == 3);
  auto zero = evaluate_size_program(program({P::kSymbol, 0, P::kConstant, 0, P::kFloorDiv}),
                                    std::vector<int64_t>{9});
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.status().message().find("divides by zero") != std::string::npos);
  auto big = evaluate_size_program(
      program({P::kConstant, INT64_MAX / 2, P::kSymbol, 0, P::kMul}), std::vector<int64_t>{3});
  REQUIRE_FALSE(big.ok());
  CHECK(big.status().message().find("overflows") != std::string::npos);
  CHECK_FALSE(evaluate_size_program(program({P::kConstant, 0, P::kConstant, INT64_MIN, P::kSub}), {})
                  .ok());
  CHECK_FALSE(
      evaluate_size_program(program({P::kConstant, INT64_MIN, P::kConstant, -1, P::kFloorDiv}), {})
          .ok());
}

TEST_CASE("damaged size programs are refused, naming what is wrong", "[size_program]") {
  using P = SizeProgram;
  auto refused = [](const SizeProgram& p, size_t symbols, const std::string& words) {
    Status st = validate_size_program(p, symbols);
    INFO(st.message());
    CHECK(st.code() == ErrorCode::kInvalidEngine);
    CHECK(st.message().find(words) != std::string::npos);
    CHECK_FALSE(evaluate_size_program(p, std::vector<int64_t>(symbols, 4)).ok());
  };
  refused(program({}), 1, "empty");
  refused(program({P::kConstant}), 1, "no operand");
  refused(program({P::kSymbol, 2}), 2, "symbol 2");
  refused(program({P::kSymbol, -1}), 2, "symbol -1");
  refused(program({P::kConstant, 1, P::kAdd}), 1, "lacks operands");
  refused(program({P::kConstant, 1, P::kConstant, 2}), 1, "leaves 2 values");
  refused(program({99, 1}), 1, "unknown opcode 99");
  refused(program(std::vector<int64_t>(kMaxSizeProgramWords + 2, 0)), 1, "at most");
  // Fuzzed words never crash the checker or the evaluator.
  auto& rng = testing::test_rng();
  std::uniform_int_distribution<int64_t> word(-2, 9);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<int64_t> code(static_cast<size_t>(trial % 12 + 1));
    for (auto& w : code) w = word(rng);
    const SizeProgram p = program(code);
    if (validate_size_program(p, 2).ok()) (void)evaluate_size_program(p, std::vector<int64_t>{3, 5});
  }
}
