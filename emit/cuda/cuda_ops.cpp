// THE table of CUDA expressions of the elementwise ops, keyed by OpKind
// (DESIGN principle 1). Each entry names the dtype families it accepts and
// renders its expression from operand identifiers, with attributes
// substituted as literals. Semantics follow reference/kernels_unary.cpp,
// kernels_binary.cpp and kernels_elementwise_other.cpp; the helpers (g_*)
// live in cuda_prelude.cpp.
#include "emit/cuda/cuda_ops.h"

#include <fmt/format.h>

#include <array>
#include <numbers>

namespace graphc::emit::cuda {

namespace {

using ir::DType;
using ir::OpKind;

enum Fam : unsigned { kF = 1, kS = 2, kU = 4, kB = 8, kI = kS | kU, kN = kF | kI, kAll = kN | kB };

unsigned family_of(DType t) {
  if (ir::is_float(t)) return kF;
  if (ir::is_signed_integer(t)) return kS;
  if (ir::is_unsigned_integer(t)) return kU;
  if (t == DType::kBool) return kB;
  return 0;
}

// What an expression builder sees: operands, the dtype of input 0 (`t`),
// its compute type `T`, the float math suffix `F` ("f" in float, "" in double).
struct Ctx {
  const OpOperands& o;
  DType t;
  std::string T, F;
  const std::string& x(size_t i = 0) const { return o.in[i]; }
  bool has(size_t i) const { return i < o.in.size() && !o.in[i].empty(); }
  double attr_f(const char* name, double def) const { return o.node->attrs.get_float(name, def); }
  int64_t attr_i(const char* name, int64_t def) const { return o.node->attrs.get_int(name, def); }
  std::string lit(double v) const { return literal(t, v); }
  bool is_float() const { return ir::is_float(t); }
  bool is_signed() const { return ir::is_signed_integer(t); }
  std::string fn(const char* name, const std::string& arg) const {
    return fmt::format("{}{}({})", name, F, arg);
  }
};

using ExprFn = Expected<std::string> (*)(const Ctx&);

struct Rule {
  OpKind op;
  unsigned families;  // dtypes of input 0 the op accepts
  ExprFn expr;
};

// Unary float math: `name` + suffix applied to x.
#define MATH(Op, name)                                                                      \
  {                                                                                         \
    OpKind::Op, kF, [](const Ctx& c) -> Expected<std::string> { return c.fn(name, c.x()); } \
  }

// a OP b for floats, the wrapping helper for integers.
#define ARITH(Op, sym, helper)                                                 \
  {                                                                            \
    OpKind::Op, kN, [](const Ctx& c) -> Expected<std::string> {                \
      if (c.is_float()) return fmt::format("({} " sym " {})", c.x(0), c.x(1)); \
      return fmt::format(helper "({}, {})", c.x(0), c.x(1));                   \
    }                                                                          \
  }

#define COMPARE(Op, fams, sym)                                    \
  {                                                               \
    OpKind::Op, fams, [](const Ctx& c) -> Expected<std::string> { \
      return fmt::format("({} " sym " {})", c.x(0), c.x(1));      \
    }                                                             \
  }

// Folds every input with `helper` (Max, Min) or + (Sum, Mean).
std::string fold(const Ctx& c, const char* helper) {
  std::string acc = c.x(0);
  for (size_t i = 1; i < c.o.in.size(); ++i) {
    if (helper)
      acc = fmt::format("{}({}, {})", helper, acc, c.x(i));
    else if (c.is_float())
      acc = fmt::format("({} + {})", acc, c.x(i));
    else
      acc = fmt::format("g_add({}, {})", acc, c.x(i));
  }
  return acc;
}

Expected<std::string> gelu(const Ctx& c) {
  std::string a = c.o.node->attrs.get_string("approximate", "none");
  const std::string& x = c.x();
  if (a == "none")
    return fmt::format("({h} * {x} * ({one} + {erf}))", fmt::arg("h", c.lit(0.5)), fmt::arg("x", x),
                       fmt::arg("one", c.lit(1)),
                       fmt::arg("erf", c.fn("erf", x + " / " + c.fn("sqrt", c.lit(2)))));
  if (a == "tanh") {
    std::string pi = c.T == "double" ? c.lit(std::numbers::pi) : c.lit(std::numbers::pi_v<float>);
    std::string k = c.fn("sqrt", c.lit(2) + " / " + pi);
    std::string inner =
        fmt::format("{} * ({} + {} * {} * {} * {})", k, x, c.lit(0.044715), x, x, x);
    return fmt::format("({} * {} * ({} + {}))", c.lit(0.5), x, c.lit(1), c.fn("tanh", inner));
  }
  return invalid_model("Gelu: attribute approximate is '{}'; expected 'none' or 'tanh'", a);
}

Expected<std::string> pow_expr(const Ctx& c) {
  DType tb = c.o.in_dtype[1];
  const std::string &a = c.x(0), &b = c.x(1);
  if (c.is_float() || ir::is_float(tb)) {
    std::string p = fmt::format("pow((double)({}), (double)({}))", a, b);
    return convert_expr(DType::kFloat64, c.t, p);
  }
  if (!ir::is_integer(tb)) return unsupported("Pow: exponent dtype {}", ir::dtype_name(tb));
  std::string neg = ir::is_signed_integer(tb) ? fmt::format("({} < 0)", b) : "false";
  return fmt::format("g_ipow({}, (unsigned long long)({}), {}, {})", a, b, neg,
                     c.is_signed() ? "true" : "false");
}

Expected<std::string> mod_expr(const Ctx& c) {
  bool fmod = c.attr_i("fmod", 0) != 0;
  if (c.is_float())
    return fmod ? fmt::format("fmod{}({}, {})", c.F, c.x(0), c.x(1))
                : fmt::format("g_pymod({}, {})", c.x(0), c.x(1));
  if (c.is_signed())
    return fmt::format("g_smod({}, {}, {})", c.x(0), c.x(1), fmod ? "true" : "false");
  return fmt::format("g_umod({}, {})", c.x(0), c.x(1));
}

Expected<std::string> bitshift(const Ctx& c) {
  std::string d = c.o.node->attrs.get_string("direction", "");
  if (d != "LEFT" && d != "RIGHT")
    return invalid_model("BitShift: attribute direction is '{}'; expected 'LEFT' or 'RIGHT'", d);
  std::string u =
      c.is_signed() ? "unsigned " + (c.T == "signed char" ? std::string("char") : c.T) : c.T;
  return fmt::format("g_shift<{}, {}>({}, {}, {}, {})", c.T, u, c.x(0), c.x(1),
                     d == "LEFT" ? "true" : "false", c.is_signed() ? "true" : "false");
}

Expected<std::string> clip(const Ctx& c) {
  std::string v = c.x();
  const ir::Attribute* lo = c.o.node->attrs.find("_min");
  const ir::Attribute* hi = c.o.node->attrs.find("_max");
  // Bound inputs or, for opset < 11 models, the importer's `_min`/`_max` attributes.
  if (c.has(1))
    v = fmt::format("g_clip_lo({}, {})", v, c.x(1));
  else if (lo)
    v = fmt::format("g_clip_lo({}, ({})({}))", v, c.T,
                    convert_expr(DType::kFloat64, c.t, literal(DType::kFloat64, lo->f)));
  if (c.has(2))
    v = fmt::format("g_clip_hi({}, {})", v, c.x(2));
  else if (hi)
    v = fmt::format("g_clip_hi({}, ({})({}))", v, c.T,
                    convert_expr(DType::kFloat64, c.t, literal(DType::kFloat64, hi->f)));
  return v;
}

Expected<std::string> shrink(const Ctx& c) {
  double bias = c.attr_f("bias", 0.0), lambd = c.attr_f("lambd", 0.5);
  const std::string& x = c.x();
  if (c.is_float())
    return fmt::format("({x} < -{l} ? {x} + {b} : {x} > {l} ? {x} - {b} : {z})", fmt::arg("x", x),
                       fmt::arg("l", c.lit(lambd)), fmt::arg("b", c.lit(bias)),
                       fmt::arg("z", c.lit(0)));
  // Integers: the real-valued result truncated toward zero.
  std::string d = "(double)(" + x + ")";
  auto L = [](double v) { return literal(DType::kFloat64, v); };
  std::string r = fmt::format("({d} < -{l} ? {d} + {b} : {d} > {l} ? {d} - {b} : 0.0)",
                              fmt::arg("d", d), fmt::arg("l", L(lambd)), fmt::arg("b", L(bias)));
  return convert_expr(DType::kFloat64, c.t, r);
}

const std::vector<Rule>& rules() {
  static const std::vector<Rule> table = {
      // Unary
      {OpKind::Abs, kN,
       [](const Ctx& c) -> Expected<std::string> {
         if (c.is_float()) return c.fn("fabs", c.x());
         if (!c.is_signed()) return c.x();
         return fmt::format("({0} < 0 ? g_neg({0}) : {0})", c.x());  // abs(INT_MIN) wraps
       }},
      {OpKind::Neg, kF | kS,
       [](const Ctx& c) -> Expected<std::string> {
         return c.is_float() ? "(-" + c.x() + ")" : "g_neg(" + c.x() + ")";
       }},
      MATH(Exp, "exp"),
      MATH(Log, "log"),
      MATH(Sqrt, "sqrt"),
      {OpKind::Reciprocal, kF,
       [](const Ctx& c) -> Expected<std::string> {
         return fmt::format("({} / {})", c.lit(1), c.x());
       }},
      {OpKind::Sigmoid, kF,
       [](const Ctx& c) -> Expected<std::string> { return "g_sigmoid(" + c.x() + ")"; }},
      MATH(Tanh, "tanh"),
      {OpKind::Relu, kF | kS,
       [](const Ctx& c) -> Expected<std::string> {
         return fmt::format("({0} < ({1})0 ? ({1})0 : {0})", c.x(), c.T);  // NaN stays NaN
       }},
      {OpKind::LeakyRelu, kF,
       [](const Ctx& c) -> Expected<std::string> {
         return fmt::format("({0} < {1} ? {2} * {0} : {0})", c.x(), c.lit(0),
                            c.lit(c.attr_f("alpha", 0.01)));
       }},
      {OpKind::Elu, kF,
       [](const Ctx& c) -> Expected<std::string> {
         return fmt::format("({0} < {1} ? {2} * {3} : {0})", c.x(), c.lit(0),
                            c.lit(c.attr_f("alpha", 1.0)), c.fn("expm1", c.x()));
       }},
      {OpKind::Selu, kF,
       [](const Ctx& c) -> Expected<std::string> {
         std::string g = c.lit(c.attr_f("gamma", 1.05070102214813232421875));
         std::string a = c.lit(c.attr_f("alpha", 1.67326319217681884765625));
         return fmt::format("({0} > {1} ? {2} * {0} : {2} * {3} * {4})", c.x(), c.lit(0), g, a,
                            c.fn("expm1", c.x()));
       }},
      {OpKind::Celu, kF,
       [](const Ctx& c) -> Expected<std::string> {
         double alpha = c.attr_f("alpha", 1.0);
         if (alpha == 0.0) return invalid_model("Celu: attribute alpha must be nonzero");
         std::string a = c.lit(alpha), z = c.lit(0);
         return fmt::format("(g_max2({z}, {x}) + g_min2({z}, {a} * {e}))", fmt::arg("z", z),
                            fmt::arg("x", c.x()), fmt::arg("a", a),
                            fmt::arg("e", c.fn("expm1", c.x() + " / " + a)));
       }},
      {OpKind::HardSigmoid, kF,
       [](const Ctx& c) -> Expected<std::string> {
         return fmt::format("g_max2({}, g_min2({}, {} * {} + {}))", c.lit(0), c.lit(1),
                            c.lit(c.attr_f("alpha", 0.2)), c.x(), c.lit(c.attr_f("beta", 0.5)));
       }},
      {OpKind::HardSwish, kF,
       [](const Ctx& c) -> Expected<std::string> {
         return fmt::format("({0} * g_max2({1}, g_min2({2}, {0} / {3} + {4})))", c.x(), c.lit(0),
                            c.lit(1), c.lit(6), c.lit(0.5));
       }},
      {OpKind::Softplus, kF,
       [](const Ctx& c) -> Expected<std::string> { return "g_softplus(" + c.x() + ")"; }},
      {OpKind::Mish, kF,
       [](const Ctx& c) -> Expected<std::string> {
         return fmt::format("({} * {})", c.x(), c.fn("tanh", "g_softplus(" + c.x() + ")"));
       }},
      {OpKind::Swish, kF,
       [](const Ctx& c) -> Expected<std::string> {
         std::string arg = fmt::format("-({}) * {}", c.lit(c.attr_f("alpha", 1.0)), c.x());
         return fmt::format("({} / ({} + {}))", c.x(), c.lit(1), c.fn("exp", arg));
       }},
      {OpKind::Softsign, kF,
       [](const Ctx& c) -> Expected<std::string> {
         return fmt::format("({} / ({} + {}))", c.x(), c.lit(1), c.fn("fabs", c.x()));
       }},
      {OpKind::Erf, kN,
       [](const Ctx& c) -> Expected<std::string> {
         if (c.is_float()) return c.fn("erf", c.x());
         return convert_expr(DType::kFloat64, c.t, "erf((double)(" + c.x() + "))");
       }},
      {OpKind::Gelu, kF, gelu},
      MATH(Sin, "sin"),
      MATH(Cos, "cos"),
      MATH(Tan, "tan"),
      MATH(Asin, "asin"),
      MATH(Acos, "acos"),
      MATH(Atan, "atan"),
      MATH(Sinh, "sinh"),
      MATH(Cosh, "cosh"),
      MATH(Asinh, "asinh"),
      MATH(Acosh, "acosh"),
      MATH(Atanh, "atanh"),
      MATH(Floor, "floor"),
      MATH(Ceil, "ceil"),
      MATH(Round, "rint"),  // halves to even, as nearbyint
      {OpKind::Sign, kN,
       [](const Ctx& c) -> Expected<std::string> {
         if (c.is_float())
           return fmt::format("({0} > {1} ? {2} : {0} < {1} ? {3} : {0})", c.x(), c.lit(0),
                              c.lit(1), c.lit(-1));
         if (!c.is_signed()) return fmt::format("(({})({} > 0 ? 1 : 0))", c.T, c.x());
         return fmt::format("(({1})({0} > 0 ? 1 : {0} < 0 ? -1 : 0))", c.x(), c.T);
       }},
      {OpKind::Not, kB, [](const Ctx& c) -> Expected<std::string> { return "(!" + c.x() + ")"; }},
      {OpKind::IsNaN, kF,
       [](const Ctx& c) -> Expected<std::string> {
         return fmt::format("({0} != {0})", c.x());  // exact: fast math is never on
       }},
      {OpKind::IsInf, kF,
       [](const Ctx& c) -> Expected<std::string> {
         bool neg = c.attr_i("detect_negative", 1) != 0, pos = c.attr_i("detect_positive", 1) != 0;
         std::string inf = c.lit(INFINITY);
         std::string p = pos ? fmt::format("{} == {}", c.x(), inf) : "false";
         std::string n = neg ? fmt::format("{} == -{}", c.x(), inf) : "false";
         return fmt::format("(({}) || ({}))", p, n);
       }},
      {OpKind::Shrink, kN, shrink},
      {OpKind::ThresholdedRelu, kF,
       [](const Ctx& c) -> Expected<std::string> {
         return fmt::format("({0} > {1} ? {0} : {2})", c.x(), c.lit(c.attr_f("alpha", 1.0)),
                            c.lit(0));
       }},
      // Binary
      ARITH(Add, "+", "g_add"),
      ARITH(Sub, "-", "g_sub"),
      ARITH(Mul, "*", "g_mul"),
      {OpKind::Div, kN,
       [](const Ctx& c) -> Expected<std::string> {
         if (c.is_float()) return fmt::format("({} / {})", c.x(0), c.x(1));
         return fmt::format("{}({}, {})", c.is_signed() ? "g_sdiv" : "g_udiv", c.x(0), c.x(1));
       }},
      {OpKind::Pow, kN, pow_expr},
      {OpKind::Mod, kN, mod_expr},
      COMPARE(And, kB, "&&"),
      COMPARE(Or, kB, "||"),
      COMPARE(Xor, kB, "!="),
      {OpKind::BitShift, kI, bitshift},
      {OpKind::BitwiseAnd, kI,
       [](const Ctx& c) -> Expected<std::string> {
         return fmt::format("(({})({} & {}))", c.T, c.x(0), c.x(1));
       }},
      {OpKind::BitwiseOr, kI,
       [](const Ctx& c) -> Expected<std::string> {
         return fmt::format("(({})({} | {}))", c.T, c.x(0), c.x(1));
       }},
      {OpKind::BitwiseXor, kI,
       [](const Ctx& c) -> Expected<std::string> {
         return fmt::format("(({})({} ^ {}))", c.T, c.x(0), c.x(1));
       }},
      {OpKind::BitwiseNot, kI,
       [](const Ctx& c) -> Expected<std::string> { return fmt::format("(({})(~{}))", c.T, c.x()); }},
      COMPARE(Equal, kAll, "=="),
      COMPARE(Less, kN, "<"),
      COMPARE(LessOrEqual, kN, "<="),
      COMPARE(Greater, kN, ">"),
      COMPARE(GreaterOrEqual, kN, ">="),
      {OpKind::PRelu, kN,
       [](const Ctx& c) -> Expected<std::string> {
         if (c.is_float())
           return fmt::format("({0} < {2} ? {1} * {0} : {0})", c.x(0), c.x(1), c.lit(0));
         if (!c.is_signed()) return c.x(0);
         return fmt::format("({0} < 0 ? g_mul({1}, {0}) : {0})", c.x(0), c.x(1));
       }},
      // Variadic
      {OpKind::Max, kN, [](const Ctx& c) -> Expected<std::string> { return fold(c, "g_vmax"); }},
      {OpKind::Min, kN, [](const Ctx& c) -> Expected<std::string> { return fold(c, "g_vmin"); }},
      {OpKind::Sum, kN, [](const Ctx& c) -> Expected<std::string> { return fold(c, nullptr); }},
      {OpKind::Mean, kN,
       [](const Ctx& c) -> Expected<std::string> {
         auto n = static_cast<int64_t>(c.o.in.size());
         std::string s = fold(c, nullptr);
         if (c.is_float()) return fmt::format("({} / {})", s, c.lit(static_cast<double>(n)));
         if (c.is_signed()) return fmt::format("(({})((long long)({}) / {}LL))", c.T, s, n);
         return fmt::format("(({})((unsigned long long)({}) / {}ULL))", c.T, s, n);
       }},
      // Other elementwise
      {OpKind::Where, kB,
       [](const Ctx& c) -> Expected<std::string> {
         return fmt::format("({} ? {} : {})", c.x(0), c.x(1), c.x(2));
       }},
      {OpKind::Clip, kN, clip},
      {OpKind::Cast, kAll,
       [](const Ctx& c) -> Expected<std::string> {
         return convert_expr(c.t, c.o.out_dtype, c.x(), c.attr_i("saturate", 1) != 0);
       }},
      {OpKind::CastLike, kAll,
       [](const Ctx& c) -> Expected<std::string> {
         return convert_expr(c.t, c.o.out_dtype, c.x(), c.attr_i("saturate", 1) != 0);
       }},
      {OpKind::Identity, kAll, [](const Ctx& c) -> Expected<std::string> { return c.x(); }},
      {OpKind::Dropout, kAll,
       [](const Ctx& c) -> Expected<std::string> {
         // Inference only: the mask output (opset >= 10 bool, older: input dtype) is all ones.
         if (c.has(2))
           return unsupported("Dropout: a training_mode input is not supported in CUDA kernels");
         if (c.o.out_index == 0) return c.x();
         return int_literal(c.o.out_dtype, 1);
       }},
  };
  return table;
}

#undef MATH
#undef ARITH
#undef COMPARE

const std::array<const Rule*, ir::kOpCount>& index() {
  static const auto idx = [] {
    std::array<const Rule*, ir::kOpCount> a{};
    for (const Rule& r : rules()) a[static_cast<size_t>(r.op)] = &r;
    return a;
  }();
  return idx;
}

}  // namespace

bool has_cuda_expression(OpKind op) { return index()[static_cast<size_t>(op)] != nullptr; }

Expected<std::string> op_expression(const OpOperands& o) {
  const ir::Node& n = *o.node;
  const Rule* r = index()[static_cast<size_t>(n.op)];
  if (!r)
    return unsupported("node '{}': op {} has no CUDA expression (emit/cuda/cuda_ops.cpp)", n.name,
                       ir::op_name(n.op));
  if (o.in.empty() || o.in[0].empty())
    return invalid_model("node '{}': input 0 is missing", n.name);
  // Where dispatches on its condition (input 0); the value dtype is input 1's.
  DType t = n.op == OpKind::Where ? o.in_dtype[1] : o.in_dtype[0];
  // Narrow types (stored bits) only move or convert: no arithmetic on them.
  bool narrow = is_narrow(o.out_dtype);
  for (DType d : o.in_dtype) narrow |= is_narrow(d);
  const bool moves = n.op == OpKind::Cast || n.op == OpKind::CastLike ||
                     n.op == OpKind::Identity || n.op == OpKind::Where ||
                     (n.op == OpKind::Dropout && o.out_index == 0);
  if (narrow && !moves)
    return unsupported("node '{}': op {} has no CUDA expression for the narrow dtype {}", n.name,
                       ir::op_name(n.op), ir::dtype_name(o.in_dtype[0]));
  if ((!(narrow && moves) && (family_of(o.in_dtype[0]) & r->families) == 0) ||
      compute_type(t).empty())
    return unsupported("node '{}': op {} has no CUDA expression for dtype {}", n.name,
                       ir::op_name(n.op), ir::dtype_name(o.in_dtype[0]));
  Ctx c{o, t, compute_type(t), t == DType::kFloat64 ? "" : "f"};
  auto e = r->expr(c);
  if (!e.ok()) return e.status().with_context("node '" + n.name + "'");
  return e;
}

}  // namespace graphc::emit::cuda
