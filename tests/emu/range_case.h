// One emulator case over a shape range (range_cases.cpp runs them); the CNN
// cases live in cnn_range_cases.cpp.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tests/onnx_builder.h"

namespace graphc::emu::internal {

struct RangeCase {
  std::string label;
  std::string profile;  // a --shape-profile value
  std::function<testing::OnnxModel()> model;
  double rtol_f32 = 1e-5, half_atol = 0;
  std::string file;  // else a model file (relative to the source tree)
  bool token_inputs = false;  // input_ids in [0, 100) and a padding attention_mask
  // Dense convolutions through cuDNN (--conv auto; emulated on the host), the
  // depthwise ones where the target chooses the generated kernel.
  bool cudnn_convs = false;
  // Built with --precision fp16 (the convs then run channels-last, NHWC);
  // outputs are compared as float16 (its rtol and `half_atol`).
  bool fp16 = false;
  // At least this many index-map kernels (fuse-index-maps groups) in the
  // range plan: the case is about them.
  int min_index_map_kernels = 0;
};

// Blocks of ResNet, MobileNetV3 and Inception/DenseNet over a batch range
// (and a ResNet block over batch x height x width).
void add_cnn_range_cases(std::vector<RangeCase>& out);

// Chains of data movement fused into index-map kernels over a batch range
// (index_map_range_cases.cpp).
void add_index_map_range_cases(std::vector<RangeCase>& out);

}  // namespace graphc::emu::internal
