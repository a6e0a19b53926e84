#include "ir/op_table.h"

#include <array>

namespace graphc::ir {

namespace {

constexpr uint32_t kAllInputs = OpTraits::kAllInputs;
constexpr std::string_view kSumReason =
    "its result is a sum over many elements (range and rounding of a half-precision "
    "accumulator)";
constexpr std::string_view kQuantReason =
    "a scale rounded to half precision moves every quantization boundary";
constexpr std::string_view kLossReason = "loss reductions accumulate over the batch";

struct TraitsEntry {
  OpKind kind;
  OpTraits traits;
};
constexpr TraitsEntry kTraits[] = {
#define GRAPHC_OP_TRAITS(name, ...) {OpKind::name, OpTraits{__VA_ARGS__}},
#include "ir/op_traits.def"
#undef GRAPHC_OP_TRAITS
};

constexpr std::array<OpInfo, kOpCount> make_table() {
  std::array<OpInfo, kOpCount> ops{{
#define GRAPHC_OP(name, cat, intro, min_in, max_in, min_out, max_out, cmask) \
  {OpKind::name, #name, OpCategory::cat, intro, min_in, max_in, min_out, max_out, cmask, {}},
#include "ir/ops.def"
#undef GRAPHC_OP
  }};
  for (const TraitsEntry& e : kTraits) ops[static_cast<size_t>(e.kind)].traits = e.traits;
  return ops;
}
constexpr std::array<OpInfo, kOpCount> kOps = make_table();

constexpr bool table_in_enum_order() {
  for (int i = 0; i < kOpCount; ++i)
    if (static_cast<int>(kOps[static_cast<size_t>(i)].kind) != i) return false;
  return true;
}
static_assert(table_in_enum_order(), "op table must follow OpKind order");
}  // namespace

const OpInfo& op_info(OpKind kind) { return kOps[static_cast<size_t>(kind)]; }
std::string_view op_name(OpKind kind) { return op_info(kind).name; }

bool is_internal(OpKind kind) { return op_info(kind).category == OpCategory::kFused; }

std::optional<OpKind> op_from_name(std::string_view name) {
  for (const auto& info : kOps)
    if (info.name == name && info.category != OpCategory::kFused) return info.kind;
  return std::nullopt;
}

std::string_view category_name(OpCategory category) {
  switch (category) {
    case OpCategory::kUnary: return "elementwise unary";
    case OpCategory::kBinary: return "elementwise binary";
    case OpCategory::kVariadic: return "elementwise variadic";
    case OpCategory::kElementwiseOther: return "elementwise";
    case OpCategory::kShapeOp: return "shape";
    case OpCategory::kDataMovement: return "data movement";
    case OpCategory::kReduction: return "reduction";
    case OpCategory::kNormalization: return "normalization";
    case OpCategory::kContraction: return "contraction";
    case OpCategory::kConvolution: return "convolution";
    case OpCategory::kPooling: return "pooling";
    case OpCategory::kResample: return "resample";
    case OpCategory::kAttention: return "attention";
    case OpCategory::kRecurrent: return "recurrent";
    case OpCategory::kControlFlow: return "control flow";
    case OpCategory::kQuantization: return "quantization";
    case OpCategory::kSignal: return "signal processing";
    case OpCategory::kLinearAlgebra: return "linear algebra";
    case OpCategory::kFused: return "fused";
  }
  return "?";
}

bool is_elementwise(OpKind kind) {
  switch (op_info(kind).category) {
    case OpCategory::kUnary:
    case OpCategory::kBinary:
    case OpCategory::kVariadic:
      return true;
    case OpCategory::kElementwiseOther:
      return kind != OpKind::Dropout;
    default:
      return false;
  }
}

}  // namespace graphc::ir
