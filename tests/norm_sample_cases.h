// Graphs for the GPU lowerings of the once reference-only operators:
// GroupNormalization (per-channel and per-group affine), RMSNormalization,
// LpNormalization, DynamicQuantizeLinear, RotaryEmbedding, GridSample and
// Col2Im, several shapes each in fp32 and fp16 (bf16 too for the
// normalizations; DynamicQuantizeLinear takes float32 alone), including rows long enough that the team kernels leave
// the register-cached path, and fused normalization groups (a SiLU epilogue
// after GroupNormalization, a residual add before RMSNormalization, as
// diffusion UNets and Llama blocks have them). Shared by the emulator
// (`graphc_kernel_emulator cases norm-sample`), the NVRTC compile test
// (tests/norm_sample_emit_test.cpp) and the GPU test
// (tests/gpu/norm_sample_gpu_test.cpp), each against the reference executor
// on fresh random inputs.
#pragma once

#include <string>
#include <vector>

#include "optimizer/passes.h"
#include "tests/data_movement_cases.h"

namespace graphc::testing::nscases {

using dmcases::af;
using dmcases::ai;
using dmcases::ais;
using dmcases::as;
using dmcases::Case;
using dmcases::Cases;
using dmcases::i64s;
using dmcases::one;
using ir::DType;
using ir::OpKind;
using ir::ValueId;

// Every case name starts with this, so the emulator can run them alone.
inline const std::string kPrefix = "norm-sample ";

inline std::string dn(DType t) { return std::string(ir::dtype_name(t)); }

// A tensor of `dt` with values v0 + step * i (never all zeros).
inline ir::Tensor ramp(DType dt, const ir::Shape& s, double v0, double step) {
  ir::Tensor t(dt, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_f64(i, v0 + step * static_cast<double>(i % 97));
  return t;
}

inline void rms_cases(Cases& c) {
  struct R {
    DType dt;
    ir::Shape x, scale;
    int64_t axis;
  };
  for (const R& r : std::vector<R>{{DType::kFloat32, {3, 7, 64}, {64}, -1},
                                   {DType::kFloat32, {2, 3, 1000}, {1000}, 2},
                                   {DType::kFloat32, {2, 20000}, {20000}, -1},  // not cached
                                   {DType::kFloat32, {2, 3, 5, 7}, {3, 5, 7}, 1},
                                   {DType::kFloat32, {2, 3, 5, 7}, {1, 7}, 1},
                                   {DType::kFloat16, {4, 33, 96}, {96}, -1},
                                   {DType::kBFloat16, {3, 257}, {257}, -1}}) {
    c.add(fmt::format("{}RMSNormalization {} {} axis {} scale {}", kPrefix, dn(r.dt),
                      ir::shape_to_string(r.x), r.axis, ir::shape_to_string(r.scale)),
          [&](GraphBuilder& b) {
            auto x = b.input("x", r.dt, r.x);
            auto s = b.input("scale", r.dt, r.scale);
            return one(b.node(OpKind::RMSNormalization, {x, s},
                              attrs({{"axis", ai(r.axis)}, {"epsilon", af(1e-3)}})));
          },
          -2, 2, 1e-4, 2e-2);
  }
}

inline void group_norm_cases(Cases& c) {
  struct G {
    DType dt;
    ir::Shape x;
    int64_t groups;
    bool per_group;  // opset 18's [groups] scale and bias
  };
  for (const G& g : std::vector<G>{{DType::kFloat32, {2, 6, 5, 7}, 3, false},
                                   {DType::kFloat32, {2, 6, 4, 4}, 3, true},
                                   {DType::kFloat32, {2, 8, 33}, 4, false},
                                   {DType::kFloat32, {1, 4, 160, 160}, 2, false},  // not cached
                                   {DType::kFloat16, {1, 32, 9, 9}, 8, false},
                                   {DType::kBFloat16, {2, 12, 6, 5}, 4, true}}) {
    const int64_t affine = g.per_group ? g.groups : g.x[1];
    c.add(fmt::format("{}GroupNormalization {} {} groups {}{}", kPrefix, dn(g.dt),
                      ir::shape_to_string(g.x), g.groups, g.per_group ? " per group" : ""),
          [&](GraphBuilder& b) {
            auto x = b.input("x", g.dt, g.x);
            auto s = b.input("scale", g.dt, {affine});
            auto bias = b.input("bias", g.dt, {affine});
            return one(b.node(OpKind::GroupNormalization, {x, s, bias},
                              attrs({{"num_groups", ai(g.groups)}, {"epsilon", af(1e-4)}})));
          },
          -2, 2, 1e-4, 2e-2);
  }
}

inline void lp_norm_cases(Cases& c) {
  struct L {
    DType dt;
    ir::Shape x;
    int64_t axis, p;
  };
  for (const L& l : std::vector<L>{{DType::kFloat32, {5, 37}, -1, 2},
                                   {DType::kFloat32, {3, 4, 5}, 1, 1},  // strided rows
                                   {DType::kFloat32, {2, 700}, 1, 1},
                                   {DType::kFloat16, {6, 10}, 0, 2}}) {
    c.add(fmt::format("{}LpNormalization {} {} axis {} p {}", kPrefix, dn(l.dt),
                      ir::shape_to_string(l.x), l.axis, l.p),
          [&](GraphBuilder& b) {
            auto x = b.input("x", l.dt, l.x);
            return one(b.node(OpKind::LpNormalization, {x}, attrs({{"axis", ai(l.axis)}, {"p", ai(l.p)}})));
          },
          -2, 2, 1e-4, 1e-2);
  }
}

inline void dynamic_quantize_cases(Cases& c) {
  struct Q {
    DType dt;
    ir::Shape x;
    double lo, hi;
  };
  for (const Q& q : std::vector<Q>{{DType::kFloat32, {3, 5, 7}, -2, 2},
                                   {DType::kFloat32, {10000}, -1, 3},
                                   {DType::kFloat32, {7, 10000}, -3, 1},  // not cached
                                   {DType::kFloat32, {4, 9}, 0.5, 3},     // range starts at 0
                                   {DType::kFloat32, {4, 9}, -3, -0.5}}) {  // range ends at 0
    c.add(fmt::format("{}DynamicQuantizeLinear {} {} in [{}, {}]", kPrefix, dn(q.dt),
                      ir::shape_to_string(q.x), q.lo, q.hi),
          [&](GraphBuilder& b) {
            auto x = b.input("x", q.dt, q.x);
            ValueId y = b.node(OpKind::DynamicQuantizeLinear, {x}, {}, 3);
            return std::vector<ValueId>{y, y + 1, y + 2};
          },
          q.lo, q.hi);
  }
}

inline void rotary_cases(Cases& c) {
  struct R {
    DType dt;
    ir::Shape x;  // [B, H, S, D] or [B, S, H*D]
    int64_t heads, rot;
    bool interleaved, pos;
  };
  for (const R& r : std::vector<R>{{DType::kFloat32, {2, 3, 5, 8}, 0, 0, false, true},
                                   {DType::kFloat32, {2, 3, 5, 8}, 0, 4, true, true},
                                   {DType::kFloat32, {2, 5, 24}, 3, 0, false, false},
                                   {DType::kFloat32, {2, 5, 24}, 3, 6, true, false},
                                   {DType::kFloat32, {1, 4, 33, 64}, 0, 32, false, true},
                                   {DType::kFloat16, {2, 7, 4, 16}, 0, 0, true, true}}) {
    const bool four = r.x.size() == 4;
    const int64_t b_ = r.x[0], s_ = four ? r.x[2] : r.x[1];
    const int64_t head = four ? r.x[3] : r.x[2] / r.heads;
    const int64_t half = (r.rot ? r.rot : head) / 2;
    const int64_t max_pos = 40;
    c.add(fmt::format("{}RotaryEmbedding {} {} rot {}{}{}", kPrefix, dn(r.dt), ir::shape_to_string(r.x),
                      r.rot, r.interleaved ? " interleaved" : "", r.pos ? " position_ids" : ""),
          [&](GraphBuilder& b) {
            auto x = b.input("x", r.dt, r.x);
            const ir::Shape cache = r.pos ? ir::Shape{max_pos, half} : ir::Shape{b_, s_, half};
            auto cs = b.input("cos", r.dt, cache);
            auto sn = b.input("sin", r.dt, cache);
            std::vector<ValueId> ins{x, cs, sn};
            if (r.pos) {
              ir::Tensor p(DType::kInt64, {b_, s_});
              for (int64_t i = 0; i < p.numel(); ++i) p.set_i64(i, (i * 7 + 3) % max_pos);
              ins.push_back(b.constant("position_ids", p));
            }
            ir::AttributeMap a = attrs({{"interleaved", ai(r.interleaved ? 1 : 0)}});
            if (r.rot) a.set("rotary_embedding_dim", ai(r.rot));
            if (r.heads) a.set("num_heads", ai(r.heads));
            return one(b.node(OpKind::RotaryEmbedding, ins, a));
          },
          -2, 2, 1e-4, 1e-2);
  }
}

inline void grid_sample_cases(Cases& c) {
  struct S {
    DType dt;
    ir::Shape x, grid;
    std::string mode, pad;
    int64_t align;
  };
  for (const S& s : std::vector<S>{
           {DType::kFloat32, {2, 3, 6, 7}, {2, 4, 5, 2}, "linear", "zeros", 0},
           {DType::kFloat32, {2, 3, 6, 7}, {2, 4, 5, 2}, "nearest", "border", 0},
           {DType::kFloat32, {1, 2, 5, 6}, {1, 7, 3, 2}, "cubic", "reflection", 1},
           {DType::kFloat32, {1, 2, 5, 6}, {1, 7, 3, 2}, "cubic", "zeros", 0},
           {DType::kFloat32, {2, 2, 5, 6}, {2, 3, 4, 2}, "linear", "reflection", 0},
           {DType::kFloat32, {1, 2, 4, 5, 6}, {1, 3, 3, 4, 3}, "linear", "border", 1},
           {DType::kFloat32, {1, 2, 4, 5, 6}, {1, 3, 3, 4, 3}, "nearest", "zeros", 0},
           {DType::kFloat16, {2, 4, 8, 9}, {2, 6, 5, 2}, "linear", "reflection", 1}}) {
    c.add(fmt::format("{}GridSample {} {} grid {} {} {} align {}", kPrefix, dn(s.dt),
                      ir::shape_to_string(s.x), ir::shape_to_string(s.grid), s.mode, s.pad, s.align),
          [&](GraphBuilder& b) {
            auto x = b.input("x", s.dt, s.x);
            auto grid = b.input("grid", s.dt, s.grid);
            return one(b.node(OpKind::GridSample, {x, grid},
                              attrs({{"mode", as(s.mode)},
                                     {"padding_mode", as(s.pad)},
                                     {"align_corners", ai(s.align)}})));
          },
          -1.3, 1.3, 1e-4, 1e-2);  // past the borders, so padding matters
  }
}

inline void col2im_cases(Cases& c) {
  struct C {
    DType dt;
    int64_t n, ch;
    std::vector<int64_t> image, block, dil, strides, pads;
  };
  for (const C& k : std::vector<C>{
           {DType::kFloat32, 2, 3, {5, 6}, {2, 2}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
           {DType::kFloat32, 1, 2, {7, 8}, {2, 3}, {2, 1}, {2, 2}, {1, 0, 1, 1}},
           {DType::kFloat32, 1, 2, {4, 5, 6}, {2, 2, 3}, {1, 1, 1}, {1, 2, 1}, {0, 0, 1, 0, 1, 0}},
           {DType::kFloat16, 2, 4, {9, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}}) {
    const size_t nd = k.image.size();
    int64_t kprod = 1, lprod = 1;
    for (size_t d = 0; d < nd; ++d) {
      kprod *= k.block[d];
      lprod *= (k.image[d] + k.pads[d] + k.pads[d + nd] - k.dil[d] * (k.block[d] - 1) - 1) /
                   k.strides[d] + 1;
    }
    c.add(fmt::format("{}Col2Im {} image {} block {} dil {} strides {} pads {}", kPrefix, dn(k.dt),
                      fmt::join(k.image, "x"), fmt::join(k.block, "x"), fmt::join(k.dil, ","),
                      fmt::join(k.strides, ","), fmt::join(k.pads, ",")),
          [&](GraphBuilder& b) {
            auto x = b.input("x", k.dt, {k.n, k.ch * kprod, lprod});
            auto img = b.constant("image_shape", i64s(k.image));
            auto blk = b.constant("block_shape", i64s(k.block));
            return one(b.node(OpKind::Col2Im, {x, img, blk},
                              attrs({{"dilations", ais(k.dil)},
                                     {"strides", ais(k.strides)},
                                     {"pads", ais(k.pads)}})));
          },
          -2, 2, 1e-4, 2e-2);
  }
}

// Fused groups, as the default pipeline makes them: SiLU after
// GroupNormalization (UNet), a residual add before RMSNormalization (Llama).
inline void fused_norm_cases(std::vector<Case>& out) {
  for (DType dt : {DType::kFloat32, DType::kFloat16}) {
    {
      GraphBuilder b;
      auto x = b.input("x", dt, {2, 16, 9, 11});
      auto s = b.input("scale", dt, {16});
      auto bias = b.input("bias", dt, {16});
      auto gn = b.node(OpKind::GroupNormalization, {x, s, bias}, attrs({{"num_groups", ai(4)}}));
      auto sig = b.node(OpKind::Sigmoid, {gn});
      b.output(b.node(OpKind::Mul, {gn, sig}));
      out.push_back({kPrefix + "fused GroupNormalization + SiLU " + dn(dt), b.build(), -2, 2, 1e-4,
                     2e-2});
    }
    {
      GraphBuilder b;
      auto x = b.input("x", dt, {3, 5, 128});
      auto r = b.input("residual", dt, {3, 5, 128});
      auto s = b.input("scale", dt, {128});
      auto sum = b.node(OpKind::Add, {x, r});
      b.output(b.node(OpKind::RMSNormalization, {sum, s}, attrs({{"epsilon", af(1e-6)}})));
      out.push_back({kPrefix + "fused residual add + RMSNormalization " + dn(dt), b.build(), -2, 2,
                     1e-4, 2e-2});
    }
  }
  // Through the default pipeline, so the groups are the ones an engine gets.
  for (Case& c : out) {
    optimizer::PassContext ctx;
    Status st = optimizer::run_passes(c.graph, ctx);
    if (!st.ok()) c.name += " (passes failed: " + st.message() + ")";
  }
}

inline std::vector<Case> all_cases() {
  Cases c;
  rms_cases(c);
  group_norm_cases(c);
  lp_norm_cases(c);
  dynamic_quantize_cases(c);
  rotary_cases(c);
  grid_sample_cases(c);
  col2im_cases(c);
  std::vector<Case> out = c.take();
  std::vector<Case> fused;
  fused_norm_cases(fused);
  for (Case& f : fused) out.push_back(std::move(f));
  return out;
}

}  // namespace graphc::testing::nscases
