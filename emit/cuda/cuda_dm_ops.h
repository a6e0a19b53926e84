// The data-movement generators, one per op (or pair of mirror ops), each
// given the anchor frame of its node. cuda_data_movement.cpp dispatches.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "emit/cuda/anchor_frame.h"
#include "emit/cuda/gpu_kernels.h"

namespace graphc::emit::dm {

// cuda_transpose.cpp
Expected<GeneratedKernel> transpose_kernel(const AnchorFrame& f);
// The tiled transpose (32x32 tiles through shared memory) where dim 0 stays
// first and only its size varies (a batch over a shape range): the kernel
// body for `in_max` (every dim at its largest) whose tile loop runs to
// `outer` (the code of dim 0's run-time size) times `tiles_per_outer`, for a
// 32x8 block. nullopt where the gather kernel is the one to use.
inline constexpr int64_t kTiledTransposeMaxBlocks = 16384;
struct OuterTiledTranspose {
  std::string body;
  int64_t tiles_per_outer = 0;
};
std::optional<OuterTiledTranspose> outer_tiled_transpose(const AnchorFrame& f,
                                                         const ir::Shape& in_max,
                                                         const std::vector<int64_t>& perm,
                                                         const std::string& outer);
// cuda_concat_split_slice.cpp
Expected<GeneratedKernel> concat_kernel(const AnchorFrame& f);
Expected<GeneratedKernel> split_kernel(const AnchorFrame& f);
Expected<GeneratedKernel> slice_kernel(const AnchorFrame& f);
// cuda_pad_tile.cpp
Expected<GeneratedKernel> expand_kernel(const AnchorFrame& f);
Expected<GeneratedKernel> tile_kernel(const AnchorFrame& f);
Expected<GeneratedKernel> pad_kernel(const AnchorFrame& f);
Expected<GeneratedKernel> depth_space_kernel(const AnchorFrame& f);  // DepthToSpace, SpaceToDepth
// cuda_gather_scatter.cpp
Expected<GeneratedKernel> gather_kernel(const AnchorFrame& f);
Expected<GeneratedKernel> gather_elements_kernel(const AnchorFrame& f);
Expected<GeneratedKernel> gather_nd_kernel(const AnchorFrame& f);
Expected<GeneratedKernel> scatter_elements_kernel(const AnchorFrame& f);
Expected<GeneratedKernel> scatter_nd_kernel(const AnchorFrame& f);
// cuda_dm_generators.cpp
Expected<GeneratedKernel> constant_of_shape_kernel(const AnchorFrame& f);
Expected<GeneratedKernel> range_kernel(const AnchorFrame& f);
Expected<GeneratedKernel> trilu_kernel(const AnchorFrame& f);
Expected<GeneratedKernel> one_hot_kernel(const AnchorFrame& f);
Expected<GeneratedKernel> eye_like_kernel(const AnchorFrame& f);
Expected<GeneratedKernel> shape_size_kernel(const AnchorFrame& f);  // Shape, Size
Expected<GeneratedKernel> dropout_kernel(const AnchorFrame& f);     // inference Dropout
// cuda_cumsum.cpp
Expected<GeneratedKernel> cumsum_kernel(const AnchorFrame& f);
// cuda_resize.cpp
Expected<GeneratedKernel> resize_kernel(const AnchorFrame& f);
// cuda_rotary.cpp
Expected<GeneratedKernel> rotary_embedding_kernel(const AnchorFrame& f);
// cuda_grid_sample.cpp
Expected<GeneratedKernel> grid_sample_kernel(const AnchorFrame& f);
// cuda_col2im.cpp
Expected<GeneratedKernel> col2im_kernel(const AnchorFrame& f);
// cuda_signal.cpp
Expected<GeneratedKernel> dft_kernel(const AnchorFrame& f);
Expected<GeneratedKernel> stft_kernel(const AnchorFrame& f);
// cuda_det_roi.cpp
Expected<GeneratedKernel> det_kernel(const AnchorFrame& f);
Expected<GeneratedKernel> reverse_sequence_kernel(const AnchorFrame& f);
Expected<GeneratedKernel> roi_align_kernel(const AnchorFrame& f);

}  // namespace graphc::emit::dm
