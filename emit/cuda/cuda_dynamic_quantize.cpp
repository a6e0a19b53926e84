// DynamicQuantizeLinear(x) -> y (uint8), y_scale, y_zero_point, mirroring
// reference/kernels_quantize.cpp: the range [min(0, min x), max(0, max x)]
// in float (NaNs ignored, as std::min/max do there), scale = range / 255
// (1 / 255 for an all-zero range), zero point = rint(clamp(-lo / scale)),
// y = clamp(rint(x / scale) + zero point, 0, 255). One kernel: the whole
// tensor is one row of the team frame (cuda_reduction_common.h), reduced to
// min and max, then quantized by the same team, which also writes the two
// scalars. A single team holds the tensor, so this suits the activation
// sizes dynamically quantized models feed it (one block of up to 1024
// threads; a grid-wide split is left for a tensor that fills the GPU).
#include <fmt/format.h>

#include "emit/cuda/cuda_ops.h"
#include "emit/cuda/cuda_reduction_common.h"
#include "emit/cuda/cuda_reduction_ops.h"

namespace graphc::emit::reduction {

Expected<GeneratedKernel> generate_dynamic_quantize(const AnchorFrame& f) {
  const ir::Value& x = f.input(0);
  if (x.dtype != ir::DType::kFloat32 && x.dtype != ir::DType::kFloat16 &&
      x.dtype != ir::DType::kBFloat16)
    return unsupported("node '{}': DynamicQuantizeLinear of {} has no GPU lowering (float32, "
                       "float16 or bfloat16 input)", f.node_name, ir::dtype_name(x.dtype));
  if (f.num_outputs() < 1 || !f.has_output(0) || f.output(0).dtype != ir::DType::kUInt8)
    return unsupported("node '{}': DynamicQuantizeLinear must quantize to uint8", f.node_name);
  const int64_t numel = ir::shape_numel(x.shape);
  // An empty tensor still has a scale and zero point (those of the range [0, 0]).
  const Segments segs = segments_for({1, std::max<int64_t>(numel, 1)}, {false, true});
  const TeamPlan plan = plan_teams(segs);
  const std::string ct = cuda::compute_type(x.dtype);
  RowLoops loops(f, segs, plan, ct);
  std::string body = team_prologue(segs, plan) + loops.fill();
  body += "  float lo = 0.0f, hi = 0.0f;\n";
  if (numel > 0)
    body += loops.each(
        "      const float v_ = (float)x;\n"
        "      lo = v_ < lo ? v_ : lo;\n"
        "      hi = v_ > hi ? v_ : hi;\n");
  body +=
      "  lo = team_allreduce(lo, RMinNum());\n"
      "  hi = team_allreduce(hi, RMaxNum());\n"
      "  const float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;\n"
      "  const float zp = rintf(fminf(255.0f, fmaxf(0.0f, 0.0f - lo / scale)));\n";
  const std::string qt = cuda::compute_type(ir::DType::kUInt8);
  if (numel > 0)
    body += loops.each(fmt::format(
        "      const float q_ = rintf((float)x / scale) + zp;\n"
        "      {}\n",
        f.store(0, "off", fmt::format("({})fminf(255.0f, fmaxf(0.0f, q_))", qt))));
  std::string scalars;
  if (f.has_output(1))
    scalars += fmt::format("    {}\n", f.store(1, "0LL", fmt::format(
                                                   "({})scale",
                                                   cuda::compute_type(f.output(1).dtype))));
  if (f.has_output(2))
    scalars += fmt::format("    {}\n", f.store(2, "0LL", fmt::format(
                                                   "({})zp",
                                                   cuda::compute_type(f.output(2).dtype))));
  if (!scalars.empty()) body += "  if (active && rank == 0) {\n" + scalars + "  }\n";
  return finish_anchor_kernel(f, "dynquant", team_helpers(segs, plan), body, plan.launch);
}

}  // namespace graphc::emit::reduction
