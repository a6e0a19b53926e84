// Data-movement kernels (emit/cuda/cuda_data_movement.cpp and the cuda_* files it
// dispatches to): every case of tests/data_movement_cases.h generates a
// kernel that compiles with NVRTC for sm_80 and sm_90 (no GPU needed), the
// generator picks the intended strategy (tiled vs gather transpose, block vs
// per-row scan), and what cannot be lowered is a clear `unsupported`.
#include <catch2/catch.hpp>
#include <tuple>

#include "emit/cuda/gpu_kernels.h"
#include "emit/nvrtc/nvrtc_compiler.h"
#include "emit/plan/gpu_plan.h"
#include "emit/plan/schedule.h"
#include "tests/data_movement_cases.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::GraphBuilder;
using graphc::testing::dmcases::Case;

namespace {

// The kernels of every data-movement node of `g`.
std::vector<emit::GeneratedKernel> kernels_of(const Graph& g) {
  std::vector<emit::GeneratedKernel> out;
  emit::Schedule s = emit::make_schedule(g);
  for (const auto& k : s.kernels) {
    if (k.kind != target::KernelKind::kDataMovement) continue;
    auto gen = emit::generate_data_movement_kernel(g, k.node);
    INFO(g.node(k.node).name);
    if (!gen.ok()) FAIL(gen.status().message());
    out.push_back(std::move(*gen));
  }
  return out;
}

NodeId first_live(const Graph& g, OpKind op) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!g.nodes[i].dead && g.nodes[i].op == op) return static_cast<NodeId>(i);
  return -1;
}

emit::GeneratedKernel kernel_for(const Graph& g, OpKind op) {
  NodeId n = first_live(g, op);
  REQUIRE(n >= 0);
  auto k = emit::generate_data_movement_kernel(g, n);
  if (!k.ok()) FAIL(k.status().message());
  return *k;
}

}  // namespace

TEST_CASE("every data-movement case compiles with NVRTC for sm_80 and sm_90", "[emit]") {
  std::vector<Case> cases = testing::dmcases::all_cases();
  std::vector<emit::CudaSource> sources;
  std::vector<std::string> names;
  for (const Case& c : cases) {
    INFO(c.name);
    auto ks = kernels_of(c.graph);
    CHECK(!ks.empty());
    for (auto& k : ks) {
      CHECK(k.blocks >= 1);
      CHECK(k.threads_per_block * k.block_y * k.block_z <= 1024);
      names.push_back(c.name);
      sources.push_back({k.name, k.source});
    }
  }
  auto compiled = emit::compile_cuda_many(sources, {"sm_80", "sm_90"});
  REQUIRE(compiled.size() == sources.size());
  for (size_t i = 0; i < compiled.size(); ++i) {
    INFO(names[i]);
    if (!compiled[i].ok()) FAIL(compiled[i].status().message());
    CHECK(compiled[i]->binaries.size() == 2);
  }
}

TEST_CASE("a whole graph of data movement lowers with no missing kernel", "[emit]") {
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 6, 5});
  auto t =
      b.node(OpKind::Transpose, {x}, testing::attrs({{"perm", Attribute::of_ints({0, 2, 1})}}));
  auto i = b.input("i", DType::kInt64, {4});
  auto g1 = b.node(OpKind::Gather, {t, i}, testing::attrs({{"axis", Attribute::of_int(2)}}));
  auto c = b.node(OpKind::Concat, {g1, g1}, testing::attrs({{"axis", Attribute::of_int(-1)}}));
  auto p = b.node(OpKind::Pad, {c, b.constant("pads", testing::dmcases::i64s({0, 1, 0, 0, 2, 3}))},
                  testing::attrs({{"mode", Attribute::of_string("reflect")}}));
  b.output(p);
  Graph g = b.build();
  auto plan = emit::lower_for_gpu(g);
  if (!plan.ok()) FAIL(plan.status().message());
  CHECK(plan->launches.size() == 4);
}

TEST_CASE("Transpose tiles through shared memory only when the innermost dim moves", "[emit]") {
  auto make = [](Shape s, std::vector<int64_t> perm) {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, std::move(s));
    b.output(b.node(OpKind::Transpose, {x}, testing::attrs({{"perm", Attribute::of_ints(perm)}})));
    return b.build();
  };
  // NCHW -> NHWC merges to a batched 2-D transpose: tiled, 32x8 threads.
  auto tiled = kernel_for(make({2, 3, 5, 7}, {0, 2, 3, 1}), OpKind::Transpose);
  CHECK(tiled.source.find("tile[32][33]") != std::string::npos);
  CHECK(tiled.threads_per_block == 32);
  CHECK(tiled.block_y == 8);
  // The innermost dim stays innermost (size-1 dims ignored): a plain gather.
  auto plain = kernel_for(make({4, 1, 6, 5}, {2, 1, 0, 3}), OpKind::Transpose);
  CHECK(plain.source.find("__shared__") == std::string::npos);
}

TEST_CASE("copies whose runs are whole 16-byte vectors move uint4s", "[emit]") {
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat16, {3, 2, 8});
  auto y = b.input("y", DType::kFloat16, {3, 5, 8});
  b.output(b.node(OpKind::Concat, {x, y}, testing::attrs({{"axis", Attribute::of_int(1)}})));
  auto k = kernel_for(b.build(), OpKind::Concat);
  CHECK(k.source.find("reinterpret_cast<const uint4*>(p0)") != std::string::npos);
  CHECK(k.name.find("concat_v8") == 0);
  // An innermost run of 7 float32 is not whole vectors: scalar copies.
  GraphBuilder s;
  auto a = s.input("a", DType::kFloat32, {3, 7});
  s.output(s.node(OpKind::Concat, {a, a}, testing::attrs({{"axis", Attribute::of_int(0)}})));
  auto scalar = kernel_for(s.build(), OpKind::Concat);
  CHECK(scalar.source.find("uint4") == std::string::npos);
}

TEST_CASE("a data-movement node with an empty output is an empty launch", "[emit]") {
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {4, 5});
  auto st = b.constant("starts", testing::dmcases::i64s({2}));
  auto en = b.constant("ends", testing::dmcases::i64s({2}));
  auto ax = b.constant("axes", testing::dmcases::i64s({0}));
  b.output(b.node(OpKind::Slice, {x, st, en, ax}));
  Graph g = b.build();
  auto k = kernel_for(g, OpKind::Slice);
  CHECK(k.blocks == 1);
  CHECK(k.source.find("i < (IX)0;") != std::string::npos);
  CHECK(emit::compile_cuda(k.source, k.name, {"sm_90"}).ok());
}

TEST_CASE("CumSum scans long rows with a block and many rows with a thread each", "[emit]") {
  auto make = [](Shape s, int64_t axis) {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, std::move(s));
    b.output(b.node(OpKind::CumSum, {x, b.constant("a", Tensor::scalar_i64(axis))}));
    return b.build();
  };
  auto block = kernel_for(make({2, 100000}, 1), OpKind::CumSum);
  CHECK(block.source.find("g_shfl_up") != std::string::npos);
  CHECK(block.blocks == 2);
  CHECK(block.threads_per_block == 1024);
  auto rows = kernel_for(make({5000, 40}, -1), OpKind::CumSum);
  CHECK(rows.source.find("g_shfl_up") == std::string::npos);
}

TEST_CASE("data movement that cannot be lowered is a clear unsupported error", "[emit]") {
  {  // CumSum's axis must be known at build time.
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {3, 4});
    auto a = b.input("axis", DType::kInt64, {});
    auto y = b.node(OpKind::CumSum, {x, a});
    b.output(y);
    Graph& g = b.graph();  // shape inference would reject it; the generator must too
    g.value(y).dtype = DType::kFloat32;
    g.value(y).shape = {3, 4};
    g.value(y).has_shape = true;
    auto k = emit::generate_data_movement_kernel(g, first_live(g, OpKind::CumSum));
    REQUIRE_FALSE(k.ok());
    CHECK(k.status().code() == ErrorCode::kUnsupported);
    CHECK_THAT(k.status().message(), Catch::Contains("axis") && Catch::Contains("build time"));
  }
  {  // Resize's scales must be constants (here a graph input, the shape set by hand).
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {1, 1, 4, 4});
    auto sc = b.input("scales", DType::kFloat32, {4});
    auto y = b.node(OpKind::Resize, {x, kNoValue, sc});
    b.output(y);
    Graph& g = b.graph();
    g.value(y).dtype = DType::kFloat32;
    g.value(y).shape = {1, 1, 8, 8};
    g.value(y).has_shape = true;
    auto k = emit::generate_data_movement_kernel(g, first_live(g, OpKind::Resize));
    REQUIRE_FALSE(k.ok());
    CHECK(k.status().code() == ErrorCode::kUnsupported);
    CHECK_THAT(k.status().message(), Catch::Contains("scales"));
  }
  {  // A node id out of range is an error, not a crash.
    Graph g;
    CHECK_FALSE(emit::generate_data_movement_kernel(g, 3).ok());
  }
}

TEST_CASE("ScatterND gives each thread a column and a block of rows", "[emit]") {
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {1000, 7});
  auto i = b.input("i", DType::kInt64, {5, 1});
  auto u = b.input("u", DType::kFloat32, {5, 7});
  b.output(b.node(OpKind::ScatterND, {x, i, u}));
  Graph g = b.build();
  auto k = kernel_for(g, OpKind::ScatterND);
  // 7 columns x 1000 row groups of one row each: every row is owned once.
  CHECK(k.source.find("i % (IX)7") != std::string::npos);
  CHECK(k.source.find("row0 = g * (IX)1;") != std::string::npos);
}

TEST_CASE("Dropout lowers when training cannot randomly mask, else is unsupported", "[emit]") {
  // A runtime or known-true training_mode lowers only with a build-time ratio
  // of 0 (the identity either way); a runtime ratio or a nonzero one with a
  // mode that may be true is unsupported: a kernel cannot raise the
  // reference's runtime error (a trap would poison the CUDA context). (A known
  // true mode with a known nonzero ratio is refused by shape inference.)
  auto graph = [](bool mode_known, bool ratio_known, float ratio, bool mode) {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {4, 9});
    auto r = ratio_known ? b.constant("ratio", Tensor::from_f32({ratio}, {}))
                         : b.input("ratio", DType::kFloat32, {});
    auto m = mode_known ? b.constant("mode", Tensor::scalar_i64(mode ? 1 : 0).cast_to(DType::kBool))
                        : b.input("mode", DType::kBool, {});
    b.output(b.node(OpKind::Dropout, {x, r, m}));
    return b.build();
  };
  for (auto [mode_known, ratio_known, ratio, mode] :
       {std::tuple{false, true, 0.0f, true}, std::tuple{true, true, 0.0f, true},
        std::tuple{true, false, 0.3f, false}, std::tuple{true, true, 0.3f, false}}) {
    Graph g = graph(mode_known, ratio_known, ratio, mode);
    auto k = kernel_for(g, OpKind::Dropout);
    CHECK(emit::compile_cuda(k.source, k.name, {"sm_90"}).ok());
  }
  for (auto [mode_known, ratio_known] : {std::pair{false, false}, {false, true}}) {
    Graph g = graph(mode_known, ratio_known, 0.3f, true);
    auto k = emit::generate_data_movement_kernel(g, first_live(g, OpKind::Dropout));
    REQUIRE_FALSE(k.ok());
    CHECK(k.status().code() == ErrorCode::kUnsupported);
    CHECK_THAT(k.status().message(), Catch::Contains("random masking"));
  }
}
