// A library call followed by a generated epilogue kernel. cuBLASLt
// and cuDNN fuse only some epilogues (bias, ReLU, tanh-GELU, a residual add).
// When a library takes the anchor of a fused group with only the leading ops
// of its epilogue chain, the group is split in two (the optimizer's
// split-library-epilogues pass, optimizer/pass_split_library_epilogues.cpp):
//   (a) the anchor and those leading ops (a plain anchor node when there are
//       none), writing the cut value: a new intermediate of the anchor's
//       output dtype that the buffer planner places like any other, and
//   (b) a fused elementwise group of the remaining ops, reading the cut value
//       and the group's other inputs: a generated kernel that runs right after.
// Exactness: the reference executor evaluates a group node by node, rounding
// every intermediate to its dtype, so writing the cut value in that dtype
// (fp16 stays fp16) is what the reference does there. The unsplit generated
// kernel keeps fp32 between epilogue ops and rounds once at the end; the split
// rounds once more, at the cut, where the reference also rounds.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace graphc::target {

// Where a fused group splits: body node ids of each part, in body order.
struct SplitPoint {
  ir::NodeId anchor = -1;                  // the body's MatMul/Gemm/Conv/ConvTranspose
  std::vector<ir::NodeId> library;         // (a): the anchor, then the leading epilogue ops
  std::vector<ir::NodeId> generated;       // (b): every other live body node
  ir::ValueId cut = ir::kNoValue;          // body value (a) writes and (b) reads
  std::vector<std::string> generated_ops;  // op names of (b), for reports
};

// Where `group` (a FusedGroup) splits when the library takes the anchor and
// its first `taken` epilogue ops. An error (kUnsupported) says why no exact
// split exists: the chain branches or is read outside within those ops, an op
// left over is not a one-output elementwise op over the cut's shape, or it
// reads an intermediate the library never writes. Nothing left over is an
// error too (the library takes the whole group: no split).
Expected<SplitPoint> find_split(const ir::Node& group, size_t taken);

// Epilogue ops of a fused anchor group: its live body nodes other than the anchor.
size_t epilogue_op_count(const ir::Node& group);

// String attribute on part (a): the ops of the generated epilogue that follows
// it ("Gelu", "Mul, Add"), for reports.
inline constexpr const char* kSplitEpilogueAttr = "_split_epilogue";

}  // namespace graphc::target
