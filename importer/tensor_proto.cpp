#include "importer/tensor_proto.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "support/checked_math.h"
#include "support/half.h"

namespace graphc::importer {

using ir::DType;
using ir::Tensor;

namespace {

std::string tensor_label(const onnx::TensorProto& p) {
  return p.name().empty() ? std::string("tensor") : fmt::format("tensor '{}'", p.name());
}

// Copies typed-field values into `t` element by element.
template <typename Field, typename Setter>
Status copy_field(const Field& field, int64_t numel, const std::string& label, const char* fname,
                  Setter set) {
  if (static_cast<int64_t>(field.size()) != numel)
    return invalid_model("{} declares {} elements but {} holds {}", label, numel, fname,
                         field.size());
  for (int64_t i = 0; i < numel; ++i) set(i, field[static_cast<int>(i)]);
  return Status::ok_status();
}

}  // namespace

Expected<std::string> read_external_data(const std::string& model_dir, const std::string& location,
                                         int64_t offset, int64_t length, int64_t max_bytes) {
  namespace fs = std::filesystem;
  if (model_dir.empty())
    return invalid_model("external data '{}' is not allowed for a model read from memory", location);
  if (location.empty()) return invalid_model("external data has an empty location");
  fs::path rel(location);
  if (rel.is_absolute() || location.find('\\') != std::string::npos || location[0] == '/')
    return invalid_model("external data location '{}' is absolute; it must be relative to the "
                         "model's folder",
                         location);
  for (const auto& part : rel)
    if (part == "..")
      return invalid_model("external data location '{}' leaves the model's folder ('..')", location);
  // Walk every component with lstat: no symlinked folders or files.
  fs::path cur(model_dir.empty() ? "." : model_dir);
  for (auto it = rel.begin(); it != rel.end(); ++it) {
    if (*it == "." || it->empty()) continue;
    cur /= *it;
    struct stat st {};
    if (::lstat(cur.c_str(), &st) != 0)
      return not_found("external data file '{}' does not exist (looked for {})", location,
                       cur.string());
    if (S_ISLNK(st.st_mode))
      return invalid_model("external data location '{}' goes through a symbolic link ('{}')",
                           location, cur.string());
  }
  if (offset < 0) return invalid_model("external data '{}' has a negative offset {}", location, offset);
  int fd = ::open(cur.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open external data '{}': {}", cur.string(), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_model("external data '{}' is not a regular file", location);
  }
  if (st.st_nlink > 1) {
    ::close(fd);
    return invalid_model("external data '{}' is a hard link ({} links); refusing it", location,
                         st.st_nlink);
  }
  int64_t size = st.st_size;
  if (length < 0) length = offset <= size ? size - offset : -1;
  auto end = checked_add(offset, length);
  if (length < 0 || !end || *end > size) {
    ::close(fd);
    return invalid_model("external data '{}': offset {} + length {} is beyond the file's {} bytes",
                         location, offset, length, size);
  }
  if (length > max_bytes) {
    ::close(fd);
    return out_of_range("external data '{}' is {} bytes, over the {}-byte limit", location, length,
                        max_bytes);
  }
  std::string data(static_cast<size_t>(length), '\0');
  int64_t done = 0;
  while (done < length) {
    ssize_t r = ::pread(fd, data.data() + done, static_cast<size_t>(length - done), offset + done);
    if (r <= 0) {
      ::close(fd);
      return io_error("short read of external data '{}'", location);
    }
    done += r;
  }
  ::close(fd);
  return data;
}

Expected<Tensor> tensor_from_proto(const onnx::TensorProto& p, const TensorLoadContext& ctx) {
  const std::string label = tensor_label(p);
  auto dtype = ir::dtype_from_onnx(p.data_type());
  if (!dtype)
    return unsupported("{} has element type {} ({}), which graphc does not support", label,
                       p.data_type(),
                       onnx::TensorProto_DataType_IsValid(p.data_type())
                           ? onnx::TensorProto_DataType_Name(
                                 static_cast<onnx::TensorProto_DataType>(p.data_type()))
                           : std::string("unknown"));
  ir::Shape shape(p.dims().begin(), p.dims().end());
  for (int64_t d : shape)
    if (d < 0) return invalid_model("{} has a negative dim {}", label, d);
  auto numel = checked_numel(shape);
  if (!numel) return invalid_model("{}: the element count of {} overflows int64", label, ir::shape_to_string(shape));
  auto nbytes = checked_mul(*numel, static_cast<int64_t>(ir::dtype_size(*dtype)));
  if (!nbytes || *nbytes > ctx.max_tensor_bytes)
    return out_of_range("{} of shape {} is larger than the {}-byte tensor limit", label,
                        ir::shape_to_string(shape), ctx.max_tensor_bytes);

  std::string external;
  const std::string* raw = nullptr;
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : p.external_data()) {
      try {
        if (kv.key() == "location") location = kv.value();
        else if (kv.key() == "offset") offset = std::stoll(kv.value());
        else if (kv.key() == "length") length = std::stoll(kv.value());
      } catch (...) {
        return invalid_model("{}: external data field '{}' is not a number: '{}'", label, kv.key(),
                             kv.value());
      }
    }
    if (length >= 0 && length != *nbytes)
      return invalid_model("{}: external data length {} does not match {} bytes for shape {}",
                           label, length, *nbytes, ir::shape_to_string(shape));
    auto data = read_external_data(ctx.model_dir, location, offset, *nbytes, ctx.max_tensor_bytes);
    if (!data.ok()) return data.status().with_context(label);
    external = std::move(*data);
    raw = &external;
  } else if (p.has_raw_data()) {
    raw = &p.raw_data();
  }

  if (raw) {
    if (static_cast<int64_t>(raw->size()) != *nbytes)
      return invalid_model("{}: raw_data has {} bytes but shape {} of {} needs {}", label,
                           raw->size(), ir::shape_to_string(shape), ir::dtype_name(*dtype), *nbytes);
    Tensor t(*dtype, shape);
    if (*nbytes) std::memcpy(t.mutable_data(), raw->data(), static_cast<size_t>(*nbytes));
    return t;
  }

  // Typed fields: check the count before allocating.
  int64_t have = 0;
  switch (*dtype) {
    case DType::kFloat32: have = p.float_data_size(); break;
    case DType::kFloat64: have = p.double_data_size(); break;
    case DType::kInt64: have = p.int64_data_size(); break;
    case DType::kUInt32:
    case DType::kUInt64: have = p.uint64_data_size(); break;
    default: have = p.int32_data_size(); break;
  }
  if (have != *numel)
    return invalid_model("{} declares shape {} ({} elements) but holds {} values", label,
                         ir::shape_to_string(shape), *numel, have);
  Tensor t(*dtype, shape);
  Status st;
  switch (*dtype) {
    case DType::kFloat32:
      st = copy_field(p.float_data(), *numel, label, "float_data",
                      [&](int64_t i, float v) { t.mutable_data_as<float>()[i] = v; });
      break;
    case DType::kFloat64:
      st = copy_field(p.double_data(), *numel, label, "double_data",
                      [&](int64_t i, double v) { t.mutable_data_as<double>()[i] = v; });
      break;
    case DType::kInt64:
      st = copy_field(p.int64_data(), *numel, label, "int64_data",
                      [&](int64_t i, int64_t v) { t.mutable_data_as<int64_t>()[i] = v; });
      break;
    case DType::kUInt32:
    case DType::kUInt64:
      st = copy_field(p.uint64_data(), *numel, label, "uint64_data",
                      [&](int64_t i, uint64_t v) { t.set_u64(i, v); });
      break;
    case DType::kFloat16:
    case DType::kBFloat16:
      st = copy_field(p.int32_data(), *numel, label, "int32_data", [&](int64_t i, int32_t v) {
        t.mutable_data_as<uint16_t>()[i] = static_cast<uint16_t>(v);
      });
      break;
    default:
      st = copy_field(p.int32_data(), *numel, label, "int32_data",
                      [&](int64_t i, int32_t v) { t.set_i64(i, v); });
      break;
  }
  RETURN_IF_ERROR(st);
  return t;
}

Expected<Tensor> tensor_from_sparse_proto(const onnx::SparseTensorProto& p,
                                          const TensorLoadContext& ctx) {
  ASSIGN_OR_RETURN(Tensor values, tensor_from_proto(p.values(), ctx));
  ASSIGN_OR_RETURN(Tensor indices, tensor_from_proto(p.indices(), ctx));
  ir::Shape shape(p.dims().begin(), p.dims().end());
  ASSIGN_OR_RETURN(Tensor dense, Tensor::allocate(values.dtype(), shape, ctx.max_tensor_bytes));
  int64_t nnz = values.numel();
  auto rank = static_cast<int64_t>(shape.size());
  bool linear = indices.rank() == 1;
  if (values.rank() != 1 || !(linear ? indices.numel() == nnz
                                     : indices.rank() == 2 && indices.shape()[0] == nnz &&
                                           indices.shape()[1] == rank))
    return invalid_model("sparse tensor: indices {} do not match {} values of rank-{} tensor",
                         ir::shape_to_string(indices.shape()), nnz, rank);
  auto strides = std::vector<int64_t>(shape.size(), 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[static_cast<size_t>(d)] = strides[static_cast<size_t>(d) + 1] * shape[static_cast<size_t>(d) + 1];
  size_t esize = ir::dtype_size(values.dtype());
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t flat = 0;
    if (linear) {
      flat = indices.get_i64(k);
    } else {
      for (int64_t d = 0; d < rank; ++d) {
        int64_t ix = indices.get_i64(k * rank + d);
        if (ix < 0 || ix >= shape[static_cast<size_t>(d)])
          return invalid_model("sparse tensor index {} out of range", ix);
        flat += ix * strides[static_cast<size_t>(d)];
      }
    }
    if (flat < 0 || flat >= dense.numel()) return invalid_model("sparse tensor index {} out of range", flat);
    std::memcpy(dense.mutable_data() + flat * static_cast<int64_t>(esize),
                values.data() + k * static_cast<int64_t>(esize), esize);
  }
  return dense;
}

}  // namespace graphc::importer
