#include "importer/tensor_proto.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <span>

#include "support/checked_math.h"
#include "support/half.h"

namespace graphc::importer {

using ir::DType;
using ir::Tensor;

namespace {

std::string tensor_label(const onnx::TensorProto& p) {
  return p.name().empty() ? std::string("tensor") : fmt::format("tensor '{}'", p.name());
}

std::string onnx_type_name(int32_t t) {
  return onnx::TensorProto_DataType_IsValid(t)
             ? onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t))
             : std::string("unknown");
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

// A decimal int64 with nothing else around it.
std::optional<int64_t> parse_int64(const std::string& s) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// RAII for a file descriptor.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  void reset(int f) {
    if (fd >= 0) ::close(fd);
    fd = f;
  }
};

}  // namespace

namespace {

// Opens `location` under `model_dir`, refusing absolute paths, '..', symlinks
// (file or any parent), hard links and anything but a regular file, and maps it.
Expected<std::shared_ptr<const MappedFile>> map_external_file(const std::string& model_dir,
                                                              const std::string& location) {
  namespace fs = std::filesystem;
  if (model_dir.empty())
    return invalid_model("external data '{}' is not allowed for a model read from memory",
                         location);
  if (location.empty()) return invalid_model("external data has an empty location");
  if (location.find('\0') != std::string::npos)
    return invalid_model("external data location contains a NUL byte");
  fs::path rel(location);
  if (rel.is_absolute() || location[0] == '/')
    return invalid_model(
        "external data location '{}' is absolute; it must be relative to the "
        "model's folder",
        location);
  if (location.find('\\') != std::string::npos)
    return invalid_model("external data location '{}' contains a backslash; use '/' separators",
                         location);
  std::vector<std::string> parts;
  for (const auto& part : rel) {
    if (part == "..")
      return invalid_model("external data location '{}' leaves the model's folder ('..')",
                           location);
    if (part.empty() || part == ".") continue;
    parts.push_back(part.string());
  }
  if (parts.empty()) return invalid_model("external data location '{}' names no file", location);

  // Walk the path one component at a time with O_NOFOLLOW, so no component
  // (file or folder) can be a symbolic link, and nothing can be swapped in
  // between checking and opening.
  Fd dir(::open(model_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.fd < 0)
    return io_error("cannot open the model's folder '{}': {}", model_dir, std::strerror(errno));
  Fd file(-1);
  std::string walked;
  for (size_t k = 0; k < parts.size(); ++k) {
    bool last = k + 1 == parts.size();
    walked += (k ? "/" : "") + parts[k];
    int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (last ? O_NONBLOCK : O_DIRECTORY);
    int fd = ::openat(dir.fd, parts[k].c_str(), flags);
    if (fd < 0) {
      int err = errno;
      struct stat st {};
      if (::fstatat(dir.fd, parts[k].c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        return invalid_model("external data location '{}' goes through a symbolic link ('{}')",
                             location, walked);
      if (err == ENOENT)
        return not_found("external data file '{}' does not exist in '{}'", location, model_dir);
      if (err == ENOTDIR)
        return invalid_model("external data location '{}': '{}' is not a folder", location, walked);
      return io_error("cannot open external data '{}': {}", location, std::strerror(err));
    }
    if (last)
      file.reset(fd);
    else
      dir.reset(fd);
  }
  struct stat st {};
  if (::fstat(file.fd, &st) != 0 || !S_ISREG(st.st_mode))
    return invalid_model("external data '{}' is not a regular file", location);
  if (st.st_nlink > 1)
    return invalid_model("external data '{}' is a hard link ({} links); refusing it", location,
                         static_cast<int64_t>(st.st_nlink));
  return MappedFile::map(file.fd, fmt::format("external data '{}'", location));
}

// [offset, offset + length) of a mapped external-data file; length < 0: to
// the end of the file.
Expected<std::span<const uint8_t>> external_range(const MappedFile& file,
                                                  const std::string& location, int64_t offset,
                                                  int64_t length, int64_t max_bytes) {
  if (offset < 0)
    return invalid_model("external data '{}' has a negative offset {}", location, offset);
  auto size = static_cast<int64_t>(file.size());
  if (length < 0) length = offset <= size ? size - offset : -1;
  auto end = checked_add(offset, length);
  if (length < 0 || !end || *end > size)
    return invalid_model("external data '{}': offset {} + length {} is beyond the file's {} bytes",
                         location, offset, length, size);
  if (length > max_bytes)
    return out_of_range("external data '{}' is {} bytes, over the {}-byte limit", location, length,
                        max_bytes);
  return std::span<const uint8_t>(file.data() + offset, static_cast<size_t>(length));
}

// A tensor's bytes read in place from a mapped file.
class MappedBytes final : public ir::BorrowedBytes {
 public:
  MappedBytes(std::shared_ptr<const MappedFile> file, std::span<const uint8_t> bytes)
      : file_(std::move(file)), bytes_(bytes) {}
  // Nobody reads these pages through this tensor again.
  ~MappedBytes() override { release_resident(); }
  const uint8_t* data() const override { return bytes_.data(); }
  size_t size() const override { return bytes_.size(); }
  void release_resident() const override { file_->release_resident(bytes_.data(), bytes_.size()); }

 private:
  std::shared_ptr<const MappedFile> file_;
  std::span<const uint8_t> bytes_;
};

}  // namespace

Expected<std::shared_ptr<const MappedFile>> ExternalDataFiles::get(const std::string& model_dir,
                                                                   const std::string& location) {
  std::lock_guard<std::mutex> lock(mu_);
  auto key = std::make_pair(model_dir, location);
  if (auto it = files_.find(key); it != files_.end()) return it->second;
  ASSIGN_OR_RETURN(auto file, map_external_file(model_dir, location));
  files_.emplace(key, file);
  return file;
}

Expected<std::string> read_external_data(const std::string& model_dir, const std::string& location,
                                         int64_t offset, int64_t length, int64_t max_bytes) {
  ASSIGN_OR_RETURN(auto file, map_external_file(model_dir, location));
  ASSIGN_OR_RETURN(auto bytes, external_range(*file, location, offset, length, max_bytes));
  std::string data(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  file->release_resident(bytes.data(), bytes.size());
  return data;
}

namespace {
// Bits per element of the types ONNX stores packed (0: not packed).
int packed_bits(DType t) {
  if (t == DType::kFloat4E2M1) return 4;
  return ir::sub_byte_bits(t);
}
}  // namespace

Expected<Tensor> tensor_from_proto(const onnx::TensorProto& p, const TensorLoadContext& ctx) {
  const std::string label = tensor_label(p);
  auto dtype = ir::dtype_from_onnx(p.data_type());
  if (!dtype)
    return unsupported("{} has element type {} ({}), which graphc does not support", label,
                       p.data_type(), onnx_type_name(p.data_type()));
  if (p.has_segment()) return unsupported("{} is segmented, which graphc does not support", label);
  ir::Shape shape(p.dims().begin(), p.dims().end());
  for (int64_t d : shape)
    if (d < 0) return invalid_model("{} has a negative dim {}", label, d);
  // Checked before anything is allocated: a tiny file may declare a huge tensor.
  auto numel = checked_numel(shape);
  if (!numel)
    return invalid_model("{}: the element count of {} overflows int64", label,
                         ir::shape_to_string(shape));
  auto nbytes = checked_mul(*numel, static_cast<int64_t>(ir::dtype_size(*dtype)));
  if (!nbytes || *nbytes > ctx.max_tensor_bytes)
    return out_of_range("{} of shape {} is larger than the {}-byte tensor limit", label,
                        ir::shape_to_string(shape), ctx.max_tensor_bytes);

  std::string external;
  const std::string* raw = nullptr;
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    bool has_length = false;
    for (const auto& kv : p.external_data()) {
      if (kv.key() == "location") {
        location = kv.value();
      } else if (kv.key() == "offset" || kv.key() == "length") {
        auto v = parse_int64(kv.value());
        if (!v)
          return invalid_model("{}: external data {} '{}' is not an int64 number", label, kv.key(),
                               kv.value());
        (kv.key() == "offset" ? offset : length) = *v;
        has_length = has_length || kv.key() == "length";
      }
    }
    if (offset < 0)
      return invalid_model("{}: external data '{}' has a negative offset {}", label, location,
                           offset);
    if (has_length && length != *nbytes)
      return invalid_model("{}: external data length {} does not match the {} bytes of shape {}",
                           label, length, *nbytes, ir::shape_to_string(shape));
    std::shared_ptr<const MappedFile> file;
    if (ctx.files) {
      auto got = ctx.files->get(ctx.model_dir, location);
      if (!got.ok()) return got.status().with_context(label);
      file = *got;
    } else {
      auto got = map_external_file(ctx.model_dir, location);
      if (!got.ok()) return got.status().with_context(label);
      file = *got;
    }
    auto bytes = external_range(*file, location, offset, *nbytes, ctx.max_tensor_bytes);
    if (!bytes.ok()) return bytes.status().with_context(label);
    // Read in place where nothing needs rewriting and the dtype's alignment
    // holds (mappings are page-aligned, so the offset decides); else copied.
    bool in_place = !packed_bits(*dtype) && *dtype != DType::kBool &&
                    offset % static_cast<int64_t>(ir::dtype_size(*dtype)) == 0;
    if (in_place)
      return Tensor::borrowing(*dtype, std::move(shape),
                               std::make_shared<MappedBytes>(std::move(file), *bytes));
    external.assign(reinterpret_cast<const char*>(bytes->data()), bytes->size());
    file->release_resident(bytes->data(), bytes->size());
    raw = &external;
  } else if (p.has_raw_data()) {
    raw = &p.raw_data();
  }

  // 4- and 2-bit types come packed (low bits first) in raw_data and in
  // int32_data (one packed byte per int32); graphc keeps one per byte.
  if (int bits = packed_bits(*dtype)) {
    const int64_t per_byte = 8 / bits;
    const int64_t packed = (*numel + per_byte - 1) / per_byte;
    std::string bytes;
    if (raw) {
      if (static_cast<int64_t>(raw->size()) != packed)
        return invalid_model("{}: raw_data has {} bytes but {} packed {} values need {}", label,
                             raw->size(), *numel, ir::dtype_name(*dtype), packed);
      bytes = *raw;
    } else {
      if (p.int32_data_size() != packed)
        return invalid_model("{}: int32_data has {} values but {} packed {} values need {}", label,
                             p.int32_data_size(), *numel, ir::dtype_name(*dtype), packed);
      for (int32_t v : p.int32_data()) bytes.push_back(static_cast<char>(v & 0xff));
    }
    Tensor t(*dtype, shape);
    uint8_t* out = t.mutable_data();
    const unsigned mask = (1u << bits) - 1;
    for (int64_t i = 0; i < *numel; ++i) {
      unsigned v = (static_cast<uint8_t>(bytes[static_cast<size_t>(i / per_byte)]) >>
                    (bits * (i % per_byte))) & mask;
      out[i] = ir::is_sub_byte_integer(*dtype) ? ir::wrap_sub_byte(*dtype, v) : static_cast<uint8_t>(v);
    }
    return t;
  }

  if (raw) {
    if (static_cast<int64_t>(raw->size()) != *nbytes)
      return invalid_model("{}: raw_data has {} bytes but shape {} of {} needs {}", label,
                           raw->size(), ir::shape_to_string(shape), ir::dtype_name(*dtype),
                           *nbytes);
    Tensor t(*dtype, shape);
    if (*nbytes) std::memcpy(t.mutable_data(), raw->data(), static_cast<size_t>(*nbytes));
    if (*dtype == DType::kBool) {  // any non-zero byte is true; kernels rely on 0/1
      uint8_t* b = t.mutable_data();
      for (int64_t i = 0; i < *numel; ++i) b[i] = b[i] ? 1 : 0;
    }
    return t;
  }

  // Typed fields (ONNX: int32_data holds every type of 32 bits or fewer,
  // float16/bfloat16 as their bit patterns; uint64_data holds uint32/uint64).
  Tensor t(*dtype, {0});  // replaced below once the count is checked
  auto alloc = [&](int64_t have, const char* field) -> Status {
    if (have != *numel)
      return invalid_model("{} declares shape {} ({} elements) but {} holds {} values", label,
                           ir::shape_to_string(shape), *numel, field, have);
    t = Tensor(*dtype, shape);
    return Status::ok_status();
  };
  switch (*dtype) {
    case DType::kFloat32:
      RETURN_IF_ERROR(alloc(p.float_data_size(), "float_data"));
      RETURN_IF_ERROR(copy_field(p.float_data(), *numel, label, "float_data",
                                 [&](int64_t i, float v) { t.mutable_data_as<float>()[i] = v; }));
      return t;
    case DType::kFloat64:
      RETURN_IF_ERROR(alloc(p.double_data_size(), "double_data"));
      RETURN_IF_ERROR(copy_field(p.double_data(), *numel, label, "double_data",
                                 [&](int64_t i, double v) { t.mutable_data_as<double>()[i] = v; }));
      return t;
    case DType::kInt64:
      RETURN_IF_ERROR(alloc(p.int64_data_size(), "int64_data"));
      RETURN_IF_ERROR(
          copy_field(p.int64_data(), *numel, label, "int64_data",
                     [&](int64_t i, int64_t v) { t.mutable_data_as<int64_t>()[i] = v; }));
      return t;
    case DType::kUInt32:
    case DType::kUInt64:
      RETURN_IF_ERROR(alloc(p.uint64_data_size(), "uint64_data"));
      RETURN_IF_ERROR(copy_field(p.uint64_data(), *numel, label, "uint64_data",
                                 [&](int64_t i, uint64_t v) { t.set_u64(i, v); }));
      return t;
    case DType::kFloat16:
    case DType::kBFloat16:
      RETURN_IF_ERROR(alloc(p.int32_data_size(), "int32_data"));
      RETURN_IF_ERROR(
          copy_field(p.int32_data(), *numel, label, "int32_data", [&](int64_t i, int32_t v) {
            t.mutable_data_as<uint16_t>()[i] = static_cast<uint16_t>(v);
          }));
      return t;
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:  // the bit patterns, one per int32
      RETURN_IF_ERROR(alloc(p.int32_data_size(), "int32_data"));
      RETURN_IF_ERROR(
          copy_field(p.int32_data(), *numel, label, "int32_data", [&](int64_t i, int32_t v) {
            t.mutable_data()[i] = static_cast<uint8_t>(v);
          }));
      return t;
    default:
      RETURN_IF_ERROR(alloc(p.int32_data_size(), "int32_data"));
      RETURN_IF_ERROR(copy_field(p.int32_data(), *numel, label, "int32_data",
                                 [&](int64_t i, int32_t v) { t.set_i64(i, v); }));
      return t;
  }
}

Expected<Tensor> tensor_from_sparse_proto(const onnx::SparseTensorProto& p,
                                          const TensorLoadContext& ctx) {
  ASSIGN_OR_RETURN(Tensor values, tensor_from_proto(p.values(), ctx));
  ASSIGN_OR_RETURN(Tensor indices, tensor_from_proto(p.indices(), ctx));
  ir::Shape shape(p.dims().begin(), p.dims().end());
  int64_t nnz = values.numel();
  auto rank = static_cast<int64_t>(shape.size());
  // Validate everything about the indices before allocating the dense tensor.
  if (!ir::is_integer(indices.dtype()))
    return invalid_model("sparse tensor: indices must be integers, are {}",
                         ir::dtype_name(indices.dtype()));
  bool linear = indices.rank() == 1;
  if (values.rank() != 1 ||
      !(linear ? indices.numel() == nnz
               : indices.rank() == 2 && indices.shape()[0] == nnz && indices.shape()[1] == rank))
    return invalid_model("sparse tensor: indices {} do not match {} values of a rank-{} tensor",
                         ir::shape_to_string(indices.shape()), nnz, rank);
  ASSIGN_OR_RETURN(int64_t dense_numel, ir::checked_shape_numel(shape));
  std::vector<int64_t> flat(static_cast<size_t>(nnz));
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t f = 0;
    if (linear) {
      f = indices.get_i64(k);
    } else {
      for (int64_t d = 0; d < rank; ++d) {
        int64_t ix = indices.get_i64(k * rank + d);
        if (ix < 0 || ix >= shape[static_cast<size_t>(d)])
          return invalid_model(
              "sparse tensor: index {} of value {} is out of range for dim {} ({})", ix, k, d,
              shape[static_cast<size_t>(d)]);
        f = f * shape[static_cast<size_t>(d)] + ix;  // < dense_numel, no overflow
      }
    }
    if (f < 0 || f >= dense_numel)
      return invalid_model("sparse tensor: index {} is out of range for {} elements", f,
                           dense_numel);
    flat[static_cast<size_t>(k)] = f;
  }
  ASSIGN_OR_RETURN(Tensor dense, Tensor::allocate(values.dtype(), shape, ctx.max_tensor_bytes));
  size_t esize = ir::dtype_size(values.dtype());
  uint8_t* out = dense.mutable_data();
  for (int64_t k = 0; k < nnz; ++k)
    std::memcpy(out + flat[static_cast<size_t>(k)] * static_cast<int64_t>(esize),
                values.data() + k * static_cast<int64_t>(esize), esize);
  return dense;
}

}  // namespace graphc::importer
