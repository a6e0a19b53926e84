// `graphc_kernel_emulator qdq [FILTER]`: the QDQ linear layers of
// tests/qdq_cases.h through the default pipeline for the CUDA target (so
// fuse-qdq-matmul makes each an int8 tensor-core GEMM with the dequantize in
// its epilogue), emulated on the host against the reference executor on the
// unoptimized QDQ graph, in float32 and with --precision fp16; and with
// --int8-gemm's cuBLASLt lowering (GemmOptions::int8), where cuBLASLt takes
// the int8 GEMM (N, K multiples of 4: a host stand-in computes its exact
// int32 product) and the dequantize runs as the generated epilogue after it.
#include "tests/emu/qdq_emu.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <vector>

#include "driver/load_model.h"
#include "support/npy.h"

#include "optimizer/pass.h"
#include "reference/executor.h"
#include "tests/cuda_pass_context.h"
#include "tests/emu/emulator_support.h"
#include "tests/qdq_cases.h"

namespace graphc::emu {

namespace {

// "" when the run matches; else what went wrong. `cublaslt`: --int8-gemm's
// lowering (cuBLASLt where its IMMA kernels take the GEMM, then the epilogue).
std::string run_case(const testing::QdqCase& c, optimizer::Precision precision, bool cublaslt) {
  const ir::Graph g = testing::build_qdq_graph(c);
  std::mt19937 rng(17);
  const Outputs feeds = testing::qdq_inputs(g, rng);
  auto want = reference::execute(g, feeds);
  if (!want.ok()) return "reference: " + want.status().message();
  ir::Graph opt = g;
  emit::LowerOptions lower = generated_gemms();
  if (cublaslt) {
    lower.gemm.mode = target::GemmMode::kCublasLt;  // whatever the size
    lower.gemm.int8 = true;
  }
  optimizer::PassContext ctx = testing::cuda_pass_context(lower);
  ctx.int8_gemm = true;  // off in graphc build by default (optimizer/pass.h)
  ctx.precision = precision;
  Status st = optimizer::run_passes(opt, ctx);
  if (!st.ok()) return "passes: " + st.message();
  bool int8_gemm = false;
  for (const ir::Node& n : opt.nodes) {
    if (n.dead) continue;
    int8_gemm |= n.op == ir::OpKind::MatMulInteger;
    if (n.body)
      for (const ir::Node& inner : n.body->nodes) int8_gemm |= inner.op == ir::OpKind::MatMulInteger;
  }
  if (!int8_gemm) return "no int8 GEMM (MatMulInteger) in the optimized graph";
  auto plan = emit::lower_for_gpu(opt, lower);
  if (!plan.ok()) return "lowering: " + plan.status().message();
  size_t library_calls = 0;
  for (const auto& l : plan->launches) library_calls += l.library ? 1 : 0;
  const bool imma = cublaslt && c.n % 4 == 0 && c.k % 4 == 0;
  if (library_calls != (imma ? 1u : 0u))
    return fmt::format("{} library calls; cuBLASLt should take the int8 GEMM {} times",
                       library_calls, imma ? 1 : 0);
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
                                  std::pair{"fp16", optimizer::Precision::kFp16}})
      for (bool cublaslt : {false, true}) {
        const std::string r = run_case(c, precision, cublaslt);
        std::cout << (r.empty() ? "PASS " : "FAIL ") << c.label << " (" << tag
                  << (cublaslt ? ", --int8-gemm cuBLASLt" : ", generated") << ")"
                  << (r.empty() ? "" : ": " + r) << std::endl;
        (r.empty() ? passed : failed)++;
      }
  }
  std::cout << passed << " passed, " << failed << " failed\n";
  return failed || passed == 0 ? 1 : 0;
}

int run_qdq_model(int argc, char** argv) {
  if (argc < 5) {
    std::cerr << "usage: graphc_kernel_emulator qdq-model MODEL.onnx IN_DIR OUT_DIR [CONFIG...]\n";
    return 2;
  }
  namespace fs = std::filesystem;
  auto fail = [](const Status& st) {
    std::cerr << st.message() << "\n";
    return 2;
  };
  auto model = driver::load_model(argv[2]);
  if (!model.ok()) return fail(model.status());
  Outputs feeds;
  for (ir::ValueId id : model->inputs) {
    const ir::Value& v = model->value(id);
    auto a = npy::read_file((fs::path(argv[3]) / (v.name + ".npy")).string());
    if (!a.ok()) return fail(a.status());
    ir::Tensor t(static_cast<ir::DType>(a->dtype), a->shape);
    if (t.byte_size() != a->data.size())
      return fail(invalid_argument("input '{}': {} bytes", v.name, a->data.size()));
    std::memcpy(t.mutable_data(), a->data.data(), a->data.size());
    feeds[v.name] = std::move(t);
  }
  using optimizer::Int8Precision;
  using optimizer::Precision;
  struct Config {
    const char* name;
    Precision precision;
    bool int8_gemm;
    Int8Precision int8_precision;
    bool passes = true;
  };
  const Config configs[] = {
      // The model as it is: graphc's reference kernels on the QDQ graph as ONNX defines it.
      {"unoptimized", Precision::kFp32, false, Int8Precision::kSame, false},
      {"fp32", Precision::kFp32, false, Int8Precision::kSame},
      {"fp32_int8-gemm", Precision::kFp32, true, Int8Precision::kSame},
      {"fp16", Precision::kFp16, false, Int8Precision::kSame},
      {"fp16_int8-gemm", Precision::kFp16, true, Int8Precision::kSame},
      {"fp16_int8-precision-fp32", Precision::kFp16, false, Int8Precision::kFp32},
      {"fp16_int8-gemm_int8-precision-fp32", Precision::kFp16, true, Int8Precision::kFp32},
  };
  // Named configurations only, when some are named: each costs a whole
  // reference run (about 20 s for a 12-layer BERT-base on one core).
  const std::vector<std::string> wanted(argv + 5, argv + argc);
  for (const std::string& w : wanted)
    if (std::none_of(std::begin(configs), std::end(configs), [&](const Config& c) { return w == c.name; }))
      return fail(invalid_argument("unknown configuration '{}'", w));
  for (const Config& c : configs) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), c.name) == wanted.end()) continue;
    ir::Graph g = *model;
    optimizer::PassContext ctx = testing::cuda_pass_context();
    ctx.precision = c.precision;
    ctx.int8_gemm = c.int8_gemm;
    ctx.int8_precision = c.int8_precision;
    Status st = c.passes ? optimizer::run_passes(g, ctx) : Status::ok_status();
    if (!st.ok()) return fail(st);
    auto got = reference::execute(g, feeds);
    if (!got.ok()) return fail(got.status());
    const fs::path dir = fs::path(argv[4]) / c.name;
    fs::create_directories(dir);
    for (const auto& [name, t] : *got) {
      const ir::Tensor f = t.cast_to(ir::DType::kFloat32);
      auto bytes = npy::serialize(1, f.shape(),
                                  std::string_view(reinterpret_cast<const char*>(f.data()),
                                                   f.byte_size()));
      if (!bytes.ok()) return fail(bytes.status());
      std::ofstream((dir / (name + ".npy")).string(), std::ios::binary) << *bytes;
    }
    int64_t int8_gemms = 0;
    for (const ir::Node& n : g.nodes) {
      if (n.dead) continue;
      int8_gemms += n.op == ir::OpKind::MatMulInteger;
      if (n.body)
        for (const ir::Node& inner : n.body->nodes) int8_gemms += inner.op == ir::OpKind::MatMulInteger;
    }
    std::cout << c.name << ": " << int8_gemms << " int8 GEMMs" << std::endl;
  }
  return 0;
}

}  // namespace graphc::emu
