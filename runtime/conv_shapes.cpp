#include "runtime/conv_shapes.h"

#include <algorithm>

namespace graphc::runtime {

Expected<engine::ConvParams> conv_params_at_shapes(const Launch& l, const ShapeState& shapes) {
  const ConvLaunch* c = l.conv();
  if (!c) return internal_error("launch '{}' is not a conv", l.label());
  if (c->sizes.empty()) return c->params;
  std::vector<int64_t> at;
  for (int32_t s : c->sizes) at.push_back(shapes.size(s));
  auto p = engine::conv_params_at(c->params, at);
  if (!p.ok()) return p.status().with_context(fmt::format("conv launch '{}'", l.label()));
  // x, the residual and y hold what the conv reads and writes at these shapes.
  const int64_t elem = p->dtype == 1 ? 4 : 2;
  const std::pair<int, int64_t> extents[] = {
      {0, p->x_elements()}, {p->residual_arg(), p->y_elements()}, {p->y_arg(), p->y_elements()}};
  for (const auto& [arg, elements] : extents) {
    if (arg < 0) continue;
    if (static_cast<size_t>(arg) >= l.args.size())
      return internal_error("conv launch '{}' has {} arguments", l.label(), l.args.size());
    const int32_t slot = l.args[static_cast<size_t>(arg)];
    if (elements * elem > shapes.slot_bytes(slot))
      return out_of_range("conv launch '{}': at these shapes the conv needs {} bytes of a tensor "
                          "that holds {}",
                          l.label(), elements * elem, shapes.slot_bytes(slot));
  }
  return p;
}

Expected<std::vector<engine::ConvParams>> conv_params_at_profile_corners(const Executable& exe,
                                                                         size_t launch) {
  if (launch >= exe.launches.size() || !exe.launches[launch].conv())
    return internal_error("launch {} is not a conv", launch);
  const Launch& l = exe.launches[launch];
  if (l.conv()->sizes.empty() || !exe.shape_ranges)
    return std::vector<engine::ConvParams>{l.conv()->params};
  std::vector<std::string> names;
  for (size_t i = 0; i < exe.inputs.size(); ++i)
    names.push_back(i < exe.input_names.size()
                        ? exe.input_names[i]
                        : exe.tensors[static_cast<size_t>(exe.inputs[i])].name);
  ShapeState shapes(exe);
  std::vector<engine::ConvParams> out;
  const auto& profiles = exe.shape_ranges->profiles;
  for (size_t p = 0; p < profiles.size(); ++p) {
    RETURN_IF_ERROR(shapes.set_profile(static_cast<int>(p)));
    using Range = ShapeRanges::InputRange;
    for (auto corner : {&Range::min, &Range::opt, &Range::max}) {
      for (size_t i = 0; i < exe.inputs.size(); ++i)
        RETURN_IF_ERROR(shapes.set_input_shape(static_cast<int>(i), names[i], profiles[p][i].*corner));
      RETURN_IF_ERROR(shapes.resolve(names));
      ASSIGN_OR_RETURN(engine::ConvParams at, conv_params_at_shapes(l, shapes));
      if (std::find(out.begin(), out.end(), at) == out.end()) out.push_back(at);
    }
  }
  return out;
}

}  // namespace graphc::runtime
