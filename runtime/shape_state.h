// The shapes an execution context runs at. For an engine with shape ranges
// (format 4): the context's profile, the input shapes the caller set (each
// checked against the profile as it is set), the symbols they give, and every
// size the engine computes from them — tensor dims and bytes, each kernel's
// size block and grid. For a static engine everything is what it was built
// for. Resolving a new shape evaluates the engine's size programs: a few
// hundred integer operations, no allocation.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/executable.h"
#include "support/status.h"

namespace graphc::runtime {

// The shape-range parts of an Executable checked against its tensors,
// bindings and launches (indices, programs, ranks, parameter room).
Status validate_shape_ranges(const Executable& exe);

class ShapeState {
 public:
  // At profile 0's opt shapes. `exe` must be validated and outlive this.
  explicit ShapeState(const Executable& exe);

  bool dynamic() const { return ranges_ != nullptr; }
  int profile() const { return profile_; }
  int num_profiles() const;
  // Selects a profile; the inputs return to its opt shapes.
  Status set_profile(int profile);
  // Input binding `input` (named `name` for messages) takes `dims`: the rank
  // and every dim are checked against the profile now.
  Status set_input_shape(int input, const std::string& name, std::span<const int64_t> dims);
  const std::vector<int64_t>& input_shape(int input) const {
    return inputs_[static_cast<size_t>(input)];
  }
  // Symbols from the input shapes (inputs sharing a dim must agree) and every
  // size from the symbols; a no-op when nothing changed. Input names for messages.
  Status resolve(const std::vector<std::string>& input_names);
  bool stale() const { return stale_; }

  const std::vector<int64_t>& symbols() const { return symbols_; }
  // Size `index` (ShapeRanges::sizes) at the current shapes.
  int64_t size(int32_t index) const { return sizes_[static_cast<size_t>(index)]; }
  const std::vector<int64_t>& slot_shape(int32_t slot) const {
    return shapes_[static_cast<size_t>(slot)];
  }
  int64_t slot_bytes(int32_t slot) const { return bytes_[static_cast<size_t>(slot)]; }
  const std::array<unsigned, 3>& grid(size_t launch) const { return grids_[launch]; }
  // The parameters of launch `launch`'s preferred cuDNN attention
  // (KernelLaunch::preferred_sdpa) at the current shapes, checked.
  Expected<engine::SdpaParams> preferred_sdpa_params(size_t launch) const;
  // The launch's size block, at a stable address (kernel parameters point here).
  std::vector<int64_t>& size_block(size_t launch) { return blocks_[launch]; }

 private:
  const Executable& exe_;
  const ShapeRanges* ranges_ = nullptr;
  int profile_ = 0;
  bool stale_ = false;
  std::vector<std::vector<int64_t>> inputs_;  // per input binding
  std::vector<int64_t> symbols_, sizes_;
  std::vector<std::vector<int64_t>> shapes_;  // per slot
  std::vector<int64_t> bytes_;                // per slot
  std::vector<std::array<unsigned, 3>> grids_;
  std::vector<std::vector<int64_t>> blocks_;  // per launch
};

}  // namespace graphc::runtime
