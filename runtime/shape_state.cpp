#include "runtime/shape_state.h"

#include <fmt/ranges.h>

#include "engine_format/engine_file.h"

namespace graphc::runtime {

namespace {

std::string dims_text(std::span<const int64_t> dims) { return fmt::format("{}", fmt::join(dims, "x")); }

}  // namespace

Status validate_shape_ranges(const Executable& exe) {
  if (!exe.shape_ranges) {
    for (const auto& t : exe.tensors)
      if (!t.dim_sizes.empty())
        return invalid_argument("tensor '{}' has run-time dims but the engine no shape ranges", t.name);
    for (const auto& l : exe.launches)
      if (l.kernel() && (!l.kernel()->size_block.empty() || l.kernel()->grid_sizes[0] >= 0 ||
                         l.kernel()->grid_sizes[1] >= 0 || l.kernel()->grid_sizes[2] >= 0 ||
                         l.kernel()->preferred_sdpa))
        return invalid_argument("launch '{}' has run-time sizes but the engine no shape ranges",
                                l.label());
    return Status::ok_status();
  }
  const ShapeRanges& r = *exe.shape_ranges;
  if (r.symbols.empty() || r.symbols.size() > 64)
    return invalid_argument("shape ranges with {} symbols (1 to 64)", r.symbols.size());
  for (size_t i = 0; i < r.sizes.size(); ++i)
    RETURN_IF_ERROR(validate_size_program(r.sizes[i], r.symbols.size())
                        .with_context(fmt::format("size {}", i)));
  const auto n = static_cast<int32_t>(r.sizes.size());
  auto bad_index = [&](int32_t s, bool allow_fixed) { return s < (allow_fixed ? -1 : 0) || s >= n; };
  for (const auto& t : exe.tensors) {
    if (t.dim_sizes.empty()) continue;
    if (t.dim_sizes.size() != t.shape.size())
      return invalid_argument("tensor '{}': {} dim sizes for rank {}", t.name, t.dim_sizes.size(),
                              t.shape.size());
    for (int32_t s : t.dim_sizes)
      if (bad_index(s, true)) return invalid_argument("tensor '{}': size {} of {}", t.name, s, n);
  }
  std::vector<bool> carried(r.symbols.size(), false);
  for (int32_t slot : exe.inputs) {
    const TensorSlot& t = exe.tensors[static_cast<size_t>(slot)];
    for (int32_t s : t.dim_sizes) {
      if (s < 0) continue;
      // A varying input dim is a symbol itself: the runtime learns the
      // symbols from the input shapes.
      const int k = size_program_symbol(r.sizes[static_cast<size_t>(s)]);
      if (k < 0) return invalid_argument("input '{}': a varying dim must be a symbol", t.name);
      carried[static_cast<size_t>(k)] = true;
    }
  }
  for (size_t k = 0; k < carried.size(); ++k)
    if (!carried[k]) return invalid_argument("symbol '{}' is no input's dim", r.symbols[k]);
  for (const Launch& l : exe.launches) {
    const KernelLaunch* k = l.kernel();
    if (!k) {
      if (l.is_copy()) continue;
      // A matmul with a run-time M takes its varying rows (checked by Engine::create).
      if (const MatmulLaunch* mm = l.matmul(); mm && mm->m_size >= 0) {
        if (bad_index(mm->m_size, false))
          return invalid_argument("launch '{}': M is size {} of {}", l.label(), mm->m_size, n);
        continue;
      }
      // A conv with run-time sizes: its operands at each shape are checked
      // when it runs (conv_shapes.h).
      if (const ConvLaunch* c = l.conv(); c && !c->sizes.empty()) {
        if (c->sizes.size() != static_cast<size_t>(engine::conv_range_sizes(c->params.spatial_rank)))
          return invalid_argument("launch '{}': {} run-time sizes for a conv of spatial rank {}",
                                  l.label(), c->sizes.size(), c->params.spatial_rank);
        for (int32_t s : c->sizes)
          if (bad_index(s, false))
            return invalid_argument("launch '{}': conv size {} of {}", l.label(), s, n);
        for (int arg : {1, c->params.bias_arg()})
          if (arg >= 0 && static_cast<size_t>(arg) < l.args.size() &&
              !exe.tensors[static_cast<size_t>(l.args[static_cast<size_t>(arg)])].dim_sizes.empty())
            return invalid_argument("conv launch '{}': its weights or bias vary", l.label());
        continue;
      }
      for (int32_t a : l.args)
        if (!exe.tensors[static_cast<size_t>(a)].dim_sizes.empty())
          return invalid_argument("library call '{}' on tensor '{}', whose shape varies", l.label(),
                                  exe.tensors[static_cast<size_t>(a)].name);
      continue;
    }
    for (int32_t s : k->size_block)
      if (bad_index(s, false)) return invalid_argument("launch '{}': size {} of {}", l.label(), s, n);
    for (int32_t s : k->grid_sizes)
      if (bad_index(s, true)) return invalid_argument("launch '{}': grid size {} of {}", l.label(), s, n);
    if (k->preferred_sdpa) {
      if (k->preferred_sdpa->sizes.size() != static_cast<size_t>(engine::kSdpaRangeFields))
        return invalid_argument("launch '{}': {} run-time attention fields, not {}", l.label(),
                                k->preferred_sdpa->sizes.size(), engine::kSdpaRangeFields);
      for (int32_t s : k->preferred_sdpa->sizes)
        if (bad_index(s, true))
          return invalid_argument("launch '{}': attention size {} of {}", l.label(), s, n);
    }
    if (!k->size_block.empty() && !k->params.empty())
      return invalid_argument("launch '{}' has both a parameter block and run-time sizes", l.label());
    if (8 * (k->size_block.size() + l.args.size()) > 4096)
      return invalid_argument("launch '{}': {} run-time sizes and {} pointers exceed 4 KiB",
                              l.label(), k->size_block.size(), l.args.size());
  }
  if (r.profiles.empty()) return invalid_argument("shape ranges without a profile");
  for (size_t p = 0; p < r.profiles.size(); ++p) {
    if (r.profiles[p].size() != exe.inputs.size())
      return invalid_argument("profile {} ranges {} inputs, the engine has {}", p,
                              r.profiles[p].size(), exe.inputs.size());
    for (size_t i = 0; i < exe.inputs.size(); ++i) {
      const TensorSlot& t = exe.tensors[static_cast<size_t>(exe.inputs[i])];
      const auto& in = r.profiles[p][i];
      if (in.min.size() != t.shape.size() || in.opt.size() != t.shape.size() ||
          in.max.size() != t.shape.size())
        return invalid_argument("profile {} input '{}': ranks differ from the tensor's {}", p,
                                t.name, t.shape.size());
      for (size_t d = 0; d < t.shape.size(); ++d) {
        const bool fixed = t.dim_sizes.empty() || t.dim_sizes[d] < 0;
        if (in.min[d] < 0 || in.min[d] > in.opt[d] || in.opt[d] > in.max[d] ||
            (fixed && (in.min[d] != t.shape[d] || in.max[d] != t.shape[d])))
          return invalid_argument("profile {} input '{}' dim {}: bad range {}/{}/{}", p, t.name, d,
                                  in.min[d], in.opt[d], in.max[d]);
      }
    }
  }
  return Status::ok_status();
}

ShapeState::ShapeState(const Executable& exe)
    : exe_(exe), ranges_(exe.shape_ranges ? &*exe.shape_ranges : nullptr) {
  for (const auto& t : exe.tensors) {
    shapes_.push_back(t.shape);
    bytes_.push_back(t.bytes);
  }
  for (const Launch& l : exe.launches) {
    const KernelLaunch* k = l.kernel();
    grids_.push_back(k ? k->grid : std::array<unsigned, 3>{1, 1, 1});
    blocks_.emplace_back(k ? k->size_block.size() : 0, 0);
  }
  for (int32_t slot : exe.inputs) inputs_.push_back(exe.tensors[static_cast<size_t>(slot)].shape);
  if (ranges_) {
    symbols_.assign(ranges_->symbols.size(), 0);
    sizes_.assign(ranges_->sizes.size(), 0);
    (void)set_profile(0);
  }
}

int ShapeState::num_profiles() const {
  return ranges_ ? static_cast<int>(ranges_->profiles.size()) : 1;
}

Status ShapeState::set_profile(int profile) {
  if (profile < 0 || profile >= num_profiles())
    return invalid_argument("shape profile {} does not exist (the engine has {})", profile,
                            num_profiles());
  if (!ranges_) return Status::ok_status();
  profile_ = profile;
  for (size_t i = 0; i < inputs_.size(); ++i)
    inputs_[i] = ranges_->profiles[static_cast<size_t>(profile)][i].opt;
  stale_ = true;
  return Status::ok_status();
}

Status ShapeState::set_input_shape(int input, const std::string& name,
                                   std::span<const int64_t> dims) {
  if (input < 0 || static_cast<size_t>(input) >= inputs_.size())
    return invalid_argument("input {} of {}", input, inputs_.size());
  const std::vector<int64_t>& built = exe_.tensors[static_cast<size_t>(exe_.inputs[static_cast<size_t>(input)])].shape;
  if (!ranges_) {
    if (!std::equal(dims.begin(), dims.end(), built.begin(), built.end()))
      return invalid_argument("input '{}' is {} in this engine, which was built for that shape "
                              "only; got {} (build with --min-shape/--opt-shape/--max-shape to "
                              "serve a range)",
                              name, dims_text(built), dims_text(dims));
    return Status::ok_status();
  }
  const auto& range = ranges_->profiles[static_cast<size_t>(profile_)][static_cast<size_t>(input)];
  if (dims.size() != range.min.size())
    return invalid_argument("input '{}' has rank {}; got shape {} of rank {}", name,
                            range.min.size(), dims_text(dims), dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] >= range.min[d] && dims[d] <= range.max[d]) continue;
    if (range.min[d] == range.max[d])
      return out_of_range("input '{}' dim {} is {}, but the engine fixes it at {} (shape {})",
                          name, d, dims[d], range.min[d], dims_text(dims));
    return out_of_range("input '{}' dim {} is {}, outside shape profile {}'s range [{}, {}] "
                        "(shape {})",
                        name, d, dims[d], profile_, range.min[d], range.max[d], dims_text(dims));
  }
  inputs_[static_cast<size_t>(input)].assign(dims.begin(), dims.end());
  stale_ = true;
  return Status::ok_status();
}

Status ShapeState::resolve(const std::vector<std::string>& names) {
  if (!stale_ || !ranges_) return Status::ok_status();
  const ShapeRanges& r = *ranges_;
  std::fill(symbols_.begin(), symbols_.end(), -1);
  std::vector<int> from(symbols_.size(), -1);
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const TensorSlot& t = exe_.tensors[static_cast<size_t>(exe_.inputs[i])];
    for (size_t d = 0; d < t.dim_sizes.size(); ++d) {
      if (t.dim_sizes[d] < 0) continue;
      const auto k = static_cast<size_t>(size_program_symbol(r.sizes[static_cast<size_t>(t.dim_sizes[d])]));
      const int64_t v = inputs_[i][d];
      if (symbols_[k] >= 0 && symbols_[k] != v)
        return invalid_argument("input '{}' dim {} is {}, but input '{}' gives '{}' the value {}: "
                                "both are that dim of the model",
                                names[i], d, v, names[static_cast<size_t>(from[k])], r.symbols[k],
                                symbols_[k]);
      symbols_[k] = v;
      from[k] = static_cast<int>(i);
    }
  }
  std::vector<int64_t> stack;
  stack.reserve(32);
  for (size_t s = 0; s < r.sizes.size(); ++s) {
    auto v = evaluate_size_program(r.sizes[s], symbols_, stack);
    if (!v.ok()) return v.status().with_context("computing the engine's sizes at these shapes");
    sizes_[s] = *v;
  }
  for (size_t s = 0; s < exe_.tensors.size(); ++s) {
    const TensorSlot& t = exe_.tensors[s];
    if (t.dim_sizes.empty()) continue;
    int64_t numel = 1;
    for (size_t d = 0; d < t.dim_sizes.size(); ++d) {
      const int64_t v = t.dim_sizes[d] < 0 ? t.shape[d] : sizes_[static_cast<size_t>(t.dim_sizes[d])];
      shapes_[s][d] = v;
      if (v < 0 || __builtin_mul_overflow(numel, v, &numel))
        return out_of_range("tensor '{}' has dim {} = {} at these shapes", t.name, d, v);
    }
    const int64_t elem = static_cast<int64_t>(engine::manifest_dtype_size(t.dtype));
    int64_t bytes = 0;
    if (__builtin_mul_overflow(numel, elem, &bytes) || bytes > t.bytes)
      return out_of_range("tensor '{}' would take more than its {} bytes at these shapes", t.name,
                          t.bytes);
    bytes_[s] = bytes;
  }
  for (size_t i = 0; i < exe_.launches.size(); ++i) {
    const KernelLaunch* k = exe_.launches[i].kernel();
    if (!k) continue;
    for (size_t d = 0; d < 3; ++d) {
      if (k->grid_sizes[d] < 0) continue;
      const int64_t v = sizes_[static_cast<size_t>(k->grid_sizes[d])];
      if (v < 1 || v > k->grid[d])
        return out_of_range("launch '{}': grid[{}] = {} at these shapes, outside [1, {}]",
                            exe_.launches[i].label(), d, v, k->grid[d]);
      grids_[i][d] = static_cast<unsigned>(v);
    }
    for (size_t b = 0; b < k->size_block.size(); ++b)
      blocks_[i][b] = sizes_[static_cast<size_t>(k->size_block[b])];
  }
  stale_ = false;
  return Status::ok_status();
}

Expected<engine::SdpaParams> ShapeState::preferred_sdpa_params(size_t launch) const {
  const KernelLaunch* k = launch < exe_.launches.size() ? exe_.launches[launch].kernel() : nullptr;
  if (!k || !k->preferred_sdpa)
    return internal_error("launch {} has no preferred attention call", launch);
  if (stale_) return internal_error("the shapes are not resolved");
  if (!ranges_) return k->preferred_sdpa->params;
  auto at = engine::sdpa_params_at(k->preferred_sdpa->params, k->preferred_sdpa->sizes, sizes_);
  if (!at.ok()) return at.status().with_context(fmt::format("launch '{}'", exe_.launches[launch].label()));
  return at;
}

}  // namespace graphc::runtime
