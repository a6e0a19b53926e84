// Passes are named data: each is `Status run(Graph&, PassContext&)` in its own
// file; the default pipeline is an ordered list with a one-line reason per
// entry. The pass manager gives --dump-after, --verify-after-all,
// --disable-pass and --print-passes for free.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/symbolic_shapes.h"
#include "target/target.h"

namespace graphc::optimizer {

// --precision: the dtype weights and compute are converted to. Reductions and
// GEMM accumulation stay fp32 whatever this says.
enum class Precision { kFp32, kFp16, kBf16 };

// --int8-precision: where a QDQ model's activations are quantized. kSame: in
// --precision's dtype (a QuantizeLinear's input rounded to fp16 first, as
// TensorRT's --int8 --fp16); kFp32: each QuantizeLinear and the ops computing
// its input stay float32 (docs/int8.md says what each costs).
enum class Int8Precision { kSame, kFp32 };

struct PassContext {
  Precision precision = Precision::kFp32;
  // Model inputs/outputs keep their ONNX dtype (a Cast at the edge) unless false.
  bool keep_io_dtype = true;
  // The GPU target the graph is optimized for: what its libraries take
  // decides which convs the channels-last pass converts and where fused
  // groups split (split-library-epilogues). Unset, both passes do nothing
  // (a graph for the reference executor alone).
  std::shared_ptr<const target::Target> target;
  // Ops the precision pass left in fp32 (or clamped), one line each, for inspect.
  std::vector<std::string> precision_notes;
  // Softmaxes fuse-attention left unfused, one line each saying which part of
  // the attention pattern did not match, for inspect.
  std::vector<std::string> attention_notes;
  bool verify_after_all = false;
  // fuse-qdq-matmul's int8 tensor-core GEMMs. Off: QDQ layers run as
  // dequantize + float GEMM (expand-quantize). Measured on an H100
  // (bench/results/...-int8.md) the generated int8 GEMM is 7-13x slower than
  // the fp16 engine's cuBLASLt GEMMs on BERT, so graphc build does not turn it
  // on until a faster int8 GEMM (cuBLASLt's) replaces it; tests do. The same
  // switch turns on fuse-qdq-conv's int8 tensor-core convs (one int8 path,
  // recorded in the refit recipe; --disable-pass=fuse-qdq-conv keeps convs float).
  bool int8_gemm = false;
  Int8Precision int8_precision = Int8Precision::kSame;
  std::set<std::string> dump_after;  // pass names, or "all"
  std::set<std::string> disabled;    // pass names to skip
  // Receives "--- after PASS ---\n<IR>" dumps; default prints to stderr.
  std::function<void(const std::string& pass, const std::string& ir)> dump_sink;
  // Constant folding leaves results above this size as nodes so weights are
  // not duplicated into new constants.
  int64_t fold_max_bytes = int64_t{1} << 20;
  // Set for an engine that serves a range of shapes: the graph is typed at
  // the opt shapes, and these say which input dims vary. What depends on them
  // (a Shape of such an input, the arithmetic on it) is not folded into the
  // opt shape's numbers.
  std::shared_ptr<const ir::SymbolicInputs> shape_range;
  // What each pass did ("fold-constants: 12 nodes folded"), for -v and tests.
  std::map<std::string, int64_t> counters;
  void count(const std::string& what, int64_t n = 1) { counters[what] += n; }
};

using PassFn = Status (*)(ir::Graph&, PassContext&);

struct Pass {
  const char* name;
  const char* reason;  // one line: why it runs here
  PassFn run;
};

// The default pipeline, in order.
const std::vector<Pass>& default_pipeline();
const Pass* find_pass(const std::string& name);

// Runs `passes` (default: the default pipeline), honouring the context.
Status run_passes(ir::Graph& graph, PassContext& ctx, const std::vector<Pass>* passes = nullptr);

// Checks user-supplied pass names (--disable-pass / --dump-after) exist.
Status validate_pass_names(const std::set<std::string>& names, bool allow_all);

std::string describe_pipeline();  // --print-passes

}  // namespace graphc::optimizer
