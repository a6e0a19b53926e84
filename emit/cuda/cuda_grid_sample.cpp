// GridSample (opsets 16-22), mirroring reference/kernels_grid_sample.cpp: X
// [N, C, D1..Dk] sampled at grid [N, O1..Ok, k] (its last axis lists the
// innermost spatial axis first) with nearest, linear or cubic (A = -0.75)
// interpolation and zeros / border / reflection padding. One thread per
// (n, output position): it turns the grid entry into source coordinates and
// tap weights once, then samples every channel (consecutive threads write
// consecutive positions of a channel plane). Coordinates and weights are in
// double, rounded where the reference rounds (the unnormalized coordinate to
// float), so nearest picks the reference's pixel at .5 ties. Indices are
// bounds-checked before every read (a NaN grid entry reads nothing).
#include <fmt/format.h>

#include "emit/cuda/cuda_dm_common.h"
#include "emit/cuda/cuda_dm_ops.h"
#include "emit/cuda/cuda_ops.h"

namespace graphc::emit::dm {

namespace {

const char* kGridHelpers = R"(__device__ __forceinline__ double gs_reflect(double x, double lo, double hi) {
  const double rng = hi - lo;
  if (x < lo) {
    const double dx = lo - x;
    const long long n = (long long)(dx / rng);
    const double r = dx - (double)n * rng;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const long long n = (long long)(dx / rng);
    const double r = dx - (double)n * rng;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}
__device__ __forceinline__ void gs_cubic(double x, double* c) {
  const double a = -0.75;
  x = fabs(x);
  c[0] = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a;
  c[1] = ((a + 2) * x - (a + 3)) * x * x + 1;
  c[2] = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1;
  c[3] = ((a * (2 - x) - 5 * a) * (2 - x) + 8 * a) * (2 - x) - 4 * a;
}
)";

}  // namespace

Expected<GeneratedKernel> grid_sample_kernel(const AnchorFrame& f) {
  const ir::Value& x = f.input(0);
  const ir::Value& grid = f.input(1);
  const ir::AttributeMap& a = f.anchor->attrs;
  std::string mode = a.get_string("mode", "linear");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  const std::string pad = a.get_string("padding_mode", "zeros");
  const bool align = a.get_int("align_corners", 0) != 0;
  if (mode != "linear" && mode != "nearest" && mode != "cubic")
    return invalid_model("node '{}': GridSample mode '{}' is not nearest, linear or cubic",
                         f.node_name, mode);
  if (pad != "zeros" && pad != "border" && pad != "reflection")
    return invalid_model("node '{}': GridSample padding_mode '{}' is not zeros, border or "
                         "reflection", f.node_name, pad);
  if (x.shape.size() < 3 || grid.shape.size() != x.shape.size() ||
      grid.shape.back() != static_cast<int64_t>(x.shape.size()) - 2 || grid.shape[0] != x.shape[0])
    return invalid_model("node '{}': GridSample needs X [N, C, D1..Dk] and grid [N, O1..Ok, k], "
                         "got {} and {}", f.node_name, ir::shape_to_string(x.shape),
                         ir::shape_to_string(grid.shape));
  if (!ir::is_float(x.dtype) || !ir::is_float(grid.dtype))
    return unsupported("node '{}': GridSample of {} has no GPU lowering (float types only)",
                       f.node_name, ir::dtype_name(x.dtype));
  const size_t k = x.shape.size() - 2;
  const int64_t n = x.shape[0], c = x.shape[1];
  std::vector<int64_t> dims(x.shape.begin() + 2, x.shape.end());
  int64_t plane = 1;
  for (int64_t d : dims) plane *= d;
  const int64_t outs = n == 0 ? 0 : ir::shape_numel(grid.shape) / (n * static_cast<int64_t>(k));
  const int taps = mode == "linear" ? 2 : mode == "cubic" ? 4 : 1;
  const std::string ct = cuda::compute_type(x.dtype);
  auto lit = [](double v) { return cuda::literal(ir::DType::kFloat64, v); };

  std::string per = fmt::format("    const IX o = i % (IX){0};\n    const IX b = i / (IX){0};\n", outs);
  // Source coordinate and taps per spatial axis d (outermost first).
  for (size_t d = 0; d < k; ++d) {
    const double len = static_cast<double>(dims[d]);
    const double lo = align ? 0.0 : -0.5, hi = align ? len - 1 : len - 0.5;
    const std::string g = fmt::format(
        "(double){}", f.load(1, fmt::format("((long long)b * {}LL + (long long)o) * {}LL + {}LL",
                                            outs, k, k - 1 - d)));
    per += fmt::format("    const double g{} = {};\n", d, g);
    per += fmt::format("    double v{0} = (double)(float)({1});\n", d,
                       align ? fmt::format("(g{} + 1) / 2.0 * {}", d, lit(len - 1))
                             : fmt::format("((g{} + 1) * {} - 1) / 2.0", d, lit(len)));
    if (mode == "nearest") per += fmt::format("    v{0} = rint(v{0});\n", d);
    if (pad == "border")
      per += fmt::format("    if (v{0} < {1} || v{0} > {2}) v{0} = fmin(fmax(v{0}, 0.0), {3});\n", d,
                         lit(lo), lit(hi), lit(len - 1));
    else if (pad == "reflection")
      per += fmt::format("    if (v{0} < {1} || v{0} > {2}) v{0} = gs_reflect(v{0}, {1}, {2});\n", d,
                         lit(lo), lit(hi));
    if (mode == "nearest") {
      per += fmt::format("    const long long base{0} = (long long)v{0};\n", d);
    } else {
      per += fmt::format("    const double fl{0} = floor(v{0});\n", d);
      per += fmt::format("    const long long base{0} = (long long)fl{0} - {1};\n", d,
                         taps == 4 ? 1 : 0);
      per += fmt::format("    double w{0}[4];\n", d);
      if (taps == 2)
        per += fmt::format("    w{0}[1] = v{0} - fl{0};\n    w{0}[0] = 1 - w{0}[1];\n", d);
      else
        per += fmt::format("    gs_cubic(v{0} - fl{0}, w{0});\n", d);
    }
  }
  // pix(plane offset, index per axis): the padding rule for outside indices.
  std::string params, offset = "0LL";
  int64_t stride = plane;
  for (size_t d = 0; d < k; ++d) {
    params += fmt::format("{}long long q{}", d ? ", " : "", d);
    stride /= dims[d];
    offset += fmt::format(" + q{} * {}LL", d, stride);
  }
  std::string pix = fmt::format("    auto pix = [&](long long pl, {}) -> double {{\n", params);
  for (size_t d = 0; d < k; ++d) {
    const double len = static_cast<double>(dims[d]);
    pix += fmt::format("      if (q{0} < 0 || q{0} >= {1}LL) {{\n", d, dims[d]);
    if (pad == "zeros")
      pix += "        return 0.0;\n";
    else if (pad == "border")
      pix += fmt::format("        q{0} = q{0} < 0 ? 0 : {1}LL;\n", d, dims[d] - 1);
    else
      pix += fmt::format(
          "        q{0} = (long long)gs_reflect((double)q{0}, {1}, {2});\n"
          "        q{0} = q{0} < 0 ? 0 : (q{0} > {3}LL ? {3}LL : q{0});\n",
          d, lit(align ? 0.0 : -0.5), lit(align ? len - 1 : len - 0.5), dims[d] - 1);
    pix += "      }\n";
  }
  pix += fmt::format("      return (double){};\n    }};\n", f.load(0, "pl + " + offset));
  per += pix;
  per += fmt::format("    for (long long ch = 0; ch < {}LL; ++ch) {{\n", c);
  per += fmt::format("      const long long pl = ((long long)b * {}LL + ch) * {}LL;\n", c, plane);
  std::string args;
  for (size_t d = 0; d < k; ++d) args += fmt::format(", base{}{}", d, taps > 1 ? fmt::format(" + j{}", d) : "");
  if (taps == 1) {
    per += fmt::format("      const double acc = pix(pl{});\n", args);
  } else {
    per += "      double acc = 0.0;\n";
    std::string open, close, weight = "1.0";
    for (size_t d = 0; d < k; ++d) {
      open += fmt::format("      for (int j{0} = 0; j{0} < {1}; ++j{0})\n", d, taps);
    }
    // The reference multiplies the weights innermost axis first.
    for (size_t d = k; d-- > 0;) weight = fmt::format("{} * w{}[j{}]", weight, d, d);
    per += open + fmt::format("        acc += ({}) * pix(pl{});\n", weight, args);
  }
  per += fmt::format("      {}\n    }}\n",
                     f.store(0, fmt::format("((long long)b * {}LL + ch) * {}LL + (long long)o", c, outs),
                             fmt::format("({})acc", ct)));
  return finish_flat_kernel(f, "gridsample", n * outs, per, kGridHelpers);
}

}  // namespace graphc::emit::dm
