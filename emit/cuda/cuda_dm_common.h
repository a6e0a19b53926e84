// Shared pieces of the data-movement generators (cuda_transpose.cpp,
// cuda_concat_split_slice.cpp, cuda_gather_scatter.cpp, cuda_pad_tile.cpp,
// cuda_generators.cpp, cuda_cumsum.cpp, cuda_resize.cpp): launch shapes for
// grid-stride loops, index-type choice, coordinate decomposition, and the
// "one thread per output element" kernel most of them are.
#pragma once

#include <string>
#include <vector>

#include "emit/cuda/anchor_frame.h"
#include "emit/cuda/gpu_kernels.h"

namespace graphc::emit::dm {

// Row-major element strides of `s`.
std::vector<int64_t> row_strides(const ir::Shape& s);

// Grid-stride launch of `threads` per block over `n` work items (at least one
// block, so a zero-size kernel is a valid no-op launch).
LaunchShape flat_launch(int64_t n, int64_t threads = 256);
// The grid of flat_launch over a run-time count `n` (blocks of `threads`).
ir::DimExpr flat_blocks(const ir::DimExpr& n, int64_t threads = 256);

// "int" when every flat index the kernel forms (up to `max_numel` plus one
// grid of threads) fits in 32 bits, else "long long": 32-bit division by a
// constant is several times cheaper on the GPU.
std::string index_type(int64_t max_numel);
// The largest element count among the frame's inputs and outputs.
int64_t max_numel(const AnchorFrame& f);

// Statements declaring `const IX <prefix><d> = ...;` the coordinates of flat
// index `idx` in `shape` (row-major); the dims are baked in as constants.
std::string decompose(const ir::Shape& shape, const std::string& idx, const std::string& prefix,
                      const std::string& ix, const std::string& indent = "    ");

// Wraps `per_element` (statements using the flat index `i`, type IX) in a
// grid-stride loop over `n` elements and finishes the kernel.
Expected<GeneratedKernel> finish_flat_kernel(const AnchorFrame& f, const std::string& prefix,
                                             int64_t n, const std::string& per_element,
                                             const std::string& helpers = "");

// Integer values of a build-time constant input, or unsupported naming `what`.
Expected<std::vector<int64_t>> constant_ints(const AnchorFrame& f, size_t k, const char* what);

// A zero of dtype `t`'s compute type.
std::string zero_of(ir::DType t);

// `fn(a, b)` as the reference's typed element addition (integers wrap, bool
// is or, floats add with no fused multiply-add).
std::string add_expr(ir::DType t, const std::string& a, const std::string& b);

// Device helper text: g_index_of(x), an index value of any numeric compute
// type as the reference's Tensor::get_i64 reads it (floats truncate, NaN 0,
// saturating).
const std::string& index_helpers();

// How a copy kernel's per-element code reads and writes: through the frame
// (one element, prologue/epilogue applied) or, when the generator proved that
// every contiguous run of the copy is whole, aligned 16-byte vectors, one
// uint4 per `width()` elements straight from the buffers (buffers are
// 256-byte aligned). Per-element code written against a Mover works both ways
// when it only moves values (load, store, zero()).
class Mover {
 public:
  // Scalar.
  explicit Mover(const AnchorFrame& f) : f_(&f) {}
  // Vectorised when `vectorizable` and the node is a plain node copying one
  // dtype (else scalar); the vector holds 16 / element-size elements.
  static Mover for_copy(const AnchorFrame& f, bool vectorizable);
  // Elements per 16 bytes of `dtype`.
  static int64_t lanes(ir::DType dtype);

  int64_t width() const { return width_; }
  std::string load(size_t k, const std::string& idx) const;
  std::string store(size_t k, const std::string& idx, const std::string& value) const;
  // A zero of output 0's compute type (all-zero bits when vectorised).
  std::string zero() const;

 private:
  const AnchorFrame* f_;
  int64_t width_ = 1;
  std::vector<std::string> in_param_, out_param_;
};

// finish_flat_kernel for a Mover: `per_element` handles elements
// [i, i + width) of the `n` elements (`n` is a multiple of the width).
Expected<GeneratedKernel> finish_copy_kernel(const AnchorFrame& f, const Mover& m,
                                             const std::string& prefix, int64_t n,
                                             const std::string& per_element,
                                             const std::string& helpers = "");

}  // namespace graphc::emit::dm
