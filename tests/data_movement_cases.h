// Graphs with one data-movement node each, shared by the CPU emit test
// (tests/data_movement_emit_test.cpp: every kernel compiles with NVRTC) and the
// GPU test (tests/gpu/data_movement_gpu_test.cpp: every kernel matches the
// reference executor on fresh random inputs). Sizes are odd (not multiples
// of tiles or vector widths). Runtime index inputs are drawn in [-2, 2] by
// the GPU check: every indexed dim is at least 3, so they are all valid and
// negative ones wrap; scatters get duplicates, which must apply in order.
#pragma once

#include <string>
#include <vector>

#include "tests/test_util.h"

namespace graphc::testing::dmcases {

struct Case {
  std::string name;
  ir::Graph graph;
  double lo = -2, hi = 2;  // range of the random inputs
  double rtol_f32 = 1e-4;  // float32 tolerance (reassociated sums)
  double half_atol = 0;
};

inline ir::Attribute ai(int64_t v) { return ir::Attribute::of_int(v); }
inline ir::Attribute as(std::string v) { return ir::Attribute::of_string(std::move(v)); }
inline ir::Attribute ais(std::vector<int64_t> v) { return ir::Attribute::of_ints(std::move(v)); }
inline ir::Attribute af(double v) { return ir::Attribute::of_float(v); }
inline ir::Tensor i64s(std::vector<int64_t> v) {
  auto n = static_cast<int64_t>(v.size());
  return ir::Tensor::from_i64(v, {n});
}
inline ir::Tensor f32s(std::vector<float> v) {
  auto n = static_cast<int64_t>(v.size());
  return ir::Tensor::from_f32(v, {n});
}

class Cases {
 public:
  // One node `op` on `inputs` built by `make`; its outputs are the graph's.
  template <typename F>
  void add(const std::string& name, F&& make, double lo = -2, double hi = 2, double rtol_f32 = 1e-4,
           double half_atol = 0) {
    GraphBuilder b;
    std::vector<ir::ValueId> outs = make(b);
    for (auto o : outs) b.output(o);
    cases_.push_back({name, b.build(), lo, hi, rtol_f32, half_atol});
  }
  std::vector<Case> take() { return std::move(cases_); }

 private:
  std::vector<Case> cases_;
};

using ir::DType;
using ir::OpKind;
using ir::ValueId;

inline std::vector<ValueId> one(ValueId v) { return {v}; }

inline void transpose_cases(Cases& c) {
  struct T {
    DType dt;
    ir::Shape s;
    std::vector<int64_t> perm;
  };
  for (const T& t : std::vector<T>{{DType::kFloat32, {3, 5, 7}, {2, 0, 1}},
                                   {DType::kFloat32, {2, 33, 65}, {0, 2, 1}},
                                   {DType::kFloat32, {4, 1, 6, 5}, {0, 2, 3, 1}},
                                   {DType::kFloat32, {3, 4, 5}, {1, 0, 2}},
                                   {DType::kFloat16, {37, 70}, {1, 0}},
                                   {DType::kBFloat16, {3, 35, 2, 9}, {3, 2, 0, 1}},
                                   {DType::kInt64, {5, 9, 3}, {1, 2, 0}},
                                   {DType::kBool, {17, 40}, {1, 0}},
                                   {DType::kFloat64, {33, 31}, {1, 0}},
                                   {DType::kInt8, {3, 4, 5, 6}, {3, 1, 0, 2}},
                                   {DType::kFloat32, {1, 1, 7}, {2, 1, 0}}}) {
    c.add(fmt::format("Transpose {} {} perm {}", ir::dtype_name(t.dt), ir::shape_to_string(t.s),
                      fmt::join(t.perm, ",")),
          [&](GraphBuilder& b) {
            auto x = b.input("x", t.dt, t.s);
            return one(b.node(OpKind::Transpose, {x}, testing::attrs({{"perm", ais(t.perm)}})));
          });
  }
}

inline void concat_split_slice_cases(Cases& c) {
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kInt64, DType::kBool}) {
    c.add(fmt::format("Concat axis 1 of three {}", ir::dtype_name(dt)), [&](GraphBuilder& b) {
      auto x = b.input("x", dt, {2, 3, 4});
      auto y = b.input("y", dt, {2, 1, 4});
      auto z = b.input("z", dt, {2, 6, 4});
      return one(b.node(OpKind::Concat, {x, y, z}, testing::attrs({{"axis", ai(1)}})));
    });
  }
  c.add("Concat axis -1 with an empty input and a repeated input", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat32, {3, 5});
    auto e = b.input("e", DType::kFloat32, {3, 0});
    return one(b.node(OpKind::Concat, {x, e, x}, testing::attrs({{"axis", ai(-1)}})));
  });
  c.add("Concat axis 0 int32", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kInt32, {1, 7});
    auto y = b.input("y", DType::kInt32, {4, 7});
    return one(b.node(OpKind::Concat, {x, y}, testing::attrs({{"axis", ai(0)}})));
  });
  for (DType dt : {DType::kFloat32, DType::kInt64}) {
    c.add(fmt::format("Split by sizes {}", ir::dtype_name(dt)), [&](GraphBuilder& b) {
      auto x = b.input("x", dt, {4, 10});
      auto s = b.constant("split", i64s({3, 7}));
      auto first = b.node(OpKind::Split, {x, s}, testing::attrs({{"axis", ai(1)}}), 2);
      return std::vector<ValueId>{first, first + 1};
    });
  }
  c.add("Split num_outputs=3 uneven, negative axis", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat16, {7, 3});
    auto first =
        b.node(OpKind::Split, {x}, testing::attrs({{"axis", ai(-2)}, {"num_outputs", ai(3)}}), 3);
    return std::vector<ValueId>{first, first + 1, first + 2};
  });
  c.add("Split with an omitted middle output", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat32, {3, 9});
    ir::Node n;
    n.op = OpKind::Split;
    n.name = "split_omitted";
    n.inputs = {x, b.constant("split", i64s({2, 3, 4}))};
    n.attrs = testing::attrs({{"axis", ai(1)}});
    for (const char* name : {"first", "third"}) {
      ir::Value v;
      v.name = name;
      n.outputs.push_back(b.graph().add_value(std::move(v)));
    }
    n.outputs.insert(n.outputs.begin() + 1, ir::kNoValue);
    std::vector<ValueId> outs = {n.outputs[0], n.outputs[2]};
    b.graph().add_node(std::move(n));
    return outs;
  });
  c.add("Slice negative steps and clamped ends", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat32, {7, 9, 5});
    auto st = b.constant("starts", i64s({-1, 1}));
    auto en = b.constant("ends", i64s({INT64_MIN, 100}));
    auto ax = b.constant("axes", i64s({0, -1}));
    auto sp = b.constant("steps", i64s({-2, 3}));
    return one(b.node(OpKind::Slice, {x, st, en, ax, sp}));
  });
  c.add("Slice fp16 middle window, no axes", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat16, {6, 11});
    auto st = b.constant("starts", i64s({1, 2}));
    auto en = b.constant("ends", i64s({5, -1}));
    return one(b.node(OpKind::Slice, {x, st, en}));
  });
  c.add("Slice int64 reversed whole axis", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kInt64, {4, 13});
    auto st = b.constant("starts", i64s({INT64_MAX}));
    auto en = b.constant("ends", i64s({INT64_MIN}));
    auto ax = b.constant("axes", i64s({1}));
    auto sp = b.constant("steps", i64s({-1}));
    return one(b.node(OpKind::Slice, {x, st, en, ax, sp}));
  });
}

inline void gather_cases(Cases& c) {
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBool, DType::kInt64}) {
    c.add(fmt::format("Gather axis 1 runtime int64 indices {}", ir::dtype_name(dt)),
          [&](GraphBuilder& b) {
            auto x = b.input("x", dt, {5, 4, 3});
            auto i = b.input("i", DType::kInt64, {2, 3});
            return one(b.node(OpKind::Gather, {x, i}, testing::attrs({{"axis", ai(1)}})));
          });
  }
  c.add("Gather axis -1 constant int32 indices", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat32, {3, 7});
    auto i = b.constant("i", ir::Tensor::from_i64({-1, 0, 6, -7}, {4}).cast_to(DType::kInt32));
    return one(b.node(OpKind::Gather, {x, i}, testing::attrs({{"axis", ai(-1)}})));
  });
  c.add("Gather scalar index axis 0", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat32, {6, 5});
    auto i = b.input("i", DType::kInt32, {});
    return one(b.node(OpKind::Gather, {x, i}));
  });
  c.add("GatherElements axis 1 runtime indices", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat32, {4, 5});
    auto i = b.input("i", DType::kInt64, {4, 3});
    return one(b.node(OpKind::GatherElements, {x, i}, testing::attrs({{"axis", ai(1)}})));
  });
  c.add("GatherElements axis -3 int32 indices fp16", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat16, {3, 4, 5});
    auto i = b.input("i", DType::kInt32, {5, 2, 5});
    return one(b.node(OpKind::GatherElements, {x, i}, testing::attrs({{"axis", ai(-3)}})));
  });
  c.add("GatherND tuples of 2", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat32, {3, 4, 5});
    auto i = b.input("i", DType::kInt64, {2, 3, 2});
    return one(b.node(OpKind::GatherND, {x, i}));
  });
  c.add("GatherND batch_dims 1", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kInt64, {3, 4, 5});
    auto i = b.input("i", DType::kInt64, {3, 2, 1});
    return one(b.node(OpKind::GatherND, {x, i}, testing::attrs({{"batch_dims", ai(1)}})));
  });
  c.add("GatherND full tuples", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat16, {3, 4, 5});
    auto i = b.input("i", DType::kInt64, {7, 3});
    return one(b.node(OpKind::GatherND, {x, i}));
  });
}

inline void scatter_cases(Cases& c) {
  for (const char* red : {"none", "add", "mul", "max", "min"}) {
    c.add(fmt::format("ScatterElements axis 0 reduction {}", red), [&](GraphBuilder& b) {
      auto x = b.input("x", DType::kFloat32, {5, 6});
      auto i = b.input("i", DType::kInt64, {3, 6});
      auto u = b.input("u", DType::kFloat32, {3, 6});
      return one(b.node(OpKind::ScatterElements, {x, i, u},
                        testing::attrs({{"axis", ai(0)}, {"reduction", as(red)}})));
    });
    c.add(fmt::format("ScatterND tuples of 2 reduction {}", red), [&](GraphBuilder& b) {
      auto x = b.input("x", DType::kFloat32, {5, 6, 4});
      auto i = b.input("i", DType::kInt64, {7, 2});
      auto u = b.input("u", DType::kFloat32, {7, 4});
      return one(b.node(OpKind::ScatterND, {x, i, u}, testing::attrs({{"reduction", as(red)}})));
    });
  }
  c.add("ScatterElements axis -1 int32 add", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kInt32, {4, 7});
    auto i = b.input("i", DType::kInt32, {3, 5});
    auto u = b.input("u", DType::kInt32, {3, 5});
    return one(b.node(OpKind::ScatterElements, {x, i, u},
                      testing::attrs({{"axis", ai(-1)}, {"reduction", as("add")}})));
  });
  for (const char* red : {"none", "add", "max"}) {
    c.add(fmt::format("ScatterElements many updates per line, reduction {}", red),
          [&](GraphBuilder& b) {
            auto x = b.input("x", DType::kFloat32, {6, 5, 7});
            auto i = b.input("i", DType::kInt64, {4, 40, 7});
            auto u = b.input("u", DType::kFloat32, {4, 40, 7});
            return one(b.node(OpKind::ScatterElements, {x, i, u},
                              testing::attrs({{"axis", ai(1)}, {"reduction", as(red)}})));
          });
  }
  c.add("ScatterElements many updates along the innermost axis, int64 mul", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kInt64, {3, 4});
    auto i = b.input("i", DType::kInt64, {2, 50});
    auto u = b.input("u", DType::kInt64, {2, 50});
    return one(b.node(OpKind::ScatterElements, {x, i, u},
                      testing::attrs({{"axis", ai(-1)}, {"reduction", as("mul")}})));
  });
  c.add("ScatterElements fp16 none", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat16, {3, 9});
    auto i = b.input("i", DType::kInt64, {3, 4});
    auto u = b.input("u", DType::kFloat16, {3, 4});
    return one(b.node(OpKind::ScatterElements, {x, i, u}, testing::attrs({{"axis", ai(1)}})));
  });
  c.add("ScatterND rows (tuples of 1) fp16 add", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat16, {5, 6, 3});
    auto i = b.input("i", DType::kInt64, {9, 1});
    auto u = b.input("u", DType::kFloat16, {9, 6, 3});
    return one(b.node(OpKind::ScatterND, {x, i, u}, testing::attrs({{"reduction", as("add")}})));
  });
  c.add("ScatterND single elements int64 mul", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kInt64, {3, 4, 5});
    auto i = b.input("i", DType::kInt64, {10, 3});
    auto u = b.input("u", DType::kInt64, {10});
    return one(b.node(OpKind::ScatterND, {x, i, u}, testing::attrs({{"reduction", as("mul")}})));
  });
  c.add("ScatterND large data, few tuples", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat32, {301, 513});
    auto i = b.input("i", DType::kInt64, {4, 1});
    auto u = b.input("u", DType::kFloat32, {4, 513});
    return one(b.node(OpKind::ScatterND, {x, i, u}));
  });
}

inline void pad_tile_cases(Cases& c) {
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kInt64, DType::kBool}) {
    c.add(fmt::format("Expand {}", ir::dtype_name(dt)), [&](GraphBuilder& b) {
      auto x = b.input("x", dt, {3, 1});
      auto s = b.constant("shape", i64s({2, 1, 5}));
      return one(b.node(OpKind::Expand, {x, s}));
    });
    c.add(fmt::format("Tile {}", ir::dtype_name(dt)), [&](GraphBuilder& b) {
      auto x = b.input("x", dt, {2, 3, 1});
      auto r = b.constant("repeats", i64s({3, 1, 4}));
      return one(b.node(OpKind::Tile, {x, r}));
    });
  }
  for (const char* mode : {"constant", "reflect", "edge", "wrap"}) {
    c.add(fmt::format("Pad {} with crop", mode), [&](GraphBuilder& b) {
      auto x = b.input("x", DType::kFloat32, {4, 6});
      auto p = b.constant("pads", i64s({1, -1, 2, 3}));
      return one(b.node(OpKind::Pad, {x, p}, testing::attrs({{"mode", as(mode)}})));
    });
    c.add(fmt::format("Pad {} wide fp16", mode), [&](GraphBuilder& b) {
      auto x = b.input("x", DType::kFloat16, {2, 3, 5});
      auto p = b.constant("pads", i64s({0, 4, 2, 1, 5, 3}));
      return one(b.node(OpKind::Pad, {x, p}, testing::attrs({{"mode", as(mode)}})));
    });
  }
  c.add("Pad constant runtime value, negative axes, int32", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kInt32, {3, 4, 5});
    auto p = b.constant("pads", i64s({2, 1, 0, 3}));
    auto v = b.input("v", DType::kInt32, {});
    auto a = b.constant("axes", i64s({-1, 0}));
    return one(b.node(OpKind::Pad, {x, p, v, a}));
  });
  for (const char* mode : {"DCR", "CRD"}) {
    c.add(fmt::format("DepthToSpace {}", mode), [&](GraphBuilder& b) {
      auto x = b.input("x", DType::kFloat32, {2, 12, 3, 5});
      return one(b.node(OpKind::DepthToSpace, {x},
                        testing::attrs({{"blocksize", ai(2)}, {"mode", as(mode)}})));
    });
  }
  c.add("SpaceToDepth fp16", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat16, {2, 3, 6, 9});
    return one(b.node(OpKind::SpaceToDepth, {x}, testing::attrs({{"blocksize", ai(3)}})));
  });
}

inline void generator_cases(Cases& c) {
  c.add("ConstantOfShape default float zeros", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat32, {3, 5});
    auto s = b.constant("s", i64s({3, 5}));
    return std::vector<ValueId>{b.node(OpKind::Add, {x, b.node(OpKind::ConstantOfShape, {s})})};
  });
  c.add("ConstantOfShape int64 and fp16 values", [](GraphBuilder& b) {
    auto t = b.constant("s", i64s({4, 7}));
    auto a = b.node(
        OpKind::ConstantOfShape, {t},
        testing::attrs({{"value", ir::Attribute::of_tensor(ir::Tensor::from_i64({-7}, {1}))}}));
    auto h =
        b.node(OpKind::ConstantOfShape, {t},
               testing::attrs(
                   {{"value", ir::Attribute::of_tensor(
                                  ir::Tensor::from_f32({0.1f}, {1}).cast_to(DType::kFloat16))}}));
    return std::vector<ValueId>{a, h};
  });
  c.add("Range float32", [](GraphBuilder& b) {
    auto r = b.node(OpKind::Range, {b.constant("s", ir::Tensor::from_f32({1.5f}, {})),
                                    b.constant("l", ir::Tensor::from_f32({40.3f}, {})),
                                    b.constant("d", ir::Tensor::from_f32({0.37f}, {}))});
    return one(r);
  });
  c.add("Range int64 negative delta", [](GraphBuilder& b) {
    return one(b.node(OpKind::Range, {b.constant("s", ir::Tensor::scalar_i64(10)),
                                      b.constant("l", ir::Tensor::scalar_i64(-300)),
                                      b.constant("d", ir::Tensor::scalar_i64(-3))}));
  });
  c.add("Range int32", [](GraphBuilder& b) {
    auto i32 = [](int64_t v) { return ir::Tensor::scalar_i64(v).cast_to(DType::kInt32); };
    return one(b.node(OpKind::Range, {b.constant("s", i32(-5)), b.constant("l", i32(100)),
                                      b.constant("d", i32(7))}));
  });
  for (int64_t k : {-2, 0, 1, 9}) {
    for (int64_t upper : {0, 1}) {
      c.add(fmt::format("Trilu k={} upper={}", k, upper), [&](GraphBuilder& b) {
        auto x = b.input("x", DType::kFloat32, {2, 5, 7});
        auto kk = b.constant("k", ir::Tensor::scalar_i64(k));
        return one(b.node(OpKind::Trilu, {x, kk}, testing::attrs({{"upper", ai(upper)}})));
      });
    }
  }
  c.add("Trilu without k, int64", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kInt64, {6, 4});
    return one(b.node(OpKind::Trilu, {x}));
  });
  c.add("OneHot axis -1 int64 indices", [](GraphBuilder& b) {
    auto i = b.input("i", DType::kInt64, {3, 4});
    auto d = b.constant("depth", ir::Tensor::scalar_i64(5));
    auto v = b.constant("values", f32s({-1.5f, 2.25f}));
    return one(b.node(OpKind::OneHot, {i, d, v}));
  });
  c.add("OneHot axis 0 float indices, int32 values", [](GraphBuilder& b) {
    auto i = b.input("i", DType::kFloat32, {3, 4});
    auto d = b.constant("depth", ir::Tensor::from_f32({3.0f}, {}));
    auto v = b.constant("values", i64s({0, 9}).cast_to(DType::kInt32));
    return one(b.node(OpKind::OneHot, {i, d, v}, testing::attrs({{"axis", ai(0)}})));
  });
  for (int64_t k : {-1, 0, 2}) {
    c.add(fmt::format("EyeLike k={}", k), [&](GraphBuilder& b) {
      auto x = b.input("x", DType::kFloat32, {5, 7});
      return one(b.node(OpKind::EyeLike, {x},
                        testing::attrs({{"k", ai(k)}, {"dtype", ai(7) /* int64 */}})));
    });
  }
  c.add("EyeLike bool", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kBool, {4, 3});
    return one(b.node(OpKind::EyeLike, {x}));
  });
}

inline void cumsum_cases(Cases& c) {
  struct S {
    DType dt;
    ir::Shape s;
    int64_t axis;
    int exclusive, reverse;
    double lo, hi, rtol;
  };
  for (const S& s : std::vector<S>{
           {DType::kFloat32, {3, 100}, 1, 0, 0, 0, 1, 1e-4},     // block scan
           {DType::kFloat32, {3, 100}, -1, 1, 0, 0, 1, 1e-4},    // block scan, exclusive
           {DType::kFloat32, {2, 5000}, 1, 0, 1, 0, 1, 1e-4},    // long rows, reverse
           {DType::kFloat32, {2, 3001}, 1, 1, 1, 0, 1, 1e-4},    // exclusive reverse
           {DType::kFloat32, {200, 3}, 0, 0, 1, 0, 1, 1e-4},    // block scan over strided rows
           {DType::kInt64, {4, 300}, 1, 1, 1, -2, 2, 0},         // exact
           {DType::kInt32, {3000, 10}, 1, 0, 0, -2, 2, 0},       // thread per row
           {DType::kFloat16, {8, 33}, 1, 1, 0, -2, 2, 0},        // sequential, exact order
           {DType::kFloat32, {2, 3, 17}, -2, 0, 1, -2, 2, 1e-4}  // sequential over a middle axis
       }) {
    c.add(
        fmt::format("CumSum {} {} axis {} exclusive {} reverse {}", ir::dtype_name(s.dt),
                    ir::shape_to_string(s.s), s.axis, s.exclusive, s.reverse),
        [&](GraphBuilder& b) {
          auto x = b.input("x", s.dt, s.s);
          auto a = b.constant("axis", ir::Tensor::scalar_i64(s.axis));
          return one(
              b.node(OpKind::CumSum, {x, a},
                     testing::attrs({{"exclusive", ai(s.exclusive)}, {"reverse", ai(s.reverse)}})));
        },
        s.lo, s.hi, s.rtol);
  }
}

inline void resize_cases(Cases& c) {
  using Attrs = std::vector<std::pair<std::string, ir::Attribute>>;
  struct R {
    std::string name;
    DType dt;
    ir::Shape x;
    std::vector<float> scales;  // empty: use sizes
    std::vector<int64_t> sizes;
    std::vector<float> roi;
    Attrs attrs;
  };
  std::vector<R> rs = {
      {"nearest asymmetric floor, int64",
       DType::kInt64,
       {1, 2, 3, 4},
       {1, 1, 2, 1.5f},
       {},
       {},
       {{"coordinate_transformation_mode", as("asymmetric")}, {"nearest_mode", as("floor")}}},
      {"nearest half_pixel round_prefer_ceil, sizes",
       DType::kFloat32,
       {1, 3, 5, 7},
       {},
       {1, 3, 9, 4},
       {},
       {{"nearest_mode", as("round_prefer_ceil")}}},
      {"nearest ceil align_corners fp16",
       DType::kFloat16,
       {2, 1, 6, 5},
       {1, 1, 0.6f, 2.3f},
       {},
       {},
       {{"coordinate_transformation_mode", as("align_corners")}, {"nearest_mode", as("ceil")}}},
      {"nearest tf_crop_and_resize extrapolation",
       DType::kFloat32,
       {1, 1, 4, 5},
       {},
       {1, 1, 7, 6},
       {0, 0, -0.2f, 0.1f, 1, 1, 1.3f, 0.8f},
       {{"coordinate_transformation_mode", as("tf_crop_and_resize")},
        {"extrapolation_value", af(10.0)}}},
      {"linear half_pixel up and down",
       DType::kFloat32,
       {1, 2, 5, 7},
       {},
       {1, 2, 9, 4},
       {},
       {{"mode", as("linear")}}},
      {"linear pytorch_half_pixel uint8",
       DType::kUInt8,
       {1, 3, 4, 6},
       {1, 1, 1.75f, 0.5f},
       {},
       {},
       {{"mode", as("linear")}, {"coordinate_transformation_mode", as("pytorch_half_pixel")}}},
      {"linear antialias downscale",
       DType::kFloat32,
       {1, 2, 11, 9},
       {1, 1, 0.4f, 0.6f},
       {},
       {},
       {{"mode", as("linear")}, {"antialias", ai(1)}}},
      {"cubic align_corners",
       DType::kFloat32,
       {1, 1, 6, 5},
       {},
       {1, 1, 11, 8},
       {},
       {{"mode", as("cubic")}, {"coordinate_transformation_mode", as("align_corners")}}},
      {"cubic exclude_outside a=-0.5 fp16",
       DType::kFloat16,
       {2, 2, 5, 6},
       {1, 1, 1.5f, 0.7f},
       {},
       {},
       {{"mode", as("cubic")}, {"exclude_outside", ai(1)}, {"cubic_coeff_a", af(-0.5)}}},
      {"cubic antialias downscale",
       DType::kFloat32,
       {1, 1, 12, 13},
       {1, 1, 0.5f, 0.3f},
       {},
       {},
       {{"mode", as("cubic")}, {"antialias", ai(1)}}},
      {"linear tf_crop_and_resize extrapolation",
       DType::kFloat32,
       {1, 1, 4, 5},
       {},
       {1, 1, 6, 7},
       {0, 0, -0.3f, 0.2f, 1, 1, 1.2f, 1.4f},
       {{"mode", as("linear")},
        {"coordinate_transformation_mode", as("tf_crop_and_resize")},
        {"extrapolation_value", af(-3.5)}}},
      {"linear half_pixel_symmetric 3-D",
       DType::kFloat32,
       {2, 5, 4},
       {1, 1.7f, 2.2f},
       {},
       {},
       {{"mode", as("linear")}, {"coordinate_transformation_mode", as("half_pixel_symmetric")}}},
  };
  for (const R& r : rs) {
    c.add(
        "Resize " + r.name,
        [&](GraphBuilder& b) {
          auto x = b.input("x", r.dt, r.x);
          ValueId roi = r.roi.empty() ? ir::kNoValue : b.constant("roi", f32s(r.roi));
          ValueId scales = r.scales.empty() ? ir::kNoValue : b.constant("scales", f32s(r.scales));
          ValueId sizes = r.sizes.empty() ? ir::kNoValue : b.constant("sizes", i64s(r.sizes));
          ir::AttributeMap a;
          for (const auto& [k, v] : r.attrs) a.set(k, v);
          std::vector<ValueId> in = {x, roi, scales};
          if (sizes != ir::kNoValue) in.push_back(sizes);
          return one(b.node(OpKind::Resize, in, a));
        },
        r.dt == DType::kUInt8 ? 0 : -2, r.dt == DType::kUInt8 ? 255 : 2);
  }
}

// Copies whose contiguous runs are whole 16-byte vectors (vectorised kernels).
inline void vector_cases(Cases& c) {
  c.add("vectorised Concat fp16 inner 8", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat16, {3, 2, 8});
    auto y = b.input("y", DType::kFloat16, {3, 5, 8});
    return one(b.node(OpKind::Concat, {x, y}, testing::attrs({{"axis", ai(1)}})));
  });
  c.add("vectorised Split float32", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat32, {3, 5, 4});
    auto s = b.constant("split", i64s({2, 3}));
    auto first = b.node(OpKind::Split, {x, s}, testing::attrs({{"axis", ai(1)}}), 2);
    return std::vector<ValueId>{first, first + 1};
  });
  c.add("vectorised Slice float32", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat32, {5, 16});
    auto st = b.constant("starts", i64s({1, 4}));
    auto en = b.constant("ends", i64s({-1, 12}));
    return one(b.node(OpKind::Slice, {x, st, en}));
  });
  c.add("vectorised Gather int64 rows", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kInt64, {6, 4});
    auto i = b.input("i", DType::kInt64, {5});
    return one(b.node(OpKind::Gather, {x, i}));
  });
  c.add("vectorised Expand float32", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat32, {3, 1, 8});
    return one(b.node(OpKind::Expand, {x, b.constant("shape", i64s({2, 3, 5, 8}))}));
  });
  c.add("vectorised Tile int8", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kInt8, {3, 16});
    return one(b.node(OpKind::Tile, {x, b.constant("repeats", i64s({2, 3}))}));
  });
  c.add("vectorised Transpose keeping the innermost dim", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat32, {3, 4, 8});
    return one(b.node(OpKind::Transpose, {x}, testing::attrs({{"perm", ais({1, 0, 2})}})));
  });
}

inline void dropout_cases(Cases& c) {
  c.add("Dropout inference with mask", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat16, {3, 37});
    auto first = b.node(OpKind::Dropout, {x}, {}, 2);
    return std::vector<ValueId>{first, first + 1};
  });
  c.add("Dropout training_mode with ratio 0", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat32, {5, 7});
    auto r = b.constant("ratio", ir::Tensor::from_f32({0.0f}, {}));
    auto m = b.constant("mode", ir::Tensor::scalar_i64(1).cast_to(DType::kBool));
    return one(b.node(OpKind::Dropout, {x, r, m}));
  });
}

inline void shape_cases(Cases& c) {
  c.add("Shape start 1 and Size", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat32, {3, 4, 5});
    return std::vector<ValueId>{b.node(OpKind::Shape, {x}, testing::attrs({{"start", ai(1)}})),
                                b.node(OpKind::Size, {x})};
  });
}

// Sizes past one grid of blocks (the kernels loop), many 32x32 tiles, and a
// row long enough for the block scan. GPU test only (slow on the reference).
inline std::vector<Case> large_cases() {
  Cases c;
  c.add("Transpose 3x129x1031 -> 1031x3x129", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat32, {3, 129, 1031});
    return one(b.node(OpKind::Transpose, {x}, testing::attrs({{"perm", ais({2, 0, 1})}})));
  });
  c.add("Transpose NCHW -> NHWC fp16", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat16, {8, 64, 33, 35});
    return one(b.node(OpKind::Transpose, {x}, testing::attrs({{"perm", ais({0, 2, 3, 1})}})));
  });
  c.add("embedding-style Gather", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat32, {50257, 67});
    auto i = b.input("i", DType::kInt64, {4, 301});
    return one(b.node(OpKind::Gather, {x, i}));
  });
  c.add(
      "CumSum one row of 300001",
      [](GraphBuilder& b) {
        auto x = b.input("x", DType::kFloat32, {1, 300001});
        return one(b.node(OpKind::CumSum, {x, b.constant("a", ir::Tensor::scalar_i64(1))}));
      },
      0, 1, 1e-3);
  c.add("Concat of large slabs int64", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kInt64, {2, 700, 1001});
    auto y = b.input("y", DType::kInt64, {2, 301, 1001});
    return one(b.node(OpKind::Concat, {x, y}, testing::attrs({{"axis", ai(1)}})));
  });
  c.add("vectorised KV-cache style Concat fp16", [](GraphBuilder& b) {
    auto x = b.input("x", DType::kFloat16, {2, 8, 300, 64});
    auto y = b.input("y", DType::kFloat16, {2, 8, 1, 64});
    return one(b.node(OpKind::Concat, {x, y}, testing::attrs({{"axis", ai(2)}})));
  });
  return c.take();
}

inline std::vector<Case> all_cases() {
  Cases c;
  transpose_cases(c);
  concat_split_slice_cases(c);
  gather_cases(c);
  scatter_cases(c);
  pad_tile_cases(c);
  generator_cases(c);
  cumsum_cases(c);
  resize_cases(c);
  vector_cases(c);
  dropout_cases(c);
  shape_cases(c);
  return c.take();
}

}  // namespace graphc::testing::dmcases
