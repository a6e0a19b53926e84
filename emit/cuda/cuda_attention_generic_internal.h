// Private to the general attention generator: what both its pieces need,
// cuda_attention_generic.cpp (the CUDA source) and
// cuda_attention_generic_spec.cpp (validation, launch shapes, the IR mapping).
// The shared-memory geometry of a spec: padded head dims, row strides and the
// sizes of the regions cuda_attention_generic.cpp's top comment lays out.
#pragma once

#include <cstdint>

#include "emit/cuda/cuda_attention_generic.h"

namespace graphc::emit {

struct Geometry {
  int dp, dvp;         // head dims rounded up to 4
  int qs, ks, vs, ms;  // shared row strides (floats)
  int vw, vc;          // P·V: floats per lane per chunk, chunks per lane
  int64_t q_floats, region_floats, p_floats, stat_floats, total_bytes;
};

// Defined in cuda_attention_generic_spec.cpp.
Geometry geometry(const GenericAttentionSpec& s);

}  // namespace graphc::emit
