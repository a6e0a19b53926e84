// lower-recurrent and inline-control-flow on the CPU: the default pipeline
// (CUDA target) must leave no RNN/GRU/LSTM node behind and compute what the
// reference kernels compute on the original graph, on fresh random inputs.
// Tolerance |d| <= 1e-5 + 1e-4|ref|: the lowered graph rounds every op to
// float32, the reference kernel keeps its state in double.
#include <catch2/catch.hpp>
#include <cmath>

#include "ir/recurrent_params.h"
#include "optimizer/pass.h"
#include "reference/executor.h"
#include "tests/cuda_pass_context.h"
#include "tests/recurrent_graphs.h"

using namespace graphc;

namespace {

std::map<std::string, ir::Tensor> random_feeds(const ir::Graph& g) {
  std::map<std::string, ir::Tensor> feeds;
  for (ir::ValueId id : g.inputs)
    feeds[g.value(id).name] =
        testing::random_tensor(g.value(id).dtype, g.value(id).shape, testing::test_rng(), -1, 1);
  return feeds;
}

void require_close(const std::map<std::string, ir::Tensor>& want,
                   const std::map<std::string, ir::Tensor>& got) {
  for (const auto& [name, t] : want) {
    INFO("output " << name);
    REQUIRE(got.count(name));
    const ir::Tensor& o = got.at(name);
    REQUIRE(o.shape() == t.shape());
    for (int64_t i = 0; i < t.numel(); ++i) {
      INFO("element " << i);
      REQUIRE(std::fabs(o.get_f64(i) - t.get_f64(i)) <= 1e-5 + 1e-4 * std::fabs(t.get_f64(i)));
    }
  }
}

int64_t count_category(const ir::Graph& g, ir::OpCategory c) {
  int64_t n = 0;
  for (const auto& node : g.nodes) n += !node.dead && ir::op_info(node.op).category == c;
  return n;
}

}  // namespace

TEST_CASE("lower-recurrent: RNN/GRU/LSTM become MatMuls and gate chains that compute the same",
          "[optimizer][recurrent]") {
  for (const auto& c : testing::recurrent_cases()) {
    INFO(c.name);
    ir::Graph g = testing::recurrent_graph(c);
    auto feeds = random_feeds(g);
    auto want = reference::execute(g, feeds);
    REQUIRE(want.ok());
    ir::Graph opt = g;
    auto ctx = testing::cuda_pass_context();
    ctx.verify_after_all = true;
    Status st = optimizer::run_passes(opt, ctx);
    INFO(st.message());
    REQUIRE(st.ok());
    CHECK(count_category(opt, ir::OpCategory::kRecurrent) == 0);
    auto got = reference::execute(opt, feeds);
    INFO((got.ok() ? "" : got.status().message()));
    REQUIRE(got.ok());
    require_close(*want, *got);
  }
}

TEST_CASE("recurrent ops: bad attributes and shapes are errors naming what is wrong",
          "[shape][recurrent]") {
  testing::RecurrentCase c{"lstm", ir::OpKind::LSTM};
  ir::Graph g = testing::recurrent_graph(c);
  ir::AttributeMap bad_dir = g.nodes[0].attrs;
  bad_dir.set("direction", ir::Attribute::of_string("sideways"));
  std::vector<const ir::Shape*> shapes;
  std::vector<ir::DType> dtypes;
  for (ir::ValueId in : g.nodes[0].inputs) {
    shapes.push_back(in == ir::kNoValue ? nullptr : &g.value(in).shape);
    dtypes.push_back(in == ir::kNoValue ? ir::DType::kUndefined : g.value(in).dtype);
  }
  auto p = ir::recurrent_params(ir::OpKind::LSTM, bad_dir, shapes, dtypes);
  REQUIRE_FALSE(p.ok());
  CHECK_THAT(p.status().message(), Catch::Contains("sideways"));
  ir::AttributeMap bad_act = g.nodes[0].attrs;
  bad_act.set("activations", ir::Attribute::of_strings({"Sigmoid", "Tanh"}));
  p = ir::recurrent_params(ir::OpKind::LSTM, bad_act, shapes, dtypes);
  REQUIRE_FALSE(p.ok());
  CHECK_THAT(p.status().message(), Catch::Contains("lists 2 functions"));
  ir::Shape wrong_r{1, 24, 5};
  shapes[2] = &wrong_r;
  p = ir::recurrent_params(ir::OpKind::LSTM, g.nodes[0].attrs, shapes, dtypes);
  REQUIRE_FALSE(p.ok());
  CHECK_THAT(p.status().message(), Catch::Contains("input R"));
}
