#include "tests/test_util.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "reference/executor.h"

namespace graphc::testing {

ir::Graph GraphBuilder::build() {
  ir::ShapeInferenceOptions opts;
  opts.evaluator = reference::constant_evaluator();
  Status st = ir::infer_shapes(graph_, opts);
  if (!st.ok()) throw std::runtime_error("shape inference failed: " + st.message());
  return graph_;
}

ir::AttributeMap attrs(std::initializer_list<std::pair<std::string, ir::Attribute>> items) {
  ir::AttributeMap m;
  for (const auto& [k, v] : items) m.set(k, v);
  return m;
}

ir::Tensor random_tensor(ir::DType dtype, const ir::Shape& shape, std::mt19937& rng, double lo,
                         double hi) {
  ir::Tensor t(dtype, shape);
  if (dtype == ir::DType::kBool) {
    std::bernoulli_distribution d(0.5);
    for (int64_t i = 0; i < t.numel(); ++i) t.set_i64(i, d(rng) ? 1 : 0);
  } else if (ir::is_float(dtype)) {
    std::uniform_real_distribution<double> d(lo, hi);
    for (int64_t i = 0; i < t.numel(); ++i) t.set_f64(i, d(rng));
  } else {
    std::uniform_int_distribution<int64_t> d(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
    for (int64_t i = 0; i < t.numel(); ++i) t.set_i64(i, d(rng));
  }
  return t;
}

std::mt19937& test_rng() {
  static std::mt19937 rng = [] {
    // Fresh inputs every run; GRAPHC_TEST_SEED replays the run a log names.
    auto seed = static_cast<uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    if (const char* fixed = std::getenv("GRAPHC_TEST_SEED"))
      seed = static_cast<uint32_t>(std::strtoul(fixed, nullptr, 10));
    std::fprintf(stderr, "test random seed: %u (GRAPHC_TEST_SEED replays it)\n", seed);
    return std::mt19937(seed);
  }();
  return rng;
}

std::map<std::string, ir::Tensor> random_inputs(const ir::Graph& g, std::mt19937& rng) {
  std::map<std::string, ir::Tensor> out;
  for (ir::ValueId id : g.inputs) {
    const auto& v = g.value(id);
    out[v.name] = random_tensor(v.dtype, v.shape, rng);
  }
  return out;
}

double max_abs_diff(const ir::Tensor& a, const ir::Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape())
    return std::numeric_limits<double>::infinity();
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::fabs(a.get_f64(i) - b.get_f64(i)));
  return m;
}

std::string source_path(const std::string& relative) {
  // The environment wins: test binaries built here also run from a copy of
  // the repository on the GPU machine.
  const char* env = std::getenv("GRAPHC_SOURCE_DIR");
  return std::string(env && *env ? env : GRAPHC_SOURCE_DIR) + "/" + relative;
}

}  // namespace graphc::testing

namespace graphc::testing {
double max_output_diff(const ir::Graph& before, const ir::Graph& after, std::mt19937& rng) {
  auto inputs = random_inputs(before, rng);
  auto a = reference::execute(before, inputs);
  if (!a.ok()) throw std::runtime_error("before: " + a.status().message());
  auto b = reference::execute(after, inputs);
  if (!b.ok()) throw std::runtime_error("after: " + b.status().message());
  if (a->size() != b->size()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (const auto& [name, t] : *a) {
    auto it = b->find(name);
    if (it == b->end()) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, max_abs_diff(t, it->second));
  }
  return worst;
}
}  // namespace graphc::testing
