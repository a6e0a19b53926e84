// `graphc_kernel_emulator qdq [FILTER]`: the QDQ linear layers of
// tests/qdq_cases.h through the default pipeline for the CUDA target (so
// fuse-qdq-matmul makes each an int8 tensor-core GEMM with the dequantize in
// its epilogue), emulated on the host against the reference executor on the
// unoptimized QDQ graph, in float32 and with --precision fp16.
#include "tests/emu/qdq_emu.h"

#include <iostream>

#include "optimizer/pass.h"
#include "reference/executor.h"
#include "tests/cuda_pass_context.h"
#include "tests/emu/emulator_support.h"
#include "tests/qdq_cases.h"

namespace graphc::emu {

namespace {

// "" when the run matches; else what went wrong.
std::string run_case(const testing::QdqCase& c, optimizer::Precision precision) {
  const ir::Graph g = testing::build_qdq_graph(c);
  std::mt19937 rng(17);
  const Outputs feeds = testing::qdq_inputs(g, rng);
  auto want = reference::execute(g, feeds);
  if (!want.ok()) return "reference: " + want.status().message();
  ir::Graph opt = g;
  optimizer::PassContext ctx = testing::cuda_pass_context();
  ctx.int8_gemm = true;  // off in graphc build by default (optimizer/pass.h)
  ctx.precision = precision;
  Status st = optimizer::run_passes(opt, ctx);
  if (!st.ok()) return "passes: " + st.message();
  bool int8_gemm = false;
  for (const ir::Node& n : opt.nodes)
    if (!n.dead && n.body)
      for (const ir::Node& inner : n.body->nodes) int8_gemm |= inner.op == ir::OpKind::MatMulInteger;
  if (!int8_gemm) return "no fused int8 GEMM (MatMulInteger) in the optimized graph";
  auto plan = emit::lower_for_gpu(opt, generated_gemms());
  if (!plan.ok()) return "lowering: " + plan.status().message();
  auto got = run_plan(*plan, opt, {}, feeds);
  if (!got.ok()) return "emulation: " + got.status().message();
  for (const auto& [name, t] : *want) {
    if (precision == optimizer::Precision::kFp32) {
      std::string d = testing::check_qdq_outputs(c, t, got->at(name));
      if (!d.empty()) return name + ": " + d;
    } else {
      // fp16 rounds the epilogue's float values: 1e-2 of the output's peak.
      double peak = 0, worst = 0;
      for (int64_t i = 0; i < t.numel(); ++i) peak = std::max(peak, std::fabs(t.get_f64(i)));
      for (int64_t i = 0; i < t.numel(); ++i)
        worst = std::max(worst, std::fabs(t.get_f64(i) - got->at(name).get_f64(i)));
      if (!(worst <= 1e-2 * peak + 0.0201))
        return name + ": fp16 max |diff| " + std::to_string(worst) + " of peak " + std::to_string(peak);
    }
  }
  return "";
}

}  // namespace

int run_qdq_cases(const std::string& filter) {
  int passed = 0, failed = 0;
  for (const auto& c : testing::qdq_cases()) {
    if (!filter.empty() && c.label.find(filter) == std::string::npos) continue;
    for (auto [tag, precision] : {std::pair{"fp32", optimizer::Precision::kFp32},
                                  std::pair{"fp16", optimizer::Precision::kFp16}}) {
      const std::string r = run_case(c, precision);
      std::cout << (r.empty() ? "PASS " : "FAIL ") << c.label << " (" << tag << ")"
                << (r.empty() ? "" : ": " + r) << std::endl;
      (r.empty() ? passed : failed)++;
    }
  }
  std::cout << passed << " passed, " << failed << " failed\n";
  return failed || passed == 0 ? 1 : 0;
}

}  // namespace graphc::emu
