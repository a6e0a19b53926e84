// graphc_kernel_emulator: runs the GPU plan of a graph (emit::lower_for_gpu)
// on the host, compiling each generated kernel as C++ against
// cuda_host_shim.h, and compares the outputs with the reference executor or
// with ONNX test data. For checking kernel index math and ONNX semantics on a
// machine without a GPU; slow (one host thread per CUDA thread), so keep
// shapes small. Not a substitute for the GPU tests: numerics, alignment,
// register limits and timing are the GPU's own.
//
//   graphc_kernel_emulator cases [FILTER]  every case of tests/pool_contraction_cases.h,
//                                          tests/depthwise_cases.h, tests/mma_gemm_cases.h
//                                          and tests/data_movement_cases.h
//   graphc_kernel_emulator onnx CASE_DIR... ONNX node tests (test_data_set_0)
//   graphc_kernel_emulator model FILE.onnx [NAME:DxD...]  random inputs vs the reference
//   graphc_kernel_emulator qdq [FILTER]    QDQ linear layers as int8 GEMMs vs the reference
//   graphc_kernel_emulator q8 [FILTER]     8-bit elementwise kernels (tests/q8_elementwise_cases.h)
//   graphc_kernel_emulator qdq-conv [FILTER]   QDQ convs (and ConvInteger/QLinearConv) as int8 convs
//   graphc_kernel_emulator qdq-conv-model FILE.onnx   a QDQ model's int8 engine vs the reference
//   graphc_kernel_emulator index-map [FILTER]  tests/index_map_cases.h through the default
//                                          pipeline (fuse-index-maps) vs the reference on the
//                                          unoptimized graph
//   graphc_kernel_emulator qdq-model MODEL IN_DIR OUT_DIR [CONFIG...]   a QDQ model's outputs
//                                          per int8 build configuration (reference executor)
//   graphc_kernel_emulator range [FILTER]  engines for a shape range (tests/emu/range_cases.cpp)
//                                          at every check point and more, vs the reference
//   graphc_kernel_emulator range-onnx MIN_PASSED DIR...  node tests with run-time sizes
//   graphc_kernel_emulator range-attention MIN_PASSED DIR...  its Attention tests, last dims fixed
//   graphc_kernel_emulator loops [FILTER]  tests/loop_graphs.h (Loops on a run-time count or
//                                          condition: control kernel + body, driven from the
//                                          host) at each case's trip counts vs the reference
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <tuple>

#include "cmd/run_support.h"
#include "driver/load_model.h"
#include "emit/cuda/codegen_util.h"
#include "emit/plan/gpu_plan.h"
#include "importer/importer.h"
#include "ir/shape_inference.h"
#include "tests/data_movement_cases.h"
#include "tests/depthwise_cases.h"
#include "tests/index_map_cases.h"
#include "tests/loop_graphs.h"
#include "tests/norm_sample_cases.h"
#include "tests/emu/narrow_conversion_emu.h"
#include "tests/emu/emulator_support.h"
#include "tests/emu/q8_elementwise_emu.h"
#include "tests/emu/qdq_emu.h"
#include "tests/emu/range_cases.h"
#include "tests/mma_gemm_cases.h"
#include "tests/pool_contraction_cases.h"
#include "tests/signal_cases.h"

using namespace graphc;
namespace fs = std::filesystem;

namespace {

using emu::compare;
using emu::generated_gemms;
using emu::load_module;
using emu::Outputs;

Expected<Outputs> emulate(const ir::Graph& g, const Outputs& feeds) {
  ASSIGN_OR_RETURN(emit::GpuPlan plan, emit::lower_for_gpu(g, generated_gemms()));
  return emu::run_plan(plan, g, {}, feeds);
}

bool check_against_reference(const std::string& label, const ir::Graph& g, double lo, double hi,
                             double rtol_f32, double half_atol) {
  Outputs feeds;
  for (ir::ValueId id : g.inputs)
    feeds[g.value(id).name] =
        testing::random_tensor(g.value(id).dtype, g.value(id).shape, testing::test_rng(), lo, hi);
  auto want = reference::execute(g, feeds);
  auto got = emulate(g, feeds);
  if (!want.ok() || !got.ok()) {
    std::cout << "FAIL " << label << ": "
              << (want.ok() ? got.status().message() : want.status().message()) << "\n";
    return false;
  }
  bool ok = true;
  for (const auto& [name, t] : *want) {
    const std::string diff = compare(t, got->at(name), rtol_f32, half_atol);
    if (!diff.empty()) {
      std::cout << "  " << name << ": " << diff << "\n";
      ok = false;
    }
  }
  std::cout << (ok ? "PASS " : "FAIL ") << label << std::endl;
  return ok;
}

int run_cases(const std::string& filter) {
  int failed = 0, passed = 0;
  std::vector<testing::KernelCase> cases = testing::all_kernel_cases();
  for (auto& c : testing::depthwise_cases()) cases.push_back(std::move(c));
  for (auto& c : testing::mma_gemm_cases()) cases.push_back(std::move(c));
  for (const auto& c : cases) {
    if (!filter.empty() && c.label.find(filter) == std::string::npos) continue;
    (check_against_reference(c.label, c.build(), -c.range, c.range, c.rtol_f32, c.half_atol)
         ? passed
         : failed)++;
  }
  std::vector<testing::dmcases::Case> dm = testing::dmcases::all_cases();
  for (auto& c : testing::nscases::all_cases()) dm.push_back(std::move(c));
  for (auto& c : testing::dmcases::all_signal_cases()) dm.push_back(std::move(c));
  for (const auto& c : dm) {
    if (!filter.empty() && c.name.find(filter) == std::string::npos) continue;
    (check_against_reference(c.name, c.graph, c.lo, c.hi, c.rtol_f32, c.half_atol) ? passed
                                                                                   : failed)++;
  }
  std::cout << passed << " passed, " << failed << " failed\n";
  return failed ? 1 : 0;
}

// Every case of tests/index_map_cases.h optimized by the default pipeline
// (its chains become index-map kernels), emulated, against the reference
// executor on the graph as built. Pure data movement must match exactly.
int run_index_map_cases(const std::string& filter) {
  int failed = 0, passed = 0;
  for (const auto& c : testing::imcases::all_cases()) {
    if (!filter.empty() && c.name.find(filter) == std::string::npos) continue;
    ir::Graph g = c.graph;
    optimizer::PassContext ctx;
    Status st = optimizer::run_passes(g, ctx);
    Outputs feeds;
    for (ir::ValueId id : c.graph.inputs)
      feeds[c.graph.value(id).name] = testing::random_tensor(
          c.graph.value(id).dtype, c.graph.value(id).shape, testing::test_rng(), c.lo, c.hi);
    auto want = reference::execute(c.graph, feeds);
    auto got = st.ok() ? emulate(g, feeds) : Expected<Outputs>(st);
    bool ok = want.ok() && got.ok() && ctx.counters["fuse-index-maps: groups"] >= 1;
    if (!want.ok() || !got.ok())
      std::cout << "  " << (want.ok() ? got.status().message() : want.status().message()) << "\n";
    for (const auto& [name, t] : want.ok() && got.ok() ? *want : Outputs{}) {
      const std::string diff = compare(t, got->at(name), c.rtol_f32, c.half_atol);
      if (!diff.empty()) {
        std::cout << "  " << name << ": " << diff << "\n";
        ok = false;
      }
    }
    std::cout << (ok ? "PASS " : "FAIL ") << c.name << std::endl;
    (ok ? passed : failed)++;
  }
  std::cout << passed << " passed, " << failed << " failed\n";
  return failed ? 1 : 0;
}

// Graph inputs read directly by an input slot that must be a build-time
// constant (Col2Im's image_shape, Reshape's shape ...): bound to the test
// data, as graphc conformance does (a user compiling for static shapes would).
std::set<ir::ValueId> build_time_inputs(const ir::Graph& g) {
  std::set<ir::ValueId> out;
  for (const auto& n : g.nodes) {
    const uint32_t mask = ir::op_info(n.op).const_inputs;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if ((mask >> i) & 1u && n.inputs[i] != ir::kNoValue && g.is_graph_input(n.inputs[i]))
        out.insert(n.inputs[i]);
  }
  return out;
}

// An ONNX node test: every input bound to its data's shape (or its value,
// for build-time inputs), the default pipeline, the emulated plan against
// output_N.pb (rtol 1e-3, atol 1e-4).
std::string run_onnx_case(const fs::path& dir) {
  auto model = importer::import_model_file((dir / "model.onnx").string());
  if (!model.ok()) return "skip: " + model.status().message();
  ir::Graph g = *model;
  const fs::path set = dir / "test_data_set_0";
  Outputs feeds;
  std::map<std::string, ir::Shape> shapes;
  const std::set<ir::ValueId> fixed = build_time_inputs(g);
  std::vector<ir::ValueId> run_time_inputs;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    auto t = importer::read_tensor_proto_file((set / fmt::format("input_{}.pb", i)).string());
    if (!t.ok()) return "fail: " + t.status().message();
    ir::Value& v = g.value(g.inputs[i]);
    if (fixed.count(g.inputs[i]) && t->dtype() == v.dtype) {
      v.constant = *t;
      v.shape = t->shape();
      v.has_shape = true;
      v.dim_names.clear();
      continue;
    }
    run_time_inputs.push_back(g.inputs[i]);
    v.has_shape = false;
    v.shape.clear();
    v.dim_names.clear();
    shapes[v.name] = t->shape();
    feeds[v.name] = *t;
  }
  g.inputs = run_time_inputs;
  Status st = ir::bind_input_shapes(g, shapes);
  if (st.ok()) st = driver::infer_graph_shapes(g);
  optimizer::PassContext ctx;
  if (st.ok()) st = optimizer::run_passes(g, ctx);
  if (!st.ok()) return "skip: " + st.message();
  auto got = emulate(g, feeds);
  if (!got.ok()) return "skip: " + got.status().message();
  for (size_t o = 0; o < g.outputs.size(); ++o) {
    auto want = importer::read_tensor_proto_file((set / fmt::format("output_{}.pb", o)).string());
    if (!want.ok()) return "fail: " + want.status().message();
    const std::string diff = compare(*want, got->at(g.value(g.outputs[o]).name), 1e-3, 1e-3);
    if (!diff.empty()) return fmt::format("fail: output {}: {}", o, diff);
  }
  return "";
}

// NAME:DxD arguments after the model file (argv[3]...).
Expected<driver::LoadOptions> shape_flags(int argc, char** argv) {
  driver::LoadOptions load;
  for (int a = 3; a < argc; ++a) {
    ASSIGN_OR_RETURN(auto s, driver::parse_shape_flag(argv[a]));
    load.input_shapes[s.first] = s.second;
  }
  return load;
}

// `precision FILE [NAME:DxD...]`: the reference executor on the model optimized
// for fp32 and for --precision fp16 / bf16 (every intermediate rounded to that
// dtype, as an engine stores it), on the same standard-normal inputs: the
// relative L2 error precision alone costs, measured without a GPU. Exit 1
// above the bounds: fp16 1e-2 (the real-model bound, docs/reports/
// real-models.md), bf16 5e-2 (its mantissa is 3 bits shorter: 8x fp16's).
int run_precision(int argc, char** argv) {
  auto load = shape_flags(argc, argv);
  if (!load.ok()) {
    std::cerr << load.status().message() << "\n";
    return 2;
  }
  auto optimized = [&](optimizer::Precision precision) -> Expected<ir::Graph> {
    ASSIGN_OR_RETURN(ir::Graph g, driver::load_model(argv[2], *load));
    optimizer::PassContext ctx;
    ctx.precision = precision;
    RETURN_IF_ERROR(optimizer::run_passes(g, ctx));
    return g;
  };
  auto base = optimized(optimizer::Precision::kFp32);
  if (!base.ok()) {
    std::cerr << base.status().message() << "\n";
    return 2;
  }
  Outputs feeds;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  for (ir::ValueId id : base->inputs) {
    const ir::Value& v = base->value(id);
    ir::Tensor t(v.dtype, v.shape);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.set_f64(i, ir::is_float(v.dtype) ? normal(rng) : static_cast<double>(rng() % 1000));
    feeds[v.name] = std::move(t);
  }
  auto want = reference::execute(*base, feeds);
  if (!want.ok()) {
    std::cerr << want.status().message() << "\n";
    return 2;
  }
  int status = 0;
  for (auto [name, precision, bound] : {std::tuple{"fp16", optimizer::Precision::kFp16, 1e-2},
                                        std::tuple{"bf16", optimizer::Precision::kBf16, 5e-2}}) {
    auto g = optimized(precision);
    auto got = g.ok() ? reference::execute(*g, feeds) : Expected<Outputs>(g.status());
    if (!got.ok()) {
      std::cout << name << ": " << got.status().message() << "\n";
      status = 1;
      continue;
    }
    for (const auto& [out, t] : *want) {
      // graphc run --check's comparison: relative L2, NaN-aware.
      auto c = cli::compare_output(out, got->at(out), t, bound);
      if (!c.ok()) {
        std::cout << name << " " << out << ": " << c.status().message() << "\n";
        status = 1;
        continue;
      }
      const bool ok = c->ok && c->rel_l2 < bound;
      std::cout << fmt::format("{} {}: relative L2 {:.3e} against fp32 ({} {:g})", name, out,
                               c->rel_l2, ok ? "below" : "ABOVE", bound)
                << std::endl;
      if (!ok) status = 1;
    }
  }
  return status;
}

}  // namespace

// Loops on a run-time trip count or condition through the default pipeline
// (optimize-loop-bodies), emulated with the control kernel driving each loop
// from the host, against the reference executor on the graph as built, at
// every trip count of the case. fp32 within 1e-4 (|want| + 1) (the host's
// float arithmetic against the reference's double, over up to 60 iterations).
int run_loop_cases(const std::string& filter) {
  int failed = 0, passed = 0;
  for (const auto& c : testing::loop_cases()) {
    if (!filter.empty() && c.name.find(filter) == std::string::npos) continue;
    ir::Graph g = c.graph;
    optimizer::PassContext ctx;
    Status st = optimizer::run_passes(g, ctx);
    for (int64_t count : c.counts) {
      const Outputs feeds = testing::loop_feeds(c, count);
      auto want = reference::execute(c.graph, feeds);
      auto got = st.ok() ? emulate(g, feeds) : Expected<Outputs>(st);
      bool ok = want.ok() && got.ok();
      if (!ok)
        std::cout << "  " << (want.ok() ? got.status().message() : want.status().message()) << "\n";
      for (const auto& [name, t] : ok ? *want : Outputs{}) {
        const std::string diff = compare(t, got->at(name), 1e-4, 0);
        if (!diff.empty()) {
          std::cout << "  " << name << ": " << diff << "\n";
          ok = false;
        }
      }
      std::cout << (ok ? "PASS " : "FAIL ") << c.name << " at " << c.count_input << " = " << count
                << "\n";
      (ok ? passed : failed)++;
    }
  }
  std::cout << passed << " passed, " << failed << " failed\n";
  return failed == 0 && passed > 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "cases") return run_cases(argc > 2 ? argv[2] : "");
  if (mode == "range") return emu::run_range_cases(argc > 2 ? argv[2] : "");
  if (mode == "qdq") return emu::run_qdq_cases(argc > 2 ? argv[2] : "");
  if (mode == "qdq-conv") return emu::run_qdq_conv_cases(argc > 2 ? argv[2] : "");
  if (mode == "qdq-conv-model" && argc > 2) return emu::run_qdq_conv_model(argv[2]);
  if (mode == "index-map") return run_index_map_cases(argc > 2 ? argv[2] : "");
  if (mode == "loops") return run_loop_cases(argc > 2 ? argv[2] : "");
  if (mode == "qdq-model") return emu::run_qdq_model(argc, argv);
  if (mode == "narrow") return emu::run_narrow_conversions();
  if (mode == "q8") return emu::run_q8_cases(argc > 2 ? argv[2] : "");
  if ((mode == "range-onnx" || mode == "range-attention") && argc > 3) {
    // range-onnx MIN_PASSED CASE_DIR... (a folder of case folders is expanded);
    // range-attention: its Attention cases (test_attention_*, not the
    // _expanded ones) with each input's last dim fixed.
    const bool attention = mode == "range-attention";
    auto wanted = [&](const fs::path& p) {
      const std::string n = p.filename().string();
      return !attention || (n.rfind("test_attention", 0) == 0 &&
                            !(n.size() > 9 && n.compare(n.size() - 9, 9, "_expanded") == 0));
    };
    std::vector<std::string> dirs;
    for (int a = 3; a < argc; ++a) {
      if (fs::exists(fs::path(argv[a]) / "model.onnx")) {
        dirs.push_back(argv[a]);
        continue;
      }
      std::vector<std::string> found;
      for (const auto& e : fs::directory_iterator(argv[a]))
        if (fs::exists(e.path() / "model.onnx") && wanted(e.path())) found.push_back(e.path().string());
      std::sort(found.begin(), found.end());
      dirs.insert(dirs.end(), found.begin(), found.end());
    }
    return emu::run_range_onnx_cases(dirs, std::atoi(argv[2]), attention);
  }
  if (mode == "onnx") {
    int passed = 0, failed = 0, skipped = 0;
    for (int a = 2; a < argc; ++a) {
      const std::string r = run_onnx_case(argv[a]);
      const std::string name = fs::path(argv[a]).filename().string();
      if (r.empty())
        ++passed;
      else if (r.rfind("skip", 0) == 0)
        ++skipped;
      else
        ++failed;
      std::cout << (r.empty() ? "PASS " + name : name + ": " + r.substr(0, 300)) << std::endl;
    }
    std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
    return failed ? 1 : 0;
  }
  if (mode == "model" && argc > 2) {
    auto load = shape_flags(argc, argv);
    if (!load.ok()) {
      std::cerr << load.status().message() << "\n";
      return 2;
    }
    auto g = driver::load_model(argv[2], *load);
    optimizer::PassContext ctx;
    Status st = g.ok() ? optimizer::run_passes(*g, ctx) : g.status();
    if (!st.ok()) {
      std::cerr << st.message() << "\n";
      return 2;
    }
    return check_against_reference(argv[2], *g, -1, 1, 1e-3, 1e-3) ? 0 : 1;
  }
  if (mode == "precision" && argc > 2) return run_precision(argc, argv);
  std::cerr << "usage: graphc_kernel_emulator cases [FILTER] | range [FILTER] | qdq [FILTER] | qdq-conv [FILTER] | qdq-conv-model FILE | index-map [FILTER] | loops [FILTER] | onnx CASE_DIR... | model FILE "
               "[NAME:DxD...] | precision FILE [NAME:DxD...]\n";
  return 2;
}
