// Resize (Upsample is imported as Resize). The sampling of every resized
// axis - taps and weights per output position, extrapolation - is computed
// at build time by ir/resize_taps.h, the same code the reference executor
// runs, and embedded as constant arrays; one thread per output element then
// applies it.
//
// Nearest copies the chosen input element bit-exactly (every dtype), or the
// constant the reference writes (extrapolation_value, or 0 when
// exclude_outside removed every tap), decided by the last axis in processing
// order that has one. Linear and cubic (antialias included) evaluate the
// reference's separable passes exactly: one nested loop per resized axis, in
// the reference's axis order, summing weight * value in double with
// correctly rounded multiplies and adds (no fused multiply-add), so each
// intermediate equals the reference's; the result is stored with onnx's
// saturate_cast.
#include <fmt/format.h>

#include "emit/cuda/codegen_util.h"
#include "emit/cuda/cuda_dm_common.h"
#include "emit/cuda/cuda_dm_ops.h"
#include "emit/cuda/cuda_ops.h"
#include "ir/resize_taps.h"

namespace graphc::emit::dm {

namespace {

// Device function `g_resize_cast(double)` -> compute type of `t`, mirroring
// ir::resize_store.
std::string cast_helper(ir::DType t) {
  using ir::DType;
  const std::string ct = cuda::compute_type(t);
  std::string body;
  if (ir::is_float(t)) {
    body = fmt::format("  return ({})v;\n", ct);
  } else if (t == DType::kBool) {
    body = "  return v != 0.0;\n";
  } else if (ir::is_unsigned_integer(t)) {
    const char* hi = t == DType::kUInt8    ? "255.0"
                     : t == DType::kUInt16 ? "65535.0"
                     : t == DType::kUInt32 ? "4294967295.0"
                                           : "18446744073709551615.0";
    body = "  if (v != v) return 0;\n  v = rint(v);\n  if (v <= 0.0) return 0;\n";
    body += fmt::format("  if (v >= {}) return ({})(~0ull);\n", hi, ct);
    body += fmt::format("  return ({})(unsigned long long)v;\n", ct);
  } else {
    const int bits = static_cast<int>(ir::dtype_size(t)) * 8;
    const std::string lo = bits == 64 ? "(-9223372036854775807LL - 1)"
                                      : fmt::format("(-{}LL)", int64_t{1} << (bits - 1));
    const std::string hi =
        bits == 64 ? "9223372036854775807LL" : fmt::format("{}LL", (int64_t{1} << (bits - 1)) - 1);
    body = "  if (v != v) return 0;\n  v = rint(v);\n";
    body += fmt::format("  if (v <= (double){0}) return ({1}){0};\n", lo, ct);
    body += fmt::format("  if (v >= (double){0}) return ({1}){0};\n", hi, ct);
    body += fmt::format("  return ({})(long long)v;\n", ct);
  }
  return fmt::format("__device__ __forceinline__ {} g_resize_cast(double v) {{\n{}}}\n", ct, body);
}

ir::Tensor i64_tensor(const std::vector<int64_t>& v) {
  return ir::Tensor::from_i64(v, {static_cast<int64_t>(v.size())});
}

}  // namespace

Expected<GeneratedKernel> resize_kernel(const AnchorFrame& f) {
  const ir::Shape& xs = f.input(0).shape;
  const ir::DType dt = f.input(0).dtype;
  const ir::Tensor* params[3] = {nullptr, nullptr, nullptr};
  for (size_t k = 1; k <= 3; ++k) {
    if (!f.has_input(k)) continue;
    params[k - 1] = f.constant_input(k);
    if (!params[k - 1])
      return unsupported("node '{}': Resize {} (input {}) must be known at build time", f.node_name,
                         k == 1   ? "roi"
                         : k == 2 ? "scales"
                                  : "sizes",
                         k);
  }
  ASSIGN_OR_RETURN(ir::ResizeParams p,
                   ir::resize_params(f.anchor->attrs, xs, params[0], params[1], params[2]));
  const ir::Shape& ys = f.output(0).shape;
  if (ys != p.out_shape)
    return invalid_model("node '{}': Resize output shape {} does not match the computed {}",
                         f.node_name, ir::shape_to_string(ys), ir::shape_to_string(p.out_shape));
  const bool nearest = p.mode == ir::ResizeParams::Mode::kNearest;
  if (!nearest && dt == ir::DType::kBool)
    return invalid_model("node '{}': Resize mode linear/cubic needs a numeric input, got bool",
                         f.node_name);
  const int64_t n = ir::shape_numel(ys);
  if (n == 0) return finish_flat_kernel(f, "resize", 0, "");
  const std::vector<ir::ResizeAxisTaps> taps = ir::resize_taps(p, xs);
  const auto in_strides = row_strides(xs);
  const size_t rank = xs.size();
  std::string arrays;
  std::string per = decompose(ys, "i", "c", "IX");

  if (nearest) {
    // Per resized axis: the source index of each output position and what
    // it is (0 copy, 1 extrapolation_value, 2 zero), as the reference derives.
    std::vector<std::string> coord(rank);
    for (size_t d = 0; d < rank; ++d) coord[d] = fmt::format("(long long)c{}", d);
    per += "    int what = 0;\n";
    for (size_t a = 0; a < taps.size(); ++a) {
      const auto& t = taps[a];
      std::vector<int64_t> src(static_cast<size_t>(t.out)), kind(static_cast<size_t>(t.out), 0);
      bool any_const = false;
      for (int64_t i = 0; i < t.out; ++i) {
        const auto iu = static_cast<size_t>(i);
        src[iu] = i;
        if (t.extrapolate[iu]) {
          kind[iu] = 1;
          any_const = true;
          continue;
        }
        bool found = false;
        for (int64_t k = 0; k < t.n; ++k) {
          const auto ku = static_cast<size_t>(i * t.n + k);
          if (t.w[ku] != 0) {
            src[iu] = t.idx[ku];
            found = true;
          }
        }
        if (!found) {
          kind[iu] = 2;
          any_const = true;
        }
      }
      const auto d = static_cast<size_t>(t.axis);
      arrays += constant_array(fmt::format("rs_src{}", a), i64_tensor(src));
      coord[d] =
          constant_load(fmt::format("rs_src{}", a), ir::DType::kInt64, fmt::format("c{}", d));
      if (any_const) {
        ir::Tensor kt(ir::DType::kUInt8, {t.out});
        for (int64_t i = 0; i < t.out; ++i) kt.set_i64(i, kind[static_cast<size_t>(i)]);
        arrays += constant_array(fmt::format("rs_kind{}", a), kt);
        // Later axes in processing order win, as in the reference.
        per += fmt::format("    if (rs_kind{0}[c{1}] != 0) what = rs_kind{0}[c{1}];\n", a, d);
      }
    }
    std::string off;
    for (size_t d = 0; d < rank; ++d) off += fmt::format(" + {} * {}LL", coord[d], in_strides[d]);
    ir::Tensor ext(f.output(0).dtype, {}), zero(f.output(0).dtype, {});
    ir::resize_store(ext, 0, p.extrapolation_value);
    ir::resize_store(zero, 0, 0.0);
    const std::string ct = cuda::compute_type(dt);
    per += fmt::format("    const {} v = what == 0 ? {} : what == 1 ? ({}){} : ({}){};\n", ct,
                       f.load(0, "(long long)0" + off), ct, scalar_literal(ext), ct,
                       scalar_literal(zero));
    per += fmt::format("    {}\n", f.store(0, "i", "v"));
    return finish_flat_kernel(f, "resize", n, per, arrays);
  }

  // Linear / cubic: level j (1-based) evaluates the pass over taps[j-1] at
  // the current coordinates; level 0 reads the input.
  std::vector<std::string> coord(rank);
  for (size_t d = 0; d < rank; ++d) coord[d] = fmt::format("(long long)c{}", d);
  for (size_t a = 0; a < taps.size(); ++a) {
    const auto& t = taps[a];
    arrays += constant_array(fmt::format("rs_idx{}", a), i64_tensor(t.idx));
    ir::Tensor w(ir::DType::kFloat64, {static_cast<int64_t>(t.w.size())});
    for (size_t k = 0; k < t.w.size(); ++k) w.set_f64(static_cast<int64_t>(k), t.w[k]);
    arrays += constant_array(fmt::format("rs_w{}", a), w);
    bool any_ext = false;
    for (uint8_t e : t.extrapolate) any_ext |= e != 0;
    if (any_ext) {
      ir::Tensor et(ir::DType::kUInt8, {t.out});
      for (int64_t i = 0; i < t.out; ++i) et.set_i64(i, t.extrapolate[static_cast<size_t>(i)]);
      arrays += constant_array(fmt::format("rs_ext{}", a), et);
    }
    coord[static_cast<size_t>(t.axis)] = fmt::format("s{}", a);
  }
  const std::string ext_value = cuda::literal(ir::DType::kFloat64, p.extrapolation_value);
  // Innermost first: level 0 reads the input at the tap coordinates.
  std::string off = "0LL";
  for (size_t d = 0; d < rank; ++d) off += fmt::format(" + {} * {}LL", coord[d], in_strides[d]);
  std::string code = fmt::format("(double){}", f.load(0, off));
  // Build from level 1 outwards: each level wraps the previous expression.
  std::string prev_stmts;  // statements computing v{j-1} (none for level 0)
  std::string prev_value = code;
  for (size_t a = 0; a < taps.size(); ++a) {
    const auto& t = taps[a];
    const auto d = static_cast<size_t>(t.axis);
    std::string s;
    s += fmt::format("double v{} = 0.0;\n", a + 1);
    bool any_ext = false;
    for (uint8_t e : t.extrapolate) any_ext |= e != 0;
    if (any_ext) s += fmt::format("if (rs_ext{}[c{}]) v{} = {}; else\n", a, d, a + 1, ext_value);
    s += fmt::format("for (int k{0} = 0; k{0} < {1}; ++k{0}) {{\n", a, t.n);
    s += fmt::format("const long long s{0} = (long long){1};\n", a,
                     constant_load(fmt::format("rs_idx{}", a), ir::DType::kInt64,
                                   fmt::format("(long long)c{} * {}LL + k{}", d, t.n, a)));
    s += fmt::format("const double w{0} = {1};\n", a,
                     constant_load(fmt::format("rs_w{}", a), ir::DType::kFloat64,
                                   fmt::format("(long long)c{} * {}LL + k{}", d, t.n, a)));
    s += prev_stmts;
    s += fmt::format("v{0} = __dadd_rn(v{0}, __dmul_rn(w{1}, {2}));\n}}\n", a + 1, a, prev_value);
    prev_stmts = s;
    prev_value = fmt::format("v{}", a + 1);
  }
  per += prev_stmts;
  per += fmt::format("    {}\n", f.store(0, "i", fmt::format("g_resize_cast({})", prev_value)));
  return finish_flat_kernel(f, "resize", n, per, arrays + cast_helper(f.output(0).dtype));
}

}  // namespace graphc::emit::dm
