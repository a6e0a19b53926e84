// Shared machinery of the reduction-family generators (cuda_reduction.cpp,
// cuda_softmax.cpp, cuda_normalization.cpp, cuda_topk.cpp).
//
// Every reduction-like op is viewed as ROWS: row r (in output order) holds
// `len` input elements, element j of row r at flat input offset
// row_base(r) + elem_off(j). A TEAM of threads owns one row; each thread
// visits elements j = rank, rank + team, ... and the team combines partial
// results with team_allreduce (every thread gets the result). The layout is
// picked from the static shapes:
//  - rows whose innermost dim is reduced (contiguous): a sub-warp team
//    (2..32 lanes, shuffles only) for rows up to 512 elements, a whole block
//    (64..1024 threads: warp shuffles, then shared memory across warps) for
//    longer rows;
//  - rows whose innermost dim is kept (strided reductions: ReduceSum over
//    axis 0, Softmax over a middle axis): block (cx, cy), threads along x
//    take consecutive rows (coalesced along the kept contiguous dim), the cy
//    threads of a column split the row and combine through shared memory
//    (256 threads a block; 1024 when there are too few blocks to fill the GPU).
// Where a thread owns at most 16 elements of its row, they are read once
// into registers (`xs`) and every later pass reads them from there: one
// global read per element for softmax and the normalizations.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "emit/cuda/anchor_frame.h"
#include "ir/graph.h"

namespace graphc::emit::reduction {

// Rows of a tensor of `shape` reduced over the dims where `mask` is true,
// after dropping size-1 dims and merging adjacent dims of the same kind.
struct Segments {
  struct Group {
    int64_t size = 1;
    int64_t stride = 1;  // element stride of the group's innermost dim
  };
  std::vector<Group> kept;     // outermost first; rows are row-major over these
  std::vector<Group> reduced;  // outermost first; elements row-major over these
  int64_t rows = 1;
  int64_t len = 1;
  bool inner_kept = false;  // the innermost merged dim is kept (a strided reduction)
  int64_t inner_size = 1;   // size of that innermost kept group
  // Over a shape range, rows that vary: their count as kernel code ("z0");
  // `rows` (and the one kept group's size) is then a count to plan with.
  std::string rows_code;
};
Segments segments_for(const ir::Shape& shape, const std::vector<bool>& mask);

// How teams map onto the launch.
struct TeamPlan {
  enum class Layout { kSubWarp, kBlock, kColumns } layout = Layout::kSubWarp;
  int64_t team = 1;             // threads per team (power of two)
  int64_t teams_per_block = 1;  // kColumns: cx
  int64_t per_thread = 1;       // elements per thread: ceil(len / team)
  bool cached = false;          // per_thread <= kMaxCached: the row lives in registers
  LaunchShape launch;
};
inline constexpr int64_t kMaxCached = 16;
TeamPlan plan_teams(const Segments& s);

// Over a shape range: a team reduction whose rows vary (leading dims) and
// whose reduced dims are the innermost, fixed ones. Plans with the rows at
// opt (at least 2, so the kept dim stays a group), then gives the kernel its
// row count and grid at run time. Unsupported otherwise, naming why.
Status rows_at_run_time(const AnchorFrame& f, const ir::DimExpr& rows, Segments& s, TeamPlan& p);

// The file-scope helpers of a team kernel: the reduction functors and
// scalar helpers, row_base / elem_off, and team_allreduce for the layout.
std::string team_helpers(const Segments& s, const TeamPlan& p);
// Kernel-body statements defining `row`, `rank`, `active` and `base`.
std::string team_prologue(const Segments& s, const TeamPlan& p);

// Loops over the elements a thread owns. In `body`, `j` is the element's
// index in its row, `off` its flat offset in anchor input 0 and `x` its value
// (compute type `ct`), read from registers when the plan caches the row.
class RowLoops {
 public:
  RowLoops(const AnchorFrame& frame, const Segments& s, const TeamPlan& p, std::string ct)
      : frame_(frame), s_(s), p_(p), ct_(std::move(ct)) {}
  // Reads the row into registers (the first statement of a cached kernel).
  std::string fill() const;
  std::string each(const std::string& body) const;

 private:
  std::string loop(const std::string& value, const std::string& body) const;
  const AnchorFrame& frame_;
  const Segments& s_;
  const TeamPlan& p_;
  std::string ct_;
};

// `name` of a libm function for compute type `ct` ("expf" for float).
std::string math_fn(const std::string& ct, const std::string& name);
// Accumulator type for exact integer arithmetic like the reference's value
// classes: float/double for floats, long long for signed and bool, unsigned
// long long for unsigned.
std::string accumulator_type(ir::DType t);
// Flat offset in a tensor of shape `from` broadcast to `to`, as an
// expression of flat index `idx` of `to`, as a device function `name`.
Expected<std::string> broadcast_offset_fn(const std::string& name, const ir::Shape& from,
                                          const ir::Shape& to);

// The identity of Max (the lowest value) or Min (the highest) of dtype `dt`,
// as a literal of accumulator_type(dt): -inf/+inf for floats.
std::string extreme_literal(ir::DType dt, bool for_max);
// A kernel that does nothing (every output is empty).
Expected<GeneratedKernel> empty_kernel(const AnchorFrame& frame, const std::string& prefix);

}  // namespace graphc::emit::reduction
