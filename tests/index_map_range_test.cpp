// Index maps over a shape range without a GPU: which maps hold at every
// shape (ir::index_map_follows_range), Reshape targets made of shape
// arithmetic becoming constants (constant-reshape-targets), and
// torchvision's ViT over a batch range fusing its head split and merge as a
// static build does. The kernels' arithmetic at each shape is checked by the
// emulator (`graphc_kernel_emulator range "index maps"`, and the tiny ViT).
#include <catch2/catch.hpp>

#include <string>

#include "driver/load_model.h"
#include "driver/range_graph.h"
#include "engine_format/engine_file.h"
#include "ir/index_map.h"
#include "tests/cli_util.h"
#include "tests/onnx_builder.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::testing;
using onnx::TensorProto;

namespace {

// x [batch, 6, 8] through one op of each kind, cutting, picking or
// repeating along the batch (dim 0) or along a fixed dim.
OnnxModel maps_over_batch() {
  OnnxModel m(17);
  m.input("x", TensorProto::FLOAT, {Dim("batch"), int64_t{6}, int64_t{8}});
  m.initializer(int64_tensor("one", {1}, {1}));
  m.initializer(int64_tensor("big", {1}, {100}));
  m.initializer(int64_tensor("axis0", {1}, {0}));
  m.initializer(int64_tensor("axis1", {1}, {1}));
  m.initializer(int64_tensor("idx", {1}, {0}));
  m.initializer(int64_tensor("rep0", {3}, {2, 1, 1}));
  m.initializer(int64_tensor("rep1", {3}, {1, 2, 1}));
  m.initializer(int64_tensor("pad0", {6}, {1, 0, 0, 0, 0, 0}));
  m.initializer(int64_tensor("pad1", {6}, {0, 1, 0, 0, 0, 0}));
  m.initializer(int64_tensor("halves", {2}, {3, 3}));
  m.node("Slice", {"x", "one", "big", "axis0"}, {"slice_batch"}, "slice_batch");
  m.node("Slice", {"x", "one", "big", "axis1"}, {"slice_fixed"}, "slice_fixed");
  attr_int(m.node("Gather", {"x", "idx"}, {"gather_batch"}, "gather_batch"), "axis", 0);
  attr_int(m.node("Gather", {"x", "idx"}, {"gather_fixed"}, "gather_fixed"), "axis", 1);
  m.node("Tile", {"x", "rep0"}, {"tile_batch"}, "tile_batch");
  m.node("Tile", {"x", "rep1"}, {"tile_fixed"}, "tile_fixed");
  m.node("Pad", {"x", "pad0"}, {"pad_batch"}, "pad_batch");
  m.node("Pad", {"x", "pad1"}, {"pad_fixed"}, "pad_fixed");
  attr_int(m.node("Split", {"x", "halves"}, {"s0", "s1"}, "split_fixed"), "axis", 1);
  attr_int(m.node("Concat", {"x", "x"}, {"concat_batch"}, "concat_batch"), "axis", 0);
  attr_ints(m.node("Transpose", {"x"}, {"transposed"}, "transpose"), "perm", {1, 0, 2});
  for (const char* y : {"slice_batch", "slice_fixed", "gather_batch", "gather_fixed", "tile_batch",
                        "tile_fixed", "pad_batch", "pad_fixed", "s0", "s1", "concat_batch",
                        "transposed"})
    m.output(y);
  return m;
}

driver::RangeGraph over_range(const OnnxModel& m, const std::string& profile, bool optimize) {
  driver::LoadOptions unbound;
  unbound.infer = false;
  auto imported = driver::load_model_bytes(m.bytes(), "model", unbound);
  if (!imported.ok()) FAIL(imported.status().message());
  auto p = driver::parse_profile_flag(profile);
  if (!p.ok()) FAIL(p.status().message());
  auto range = driver::optimize_for_range(*imported, *p, 0, optimizer::PassContext{}, optimize);
  if (!range.ok()) FAIL(range.status().message());
  return std::move(*range);
}

const ir::Node& node_named(const ir::Graph& g, const std::string& name) {
  for (const auto& n : g.nodes)
    if (!n.dead && n.name == name) return n;
  FAIL("no node " << name);
  return g.nodes.front();
}

}  // namespace

TEST_CASE("an index map holds over a range only where it leaves the varying dims whole",
          "[index-map][shape-range]") {
  const driver::RangeGraph r = over_range(maps_over_batch(), "x:1x6x8/4x6x8/9x6x8", false);
  const ir::Graph& g = r.optimized;
  for (const char* ok : {"slice_fixed", "gather_fixed", "tile_fixed", "pad_fixed", "split_fixed",
                         "concat_batch", "transpose"}) {
    INFO(ok);
    Status st = ir::index_map_follows_range(g, node_named(g, ok), r.symbolic);
    INFO(st.message());
    CHECK(st.ok());
  }
  for (const char* refused : {"slice_batch", "gather_batch", "tile_batch", "pad_batch"}) {
    INFO(refused);
    Status st = ir::index_map_follows_range(g, node_named(g, refused), r.symbolic);
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.message(), refused));
    CHECK(contains(st.message(), "dim 0"));
    CHECK(contains(st.message(), "batchx6x8"));
  }
}

TEST_CASE("a Reshape target made of shape arithmetic becomes a constant over a range",
          "[index-map][shape-range]") {
  // x [batch, 6, 8] -> view(batch * 2, 3, 8) -> view(batch, 2, 24), both
  // targets from Shape -> Gather -> Mul -> Concat.
  OnnxModel m(17);
  m.input("x", TensorProto::FLOAT, {Dim("batch"), int64_t{6}, int64_t{8}});
  m.initializer(int64_tensor("zero", {}, {0}));
  m.initializer(int64_tensor("axes", {1}, {0}));
  m.initializer(int64_tensor("two", {}, {2}));
  m.initializer(int64_tensor("rest1", {2}, {3, 8}));
  m.initializer(int64_tensor("rest2", {2}, {2, 24}));
  m.node("Shape", {"x"}, {"s"}, "shape");
  attr_int(m.node("Gather", {"s", "zero"}, {"b"}, "batch"), "axis", 0);
  m.node("Mul", {"b", "two"}, {"b2"}, "times_two");
  m.node("Unsqueeze", {"b2", "axes"}, {"b2v"}, "b2v");
  m.node("Unsqueeze", {"b", "axes"}, {"bv"}, "bv");
  attr_int(m.node("Concat", {"b2v", "rest1"}, {"t1"}, "target1"), "axis", 0);
  attr_int(m.node("Concat", {"bv", "rest2"}, {"t2"}, "target2"), "axis", 0);
  m.node("Reshape", {"x", "t1"}, {"v1"}, "view1");
  m.node("Relu", {"v1"}, {"r"}, "relu");
  m.node("Reshape", {"r", "t2"}, {"y"}, "view2");
  m.output("y");
  const driver::RangeGraph r = over_range(m, "x:1x6x8/4x6x8/9x6x8", true);
  const ir::Graph& g = r.optimized;
  int reshapes = 0;
  for (const auto& n : g.nodes) {
    if (n.dead) continue;
    CHECK(n.op != ir::OpKind::Shape);  // the arithmetic is left unread
    if (n.op != ir::OpKind::Reshape) continue;
    ++reshapes;
    const ir::Value& t = g.value(n.inputs[1]);
    REQUIRE(t.constant);
    const auto target = t.constant->to_i64_vector();
    CHECK((target == std::vector<int64_t>{-1, 3, 8} || target == std::vector<int64_t>{-1, 2, 24}));
  }
  CHECK(reshapes == 2);
  CHECK(r.symbolic.shape_string(g.outputs[0]) == "batchx2x24");
}

TEST_CASE("torchvision's ViT over a batch range fuses its head split and merge as a static build",
          "[index-map][shape-range]") {
  TempDir dir;
  auto index_maps = [&](const std::string& shapes) {
    const std::string engine = dir.file("vit.engine");
    auto built = run_graphc("build " + source_path("models/tiny/vit_tiny.onnx") + " " + shapes +
                            " --arch sm_90 -o " + engine);
    INFO(built.output);
    REQUIRE(built.exit_code == 0);
    auto c = engine::read_engine_file(engine);
    REQUIRE(c.ok());
    int im = 0, gathers = 0;
    for (const auto& k : c->manifest.kernels()) {
      im += k.name().rfind("im_", 0) == 0 ? 1 : 0;
      gathers += contains(k.name(), "gather") ? 1 : 0;
    }
    return std::pair{im, gathers};
  };
  const auto stat = index_maps("--shape input:4x3x32x32");
  const auto range = index_maps(
      "--min-shape input:1x3x32x32 --opt-shape input:4x3x32x32 --max-shape input:9x3x32x32");
  CHECK(stat.first >= 9);  // the class token's Concat + Add, 4 per layer
  CHECK(range.first == stat.first);
  CHECK(range.second == stat.second);  // no Gather of q, k or v left alone
}
