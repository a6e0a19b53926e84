// `graphc_kernel_emulator q8 [FILTER]`: the 8-bit elementwise kernels of
// tests/q8_elementwise_cases.h (16-element vectors, float8 conversions in
// float or through the hardware cvt, float -> int8 in float), emulated on
// fresh random inputs against the reference executor.
#include "tests/emu/q8_elementwise_emu.h"

#include <algorithm>
#include <iostream>

#include "emit/cuda/cuda_elementwise.h"
#include "optimizer/pass.h"
#include "reference/executor.h"
#include "tests/cuda_pass_context.h"
#include "tests/emu/emulator_support.h"
#include "tests/q8_elementwise_cases.h"

namespace graphc::emu {

namespace {

// "" when the case passes; else what went wrong.
std::string run_case(const testing::Q8Case& c, const Outputs& feeds) {
  auto want = reference::execute(c.graph, feeds);
  if (!want.ok()) return "reference: " + want.status().message();
  ir::Graph opt = c.graph;
  optimizer::PassContext ctx = testing::cuda_pass_context();
  Status st = optimizer::run_passes(opt, ctx);
  if (!st.ok()) return "passes: " + st.message();
  int64_t width = 0;
  for (size_t i = 0; i < opt.nodes.size(); ++i) {
    const ir::Node& n = opt.nodes[i];
    if (n.dead || (n.op != ir::OpKind::FusedGroup && !ir::is_elementwise(n.op))) continue;
    if (n.op == ir::OpKind::FusedGroup && n.fusion != ir::FusionKind::kElementwise) continue;
    auto k = emit::generate_elementwise_kernel(opt, static_cast<ir::NodeId>(i));
    if (!k.ok()) return "kernel: " + k.status().message();
    width = std::max(width, k->vector_width);
  }
  if (width != c.vector_width)
    return "vector width " + std::to_string(width) + ", want " + std::to_string(c.vector_width);
  auto plan = emit::lower_for_gpu(opt, generated_gemms());
  if (!plan.ok()) return "lowering: " + plan.status().message();
  auto got = run_plan(*plan, opt, {}, feeds);
  if (!got.ok()) return "emulation: " + got.status().message();
  for (const auto& [name, t] : *want) {
    const std::string d = testing::check_q8_outputs(t, got->at(name));
    if (!d.empty()) return name + ": " + d;
  }
  return "";
}

}  // namespace

int run_q8_cases(const std::string& filter) {
  int passed = 0, failed = 0;
  std::vector<testing::Q8Case> cases = testing::q8_cases();
  cases.push_back(testing::q8_sweep_case(8));  // 8192 floats: the sweep's edges and some random
  for (const auto& c : cases) {
    if (!filter.empty() && c.label.find(filter) == std::string::npos) continue;
    Outputs feeds;
    if (c.label.rfind("float32 conversion sweep", 0) == 0) {
      const ir::Value& x = c.graph.value(c.graph.inputs[0]);
      feeds[x.name] = testing::q8_float_sweep(x.shape, testing::test_rng());
    } else {
      feeds = testing::q8_inputs(c, testing::test_rng());
    }
    const std::string r = run_case(c, feeds);
    std::cout << (r.empty() ? "PASS " : "FAIL ") << c.label << (r.empty() ? "" : ": " + r)
              << std::endl;
    (r.empty() ? passed : failed)++;
  }
  std::cout << passed << " passed, " << failed << " failed\n";
  return failed || passed == 0 ? 1 : 0;
}

}  // namespace graphc::emu
