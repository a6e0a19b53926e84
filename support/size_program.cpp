#include "support/size_program.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "support/checked_math.h"

namespace graphc {

namespace {

int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

const char* op_text(int64_t op) {
  switch (op) {
    case SizeProgram::kAdd: return "+";
    case SizeProgram::kSub: return "-";
    case SizeProgram::kMul: return "*";
    case SizeProgram::kFloorDiv: return "/";
    case SizeProgram::kMin: return "min";
    case SizeProgram::kMax: return "max";
    default: return "?";
  }
}

}  // namespace

Status validate_size_program(const SizeProgram& program, size_t num_symbols) {
  const auto& c = program.code;
  if (c.empty()) return invalid_engine("size program is empty");
  if (c.size() > kMaxSizeProgramWords)
    return invalid_engine("size program has {} words (at most {})", c.size(),
                          kMaxSizeProgramWords);
  size_t depth = 0;
  for (size_t pc = 0; pc < c.size(); ++pc) {
    const int64_t op = c[pc];
    if (op == SizeProgram::kConstant || op == SizeProgram::kSymbol) {
      if (pc + 1 >= c.size())
        return invalid_engine("size program: word {} has no operand", pc);
      const int64_t arg = c[++pc];
      if (op == SizeProgram::kSymbol && (arg < 0 || static_cast<uint64_t>(arg) >= num_symbols))
        return invalid_engine("size program: symbol {} at word {} (the profile has {})", arg,
                              pc, num_symbols);
      ++depth;
    } else if (op >= SizeProgram::kAdd && op <= SizeProgram::kMax) {
      if (depth < 2) return invalid_engine("size program: word {} lacks operands", pc);
      --depth;
    } else {
      return invalid_engine("size program: unknown opcode {} at word {}", op, pc);
    }
  }
  if (depth != 1) return invalid_engine("size program leaves {} values (want 1)", depth);
  return Status::ok_status();
}

Expected<int64_t> evaluate_size_program(const SizeProgram& program,
                                        std::span<const int64_t> symbols) {
  std::vector<int64_t> stack;
  return evaluate_size_program(program, symbols, stack);
}

Expected<int64_t> evaluate_size_program(const SizeProgram& program,
                                        std::span<const int64_t> symbols,
                                        std::vector<int64_t>& stack) {
  RETURN_IF_ERROR(validate_size_program(program, symbols.size()));
  stack.clear();
  const auto& c = program.code;
  for (size_t pc = 0; pc < c.size(); ++pc) {
    const int64_t op = c[pc];
    if (op == SizeProgram::kConstant) {
      stack.push_back(c[++pc]);
      continue;
    }
    if (op == SizeProgram::kSymbol) {
      stack.push_back(symbols[static_cast<size_t>(c[++pc])]);
      continue;
    }
    const int64_t b = stack.back();
    stack.pop_back();
    const int64_t a = stack.back();
    std::optional<int64_t> r;
    switch (op) {
      case SizeProgram::kAdd: r = checked_add(a, b); break;
      case SizeProgram::kSub:
        if (b != INT64_MIN) r = checked_add(a, -b);
        break;
      case SizeProgram::kMul: r = checked_mul(a, b); break;
      case SizeProgram::kFloorDiv:
        if (b == 0) return out_of_range("size program divides by zero (word {})", pc);
        if (!(a == INT64_MIN && b == -1)) r = floor_div(a, b);
        break;
      case SizeProgram::kMin: r = std::min(a, b); break;
      default: r = std::max(a, b); break;
    }
    if (!r) return out_of_range("size program overflows int64 at word {}", pc);
    stack.back() = *r;
  }
  return stack.back();
}

std::string size_program_to_string(const SizeProgram& program,
                                   std::span<const std::string> names) {
  if (!validate_size_program(program, SIZE_MAX).ok()) return "(invalid size program)";
  // Infix with the parentheses precedence needs: (text, precedence).
  std::vector<std::pair<std::string, int>> stack;
  const auto& c = program.code;
  for (size_t pc = 0; pc < c.size(); ++pc) {
    const int64_t op = c[pc];
    if (op == SizeProgram::kConstant || op == SizeProgram::kSymbol) {
      const int64_t arg = c[++pc];
      std::string t = op == SizeProgram::kConstant ? std::to_string(arg)
                      : arg >= 0 && static_cast<uint64_t>(arg) < names.size()
                          ? names[static_cast<size_t>(arg)]
                          : fmt::format("s{}", arg);
      stack.emplace_back(std::move(t), arg < 0 && op == SizeProgram::kConstant ? 1 : 3);
      continue;
    }
    auto [b, pb] = stack.back();
    stack.pop_back();
    auto [a, pa] = stack.back();
    stack.pop_back();
    if (op == SizeProgram::kMin || op == SizeProgram::kMax) {
      stack.emplace_back(fmt::format("{}({}, {})", op_text(op), a, b), 3);
      continue;
    }
    const int p = op == SizeProgram::kAdd || op == SizeProgram::kSub ? 1 : 2;
    const bool right_tight = op == SizeProgram::kSub || op == SizeProgram::kFloorDiv;
    if (pa < p) a = "(" + a + ")";
    if (pb < p || (right_tight && pb == p)) b = "(" + b + ")";
    stack.emplace_back(fmt::format("{}{}{}", a, p == 1 ? fmt::format(" {} ", op_text(op)) : op_text(op), b), p);
  }
  return stack.back().first;
}

}  // namespace graphc
