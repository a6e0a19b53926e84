// CUDA codegen of elementwise kernels and the NVRTC wrapper. Runs without a
// GPU: kernels are generated and compiled to CUBIN/PTX, not executed (their
// numbers are checked on a GPU against the reference executor).
#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "emit/cuda/cuda_elementwise.h"
#include "emit/cuda/cuda_ops.h"
#include "emit/nvrtc/nvrtc_compiler.h"
#include "optimizer/pass.h"
#include "reference/kernels_elementwise_util.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::attrs;
using graphc::testing::GraphBuilder;

namespace {

const std::vector<std::string> kArchs = {"sm_80", "sm_90"};

// One op on fresh inputs (shapes[i] per input, all of `dtypes[i]`), one output.
struct OpCase {
  std::string label;
  OpKind op;
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  AttributeMap attrs = {};
  int outputs = 1;
};

Graph single_op_graph(const OpCase& c) {
  GraphBuilder b;
  std::vector<ValueId> ins;
  for (size_t i = 0; i < c.dtypes.size(); ++i)
    ins.push_back(b.input("x" + std::to_string(i), c.dtypes[i], c.shapes[i]));
  ValueId y = b.node(c.op, ins, c.attrs, c.outputs, "n_" + c.label);
  b.output(y);
  return b.build();
}

NodeId first_live(const Graph& g, OpKind op) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!g.nodes[i].dead && g.nodes[i].op == op) return static_cast<NodeId>(i);
  return -1;
}

std::string test_cache_dir(const std::string& leaf) {
  return std::string(GRAPHC_BINARY_DIR) + "/emit-cuda-test-cache/" + leaf;
}

std::vector<OpCase> op_cases() {
  const DType f32 = DType::kFloat32, f16 = DType::kFloat16, bf16 = DType::kBFloat16,
              f64 = DType::kFloat64, i32 = DType::kInt32, i64 = DType::kInt64, u8 = DType::kUInt8,
              b = DType::kBool;
  const Shape s{4, 64}, a{2, 3, 8}, bc{3, 1};
  std::vector<OpCase> v;
  for (OpKind op : {OpKind::Abs,       OpKind::Neg,
                    OpKind::Exp,       OpKind::Log,
                    OpKind::Sqrt,      OpKind::Reciprocal,
                    OpKind::Sigmoid,   OpKind::Tanh,
                    OpKind::Relu,      OpKind::LeakyRelu,
                    OpKind::Elu,       OpKind::Selu,
                    OpKind::Celu,      OpKind::HardSigmoid,
                    OpKind::HardSwish, OpKind::Softplus,
                    OpKind::Softsign,  OpKind::Erf,
                    OpKind::Gelu,      OpKind::Sin,
                    OpKind::Cos,       OpKind::Tan,
                    OpKind::Asin,      OpKind::Acos,
                    OpKind::Atan,      OpKind::Sinh,
                    OpKind::Cosh,      OpKind::Asinh,
                    OpKind::Acosh,     OpKind::Atanh,
                    OpKind::Floor,     OpKind::Ceil,
                    OpKind::Round,     OpKind::Sign,
                    OpKind::IsNaN,     OpKind::IsInf,
                    OpKind::Shrink,    OpKind::ThresholdedRelu,
                    OpKind::Identity})
    v.push_back({std::string(op_name(op)) + "_f32", op, {f32}, {s}});
  for (OpKind op :
       {OpKind::Tanh, OpKind::Gelu, OpKind::Sigmoid, OpKind::Relu, OpKind::IsInf, OpKind::Round})
    for (DType t : {f16, bf16})
      v.push_back({std::string(op_name(op)) + "_" + std::string(dtype_name(t)), op, {t}, {a}});
  for (OpKind op : {OpKind::Exp, OpKind::Sigmoid, OpKind::Softplus, OpKind::Gelu})
    v.push_back({std::string(op_name(op)) + "_f64", op, {f64}, {s}});
  for (OpKind op :
       {OpKind::Abs, OpKind::Neg, OpKind::Sign, OpKind::Relu, OpKind::Erf, OpKind::Shrink})
    v.push_back({std::string(op_name(op)) + "_i32", op, {i32}, {s}});
  v.push_back({"Sign_u8", OpKind::Sign, {u8}, {s}});
  v.push_back({"Abs_u8", OpKind::Abs, {u8}, {s}});
  v.push_back({"Not_bool", OpKind::Not, {b}, {s}});
  v.push_back({"Gelu_tanh_f32",
               OpKind::Gelu,
               {f32},
               {s},
               attrs({{"approximate", Attribute::of_string("tanh")}})});
  v.push_back({"LeakyRelu_alpha",
               OpKind::LeakyRelu,
               {f32},
               {s},
               attrs({{"alpha", Attribute::of_float(0.2)}})});
  v.push_back({"IsInf_pos_only",
               OpKind::IsInf,
               {f32},
               {s},
               attrs({{"detect_negative", Attribute::of_int(0)}})});
  v.push_back({"HardSigmoid_ab",
               OpKind::HardSigmoid,
               {f32},
               {s},
               attrs({{"alpha", Attribute::of_float(0.3)}, {"beta", Attribute::of_float(0.25)}})});
  // Binary, with broadcasting ([2,3,8] op [3,1]) and same-shape cases.
  for (OpKind op : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Pow, OpKind::Mod,
                    OpKind::Equal, OpKind::Less, OpKind::LessOrEqual, OpKind::Greater,
                    OpKind::GreaterOrEqual, OpKind::PRelu}) {
    v.push_back({std::string(op_name(op)) + "_f32", op, {f32, f32}, {a, bc}});
    v.push_back({std::string(op_name(op)) + "_i32", op, {i32, i32}, {a, bc}});
  }
  v.push_back({"Add_f16_same", OpKind::Add, {f16, f16}, {s, s}});
  v.push_back({"Mul_bf16_bcast", OpKind::Mul, {bf16, bf16}, {a, bc}});
  v.push_back({"Div_i64", OpKind::Div, {i64, i64}, {a, bc}});
  v.push_back({"Div_u8", OpKind::Div, {u8, u8}, {s, s}});
  v.push_back({"Mod_u8", OpKind::Mod, {u8, u8}, {a, bc}});
  v.push_back(
      {"Mod_fmod_f32", OpKind::Mod, {f32, f32}, {a, bc}, attrs({{"fmod", Attribute::of_int(1)}})});
  v.push_back(
      {"Mod_fmod_i32", OpKind::Mod, {i32, i32}, {a, bc}, attrs({{"fmod", Attribute::of_int(1)}})});
  v.push_back({"Pow_f32_i32", OpKind::Pow, {f32, i32}, {a, bc}});
  v.push_back({"Pow_i64_f32", OpKind::Pow, {i64, f32}, {a, bc}});
  v.push_back({"Pow_i32_u8", OpKind::Pow, {i32, u8}, {a, bc}});
  v.push_back({"Equal_bool", OpKind::Equal, {b, b}, {a, bc}});
  for (OpKind op : {OpKind::And, OpKind::Or, OpKind::Xor})
    v.push_back({std::string(op_name(op)) + "_bool", op, {b, b}, {a, bc}});
  for (const char* dir : {"LEFT", "RIGHT"})
    for (DType t : {i32, u8, DType::kInt8, DType::kUInt64})
      v.push_back({std::string("BitShift_") + dir + "_" + std::string(dtype_name(t)),
                   OpKind::BitShift,
                   {t, t},
                   {a, bc},
                   attrs({{"direction", Attribute::of_string(dir)}})});
  // Variadic.
  for (OpKind op : {OpKind::Max, OpKind::Min, OpKind::Sum, OpKind::Mean}) {
    v.push_back({std::string(op_name(op)) + "_f32x3", op, {f32, f32, f32}, {a, bc, {8}}});
    v.push_back({std::string(op_name(op)) + "_i32x2", op, {i32, i32}, {a, bc}});
    v.push_back({std::string(op_name(op)) + "_f16x1", op, {f16}, {s}});
  }
  v.push_back({"Mean_u8x2", OpKind::Mean, {u8, u8}, {s, s}});
  // Other elementwise.
  v.push_back({"Where_f32", OpKind::Where, {b, f32, f32}, {bc, a, {8}}});
  v.push_back({"Where_i64", OpKind::Where, {b, i64, i64}, {s, s, s}});
  v.push_back({"Clip_f32_bounds", OpKind::Clip, {f32, f32, f32}, {s, {}, {}}});
  v.push_back({"Clip_f16_min", OpKind::Clip, {f16, f16}, {s, {}}});
  v.push_back({"Clip_i32", OpKind::Clip, {i32, i32, i32}, {s, {}, {}}});
  v.push_back({"Clip_none", OpKind::Clip, {f32}, {s}});
  auto cast = [&](DType from, DType to) {
    v.push_back({"Cast_" + std::string(dtype_name(from)) + "_" + std::string(dtype_name(to)),
                 OpKind::Cast,
                 {from},
                 {a},
                 attrs({{"to", Attribute::of_int(static_cast<int64_t>(to))}})});
  };
  cast(f32, i32), cast(f32, f16), cast(i64, bf16), cast(f32, b), cast(f16, u8),
      cast(f64, DType::kUInt64);
  cast(f32, DType::kUInt32), cast(b, f32), cast(i32, DType::kInt8), cast(bf16, f64);
  v.push_back({"CastLike_f32_i64", OpKind::CastLike, {f32, i64}, {a, {}}});
  return v;
}

}  // namespace

TEST_CASE("broadcast strides give the reference executor's broadcast offsets", "[emit]") {
  // For each (input, output) shape pair, sum(coord[d] * stride[d]) over every
  // output index equals reference::ew::broadcast_offsets, element by element.
  std::vector<std::pair<Shape, Shape>> pairs = {{{}, {2, 3}},
                                                {{1}, {4}},
                                                {{3}, {2, 3}},
                                                {{3, 1}, {2, 3, 4}},
                                                {{2, 1, 4}, {2, 3, 4}},
                                                {{1, 1, 1}, {5, 1, 2}},
                                                {{5, 1, 2}, {5, 1, 2}},
                                                {{7, 1}, {1, 7, 6}},
                                                {{1, 3, 1, 5}, {2, 3, 4, 5}}};
  for (const auto& [in, out] : pairs) {
    INFO(shape_to_string(in) << " -> " << shape_to_string(out));
    auto strides = emit::broadcast_strides(in, out);
    REQUIRE(strides.ok());
    REQUIRE(strides->size() == out.size());
    auto want = reference::ew::broadcast_offsets(out, in);
    std::vector<int64_t> idx(out.size(), 0);
    for (size_t i = 0; i < want.size(); ++i) {
      int64_t off = 0;
      for (size_t d = 0; d < out.size(); ++d) off += idx[d] * (*strides)[d];
      REQUIRE(off == want[i]);
      for (size_t d = out.size(); d-- > 0;) {
        if (++idx[d] < out[d]) break;
        idx[d] = 0;
      }
    }
  }
  CHECK_FALSE(emit::broadcast_strides({3}, {2, 4}).ok());
  CHECK_FALSE(emit::broadcast_strides({2, 3}, {3}).ok());
}

TEST_CASE("every supported elementwise op compiles with NVRTC for sm_80 and sm_90", "[emit]") {
  // Each case: generate the kernel of one node, compile it (CUBIN + PTX per
  // arch), check both are non-empty and the PTX defines the entry.
  REQUIRE(emit::nvrtc_available());
  std::vector<emit::CudaSource> sources;
  std::vector<emit::GeneratedKernel> kernels;
  for (const OpCase& c : op_cases()) {
    INFO(c.label);
    Graph g = single_op_graph(c);
    auto k = emit::generate_elementwise_kernel(g, first_live(g, c.op));
    if (!k.ok()) FAIL(k.status().message());
    CHECK(k->args.size() == c.dtypes.size() + static_cast<size_t>(c.outputs));
    sources.push_back({c.label, k->source});
    kernels.push_back(std::move(k).value());
  }
  emit::CompileOptions opts;
  opts.cache_dir = test_cache_dir("ops");
  auto compiled = emit::compile_cuda_many(sources, kArchs, opts);
  REQUIRE(compiled.size() == sources.size());
  for (size_t i = 0; i < compiled.size(); ++i) {
    INFO(sources[i].name);
    if (!compiled[i].ok()) FAIL(compiled[i].status().message());
    REQUIRE(compiled[i]->binaries.size() == kArchs.size());
    for (size_t a = 0; a < kArchs.size(); ++a) {
      const auto& bin = compiled[i]->binaries[a];
      CHECK(bin.arch == kArchs[a]);
      CHECK(!bin.cubin.empty());
      CHECK(bin.ptx.find(".entry " + kernels[i].entry) != std::string::npos);
    }
  }
}

TEST_CASE("vectorised kernels: full-shape operands use 16-byte accesses", "[emit]") {
  // fp32 same-shape -> 4 per thread, fp16 -> 8, mixed fp16->fp32 follows the
  // widest (4); a numel not divisible keeps scalar code.
  auto width = [](OpCase c) {
    Graph g = single_op_graph(c);
    auto k = emit::generate_elementwise_kernel(g, first_live(g, c.op));
    REQUIRE(k.ok());
    return k->vector_width;
  };
  CHECK(width({"a", OpKind::Tanh, {DType::kFloat32}, {{4, 64}}}) == 4);
  CHECK(width({"b", OpKind::Add, {DType::kFloat16, DType::kFloat16}, {{4, 64}, {4, 64}}}) == 8);
  CHECK(width({"c", OpKind::Add, {DType::kFloat32, DType::kFloat32}, {{4, 64}, {}}}) ==
        4);  // scalar side
  CHECK(width({"d",
               OpKind::Cast,
               {DType::kFloat16},
               {{4, 64}},
               attrs({{"to", Attribute::of_int(static_cast<int64_t>(DType::kFloat32))}})}) == 4);
  // Broadcast operands keep the vector inside one row of the last dim: a bias
  // row, a per-row column, and a row too short for 4 (2) or any width (1).
  CHECK(width({"e", OpKind::Add, {DType::kFloat32, DType::kFloat32}, {{4, 64}, {64}}}) == 4);
  CHECK(width({"e2", OpKind::Add, {DType::kFloat16, DType::kFloat16}, {{4, 64}, {4, 1}}}) == 8);
  CHECK(width({"e3", OpKind::Add, {DType::kFloat32, DType::kFloat32}, {{4, 6}, {6}}}) == 2);
  CHECK(width({"e4", OpKind::Add, {DType::kFloat32, DType::kFloat32}, {{4, 5}, {5}}}) == 1);
  CHECK(width({"f", OpKind::Tanh, {DType::kFloat32}, {{3, 5}}}) == 1);
  Graph g = single_op_graph({"g", OpKind::Tanh, {DType::kFloat32}, {{4, 64}}});
  auto k = emit::generate_elementwise_kernel(g, first_live(g, OpKind::Tanh));
  REQUIRE(k.ok());
  CHECK(k->source.find("uint4") != std::string::npos);
  CHECK(k->blocks == 1);
  CHECK(k->threads_per_block == 256);
}

TEST_CASE("a fused bias-add, scale, tanh-GELU, residual-add chain compiles", "[emit]") {
  // The optimizer fuses y = Add(Gelu_tanh(Mul(Add(x, bias), scale)), residual)
  // (bias [64] broadcast, scalar scale embedded as a literal, a 4-element
  // constant read from the weights like any array, so that graphc refit can
  // change it) into one elementwise group; its kernel compiles for both archs.
  for (DType dt : {DType::kFloat32, DType::kFloat16}) {
    GraphBuilder b;
    auto x = b.input("x", dt, {8, 4, 64});
    auto res = b.input("residual", dt, {4, 1});
    auto bias = b.constant("bias", testing::random_tensor(dt, {64}, testing::test_rng()));
    auto scale = b.constant("scale", Tensor::from_f32({0.7f}, {}).cast_to(dt), false);
    auto small =
        b.constant("small", testing::random_tensor(dt, {4, 1}, testing::test_rng()), false);
    auto v = b.node(OpKind::Mul, {b.node(OpKind::Add, {x, bias}), scale});
    // tanh GELU written out, as exporters do.
    auto half = b.constant("half", Tensor::from_f32({0.5f}, {}).cast_to(dt), false);
    auto one = b.constant("one", Tensor::from_f32({1.0f}, {}).cast_to(dt), false);
    auto c0 = b.constant("c0", Tensor::from_f32({0.044715f}, {}).cast_to(dt), false);
    auto k0 = b.constant("k0", Tensor::from_f32({0.7978845608f}, {}).cast_to(dt), false);
    auto cube = b.node(OpKind::Mul, {b.node(OpKind::Mul, {v, v}), v});
    auto inner =
        b.node(OpKind::Mul, {k0, b.node(OpKind::Add, {v, b.node(OpKind::Mul, {c0, cube})})});
    auto gelu = b.node(OpKind::Mul, {b.node(OpKind::Mul, {half, v}),
                                     b.node(OpKind::Add, {one, b.node(OpKind::Tanh, {inner})})});
    auto y = b.node(OpKind::Add, {b.node(OpKind::Add, {gelu, res}), small});
    b.output(y);
    Graph g = b.build();
    optimizer::PassContext ctx;
    REQUIRE(optimizer::run_passes(g, ctx).ok());
    NodeId group = first_live(g, OpKind::FusedGroup);
    REQUIRE(group >= 0);
    REQUIRE(g.node(group).fusion == ir::FusionKind::kElementwise);
    auto k = emit::generate_elementwise_kernel(g, group);
    if (!k.ok()) FAIL(k.status().message());
    // Vectorised although bias, residual and the constant broadcast (rows of 64).
    CHECK(k->vector_width == static_cast<int64_t>(16 / ir::dtype_size(dt)));
    CHECK(k->source.find("__device__ const") == std::string::npos);  // no embedded array
    bool small_is_arg = false;
    for (auto a : k->args) small_is_arg |= g.value(a).name == "small";
    CHECK(small_is_arg);
    INFO(k->source);
    auto m = emit::compile_cuda(k->source, k->name, kArchs);
    if (!m.ok()) FAIL(m.status().message());
    for (const auto& bin : m->binaries) {
      CHECK(!bin.cubin.empty());
      CHECK(bin.ptx.find(k->entry) != std::string::npos);
    }
  }
}

TEST_CASE("the same graph gives byte-identical kernel source", "[emit]") {
  // Two generations from the graph and from a copy agree; another attribute
  // value gives another source and entry name.
  OpCase c{"det",
           OpKind::LeakyRelu,
           {DType::kFloat32},
           {{2, 3, 8}},
           attrs({{"alpha", Attribute::of_float(0.1)}})};
  Graph g1 = single_op_graph(c), g2 = single_op_graph(c);
  auto k1 = emit::generate_elementwise_kernel(g1, first_live(g1, c.op));
  auto k2 = emit::generate_elementwise_kernel(g2, first_live(g2, c.op));
  auto k3 = emit::generate_elementwise_kernel(g1, first_live(g1, c.op));
  REQUIRE((k1.ok() && k2.ok() && k3.ok()));
  CHECK(k1->source == k2->source);
  CHECK(k1->source == k3->source);
  CHECK(k1->entry == k2->entry);
  c.attrs = attrs({{"alpha", Attribute::of_float(0.2)}});
  Graph g4 = single_op_graph(c);
  auto k4 = emit::generate_elementwise_kernel(g4, first_live(g4, c.op));
  REQUIRE(k4.ok());
  CHECK(k4->source != k1->source);
  CHECK(k4->entry != k1->entry);
  CHECK(k1->source.find("0.100000001f") != std::string::npos);  // alpha as a float literal
}

TEST_CASE("ops and dtypes without a CUDA expression are clear errors", "[emit]") {
  // A non-elementwise node, the expression table asked for MatMul, and a
  // non-elementwise FusedGroup are refused with the op named.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2, 2});
  b.output(b.node(OpKind::MatMul, {x, x}, {}, 1, "mm"));
  Graph g = b.build();
  auto k = emit::generate_elementwise_kernel(g, first_live(g, OpKind::MatMul));
  REQUIRE_FALSE(k.ok());
  CHECK(k.status().message().find("MatMul") != std::string::npos);
  emit::cuda::OpOperands ops;
  ops.node = &g.node(first_live(g, OpKind::MatMul));
  ops.in = {"a", "b"};
  ops.in_dtype = {DType::kFloat32, DType::kFloat32};
  auto e = emit::cuda::op_expression(ops);
  REQUIRE_FALSE(e.ok());
  CHECK(e.status().message().find("MatMul has no CUDA expression") != std::string::npos);
  CHECK_FALSE(emit::cuda::has_cuda_expression(OpKind::MatMul));
  CHECK(emit::cuda::has_cuda_expression(OpKind::Gelu));
  CHECK_FALSE(emit::generate_elementwise_kernel(g, 99).ok());
}

TEST_CASE("an NVRTC error returns the log and the numbered source, and writes nothing", "[emit]") {
  // A kernel using an undeclared name fails with NVRTC's message, the line
  // numbers of the source, and leaves the cache folder empty.
  std::string dir = test_cache_dir("bad");
  std::filesystem::remove_all(dir);
  emit::CompileOptions opts;
  opts.cache_dir = dir;
  std::string src =
      "extern \"C\" __global__ void bad_kernel(float* p) {\n  p[0] = undeclared_thing;\n}\n";
  auto m = emit::compile_cuda(src, "bad_kernel", {"sm_90"}, opts);
  REQUIRE_FALSE(m.ok());
  const std::string& msg = m.status().message();
  CHECK(msg.find("undeclared_thing") != std::string::npos);
  CHECK(msg.find("    2 |   p[0] = undeclared_thing;") != std::string::npos);
  CHECK(msg.find("sm_90") != std::string::npos);
  CHECK((!std::filesystem::exists(dir) || std::filesystem::is_empty(dir)));
  CHECK_FALSE(emit::compile_cuda(src, "x", {"sm90"}).ok());  // a malformed arch
}

TEST_CASE("the NVRTC cache hits on the second compile and recompiles a corrupt entry", "[emit]") {
  // Counted through the on_cache callback: first compile misses and stores,
  // the second hits with identical bytes; a flipped byte or a truncated entry
  // is reported corrupt and recompiled to the same bytes.
  std::string dir = test_cache_dir("cache");
  std::filesystem::remove_all(dir);
  std::atomic<int> hits{0}, misses{0}, corrupt{0}, stored{0};
  emit::CompileOptions opts;
  opts.cache_dir = dir;
  opts.on_cache = [&](emit::CacheEvent e, const std::string&, const std::string&) {
    (e == emit::CacheEvent::kHit       ? hits
     : e == emit::CacheEvent::kMiss    ? misses
     : e == emit::CacheEvent::kCorrupt ? corrupt
                                       : stored)++;
  };
  Graph g = single_op_graph({"cache", OpKind::Sigmoid, {DType::kFloat16}, {{4, 64}}});
  auto k = emit::generate_elementwise_kernel(g, first_live(g, OpKind::Sigmoid));
  REQUIRE(k.ok());
  auto first = emit::compile_cuda(k->source, k->name, kArchs, opts);
  REQUIRE(first.ok());
  CHECK((misses == 2 && stored == 2 && hits == 0));
  auto second = emit::compile_cuda(k->source, k->name, kArchs, opts);
  REQUIRE(second.ok());
  CHECK(hits == 2);
  for (size_t a = 0; a < kArchs.size(); ++a) {
    CHECK(second->binaries[a].from_cache);
    CHECK(second->binaries[a].cubin == first->binaries[a].cubin);
    CHECK(second->binaries[a].ptx == first->binaries[a].ptx);
  }
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path());
  REQUIRE(files.size() == 2);
  {  // flip one byte in the middle of the first entry, truncate the second
    std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(std::filesystem::file_size(files[0]) / 2));
    char ch = 0;
    f.read(&ch, 1);
    f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(files[0]) / 2));
    ch = static_cast<char>(ch ^ 0x5a);
    f.write(&ch, 1);
  }
  std::filesystem::resize_file(files[1], std::filesystem::file_size(files[1]) / 3);
  auto third = emit::compile_cuda(k->source, k->name, kArchs, opts);
  REQUIRE(third.ok());
  CHECK(corrupt == 2);
  CHECK(hits == 2);
  for (size_t a = 0; a < kArchs.size(); ++a) {
    CHECK_FALSE(third->binaries[a].from_cache);
    CHECK(third->binaries[a].cubin == first->binaries[a].cubin);
  }
  auto fourth = emit::compile_cuda(k->source, k->name, kArchs, opts);  // repaired entries hit again
  REQUIRE(fourth.ok());
  CHECK(hits == 4);
}

TEST_CASE("parallel compilation keeps the order of the sources", "[emit]") {
  // Several sources on several threads come back in input order, each with
  // its own entry point.
  std::vector<emit::CudaSource> srcs;
  for (int i = 0; i < 5; ++i)
    srcs.push_back(
        {"k" + std::to_string(i), "extern \"C\" __global__ void order_k" + std::to_string(i) +
                                      "(float* p) { p[0] = " + std::to_string(i) + ".0f; }\n"});
  emit::CompileOptions opts;
  opts.jobs = 3;
  auto out = emit::compile_cuda_many(srcs, {"sm_90"}, opts);
  REQUIRE(out.size() == srcs.size());
  for (int i = 0; i < 5; ++i) {
    REQUIRE(out[static_cast<size_t>(i)].ok());
    CHECK(out[static_cast<size_t>(i)]->name == "k" + std::to_string(i));
    CHECK(out[static_cast<size_t>(i)]->binaries[0].ptx.find("order_k" + std::to_string(i)) !=
          std::string::npos);
  }
}
