// onnx.TensorProto -> ir::Tensor, every numeric dtype, raw or typed fields,
// and external data confined to the model's folder. Sizes are checked before
// anything is allocated.
#pragma once

#include <string>

#include "ir/tensor.h"
#include "onnx/onnx.pb.h"

namespace graphc::importer {

struct TensorLoadContext {
  std::string model_dir;  // "" -> external data is refused
  int64_t max_tensor_bytes = int64_t{16} << 30;
};

Expected<ir::Tensor> tensor_from_proto(const onnx::TensorProto& proto, const TensorLoadContext& ctx);
Expected<ir::Tensor> tensor_from_sparse_proto(const onnx::SparseTensorProto& proto,
                                              const TensorLoadContext& ctx);

// Reads [offset, offset+length) of `location` under `model_dir`, refusing
// absolute paths, '..', symlinks (file or any parent), hard links and ranges
// outside the file. length < 0: to the end of the file.
Expected<std::string> read_external_data(const std::string& model_dir, const std::string& location,
                                         int64_t offset, int64_t length, int64_t max_bytes);

}  // namespace graphc::importer
