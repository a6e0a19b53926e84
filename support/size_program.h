// A size an engine computes at run time from the shapes it is given: a small
// postfix program over int64 (push a constant or a symbol — one free dim of a
// shape profile — then add, subtract, multiply, floor-divide, min, max).
// Engines that serve a range of shapes carry one per run-time size (a tensor
// dim, a kernel's stride or grid); the build writes them from ir::DimExpr and
// the runtime validates each once on load and evaluates it per shape.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "support/status.h"

namespace graphc {

struct SizeProgram {
  // Opcodes; kConstant and kSymbol take the next word as their operand.
  enum Op : int64_t { kConstant = 0, kSymbol, kAdd, kSub, kMul, kFloorDiv, kMin, kMax };
  std::vector<int64_t> code;

  friend bool operator==(const SizeProgram&, const SizeProgram&) = default;
};

// The longest program an engine may hold (a guard against damaged files).
inline constexpr size_t kMaxSizeProgramWords = 4096;

// Well-formed: known opcodes, every operation has its operands, one value
// left, symbols below `num_symbols`, at most kMaxSizeProgramWords words.
Status validate_size_program(const SizeProgram& program, size_t num_symbols);

// The value with symbol i = symbols[i]. Errors (never undefined behaviour) on
// int64 overflow, division by zero, and anything validate refuses.
Expected<int64_t> evaluate_size_program(const SizeProgram& program,
                                        std::span<const int64_t> symbols);
// The same with a caller's scratch stack (no allocation once it has grown).
Expected<int64_t> evaluate_size_program(const SizeProgram& program,
                                        std::span<const int64_t> symbols,
                                        std::vector<int64_t>& stack);

// The symbol a program is alone (the program "1 k": an input dim that is a
// free dim of the range itself), or -1.
inline int size_program_symbol(const SizeProgram& p) {
  return p.code.size() == 2 && p.code[0] == SizeProgram::kSymbol ? static_cast<int>(p.code[1]) : -1;
}

// "64*batch*seq", "(seq + 1)/2", "max(1, min(batch, 8))": symbol i as
// names[i] (else "s<i>"), "/" being floor division; for reports.
std::string size_program_to_string(const SizeProgram& program,
                                   std::span<const std::string> names = {});

}  // namespace graphc
