// Shape rules of the elementwise ops: unary, binary (numpy multidirectional
// broadcasting), variadic, Where, Clip, Cast, CastLike, Identity, Dropout.
// Each rule validates input dtypes against the ONNX type constraints (a clear
// error otherwise) and the kinds/values of the op's attributes.
#include <string>

#include "ir/shape_rules.h"

namespace graphc::ir::shape_rules {

namespace {

enum Family : unsigned {
  kFloats = 1,
  kSigned = 2,
  kUnsigned = 4,
  kBools = 8,
  kInts = kSigned | kUnsigned,
  kNumeric = kFloats | kInts,
  kAll = kNumeric | kBools,
};

bool in_family(DType t, unsigned families) {
  if (is_float(t)) return families & kFloats;
  if (is_signed_integer(t)) return families & kSigned;
  if (is_unsigned_integer(t)) return families & kUnsigned;
  if (t == DType::kBool) return families & kBools;
  return false;
}

std::string family_text(unsigned families) {
  switch (families) {
    case kFloats: return "a float type (float16, bfloat16, float32, float64)";
    case kBools: return "bool";
    case kUnsigned: return "an unsigned integer type (uint8, uint16, uint32, uint64)";
    case kNumeric: return "a numeric type (no bool)";
    case kFloats | kSigned: return "a float or signed integer type";
    case kAll: return "any tensor type";
    default: return "another type";
  }
}

std::string op_of(const ShapeContext& ctx) { return std::string(op_name(ctx.node().op)); }

Status require_family(const ShapeContext& ctx, size_t i, unsigned families, const char* what) {
  if (in_family(ctx.dtype(i), families)) return Status::ok_status();
  return ctx.error("{}: input {} ({}) has dtype {}; it must be {}", op_of(ctx), i, what,
                   dtype_name(ctx.dtype(i)), family_text(families));
}

Status require_same_dtype(const ShapeContext& ctx, size_t i, size_t j) {
  if (ctx.dtype(i) == ctx.dtype(j)) return Status::ok_status();
  return ctx.error("{}: input {} has dtype {} but input {} has dtype {}; they must match",
                   op_of(ctx), j, dtype_name(ctx.dtype(j)), i, dtype_name(ctx.dtype(i)));
}

// An attribute, when present, must have the given kind.
Status require_kind(const ShapeContext& ctx, const char* name, Attribute::Kind kind) {
  const Attribute* a = ctx.attrs().find(name);
  if (!a || a->kind == kind) return Status::ok_status();
  return ctx.error("{}: attribute '{}' must be {}, got {}", op_of(ctx), name,
                   attribute_kind_name(kind), attribute_kind_name(a->kind));
}

Status require_floats(const ShapeContext& ctx, std::initializer_list<const char*> names) {
  for (const char* n : names) RETURN_IF_ERROR(require_kind(ctx, n, Attribute::Kind::kFloat));
  return Status::ok_status();
}

// Same dtype and shape as input 0, which must be in `families`.
Status unary(ShapeContext& ctx, unsigned families) {
  RETURN_IF_ERROR(require_family(ctx, 0, families, "X"));
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
  return Status::ok_status();
}

Status unary_float(ShapeContext& ctx) { return unary(ctx, kFloats); }

// Two inputs of one dtype in `families`, broadcast; output dtype `out` or the input dtype.
Status binary(ShapeContext& ctx, unsigned families, bool bool_output) {
  RETURN_IF_ERROR(require_family(ctx, 0, families, "A"));
  RETURN_IF_ERROR(require_same_dtype(ctx, 0, 1));
  return broadcast_inputs(ctx, bool_output ? DType::kBool : ctx.dtype(0));
}

// Max, Min, Sum, Mean: any number of inputs of one numeric dtype.
Status variadic(ShapeContext& ctx) {
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.error("{}: input {} is empty", op_of(ctx), i);
    RETURN_IF_ERROR(require_family(ctx, i, kNumeric, "data"));
    RETURN_IF_ERROR(require_same_dtype(ctx, 0, i));
  }
  return broadcast_inputs(ctx, ctx.dtype(0));
}

// ONNX TensorProto.DataType names, for messages about types graphc lacks.
const char* onnx_type_name(int64_t t) {
  switch (t) {
    case 0: return "UNDEFINED";
    case 8: return "STRING";
    case 14: return "COMPLEX64";
    case 15: return "COMPLEX128";
    case 17: return "FLOAT8E4M3FN";
    case 18: return "FLOAT8E4M3FNUZ";
    case 19: return "FLOAT8E5M2";
    case 20: return "FLOAT8E5M2FNUZ";
    case 21: return "UINT4";
    case 22: return "INT4";
    case 23: return "FLOAT4E2M1";
    case 24: return "FLOAT8E8M0";
    case 25: return "UINT2";
    case 26: return "INT2";
    default: return "unknown";
  }
}

// A Clip bound input: same dtype as X and a single value.
Status clip_bound(const ShapeContext& ctx, size_t i, const char* what) {
  if (!ctx.has_input(i)) return Status::ok_status();
  RETURN_IF_ERROR(require_same_dtype(ctx, 0, i));
  if (shape_numel(ctx.shape(i)) != 1)
    return ctx.error("Clip: input {} ({}) must be a scalar, got shape {}", i, what,
                     shape_to_string(ctx.shape(i)));
  return Status::ok_status();
}

}  // namespace

// ---- unary ----------------------------------------------------------------

Status infer_Abs(ShapeContext& ctx) { return unary(ctx, kNumeric); }
Status infer_Neg(ShapeContext& ctx) { return unary(ctx, kFloats | kSigned); }
Status infer_Exp(ShapeContext& ctx) { return unary_float(ctx); }
Status infer_Log(ShapeContext& ctx) { return unary_float(ctx); }
Status infer_Sqrt(ShapeContext& ctx) { return unary_float(ctx); }
Status infer_Reciprocal(ShapeContext& ctx) { return unary_float(ctx); }
Status infer_Sigmoid(ShapeContext& ctx) { return unary_float(ctx); }
Status infer_Tanh(ShapeContext& ctx) { return unary_float(ctx); }
Status infer_Relu(ShapeContext& ctx) { return unary(ctx, kFloats | kSigned); }

Status infer_LeakyRelu(ShapeContext& ctx) {
  RETURN_IF_ERROR(require_floats(ctx, {"alpha"}));
  return unary_float(ctx);
}
Status infer_Elu(ShapeContext& ctx) {
  RETURN_IF_ERROR(require_floats(ctx, {"alpha"}));
  return unary_float(ctx);
}
Status infer_Selu(ShapeContext& ctx) {
  RETURN_IF_ERROR(require_floats(ctx, {"alpha", "gamma"}));
  return unary_float(ctx);
}
Status infer_Celu(ShapeContext& ctx) {
  RETURN_IF_ERROR(require_floats(ctx, {"alpha"}));
  if (ctx.attrs().get_float("alpha", 1.0) == 0.0)
    return ctx.error("Celu: attribute alpha must be nonzero (it divides the input)");
  return unary_float(ctx);
}
Status infer_HardSigmoid(ShapeContext& ctx) {
  RETURN_IF_ERROR(require_floats(ctx, {"alpha", "beta"}));
  return unary_float(ctx);
}
Status infer_HardSwish(ShapeContext& ctx) { return unary_float(ctx); }
Status infer_Softplus(ShapeContext& ctx) { return unary_float(ctx); }
Status infer_Softsign(ShapeContext& ctx) { return unary_float(ctx); }
// Erf-9 allows integer tensors too (Erf-13 only floats); graphc accepts both.
Status infer_Erf(ShapeContext& ctx) { return unary(ctx, kNumeric); }

Status infer_Gelu(ShapeContext& ctx) {
  RETURN_IF_ERROR(require_kind(ctx, "approximate", Attribute::Kind::kString));
  std::string a = ctx.attrs().get_string("approximate", "none");
  if (a != "none" && a != "tanh")
    return ctx.error("Gelu: attribute approximate is '{}'; expected 'none' or 'tanh'", a);
  return unary_float(ctx);
}

Status infer_Sin(ShapeContext& ctx) { return unary_float(ctx); }
Status infer_Cos(ShapeContext& ctx) { return unary_float(ctx); }
Status infer_Tan(ShapeContext& ctx) { return unary_float(ctx); }
Status infer_Asin(ShapeContext& ctx) { return unary_float(ctx); }
Status infer_Acos(ShapeContext& ctx) { return unary_float(ctx); }
Status infer_Atan(ShapeContext& ctx) { return unary_float(ctx); }
Status infer_Sinh(ShapeContext& ctx) { return unary_float(ctx); }
Status infer_Cosh(ShapeContext& ctx) { return unary_float(ctx); }
Status infer_Asinh(ShapeContext& ctx) { return unary_float(ctx); }
Status infer_Acosh(ShapeContext& ctx) { return unary_float(ctx); }
Status infer_Atanh(ShapeContext& ctx) { return unary_float(ctx); }
Status infer_Floor(ShapeContext& ctx) { return unary_float(ctx); }
Status infer_Ceil(ShapeContext& ctx) { return unary_float(ctx); }
Status infer_Round(ShapeContext& ctx) { return unary_float(ctx); }
Status infer_Sign(ShapeContext& ctx) { return unary(ctx, kNumeric); }
Status infer_Not(ShapeContext& ctx) { return unary(ctx, kBools); }
Status infer_BitwiseNot(ShapeContext& ctx) { return unary(ctx, kInts); }
Status infer_Mish(ShapeContext& ctx) { return unary_float(ctx); }
Status infer_Swish(ShapeContext& ctx) { return unary_float(ctx); }

Status infer_IsNaN(ShapeContext& ctx) {
  RETURN_IF_ERROR(require_family(ctx, 0, kFloats, "X"));
  ctx.set_output(0, DType::kBool, ctx.shape(0));
  return Status::ok_status();
}

Status infer_IsInf(ShapeContext& ctx) {
  RETURN_IF_ERROR(require_kind(ctx, "detect_negative", Attribute::Kind::kInt));
  RETURN_IF_ERROR(require_kind(ctx, "detect_positive", Attribute::Kind::kInt));
  for (const char* name : {"detect_negative", "detect_positive"}) {
    int64_t v = ctx.attrs().get_int(name, 1);
    if (v != 0 && v != 1) return ctx.error("IsInf: attribute {} must be 0 or 1, got {}", name, v);
  }
  return infer_IsNaN(ctx);
}

Status infer_Shrink(ShapeContext& ctx) {
  RETURN_IF_ERROR(require_floats(ctx, {"bias", "lambd"}));
  return unary(ctx, kNumeric);
}

Status infer_ThresholdedRelu(ShapeContext& ctx) {
  RETURN_IF_ERROR(require_floats(ctx, {"alpha"}));
  return unary_float(ctx);
}

// ---- binary ---------------------------------------------------------------

Status infer_Add(ShapeContext& ctx) { return binary(ctx, kNumeric, false); }
Status infer_Sub(ShapeContext& ctx) { return binary(ctx, kNumeric, false); }
Status infer_Mul(ShapeContext& ctx) { return binary(ctx, kNumeric, false); }
Status infer_Div(ShapeContext& ctx) { return binary(ctx, kNumeric, false); }

Status infer_Pow(ShapeContext& ctx) {
  // The exponent may have any numeric dtype; the result has the base's.
  RETURN_IF_ERROR(require_family(ctx, 0, kNumeric, "X"));
  RETURN_IF_ERROR(require_family(ctx, 1, kNumeric, "Y"));
  return broadcast_inputs(ctx, ctx.dtype(0));
}

Status infer_Mod(ShapeContext& ctx) {
  RETURN_IF_ERROR(require_kind(ctx, "fmod", Attribute::Kind::kInt));
  int64_t fmod = ctx.attrs().get_int("fmod", 0);
  if (fmod != 0 && fmod != 1) return ctx.error("Mod: attribute fmod must be 0 or 1, got {}", fmod);
  // fmod = 0 on floats was invalid before opset 28 and is floor-mod since; graphc
  // reads it with the opset-28 meaning at every opset.
  return binary(ctx, kNumeric, false);
}

Status infer_And(ShapeContext& ctx) { return binary(ctx, kBools, false); }
Status infer_Or(ShapeContext& ctx) { return binary(ctx, kBools, false); }
Status infer_Xor(ShapeContext& ctx) { return binary(ctx, kBools, false); }
Status infer_BitwiseAnd(ShapeContext& ctx) { return binary(ctx, kInts, false); }
Status infer_BitwiseOr(ShapeContext& ctx) { return binary(ctx, kInts, false); }
Status infer_BitwiseXor(ShapeContext& ctx) { return binary(ctx, kInts, false); }

Status infer_BitShift(ShapeContext& ctx) {
  RETURN_IF_ERROR(require_kind(ctx, "direction", Attribute::Kind::kString));
  if (!ctx.attrs().has("direction"))
    return ctx.error("BitShift: attribute direction ('LEFT' or 'RIGHT') is required");
  std::string d = ctx.attrs().get_string("direction", "");
  if (d != "LEFT" && d != "RIGHT")
    return ctx.error("BitShift: attribute direction is '{}'; expected 'LEFT' or 'RIGHT'", d);
  // Signed integers arrived in opset 28; graphc reads them at every opset.
  return binary(ctx, kInts, false);
}

Status infer_Equal(ShapeContext& ctx) { return binary(ctx, kAll, true); }
Status infer_Less(ShapeContext& ctx) { return binary(ctx, kNumeric, true); }
Status infer_LessOrEqual(ShapeContext& ctx) { return binary(ctx, kNumeric, true); }
Status infer_Greater(ShapeContext& ctx) { return binary(ctx, kNumeric, true); }
Status infer_GreaterOrEqual(ShapeContext& ctx) { return binary(ctx, kNumeric, true); }

Status infer_PRelu(ShapeContext& ctx) {
  // slope broadcasts to X (unidirectionally); the output has X's shape.
  RETURN_IF_ERROR(require_family(ctx, 0, kNumeric, "X"));
  RETURN_IF_ERROR(require_same_dtype(ctx, 0, 1));
  auto b = broadcast_shapes(ctx.shape(0), ctx.shape(1));
  if (!b.ok() || *b != ctx.shape(0))
    return ctx.error("PRelu: slope shape {} does not broadcast to X shape {}",
                     shape_to_string(ctx.shape(1)), shape_to_string(ctx.shape(0)));
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
  return Status::ok_status();
}

// ---- variadic ---------------------------------------------------------------

// ONNX restricts Sum/Mean to floats; graphc also accepts integers (exact).
Status infer_Max(ShapeContext& ctx) { return variadic(ctx); }
Status infer_Min(ShapeContext& ctx) { return variadic(ctx); }
Status infer_Mean(ShapeContext& ctx) { return variadic(ctx); }
Status infer_Sum(ShapeContext& ctx) { return variadic(ctx); }

// ---- other ------------------------------------------------------------------

Status infer_Where(ShapeContext& ctx) {
  RETURN_IF_ERROR(require_family(ctx, 0, kBools, "condition"));
  RETURN_IF_ERROR(require_same_dtype(ctx, 1, 2));
  return broadcast_inputs(ctx, ctx.dtype(1));
}

// Clip: bounds are optional scalar inputs 1 (min) and 2 (max) of X's dtype.
// Models of opset < 11 carry them as float attributes, which the importer
// keeps as the IR attributes `_min` / `_max` (the input dtype is unknown at
// import time); the kernel honours them when the inputs are absent.
Status infer_Clip(ShapeContext& ctx) {
  RETURN_IF_ERROR(require_family(ctx, 0, kNumeric, "input"));
  RETURN_IF_ERROR(clip_bound(ctx, 1, "min"));
  RETURN_IF_ERROR(clip_bound(ctx, 2, "max"));
  RETURN_IF_ERROR(require_floats(ctx, {"_min", "_max"}));
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
  return Status::ok_status();
}

Status infer_Cast(ShapeContext& ctx) {
  const Attribute* to = ctx.attrs().find("to");
  if (!to) return ctx.error("Cast: attribute 'to' is required");
  RETURN_IF_ERROR(require_kind(ctx, "to", Attribute::Kind::kInt));
  if (to->i < 0 || to->i > INT32_MAX)
    return ctx.error("Cast: attribute 'to' = {} is not an ONNX data type", to->i);
  auto dt = dtype_from_onnx(static_cast<int32_t>(to->i));
  if (!dt)
    return unsupported("Cast: target type {} ({}) is not supported by graphc", to->i,
                       onnx_type_name(to->i));
  ctx.set_output(0, *dt, ctx.shape(0));
  return Status::ok_status();
}

Status infer_CastLike(ShapeContext& ctx) {
  ctx.set_output(0, ctx.dtype(1), ctx.shape(0));
  return Status::ok_status();
}

Status infer_Identity(ShapeContext& ctx) { return same_as_input(ctx, 0); }

// Dropout (inference only): output = data; the optional mask is all true
// (bool; for opset 7-9 models the importer sets the IR attribute
// `_mask_like_input` and the mask has data's dtype, all ones). training_mode
// known to be true with a ratio that is not known to be 0 is unsupported.
Status infer_Dropout(ShapeContext& ctx) {
  RETURN_IF_ERROR(require_family(ctx, 0, kFloats, "data"));
  if (ctx.has_input(1)) {
    RETURN_IF_ERROR(require_family(ctx, 1, kFloats, "ratio"));
    if (shape_numel(ctx.shape(1)) != 1)
      return ctx.error("Dropout: ratio must be a scalar, got shape {}",
                       shape_to_string(ctx.shape(1)));
  }
  if (ctx.has_input(2)) {
    RETURN_IF_ERROR(require_family(ctx, 2, kBools, "training_mode"));
    if (shape_numel(ctx.shape(2)) != 1)
      return ctx.error("Dropout: training_mode must be a scalar, got shape {}",
                       shape_to_string(ctx.shape(2)));
    const Tensor* t = ctx.constant(2);
    if (t && t->get_i64(0) != 0) {
      const Tensor* r = ctx.constant(1);
      bool ratio_zero = r && r->get_f64(0) == 0.0;
      if (!ctx.has_input(1) || (r && !ratio_zero))
        return unsupported(
            "Dropout: training_mode = true (random masking) is not supported; "
            "graphc compiles inference graphs");
    }
  }
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
  if (ctx.num_outputs() > 1) {
    bool like_input = ctx.attrs().get_int("_mask_like_input", 0) != 0;
    ctx.set_output(1, like_input ? ctx.dtype(0) : DType::kBool, ctx.shape(0));
  }
  return Status::ok_status();
}

}  // namespace graphc::ir::shape_rules
