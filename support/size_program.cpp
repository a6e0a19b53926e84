#include "support/size_program.h"

#include <algorithm>

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
    case SizeProgram::kFloorDiv: return "//";
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
  RETURN_IF_ERROR(validate_size_program(program, symbols.size()));
  std::vector<int64_t> stack;
  stack.reserve(16);
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
  std::string s;
  const auto& c = program.code;
  for (size_t pc = 0; pc < c.size(); ++pc) {
    if (!s.empty()) s += ' ';
    const int64_t op = c[pc];
    if ((op == SizeProgram::kConstant || op == SizeProgram::kSymbol) && pc + 1 < c.size()) {
      const int64_t arg = c[++pc];
      if (op == SizeProgram::kConstant)
        s += std::to_string(arg);
      else if (arg >= 0 && static_cast<uint64_t>(arg) < names.size())
        s += names[static_cast<size_t>(arg)];
      else
        s += fmt::format("s{}", arg);
    } else {
      s += op_text(op);
    }
  }
  return s;
}

}  // namespace graphc
