// An engine built in-process for this GPU (optimize, lower, NVRTC, serialize,
// parse, load through driver::load_engine as `graphc run` does), with fresh
// random inputs per binding. Shared by the runtime GPU tests. Header-only.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "driver/engine_build.h"
#include "driver/gpu_execute.h"
#include "optimizer/pass.h"
#include "reference/executor.h"
#include "runtime/engine.h"
#include "runtime/engine_loader.h"
#include "tests/test_util.h"

namespace graphc::testing {

struct BuiltEngine {
  ir::Graph original;               // before the optimizer: the reference executor runs it
  engine::EngineContents contents;  // what `graphc inspect` reads
  std::shared_ptr<runtime::Engine> engine;

  // Fresh random host inputs in [lo, hi], in binding order, with the same
  // values as tensors by name (for the reference executor).
  std::vector<std::string> random_inputs(std::mt19937& rng,
                                         std::map<std::string, ir::Tensor>* feeds = nullptr,
                                         double lo = -1, double hi = 1) const {
    std::vector<std::string> out;
    for (ir::ValueId id : original.inputs) {
      const ir::Value& v = original.value(id);
      ir::Tensor t = random_tensor(v.dtype, v.shape, rng, lo, hi);
      out.emplace_back(reinterpret_cast<const char*>(t.data()), t.byte_size());
      if (feeds) (*feeds)[v.name] = std::move(t);
    }
    return out;
  }
};

// Empty when every output (binding order after the inputs) matches the
// reference executor on `feeds`: |gpu - ref| <= rtol * (|ref| + scale), rtol
// 2^-8 for float16 (4 storage ulps: cuBLASLt and fused kernels round once
// where the reference rounds after every op), 1e-5 for float32; `scale`
// per output name (default 1): sqrt(K) for a K-term dot product's outputs.
inline std::string mismatch_vs_reference(const BuiltEngine& b,
                                         const std::map<std::string, ir::Tensor>& feeds,
                                         const std::vector<std::string>& outputs,
                                         const std::map<std::string, double>& scale = {});

inline BuiltEngine build_engine_for_gpu(ir::Graph original, target::GemmMode gemm,
                                        target::ConvMode conv = target::ConvMode::kAuto) {
  BuiltEngine b;
  b.original = original;
  ir::Graph g = std::move(original);
  optimizer::PassContext pc;
  REQUIRE(optimizer::run_passes(g, pc).ok());
  auto arch = driver::device_arch();
  REQUIRE(arch.ok());
  driver::BuildOptions opts;
  opts.archs = {*arch};
  opts.lower.gemm.mode = gemm;
  opts.lower.conv.mode = conv;
  opts.compile.cache_dir = emit::default_cache_dir();
  auto built = driver::build_engine(g, opts);
  INFO((built.ok() ? "" : built.status().message()));
  REQUIRE(built.ok());
  // Through the bytes, as an engine file would be read.
  auto bytes = engine::serialize_engine(*built);
  REQUIRE(bytes.ok());
  auto parsed = engine::parse_engine(*bytes);
  REQUIRE(parsed.ok());
  b.contents = std::move(*parsed);
  auto loaded = runtime::load_engine(b.contents);
  INFO((loaded.ok() ? "" : loaded.status().message()));
  REQUIRE(loaded.ok());
  b.engine = *loaded;
  return b;
}

// y = gelu_tanh(x @ W + b) (one cuBLASLt call with its epilogue when `gemm`
// is kCublasLt), s = sigmoid(y) (a generated kernel), z = reshape(exp(x)) (a
// generated kernel and a copy: a view that is an output). x float16[m, k],
// W [k, n].
inline ir::Graph mixed_launch_graph(int64_t m = 64, int64_t k = 128, int64_t n = 256) {
  using ir::DType;
  using ir::OpKind;
  GraphBuilder g;
  auto x = g.input("x", DType::kFloat16, {m, k});
  auto w = g.constant("w", random_tensor(DType::kFloat16, {k, n}, test_rng(), -1, 1));
  auto bias = g.constant("b", random_tensor(DType::kFloat16, {n}, test_rng(), -1, 1));
  auto y = g.node(OpKind::MatMul, {x, w}, {}, 1, "/fc/MatMul");
  y = g.node(OpKind::Add, {y, bias}, {}, 1, "/fc/Add");
  y = g.node(OpKind::Gelu, {y}, attrs({{"approximate", ir::Attribute::of_string("tanh")}}), 1,
             "/fc/Gelu");
  auto s = g.node(OpKind::Sigmoid, {y}, {}, 1, "/head/Sigmoid");
  auto shape = g.constant("shape", ir::Tensor::from_i64({m * k}, {1}));
  auto z = g.node(OpKind::Reshape, {g.node(OpKind::Exp, {x}, {}, 1, "/aux/Exp"), shape}, {}, 1,
                  "/aux/Reshape");
  g.output(y);
  g.output(s);
  g.output(z);
  return g.build();
}

inline std::string mismatch_vs_reference(const BuiltEngine& b,
                                         const std::map<std::string, ir::Tensor>& feeds,
                                         const std::vector<std::string>& outputs,
                                         const std::map<std::string, double>& scale) {
  auto want = reference::execute(b.original, feeds);
  if (!want.ok()) return "reference: " + want.status().message();
  const std::vector<runtime::BindingInfo> bindings = runtime::engine_bindings(b.contents);
  const auto first_output = static_cast<size_t>(b.contents.manifest.inputs_size());
  if (outputs.size() != bindings.size() - first_output) return "wrong number of outputs";
  for (size_t o = 0; o < outputs.size(); ++o) {
    const std::string& name = bindings[first_output + o].name;
    const ir::Tensor& ref = want->at(name);
    if (outputs[o].size() != ref.byte_size())
      return fmt::format("{}: {} bytes, reference {}", name, outputs[o].size(), ref.byte_size());
    ir::Tensor got(ref.dtype(), ref.shape());
    std::memcpy(got.mutable_data(), outputs[o].data(), outputs[o].size());
    const double rtol = ref.dtype() == ir::DType::kFloat16 ? 1.0 / 256 : 1e-5;
    const double s = scale.count(name) ? scale.at(name) : 1.0;
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < ref.numel(); ++i) {
      const double a = ref.get_f64(i), g = got.get_f64(i);
      if (!(std::fabs(a - g) <= rtol * (std::fabs(a) + s)) && bad++ == 0) first = i;
    }
    if (bad)
      return fmt::format("{}: {} of {} differ; first at {}: reference {}, gpu {}", name, bad,
                         ref.numel(), first, ref.get_f64(first), got.get_f64(first));
  }
  return "";
}

}  // namespace graphc::testing
