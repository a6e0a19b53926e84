// Reading model and tensor files for the importer: regular files only,
// size-capped, mapped rather than read (the parsed message is the only copy
// held), protobuf's nesting limited.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "importer/importer.h"
#include "onnx/onnx.pb.h"
#include "support/mapped_file.h"
#include "support/status.h"

namespace graphc::importer {

// Maps a whole regular file, refusing folders, FIFOs and devices and
// anything over `max_bytes`.
Expected<std::shared_ptr<const MappedFile>> map_file_limited(const std::string& path,
                                                             int64_t max_bytes);
// The checks every parsed model gets (a graph, an opset import).
Status check_parsed_model(const onnx::ModelProto& model);
// Parses model bytes with the options' size cap and nesting limit.
Status parse_model(std::string_view bytes, const ImportOptions& options, onnx::ModelProto& model);
// Parses a model file (errors name it).
Status parse_model_file(const std::string& path, const ImportOptions& options,
                        onnx::ModelProto& model);
// Parses a TensorProto file of at most 2 GiB (errors name it).
Status parse_tensor_file(const std::string& path, onnx::TensorProto& proto);

}  // namespace graphc::importer
