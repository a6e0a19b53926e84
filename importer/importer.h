// ONNX protobuf -> ir::Graph. Parses with limits, confines external data to the
// model's folder, converts every initializer dtype, and normalises each op's
// opset variant (7..21) into graphc's canonical form (the newest opset's
// inputs and attributes).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ir/graph.h"

namespace graphc::importer {

inline constexpr int64_t kMinOpset = 7;
inline constexpr int64_t kMaxOpset = 21;
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
  int64_t max_model_bytes = int64_t{2} << 30;     // protobuf's own hard limit
  int64_t max_tensor_bytes = int64_t{16} << 30;   // any single initializer
  int recursion_limit = 64;                       // nested messages
};

Expected<ir::Graph> import_model_file(const std::string& path, const ImportOptions& options = {});
// `model_dir` is where external data may live ("" forbids external data).
Expected<ir::Graph> import_model_bytes(std::string_view bytes, const std::string& model_dir,
                                       const std::string& display_name,
                                       const ImportOptions& options = {});

// A serialized onnx.TensorProto file (the backend tests' input_N.pb).
Expected<ir::Tensor> read_tensor_proto_file(const std::string& path);

}  // namespace graphc::importer
