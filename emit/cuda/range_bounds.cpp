#include "emit/cuda/range_bounds.h"

#include <algorithm>
#include <vector>

namespace graphc::emit {

bool monotone_from(const ir::DimExpr& e, std::span<const int64_t> least) {
  if (e.is_monotone()) return true;
  // The postfix program, each value as (non-decreasing?, its least value over
  // the box, a constant?); the least value of a non-decreasing value is its
  // value at the box's least corner.
  struct V {
    bool mono;
    int64_t least;
    bool constant;
  };
  const SizeProgram p = e.to_program();
  std::vector<V> stack;
  for (size_t i = 0; i < p.code.size(); ++i) {
    const int64_t op = p.code[i];
    if (op == SizeProgram::kConstant || op == SizeProgram::kSymbol) {
      if (++i >= p.code.size()) return false;
      const int64_t x = p.code[i];
      if (op == SizeProgram::kConstant) {
        stack.push_back({true, x, true});
      } else {
        if (x < 0 || static_cast<size_t>(x) >= least.size() || least[static_cast<size_t>(x)] < 0)
          return false;
        stack.push_back({true, least[static_cast<size_t>(x)], false});
      }
      continue;
    }
    if (stack.size() < 2) return false;
    const V b = stack.back();
    stack.pop_back();
    const V a = stack.back();
    V r{false, 0, a.constant && b.constant};
    int64_t v = 0;
    switch (op) {
      case SizeProgram::kAdd:
        r.mono = a.mono && b.mono && !__builtin_add_overflow(a.least, b.least, &v);
        break;
      case SizeProgram::kSub:
        r.mono = a.mono && b.constant && !__builtin_sub_overflow(a.least, b.least, &v);
        break;
      case SizeProgram::kMul:
        // A non-negative constant keeps the other side's direction; otherwise
        // both factors must be non-negative over the box.
        r.mono = a.mono && b.mono && !__builtin_mul_overflow(a.least, b.least, &v) &&
                 ((a.constant && a.least >= 0) || (b.constant && b.least >= 0) ||
                  (a.least >= 0 && b.least >= 0));
        break;
      case SizeProgram::kFloorDiv:
        r.mono = a.mono && b.constant && b.least > 0;
        if (r.mono) v = a.least / b.least - ((a.least % b.least != 0 && a.least < 0) ? 1 : 0);
        break;
      case SizeProgram::kMin:
        r.mono = a.mono && b.mono;
        v = std::min(a.least, b.least);
        break;
      case SizeProgram::kMax:
        r.mono = a.mono && b.mono;
        v = std::max(a.least, b.least);
        break;
      default: return false;
    }
    if (!r.mono) return false;
    r.least = v;
    stack.back() = r;
  }
  return stack.size() == 1 && stack.back().mono;
}

}  // namespace graphc::emit
