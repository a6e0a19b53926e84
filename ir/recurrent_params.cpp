#include "ir/recurrent_params.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "ir/dtype.h"

namespace graphc::ir {

namespace {

using Kind = RnnActivation::Kind;

struct ActivationSpec {
  const char* name;
  Kind kind;
  bool uses_alpha, uses_beta;
  double default_alpha, default_beta;  // when activation_alpha/beta run out
};

// onnxruntime's defaults where the lists are shorter than the activations
// that take them (LeakyRelu 0.01, HardSigmoid 0.2/0.5, Elu and
// ThresholdedRelu 1); Affine and ScaledTanh default to the identity scale.
constexpr ActivationSpec kSpecs[] = {
    {"relu", Kind::kRelu, false, false, 0, 0},
    {"tanh", Kind::kTanh, false, false, 0, 0},
    {"sigmoid", Kind::kSigmoid, false, false, 0, 0},
    {"affine", Kind::kAffine, true, true, 1.0, 0.0},
    {"leakyrelu", Kind::kLeakyRelu, true, false, 0.01, 0},
    {"thresholdedrelu", Kind::kThresholdedRelu, true, false, 1.0, 0},
    {"scaledtanh", Kind::kScaledTanh, true, true, 1.0, 1.0},
    {"hardsigmoid", Kind::kHardSigmoid, true, true, 0.2, 0.5},
    {"elu", Kind::kElu, true, false, 1.0, 0},
    {"softsign", Kind::kSoftsign, false, false, 0, 0},
    {"softplus", Kind::kSoftplus, false, false, 0, 0},
};

const ActivationSpec* find_spec(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const auto& s : kSpecs)
    if (lower == s.name) return &s;
  return nullptr;
}

std::vector<std::string> default_activations(OpKind op) {
  if (op == OpKind::RNN) return {"Tanh"};
  if (op == OpKind::GRU) return {"Sigmoid", "Tanh"};
  return {"Sigmoid", "Tanh", "Tanh"};
}

Expected<RnnDirection> parse_direction(const AttributeMap& attrs) {
  std::string d = attrs.get_string("direction", "forward");
  if (d == "forward") return RnnDirection::kForward;
  if (d == "reverse") return RnnDirection::kReverse;
  if (d == "bidirectional") return RnnDirection::kBidirectional;
  return invalid_model("direction '{}' is not forward, reverse or bidirectional", d);
}

// Resolves the activation list for `dirs` directions.
Expected<std::vector<std::vector<RnnActivation>>> resolve_activations(OpKind op,
                                                                      const AttributeMap& attrs,
                                                                      int64_t dirs) {
  const auto count = static_cast<size_t>(recurrent_activation_count(op));
  std::vector<std::string> names = default_activations(op);
  if (const Attribute* a = attrs.find("activations")) {
    if (a->kind != Attribute::Kind::kStrings)
      return invalid_model("attribute 'activations' must be a list of strings");
    names = a->strings;
  }
  if (names.size() == count && dirs == 2) {
    auto twice = names;  // one list for both directions
    names.insert(names.end(), twice.begin(), twice.end());
  }
  if (names.size() != count * static_cast<size_t>(dirs))
    return invalid_model("'activations' lists {} functions; {} with {} direction(s) takes {}",
                         names.size(), op_name(op), dirs, count * static_cast<size_t>(dirs));
  std::vector<double> alphas = attrs.get_floats("activation_alpha");
  std::vector<double> betas = attrs.get_floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<std::vector<RnnActivation>> out(static_cast<size_t>(dirs));
  for (size_t i = 0; i < names.size(); ++i) {
    const ActivationSpec* s = find_spec(names[i]);
    if (!s) return unsupported("activation function '{}' is not one ONNX defines for {}", names[i],
                               op_name(op));
    RnnActivation act;
    act.kind = s->kind;
    // The alpha/beta lists are consumed in order by the functions that take them.
    act.alpha = s->uses_alpha && next_alpha < alphas.size() ? alphas[next_alpha++] : s->default_alpha;
    act.beta = s->uses_beta && next_beta < betas.size() ? betas[next_beta++] : s->default_beta;
    out[i / count].push_back(act);
  }
  return out;
}

Status expect_shape(const Shape* s, const Shape& want, const char* what) {
  if (*s != want)
    return invalid_model("input {} is [{}], expected [{}]", what, shape_to_string(*s),
                         shape_to_string(want));
  return Status::ok_status();
}

}  // namespace

double RnnActivation::apply(double x) const {
  switch (kind) {
    case Kind::kRelu: return x > 0 ? x : 0.0;
    case Kind::kTanh: return std::tanh(x);
    case Kind::kSigmoid: return 1.0 / (1.0 + std::exp(-x));
    case Kind::kAffine: return alpha * x + beta;
    case Kind::kLeakyRelu: return x < 0 ? alpha * x : x;
    case Kind::kThresholdedRelu: return x > alpha ? x : 0.0;
    case Kind::kScaledTanh: return alpha * std::tanh(beta * x);
    case Kind::kHardSigmoid: return std::max(0.0, std::min(1.0, alpha * x + beta));
    case Kind::kElu: return x >= 0 ? x : alpha * (std::exp(x) - 1.0);
    case Kind::kSoftsign: return x / (1.0 + std::fabs(x));
    case Kind::kSoftplus: return std::log1p(std::exp(x));
  }
  return x;
}

Shape RecurrentParams::y_shape() const {
  if (layout == 0) return {seq_len, num_directions, batch, hidden};
  return {batch, seq_len, num_directions, hidden};
}

Shape RecurrentParams::state_shape() const {
  if (layout == 0) return {num_directions, batch, hidden};
  return {batch, num_directions, hidden};
}

int64_t recurrent_activation_count(OpKind op) {
  return op == OpKind::RNN ? 1 : op == OpKind::GRU ? 2 : 3;
}

Status check_recurrent_attributes(OpKind op, const AttributeMap& attrs) {
  const char* known[] = {"activation_alpha", "activation_beta", "activations", "clip", "direction",
                         "hidden_size", "layout", "linear_before_reset", "input_forget"};
  for (const auto& [name, a] : attrs.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || name == k;
    if (name == "linear_before_reset" && op != OpKind::GRU) ok = false;
    if (name == "input_forget" && op != OpKind::LSTM) ok = false;
    if (!ok) return invalid_model("{} has no attribute '{}'", op_name(op), name);
  }
  const std::pair<const char*, Attribute::Kind> kinds[] = {
      {"activation_alpha", Attribute::Kind::kFloats}, {"activation_beta", Attribute::Kind::kFloats},
      {"activations", Attribute::Kind::kStrings},     {"clip", Attribute::Kind::kFloat},
      {"direction", Attribute::Kind::kString},        {"hidden_size", Attribute::Kind::kInt},
      {"layout", Attribute::Kind::kInt},              {"linear_before_reset", Attribute::Kind::kInt},
      {"input_forget", Attribute::Kind::kInt}};
  for (const auto& [name, kind] : kinds) {
    const Attribute* a = attrs.find(name);
    if (a && a->kind != kind)
      return invalid_model("attribute '{}' must be of type {}, got {}", name,
                           attribute_kind_name(kind), attribute_kind_name(a->kind));
  }
  ASSIGN_OR_RETURN(RnnDirection dir, parse_direction(attrs));
  int64_t layout = attrs.get_int("layout", 0);
  if (layout != 0 && layout != 1) return invalid_model("layout must be 0 or 1, got {}", layout);
  if (attrs.has("hidden_size") && attrs.get_int("hidden_size", 0) <= 0)
    return invalid_model("hidden_size must be positive, got {}", attrs.get_int("hidden_size", 0));
  if (attrs.has("clip") && !(attrs.get_float("clip", 0) > 0))
    return invalid_model("clip must be positive, got {}", attrs.get_float("clip", 0));
  auto acts = resolve_activations(op, attrs, dir == RnnDirection::kBidirectional ? 2 : 1);
  return acts.ok() ? Status::ok_status() : acts.status();
}

Expected<RecurrentParams> recurrent_params(OpKind op, const AttributeMap& attrs,
                                           const std::vector<const Shape*>& shapes,
                                           const std::vector<DType>& dtypes) {
  RETURN_IF_ERROR(check_recurrent_attributes(op, attrs));
  RecurrentParams p;
  p.op = op;
  p.gates = op == OpKind::RNN ? 1 : op == OpKind::GRU ? 3 : 4;
  ASSIGN_OR_RETURN(p.direction, parse_direction(attrs));
  p.num_directions = p.direction == RnnDirection::kBidirectional ? 2 : 1;
  p.layout = attrs.get_int("layout", 0);
  if (attrs.has("clip")) p.clip = attrs.get_float("clip", 0);
  p.linear_before_reset = attrs.get_int("linear_before_reset", 0) != 0;
  p.input_forget = attrs.get_int("input_forget", 0) != 0;
  ASSIGN_OR_RETURN(p.activations, resolve_activations(op, attrs, p.num_directions));

  auto shape_of = [&](size_t i) -> const Shape* { return i < shapes.size() ? shapes[i] : nullptr; };
  const Shape* x = shape_of(kRnnX);
  const Shape* w = shape_of(kRnnW);
  const Shape* r = shape_of(kRnnR);
  if (!x || !w || !r) return invalid_model("{} needs inputs X, W and R", op_name(op));
  if (x->size() != 3) return invalid_model("input X must have rank 3, got [{}]", shape_to_string(*x));
  if (r->size() != 3) return invalid_model("input R must have rank 3, got [{}]", shape_to_string(*r));
  p.dtype = dtypes[kRnnX];
  if (!is_float(p.dtype))
    return invalid_model("input X must be a floating-point tensor, got {}", dtype_name(p.dtype));
  p.seq_len = p.layout == 0 ? (*x)[0] : (*x)[1];
  p.batch = p.layout == 0 ? (*x)[1] : (*x)[0];
  p.input_size = (*x)[2];
  p.hidden = attrs.has("hidden_size") ? attrs.get_int("hidden_size", 0) : (*r)[2];
  const int64_t gh = p.gates * p.hidden;
  RETURN_IF_ERROR(expect_shape(w, {p.num_directions, gh, p.input_size}, "W"));
  RETURN_IF_ERROR(expect_shape(r, {p.num_directions, gh, p.hidden}, "R"));
  const char* names[] = {"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"};
  const size_t max_inputs = op == OpKind::LSTM ? 8 : 6;
  for (size_t i = 0; i < shapes.size() && i < max_inputs; ++i) {
    if (!shapes[i] || i == kRnnSeqLens) continue;
    if (dtypes[i] != p.dtype)
      return invalid_model("input {} is {}, X is {}", names[i], dtype_name(dtypes[i]),
                           dtype_name(p.dtype));
  }
  if (const Shape* b = shape_of(kRnnB))
    RETURN_IF_ERROR(expect_shape(b, {p.num_directions, 2 * gh}, "B"));
  if (const Shape* s = shape_of(kRnnSeqLens)) {
    RETURN_IF_ERROR(expect_shape(s, {p.batch}, "sequence_lens"));
    if (dtypes[kRnnSeqLens] != DType::kInt32)
      return invalid_model("input sequence_lens must be int32, got {}",
                           dtype_name(dtypes[kRnnSeqLens]));
  }
  if (const Shape* h = shape_of(kRnnInitialH))
    RETURN_IF_ERROR(expect_shape(h, p.state_shape(), "initial_h"));
  if (op == OpKind::LSTM) {
    if (const Shape* c = shape_of(kRnnInitialC))
      RETURN_IF_ERROR(expect_shape(c, p.state_shape(), "initial_c"));
    if (const Shape* pp = shape_of(kRnnP))
      RETURN_IF_ERROR(expect_shape(pp, {p.num_directions, 3 * p.hidden}, "P"));
  }
  return p;
}

}  // namespace graphc::ir
