// Graphs with one DFT, STFT, Det, ReverseSequence or RoiAlign node each, for
// the emulator (`graphc_kernel_emulator cases DFT` ...), the NVRTC compile
// test (through dmcases::all_cases) and tests/gpu/signal_gpu_test.cpp: the
// generated kernel against the reference executor on fresh random inputs.
// Sizes are odd; sizes and indices that decide shapes or must be in range
// (dft_length, axis, frame_step, sequence_lens, batch_indices) are constants.
#pragma once

#include "tests/data_movement_cases.h"

namespace graphc::testing::dmcases {

inline void dft_cases(Cases& c) {
  struct D {
    DType dt;
    ir::Shape s;
    int64_t axis;
    int64_t length;  // 0: none
    bool inverse, onesided;
  };
  for (const D& d : std::vector<D>{{DType::kFloat32, {2, 13, 3, 1}, 1, 0, false, false},
                                   {DType::kFloat32, {2, 13, 3, 1}, 2, 0, false, false},
                                   {DType::kFloat32, {3, 12, 2}, 1, 0, false, true},
                                   {DType::kFloat32, {2, 7, 3, 2}, -3, 0, true, false},
                                   {DType::kFloat32, {3, 5, 2}, 1, 8, true, true},
                                   {DType::kFloat32, {2, 6, 4, 2}, 1, 0, true, true},
                                   {DType::kFloat32, {2, 9, 1}, 1, 5, false, false},
                                   {DType::kFloat32, {2, 9, 2}, 1, 14, false, false},
                                   {DType::kFloat16, {4, 12, 2}, 1, 0, false, false},
                                   {DType::kFloat64, {3, 11, 1}, 1, 0, false, true},
                                   {DType::kFloat32, {1, 4097, 1}, 1, 0, false, true}}) {
    c.add(fmt::format("DFT {} {} axis {} length {} inverse {} onesided {}", ir::dtype_name(d.dt),
                      ir::shape_to_string(d.s), d.axis, d.length, d.inverse, d.onesided),
          [&](GraphBuilder& b) {
            auto x = b.input("x", d.dt, d.s);
            auto n = d.length ? b.constant("n", ir::Tensor::scalar_i64(d.length)) : ir::kNoValue;
            auto a = b.constant("axis", ir::Tensor::scalar_i64(d.axis));
            return one(b.node(OpKind::DFT, {x, n, a},
                              testing::attrs({{"inverse", ai(d.inverse)}, {"onesided", ai(d.onesided)}})));
          },
          -2, 2, 1e-3, 0.02);
  }
}

inline void stft_cases(Cases& c) {
  struct S {
    ir::Shape s;
    int64_t step, frame_length;  // frame_length 0: the window's
    bool window, onesided;
  };
  for (const S& t : std::vector<S>{{{2, 67, 1}, 5, 16, false, true},
                                   {{1, 60, 1}, 7, 0, true, true},
                                   {{2, 41, 2}, 4, 9, true, false},
                                   {{1, 33, 1}, 3, 10, false, false}}) {
    c.add(fmt::format("STFT {} step {} frame_length {} window {} onesided {}",
                      ir::shape_to_string(t.s), t.step, t.frame_length, t.window, t.onesided),
          [&](GraphBuilder& b) {
            auto x = b.input("x", DType::kFloat32, t.s);
            auto step = b.constant("step", ir::Tensor::scalar_i64(t.step));
            auto w = t.window ? b.input("w", DType::kFloat32, {t.frame_length ? t.frame_length : 12})
                              : ir::kNoValue;
            auto fl = t.frame_length ? b.constant("fl", ir::Tensor::scalar_i64(t.frame_length))
                                     : ir::kNoValue;
            return one(b.node(OpKind::STFT, {x, step, w, fl},
                              testing::attrs({{"onesided", ai(t.onesided)}})));
          },
          -2, 2, 1e-3);
  }
}

inline void det_cases(Cases& c) {
  for (const auto& dt_shape : std::vector<std::pair<DType, ir::Shape>>{
           {DType::kFloat32, {3, 3}}, {DType::kFloat32, {5, 4, 4}}, {DType::kFloat32, {7, 1, 1}},
           {DType::kFloat64, {2, 3, 6, 6}}, {DType::kFloat16, {9, 2, 2}}, {DType::kFloat32, {33, 11, 11}}}) {
    // Named copies, not a structured binding: clang 14 cannot capture those in a lambda.
    const DType dt = dt_shape.first;
    const ir::Shape s = dt_shape.second;
    c.add(fmt::format("Det {} {}", ir::dtype_name(dt), ir::shape_to_string(s)),
          [&](GraphBuilder& b) { return one(b.node(OpKind::Det, {b.input("x", dt, s)})); }, -2, 2,
          1e-4, 0.01);
  }
}

inline void reverse_sequence_cases(Cases& c) {
  for (const auto& spec : std::vector<std::tuple<DType, ir::Shape, int64_t>>{
           {DType::kFloat32, {4, 5}, 0}, {DType::kFloat32, {6, 3, 7}, 1},
           {DType::kInt64, {3, 6, 2, 5}, 0}, {DType::kBFloat16, {5, 4}, 1}}) {
    const DType dt = std::get<0>(spec);
    const ir::Shape s = std::get<1>(spec);
    const int64_t batch_axis = std::get<2>(spec);
    c.add(fmt::format("ReverseSequence {} {} batch_axis {}", ir::dtype_name(dt),
                      ir::shape_to_string(s), batch_axis),
          [&](GraphBuilder& b) {
            const int64_t batch = s[static_cast<size_t>(batch_axis)];
            const int64_t steps = s[static_cast<size_t>(1 - batch_axis)];
            std::vector<int64_t> lens;
            for (int64_t i = 0; i < batch; ++i) lens.push_back((i * 3 + 1) % (steps + 1));
            auto l = b.constant("lens", i64s(lens));
            return one(b.node(OpKind::ReverseSequence, {b.input("x", dt, s), l},
                              testing::attrs({{"batch_axis", ai(batch_axis)},
                                              {"time_axis", ai(1 - batch_axis)}})));
          });
  }
}

inline void roi_align_cases(Cases& c) {
  struct R {
    std::string mode, ctm;
    int64_t ratio;
    double scale;
    bool runtime_rois;
  };
  for (const R& r : std::vector<R>{{"avg", "half_pixel", 2, 1.0, false},
                                   {"avg", "output_half_pixel", 0, 0.5, false},
                                   {"max", "output_half_pixel", 2, 1.0, false},
                                   {"max", "half_pixel", 0, 1.0, false},
                                   {"avg", "half_pixel", 0, 1.0, true}}) {
    c.add(fmt::format("RoiAlign {} {} sampling_ratio {} scale {}{}", r.mode, r.ctm, r.ratio, r.scale,
                      r.runtime_rois ? " run-time rois" : ""),
          [&](GraphBuilder& b) {
            auto x = b.input("x", DType::kFloat32, {2, 3, 11, 9});
            auto rois = r.runtime_rois
                            ? b.input("rois", DType::kFloat32, {4, 4})
                            : b.constant("rois", ir::Tensor::from_f32({0.5f, 1.f, 7.25f, 9.5f,
                                                                       -1.f, 2.f, 3.f, 4.f,
                                                                       2.f, 2.f, 2.5f, 2.5f,
                                                                       4.f, 0.f, 8.9f, 10.9f},
                                                                      {4, 4}));
            auto idx = b.constant("idx", i64s({0, 1, 1, 0}));
            return one(b.node(OpKind::RoiAlign, {x, rois, idx},
                              testing::attrs({{"mode", as(r.mode)},
                                              {"coordinate_transformation_mode", as(r.ctm)},
                                              {"output_height", ai(3)},
                                              {"output_width", ai(4)},
                                              {"sampling_ratio", ai(r.ratio)},
                                              {"spatial_scale", af(r.scale)}})));
          },
          0, 9, 1e-4);
  }
}

inline void signal_cases(Cases& c) {
  dft_cases(c);
  stft_cases(c);
  det_cases(c);
  reverse_sequence_cases(c);
  roi_align_cases(c);
}

inline std::vector<Case> all_signal_cases() {
  Cases c;
  signal_cases(c);
  return c.take();
}

}  // namespace graphc::testing::dmcases
