// The shape ranges of an engine (Manifest.shape_range, format 4): their
// validation and decoding. What the runtime computes from them per shape is
// runtime/shape_state.h.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine_format/manifest.pb.h"
#include "support/size_program.h"
#include "support/status.h"

namespace graphc::engine {

inline constexpr size_t kMaxSymbols = 64;
inline constexpr int64_t kMaxRangeDim = int64_t{1} << 31;

// Every index, program and range the runtime will use, against the tensors,
// bindings and kernels (validated before). Ranges: each profile gives every
// input its rank, fixed dims their shape, varying dims 0 <= min <= opt <= max;
// inputs sharing a symbol share its range; at each profile's largest shapes
// every tensor fits its bytes and every grid its limits. Library calls take
// varying shapes where the runtime sets them up per shape: a cuBLASLt
// matmul's M, a cuDNN convolution's batch and spatial dims (conv_params.h);
// at each profile's least and largest shapes those make valid descriptors
// whose operands fit their tensors.
Status validate_shape_range(const Manifest& m);

// Input binding i's dim d is symbol result[i][d], or -1 when it is fixed
// (needs a validated manifest).
std::vector<std::vector<int>> input_symbols(const Manifest& m);

// The size programs, decoded.
std::vector<SizeProgram> size_programs(const ShapeRange& r);

}  // namespace graphc::engine
