// The op table: one entry per graphc operator, generated from ir/ops.def.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace graphc::ir {

enum class OpCategory {
  kUnary,
  kBinary,
  kVariadic,
  kElementwiseOther,
  kShapeOp,
  kDataMovement,
  kReduction,
  kNormalization,
  kContraction,
  kConvolution,
  kPooling,
  kResample,
  kAttention,
  kRecurrent,    // RNN, GRU, LSTM
  kControlFlow,  // If, Loop, Scan: nodes with sub-graphs
  kQuantization,
  kSignal,         // windows, MelWeightMatrix, DFT, STFT
  kLinearAlgebra,  // Det
  kFused,  // graphc-internal ops
};

enum class OpKind : int32_t {
#define GRAPHC_OP(name, ...) name,
#include "ir/ops.def"
#undef GRAPHC_OP
};

inline constexpr int kOpCount = 0
#define GRAPHC_OP(name, ...) +1
#include "ir/ops.def"
#undef GRAPHC_OP
    ;

// Traits the passes switch on (ir/op_traits.def says what each means).
struct OpTraits {
  static constexpr uint32_t kAllInputs = ~0u;
  bool view = false;
  bool reshape = false;
  bool shape_only = false;
  uint32_t own_type_inputs = 0;
  uint32_t own_type_outputs = 0;
  std::string_view fp32_reason{};  // empty: none
};

struct OpInfo {
  OpKind kind;
  std::string_view name;
  OpCategory category;
  int introduced_opset;
  int min_inputs, max_inputs;    // max -1: unbounded
  int min_outputs, max_outputs;  // max -1: unbounded
  uint32_t const_inputs;         // bit i: input i must be a build-time constant
  OpTraits traits{};             // from ir/op_traits.def
};

const OpInfo& op_info(OpKind kind);
std::string_view op_name(OpKind kind);
std::optional<OpKind> op_from_name(std::string_view name);
std::string_view category_name(OpCategory category);
bool is_elementwise(OpKind kind);
bool is_internal(OpKind kind);  // graphc-only ops that ONNX files cannot name  // unary, binary, variadic, Where/Clip/Cast...

}  // namespace graphc::ir
