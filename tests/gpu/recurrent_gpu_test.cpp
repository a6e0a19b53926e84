// RNN/GRU/LSTM on the GPU: the default pipeline lowers them (lower-recurrent:
// one input-projection GEMM, then a per-step GEMM and fused gate kernel) and
// the engine's result must match the reference kernels on the original graph,
// on fresh random inputs. Tolerance |d| <= 1e-5 + 1e-4|ref| (float32; CUDA's
// math differs from the host's by ulps, the reference keeps state in double).
#include <catch2/catch.hpp>
#include <cmath>

#include "driver/gpu_execute.h"
#include "optimizer/pass.h"
#include "reference/executor.h"
#include "tests/cuda_pass_context.h"
#include "tests/recurrent_graphs.h"

using namespace graphc;

TEST_CASE("lowered RNN/GRU/LSTM on the GPU match the reference kernels", "[gpu][recurrent]") {
  for (const auto& c : testing::recurrent_cases()) {
    INFO(c.name);
    ir::Graph g = testing::recurrent_graph(c);
    std::map<std::string, ir::Tensor> feeds;
    for (ir::ValueId id : g.inputs)
      feeds[g.value(id).name] = testing::random_tensor(g.value(id).dtype, g.value(id).shape,
                                                       testing::test_rng(), -1, 1);
    auto want = reference::execute(g, feeds);
    REQUIRE(want.ok());
    ir::Graph opt = g;
    auto ctx = testing::cuda_pass_context();
    REQUIRE(optimizer::run_passes(opt, ctx).ok());
    auto got = driver::execute_on_gpu(opt, feeds);
    INFO((got.ok() ? "" : got.status().message()));
    REQUIRE(got.ok());
    for (const auto& [name, t] : *want) {
      INFO("output " << name);
      REQUIRE(got->count(name));
      const ir::Tensor& o = got->at(name);
      REQUIRE(o.shape() == t.shape());
      int64_t bad = 0;
      for (int64_t i = 0; i < t.numel(); ++i)
        bad += !(std::fabs(o.get_f64(i) - t.get_f64(i)) <= 1e-5 + 1e-4 * std::fabs(t.get_f64(i)));
      CHECK(bad == 0);
    }
  }
}
