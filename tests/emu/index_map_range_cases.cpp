// Index-map kernels over a batch range for the kernel emulator (range_case.h):
// chains of Transpose, Reshape, Slice, Gather, Split, Pad, Tile, Expand and
// Concat with the elementwise ops after them, fused into kernels that read
// the batch (and sizes made from it: batch x heads) at run time. Each case
// checks that the fusion happened (a count of index-map kernels), so a
// change that stops fusing over a range fails here rather than passing on
// single-op kernels.
#include "tests/emu/range_case.h"

namespace graphc::emu::internal {

using onnx::TensorProto;
using testing::Dim;
using testing::OnnxModel;

namespace {

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * (static_cast<float>(i % 5) - 2.0f) + 0.5f;
  return v;
}

// `x.view(a, b * heads, d)` as exporters write it: the target from Shape ->
// Gather -> Mul -> Concat, so it varies with the batch.
void view_by_shape(OnnxModel& m, const std::string& x, const std::string& of, int64_t batch_axis,
                   std::vector<int64_t> before, int64_t factor, std::vector<int64_t> after,
                   const std::string& y) {
  const std::string p = y + "_";
  m.initializer(testing::int64_tensor(p + "axis", {}, {batch_axis}));
  m.initializer(testing::int64_tensor(p + "factor", {}, {factor}));
  m.initializer(testing::int64_tensor(p + "zero", {1}, {0}));
  m.initializer(testing::int64_tensor(p + "before", {static_cast<int64_t>(before.size())}, before));
  m.initializer(testing::int64_tensor(p + "after", {static_cast<int64_t>(after.size())}, after));
  m.node("Shape", {of}, {p + "shape"}, p + "shape");
  testing::attr_int(m.node("Gather", {p + "shape", p + "axis"}, {p + "b"}, p + "gather"), "axis", 0);
  m.node("Mul", {p + "b", p + "factor"}, {p + "bh"}, p + "mul");
  m.node("Unsqueeze", {p + "bh", p + "zero"}, {p + "bh1"}, p + "unsqueeze");
  std::vector<std::string> parts;
  if (!before.empty()) parts.push_back(p + "before");
  parts.push_back(p + "bh1");
  if (!after.empty()) parts.push_back(p + "after");
  testing::attr_int(m.node("Concat", parts, {p + "target"}, p + "concat"), "axis", 0);
  m.node("Reshape", {x, p + "target"}, {y}, p + "reshape");
}

// nn.MultiheadAttention's head split and merge on x [batch, 5, 48]:
// transpose to [5, batch, 48], q = the first 16 channels viewed as
// [5, batch * 2, 8], transposed to [batch * 2, 5, 8], viewed as
// [batch, 2, 5, 8] and scaled; the division by batch * 2 runs at run time.
OnnxModel head_split() {
  OnnxModel m(17);
  m.input("x", TensorProto::FLOAT, {Dim("batch"), int64_t{5}, int64_t{48}});
  m.initializer(testing::int64_tensor("q_start", {1}, {0}));
  m.initializer(testing::int64_tensor("q_end", {1}, {16}));
  m.initializer(testing::int64_tensor("ch_axis", {1}, {2}));
  m.initializer(testing::float_tensor("scale", {8}, ramp(8, 0.3f)));
  testing::attr_ints(m.node("Transpose", {"x"}, {"t"}, "to_seq_first"), "perm", {1, 0, 2});
  m.node("Slice", {"t", "q_start", "q_end", "ch_axis"}, {"q"}, "q_slice");
  view_by_shape(m, "q", "t", 1, {5}, 2, {8}, "heads");
  testing::attr_ints(m.node("Transpose", {"heads"}, {"ht"}, "heads_first"), "perm", {1, 0, 2});
  view_by_shape(m, "ht", "t", 1, {}, 1, {2, 5, 8}, "bhld");
  m.node("Mul", {"bhld", "scale"}, {"y"}, "scale");
  m.output("y");
  return m;
}

// Pad and Tile along fixed dims, then a Concat along the batch (offsets
// that vary) with a second input, and a Relu.
OnnxModel pad_tile_concat() {
  OnnxModel m(17);
  m.input("x", TensorProto::FLOAT, {Dim("batch"), int64_t{5}, int64_t{12}});
  m.input("z", TensorProto::FLOAT, {Dim("batch"), int64_t{10}, int64_t{14}});
  m.initializer(testing::int64_tensor("pads", {6}, {0, 0, 1, 0, 0, 1}));
  m.initializer(testing::float_tensor("pad_value", {}, {0.5f}));
  m.initializer(testing::int64_tensor("repeats", {3}, {1, 2, 1}));
  m.node("Pad", {"x", "pads", "pad_value"}, {"p"}, "pad");
  m.node("Tile", {"p", "repeats"}, {"tl"}, "tile");
  testing::attr_int(m.node("Concat", {"tl", "z"}, {"c"}, "concat_batch"), "axis", 0);
  m.node("Relu", {"c"}, {"y"}, "relu");
  m.output("y");
  return m;
}

// Gather with constant indices along a fixed axis, Split and strided
// Slices along the channels, and an Expand of a per-batch row broadcast
// along a fixed dim, summed (one elementwise op: fuse-elementwise would take
// a chain of them first, and index-map fusion does not enter its groups).
OnnxModel gather_split_expand() {
  OnnxModel m(17);
  m.input("x", TensorProto::FLOAT, {Dim("batch"), int64_t{5}, int64_t{48}});
  m.input("e", TensorProto::FLOAT, {Dim("batch"), int64_t{1}, int64_t{12}});
  m.initializer(testing::int64_tensor("rows", {4}, {0, 2, 4, -4}));
  m.initializer(testing::int64_tensor("split", {2}, {24, 24}));
  m.initializer(testing::int64_tensor("start", {1}, {1}));
  m.initializer(testing::int64_tensor("end", {1}, {24}));
  m.initializer(testing::int64_tensor("axis", {1}, {2}));
  m.initializer(testing::int64_tensor("step", {1}, {2}));
  m.initializer(testing::int64_tensor("shape", {3}, {1, 4, 1}));
  testing::attr_int(m.node("Gather", {"x", "rows"}, {"g"}, "rows"), "axis", 1);
  testing::attr_int(m.node("Split", {"g", "split"}, {"lo", "hi"}, "split"), "axis", 2);
  m.node("Slice", {"hi", "start", "end", "axis", "step"}, {"s_hi"}, "every_other_hi");
  m.node("Slice", {"lo", "start", "end", "axis", "step"}, {"s_lo"}, "every_other_lo");
  m.node("Expand", {"e", "shape"}, {"ex"}, "expand");
  m.node("Sum", {"s_hi", "ex", "s_lo"}, {"y"}, "sum");
  m.output("y");
  return m;
}

}  // namespace

void add_index_map_range_cases(std::vector<RangeCase>& out) {
  auto add = [&](std::string label, std::string profile, OnnxModel (*model)(), int im_kernels) {
    RangeCase c;
    c.label = "index maps: " + std::move(label);
    c.profile = std::move(profile);
    c.model = model;
    c.min_index_map_kernels = im_kernels;
    out.push_back(std::move(c));
  };
  add("head split and merge through views of batch x heads", "x:1x5x48/4x5x48/9x5x48",
      head_split, 1);
  add("Pad and Tile along fixed dims, Concat along the batch",
      "x:1x5x12/4x5x12/9x5x12,z:1x10x14/4x10x14/9x10x14", pad_tile_concat, 1);
  add("Gather, Split, strided Slice, Expand of a per-batch row",
      "x:1x5x48/4x5x48/9x5x48,e:1x1x12/4x1x12/9x1x12", gather_split_expand, 1);
}

}  // namespace graphc::emu::internal
