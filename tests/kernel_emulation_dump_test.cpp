// Hidden tests (run only when named) that dump generated data-movement
// kernels with their inputs and expected outputs for the host emulator in
// scripts/kernel_emulator (see its README): a way to check the kernels' index
// math on a machine without a GPU.
//   GRAPHC_EMU_DIR=DIR build/tests/graphc_tests "[.dump-dm-kernels]"
//     the cases of tests/data_movement_cases.h (GRAPHC_EMU_LARGE=1: the large ones),
//     expected outputs from the reference executor;
//   GRAPHC_EMU_DIR=DIR GRAPHC_EMU_SUITES=DIR1:DIR2 build/tests/graphc_tests "[.dump-dm-node-tests]"
//     every ONNX node test whose optimized graph is one data-movement kernel,
//     expected outputs from the test data.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "driver/load_model.h"
#include "emit/gpu_kernels.h"
#include "emit/schedule.h"
#include "importer/importer.h"
#include "ir/shape_inference.h"
#include "optimizer/pass.h"
#include "tests/data_movement_cases.h"

using namespace graphc;
namespace fs = std::filesystem;

namespace {

fs::path emu_dir() {
  const char* d = std::getenv("GRAPHC_EMU_DIR");
  return d ? fs::path(d) : fs::path("/tmp/graphc-emu");
}

// Clears the numbered case folders a previous dump left (nothing else).
void clear_cases(const fs::path& root) {
  std::error_code ec;
  fs::create_directories(root, ec);
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string n = e.path().filename().string();
    if (!n.empty() && n.find_first_not_of("0123456789") == std::string::npos)
      fs::remove_all(e.path());
  }
}

void write_bin(const fs::path& p, const ir::Tensor& t) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(t.data()), static_cast<std::streamsize>(t.byte_size()));
}

std::set<ir::ValueId> const_inputs(const ir::Graph& g) {
  std::set<ir::ValueId> out;
  std::vector<ir::ValueId> stack;
  for (const auto& n : g.nodes) {
    uint32_t mask = ir::op_info(n.op).const_inputs;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if ((mask >> i) & 1u && n.inputs[i] != ir::kNoValue) stack.push_back(n.inputs[i]);
  }
  std::set<ir::ValueId> seen;
  while (!stack.empty()) {
    ir::ValueId v = stack.back();
    stack.pop_back();
    if (!seen.insert(v).second) continue;
    if (g.is_graph_input(v)) out.insert(v);
    ir::NodeId p = g.value(v).producer;
    if (p < 0) continue;
    if (g.node(p).op == ir::OpKind::Shape || g.node(p).op == ir::OpKind::Size) continue;
    for (ir::ValueId in : g.node(p).inputs)
      if (in != ir::kNoValue) stack.push_back(in);
  }
  return out;
}
ir::Tensor as_dtype(const ir::Tensor& t, ir::DType want) {
  if (t.dtype() == ir::DType::kUInt16 && want == ir::DType::kBFloat16) {
    ir::Tensor out(want, t.shape());
    if (t.byte_size()) std::memcpy(out.mutable_data(), t.data(), t.byte_size());
    return out;
  }
  return t;
}
}  // namespace

TEST_CASE("dump the data-movement test cases", "[.dump-dm-kernels]") {
  const fs::path root = emu_dir();
  clear_cases(root);
  int idx = 0;
  auto cases = testing::dmcases::all_cases();
  if (std::getenv("GRAPHC_EMU_LARGE")) cases = testing::dmcases::large_cases();
  for (auto& c : cases) {
    const ir::Graph& g = c.graph;
    std::map<std::string, ir::Tensor> feeds;
    for (ir::ValueId id : g.inputs)
      feeds[g.value(id).name] = testing::random_tensor(g.value(id).dtype, g.value(id).shape,
                                                       testing::test_rng(), c.lo, c.hi);
    auto want = reference::execute(g, feeds);
    REQUIRE(want.ok());
    auto s = emit::make_schedule(g);
    for (auto& k : s.kernels) {
      if (k.kind != emit::KernelKind::kDataMovement) continue;
      auto gen = emit::generate_data_movement_kernel(g, k.node);
      REQUIRE(gen.ok());
      fs::path dir = root / std::to_string(idx++);
      fs::create_directories(dir);
      std::ofstream(dir / "kernel.cu") << gen->source;
      std::ofstream meta(dir / "meta.txt");
      meta << c.name << "\n"
           << gen->entry << "\n"
           << gen->blocks << " " << gen->grid_y << " " << gen->grid_z << " "
           << gen->threads_per_block << " " << gen->block_y << " " << gen->block_z << "\n"
           << gen->args.size() << " " << c.rtol_f32 << "\n";
      bool ok = true;
      for (size_t a = 0; a < gen->args.size(); ++a) {
        const ir::Value& v = g.value(gen->args[a]);
        const ir::Node& n = g.node(k.node);
        bool is_out =
            std::find(n.outputs.begin(), n.outputs.end(), gen->args[a]) != n.outputs.end();
        ir::Tensor t;
        if (is_out) {
          if (!want->count(v.name)) {
            ok = false;
            break;
          }
          t = want->at(v.name);
        } else if (v.constant) {
          t = *v.constant;
        } else if (feeds.count(v.name)) {
          t = feeds.at(v.name);
        } else {
          ok = false;
          break;
        }
        write_bin(dir / ("arg" + std::to_string(a) + ".bin"), t);
        meta << (is_out ? "out " : "in ") << ir::dtype_name(t.dtype()) << " " << t.byte_size()
             << "\n";
      }
      if (!ok) {
        meta.close();
        fs::remove_all(dir);
      }
    }
  }
}

TEST_CASE("dump the data-movement kernels of ONNX node tests", "[.dump-dm-node-tests]") {
  const fs::path root = emu_dir();
  clear_cases(root);
  int idx = 0, skipped = 0;
  const char* suites_env = std::getenv("GRAPHC_EMU_SUITES");  // colon-separated
  std::string suites = suites_env ? suites_env : "/usr/share/libonnx-testdata/data/node";
  for (size_t pos = 0; pos <= suites.size();) {
    size_t end = suites.find(':', pos);
    if (end == std::string::npos) end = suites.size();
    const std::string suite = suites.substr(pos, end - pos);
    pos = end + 1;
    if (!fs::is_directory(suite)) continue;
    for (auto& e : fs::directory_iterator(suite)) {
      fs::path dir = e.path();
      auto model = importer::import_model_file((dir / "model.onnx").string());
      if (!model.ok()) continue;
      ir::Graph g = *model;
      fs::path set = dir / "test_data_set_0";
      if (!fs::is_directory(set)) continue;
      std::vector<ir::Tensor> inputs, outputs;
      bool bad = false;
      for (size_t i = 0; i < g.inputs.size(); ++i) {
        auto t = importer::read_tensor_proto_file(
            (set / ("input_" + std::to_string(i) + ".pb")).string());
        if (!t.ok()) {
          bad = true;
          break;
        }
        inputs.push_back(as_dtype(*t, g.value(g.inputs[i]).dtype));
      }
      for (size_t i = 0; i < g.outputs.size() && !bad; ++i) {
        auto t = importer::read_tensor_proto_file(
            (set / ("output_" + std::to_string(i) + ".pb")).string());
        if (!t.ok()) {
          bad = true;
          break;
        }
        outputs.push_back(as_dtype(*t, g.value(g.outputs[i]).dtype));
      }
      if (bad) continue;
      auto ci = const_inputs(g);
      std::map<std::string, ir::Shape> shapes;
      std::map<std::string, ir::Tensor> feeds;
      std::vector<ir::ValueId> rt;
      for (size_t i = 0; i < g.inputs.size(); ++i) {
        ir::Value& v = g.value(g.inputs[i]);
        if (inputs[i].dtype() != v.dtype) {
          bad = true;
          break;
        }
        if (ci.count(g.inputs[i])) {
          v.constant = inputs[i];
          v.shape = inputs[i].shape();
          v.has_shape = true;
          v.dim_names.clear();
          continue;
        }
        rt.push_back(g.inputs[i]);
        v.has_shape = false;
        v.shape.clear();
        v.dim_names.clear();
        shapes[v.name] = inputs[i].shape();
        feeds[v.name] = inputs[i];
      }
      if (bad) continue;
      g.inputs = rt;
      if (!ir::bind_input_shapes(g, shapes).ok() || !driver::infer_graph_shapes(g).ok()) continue;
      optimizer::PassContext ctx;
      if (!optimizer::run_passes(g, ctx).ok()) continue;
      auto s = emit::make_schedule(g);
      int kernels = 0, dm = -1;
      for (size_t k = 0; k < s.kernels.size(); ++k) {
        if (s.kernels[k].kind == emit::KernelKind::kView) continue;
        ++kernels;
        if (s.kernels[k].kind == emit::KernelKind::kDataMovement) dm = static_cast<int>(k);
      }
      if (dm < 0) continue;
      auto gen = emit::generate_data_movement_kernel(g, s.kernels[dm].node);
      if (!gen.ok()) {
        std::cout << "no kernel: " << dir.filename() << ": " << gen.status().message() << "\n";
        continue;
      }
      if (kernels != 1) {
        ++skipped;
        continue;
      }
      fs::path out = root / std::to_string(idx);
      fs::create_directories(out);
      std::ofstream(out / "kernel.cu") << gen->source;
      std::ofstream meta(out / "meta.txt");
      meta << dir.filename().string() << "\n"
           << gen->entry << "\n"
           << gen->blocks << " " << gen->grid_y << " " << gen->grid_z << " "
           << gen->threads_per_block << " " << gen->block_y << " " << gen->block_z << "\n"
           << gen->args.size() << " 1e-3\n";
      bool ok = true;
      for (size_t a = 0; a < gen->args.size(); ++a) {
        const ir::Value& v = g.value(gen->args[a]);
        ir::Tensor t;
        bool is_out = false;
        auto it = std::find(g.outputs.begin(), g.outputs.end(), gen->args[a]);
        if (it != g.outputs.end() &&
            a >= gen->args.size() - g.node(s.kernels[dm].node).outputs.size()) {
          is_out = true;
          t = outputs[it - g.outputs.begin()];
        } else if (v.constant)
          t = *v.constant;
        else if (feeds.count(v.name))
          t = feeds.at(v.name);
        else {
          ok = false;
          break;
        }
        write_bin(out / ("arg" + std::to_string(a) + ".bin"), t);
        meta << (is_out ? "out " : "in ") << ir::dtype_name(t.dtype()) << " " << t.byte_size()
             << "\n";
      }
      meta.close();
      if (!ok) {
        fs::remove_all(out);
        ++skipped;
        continue;
      }
      ++idx;
    }
  }
  std::cout << idx << " dumped, " << skipped << " skipped\n";
}
