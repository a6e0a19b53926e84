// Graphs whose data movement fuse-index-maps turns into one kernel each,
// shared by the CPU test (tests/index_map_test.cpp: the pass groups them, the
// reference gives the same bytes before and after, every kernel compiles with
// NVRTC), the kernel emulator (`graphc_kernel_emulator index-map`) and the GPU
// test (tests/gpu/index_map_gpu_test.cpp, [index-map]). Each op of a chain on
// its own (with an elementwise op after it, so there is a launch to save),
// chains of 2 to 6 ops, rolls made of Concats of shifted Slices (and of Split
// outputs), Swin's window partition/reverse round trip; fp32 and fp16.
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

#include "tests/data_movement_cases.h"

namespace graphc::testing::imcases {

using dmcases::ai;
using dmcases::ais;
using dmcases::Case;
using dmcases::Cases;
using dmcases::i64s;
using ir::DType;
using ir::OpKind;
using ir::ValueId;

struct Chain {
  GraphBuilder& b;
  ValueId c(std::vector<int64_t> v) {
    return b.constant(fmt::format("k{}", b.graph().values.size()), i64s(std::move(v)));
  }
  ValueId transpose(ValueId x, std::vector<int64_t> perm) {
    return b.node(OpKind::Transpose, {x}, attrs({{"perm", ais(std::move(perm))}}));
  }
  ValueId reshape(ValueId x, std::vector<int64_t> shape) {
    return b.node(OpKind::Reshape, {x, c(std::move(shape))});
  }
  ValueId slice(ValueId x, int64_t axis, int64_t start, int64_t end, int64_t step = 1) {
    return b.node(OpKind::Slice, {x, c({start}), c({end}), c({axis}), c({step})});
  }
  ValueId concat(std::vector<ValueId> xs, int64_t axis) {
    return b.node(OpKind::Concat, std::move(xs), attrs({{"axis", ai(axis)}}));
  }
  // torch.roll(x, shift, axis) as exported: Concat of the two shifted Slices.
  ValueId roll(ValueId x, int64_t axis, int64_t dim, int64_t shift) {
    const int64_t s = ((shift % dim) + dim) % dim;
    return concat({slice(x, axis, dim - s, dim), slice(x, axis, 0, dim - s)}, axis);
  }
  ValueId pad(ValueId x, std::vector<int64_t> pads) {
    return b.node(OpKind::Pad, {x, c(std::move(pads))}, attrs({{"mode", dmcases::as("constant")}}));
  }
  ValueId neg(ValueId x) { return b.node(OpKind::Neg, {x}); }
  ValueId add(ValueId x, ValueId y) { return b.node(OpKind::Add, {x, y}); }
  // Swin: [B, H, W, C] -> [B * H/w * W/w, w * w, C] and back.
  ValueId partition(ValueId x, int64_t B, int64_t H, int64_t W, int64_t C, int64_t w) {
    auto r = reshape(x, {B, H / w, w, W / w, w, C});
    auto t = transpose(r, {0, 1, 3, 2, 4, 5});
    return reshape(t, {-1, w * w, C});
  }
  ValueId reverse(ValueId x, int64_t B, int64_t H, int64_t W, int64_t C, int64_t w) {
    auto r = reshape(x, {B, H / w, W / w, w, w, C});
    auto t = transpose(r, {0, 1, 3, 2, 4, 5});
    return reshape(t, {B, H, W, C});
  }
};

inline std::string dt_name(DType dt) { return std::string(ir::dtype_name(dt)); }

// Each op of a chain once, followed by Neg (or an Add with a second input).
inline void single_op_cases(Cases& cs) {
  for (DType dt : {DType::kFloat32, DType::kFloat16}) {
    const std::string d = dt_name(dt);
    cs.add("Transpose then Add " + d, [&](GraphBuilder& b) {
      Chain k{b};
      auto x = b.input("x", dt, {3, 5, 4, 6});
      auto y = b.input("y", dt, {5, 3, 4, 6});
      return dmcases::one(k.add(k.transpose(x, {1, 0, 2, 3}), y));
    });
    cs.add("Slice with step then Neg " + d, [&](GraphBuilder& b) {
      Chain k{b};
      auto x = b.input("x", dt, {4, 13, 6});
      return dmcases::one(k.neg(k.slice(x, 1, 1, 12, 3)));
    });
    cs.add("Slice negative step then Neg " + d, [&](GraphBuilder& b) {
      Chain k{b};
      auto x = b.input("x", dt, {4, 9, 5});
      return dmcases::one(k.neg(k.slice(x, -1, -1, -100, -2)));
    });
    cs.add("Concat of three then Neg " + d, [&](GraphBuilder& b) {
      Chain k{b};
      auto x = b.input("x", dt, {2, 3, 5});
      auto y = b.input("y", dt, {2, 1, 5});
      auto z = b.input("z", dt, {2, 4, 5});
      return dmcases::one(k.neg(k.concat({x, y, z}, 1)));
    });
    cs.add("constant Pad with crop then Neg " + d, [&](GraphBuilder& b) {
      Chain k{b};
      auto x = b.input("x", dt, {3, 7, 5});
      auto p = b.node(OpKind::Pad, {x, k.c({0, 2, -1, 1, 1, 3}), b.constant("v", ir::Tensor::from_f32({0.5f}, {}).cast_to(dt))});
      return dmcases::one(k.neg(p));
    });
    cs.add("Expand then Add " + d, [&](GraphBuilder& b) {
      Chain k{b};
      auto x = b.input("x", dt, {3, 1, 5});
      auto y = b.input("y", dt, {2, 3, 4, 5});
      return dmcases::one(k.add(b.node(OpKind::Expand, {x, k.c({2, 3, 4, 5})}), y));
    });
    cs.add("Tile then Neg " + d, [&](GraphBuilder& b) {
      Chain k{b};
      auto x = b.input("x", dt, {2, 3, 5});
      return dmcases::one(k.neg(b.node(OpKind::Tile, {x, k.c({2, 1, 3})})));
    });
    cs.add("Gather constant indices then Neg " + d, [&](GraphBuilder& b) {
      Chain k{b};
      auto x = b.input("x", dt, {4, 6, 3});
      auto i = b.constant("idx", ir::Tensor::from_i64({5, -1, 0, 2, 2, -6}, {2, 3}));
      return dmcases::one(k.neg(b.node(OpKind::Gather, {x, i}, attrs({{"axis", ai(1)}}))));
    });
    cs.add("Split output 1 then Neg " + d, [&](GraphBuilder& b) {
      Chain k{b};
      auto x = b.input("x", dt, {3, 10, 2});
      auto s0 = b.node(OpKind::Split, {x, k.c({4, 6})}, attrs({{"axis", ai(1)}}), 2);
      ValueId s1 = s0 + 1;  // the second output; the first is unread
      return dmcases::one(k.neg(s1));
    });
    cs.add("Squeeze Unsqueeze Flatten then Neg " + d, [&](GraphBuilder& b) {
      Chain k{b};
      auto x = b.input("x", dt, {3, 1, 4, 5});
      auto s = b.node(OpKind::Squeeze, {x, k.c({1})});
      auto t = k.transpose(s, {1, 0, 2});
      auto u = b.node(OpKind::Unsqueeze, {t, k.c({0})});
      auto f = b.node(OpKind::Flatten, {u}, attrs({{"axis", ai(2)}}));
      return dmcases::one(k.neg(f));
    });
  }
}

// Chains of 2 to 6 index-map ops, rolls and the window round trip.
inline void chain_cases(Cases& cs) {
  for (DType dt : {DType::kFloat32, DType::kFloat16}) {
    const std::string d = dt_name(dt);
    cs.add("chain 2: Transpose Slice " + d, [&](GraphBuilder& b) {
      Chain k{b};
      auto x = b.input("x", dt, {2, 5, 7, 3});
      return dmcases::one(k.slice(k.transpose(x, {0, 2, 1, 3}), 1, 1, 6));
    });
    cs.add("chain 3: roll one axis " + d, [&](GraphBuilder& b) {
      Chain k{b};
      auto x = b.input("x", dt, {2, 7, 6, 4});
      return dmcases::one(k.roll(x, 1, 7, -3));
    });
    cs.add("chain 4: Pad then Slice Slice Concat " + d, [&](GraphBuilder& b) {
      Chain k{b};
      auto x = b.input("x", dt, {1, 5, 6, 3});
      auto p = k.pad(x, {0, 0, 0, 0, 0, 3, 2, 0});
      return dmcases::one(k.roll(p, 2, 8, 2));
    });
    cs.add("chain 5: Gather Transpose Reshape Tile Slice " + d, [&](GraphBuilder& b) {
      Chain k{b};
      auto x = b.input("x", dt, {5, 4, 3});
      auto i = b.constant("idx", ir::Tensor::from_i64({4, 0, 2}, {3}));
      auto g = b.node(OpKind::Gather, {x, i}, attrs({{"axis", ai(0)}}));
      auto t = k.transpose(g, {1, 0, 2});
      auto r = k.reshape(t, {2, 6, 3});
      auto tl = b.node(OpKind::Tile, {r, k.c({1, 2, 1})});
      return dmcases::one(k.slice(tl, 1, 3, 11, 2));
    });
    cs.add("chain 6: roll two axes then partition " + d, [&](GraphBuilder& b) {
      Chain k{b};
      auto x = b.input("x", dt, {1, 8, 8, 3});
      auto r = k.roll(k.roll(x, 1, 8, -2), 2, 8, -2);
      return dmcases::one(k.partition(r, 1, 8, 8, 3, 4));
    });
    cs.add("chain roll by Split and Concat " + d, [&](GraphBuilder& b) {
      Chain k{b};
      auto x = b.input("x", dt, {3, 9, 2});
      auto s0 = b.node(OpKind::Split, {x, k.c({2, 7})}, attrs({{"axis", ai(1)}}), 2);
      return dmcases::one(k.concat({s0 + 1, s0}, 1));
    });
    // The Mul and the residual Add round once in the kernel, twice in the reference.
    const double atol = dt == DType::kFloat16 ? 1e-2 : 0;
    cs.add("chain window partition and reverse round trip " + d, [&](GraphBuilder& b) {
      Chain k{b};
      auto x = b.input("x", dt, {2, 6, 9, 4});
      auto p = k.pad(x, {0, 0, 0, 0, 0, 0, 3, 0});  // W 9 -> 12
      auto w = k.partition(k.roll(k.roll(p, 1, 6, -1), 2, 12, -1), 2, 6, 12, 4, 3);
      auto s = b.node(OpKind::Mul, {w, b.constant("s", ir::Tensor::from_f32({1.5f}, {}).cast_to(dt))});
      auto r = k.reverse(s, 2, 6, 12, 4, 3);
      auto back = k.roll(k.roll(r, 1, 6, 1), 2, 12, 1);
      auto crop = k.slice(back, 2, 0, 9);
      auto y = b.input("y", dt, {2, 6, 9, 4});
      return dmcases::one(k.add(crop, y));  // the residual
    }, -2, 2, 1e-4, atol);
  }
}

inline std::vector<Case> all_cases() {
  Cases cs;
  single_op_cases(cs);
  chain_cases(cs);
  return cs.take();
}

}  // namespace graphc::testing::imcases
