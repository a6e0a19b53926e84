// Generator ops: ConstantOfShape, Range, Trilu, OneHot, EyeLike, and Shape /
// Size when constant folding left one (their values are known at build time).
// One thread per output element; values follow reference/kernels_generators.cpp
// and reference/kernels_data_movement.cpp.
#include <fmt/format.h>

#include "emit/cuda/codegen_util.h"
#include "emit/cuda/cuda_dm_common.h"
#include "emit/cuda/cuda_dm_ops.h"
#include "emit/cuda/cuda_ops.h"
#include "ir/data_movement_params.h"

namespace graphc::emit::dm {

Expected<GeneratedKernel> constant_of_shape_kernel(const AnchorFrame& f) {
  const ir::DType dt = f.output(0).dtype;
  std::string value = zero_of(dt);  // no `value`: float32 zeros
  if (const ir::Attribute* a = f.anchor->attrs.find("value")) {
    if (a->kind != ir::Attribute::Kind::kTensor || a->t.numel() != 1 || a->t.dtype() != dt)
      return invalid_model("node '{}': attribute 'value' must be one {} element", f.node_name,
                           ir::dtype_name(dt));
    value = scalar_literal(a->t);
  }
  std::string per = fmt::format("    {}\n", f.store(0, "i", value));
  return finish_flat_kernel(f, "constant_of_shape", ir::shape_numel(f.output(0).shape), per);
}

// start + i * delta: wrapping in 64 bits for integers, in double for floats
// (then rounded to the output type), with no fused multiply-add.
Expected<GeneratedKernel> range_kernel(const AnchorFrame& f) {
  const ir::DType dt = f.output(0).dtype;
  const std::string ct = cuda::compute_type(dt);
  for (size_t k : {size_t{0}, size_t{2}})
    if (!f.has_input(k) || ir::shape_numel(f.input(k).shape) != 1)
      return invalid_model("node '{}': Range start and delta must be scalars", f.node_name);
  std::string per;
  if (ir::is_integer(dt)) {
    per += fmt::format("    const long long s = (long long){}, d = (long long){};\n",
                       f.load(0, "0"), f.load(2, "0"));
    per +=
        "    const long long v = (long long)((unsigned long long)s + (unsigned long long)i * "
        "(unsigned long long)d);\n";
    per += fmt::format("    {}\n", f.store(0, "i", fmt::format("({})v", ct)));
  } else if (ir::is_float(dt)) {
    per += fmt::format("    const double s = (double){}, d = (double){};\n", f.load(0, "0"),
                       f.load(2, "0"));
    per += "    const double v = __dadd_rn(s, __dmul_rn((double)i, d));\n";
    per += fmt::format("    {}\n", f.store(0, "i", fmt::format("({})v", ct)));
  } else {
    return unsupported("node '{}': Range of {} has no GPU lowering", f.node_name,
                       ir::dtype_name(dt));
  }
  return finish_flat_kernel(f, "range", ir::shape_numel(f.output(0).shape), per);
}

// Keeps elements with (col - row) >= k (upper) or <= k (lower); k is input 1
// (read on the device) or 0.
Expected<GeneratedKernel> trilu_kernel(const AnchorFrame& f) {
  const ir::Shape& s = f.input(0).shape;
  if (s.size() < 2)
    return invalid_model("node '{}': Trilu needs rank >= 2, got {}", f.node_name, s.size());
  const int64_t rows = s[s.size() - 2], cols = s[s.size() - 1];
  const bool upper = f.anchor->attrs.get_int("upper", 1) != 0;
  std::string per;
  per += fmt::format(
      "    const long long k = {};\n",
      f.has_input(1) ? fmt::format("(long long){}", f.load(1, "0")) : std::string("0LL"));
  per += fmt::format("    const long long c = (long long)(i % (IX){});\n", cols);
  per += fmt::format("    const long long r = (long long)((i / (IX){}) % (IX){});\n", cols, rows);
  per += fmt::format("    const bool keep = (c - r) {} k;\n", upper ? ">=" : "<=");
  per += fmt::format(
      "    {}\n",
      f.store(0, "i", fmt::format("keep ? {} : {}", f.load(0, "i"), zero_of(f.output(0).dtype))));
  return finish_flat_kernel(f, "trilu", ir::shape_numel(s), per);
}

// Indices outside [-depth, depth) give an all-off row. Indices of any
// numeric type are read as the reference's Tensor::get_i64.
Expected<GeneratedKernel> one_hot_kernel(const AnchorFrame& f) {
  const ir::Shape& os = f.output(0).shape;
  const auto r = static_cast<int64_t>(f.input(0).shape.size());
  int64_t axis = f.anchor->attrs.get_int("axis", -1);
  if (axis < 0) axis += r + 1;
  if (axis < 0 || axis > r || os.size() != static_cast<size_t>(r + 1))
    return invalid_model("node '{}': OneHot axis {} out of range for rank {}", f.node_name,
                         f.anchor->attrs.get_int("axis", -1), r);
  if (ir::shape_numel(f.input(2).shape) != 2)
    return invalid_model("node '{}': OneHot values must have two elements", f.node_name);
  const auto ax = static_cast<size_t>(axis);
  const int64_t depth = os[ax];
  int64_t inner = 1;
  for (size_t d = ax + 1; d < os.size(); ++d) inner *= os[d];
  std::string per;
  per += fmt::format("    const IX o = i / (IX){};\n", depth * inner);
  per += fmt::format("    const IX k = (i / (IX){}) % (IX){};\n", inner, depth);
  per += fmt::format("    const IX r = i % (IX){};\n", inner);
  per += fmt::format("    long long v = g_index_of({});\n",
                     f.load(0, fmt::format("o * (IX){} + r", inner)));
  per += fmt::format("    if (v < 0) v += {}LL;\n", depth);
  per += fmt::format(
      "    {}\n",
      f.store(0, "i", fmt::format("(long long)k == v ? {} : {}", f.load(2, "1"), f.load(2, "0"))));
  return finish_flat_kernel(f, "one_hot", ir::shape_numel(os), per, index_helpers());
}

Expected<GeneratedKernel> eye_like_kernel(const AnchorFrame& f) {
  const ir::Shape& os = f.output(0).shape;
  if (os.size() != 2) return invalid_model("node '{}': EyeLike needs a 2-D tensor", f.node_name);
  const ir::DType dt = f.output(0).dtype;
  const int64_t k = f.anchor->attrs.get_int("k", 0);
  std::string per;
  per += fmt::format("    const long long c = (long long)(i % (IX){});\n", os[1]);
  per += fmt::format("    const long long r = (long long)(i / (IX){});\n", os[1]);
  per += fmt::format("    {}\n", f.store(0, "i",
                                         fmt::format("(c - r) == {}LL ? {} : {}", k,
                                                     cuda::int_literal(dt, 1), zero_of(dt))));
  // k is any int64: c - r never overflows, and an unreachable k matches nothing.
  if (k == INT64_MIN) per = fmt::format("    {}\n", f.store(0, "i", zero_of(dt)));
  return finish_flat_kernel(f, "eye_like", ir::shape_numel(os), per);
}

Expected<GeneratedKernel> shape_size_kernel(const AnchorFrame& f) {
  const ir::Shape& in = f.input(0).shape;
  std::vector<int64_t> values;
  if (f.anchor->op == ir::OpKind::Size) {
    values.push_back(ir::shape_numel(in));
  } else {
    std::optional<int64_t> end;
    if (f.anchor->attrs.has("end")) end = f.anchor->attrs.get_int("end", 0);
    auto [s, e] = ir::dm::shape_range(static_cast<int64_t>(in.size()),
                                      f.anchor->attrs.get_int("start", 0), end);
    for (int64_t d = s; d < e; ++d) values.push_back(in[static_cast<size_t>(d)]);
  }
  const ir::DType dt = f.output(0).dtype;
  if (static_cast<int64_t>(values.size()) != ir::shape_numel(f.output(0).shape))
    return invalid_model("node '{}': {} output has {} elements, want {}", f.node_name,
                         ir::op_name(f.anchor->op), ir::shape_numel(f.output(0).shape),
                         values.size());
  std::string per = "    long long v = 0;\n";
  for (size_t j = 0; j < values.size(); ++j)
    per += fmt::format("    if (i == (IX){}) v = {}LL;\n", j, values[j]);
  per += fmt::format("    {}\n", f.store(0, "i", fmt::format("({})v", cuda::compute_type(dt))));
  return finish_flat_kernel(
      f, ir::op_name(f.anchor->op) == std::string_view("Shape") ? "shape" : "size",
      static_cast<int64_t>(values.size()), per);
}

// Dropout reaches the data-movement family (it is not a one-output
// elementwise op): inference copies the input and writes an all-true mask
// (ones of the input dtype for opset 7-9). training_mode = true is only
// accepted with ratio 0, as in the reference (then dropout is the identity
// too). When training_mode may be true and the ratio is not a build-time 0,
// the reference's runtime error for random masking cannot be raised by a
// kernel (a trap would poison the whole CUDA context), so it is unsupported.
Expected<GeneratedKernel> dropout_kernel(const AnchorFrame& f) {
  if (f.has_input(2)) {
    const ir::Tensor* mode = f.constant_input(2);
    const ir::Tensor* ratio = f.has_input(1) ? f.constant_input(1) : nullptr;
    const bool known_mode = mode && mode->numel() == 1;
    const bool zero_ratio =
        f.has_input(1) && ratio && ratio->numel() == 1 && ratio->get_f64(0) == 0.0;
    const bool maybe_training = !known_mode || mode->get_i64(0) != 0;
    if (maybe_training && !zero_ratio)
      return unsupported(
          "node '{}': Dropout may train with a nonzero ratio ({} training_mode, {} ratio): random "
          "masking has no GPU lowering",
          f.node_name, known_mode ? "build-time" : "runtime",
          f.has_input(1) && !ratio ? "runtime" : "build-time");
  }
  std::string per = fmt::format("    {}\n", f.store(0, "i", f.load(0, "i")));
  if (f.has_output(1)) {
    if (ir::shape_numel(f.output(1).shape) != ir::shape_numel(f.output(0).shape))
      return invalid_model("node '{}': Dropout mask and output sizes differ", f.node_name);
    per += fmt::format("    {}\n", f.store(1, "i", cuda::int_literal(f.output(1).dtype, 1)));
  }
  return finish_flat_kernel(f, "dropout", ir::shape_numel(f.output(0).shape), per);
}

}  // namespace graphc::emit::dm
