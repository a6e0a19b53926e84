// A tensor dim as an expression over a shape profile's symbols (its free
// dims: "batch", "seq", ...), for engines that serve a range of shapes.
//
// Canonical form: a polynomial with int64 coefficients whose variables are
// atoms, an atom being a symbol or an operation the polynomial cannot express
// (floor division that does not divide exactly, min, max). Two expressions
// are equal when their canonical forms are, so `seq == seq` and `2*(b+1) ==
// 2*b + 2` hold without evaluating; shape rules use that to check broadcasts
// and matching dims over the whole range. Values are immutable and cheap to
// copy for the small expressions shapes have.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "support/size_program.h"
#include "support/status.h"

namespace graphc::ir {

class DimExpr {
 public:
  DimExpr() = default;  // 0
  DimExpr(int64_t value);  // NOLINT(google-explicit-constructor): a constant dim
  static DimExpr symbol(int index);

  std::optional<int64_t> constant() const;
  bool is_constant() const { return constant().has_value(); }

  friend DimExpr operator+(const DimExpr& a, const DimExpr& b);
  friend DimExpr operator-(const DimExpr& a, const DimExpr& b);
  friend DimExpr operator*(const DimExpr& a, const DimExpr& b);
  friend bool operator==(const DimExpr& a, const DimExpr& b) { return a.terms_ == b.terms_; }
  friend bool operator!=(const DimExpr& a, const DimExpr& b) { return !(a == b); }

  // Floor division (exact where every coefficient divides: (4*s + 8) / 4 = s + 2).
  static DimExpr floor_div(const DimExpr& a, const DimExpr& b);
  static DimExpr ceil_div(const DimExpr& a, const DimExpr& b);
  static DimExpr min(const DimExpr& a, const DimExpr& b);
  static DimExpr max(const DimExpr& a, const DimExpr& b);

  // The value at `symbols` (symbol i = symbols[i]); an error on overflow, a
  // division by zero or a symbol out of range.
  Expected<int64_t> evaluate(std::span<const int64_t> symbols) const;
  // "2*batch*seq + 1"; symbol i prints as names[i] (or "s<i>").
  std::string to_string(std::span<const std::string> names = {}) const;
  // Non-decreasing in every symbol (symbols are dims: never negative):
  // non-negative coefficients (the constant term aside) over factors that are
  // symbols, or floor divisions by a positive constant, mins and maxes of
  // non-negative such expressions. Its range over a box of symbol values is
  // then [value at the mins, value at the maxes].
  bool is_monotone() const;
  // A multiple of k at every point: every coefficient is (sufficient, not necessary).
  bool divisible_by(int64_t k) const;
  // The symbols it depends on, sorted.
  std::vector<int> symbols() const;
  // The postfix program an engine evaluates at run time (support/size_program.h):
  // it computes the same value as evaluate, overflow checks included.
  SizeProgram to_program() const;

  // One factor of a term: a symbol, or an operation on two expressions.
  struct Atom {
    enum Kind : uint8_t { kSymbol, kFloorDiv, kMin, kMax };
    Kind kind = kSymbol;
    int symbol = 0;
    std::shared_ptr<const DimExpr> a, b;
    std::string key;  // canonical text; orders and compares atoms
  };
  // A term: coefficient times the product of its atoms (sorted by key).
  struct Term {
    int64_t coefficient = 0;
    std::vector<Atom> atoms;
  };

 private:
  static DimExpr from_atom(Atom atom);
  // The least value over non-negative symbols, where is_monotone says it is
  // the value at all zeros; nothing otherwise.
  std::optional<int64_t> least_value() const;
  // min/max of a constant and an expression never below it, or nothing.
  static std::optional<DimExpr> settle_by_bound(const DimExpr& a, const DimExpr& b, bool is_min);
  void add_term(const std::string& key, const Term& term);
  // Monomial key ("" for the constant term) -> term.
  std::map<std::string, Term> terms_;
  friend bool operator==(const Term& a, const Term& b) { return a.coefficient == b.coefficient; }
};

using SymShape = std::vector<DimExpr>;
std::string sym_shape_to_string(const SymShape& shape, std::span<const std::string> names = {});

}  // namespace graphc::ir
