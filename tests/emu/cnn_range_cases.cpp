// CNN blocks over a batch range for the kernel emulator (range_case.h;
// the models: tests/cnn_range_models.h): the dense convolutions through
// cuDNN (emulated on the host at each shape's sizes), the depthwise ones,
// pooling, the squeeze-excitation's ReduceMean and the elementwise ops as
// generated kernels that take the batch at run time.
#include <fmt/format.h>

#include <utility>

#include "tests/cnn_range_models.h"
#include "tests/emu/range_case.h"

namespace graphc::emu::internal {

using testing::OnnxModel;
using namespace testing::cnn;

void add_cnn_range_cases(std::vector<RangeCase>& out) {
  const std::string batch = "x:1x8x12x12/4x8x12x12/9x8x12x12";
  auto add = [&](std::string label, std::string profile, std::function<OnnxModel()> model,
                 bool cudnn) {
    RangeCase c;
    c.label = "CNN: " + std::move(label);
    c.profile = std::move(profile);
    c.model = std::move(model);
    c.rtol_f32 = 1e-4;  // sums of up to 200 products in another order
    c.cudnn_convs = cudnn;
    out.push_back(std::move(c));
  };
  add("ResNet basic block, projection, MaxPool, classifier (batch)", batch, resnet_block, true);
  add("ResNet basic block over batch x height x width (cuDNN convs)",
      "x:1x8x5x6/2x8x12x12/3x8x17x21", resnet_block_spatial, true);
  add("MobileNetV3 block with squeeze-excitation, depthwise 5x5 s2, classifier (batch)", batch,
      mobile_se_block, true);
  add("generated depthwise and grouped convs, AveragePool, GlobalMaxPool (batch)",
      "x:1x16x12x12/4x16x12x12/9x16x12x12", generated_convs, false);
  // fp16: cuDNN's convs channels-last (NHWC values, their range shapes
  // N x H x W x C), transposes at the edges of the conv chain (tiled, the
  // batch at run time); the squeeze-excitation's N x C x 1 x 1 ones become
  // views (Reshape copying the batch).
  using Model = std::pair<const char*, OnnxModel (*)()>;
  for (auto [label, model] : {Model{"ResNet basic block", resnet_block},
                              Model{"MobileNetV3 block with squeeze-excitation", mobile_se_block}}) {
    RangeCase c;
    c.label = fmt::format("CNN: {} in fp16, channels-last cuDNN convs (batch)", label);
    c.profile = batch;
    c.model = model;
    c.cudnn_convs = true;
    c.fp16 = true;
    c.half_atol = 3e-2;  // fp16 convs of up to 72 products (reference: fp32)
    out.push_back(std::move(c));
  }
  add("Inception-style branches, Concat over channels, pooled skip (batch)", batch, inception_block,
      true);
  // wav2vec2's feature extractor: a 1-D conv, then InstanceNormalization
  // (its GroupNorm with one group per channel) over the batch, rows N x C at
  // run time, and an activation.
  add("Conv1d, InstanceNormalization, Tanh (batch)", "x:1x1x400/4x1x400/9x1x400",
      [] {
        OnnxModel m(17);
        m.input("x", onnx::TensorProto::FLOAT, {testing::Dim("batch"), int64_t{1}, int64_t{400}});
        std::vector<float> w(8 * 10), g(8), b(8);
        for (size_t i = 0; i < w.size(); ++i) w[i] = 0.05f * static_cast<float>((i * 7) % 11) - 0.2f;
        for (size_t i = 0; i < g.size(); ++i) g[i] = 0.5f + 0.1f * static_cast<float>(i);
        for (size_t i = 0; i < b.size(); ++i) b[i] = 0.05f * static_cast<float>(i) - 0.2f;
        m.initializer(testing::float_tensor("w", {8, 1, 10}, w));
        m.initializer(testing::float_tensor("g", {8}, g));
        m.initializer(testing::float_tensor("b", {8}, b));
        auto* conv = m.node("Conv", {"x", "w"}, {"c"}, "conv1d");
        testing::attr_ints(conv, "strides", {5});
        m.node("InstanceNormalization", {"c", "g", "b"}, {"n"}, "instance_norm");
        m.node("Tanh", {"n"}, {"y"}, "act");
        m.output("y");
        return m;
      },
      true);
}

}  // namespace graphc::emu::internal
