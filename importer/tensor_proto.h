// onnx.TensorProto -> ir::Tensor, every numeric dtype, raw or typed fields,
// and external data confined to the model's folder. Sizes are checked before
// anything is allocated.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "ir/tensor.h"
#include "onnx/onnx.pb.h"
#include "support/mapped_file.h"

namespace graphc::importer {

// The external-data files one import has opened, each mapped once; tensors
// read their weights in place from the mappings (which they keep alive).
class ExternalDataFiles {
 public:
  Expected<std::shared_ptr<const MappedFile>> get(const std::string& model_dir,
                                                  const std::string& location);

 private:
  std::mutex mu_;
  std::map<std::pair<std::string, std::string>, std::shared_ptr<const MappedFile>> files_;
};

struct TensorLoadContext {
  std::string model_dir;  // "" -> external data is refused
  int64_t max_tensor_bytes = int64_t{16} << 30;
  std::shared_ptr<ExternalDataFiles> files;  // null: each tensor maps its file itself
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
