#include "ir/dim_expr.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "support/checked_math.h"

namespace graphc::ir {

namespace {

std::string monomial_key(const std::vector<DimExpr::Atom>& atoms) {
  std::string key;
  for (const auto& a : atoms) key += (key.empty() ? "" : "*") + a.key;
  return key;
}

int64_t floor_div_int(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

}  // namespace

DimExpr::DimExpr(int64_t value) {
  if (value != 0) terms_[""] = Term{value, {}};
}

DimExpr DimExpr::symbol(int index) {
  Atom atom;
  atom.kind = Atom::kSymbol;
  atom.symbol = index;
  atom.key = fmt::format("s{}", index);
  return from_atom(std::move(atom));
}

DimExpr DimExpr::from_atom(Atom atom) {
  DimExpr e;
  const std::string key = atom.key;
  e.terms_[key] = Term{1, {std::move(atom)}};
  return e;
}

void DimExpr::add_term(const std::string& key, const Term& term) {
  auto [it, fresh] = terms_.emplace(key, term);
  if (fresh) return;
  it->second.coefficient += term.coefficient;  // shape-sized values: no overflow in practice
  if (it->second.coefficient == 0) terms_.erase(it);
}

std::optional<int64_t> DimExpr::constant() const {
  if (terms_.empty()) return 0;
  if (terms_.size() == 1 && terms_.begin()->first.empty()) return terms_.begin()->second.coefficient;
  return std::nullopt;
}

DimExpr operator+(const DimExpr& a, const DimExpr& b) {
  DimExpr out = a;
  for (const auto& [key, term] : b.terms_) out.add_term(key, term);
  return out;
}

DimExpr operator-(const DimExpr& a, const DimExpr& b) { return a + DimExpr(-1) * b; }

DimExpr operator*(const DimExpr& a, const DimExpr& b) {
  DimExpr out;
  for (const auto& [ka, ta] : a.terms_) {
    for (const auto& [kb, tb] : b.terms_) {
      DimExpr::Term t;
      t.coefficient = ta.coefficient * tb.coefficient;
      t.atoms = ta.atoms;
      t.atoms.insert(t.atoms.end(), tb.atoms.begin(), tb.atoms.end());
      std::sort(t.atoms.begin(), t.atoms.end(),
                [](const DimExpr::Atom& x, const DimExpr::Atom& y) { return x.key < y.key; });
      out.add_term(monomial_key(t.atoms), t);
    }
  }
  return out;
}

DimExpr DimExpr::floor_div(const DimExpr& a, const DimExpr& b) {
  auto cb = b.constant();
  if (cb && *cb == 1) return a;
  if (auto ca = a.constant(); ca && cb && *cb != 0) return DimExpr(floor_div_int(*ca, *cb));
  if (cb && *cb > 0) {
    // Exact when every coefficient divides: (4*s + 8) / 4 = s + 2.
    bool exact = true;
    for (const auto& [key, term] : a.terms_) exact = exact && term.coefficient % *cb == 0;
    if (exact) {
      DimExpr out = a;
      for (auto& [key, term] : out.terms_) term.coefficient /= *cb;
      return out;
    }
  }
  if (a == b && !a.terms_.empty()) return DimExpr(1);  // dims are positive where this is asked
  // Exact by a monomial that divides every term: (32*b*s + 4*b) / (4*b) = 8*s + 1.
  if (b.terms_.size() == 1 && b.terms_.begin()->second.coefficient > 0) {
    const Term& d = b.terms_.begin()->second;
    DimExpr out;
    bool exact = true;
    for (const auto& [key, term] : a.terms_) {
      if (term.coefficient % d.coefficient != 0) {
        exact = false;
        break;
      }
      Term t{term.coefficient / d.coefficient, term.atoms};
      for (const Atom& x : d.atoms) {
        auto it = std::find_if(t.atoms.begin(), t.atoms.end(),
                               [&](const Atom& y) { return y.key == x.key; });
        if (it == t.atoms.end()) {
          exact = false;
          break;
        }
        t.atoms.erase(it);
      }
      if (!exact) break;
      out.add_term(monomial_key(t.atoms), t);
    }
    if (exact) return out;
  }
  Atom atom;
  atom.kind = Atom::kFloorDiv;
  atom.a = std::make_shared<const DimExpr>(a);
  atom.b = std::make_shared<const DimExpr>(b);
  atom.key = "(" + a.to_string() + ")/(" + b.to_string() + ")";
  return from_atom(std::move(atom));
}

DimExpr DimExpr::ceil_div(const DimExpr& a, const DimExpr& b) {
  return floor_div(a + b - DimExpr(1), b);  // for b > 0, as dims are
}

namespace {
DimExpr min_max(const DimExpr& a, const DimExpr& b, bool is_min) {
  auto ca = a.constant(), cb = b.constant();
  if (ca && cb) return DimExpr(is_min ? std::min(*ca, *cb) : std::max(*ca, *cb));
  if (a == b) return a;
  // The difference settles it when it is a constant.
  if (auto d = (a - b).constant()) return (*d <= 0) == is_min ? a : b;
  return DimExpr();  // placeholder, replaced by the caller
}
}  // namespace

std::optional<int64_t> DimExpr::least_value() const {
  if (!is_monotone()) return std::nullopt;
  auto c = terms_.find("");
  return c == terms_.end() ? 0 : c->second.coefficient;  // every symbol at 0
}

std::optional<DimExpr> DimExpr::settle_by_bound(const DimExpr& a, const DimExpr& b, bool is_min) {
  // A constant no more than the other side's least value: min is the
  // constant, max the other side (max(0, seq) = seq).
  for (int swap = 0; swap < 2; ++swap) {
    const DimExpr& c = swap ? b : a;
    const DimExpr& e = swap ? a : b;
    auto cv = c.constant();
    auto least = e.least_value();
    if (cv && least && *cv <= *least) return is_min ? c : e;
  }
  return std::nullopt;
}

DimExpr DimExpr::min(const DimExpr& a, const DimExpr& b) {
  if (a == b || (a.constant() && b.constant()) || (a - b).constant()) return min_max(a, b, true);
  if (auto r = settle_by_bound(a, b, true)) return *r;
  Atom atom;
  atom.kind = Atom::kMin;
  const bool swap = b.to_string() < a.to_string();  // commutative: one order
  atom.a = std::make_shared<const DimExpr>(swap ? b : a);
  atom.b = std::make_shared<const DimExpr>(swap ? a : b);
  atom.key = "min(" + atom.a->to_string() + ", " + atom.b->to_string() + ")";
  return from_atom(std::move(atom));
}

DimExpr DimExpr::max(const DimExpr& a, const DimExpr& b) {
  if (a == b || (a.constant() && b.constant()) || (a - b).constant()) return min_max(a, b, false);
  if (auto r = settle_by_bound(a, b, false)) return *r;
  Atom atom;
  atom.kind = Atom::kMax;
  const bool swap = b.to_string() < a.to_string();
  atom.a = std::make_shared<const DimExpr>(swap ? b : a);
  atom.b = std::make_shared<const DimExpr>(swap ? a : b);
  atom.key = "max(" + atom.a->to_string() + ", " + atom.b->to_string() + ")";
  return from_atom(std::move(atom));
}

Expected<int64_t> DimExpr::evaluate(std::span<const int64_t> symbols) const {
  int64_t sum = 0;
  for (const auto& [key, term] : terms_) {
    int64_t product = term.coefficient;
    for (const Atom& atom : term.atoms) {
      int64_t v = 0;
      if (atom.kind == Atom::kSymbol) {
        if (atom.symbol < 0 || static_cast<size_t>(atom.symbol) >= symbols.size())
          return invalid_argument("dim expression {}: symbol {} has no value", to_string(),
                                  atom.symbol);
        v = symbols[static_cast<size_t>(atom.symbol)];
      } else {
        ASSIGN_OR_RETURN(int64_t x, atom.a->evaluate(symbols));
        ASSIGN_OR_RETURN(int64_t y, atom.b->evaluate(symbols));
        if (atom.kind == Atom::kFloorDiv) {
          if (y == 0) return invalid_argument("dim expression {}: division by zero", to_string());
          v = floor_div_int(x, y);
        } else {
          v = atom.kind == Atom::kMin ? std::min(x, y) : std::max(x, y);
        }
      }
      auto p = checked_mul(product, v);
      if (!p) return invalid_argument("dim expression {} overflows int64", to_string());
      product = *p;
    }
    auto s = checked_add(sum, product);
    if (!s) return invalid_argument("dim expression {} overflows int64", to_string());
    sum = *s;
  }
  return sum;
}

std::string DimExpr::to_string(std::span<const std::string> names) const {
  if (terms_.empty()) return "0";
  auto atom_text = [&](const Atom& a) -> std::string {
    if (a.kind == Atom::kSymbol)
      return static_cast<size_t>(a.symbol) < names.size() ? names[static_cast<size_t>(a.symbol)]
                                                          : fmt::format("s{}", a.symbol);
    const std::string x = a.a->to_string(names), y = a.b->to_string(names);
    if (a.kind == Atom::kFloorDiv) {
      const bool simple_x = a.a->terms_.size() == 1, simple_y = a.b->terms_.size() == 1;
      return fmt::format("{}/{}", simple_x ? x : "(" + x + ")", simple_y ? y : "(" + y + ")");
    }
    return fmt::format("{}({}, {})", a.kind == Atom::kMin ? "min" : "max", x, y);
  };
  std::string out;
  // Highest-degree terms first, the constant last: "2*b*s + b + 1".
  std::vector<const Term*> order;
  for (const auto& [key, term] : terms_) order.push_back(&term);
  std::stable_sort(order.begin(), order.end(), [](const Term* x, const Term* y) {
    return x->atoms.size() > y->atoms.size();
  });
  for (const Term* t : order) {
    int64_t c = t->coefficient;
    if (!out.empty()) {
      out += c < 0 ? " - " : " + ";
      c = c < 0 ? -c : c;
    } else if (c < 0 && !t->atoms.empty()) {
      out += "-";
      c = -c;
    }
    std::string factors;
    for (const Atom& a : t->atoms) factors += (factors.empty() ? "" : "*") + atom_text(a);
    if (factors.empty())
      out += std::to_string(c);
    else
      out += c == 1 ? factors : fmt::format("{}*{}", c, factors);
  }
  return out;
}

bool DimExpr::is_monotone() const {
  for (const auto& [key, term] : terms_) {
    if (term.atoms.empty()) continue;
    if (term.coefficient < 0) return false;
    for (const Atom& a : term.atoms) {
      if (a.kind == Atom::kSymbol) continue;
      // floor(x / c) for c > 0, min and max keep a non-decreasing x so; a
      // non-negative constant term keeps it non-negative (symbols are dims,
      // never negative), so products of such factors stay non-decreasing.
      auto nonneg_monotone = [](const DimExpr& x) {
        auto c = x.terms_.find("");
        return x.is_monotone() && (c == x.terms_.end() || c->second.coefficient >= 0);
      };
      if (!nonneg_monotone(*a.a)) return false;
      if (a.kind == Atom::kFloorDiv) {
        if (auto c = a.b->constant(); !c || *c <= 0) return false;
      } else if (!nonneg_monotone(*a.b)) {
        return false;
      }
    }
  }
  return true;
}

bool DimExpr::divisible_by(int64_t k) const {
  if (k == 0) return false;
  for (const auto& [key, term] : terms_)
    if (term.coefficient % k != 0) return false;
  return true;
}

std::vector<int> DimExpr::symbols() const {
  std::vector<int> out;
  for (const auto& [key, term] : terms_) {
    for (const Atom& a : term.atoms) {
      if (a.kind == Atom::kSymbol) {
        out.push_back(a.symbol);
      } else {
        for (int s : a.a->symbols()) out.push_back(s);
        for (int s : a.b->symbols()) out.push_back(s);
      }
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string sym_shape_to_string(const SymShape& shape, std::span<const std::string> names) {
  if (shape.empty()) return "scalar";
  std::string out;
  for (const auto& d : shape) {
    std::string text = d.to_string(names);
    if (!d.is_constant() && text.find_first_of(" +-*/") != std::string::npos) text = "(" + text + ")";
    out += (out.empty() ? "" : "x") + text;
  }
  return out;
}

SizeProgram DimExpr::to_program() const {
  SizeProgram p;
  auto emit = [&](int64_t op, int64_t arg) {
    p.code.push_back(op);
    p.code.push_back(arg);
  };
  if (terms_.empty()) emit(SizeProgram::kConstant, 0);
  bool first = true;
  // The constant term last, as people write it ("seq + 1").
  std::vector<const Term*> order;
  for (const auto& [key, term] : terms_)
    if (!key.empty()) order.push_back(&term);
  if (auto c = terms_.find(""); c != terms_.end()) order.push_back(&c->second);
  for (const Term* t : order) {
    const Term& term = *t;
    bool have = false;
    if (term.coefficient != 1 || term.atoms.empty()) {
      emit(SizeProgram::kConstant, term.coefficient);
      have = true;
    }
    for (const Atom& atom : term.atoms) {
      if (atom.kind == Atom::kSymbol) {
        emit(SizeProgram::kSymbol, atom.symbol);
      } else {
        const SizeProgram a = atom.a->to_program(), b = atom.b->to_program();
        p.code.insert(p.code.end(), a.code.begin(), a.code.end());
        p.code.insert(p.code.end(), b.code.begin(), b.code.end());
        p.code.push_back(atom.kind == Atom::kFloorDiv ? SizeProgram::kFloorDiv
                         : atom.kind == Atom::kMin    ? SizeProgram::kMin
                                                      : SizeProgram::kMax);
      }
      if (have) p.code.push_back(SizeProgram::kMul);
      have = true;
    }
    if (!first) p.code.push_back(SizeProgram::kAdd);
    first = false;
  }
  return p;
}

}  // namespace graphc::ir
