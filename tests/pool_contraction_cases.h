// Graphs exercising the generated pooling and contraction kernels, shared by
// the CPU test (every kernel compiles with NVRTC for sm_80 and sm_90) and the
// GPU test (every graph matches the reference executor on fresh inputs).
// Sizes are deliberately not multiples of the GEMM tiles (64/128 in M and N,
// 8/16 in K) so the bounds-checked edges run.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "optimizer/pass.h"
#include "tests/test_util.h"

namespace graphc::testing {

struct KernelCase {
  std::string label;
  std::function<ir::Graph()> build;
  // Float32 relative tolerance. The reference sums in double; a kernel sums
  // K products in float, whose rounding error grows like sqrt(K) * 2^-24
  // relative to the magnitudes summed: 1e-3 covers K up to a few thousand;
  // pooling and small K stay at 1e-4.
  double rtol_f32 = 1e-4;
  // Extra absolute tolerance for float16/bfloat16 outputs: the kernel
  // rounds once after a float sum (and after a fused epilogue), the
  // reference rounds the double result (and after every epilogue op).
  double half_atol = 0;
  // Inputs are uniform in [-range, range]. A float sum of K products has an
  // absolute error near sqrt(K) * |partial sum| * 2^-24, which for outputs
  // that cancel to near zero the relative tolerance cannot cover; deep-K
  // cases use smaller inputs to stay under the checker's 1e-5 absolute floor.
  double range = 1;
};

namespace pc_detail {

using ir::Attribute;
using ir::DType;
using ir::OpKind;
using ir::Shape;

inline ir::Graph one_op(OpKind op, const std::vector<std::pair<DType, Shape>>& ins,
                        ir::AttributeMap a = {}, int outputs = 1, bool all_outputs = true) {
  GraphBuilder b;
  std::vector<ir::ValueId> v;
  for (size_t i = 0; i < ins.size(); ++i)
    v.push_back(b.input("x" + std::to_string(i), ins[i].first, ins[i].second));
  ir::ValueId y = b.node(op, v, std::move(a), outputs);
  b.output(y);
  if (all_outputs)
    for (int o = 1; o < outputs; ++o) b.output(y + o);
  return b.build();
}

inline ir::Graph optimized(ir::Graph g) {
  optimizer::PassContext ctx;
  auto st = optimizer::run_passes(g, ctx);
  (void)st;  // callers check the result by generating kernels
  return g;
}

inline Attribute ints(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }
inline Attribute i(int64_t v) { return Attribute::of_int(v); }

}  // namespace pc_detail

inline std::vector<KernelCase> matmul_cases() {
  using namespace pc_detail;
  const DType f32 = DType::kFloat32;
  std::vector<KernelCase> v;
  auto mm = [&](std::string label, DType dt, Shape a, Shape b, ir::AttributeMap at = {},
                double rtol = 1e-4, double half_atol = 0, double range = 1) {
    v.push_back({std::move(label),
                 [=] {
                   return one_op(OpKind::MatMul, {{dt, a}, {dt, b}}, at);
                 },
                 rtol, half_atol, range});
  };
  mm("matmul 37x53 * 53x29", f32, {37, 53}, {53, 29});
  mm("matmul [3,700,64] * [64,900] (128x128 tiles)", f32, {3, 700, 64}, {64, 900});
  mm("matmul 200x300 * 300x150", f32, {200, 300}, {300, 150}, {}, 1e-3, 0, 0.5);
  mm("matmul 1000x1000x1000", f32, {1000, 1000}, {1000, 1000}, {}, 1e-3, 0, 0.25);
  mm("matmul batch broadcast [2,1,33,65]x[3,65,17]", f32, {2, 1, 33, 65}, {3, 65, 17});
  mm("matmul 1-D x 2-D", f32, {70}, {70, 9});
  mm("matmul 2-D x 1-D", f32, {9, 70}, {70});
  mm("matmul 1-D x 1-D", f32, {130}, {130});
  mm("matmul K = 1", f32, {65, 1}, {1, 66});
  // Skinny products (M or N <= 8) take the 32-wide sweep kernel.
  mm("matmul skinny M = 4 [4,96]x[96,300]", f32, {4, 96}, {96, 300});
  mm("matmul skinny N = 3 [2,300,64]x[64,3]", f32, {2, 300, 64}, {64, 3});
  mm("matmul skinny M = 5 _trans_b (K-contiguous B)", f32, {5, 200}, {300, 200},
     testing::attrs({{"_trans_b", i(1)}}));
  mm("matmul skinny M = 0", f32, {0, 20}, {20, 30});
  mm("matmul skinny int32 [5,20]x[20,33]", DType::kInt32, {5, 20}, {20, 33});
  mm("matmul skinny f64 _trans_b", DType::kFloat64, {3, 70}, {40, 70},
     testing::attrs({{"_trans_b", i(1)}}));
  mm("matmul skinny fp16 M = 1", DType::kFloat16, {1, 256}, {256, 100}, {}, 1e-4, 2e-3);
  mm("matmul fp16 [4,77,96]x[96,130]", DType::kFloat16, {4, 77, 96}, {96, 130}, {}, 1e-4, 2e-3);
  mm("matmul bf16 [77,96]x[96,130]", DType::kBFloat16, {77, 96}, {96, 130}, {}, 1e-4, 2e-2);
  mm("matmul f64 [33,40]x[40,31]", DType::kFloat64, {33, 40}, {40, 31});
  mm("matmul int32 [3,17,20]x[20,9]", DType::kInt32, {3, 17, 20}, {20, 9});
  mm("matmul int64 [17,20]x[20,9]", DType::kInt64, {17, 20}, {20, 9});
  mm("matmul _trans_a _trans_b [2,40,33]^T x [2,31,40]^T", f32, {2, 40, 33}, {2, 31, 40},
     testing::attrs({{"_trans_a", i(1)}, {"_trans_b", i(1)}}));
  auto gemm = [&](std::string label, DType dt, Shape a, Shape b, std::optional<Shape> c,
                  ir::AttributeMap at) {
    std::vector<std::pair<DType, Shape>> ins{{dt, a}, {dt, b}};
    if (c) ins.push_back({dt, *c});
    v.push_back({std::move(label), [=] { return one_op(OpKind::Gemm, ins, at); }, 1e-4, 2e-3});
  };
  gemm("gemm plain", f32, {45, 70}, {70, 67}, std::nullopt, {});
  gemm("gemm transA transB alpha beta C[N]", f32, {70, 45}, {67, 70}, Shape{67},
       testing::attrs({{"transA", i(1)},
                       {"transB", i(1)},
                       {"alpha", Attribute::of_float(0.5)},
                       {"beta", Attribute::of_float(-2.0)}}));
  gemm("gemm C[M,1]", f32, {45, 70}, {70, 67}, Shape{45, 1}, {});
  gemm("gemm C[M,N] beta 0", f32, {45, 70}, {70, 67}, Shape{45, 67},
       testing::attrs({{"beta", Attribute::of_float(0.0)}}));
  gemm("gemm C scalar", f32, {45, 70}, {70, 67}, Shape{}, {});
  gemm("gemm fp16 C[1,N]", DType::kFloat16, {45, 70}, {70, 67}, Shape{1, 67},
       testing::attrs({{"transB", i(0)}}));
  gemm("gemm int32 alpha 3 beta -1", DType::kInt32, {20, 30}, {30, 10}, Shape{10},
       testing::attrs({{"alpha", Attribute::of_float(3)}, {"beta", Attribute::of_float(-1)}}));
  // Optimizer groups: MatMul + bias Add -> Gemm(C), then Relu in its epilogue;
  // a batched MatMul with bias, GELU and a residual add in its epilogue.
  v.push_back(
      {"fused gemm + bias + relu",
       [] {
         GraphBuilder b;
         auto x = b.input("x", DType::kFloat32, {50, 96});
         auto w = b.constant("w", random_tensor(DType::kFloat32, {96, 70}, test_rng(), -1, 1));
         auto bias = b.constant("bias", random_tensor(DType::kFloat32, {70}, test_rng(), -1, 1));
         auto y =
             b.node(OpKind::Relu, {b.node(OpKind::Add, {b.node(OpKind::MatMul, {x, w}), bias})});
         b.output(y);
         return optimized(b.build());
       },
       1e-4, 0});
  v.push_back(
      {"fused batched matmul + bias + gelu + residual",
       [] {
         GraphBuilder b;
         auto x = b.input("x", DType::kFloat32, {2, 33, 64});
         auto r = b.input("r", DType::kFloat32, {2, 33, 80});
         auto w = b.constant("w", random_tensor(DType::kFloat32, {64, 80}, test_rng(), -1, 1));
         auto bias = b.constant("bias", random_tensor(DType::kFloat32, {80}, test_rng(), -1, 1));
         auto h = b.node(OpKind::Add, {b.node(OpKind::MatMul, {x, w}), bias});
         b.output(b.node(OpKind::Add, {b.node(OpKind::Gelu, {h}), r}));
         return optimized(b.build());
       },
       1e-4, 0});
  return v;
}

inline std::vector<KernelCase> einsum_cases() {
  using namespace pc_detail;
  std::vector<KernelCase> v;
  auto es = [&](std::string eq, std::vector<Shape> shapes, DType dt = DType::kFloat32) {
    std::vector<std::pair<DType, Shape>> ins;
    for (auto& s : shapes) ins.push_back({dt, s});
    v.push_back({"einsum " + eq + " " + std::string(ir::dtype_name(dt)),
                 [=] {
                   return one_op(OpKind::Einsum, ins,
                                 testing::attrs({{"equation", Attribute::of_string(eq)}}));
                 },
                 1e-4, 2e-3});
  };
  es("ij,jk->ik", {{33, 70}, {70, 41}});
  es("bij,bjk->bik", {{3, 33, 70}, {3, 70, 41}});
  es("bhqd,bhkd->bhqk", {{2, 3, 17, 24}, {2, 3, 19, 24}});
  es("ik,jk", {{33, 20}, {41, 20}});  // implicit output "ij"
  es("i,i->", {{300}, {300}});
  es("i,j->ij", {{30}, {41}});
  es("...ij,...jk->...ik", {{2, 1, 9, 12}, {3, 12, 7}});
  es("ij,ij->ij", {{13, 17}, {13, 17}});
  es("bij,jk->bki", {{2, 33, 70}, {70, 41}});
  es("ij->ji", {{13, 17}});
  es("ii->i", {{19, 19}});
  es("bij->b", {{3, 11, 13}});
  es("ij,jk,kl->il", {{9, 10}, {10, 11}, {11, 12}});
  es("ij,jk->ik", {{33, 70}, {70, 41}}, DType::kFloat16);
  es("ij,jk->ik", {{33, 70}, {70, 41}}, DType::kInt32);
  return v;
}

inline std::vector<KernelCase> conv_cases() {
  using namespace pc_detail;
  const DType f32 = DType::kFloat32;
  std::vector<KernelCase> v;
  auto conv = [&](std::string label, OpKind op, DType dt, Shape x, Shape w, bool bias,
                  ir::AttributeMap at, double rtol = 1e-4, double range = 1) {
    std::vector<std::pair<DType, Shape>> ins{{dt, x}, {dt, w}};
    if (bias) {
      const int64_t m = op == OpKind::Conv ? w[0] : w[1] * at.get_int("group", 1);
      ins.push_back({dt, Shape{m}});
    }
    v.push_back({std::move(label), [=] { return one_op(op, ins, at); }, rtol, 2e-3, range});
  };
  const OpKind C = OpKind::Conv, T = OpKind::ConvTranspose;
  conv("conv2d 3x3 pad 1 bias", C, f32, {2, 5, 13, 11}, {7, 5, 3, 3}, true,
       testing::attrs({{"pads", ints({1, 1, 1, 1})}}));
  conv("conv2d stride 2 dilation 2 asym pads", C, f32, {1, 6, 17, 19}, {9, 6, 3, 2}, false,
       testing::attrs(
           {{"strides", ints({2, 3})}, {"dilations", ints({2, 1})}, {"pads", ints({1, 0, 2, 1})}}));
  conv("conv2d groups 3", C, f32, {2, 6, 10, 10}, {9, 2, 3, 3}, true,
       testing::attrs({{"group", i(3)}, {"pads", ints({1, 1, 1, 1})}}));
  conv("conv2d depthwise", C, f32, {2, 8, 15, 14}, {8, 1, 3, 3}, true,
       testing::attrs({{"group", i(8)}, {"pads", ints({1, 1, 1, 1})}, {"strides", ints({2, 2})}}));
  conv("conv2d depthwise multiplier 2", C, f32, {1, 4, 9, 9}, {8, 1, 5, 5}, false,
       testing::attrs({{"group", i(4)}, {"auto_pad", Attribute::of_string("SAME_UPPER")}}));
  conv("conv2d to 3 channels (skinny)", C, f32, {2, 16, 11, 13}, {3, 16, 3, 3}, true,
       testing::attrs({{"pads", ints({1, 1, 1, 1})}}));
  conv("conv2d 1x1 pointwise", C, f32, {2, 64, 7, 9}, {130, 64, 1, 1}, true, {});
  conv("conv2d auto_pad SAME_LOWER stride 2", C, f32, {1, 3, 16, 15}, {4, 3, 4, 4}, false,
       testing::attrs(
           {{"auto_pad", Attribute::of_string("SAME_LOWER")}, {"strides", ints({2, 2})}}));
  conv("conv2d 7x7 stride 2 (resnet stem)", C, f32, {1, 3, 64, 64}, {64, 3, 7, 7}, true,
       testing::attrs({{"pads", ints({3, 3, 3, 3})}, {"strides", ints({2, 2})}}));
  conv("conv2d deep K = 2304", C, f32, {1, 256, 9, 9}, {70, 256, 3, 3}, true,
       testing::attrs({{"pads", ints({1, 1, 1, 1})}}), 1e-3, 0.25);
  conv("conv1d", C, f32, {2, 4, 31}, {5, 4, 3}, true,
       testing::attrs({{"pads", ints({2, 1})}, {"dilations", ints({2})}}));
  conv("conv3d", C, f32, {1, 3, 6, 7, 8}, {4, 3, 3, 2, 3}, true,
       testing::attrs({{"pads", ints({1, 0, 1, 1, 1, 0})}, {"strides", ints({1, 2, 1})}}));
  conv("conv2d fp16", C, DType::kFloat16, {1, 8, 12, 12}, {16, 8, 3, 3}, true,
       testing::attrs({{"pads", ints({1, 1, 1, 1})}}));
  conv("conv2d bf16", C, DType::kBFloat16, {1, 8, 12, 12}, {16, 8, 3, 3}, true,
       testing::attrs({{"pads", ints({1, 1, 1, 1})}}));
  conv("conv2d f64", C, DType::kFloat64, {1, 4, 8, 8}, {5, 4, 3, 3}, true, {});
  conv("convT2d stride 2 output_padding 1", T, f32, {2, 6, 7, 5}, {6, 4, 3, 3}, true,
       testing::attrs({{"strides", ints({2, 2})},
                       {"pads", ints({1, 1, 1, 1})},
                       {"output_padding", ints({1, 1})}}));
  conv("convT2d groups 2 dilation 2", T, f32, {1, 4, 6, 6}, {4, 3, 3, 3}, false,
       testing::attrs({{"group", i(2)}, {"dilations", ints({2, 2})}}));
  conv("convT2d output_shape", T, f32, {1, 3, 5, 5}, {3, 2, 3, 3}, true,
       testing::attrs({{"strides", ints({3, 2})}, {"output_shape", ints({17, 11})}}));
  conv("convT1d", T, f32, {2, 3, 9}, {3, 5, 4}, true, testing::attrs({{"strides", ints({3})}}));
  conv("convT3d", T, f32, {1, 2, 3, 4, 3}, {2, 3, 2, 2, 2}, true,
       testing::attrs({{"strides", ints({2, 2, 2})}}));
  conv("convT2d fp16", T, DType::kFloat16, {1, 8, 6, 6}, {8, 4, 4, 4}, true,
       testing::attrs({{"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}}));
  // The optimizer's conv group: BatchNorm folded into the weights, then Relu
  // and a residual Add in the epilogue.
  v.push_back(
      {"fused conv + batchnorm + relu + residual",
       [] {
         GraphBuilder b;
         auto& rng = test_rng();
         auto x = b.input("x", DType::kFloat32, {2, 16, 10, 10});
         auto w = b.constant("w", random_tensor(DType::kFloat32, {16, 16, 3, 3}, rng, -1, 1));
         auto scale = b.constant("scale", random_tensor(DType::kFloat32, {16}, rng, 0.5, 1.5));
         auto shift = b.constant("shift", random_tensor(DType::kFloat32, {16}, rng, -1, 1));
         auto mean = b.constant("mean", random_tensor(DType::kFloat32, {16}, rng, -1, 1));
         auto var = b.constant("var", random_tensor(DType::kFloat32, {16}, rng, 0.5, 2));
         auto c = b.node(OpKind::Conv, {x, w}, testing::attrs({{"pads", ints({1, 1, 1, 1})}}));
         auto bn = b.node(OpKind::BatchNormalization, {c, scale, shift, mean, var});
         b.output(b.node(OpKind::Add, {b.node(OpKind::Relu, {bn}), x}));
         return optimized(b.build());
       },
       1e-4, 0});
  return v;
}

inline std::vector<KernelCase> pool_cases() {
  using namespace pc_detail;
  const DType f32 = DType::kFloat32;
  std::vector<KernelCase> v;
  auto pool = [&](std::string label, OpKind op, DType dt, Shape x, ir::AttributeMap at,
                  int outputs = 1) {
    v.push_back({std::move(label), [=] { return one_op(op, {{dt, x}}, at, outputs); }, 1e-4, 2e-3});
  };
  const OpKind MP = OpKind::MaxPool, AP = OpKind::AveragePool;
  pool("maxpool2d 3x3 s2 p1", MP, f32, {2, 3, 13, 12},
       testing::attrs({{"kernel_shape", ints({3, 3})},
                       {"strides", ints({2, 2})},
                       {"pads", ints({1, 1, 1, 1})}}));
  pool("maxpool2d ceil_mode dilation indices", MP, f32, {1, 2, 11, 10},
       testing::attrs({{"kernel_shape", ints({2, 3})},
                       {"strides", ints({2, 2})},
                       {"dilations", ints({2, 1})},
                       {"ceil_mode", i(1)}}),
       2);
  pool("maxpool2d indices storage_order 1", MP, f32, {2, 2, 7, 9},
       testing::attrs(
           {{"kernel_shape", ints({3, 2})}, {"storage_order", i(1)}, {"pads", ints({1, 0, 1, 1})}}),
       2);
  pool("maxpool1d SAME_UPPER", MP, f32, {2, 3, 17},
       testing::attrs({{"kernel_shape", ints({4})},
                       {"strides", ints({3})},
                       {"auto_pad", Attribute::of_string("SAME_UPPER")}}));
  pool("maxpool3d", MP, f32, {1, 2, 6, 7, 5},
       testing::attrs({{"kernel_shape", ints({2, 3, 2})}, {"strides", ints({2, 2, 1})}}), 2);
  pool("maxpool2d fp16", MP, DType::kFloat16, {1, 4, 9, 9},
       testing::attrs({{"kernel_shape", ints({3, 3})}}));
  pool("maxpool2d int8", MP, DType::kInt8, {1, 4, 9, 9},
       testing::attrs({{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}}));
  pool("maxpool2d uint8", MP, DType::kUInt8, {1, 4, 9, 9},
       testing::attrs({{"kernel_shape", ints({3, 3})}}));
  pool("avgpool2d pads exclude", AP, f32, {2, 3, 13, 12},
       testing::attrs({{"kernel_shape", ints({3, 3})},
                       {"strides", ints({2, 2})},
                       {"pads", ints({1, 1, 1, 1})}}));
  pool("avgpool2d pads include ceil", AP, f32, {2, 3, 12, 12},
       testing::attrs({{"kernel_shape", ints({3, 3})},
                       {"strides", ints({2, 2})},
                       {"pads", ints({1, 1, 1, 1})},
                       {"count_include_pad", i(1)},
                       {"ceil_mode", i(1)}}));
  pool("avgpool2d dilations", AP, f32, {1, 2, 10, 10},
       testing::attrs({{"kernel_shape", ints({2, 2})}, {"dilations", ints({2, 3})}}));
  pool("avgpool1d SAME_LOWER", AP, f32, {2, 3, 17},
       testing::attrs({{"kernel_shape", ints({4})},
                       {"auto_pad", Attribute::of_string("SAME_LOWER")},
                       {"count_include_pad", i(1)}}));
  pool("avgpool3d", AP, f32, {1, 2, 6, 7, 5},
       testing::attrs({{"kernel_shape", ints({3, 3, 3})}, {"pads", ints({1, 1, 1, 1, 1, 1})}}));
  pool("avgpool2d 20x20 window (rolled loops)", AP, f32, {1, 2, 45, 41},
       testing::attrs({{"kernel_shape", ints({20, 20})}, {"strides", ints({5, 7})}}));
  pool("avgpool2d bf16", AP, DType::kBFloat16, {1, 4, 9, 9},
       testing::attrs({{"kernel_shape", ints({3, 3})}}));
  for (OpKind op : {OpKind::GlobalAveragePool, OpKind::GlobalMaxPool}) {
    const std::string name = op == OpKind::GlobalMaxPool ? "globalmaxpool" : "globalavgpool";
    pool(name + " 7x7", op, f32, {2, 65, 7, 7}, {});
    pool(name + " 1000-element planes", op, f32, {2, 3, 25, 40}, {});
    pool(name + " 1-D fp16", op, DType::kFloat16, {3, 5, 300}, {});
    pool(name + " 3-D", op, f32, {1, 4, 3, 5, 6}, {});
    pool(name + " 1x1", op, f32, {2, 70, 1, 1}, {});
  }
  // A pool group: a Relu prologue and a Sigmoid epilogue around the pool.
  v.push_back({"fused relu -> maxpool -> sigmoid",
               [] {
                 GraphBuilder b;
                 auto x = b.input("x", DType::kFloat32, {2, 3, 12, 12});
                 auto p = b.node(
                     OpKind::MaxPool, {b.node(OpKind::Relu, {x})},
                     testing::attrs({{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}}));
                 b.output(b.node(OpKind::Sigmoid, {p}));
                 return optimized(b.build());
               },
               1e-4, 0});
  v.push_back({"fused scale -> globalavgpool -> relu",
               [] {
                 GraphBuilder b;
                 auto x = b.input("x", DType::kFloat32, {2, 20, 9, 9});
                 auto s = b.constant("s", ir::Tensor::from_f32({0.5f}, {}), false);
                 auto p = b.node(OpKind::GlobalAveragePool, {b.node(OpKind::Mul, {x, s})});
                 b.output(b.node(OpKind::Relu, {p}));
                 return optimized(b.build());
               },
               1e-4, 0});
  return v;
}

// Reductions anchoring a fused group (the pool and contraction tests above
// expect a gemm/conv/pool kernel; these run only through the emulator).
inline std::vector<KernelCase> reduction_cases() {
  using namespace pc_detail;
  std::vector<KernelCase> v;
  // A reduction whose axes are an initializer, fused with a prologue: the
  // group parameter bound to the axes must still be read at build time
  // (RegNetY's squeeze-excitation exported by the dynamo exporter).
  v.push_back({"reducemean with an add -> relu prologue, axes an initializer",
               [] {
                 GraphBuilder b;
                 auto x = b.input("x", DType::kFloat32, {2, 6, 5, 7});
                 auto bias = b.input("bias", DType::kFloat32, {1, 6, 1, 1});
                 auto axes = b.constant("axes", ir::Tensor::from_i64({2, 3}, {2}));
                 auto r = b.node(OpKind::Relu, {b.node(OpKind::Add, {x, bias})});
                 b.output(b.node(OpKind::ReduceMean, {r, axes},
                                 testing::attrs({{"keepdims", i(1)}})));
                 return optimized(b.build());
               },
               1e-4, 0});
  return v;
}

inline std::vector<KernelCase> all_kernel_cases() {
  std::vector<KernelCase> v;
  for (auto* f : {&matmul_cases, &einsum_cases, &conv_cases, &pool_cases, &reduction_cases})
    for (auto& c : (*f)()) v.push_back(std::move(c));
  return v;
}

}  // namespace graphc::testing
