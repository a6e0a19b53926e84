// Reduction-family kernels on the GPU against the reference executor, on
// fresh random inputs: Reduce*, ArgMax/ArgMin, Softmax/LogSoftmax/Hardmax,
// TopK, LayerNormalization, InstanceNormalization, BatchNormalization, LRN,
// MeanVarianceNormalization, NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss; row lengths 1, 7, 32, 33, 768 and 4096 (sub-warp,
// warp and block teams, in registers or re-read), reductions over leading and
// middle axes (column teams), fp32 and fp16, integers, and fused groups.
//
// Tolerances (gpu_check.h): float32 |d| <= 1e-5 + 1e-4|ref| (the kernels
// accumulate in float where the reference uses double; inputs of sums are
// positive so no cancellation magnifies that), float16 one storage ulp
// (2^-10 relative) or 1e-5 absolute (tiny softmax outputs are fp16
// subnormals), integers, indices and Hardmax exact. Fused float16 groups get
// an extra absolute tolerance because the reference rounds every
// intermediate to float16 and the kernel does not (see each case).
#include <catch2/catch.hpp>

#include "tests/gpu/gpu_check.h"
#include "tests/reduction_graphs.h"

using namespace graphc;
using namespace graphc::ir;
namespace rg = graphc::testing::reduction_graphs;
using testing::check_gpu_matches_reference;

namespace {

const std::vector<int64_t> kRowLengths = {1, 7, 32, 33, 768, 4096};

const std::vector<OpKind> kReduceOps = {
    OpKind::ReduceSum,       OpKind::ReduceMean,     OpKind::ReduceMax, OpKind::ReduceMin,
    OpKind::ReduceProd,      OpKind::ReduceL1,       OpKind::ReduceL2,  OpKind::ReduceLogSum,
    OpKind::ReduceLogSumExp, OpKind::ReduceSumSquare};

std::string what(OpKind op, DType dt, const std::string& rest) {
  return std::string(op_name(op)) + " " + std::string(dtype_name(dt)) + " " + rest;
}

// Value range per op: positive for sums (no cancellation), near 1 for
// products (4096 factors stay finite).
std::pair<double, double> reduce_range(OpKind op) {
  if (op == OpKind::ReduceProd) return {0.95, 1.05};
  if (op == OpKind::ReduceLogSumExp || op == OpKind::ReduceMax || op == OpKind::ReduceMin ||
      op == OpKind::ReduceL1 || op == OpKind::ReduceL2 || op == OpKind::ReduceSumSquare)
    return {-2, 2};
  return {0.5, 2};
}

}  // namespace

TEST_CASE("Reduce* over the last axis on the GPU matches the reference", "[gpu]") {
  for (OpKind op : kReduceOps) {
    auto [lo, hi] = reduce_range(op);
    for (int64_t n : kRowLengths)
      check_gpu_matches_reference(rg::reduce(op, DType::kFloat32, {5, n}, std::vector<int64_t>{-1}),
                                  what(op, DType::kFloat32, "row " + std::to_string(n)), lo, hi);
    for (int64_t n : {7, 768, 4096})
      check_gpu_matches_reference(
          rg::reduce(op, DType::kFloat16, {3, n}, std::vector<int64_t>{1}, false),
          what(op, DType::kFloat16, "row " + std::to_string(n)), lo, hi);
  }
}

TEST_CASE("Reduce* over leading, middle and several axes on the GPU matches the reference",
          "[gpu]") {
  for (OpKind op : kReduceOps) {
    auto [lo, hi] = reduce_range(op);
    for (DType dt : {DType::kFloat32, DType::kFloat16}) {
      check_gpu_matches_reference(rg::reduce(op, dt, {768, 33}, std::vector<int64_t>{0}),
                                  what(op, dt, "leading axis"), lo, hi);
      check_gpu_matches_reference(rg::reduce(op, dt, {4, 33, 5}, std::vector<int64_t>{1}, false),
                                  what(op, dt, "middle axis"), lo, hi);
      check_gpu_matches_reference(rg::reduce(op, dt, {6, 7, 32}, std::vector<int64_t>{0, 2}),
                                  what(op, dt, "axes 0,2"), lo, hi);
      check_gpu_matches_reference(rg::reduce(op, dt, {3, 4, 5}, std::nullopt, false),
                                  what(op, dt, "all axes"), lo, hi);
    }
  }
  check_gpu_matches_reference(
      rg::reduce(OpKind::ReduceL1, DType::kFloat32, {4, 5}, std::vector<int64_t>{}, true, true),
      "noop_with_empty_axes");
}

TEST_CASE("integer Reduce* on the GPU match the reference exactly", "[gpu]") {
  for (DType dt : {DType::kInt32, DType::kInt64, DType::kInt8, DType::kUInt8})
    for (OpKind op : kReduceOps) {
      const double lo = is_unsigned_integer(dt) ? 0 : -50, hi = 50;
      check_gpu_matches_reference(rg::reduce(op, dt, {5, 37}, std::vector<int64_t>{-1}),
                                  what(op, dt, "rows"), lo, hi);
      check_gpu_matches_reference(rg::reduce(op, dt, {300, 6}, std::vector<int64_t>{0}),
                                  what(op, dt, "columns"), lo, hi);
    }
  for (OpKind op : {OpKind::ReduceMax, OpKind::ReduceMin})
    check_gpu_matches_reference(rg::reduce(op, DType::kBool, {5, 37}, std::vector<int64_t>{1}),
                                "bool");
}

TEST_CASE("ArgMax/ArgMin on the GPU match the reference, ties included", "[gpu]") {
  for (OpKind op : {OpKind::ArgMax, OpKind::ArgMin})
    for (bool last : {false, true}) {
      for (int64_t n : kRowLengths)
        check_gpu_matches_reference(rg::arg(op, DType::kFloat32, {4, n}, -1, true, last),
                                    what(op, DType::kFloat32, std::to_string(n)));
      for (int64_t axis : {0, 1, 2}) {
        check_gpu_matches_reference(rg::arg(op, DType::kFloat16, {40, 33, 6}, axis, false, last),
                                    what(op, DType::kFloat16, "axis " + std::to_string(axis)));
        // Few distinct values: many ties, so the first/last index rule matters.
        check_gpu_matches_reference(rg::arg(op, DType::kInt32, {40, 33, 6}, axis, true, last),
                                    what(op, DType::kInt32, "axis " + std::to_string(axis)), 0, 3);
      }
    }
}

TEST_CASE("Softmax, LogSoftmax and Hardmax on the GPU match the reference", "[gpu]") {
  for (OpKind op : {OpKind::Softmax, OpKind::LogSoftmax, OpKind::Hardmax})
    for (DType dt : {DType::kFloat32, DType::kFloat16}) {
      for (int64_t n : kRowLengths)
        check_gpu_matches_reference(rg::softmax(op, dt, {6, n}, -1),
                                    what(op, dt, "row " + std::to_string(n)), -4, 4);
      check_gpu_matches_reference(rg::softmax(op, dt, {4, 33, 5}, 1), what(op, dt, "middle"), -4,
                                  4);
      check_gpu_matches_reference(rg::softmax(op, dt, {768, 3}, 0), what(op, dt, "leading"), -4, 4);
      check_gpu_matches_reference(rg::softmax(op, dt, {2, 3, 4, 5}, 1, true),
                                  what(op, dt, "opset < 13"), -4, 4);
    }
  // Rows too long for registers (re-read from global memory).
  check_gpu_matches_reference(rg::softmax(OpKind::Softmax, DType::kFloat32, {2, 40000}, -1),
                              "Softmax row 40000", -4, 4);
}

TEST_CASE("TopK on the GPU matches the reference, tie order included", "[gpu]") {
  for (bool largest : {true, false}) {
    const std::string dir = largest ? " largest" : " smallest";
    for (int64_t n : {1, 7, 33, 768, 4096})
      check_gpu_matches_reference(
          rg::topk(DType::kFloat32, {3, n}, -1, std::min<int64_t>(n, 5), largest),
          "TopK float32 " + std::to_string(n) + dir);
    check_gpu_matches_reference(rg::topk(DType::kFloat32, {33, 4, 3}, 0, 33, largest),
                                "TopK axis 0, k = n" + dir);
    check_gpu_matches_reference(rg::topk(DType::kFloat16, {4, 300}, 1, 20, largest),
                                "TopK float16" + dir);
    check_gpu_matches_reference(rg::topk(DType::kInt32, {4, 100}, 1, 40, largest),
                                "TopK int32 ties" + dir, 0, 5);
    // Slices longer than the shared-memory sort: selection rounds.
    check_gpu_matches_reference(rg::topk(DType::kFloat32, {2, 20000}, 1, 7, largest),
                                "TopK selection" + dir);
    check_gpu_matches_reference(rg::topk(DType::kInt32, {2, 20000}, 1, 7, largest),
                                "TopK selection int ties" + dir, 0, 3);
  }
}

TEST_CASE("LayerNormalization on the GPU matches the reference", "[gpu]") {
  for (DType dt : {DType::kFloat32, DType::kFloat16}) {
    for (int64_t n : kRowLengths)
      check_gpu_matches_reference(rg::layer_norm(dt, {5, n}, -1, true, true),
                                  what(OpKind::LayerNormalization, dt, std::to_string(n)));
    check_gpu_matches_reference(rg::layer_norm(dt, {2, 3, 4}, 1, false, true),
                                what(OpKind::LayerNormalization, dt, "axis 1, no bias"));
  }
  check_gpu_matches_reference(rg::layer_norm(DType::kFloat32, {3, 768}, -1, true, true, 11),
                              "LayerNormalization stash_type double");
}

TEST_CASE("Instance/Batch/LRN/MeanVariance normalizations on the GPU match the reference",
          "[gpu]") {
  for (DType dt : {DType::kFloat32, DType::kFloat16}) {
    for (int64_t n : {7, 768, 4096})
      check_gpu_matches_reference(rg::channel_norm(OpKind::InstanceNormalization, dt, {2, 3, n}),
                                  what(OpKind::InstanceNormalization, dt, std::to_string(n)));
    // Positive inputs: input_var must be >= 0.
    check_gpu_matches_reference(rg::channel_norm(OpKind::BatchNormalization, dt, {2, 3, 5, 7}),
                                what(OpKind::BatchNormalization, dt, ""), 0.1, 2);
    check_gpu_matches_reference(rg::lrn(dt, {2, 5, 3, 3}, 3), what(OpKind::LRN, dt, "size 3"));
    check_gpu_matches_reference(rg::lrn(dt, {1, 16, 7, 7}, 4), what(OpKind::LRN, dt, "size 4"));
    check_gpu_matches_reference(rg::mvn(dt, {2, 3, 4, 5}, {0, 2, 3}),
                                what(OpKind::MeanVarianceNormalization, dt, "default axes"));
    check_gpu_matches_reference(rg::mvn(dt, {2, 3, 4, 5}, {2, 3}),
                                what(OpKind::MeanVarianceNormalization, dt, "axes 2,3"));
    check_gpu_matches_reference(rg::mvn(dt, {2, 30, 40}, {1}),
                                what(OpKind::MeanVarianceNormalization, dt, "axis 1"));
  }
}

TEST_CASE("fused reduction groups on the GPU match the reference", "[gpu]") {
  // fp16 extra absolute tolerances: the reference rounds the prologue to
  // float16 (half an ulp of |x * 0.125 + mask| <= 2.25 is 2^-10), which moves
  // a softmax output by at most ~2 * 2^-10 * p <= 2e-3; for layer norm the
  // rounded residual sum (<= 2^-9 at |x + res| <= 4) divided by the row's
  // standard deviation (~1.6) and scaled (|scale| <= 2) moves y by <= 3e-3;
  // the Exp prologue of the fused ReduceSum rounds once per element.
  for (DType dt : {DType::kFloat32, DType::kFloat16}) {
    const std::string d(dtype_name(dt));
    check_gpu_matches_reference(rg::fused_softmax(dt, {2, 4, 33, 64}), "fused softmax " + d, -2, 2,
                                4e-3);
    check_gpu_matches_reference(rg::fused_softmax(dt, {1, 2, 16, 768}), "fused softmax 768 " + d,
                                -2, 2, 4e-3);
    check_gpu_matches_reference(rg::fused_layer_norm(dt, {8, 768}), "fused layer norm " + d, -2, 2,
                                8e-3);
    check_gpu_matches_reference(rg::fused_layer_norm(dt, {4, 4096}), "fused layer norm 4096 " + d,
                                -2, 2, 8e-3);
    check_gpu_matches_reference(rg::fused_reduce(dt, {4, 100}), "fused reduce " + d, -1, 1, 0.1);
  }
}

TEST_CASE("NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss on the GPU match the reference",
          "[gpu]") {
  // Every input is drawn from [0, C - 1] so targets are valid classes
  // (ignore_index = 1 where set).
  for (OpKind op : {OpKind::NegativeLogLikelihoodLoss, OpKind::SoftmaxCrossEntropyLoss})
    for (const char* red : {"none", "sum", "mean"}) {
      const std::string w = std::string(op_name(op)) + " " + red;
      check_gpu_matches_reference(rg::loss(op, DType::kFloat32, {4, 5}, red, false, false),
                                  w + " [4,5]", 0, 4);
      check_gpu_matches_reference(
          rg::loss(op, DType::kFloat32, {3, 7, 2, 3}, red, true, true, true),
          w + " [3,7,2,3] weight ignore log_prob", 0, 6);
      check_gpu_matches_reference(rg::loss(op, DType::kFloat32, {8, 1000}, red, true, false, true),
                                  w + " 1000 classes", 0, 999);
      check_gpu_matches_reference(rg::loss(op, DType::kFloat32, {700, 3}, red, false, true, true),
                                  w + " 700 rows", 0, 2);
      check_gpu_matches_reference(rg::loss(op, DType::kFloat16, {6, 7, 5}, red, true, true, true),
                                  w + " float16", 0, 6);
    }
}
