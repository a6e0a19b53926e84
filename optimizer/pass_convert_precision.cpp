// convert-precision (--precision fp16|bf16): what TensorRT --fp16 and
// onnxconverter-common's float16 conversion do, on the IR.
//  - float32 constants read by converted nodes become the target dtype, once:
//    in place when every reader converts, else one shared converted copy;
//  - float32 intermediates take the target dtype; integer/bool values and shape
//    subgraphs are untouched;
//  - ops that overflow or accumulate badly in half precision stay float32 with
//    Casts around them, one line each in PassContext::precision_notes;
//  - graph inputs/outputs keep float32 (a Cast at the edge, output names kept)
//    unless keep_io_dtype is false.
// Softmax, LayerNormalization, MatMul, Gemm, Conv, pools and the other
// normalizations run in half precision: their GPU kernels accumulate in float32
// and round only the result (the reference executor computes in float too).
// Only float32 values are retyped; float64 and models' own fp16 stay as they are.
#include <cmath>
#include <limits>
#include <unordered_set>

#include "ir/attention_params.h"
#include "ir/shape_inference.h"
#include "optimizer/passes.h"
#include "optimizer/rewrite_util.h"
#include "support/half.h"
#include "support/parallel.h"

namespace graphc::optimizer {

namespace {

using ir::DType;
using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::OpKind;
using ir::ValueId;

constexpr double kHalfMax = 65504.0;           // largest finite float16
constexpr double kHalfMinSubnormal = 0x1p-24;  // smallest positive float16
constexpr double kBf16Max = 0x1.fep127;        // largest finite bfloat16

enum class Mode { kUntouched, kConvert, kKeep };

// True when input `i` shares the node's float type T (and so is retyped with
// the node). Inputs with their own type (the op table's traits) stay as they are.
bool follows_float_type(const Node& n, size_t i) {
  if (n.op == OpKind::EyeLike) return !n.attrs.has("dtype");  // its output dtype is an attribute
  return i >= 32 || !((ir::op_info(n.op).traits.own_type_inputs >> i) & 1u);
}

// True when output `o` takes the node's float type (LayerNormalization's mean
// and inverse std dev have stash_type's).
bool output_follows_float_type(const Node& n, size_t o) {
  return o >= 32 || !((ir::op_info(n.op).traits.own_type_outputs >> o) & 1u);
}

bool is_shape_only(OpKind op) { return ir::op_info(op).traits.shape_only; }

// Why an op stays float32 whatever the target (accumulation), or "".
std::string accumulation_reason(OpKind op) {
  return std::string(ir::op_info(op).traits.fp32_reason);
}

// Saturating conversion of a float32 constant: finite values beyond the
// target's range become its largest finite value (not inf), and for float16
// non-zero values below the smallest subnormal keep their sign and become it
// (as onnxconverter-common does), so an epsilon does not turn into 0.
ir::Tensor convert_constant(const ir::Tensor& t, DType to) {
  if (to != DType::kFloat16 && to != DType::kBFloat16) return t.cast_to(to);
  ir::Tensor out(to, t.shape());
  double max = to == DType::kFloat16 ? kHalfMax : kBf16Max;
  if (t.dtype() == DType::kFloat32) {
    // The same arithmetic in float (the limits are exact floats), over all
    // cores: multi-GB weights convert at memory speed, bit for bit as below.
    const float* src = t.data_as<float>();
    auto* dst = reinterpret_cast<uint16_t*>(out.mutable_data());
    const auto fmax = static_cast<float>(max);
    const auto fmin = static_cast<float>(kHalfMinSubnormal);
    const bool half = to == DType::kFloat16;
    parallel_for(t.numel(), int64_t{1} << 20, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        float v = src[i];
        if (std::isfinite(v) && std::abs(v) > fmax) v = std::copysign(fmax, v);
        if (half && v != 0 && std::abs(v) < fmin) v = std::copysign(fmin, v);
        dst[i] = half ? float_to_half_bits(v) : float_to_bf16_bits(v);
      }
    });
    t.release_resident();  // a mapped weight's float32 pages are not needed again
    return out;
  }
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.get_f64(i);
    if (std::isfinite(v) && std::abs(v) > max) v = std::copysign(max, v);
    if (to == DType::kFloat16 && v != 0 && std::abs(v) < kHalfMinSubnormal)
      v = std::copysign(kHalfMinSubnormal, v);
    out.set_f64(i, v);
  }
  return out;
}

// The largest finite magnitude in a float tensor beyond the float16 range, or 0.
double beyond_half(const ir::Tensor& t) {
  if (t.dtype() == DType::kFloat32) {  // the common case, without a double per element
    const float* p = t.data_as<float>();
    float worst = 0;
    for (int64_t i = 0; i < t.numel(); ++i)
      if (std::isfinite(p[i]) && std::abs(p[i]) > static_cast<float>(kHalfMax) &&
          std::abs(p[i]) > std::abs(worst))
        worst = p[i];
    t.release_resident();  // read again only if converted: keeps a mapped model's RSS flat
    return worst;
  }
  double worst = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.get_f64(i);
    if (std::isfinite(v) && std::abs(v) > kHalfMax && std::abs(v) > std::abs(worst)) worst = v;
  }
  return worst;
}

class Converter {
 public:
  Converter(Graph& g, PassContext& ctx)
      : g_(g),
        ctx_(ctx),
        target_(ctx.precision == Precision::kFp16 ? DType::kFloat16 : DType::kBFloat16) {}

  Status run();

 private:
  using Reader = std::pair<NodeId, size_t>;  // node, input position

  DType orig(ValueId v) const {
    return static_cast<size_t>(v) < orig_.size() ? orig_[static_cast<size_t>(v)]
                                                 : DType::kUndefined;
  }
  bool float_node(const Node& n) const;
  bool builds_shapes(const Node& n) const;
  bool exp_is_max_subtracted(const Node& n) const;
  bool pow_is_normalizing(const Node& n) const;
  bool feeds_softmax(ValueId v, int depth = 0) const;
  void keep_quantize_inputs();
  void classify();
  void classify_half_range(NodeId id);
  void convert_constants_in_place();
  void rewrite_type_attrs(Node& n);
  std::string fresh(const std::string& base);
  ValueId cast_of(ValueId v, DType to);
  void fix_graph_outputs();
  void drop_redundant_casts();
  void note(const Node& n, const std::string& what);

  Graph& g_;
  PassContext& ctx_;
  DType target_;
  std::vector<DType> orig_;                   // each value's dtype before the pass
  std::vector<std::vector<Reader>> readers_;  // of the original graph
  std::vector<Mode> mode_;                    // per original node
  std::map<std::pair<ValueId, DType>, ValueId> casts_;
  std::vector<Node> nodes_;  // the rewritten node list, Casts included
  std::unordered_set<std::string> names_;
};

bool Converter::float_node(const Node& n) const {
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (n.inputs[i] != ir::kNoValue && follows_float_type(n, i) &&
        orig(n.inputs[i]) == DType::kFloat32)
      return true;
  for (size_t o = 0; o < n.outputs.size(); ++o)
    if (n.outputs[o] != ir::kNoValue && output_follows_float_type(n, o) &&
        orig(n.outputs[o]) == DType::kFloat32)
      return true;
  return false;
}

// A node whose outputs are all known at build time computes shapes or weight
// prep, not model compute: it keeps float32 so the known values stay exact.
bool Converter::builds_shapes(const Node& n) const {
  for (ValueId o : n.outputs)
    if (o != ir::kNoValue && !g_.value(o).constant) return false;
  return true;
}

// Exp(x - ReduceMax(x)) is at most 1: the numerator of a spelled-out softmax.
bool Converter::exp_is_max_subtracted(const Node& n) const {
  const Node* sub = producer_if(g_, n.inputs[0], OpKind::Sub);
  if (!sub) return false;
  const Node* max = producer_if(g_, sub->inputs[1], OpKind::ReduceMax);
  return max && max->inputs[0] == sub->inputs[0];
}

// Pow read only by ReduceMean is the variance / mean square of a normalization;
// an exponent in [0, 1] cannot grow a magnitude beyond max(1, |x|).
bool Converter::pow_is_normalizing(const Node& n) const {
  if (auto e = scalar_constant(g_, n.inputs[1]); e && *e >= 0 && *e <= 1) return true;
  ValueId out = n.outputs[0];
  const auto& rs = readers_[static_cast<size_t>(out)];
  if (rs.empty() || g_.is_graph_output(out)) return false;
  for (const auto& [r, pos] : rs)
    if (g_.node(r).op != OpKind::ReduceMean) return false;
  return true;
}

// True when every reader path of `v` reaches Softmax/LogSoftmax (or
// Attention's attn_mask) through shape-only ops: a mask value there only has
// to be "very negative".
bool Converter::feeds_softmax(ValueId v, int depth) const {
  const auto& rs = readers_[static_cast<size_t>(v)];
  if (depth > 8 || rs.empty() || g_.is_graph_output(v)) return false;
  for (const auto& [r, pos] : rs) {
    const Node& n = g_.node(r);
    if (n.op == OpKind::Attention && pos == ir::kAttnMask) continue;  // its softmax's mask
    if (pos != 0) return false;
    if (n.op == OpKind::Softmax || n.op == OpKind::LogSoftmax) continue;
    if (!is_shape_only(n.op) || !feeds_softmax(n.outputs[0], depth + 1)) return false;
  }
  return true;
}

void Converter::note(const Node& n, const std::string& what) {
  ctx_.precision_notes.push_back(
      fmt::format("node '{}' ({}): {}", n.name, ir::op_name(n.op), what));
}

// float16 only: ops whose values leave its range. bfloat16 has float32's
// exponent range, so only the accumulation rules apply to it.
void Converter::classify_half_range(NodeId id) {
  const Node& n = g_.node(id);
  auto keep = [&](const std::string& why) {
    mode_[static_cast<size_t>(id)] = Mode::kKeep;
    note(n, "kept in float32: " + why);
  };
  if (n.op == OpKind::Exp && !exp_is_max_subtracted(n))
    return keep(
        "exp overflows float16 for inputs above 11 (not a max-subtracted softmax numerator)");
  if (n.op == OpKind::Pow && !pow_is_normalizing(n))
    return keep("powers overflow float16 (not the variance of a normalization)");
  if (n.op == OpKind::ConstantOfShape) {
    const ir::Attribute* a = n.attrs.find("value");
    if (a && a->kind == ir::Attribute::Kind::kTensor && a->t.dtype() == DType::kFloat32 &&
        beyond_half(a->t) != 0)
      return keep(
          fmt::format("its value {:g} is beyond the float16 range (+-65504)", beyond_half(a->t)));
  }
  // Constant inputs beyond the range: a mask before Softmax (Add or Where) and
  // Clip bounds are clamped to +-65504, which keeps their meaning; anything
  // else keeps float32 rather than compute with inf.
  bool masking = (n.op == OpKind::Add || n.op == OpKind::Where) && feeds_softmax(n.outputs[0]);
  std::vector<std::string> clamped;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    ValueId v = n.inputs[i];
    if (v == ir::kNoValue || !follows_float_type(n, i) || orig(v) != DType::kFloat32 ||
        !g_.value(v).constant)
      continue;
    double worst = beyond_half(*g_.value(v).constant);
    if (worst == 0) continue;
    if (masking || (n.op == OpKind::Clip && i > 0)) {
      clamped.push_back(g_.value(v).name);
      continue;
    }
    return keep(fmt::format("constant input '{}' holds {:g}, beyond the float16 range (+-65504)",
                            g_.value(v).name, worst));
  }
  for (const auto& c : clamped)
    note(n, fmt::format("constant '{}' clamped to +-65504 for float16: {}", c,
                        !masking              ? "Clip bound"
                        : n.op == OpKind::Add ? "additive attention mask before Softmax"
                                              : "masked fill before Softmax"));
}

// --int8-precision fp32: each QuantizeLinear and what computes its input (the
// producer, and elementwise producers before it back to a non-elementwise op,
// a LayerNormalization or Softmax say, but not a GEMM, conv or attention)
// stay float32, so x / scale sees the value the float32 model quantizes
// instead of one rounded to half precision first.
void Converter::keep_quantize_inputs() {
  std::vector<NodeId> work;
  for (size_t id = 0; id < g_.nodes.size(); ++id)
    if (!g_.nodes[id].dead && g_.nodes[id].op == OpKind::QuantizeLinear && float_node(g_.nodes[id]))
      work.push_back(static_cast<NodeId>(id));
  std::vector<bool> seen(g_.nodes.size(), false);
  while (!work.empty()) {
    const NodeId id = work.back();
    work.pop_back();
    if (seen[static_cast<size_t>(id)]) continue;
    seen[static_cast<size_t>(id)] = true;
    const Node& n = g_.node(id);
    // A QuantizeLinear is kept in float32 for its scale already (classify):
    // the walk still goes on to what computes its input.
    const bool quantize = n.op == OpKind::QuantizeLinear;
    if (mode_[static_cast<size_t>(id)] != Mode::kConvert && !quantize) continue;
    // A GEMM/conv/attention stays in half precision (its tensor-core speed is
    // the point of fp16); it rounds its output once, as it would anyway.
    const ir::OpCategory cat = ir::op_info(n.op).category;
    if (cat == ir::OpCategory::kContraction || cat == ir::OpCategory::kConvolution ||
        cat == ir::OpCategory::kAttention)
      continue;
    if (mode_[static_cast<size_t>(id)] == Mode::kConvert) {
      mode_[static_cast<size_t>(id)] = Mode::kKeep;
      note(n, "kept in float32: it computes a QuantizeLinear's input (--int8-precision fp32)");
    }
    if (n.op != OpKind::QuantizeLinear && !ir::is_elementwise(n.op)) continue;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const ValueId v = n.inputs[i];
      if (v == ir::kNoValue || orig(v) != DType::kFloat32 || !follows_float_type(n, i)) continue;
      const NodeId p = g_.value(v).producer;
      if (p >= 0 && (n.op != OpKind::QuantizeLinear || i == 0)) work.push_back(p);
    }
  }
}

void Converter::classify() {
  mode_.assign(g_.nodes.size(), Mode::kUntouched);
  for (size_t id = 0; id < g_.nodes.size(); ++id) {
    const Node& n = g_.nodes[id];
    if (n.dead || !float_node(n)) continue;
    if (builds_shapes(n)) {
      mode_[id] = Mode::kKeep;  // no note: not model compute
      continue;
    }
    // The int8 GEMM's dequantize (fuse-qdq-matmul): its scale is the product
    // of the activation's and the weight's scales, typically 1e-7..1e-5, below
    // float16's normal range (6.1e-5), where a half-precision scale keeps only
    // a few bits. It computes in float32 and rounds its result once.
    if (n.op == OpKind::DequantizeLinear && g_.value(n.inputs[0]).dtype == DType::kInt32) {
      mode_[id] = Mode::kKeep;
      note(n,
           "kept in float32: an int32 accumulator's dequantize scale (a product of two "
           "scales) lies below the float16 normal range");
      continue;
    }
    if (std::string why = accumulation_reason(n.op); !why.empty()) {
      mode_[id] = Mode::kKeep;
      note(n, "kept in float32: " + why);
      continue;
    }
    mode_[id] = Mode::kConvert;
    if (target_ == DType::kFloat16) classify_half_range(static_cast<NodeId>(id));
  }
  if (ctx_.int8_precision == Int8Precision::kFp32) keep_quantize_inputs();
}

// Float32 constants read only by converted nodes (as their float type) are
// converted where they are, keeping their names; the others get a converted
// copy on first use (cast_of).
void Converter::convert_constants_in_place() {
  for (size_t v = 0; v < orig_.size(); ++v) {
    ir::Value& val = g_.values[v];
    if (orig_[v] != DType::kFloat32 || !val.constant || val.producer >= 0) continue;
    auto id = static_cast<ValueId>(v);
    if (g_.is_graph_output(id) && ctx_.keep_io_dtype) continue;
    bool all_converted = !readers_[v].empty();
    for (const auto& [r, pos] : readers_[v])
      if (mode_[static_cast<size_t>(r)] != Mode::kConvert || !follows_float_type(g_.node(r), pos))
        all_converted = false;
    if (!all_converted) continue;
    val.constant = convert_constant(*val.constant, target_);
    val.dtype = target_;
    ctx_.count("convert-precision: constants converted");
  }
}

std::string Converter::fresh(const std::string& base) {
  std::string name = base;
  for (int k = 1; names_.count(name); ++k) name = fmt::format("{}_{}", base, k);
  names_.insert(name);
  return name;
}

// `v` as dtype `to`: a converted constant or a Cast node, made once per pair.
ValueId Converter::cast_of(ValueId v, DType to) {
  auto key = std::make_pair(v, to);
  if (auto it = casts_.find(key); it != casts_.end()) return it->second;
  ir::Value src = g_.value(v);
  ir::Value out;
  out.name = fresh(fmt::format("{}/{}", src.name, ir::dtype_name(to)));
  out.dtype = to;
  out.shape = src.shape;
  out.has_shape = src.has_shape;
  ValueId id;
  if (src.constant && src.producer < 0) {
    out.constant = convert_constant(*src.constant, to);
    out.is_initializer = src.is_initializer;
    id = g_.add_value(std::move(out));
    ctx_.count("convert-precision: constants converted");
  } else {
    id = g_.add_value(std::move(out));
    Node c;
    c.op = OpKind::Cast;
    c.name = fresh(fmt::format("{}/cast_{}", src.name, ir::dtype_name(to)));
    c.inputs = {v};
    c.outputs = {id};
    c.attrs.set("to", ir::Attribute::of_int(static_cast<int64_t>(to)));
    nodes_.push_back(std::move(c));
    ctx_.count("convert-precision: casts inserted");
  }
  casts_[key] = id;
  return id;
}

// Ops whose output dtype is an attribute: float32 there becomes the target.
void Converter::rewrite_type_attrs(Node& n) {
  const auto f32 = static_cast<int64_t>(DType::kFloat32);
  const auto to = static_cast<int64_t>(target_);
  if (n.op == OpKind::Cast && n.attrs.get_int("to", 0) == f32)
    n.attrs.set("to", ir::Attribute::of_int(to));
  if (n.op == OpKind::EyeLike && n.attrs.has("dtype") && n.attrs.get_int("dtype", 0) == f32)
    n.attrs.set("dtype", ir::Attribute::of_int(to));
  if (n.op == OpKind::ConstantOfShape) {
    const ir::Attribute* a = n.attrs.find("value");
    if (!a)  // the default is a float32 zero
      n.attrs.set("value", ir::Attribute::of_tensor(ir::Tensor(target_, {1})));
    else if (a->kind == ir::Attribute::Kind::kTensor && a->t.dtype() == DType::kFloat32)
      n.attrs.set("value", ir::Attribute::of_tensor(convert_constant(a->t, target_)));
  }
}

// Graph outputs that were float32 end as `want`: a Cast that takes the
// output's name (the old value is renamed), shared with other readers.
void Converter::fix_graph_outputs() {
  DType want = ctx_.keep_io_dtype ? DType::kFloat32 : target_;
  for (auto& out : g_.outputs) {
    if (orig(out) != DType::kFloat32 || g_.value(out).dtype == want) continue;
    ValueId c = cast_of(out, want);
    if (std::find(g_.outputs.begin(), g_.outputs.end(), c) == g_.outputs.end()) {
      std::string name = g_.value(out).name;
      g_.value(out).name = fresh(fmt::format("{}/{}", name, ir::dtype_name(g_.value(out).dtype)));
      names_.erase(g_.value(c).name);
      g_.value(c).name = name;
    }
    out = c;
  }
}

// Removes Casts to the value's own dtype and lossless round trips
// (half -> float32 -> the same half), which retyping can leave behind.
void Converter::drop_redundant_casts() {
  g_.rebuild_producers();
  for (auto& n : g_.nodes) {
    if (n.dead || n.op != OpKind::Cast) continue;
    ValueId in = n.inputs[0];
    ValueId out = n.outputs[0];
    ValueId replacement = ir::kNoValue;
    if (g_.value(in).dtype == g_.value(out).dtype) replacement = in;
    if (const Node* first = producer_if(g_, in, OpKind::Cast)) {
      DType narrow = g_.value(first->inputs[0]).dtype;
      bool widened = (narrow == DType::kFloat16 || narrow == DType::kBFloat16) &&
                     g_.value(in).dtype == DType::kFloat32;
      if (widened && narrow == g_.value(out).dtype) replacement = first->inputs[0];
    }
    if (replacement == ir::kNoValue || !bypass_value(g_, out, replacement)) continue;
    n.dead = true;
    ctx_.count("convert-precision: redundant casts removed");
  }
  // Casts the bypasses left unread.
  for (auto it = g_.nodes.rbegin(); it != g_.nodes.rend(); ++it)
    if (!it->dead && it->op == OpKind::Cast && consumer_count(g_, it->outputs[0]) == 0 &&
        !g_.is_graph_output(it->outputs[0]))
      it->dead = true;
}

Status Converter::run() {
  g_.rebuild_producers();
  for (const auto& v : g_.values) {
    orig_.push_back(v.dtype);
    names_.insert(v.name);
  }
  readers_.resize(g_.values.size());
  for (size_t id = 0; id < g_.nodes.size(); ++id) {
    const Node& n = g_.nodes[id];
    names_.insert(n.name);
    if (n.dead) continue;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] != ir::kNoValue)
        readers_[static_cast<size_t>(n.inputs[i])].emplace_back(static_cast<NodeId>(id), i);
  }
  classify();
  convert_constants_in_place();
  if (!ctx_.keep_io_dtype)
    for (ValueId in : g_.inputs)
      if (orig(in) == DType::kFloat32) g_.value(in).dtype = target_;

  // Walk in order: each node reads its float inputs in the dtype it computes
  // in (Casts inserted just before it) and its float outputs take that dtype.
  for (size_t id = 0; id < g_.nodes.size(); ++id) {
    if (g_.nodes[id].dead) continue;
    Node n = g_.nodes[id];
    Mode mode = mode_[id];
    if (mode != Mode::kUntouched) {
      DType need = mode == Mode::kConvert ? target_ : DType::kFloat32;
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        ValueId v = n.inputs[i];
        if (v == ir::kNoValue || orig(v) != DType::kFloat32 || !follows_float_type(n, i)) continue;
        if (g_.value(v).dtype != need) n.inputs[i] = cast_of(v, need);
      }
    }
    if (mode == Mode::kConvert) {
      rewrite_type_attrs(n);
      for (size_t o = 0; o < n.outputs.size(); ++o)
        if (n.outputs[o] != ir::kNoValue && orig(n.outputs[o]) == DType::kFloat32 &&
            output_follows_float_type(n, o))
          g_.value(n.outputs[o]).dtype = target_;
      ctx_.count("convert-precision: nodes converted");
    }
    nodes_.push_back(std::move(n));
  }
  fix_graph_outputs();
  g_.nodes = std::move(nodes_);
  drop_redundant_casts();
  g_.compact();

  // Re-derive every dtype from the rewritten graph: a prediction above that a
  // shape rule disagrees with fails here instead of reaching the emitter.
  std::vector<DType> predicted;
  for (const auto& v : g_.values) predicted.push_back(v.dtype);
  RETURN_IF_ERROR(ir::infer_shapes(g_).with_context("shape inference after precision conversion"));
  for (size_t v = 0; v < g_.values.size(); ++v) {
    ir::Value& val = g_.values[v];
    if (val.dtype != predicted[v])
      return internal_error("precision conversion predicted {} for '{}', shape inference says {}",
                            ir::dtype_name(predicted[v]), val.name, ir::dtype_name(val.dtype));
    // Build-time values known before the pass follow their value's new dtype.
    if (val.constant && val.constant->dtype() != val.dtype)
      val.constant = val.constant->cast_to(val.dtype);
  }
  return Status::ok_status();
}

}  // namespace

Status convert_precision(Graph& g, PassContext& ctx) {
  if (ctx.precision == Precision::kFp32) return Status::ok_status();
  Converter converter(g, ctx);
  return converter.run();
}

}  // namespace graphc::optimizer
