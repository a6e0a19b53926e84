// The tiled channels-last depthwise kernel (emit/cuda/cuda_conv_dw_tiled.cpp):
// which convs it takes, its tile, and the choice between it and the untiled
// direct kernel (emit/cuda/cuda_conv_direct.cpp).
//
// A block computes TH x TW output pixels of one image for CB channels: it
// stages the input tile plus halo, ((TH-1)·stride+(KH-1)·dilation+1) x (...)
// x CB, and the CB channels' taps once in shared memory (fp32), reading
// global memory with 8/16-byte vectors across channels; each thread then
// computes P neighbouring output pixels along W for V channels, reading each
// input vector once per kernel row into registers and each weight vector
// once per tap. Input pixels shared by neighbouring outputs are read from
// HBM once per tile instead of once per output row segment.
//
// Taken: channels-last, pure depthwise (one input and one output channel per
// group), float32/float16/bfloat16, any kernel size, stride, dilation and
// pads whose smallest tile fits in the shared-memory budget. The tile starts
// at 8 x 8 pixels x 32 channels with 4 pixels per thread and shrinks (rows,
// columns, pixels per thread, channels) until the launch has enough blocks
// for the GPU (2 per SM of a 132-SM H100) or the tile is minimal.
//
// Choice: the tiled kernel for convs from 5x5 at stride 1 that it takes
// (staging measured slower than the untiled kernel for 3x3 and strided convs
// on an H100); the untiled one otherwise (NCHW keeps its own shared-memory
// tile: tiling it over channels would not help a layout whose channels are
// planes apart), or as kDepthwiseTileAttr says (tests and the benchmark
// compare both).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ir/attribute.h"
#include "ir/conv_geometry.h"
#include "ir/dtype.h"

namespace graphc::target {

// graphc-internal Conv attribute (refused in ONNX files like every '_'
// attribute): absent, the rules choose tiled or not and the tile; 0 keeps a
// depthwise conv on the untiled direct kernel; 1 tiles it wherever a tile
// fits, with the tile the rules choose; 2 + i asks for the rules' tile
// candidate i (tests run every tile shape; ignored where it does not fit).
inline constexpr const char* kDepthwiseTileAttr = "_depthwise_tile";

struct DepthwiseTile {
  int64_t th = 0, tw = 0;            // output pixels per block: rows, columns
  int64_t p = 0;                     // output pixels per thread along W (divides tw)
  int64_t v = 0;                     // channels per thread (4/2/1, divides C)
  int64_t cv = 0;                    // channel vectors per block: CB = cv · v channels
  int64_t lv = 0;                    // channels per global load (v or 2v; divides C and CB)
  int64_t in_rows = 0, in_cols = 0;  // the staged input tile with its halo
  int64_t taps = 0;                  // KH x KW, staged for the block's channels
  int64_t blocks = 0;                // N x tiles x channel chunks
  int64_t threads() const { return cv * th * (tw / p); }
  int64_t cb() const { return cv * v; }
  // Floats per staged tap row: CB padded by V (16-byte rows for V = 4).
  int64_t weight_stride() const { return cb() + v; }
  // The staged input tile and taps, fp32.
  int64_t shared_bytes() const { return (in_rows * in_cols * cb() + taps * weight_stride()) * 4; }
};

// Shared memory the tile may take (static, under the 48 KiB static limit).
inline constexpr int64_t kDepthwiseTileSharedBytes = 40 * 1024;

// The tile for `g`, or why the tiled kernel does not take it.
struct DepthwiseTileChoice {
  std::optional<DepthwiseTile> tile;
  std::string reason;  // "tiled ..." or "untiled: why"
};
DepthwiseTileChoice choose_depthwise_tile(const ir::ConvGeometry& g, ir::DType dtype,
                                          const ir::AttributeMap& attrs);

}  // namespace graphc::target
