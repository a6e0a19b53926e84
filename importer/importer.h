// ONNX protobuf -> ir::Graph. Parses with limits, confines external data to the
// model's folder, converts every initializer dtype, and normalises each op's
// opset variant (7..28) into graphc's canonical form (the newest opset's
// inputs and attributes).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace graphc::importer {

inline constexpr int64_t kMinOpset = 7;
// Opsets 22-28 (ONNX 1.19-1.23) changed the in-scope ops only by admitting more
// dtypes (bfloat16, float4/6/8, int2/int4: the shape rules still check dtypes) and
// by wording, except: BitShift 28 admits signed ints (arithmetic right shift),
// Range 27 adds stash_type (fp16/bf16 accumulate in float: graphc computes in
// double either way), SpaceToDepth 28 adds mode (DCR/CRD, both handled), and
// Cast 24 adds round_mode (only float8e8m0 targets, which graphc refuses). Each
// op reads with the semantics of its newest definition, so an opset-28 model's
// Sin means opset 22's Sin = opset 7's.
inline constexpr int64_t kMaxOpset = 28;
// Models of opsets 1-6 are read too when every node is an op whose definition
// did not change in meaning before opset 7 (see legacy_opset_safe()).
inline constexpr int64_t kLegacyMinOpset = 1;

// True when `kind`'s opset 1-6 form means the same as its opset 7 form (only
// the removed `consumed_inputs` attribute differs), so graphc can read it from
// an opset 1-6 model. False for ops whose older form differs: binary ops with
// legacy `broadcast`, Gemm, BatchNormalization, Dropout, Cast (string `to`),
// Concat (optional axis), Reshape, Pad, Split, Tile, variadic Sum/Max/Min/Mean.
bool legacy_opset_safe(ir::OpKind kind);

struct ImportOptions {
  int64_t max_model_bytes = int64_t{2} << 30;    // protobuf's own hard limit
  int64_t max_tensor_bytes = int64_t{16} << 30;  // any single initializer
  int recursion_limit = 64;                      // nested messages
};

Expected<ir::Graph> import_model_file(const std::string& path, const ImportOptions& options = {});
// `model_dir` is where external data may live ("" forbids external data).
Expected<ir::Graph> import_model_bytes(std::string_view bytes, const std::string& model_dir,
                                       const std::string& display_name,
                                       const ImportOptions& options = {});

// For triage (`graphc inspect` on a model with operators graphc cannot compile):
// the part of the model graphc can compile, and what it had to leave out.
struct UnsupportedNode {
  std::string node;     // the node's name, or "#INDEX OpType" when it has none
  std::string op_type;  // as the model spells it
  std::string domain;   // "ai.onnx" or the custom domain
  std::string message;  // why graphc cannot compile it (the strict import's error line)
};
struct SkippedNode {
  std::string node, op_type;
  std::string after;  // the unsupported node whose result it reads, directly or not
};
struct PartialImport {
  // Every node that does not depend on an unsupported node's result. Its
  // outputs are the model's outputs that remain computable, then the values
  // the left-out nodes read from it (`cut_values`), so the nodes that feed an
  // unsupported node stay in the fusion report. It may have no outputs.
  ir::Graph graph;
  std::vector<UnsupportedNode> unsupported;  // empty: `graph` is the whole model
  std::vector<SkippedNode> skipped;
  std::vector<std::string> cut_values;
  size_t model_outputs = 0;  // graph.outputs[0, model_outputs) are the model's own
  // The model outputs left out, each with the unsupported node it depends on.
  std::vector<std::pair<std::string, std::string>> skipped_outputs;
};
Expected<PartialImport> import_model_file_partial(const std::string& path,
                                                  const ImportOptions& options = {});

// The error for these unsupported-node messages (one line each), as the strict
// import gives it; ok when there are none.
Status unsupported_nodes_error(const std::vector<std::string>& messages);

// A serialized onnx.TensorProto file (the backend tests' input_N.pb).
Expected<ir::Tensor> read_tensor_proto_file(const std::string& path);

}  // namespace graphc::importer
