// DFT and STFT as a direct O(n^2) transform: one thread per output bin (and
// per position of the other dims), accumulating in float (double for
// float64 data, and past kTableMax points). Twiddles e^{-2 pi i r / n} are computed on the host in double
// and embedded rounded to the accumulator type, indexed by r = (k * t) mod n
// kept exactly in integers; past kTableMax points the kernel computes them
// with sincospi in double. Semantics follow reference/kernels_signal.cpp.
#include <cmath>

#include <fmt/format.h>

#include "emit/cuda/codegen_util.h"
#include "emit/cuda/cuda_dm_common.h"
#include "emit/cuda/cuda_dm_ops.h"
#include "emit/cuda/cuda_ops.h"
#include "ir/signal_params.h"

namespace graphc::emit::dm {

namespace {

constexpr int64_t kTableMax = 4096;

// Helpers and the statement prefix that define `twiddle(r, wr, wi)` for an
// n-point transform in accumulator type `acc`.
std::string twiddle_helpers(int64_t n, ir::DType acc) {
  const std::string at = acc == ir::DType::kFloat64 ? "double" : "float";
  if (n > kTableMax)
    return fmt::format(
        "G_HD void twiddle(long long r, {0}& wr, {0}& wi) {{\n"
        "  double s, c;\n  sincospi(2.0 * (double)r / (double){1}.0, &s, &c);\n"
        "  wr = ({0})c; wi = ({0})-s;\n}}\n",
        at, n);
  ir::Tensor table(acc, {2 * n});
  for (int64_t r = 0; r < n; ++r) {
    const double a = 2.0 * 3.14159265358979323846 * static_cast<double>(r) / static_cast<double>(n);
    table.set_f64(2 * r, std::cos(a));
    table.set_f64(2 * r + 1, -std::sin(a));
  }
  return constant_array("g_twiddle", table) +
         fmt::format("G_HD void twiddle(long long r, {0}& wr, {0}& wi) {{\n  wr = {1};\n  wi = {2};\n}}\n",
                     at, constant_load("g_twiddle", acc, "2 * r"),
                     constant_load("g_twiddle", acc, "2 * r + 1"));
}

// Past the table, sums of thousands of terms lose small bins to float
// rounding (a bin of 0.02 off by 6e-5 at n = 4097): accumulate in double.
ir::DType accumulator(ir::DType data, int64_t n) {
  return data == ir::DType::kFloat64 || n > kTableMax ? ir::DType::kFloat64 : ir::DType::kFloat32;
}

}  // namespace

Expected<GeneratedKernel> dft_kernel(const AnchorFrame& f) {
  const ir::Shape& s = f.input(0).shape;
  std::optional<int64_t> length;
  if (f.has_input(1)) {
    ASSIGN_OR_RETURN(auto v, constant_ints(f, 1, "dft_length"));
    if (v.size() != 1) return invalid_model("node '{}': DFT dft_length must be a scalar", f.node_name);
    length = v[0];
  }
  ASSIGN_OR_RETURN(auto axis_v, constant_ints(f, 2, "axis"));
  if (axis_v.size() != 1) return invalid_model("node '{}': DFT axis must be a scalar", f.node_name);
  auto geo = ir::dft_geometry(s, axis_v[0], length, f.anchor->attrs.get_int("inverse", 0) != 0,
                              f.anchor->attrs.get_int("onesided", 0) != 0);
  if (!geo.ok()) return geo.status().with_context(fmt::format("node '{}'", f.node_name));
  const ir::DftGeometry& g = *geo;
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < g.axis; ++d) outer *= s[d];
  for (size_t d = g.axis + 1; d + 1 < s.size(); ++d) inner *= s[d];
  const ir::DType acc = accumulator(f.input(0).dtype, g.n);
  const std::string at = acc == ir::DType::kFloat64 ? "double" : "float";
  const int64_t cin = g.in_complex ? 2 : 1, cout = g.out_complex ? 2 : 1;
  const int64_t m = g.in_len, n = g.n;
  // Input element (position t of the transform) as (re, im).
  auto load = [&](const std::string& t) {
    std::string b = fmt::format("        const IX src = ((o * (IX){} + {}) * (IX){} + j) * (IX){};\n",
                                m, t, inner, cin);
    b += fmt::format("        {0} re = ({0}){1};\n", at, f.load(0, "src"));
    b += fmt::format("        {0} im = {1};\n", at,
                     g.in_complex ? fmt::format("({}){}", at, f.load(0, "src + 1")) : at + "(0)");
    return b;
  };
  std::string per;
  per += fmt::format("    const IX j = i % (IX){};\n", inner);
  per += fmt::format("    const IX k = (i / (IX){}) % (IX){};\n", inner, g.out_len);
  per += fmt::format("    const IX o = i / ((IX){} * (IX){});\n", inner, g.out_len);
  per += fmt::format("    {0} acc_re = 0, acc_im = 0;\n", at);
  // The inverse transform's twiddle is the conjugate: negate wi.
  const std::string wsign = g.inverse ? "-" : "";
  if (g.inverse && g.onesided) {
    // Real output: bins above n/2 are the conjugates of those below.
    per += fmt::format("    long long r = 0;\n    for (IX b = 0; b < (IX){}; ++b) {{\n", n);
    per += fmt::format("      const IX srcb = b <= (IX){0} ? b : (IX){1} - b;\n", n / 2, n);
    per += fmt::format("      if (srcb < (IX){}) {{\n", m);
    per += load("srcb");
    per += fmt::format("        if (b > (IX){}) im = -im;\n", n / 2);
    per += fmt::format("        {} wr, wi;\n        twiddle(r, wr, wi);\n        wi = {}wi;\n", at,
                       wsign);
    per += "        acc_re += re * wr - im * wi;\n      }\n";
    per += fmt::format("      r += (long long)k;\n      if (r >= {0}LL) r -= {0}LL;\n    }}\n", n);
  } else {
    per += fmt::format("    long long r = 0;\n    for (IX t = 0; t < (IX){}; ++t) {{\n",
                       std::min(m, n));
    per += "      {\n" + load("t");
    per += fmt::format("        {} wr, wi;\n        twiddle(r, wr, wi);\n        wi = {}wi;\n", at,
                       wsign);
    per += "        acc_re += re * wr - im * wi;\n        acc_im += re * wi + im * wr;\n      }\n";
    per += fmt::format("      r += (long long)k;\n      if (r >= {0}LL) r -= {0}LL;\n    }}\n", n);
  }
  if (g.inverse) {
    const std::string scale = cuda::literal(acc, 1.0 / static_cast<double>(n));
    per += fmt::format("    acc_re *= {0};\n    acc_im *= {0};\n", scale);
  }
  const std::string ot = cuda::compute_type(f.output(0).dtype);
  per += fmt::format("    {}\n", f.store(0, fmt::format("i * (IX){}", cout),
                                         fmt::format("({})acc_re", ot)));
  if (g.out_complex)
    per += fmt::format("    {}\n", f.store(0, "i * (IX)2 + 1", fmt::format("({})acc_im", ot)));
  return finish_flat_kernel(f, "dft", outer * g.out_len * inner, per, twiddle_helpers(n, acc));
}

Expected<GeneratedKernel> stft_kernel(const AnchorFrame& f) {
  ASSIGN_OR_RETURN(auto step_v, constant_ints(f, 1, "frame_step"));
  if (step_v.size() != 1) return invalid_model("node '{}': STFT frame_step must be a scalar", f.node_name);
  std::optional<int64_t> window_len, frame_len;
  if (f.has_input(2)) window_len = f.input(2).shape.at(0);
  if (f.has_input(3)) {
    ASSIGN_OR_RETURN(auto v, constant_ints(f, 3, "frame_length"));
    if (v.size() != 1) return invalid_model("node '{}': STFT frame_length must be a scalar", f.node_name);
    frame_len = v[0];
  }
  auto geo = ir::stft_geometry(f.input(0).shape, step_v[0], window_len, frame_len,
                               f.anchor->attrs.get_int("onesided", 1) != 0);
  if (!geo.ok()) return geo.status().with_context(fmt::format("node '{}'", f.node_name));
  const ir::StftGeometry& g = *geo;
  const ir::DType acc = accumulator(f.input(0).dtype, g.frame_length);
  const std::string at = acc == ir::DType::kFloat64 ? "double" : "float";
  const int64_t c = g.complex ? 2 : 1, L = g.frame_length;
  std::string per;
  per += fmt::format("    const IX k = i % (IX){};\n", g.bins);
  per += fmt::format("    const IX fr = (i / (IX){}) % (IX){};\n", g.bins, g.frames);
  per += fmt::format("    const IX b = i / ((IX){} * (IX){});\n", g.bins, g.frames);
  per += fmt::format("    {0} acc_re = 0, acc_im = 0;\n    long long r = 0;\n", at);
  per += fmt::format("    for (IX t = 0; t < (IX){}; ++t) {{\n", L);
  per += fmt::format("      const IX src = (b * (IX){} + fr * (IX){} + t) * (IX){};\n", g.length,
                     g.step, c);
  per += fmt::format("      const {0} w = {1};\n", at,
                     f.has_input(2) ? fmt::format("({}){}", at, f.load(2, "t")) : at + "(1)");
  per += fmt::format("      const {0} re = ({0}){1} * w;\n", at, f.load(0, "src"));
  per += fmt::format("      const {0} im = {1};\n", at,
                     g.complex ? fmt::format("({}){} * w", at, f.load(0, "src + 1")) : at + "(0)");
  per += fmt::format("      {} wr, wi;\n      twiddle(r, wr, wi);\n", at);
  per += "      acc_re += re * wr - im * wi;\n      acc_im += re * wi + im * wr;\n";
  per += fmt::format("      r += (long long)k;\n      if (r >= {0}LL) r -= {0}LL;\n    }}\n", L);
  const std::string ot = cuda::compute_type(f.output(0).dtype);
  per += fmt::format("    {}\n", f.store(0, "i * (IX)2", fmt::format("({})acc_re", ot)));
  per += fmt::format("    {}\n", f.store(0, "i * (IX)2 + 1", fmt::format("({})acc_im", ot)));
  return finish_flat_kernel(f, "stft", g.batch * g.frames * g.bins, per, twiddle_helpers(L, acc));
}

}  // namespace graphc::emit::dm
