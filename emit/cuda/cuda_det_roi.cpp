// Det (one thread per matrix: LU with partial pivoting in double, the
// matrix in a thread-local array, so n is capped), ReverseSequence (one
// thread per element, sequence_lens read on the device) and RoiAlign (one
// thread per output element: its bin's bilinear samples, in double, as
// reference/kernels_det_roi.cpp). Run-time values a kernel cannot refuse
// (a length past the time axis, a batch index out of range) are clamped.
#include <fmt/format.h>

#include "emit/cuda/cuda_dm_common.h"
#include "emit/cuda/cuda_dm_ops.h"
#include "emit/cuda/cuda_ops.h"
#include "ir/signal_params.h"

namespace graphc::emit::dm {

namespace {
constexpr int64_t kDetMaxN = 16;  // 256 doubles of local memory per thread
}

Expected<GeneratedKernel> det_kernel(const AnchorFrame& f) {
  const ir::Shape& s = f.input(0).shape;
  if (s.size() < 2 || s[s.size() - 1] != s[s.size() - 2])
    return invalid_model("node '{}': Det needs [..., M, M], got {}", f.node_name,
                         ir::shape_to_string(s));
  const int64_t n = s.back();
  if (n > kDetMaxN)
    return unsupported("node '{}': Det of {}x{} matrices has no GPU lowering (the per-thread "
                       "kernel takes n <= {})", f.node_name, n, n, kDetMaxN);
  const std::string ot = cuda::compute_type(f.output(0).dtype);
  std::string per;
  per += fmt::format("    double a[{}];\n", std::max<int64_t>(n * n, 1));
  per += fmt::format("    for (int e = 0; e < {}; ++e) a[e] = (double){};\n", n * n,
                     f.load(0, fmt::format("i * (IX){} + (IX)e", n * n)));
  per += "    double det = 1.0;\n";
  per += fmt::format("    for (int col = 0; col < {}; ++col) {{\n", n);
  per += "      int piv = col;\n";
  per += fmt::format("      for (int r = col + 1; r < {0}; ++r)\n"
                     "        if (fabs(a[r * {0} + col]) > fabs(a[piv * {0} + col])) piv = r;\n", n);
  per += fmt::format("      if (a[piv * {} + col] == 0.0) {{ det = 0.0; break; }}\n", n);
  per += fmt::format("      if (piv != col) {{\n"
                     "        for (int c = 0; c < {0}; ++c) {{\n"
                     "          const double tmp = a[piv * {0} + c]; a[piv * {0} + c] = a[col * {0} + c]; a[col * {0} + c] = tmp;\n"
                     "        }}\n        det = -det;\n      }}\n", n);
  per += fmt::format("      det *= a[col * {} + col];\n", n);
  per += fmt::format("      for (int r = col + 1; r < {0}; ++r) {{\n"
                     "        const double fct = a[r * {0} + col] / a[col * {0} + col];\n"
                     "        for (int c = col + 1; c < {0}; ++c) a[r * {0} + c] -= fct * a[col * {0} + c];\n"
                     "      }}\n    }}\n", n);
  per += fmt::format("    {}\n", f.store(0, "i", fmt::format("({})det", ot)));
  return finish_flat_kernel(f, "det", ir::shape_numel(f.output(0).shape), per);
}

Expected<GeneratedKernel> reverse_sequence_kernel(const AnchorFrame& f) {
  const ir::Shape& s = f.input(0).shape;
  const int64_t batch_axis = f.anchor->attrs.get_int("batch_axis", 1);
  if (s.size() < 2 || (batch_axis != 0 && batch_axis != 1))
    return invalid_model("node '{}': ReverseSequence needs rank >= 2 and batch_axis 0 or 1",
                         f.node_name);
  int64_t inner = 1;
  for (size_t d = 2; d < s.size(); ++d) inner *= s[d];
  const int64_t T = s[static_cast<size_t>(1 - batch_axis)];
  std::string per;
  per += fmt::format("    const IX rest = i % (IX){};\n", inner);
  per += fmt::format("    const IX a1 = (i / (IX){}) % (IX){};\n", inner, s[1]);
  per += fmt::format("    const IX a0 = i / ((IX){} * (IX){});\n", inner, s[1]);
  per += fmt::format("    const IX b = {}, t = {};\n", batch_axis == 0 ? "a0" : "a1",
                     batch_axis == 0 ? "a1" : "a0");
  per += fmt::format("    long long len = (long long){};\n", f.load(1, "b"));
  per += fmt::format("    len = len < 0 ? 0 : len > {0}LL ? {0}LL : len;\n", T);
  per += "    const IX src_t = (long long)t < len ? (IX)(len - 1 - (long long)t) : t;\n";
  per += fmt::format("    const IX src = ({} * (IX){} + {}) * (IX){} + rest;\n",
                     batch_axis == 0 ? "b" : "src_t", s[1], batch_axis == 0 ? "src_t" : "b", inner);
  per += fmt::format("    {}\n", f.store(0, "i", f.load(0, "src")));
  return finish_flat_kernel(f, "reverse_sequence", ir::shape_numel(s), per);
}

Expected<GeneratedKernel> roi_align_kernel(const AnchorFrame& f) {
  auto params = ir::roi_align_params(f.anchor->attrs);
  if (!params.ok()) return params.status().with_context(fmt::format("node '{}'", f.node_name));
  const ir::RoiAlignParams& p = *params;
  const ir::Shape& x = f.input(0).shape;
  if (x.size() != 4) return invalid_model("node '{}': RoiAlign X must be 4-D", f.node_name);
  const int64_t N = x[0], C = x[1], H = x[2], W = x[3], PH = p.output_height, PW = p.output_width;
  const std::string ot = cuda::compute_type(f.output(0).dtype);
  auto lit = [](double v) { return cuda::literal(ir::DType::kFloat64, v); };
  std::string per;
  per += fmt::format("    const IX pw = i % (IX){0};\n    const IX ph = (i / (IX){0}) % (IX){1};\n", PW, PH);
  per += fmt::format("    const IX c = (i / ((IX){} * (IX){})) % (IX){};\n", PW, PH, C);
  per += fmt::format("    const IX r = i / ((IX){} * (IX){} * (IX){});\n", PW, PH, C);
  per += fmt::format("    long long bi = (long long){};\n", f.load(2, "r"));
  per += fmt::format("    bi = bi < 0 ? 0 : bi >= {0}LL ? {0}LL - 1 : bi;\n", N);
  const std::string off = p.half_pixel ? "0.5" : "0.0";
  per += fmt::format("    const double x0 = (double){} * {} - {};\n", f.load(1, "r * 4"), lit(p.spatial_scale), off);
  per += fmt::format("    const double y0 = (double){} * {} - {};\n", f.load(1, "r * 4 + 1"), lit(p.spatial_scale), off);
  per += fmt::format("    const double x1 = (double){} * {} - {};\n", f.load(1, "r * 4 + 2"), lit(p.spatial_scale), off);
  per += fmt::format("    const double y1 = (double){} * {} - {};\n", f.load(1, "r * 4 + 3"), lit(p.spatial_scale), off);
  per += "    double rw = x1 - x0, rh = y1 - y0;\n";
  if (!p.half_pixel) per += "    rw = fmax(rw, 1.0);\n    rh = fmax(rh, 1.0);\n";
  per += fmt::format("    const double bh = rh / {}.0, bw = rw / {}.0;\n", PH, PW);
  if (p.sampling_ratio > 0) {
    per += fmt::format("    const long long gh = {0}, gw = {0};\n", p.sampling_ratio);
  } else {
    per += fmt::format("    const long long gh = (long long)ceil(rh / {}.0), gw = (long long)ceil(rw / {}.0);\n", PH, PW);
  }
  per += "    const double count = (double)(gh * gw > 1 ? gh * gw : 1);\n";
  per += fmt::format("    const IX plane = (bi * (IX){} + c) * (IX){};\n", C, H * W);
  per += "    double acc = 0.0;\n    bool first = true;\n";
  per += "    for (long long iy = 0; iy < gh; ++iy)\n      for (long long ix = 0; ix < gw; ++ix) {\n";
  per += "        double yy = y0 + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;\n";
  per += "        double xx = x0 + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;\n";
  per += "        double v1 = 0, v2 = 0, v3 = 0, v4 = 0;\n";
  per += fmt::format("        if (!(yy < -1.0 || yy > {}.0 || xx < -1.0 || xx > {}.0)) {{\n", H, W);
  per += "          yy = fmax(yy, 0.0);\n          xx = fmax(xx, 0.0);\n";
  per += "          long long ylo = (long long)yy, xlo = (long long)xx, yhi, xhi;\n";
  per += fmt::format("          if (ylo >= {0} - 1) {{ yhi = ylo = {0} - 1; yy = (double)ylo; }} else {{ yhi = ylo + 1; }}\n", H);
  per += fmt::format("          if (xlo >= {0} - 1) {{ xhi = xlo = {0} - 1; xx = (double)xlo; }} else {{ xhi = xlo + 1; }}\n", W);
  per += "          const double ly = yy - (double)ylo, lx = xx - (double)xlo, hy = 1.0 - ly, hx = 1.0 - lx;\n";
  per += fmt::format("          v1 = hy * hx * (double){};\n", f.load(0, fmt::format("plane + (IX)(ylo * {} + xlo)", W)));
  per += fmt::format("          v2 = hy * lx * (double){};\n", f.load(0, fmt::format("plane + (IX)(ylo * {} + xhi)", W)));
  per += fmt::format("          v3 = ly * hx * (double){};\n", f.load(0, fmt::format("plane + (IX)(yhi * {} + xlo)", W)));
  per += fmt::format("          v4 = ly * lx * (double){};\n", f.load(0, fmt::format("plane + (IX)(yhi * {} + xhi)", W)));
  per += "        }\n";
  if (p.max_mode) {
    per += "        const double v = fmax(fmax(v1, v2), fmax(v3, v4));\n";
    per += "        acc = first ? v : fmax(acc, v);\n        first = false;\n";
  } else {
    per += "        acc += v1 + v2 + v3 + v4;\n";
  }
  per += "      }\n";
  per += fmt::format("    {}\n", f.store(0, "i", fmt::format("({})({})", ot, p.max_mode ? "acc" : "acc / count")));
  return finish_flat_kernel(f, "roi_align", ir::shape_numel(f.output(0).shape), per);
}

}  // namespace graphc::emit::dm
