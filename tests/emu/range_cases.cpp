#include "tests/emu/range_cases.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <vector>

#include "driver/load_model.h"
#include "driver/range_graph.h"
#include "importer/importer.h"
#include "ir/shape_inference.h"
#include "reference/executor.h"
#include "target/cuda/cuda_target.h"
#include "tests/emu/emulator_support.h"
#include "tests/emu/range_case.h"
#include "tests/onnx_builder.h"
#include "tests/test_util.h"

namespace graphc::emu {

namespace {

namespace fs = std::filesystem;

using onnx::TensorProto;
using testing::Dim;
using testing::OnnxModel;
using internal::RangeCase;
using internal::add_cnn_range_cases;
using internal::add_index_map_range_cases;

// A transformer's inputs: token ids of the tiny models' vocabulary, and an
// attention mask of ones with the last quarter of every row but the first
// padded (no row is all padding).
ir::Tensor token_input(const ir::Value& v, std::mt19937& rng) {
  ir::Tensor t(v.dtype, v.shape);
  const int64_t cols = v.shape.empty() ? 1 : v.shape.back();
  const bool mask = v.name.find("mask") != std::string::npos;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int64_t row = i / cols, col = i % cols;
    t.set_f64(i, mask ? (row > 0 && col >= cols - cols / 4 && col > 0 ? 0.0 : 1.0)
                      : static_cast<double>(2 + rng() % 98));
  }
  return t;
}

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * (static_cast<float>(i % 7) - 3.0f) + 0.25f;
  return v;
}

// ONNX Attention (opset 23) over batch x seq, one kernel built for the range:
// the flash kernel (float16) and the general kernel (float32), 4-D with a
// padding mask over the keys ([batch, 1, 1, seq]: bool for float16, additive
// for float32) and 3-D causal. Lengths cross the query and key tiles.
void add_attention_cases(std::vector<RangeCase>& out) {
  for (const bool half : {true, false}) {
    const auto dt = half ? TensorProto::FLOAT16 : TensorProto::FLOAT;
    const int64_t d = half ? 32 : 16;  // the flash kernel takes head dims from 32
    const std::string kernel = half ? "flash attention float16" : "general attention float32";
    const std::string qkv = fmt::format("1x2x1x{0}/2x2x8x{0}/3x2x70x{0}", d);
    out.push_back({kernel + ", padding mask over the keys (batch x seq)",
                   fmt::format("q:{0},k:{0},v:{0},mask:1x1x1x1/2x1x1x8/3x1x1x70", qkv),
                   [=] {
                     OnnxModel m(23);
                     for (const char* x : {"q", "k", "v"})
                       m.input(x, dt, {Dim("batch"), int64_t{2}, Dim("seq"), d});
                     m.input("mask", half ? TensorProto::BOOL : dt,
                             {Dim("batch"), int64_t{1}, int64_t{1}, Dim("seq")});
                     m.node("Attention", {"q", "k", "v", "mask"}, {"y"}, "attn");
                     m.output("y", dt);
                     return m;
                   },
                   1e-4, 4e-3});
    out.push_back({kernel + ", causal, 3-D (batch x seq)",
                   fmt::format("q:1x1x{0}/2x8x{0}/3x70x{0},k:1x1x{0}/2x8x{0}/3x70x{0},"
                               "v:1x1x{0}/2x8x{0}/3x70x{0}",
                               2 * d),
                   [=] {
                     OnnxModel m(23);
                     for (const char* x : {"q", "k", "v"})
                       m.input(x, dt, {Dim("batch"), Dim("seq"), 2 * d});
                     auto* n = m.node("Attention", {"q", "k", "v"}, {"y"}, "attn");
                     testing::attr_int(n, "is_causal", 1);
                     testing::attr_int(n, "q_num_heads", 2);
                     testing::attr_int(n, "kv_num_heads", 2);
                     m.output("y", dt);
                     return m;
                   },
                   1e-4, 4e-3});
  }
}

std::vector<RangeCase> cases() {
  std::vector<RangeCase> out;
  // A fused chain with row-broadcast weights and a residual (a transformer
  // epilogue): x * scale + bias -> Gelu -> + x, over batch and sequence.
  out.push_back({"fused chain, row broadcast, residual (batch x seq)", "x:1x1x64/4x16x64/8x33x64",
                 [] {
                   OnnxModel m(17);
                   m.input("x", TensorProto::FLOAT, {Dim("batch"), Dim("seq"), int64_t{64}});
                   m.initializer(testing::float_tensor("scale", {64}, ramp(64, 0.3f)));
                   m.initializer(testing::float_tensor("bias", {64}, ramp(64, 0.1f)));
                   m.node("Mul", {"x", "scale"}, {"a"}, "scale");
                   m.node("Add", {"a", "bias"}, {"b"}, "bias");
                   m.node("Erf", {"b"}, {"e"}, "erf");
                   m.node("Mul", {"e", "b"}, {"g"}, "gate");
                   m.node("Add", {"g", "x"}, {"y"}, "residual");
                   m.output("y");
                   return m;
                 }});
  // Two inputs that share the batch dim by name; one broadcasts along seq
  // (a per-sequence scale) and the output is the full shape.
  out.push_back({"column broadcast between two inputs sharing 'batch'",
                 "x:1x1x8/2x5x8/6x17x8,s:1x1x1/2x1x1/6x1x1", [] {
                   OnnxModel m(17);
                   m.input("x", TensorProto::FLOAT, {Dim("batch"), Dim("seq"), int64_t{8}});
                   m.input("s", TensorProto::FLOAT, {Dim("batch"), int64_t{1}, int64_t{1}});
                   m.node("Div", {"x", "s"}, {"q"}, "div");
                   m.node("Sub", {"q", "x"}, {"y"}, "sub");
                   m.node("Abs", {"y"}, {"z"}, "abs");
                   m.output("z");
                   return m;
                 }});
  // An input whose dim broadcasts against another's varying dim: y[1, seq, 16]
  // against x[batch, seq, 1].
  out.push_back({"outer-product broadcast over two varying dims", "x:1x2x1/3x7x1/5x12x1,w:1x2x16/1x7x16/1x12x16",
                 [] {
                   OnnxModel m(17);
                   m.input("x", TensorProto::FLOAT, {Dim("batch"), Dim("seq"), int64_t{1}});
                   m.input("w", TensorProto::FLOAT, {int64_t{1}, Dim("seq"), int64_t{16}});
                   m.node("Mul", {"x", "w"}, {"p"}, "outer");
                   m.node("Tanh", {"p"}, {"y"}, "tanh");
                   m.output("y");
                   return m;
                 }});
  // float16, vectorised 8 wide (the last dim is a constant multiple of 8):
  // SiLU with a bias.
  out.push_back({"float16 SiLU, vectorised, over batch", "x:1x96/5x96/9x96",
                 [] {
                   OnnxModel m(17);
                   m.input("x", TensorProto::FLOAT16, {Dim("batch"), int64_t{96}});
                   m.node("Sigmoid", {"x"}, {"sg"}, "sigmoid");
                   m.node("Mul", {"x", "sg"}, {"y"}, "silu");
                   m.output("y", TensorProto::FLOAT16);
                   return m;
                 },
                 1e-5, 1e-3});
  // A varying last dim: no vector width divides it, index math all at run time.
  out.push_back({"varying last dim, scalar path", "x:2x1/2x40/2x1000",
                 [] {
                   OnnxModel m(17);
                   m.input("x", TensorProto::FLOAT, {int64_t{2}, Dim("n")});
                   m.input("b", TensorProto::FLOAT, {int64_t{2}, int64_t{1}});
                   m.node("Add", {"x", "b"}, {"s"}, "add");
                   m.node("Relu", {"s"}, {"y"}, "relu");
                   m.output("y");
                   return m;
                 }});
  // LayerNormalization over the last dim with varying rows (batch x seq),
  // with its mean and inverse std outputs, then an elementwise epilogue.
  out.push_back({"LayerNormalization, rows vary (batch x seq)", "x:1x1x64/3x16x64/8x33x64", [] {
                   OnnxModel m(17);
                   m.input("x", TensorProto::FLOAT, {Dim("batch"), Dim("seq"), int64_t{64}});
                   m.initializer(testing::float_tensor("gamma", {64}, ramp(64, 0.2f)));
                   m.initializer(testing::float_tensor("beta", {64}, ramp(64, 0.05f)));
                   auto* ln = m.node("LayerNormalization", {"x", "gamma", "beta"},
                                     {"n", "mean", "inv"}, "ln");
                   testing::attr_int(ln, "axis", -1);
                   m.node("Tanh", {"n"}, {"y"}, "act");
                   m.output("y");
                   m.output("mean");
                   m.output("inv");
                   return m;
                 }});
  // Softmax and LogSoftmax over the last (fixed) axis, rows varying; a long
  // row (a whole-block team) and a short one (sub-warp teams).
  out.push_back({"Softmax and LogSoftmax, rows vary, short and long rows",
                 "a:1x4x16/2x4x16/9x4x16,b:1x1000/2x1000/5x1000", [] {
                   OnnxModel m(17);
                   m.input("a", TensorProto::FLOAT, {Dim("batch"), int64_t{4}, int64_t{16}});
                   m.input("b", TensorProto::FLOAT, {Dim("rows"), int64_t{1000}});
                   testing::attr_int(m.node("Softmax", {"a"}, {"sa"}, "softmax_a"), "axis", -1);
                   testing::attr_int(m.node("LogSoftmax", {"b"}, {"lb"}, "logsoftmax_b"), "axis", -1);
                   m.output("sa");
                   m.output("lb");
                   return m;
                 }});
  // A MatMul of a varying [batch, seq, 32] by fixed weights, with a fused bias,
  // activation and residual epilogue: one GEMM of run-time M.
  out.push_back({"MatMul with a fused epilogue, M varies (batch x seq)",
                 "x:1x1x32/2x8x32/4x37x32,r:1x1x48/2x8x48/4x37x48", [] {
                   OnnxModel m(17);
                   m.input("x", TensorProto::FLOAT, {Dim("batch"), Dim("seq"), int64_t{32}});
                   m.input("r", TensorProto::FLOAT, {Dim("batch"), Dim("seq"), int64_t{48}});
                   m.initializer(testing::float_tensor("w", {32, 48}, ramp(32 * 48, 0.05f)));
                   m.initializer(testing::float_tensor("bias", {48}, ramp(48, 0.1f)));
                   m.node("MatMul", {"x", "w"}, {"p"}, "proj");
                   m.node("Add", {"p", "bias"}, {"pb"}, "bias");
                   m.node("Relu", {"pb"}, {"a"}, "act");
                   m.node("Add", {"a", "r"}, {"y"}, "residual");
                   m.output("y");
                   return m;
                 },
                 1e-4, 0});
  // M from 1 to past where 128x128 tiles fill an H100 (ceil(M / 128) * 2 >=
  // 132 at N = 256): the kernel holds both tile configurations and picks one
  // per launch; both paths run here.
  out.push_back({"MatMul whose M spans the 128x128 tile threshold, both tile paths",
                 "x:1x1x32/2x32x32/4x2112x32", [] {
                   OnnxModel m(17);
                   m.input("x", TensorProto::FLOAT, {Dim("batch"), Dim("seq"), int64_t{32}});
                   m.initializer(testing::float_tensor("w", {32, 256}, ramp(32 * 256, 0.02f)));
                   m.initializer(testing::float_tensor("bias", {256}, ramp(256, 0.1f)));
                   m.node("MatMul", {"x", "w"}, {"p"}, "proj");
                   m.node("Add", {"p", "bias"}, {"pb"}, "bias");
                   m.node("Relu", {"pb"}, {"y"}, "act");
                   m.output("y");
                   return m;
                 },
                 1e-4, 0});
  // The range benchmark's block (scripts/make_shape_range_model.py, smaller):
  // LayerNorm, GEMM + bias + erf GELU, GEMM + bias + residual fused into the
  // second LayerNorm's prologue, Softmax.
  out.push_back({"transformer-style block: fused residual into LayerNorm, GEMMs, Softmax",
                 "x:1x1x32/2x8x32/3x19x32", [] {
                   OnnxModel m(17);
                   m.input("x", TensorProto::FLOAT, {Dim("batch"), Dim("seq"), int64_t{32}});
                   m.initializer(testing::float_tensor("g1", {32}, ramp(32, 0.3f)));
                   m.initializer(testing::float_tensor("b1", {32}, ramp(32, 0.1f)));
                   m.initializer(testing::float_tensor("w1", {32, 64}, ramp(32 * 64, 0.04f)));
                   m.initializer(testing::float_tensor("c1", {64}, ramp(64, 0.1f)));
                   m.initializer(testing::float_tensor("w2", {64, 32}, ramp(64 * 32, 0.03f)));
                   m.initializer(testing::float_tensor("c2", {32}, ramp(32, 0.1f)));
                   m.initializer(testing::float_tensor("g2", {32}, ramp(32, 0.2f)));
                   m.initializer(testing::float_tensor("b2", {32}, ramp(32, 0.05f)));
                   testing::attr_int(m.node("LayerNormalization", {"x", "g1", "b1"}, {"l1"}, "ln1"),
                                     "axis", -1);
                   m.node("MatMul", {"l1", "w1"}, {"h"}, "fc1");
                   m.node("Add", {"h", "c1"}, {"hb"}, "fc1_bias");
                   m.node("Erf", {"hb"}, {"he"}, "erf");
                   m.node("Mul", {"hb", "he"}, {"g"}, "gate");
                   m.node("MatMul", {"g", "w2"}, {"o"}, "fc2");
                   m.node("Add", {"o", "c2"}, {"ob"}, "fc2_bias");
                   m.node("Add", {"ob", "x"}, {"r"}, "residual");
                   testing::attr_int(m.node("LayerNormalization", {"r", "g2", "b2"}, {"l2"}, "ln2"),
                                     "axis", -1);
                   testing::attr_int(m.node("Softmax", {"l2"}, {"y"}, "softmax"), "axis", -1);
                   m.output("y");
                   return m;
                 },
                 1e-4, 0});
  // Shape arithmetic into a Reshape (kept symbolic, never on the GPU), the
  // view's output copied at the shape, then a broadcast add on the result.
  out.push_back({"shape arithmetic into a Reshape, a copied view", "x:1x4x8/4x4x8/9x4x8", [] {
                   OnnxModel m(17);
                   m.input("x", TensorProto::FLOAT, {Dim("batch"), int64_t{4}, int64_t{8}});
                   m.initializer(testing::int64_tensor("zero", {1}, {0}));
                   m.initializer(testing::int64_tensor("one", {1}, {1}));
                   m.initializer(testing::int64_tensor("rest", {1}, {-1}));
                   m.initializer(testing::float_tensor("w", {32}, ramp(32, 0.5f)));
                   m.node("Shape", {"x"}, {"s"}, "shape");
                   m.node("Slice", {"s", "zero", "one"}, {"b"}, "batch");
                   testing::attr_int(m.node("Concat", {"b", "rest"}, {"target"}, "target"), "axis", 0);
                   m.node("Reshape", {"x", "target"}, {"flat"}, "flatten");
                   m.node("Mul", {"flat", "w"}, {"y"}, "weigh");
                   m.output("y");
                   m.output("flat");
                   return m;
                 }});
  add_attention_cases(out);
  add_cnn_range_cases(out);
  add_index_map_range_cases(out);
  // Tiny BERT, GPT-2 and RoBERTa exported by PyTorch with dynamic batch and
  // sequence axes (models/tiny/README.md), one engine each over batch x seq.
  for (const char* name : {"bert", "gpt2", "roberta"}) {
    RangeCase c;
    c.label = fmt::format("transformers: {} (tiny) over batch x seq", name);
    c.profile = "input_ids:1x2/2x16/3x37,attention_mask:1x2/2x16/3x37";
    c.file = fmt::format("models/tiny/{}_tiny.onnx", name);
    c.token_inputs = true;
    c.rtol_f32 = 5e-4;  // sums in another order through two layers, after LayerNorms
    out.push_back(std::move(c));
  }
  // torchvision's ViT over a batch range: nn.MultiheadAttention's out
  // projection, exported as Reshape -> Gemm -> Reshape, is unflattened with
  // its view copying the varying dims (a constant view target would fix them).
  RangeCase vit;
  vit.label = "transformers: ViT (tiny, torchvision) over the batch";
  vit.profile = "input:1x3x32x32/4x3x32x32/9x3x32x32";
  vit.file = "models/tiny/vit_tiny.onnx";
  vit.cudnn_convs = true;  // the patchify conv
  vit.rtol_f32 = 5e-4;
  out.push_back(std::move(vit));
  return out;
}

// One case: lowered once, run at every check point. Returns "" or what failed.
std::string run_case(const RangeCase& c, size_t* points) {
  std::string bytes;
  if (c.file.empty()) {
    bytes = c.model().bytes();
  } else {
    std::ifstream in(fs::path(GRAPHC_SOURCE_DIR) / c.file, std::ios::binary);
    if (!in) return "cannot read " + c.file;
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  driver::LoadOptions unbound;
  unbound.infer = false;
  auto imported = driver::load_model_bytes(bytes, c.label, unbound);
  if (!imported.ok()) return imported.status().message();
  auto profile = driver::parse_profile_flag(c.profile);
  if (!profile.ok()) return profile.status().message();
  // CNN cases take cuDNN's convolutions (emulated on the host: cudnn_conv_emu.h).
  emit::LowerOptions lowering = generated_gemms();
  if (c.cudnn_convs) lowering.conv.mode = target::ConvMode::kAuto;
  optimizer::PassContext passes;
  passes.target = std::make_shared<target::CudaTarget>(lowering);
  if (c.fp16) passes.precision = optimizer::Precision::kFp16;
  auto range = driver::optimize_for_range(*imported, *profile, 0, passes);
  if (!range.ok()) return range.status().message();
  emit::PlanOptions options;
  options.range = &range->symbolic;
  auto plan = emit::lower_for_gpu(range->optimized, target::CudaTarget(lowering), options);
  if (!plan.ok()) return plan.status().message();
  int index_maps = 0;
  for (const auto& l : plan->launches) index_maps += l.entry.rfind("im_", 0) == 0 ? 1 : 0;
  if (index_maps < c.min_index_map_kernels)
    return fmt::format("{} index-map kernels in the range plan, want at least {}", index_maps,
                       c.min_index_map_kernels);
  for (const auto& point : driver::range_check_points(*imported, *profile)) {
    std::string where;
    for (const auto& [name, shape] : point) where += fmt::format(" {}:{}", name, ir::shape_to_string(shape));
    driver::LoadOptions bound;
    bound.input_shapes = point;
    auto typed = driver::load_model_bytes(bytes, c.label, bound);
    if (!typed.ok()) return typed.status().message() + " at" + where;
    auto symbols = driver::symbol_values_at(*imported, *profile, point);
    if (!symbols.ok()) return symbols.status().message();
    Outputs feeds;
    for (ir::ValueId id : typed->inputs)
      feeds[typed->value(id).name] =
          c.token_inputs ? token_input(typed->value(id), testing::test_rng())
                         : testing::random_tensor(typed->value(id).dtype, typed->value(id).shape,
                                                  testing::test_rng(), -2, 2);
    auto want = reference::execute(*typed, feeds);
    if (!want.ok()) return want.status().message() + " at" + where;
    auto got = run_plan(*plan, range->optimized, *symbols, feeds);
    if (!got.ok()) return got.status().message() + " at" + where;
    for (const auto& [name, t] : *want) {
      auto it = got->find(name);
      if (it == got->end()) return fmt::format("no output '{}' at{}", name, where);
      if (it->second.shape() != t.shape())
        return fmt::format("output '{}' is {}, want {} at{}", name,
                           ir::shape_to_string(it->second.shape()), ir::shape_to_string(t.shape()), where);
      const std::string diff =
          c.fp16 ? compare(t.cast_to(ir::DType::kFloat16),
                           it->second.cast_to(ir::DType::kFloat16), c.rtol_f32, c.half_atol)
                 : compare(t, it->second, c.rtol_f32, c.half_atol);
      if (!diff.empty()) return fmt::format("output '{}' at{}: {}", name, where, diff);
    }
    ++*points;
  }
  return "";
}

// An ONNX node test with every input dim larger than 1 made a run-time size
// (one symbol per distinct size, so equal dims stay equal and broadcasts of 1
// stay broadcasts), lowered for that "range" and run in the emulator at the
// test's shapes against its expected outputs. "" passed; "skip: ..." the
// kernels cannot take run-time sizes (or the static path skips it too);
// anything else failed.
std::string run_range_onnx_case(const fs::path& dir, bool fixed_last) {
  auto model = importer::import_model_file((dir / "model.onnx").string());
  if (!model.ok()) return "skip: " + model.status().message();
  ir::Graph g = *model;
  const fs::path set = dir / "test_data_set_0";
  Outputs feeds;
  std::map<std::string, ir::Shape> shapes;
  ir::SymbolicInputs range;
  std::map<int64_t, int> symbol_of;  // size -> symbol
  std::vector<int64_t> point;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    auto t = importer::read_tensor_proto_file((set / fmt::format("input_{}.pb", i)).string());
    if (!t.ok()) return "fail: " + t.status().message();
    ir::Value& v = g.value(g.inputs[i]);
    v.has_shape = false;
    v.shape.clear();
    v.dim_names.clear();
    shapes[v.name] = t->shape();
    ir::SymShape sym;
    for (size_t k = 0; k < t->shape().size(); ++k) {
      const int64_t d = t->shape()[k];
      if (d <= 1 || (fixed_last && k + 1 == t->shape().size())) {
        sym.emplace_back(d);
        continue;
      }
      auto [it, fresh] = symbol_of.emplace(d, static_cast<int>(point.size()));
      if (fresh) {
        range.symbols.names.push_back(fmt::format("d{}", d));
        range.symbols.min.push_back(d);
        range.symbols.max.push_back(d);
        point.push_back(d);
      }
      sym.push_back(ir::DimExpr::symbol(it->second));
    }
    range.inputs[v.name] = std::move(sym);
    feeds[v.name] = *t;
  }
  if (point.empty()) return "skip: no input dim above 1";
  Status st = ir::bind_input_shapes(g, shapes);
  if (st.ok()) st = driver::infer_graph_shapes(g);
  optimizer::PassContext ctx;
  ctx.target = std::make_shared<target::CudaTarget>(generated_gemms());
  ctx.shape_range = std::make_shared<const ir::SymbolicInputs>(range);
  if (st.ok()) st = optimizer::run_passes(g, ctx);
  if (!st.ok()) return "skip: " + st.message();
  auto sym = ir::infer_symbolic_shapes(g, range);
  if (!sym.ok()) return "skip: " + sym.status().message();
  emit::PlanOptions options;
  options.range = &*sym;
  auto plan = emit::lower_for_gpu(g, target::CudaTarget(generated_gemms()), options);
  if (!plan.ok()) return "skip: " + plan.status().message();
  if (!plan->range || plan->range->sizes.empty()) return "skip: no run-time sizes";
  auto got = run_plan(*plan, g, point, feeds);
  if (!got.ok()) return "fail: " + got.status().message();
  for (size_t o = 0; o < g.outputs.size(); ++o) {
    auto want = importer::read_tensor_proto_file((set / fmt::format("output_{}.pb", o)).string());
    if (!want.ok()) return "fail: " + want.status().message();
    const ir::Tensor& have = got->at(g.value(g.outputs[o]).name);
    if (have.shape() != want->shape())
      return fmt::format("fail: output {} is {}, want {}", o, ir::shape_to_string(have.shape()),
                         ir::shape_to_string(want->shape()));
    // The flash kernel rounds P to the operand type before P·V (as FlashAttention-2
    // does): two bfloat16 ulps near 0.5 for the attention cases.
    const std::string diff = compare(*want, have, 1e-3, fixed_last ? 8e-3 : 1e-3);
    if (!diff.empty()) return fmt::format("fail: output {}: {}", o, diff);
  }
  return "";
}

}  // namespace

int run_range_onnx_cases(const std::vector<std::string>& dirs, int min_passed, bool fixed_last) {
  int passed = 0, failed = 0, skipped = 0;
  for (const auto& d : dirs) {
    const std::string r = run_range_onnx_case(d, fixed_last);
    const std::string name = fs::path(d).filename().string();
    if (r.empty()) {
      ++passed;
      std::cout << "PASS " << name << "\n";
    } else if (r.rfind("skip", 0) == 0) {
      ++skipped;
      if (std::getenv("GRAPHC_EMU_VERBOSE")) std::cout << "SKIP " << name << ": " << r.substr(0, 300) << "\n";
    } else {
      ++failed;
      std::cout << "FAIL " << name << ": " << r.substr(0, 400) << "\n";
    }
  }
  std::cout << passed << " passed with run-time sizes, " << failed << " failed, " << skipped
            << " skipped (kernels without run-time sizes yet)\n";
  if (passed < min_passed)
    std::cout << "FAIL: fewer than " << min_passed << " passed (a family lost its run-time sizes?)\n";
  return failed || passed < min_passed ? 1 : 0;
}

int run_range_cases(const std::string& filter) {
  int passed = 0, failed = 0;
  for (const auto& c : cases()) {
    if (!filter.empty() && c.label.find(filter) == std::string::npos) continue;
    // The model files run in ctests of their own (each compiles its kernels).
    if (filter.empty() && !c.file.empty()) continue;
    size_t points = 0;
    const std::string r = run_case(c, &points);
    if (r.empty() && points < 5) {
      std::cout << "FAIL " << c.label << ": only " << points << " shapes checked\n";
      ++failed;
      continue;
    }
    std::cout << (r.empty() ? fmt::format("PASS {} ({} shapes)", c.label, points)
                            : "FAIL " + c.label + ": " + r)
              << std::endl;
    (r.empty() ? passed : failed)++;
  }
  std::cout << passed << " passed, " << failed << " failed\n";
  return failed || passed == 0 ? 1 : 0;
}

}  // namespace graphc::emu
