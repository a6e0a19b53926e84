// Reduction-family kernels (Reduce*, ArgMax/ArgMin, Softmax family, TopK,
// normalizations) generate for many shapes, axes and dtypes and compile with
// NVRTC for sm_80 and sm_90 (no GPU needed); the launch layout follows the
// row shape; fused groups from the optimizer generate; unsupported cases are
// clear errors. Numerical checks against the reference executor are in
// gpu/reduction_gpu_test.cpp.
#include <catch2/catch.hpp>

#include "emit/cuda/gpu_kernels.h"
#include "emit/nvrtc/nvrtc_compiler.h"
#include "emit/plan/gpu_plan.h"
#include "tests/cuda_batch.h"
#include "tests/reduction_graphs.h"

using namespace graphc;
using namespace graphc::ir;
namespace rg = graphc::testing::reduction_graphs;

namespace {

NodeId kernel_node(const Graph& g) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!g.nodes[i].dead && !is_elementwise(g.nodes[i].op)) return static_cast<NodeId>(i);
  return -1;
}

Expected<emit::GeneratedKernel> generate(const Graph& g) {
  NodeId n = kernel_node(g);
  if (n < 0) return internal_error("no kernel node");
  return emit::generate_reduction_kernel(g, n);
}

// Generates kernels and compiles them as one module (as an engine does), so
// a hundred kernels cost one NVRTC run per architecture.
class Batch {
 public:
  void add(const Graph& g, const std::string& what) {
    INFO(what);
    auto k = generate(g);
    if (!k.ok()) FAIL(k.status().message());
    sources_.push_back(k->source);
  }
  void compile() {
    REQUIRE(!sources_.empty());
    const std::string src = testing::combined_kernel_source(sources_);
    auto m = emit::compile_cuda(src, "reduction_batch", {"sm_80", "sm_90"});
    if (!m.ok()) FAIL(m.status().message());
    CHECK(m->binaries.size() == 2);
  }

 private:
  std::vector<std::string> sources_;
};

const std::vector<OpKind> kReduceOps = {
    OpKind::ReduceSum,       OpKind::ReduceMean,     OpKind::ReduceMax, OpKind::ReduceMin,
    OpKind::ReduceProd,      OpKind::ReduceL1,       OpKind::ReduceL2,  OpKind::ReduceLogSum,
    OpKind::ReduceLogSumExp, OpKind::ReduceSumSquare};

std::string name_of(OpKind op, DType dt, const std::string& rest = "") {
  return std::string(op_name(op)) + " " + std::string(dtype_name(dt)) + " " + rest;
}

}  // namespace

TEST_CASE("Reduce* kernels compile for every float layout and axis set", "[emit]") {
  Batch batch;
  struct Case {
    Shape shape;
    std::optional<std::vector<int64_t>> axes;
    bool keepdims;
  };
  const std::vector<Case> cases = {
      {{4, 33}, std::vector<int64_t>{-1}, true},    // sub-warp rows
      {{3, 5, 7}, std::vector<int64_t>{0}, false},  // strided: columns
      {{3, 5, 7}, std::vector<int64_t>{0, 2}, true},
      {{2, 768}, std::nullopt, false},            // every axis
      {{8, 4096}, std::vector<int64_t>{1}, true}  // block rows
  };
  for (OpKind op : kReduceOps)
    for (const Case& c : cases)
      batch.add(rg::reduce(op, DType::kFloat32, c.shape, c.axes, c.keepdims),
                name_of(op, DType::kFloat32, shape_to_string(c.shape)));
  for (DType dt : {DType::kFloat16, DType::kBFloat16, DType::kFloat64})
    for (OpKind op : kReduceOps)
      batch.add(rg::reduce(op, dt, {6, 40}, std::vector<int64_t>{1}), name_of(op, dt));
  batch.compile();
}

TEST_CASE("Reduce* kernels compile for integer and bool dtypes", "[emit]") {
  Batch batch;
  for (DType dt : {DType::kInt8, DType::kUInt8, DType::kInt16, DType::kInt32, DType::kInt64,
                   DType::kUInt32, DType::kUInt64})
    for (OpKind op : kReduceOps) {
      batch.add(rg::reduce(op, dt, {5, 37}, std::vector<int64_t>{-1}), name_of(op, dt, "rows"));
      batch.add(rg::reduce(op, dt, {37, 5}, std::vector<int64_t>{0}), name_of(op, dt, "cols"));
    }
  for (OpKind op : {OpKind::ReduceMax, OpKind::ReduceMin})
    batch.add(rg::reduce(op, DType::kBool, {5, 37}, std::vector<int64_t>{1}), "bool");
  // noop_with_empty_axes: every element is its own row.
  batch.add(rg::reduce(OpKind::ReduceSumSquare, DType::kFloat32, {4, 5}, std::vector<int64_t>{},
                       true, true),
            "noop");
  batch.compile();
}

TEST_CASE("ArgMax/ArgMin kernels compile for every axis, dtype and tie rule", "[emit]") {
  Batch batch;
  for (OpKind op : {OpKind::ArgMax, OpKind::ArgMin})
    for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt32,
                     DType::kInt64, DType::kUInt8, DType::kInt8})
      for (int64_t axis : {0, 1, -1})
        for (bool last : {false, true})
          batch.add(rg::arg(op, dt, {6, 33, 5}, axis, axis != 1, last), name_of(op, dt));
  batch.add(rg::arg(OpKind::ArgMax, DType::kFloat32, {3, 4096}, 1, true, false), "long row");
  batch.compile();
}

TEST_CASE("Softmax family kernels compile for short + long + strided + legacy rows", "[emit]") {
  Batch batch;
  for (OpKind op : {OpKind::Softmax, OpKind::LogSoftmax, OpKind::Hardmax})
    for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64}) {
      batch.add(rg::softmax(op, dt, {5, 7}, -1), name_of(op, dt, "7"));
      batch.add(rg::softmax(op, dt, {4, 768}, -1), name_of(op, dt, "768"));
      batch.add(rg::softmax(op, dt, {2, 4096}, 1), name_of(op, dt, "4096"));
      batch.add(rg::softmax(op, dt, {3, 5, 7}, 1), name_of(op, dt, "middle axis"));
      batch.add(rg::softmax(op, dt, {2, 3, 4, 5}, 1, true), name_of(op, dt, "legacy"));
    }
  batch.add(rg::softmax(OpKind::Softmax, DType::kFloat32, {2, 40000}, -1), "uncached row");
  batch.compile();
}

TEST_CASE("TopK kernels compile for bitonic and selection slices and every dtype", "[emit]") {
  Batch batch;
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kInt32, DType::kInt8,
                   DType::kUInt8, DType::kInt64})
    for (bool largest : {true, false}) {
      batch.add(rg::topk(dt, {3, 10}, -1, 3, largest), name_of(OpKind::TopK, dt, "rows"));
      batch.add(rg::topk(dt, {10, 3, 4}, 0, 10, largest), name_of(OpKind::TopK, dt, "axis 0"));
      batch.add(rg::topk(dt, {2, 20000}, 1, 5, largest), name_of(OpKind::TopK, dt, "selection"));
    }
  batch.compile();
}

TEST_CASE("normalization kernels compile", "[emit]") {
  Batch batch;
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64}) {
    batch.add(rg::layer_norm(dt, {4, 768}, -1, true, true),
              name_of(OpKind::LayerNormalization, dt));
    batch.add(rg::layer_norm(dt, {2, 3, 4}, 1, false, false),
              name_of(OpKind::LayerNormalization, dt, "axis 1"));
    batch.add(rg::layer_norm(dt, {2, 4096}, -1, true, true, 11),
              name_of(OpKind::LayerNormalization, dt, "stash double"));
    batch.add(rg::channel_norm(OpKind::InstanceNormalization, dt, {2, 3, 5, 5}),
              name_of(OpKind::InstanceNormalization, dt));
    batch.add(rg::channel_norm(OpKind::BatchNormalization, dt, {2, 3, 4, 4}),
              name_of(OpKind::BatchNormalization, dt));
    batch.add(rg::lrn(dt, {2, 5, 3, 3}, 3), name_of(OpKind::LRN, dt));
    batch.add(rg::mvn(dt, {2, 3, 4, 5}, {0, 2, 3}), name_of(OpKind::MeanVarianceNormalization, dt));
    batch.add(rg::mvn(dt, {2, 3, 4, 5}, {2, 3}), name_of(OpKind::MeanVarianceNormalization, dt));
  }
  batch.compile();
}

TEST_CASE("fused softmax + layer norm + reduce groups from the optimizer compile", "[emit]") {
  Batch batch;
  for (DType dt : {DType::kFloat32, DType::kFloat16}) {
    for (const Graph& g : {rg::fused_softmax(dt, {2, 4, 7, 64}), rg::fused_layer_norm(dt, {8, 768}),
                           rg::fused_reduce(dt, {4, 100})}) {
      NodeId n = kernel_node(g);
      REQUIRE(n >= 0);
      CHECK(g.node(n).op == OpKind::FusedGroup);
      auto k = generate(g);
      if (!k.ok()) FAIL(k.status().message());
      batch.add(g, "fused " + std::string(dtype_name(dt)));
    }
  }
  batch.compile();
}

TEST_CASE("launch layouts follow the row shape", "[emit]") {
  // Short contiguous rows: a sub-warp team (shuffles only, no barrier).
  auto k = generate(rg::softmax(OpKind::Softmax, DType::kFloat32, {64, 7}, -1));
  REQUIRE(k.ok());
  CHECK(k->source.find("__shfl_xor_sync") != std::string::npos);
  CHECK(k->source.find("__syncthreads") == std::string::npos);
  CHECK(k->block_y == 1);
  // 4096-element rows: one block of 512 threads per row, 8 elements each in registers.
  k = generate(rg::layer_norm(DType::kFloat16, {16, 4096}, -1, true, false));
  REQUIRE(k.ok());
  CHECK(k->threads_per_block == 512);
  CHECK(k->blocks == 16);
  CHECK(k->source.find("xs[8]") != std::string::npos);
  // 768: 128 threads, 6 elements each.
  k = generate(rg::softmax(OpKind::Softmax, DType::kFloat32, {32, 768}, -1));
  REQUIRE(k.ok());
  CHECK(k->threads_per_block == 128);
  CHECK(k->source.find("xs[6]") != std::string::npos);
  // A reduction over a leading axis: 2-D blocks, threads along x on the kept
  // dim; with only 8 blocks, 32 threads split each column.
  k = generate(
      rg::reduce(OpKind::ReduceSum, DType::kFloat32, {1000, 256}, std::vector<int64_t>{0}));
  REQUIRE(k.ok());
  CHECK(k->threads_per_block == 32);
  CHECK(k->block_y == 32);
  CHECK(k->blocks == 8);
  // Many columns: 256-thread blocks.
  k = generate(
      rg::reduce(OpKind::ReduceSum, DType::kFloat32, {64, 32768}, std::vector<int64_t>{0}));
  REQUIRE(k.ok());
  CHECK(k->block_y == 8);
  CHECK(k->blocks == 1024);
  // TopK: a bitonic sort in shared memory up to 96 KiB of keys and indices,
  // selection rounds beyond.
  k = generate(rg::topk(DType::kFloat32, {2, 8192}, 1, 5, true));
  REQUIRE(k.ok());
  CHECK(k->shared_bytes == 8192 * 8);
  CHECK(k->threads_per_block == 1024);
  k = generate(rg::topk(DType::kFloat32, {2, 10000}, 1, 5, true));
  REQUIRE(k.ok());
  CHECK(k->shared_bytes == 0);
}

TEST_CASE("loss kernels compile for every reduction mode", "[emit]") {
  Batch batch;
  for (OpKind op : {OpKind::NegativeLogLikelihoodLoss, OpKind::SoftmaxCrossEntropyLoss})
    for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kFloat64})
      for (const char* red : {"none", "sum", "mean"}) {
        batch.add(rg::loss(op, dt, {4, 5}, red, false, false), name_of(op, dt, red));
        batch.add(rg::loss(op, dt, {3, 7, 2, 3}, red, true, true, true), name_of(op, dt, red));
        batch.add(rg::loss(op, dt, {8, 1000}, red, true, false, true), name_of(op, dt, red));
      }
  batch.compile();
}

TEST_CASE("ops outside the family are clear errors", "[emit]") {
  testing::GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {3, 5});
  b.output(b.node(OpKind::Transpose, {x}, testing::attrs({{"perm", Attribute::of_ints({1, 0})}})));
  Graph g = b.build();
  auto k = emit::generate_reduction_kernel(g, kernel_node(g));
  REQUIRE_FALSE(k.ok());
  CHECK(k.status().code() == ErrorCode::kUnsupported);
  CHECK(k.status().message().find("Transpose") != std::string::npos);
}
