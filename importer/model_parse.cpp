// Reading model and tensor files: mapped, size-capped, parsed with a nesting
// limit, the mapping's pages dropped as they are parsed.
#include "importer/model_parse.h"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace graphc::importer {

namespace {

std::string_view bytes_of(const MappedFile& file) {
  return {reinterpret_cast<const char*>(file.data()), file.size()};
}

// Parses with a total-size cap and a nesting limit (a deeply nested message
// would otherwise recurse the parser off the stack).
template <typename Message>
Status parse_limited(google::protobuf::io::ZeroCopyInputStream& raw, size_t size, Message& msg,
                     int recursion_limit) {
  if (size > static_cast<size_t>(INT_MAX))
    return out_of_range("{} bytes is over protobuf's 2 GiB message limit", size);
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(INT_MAX);
  coded.SetRecursionLimit(recursion_limit);
  if (!msg.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    return invalid_model(
        "not a valid ONNX protobuf (truncated, corrupted, nested deeper than {} messages, or not "
        "an ONNX file)",
        recursion_limit);
  return Status::ok_status();
}

template <typename Message>
Status parse_limited(std::string_view bytes, Message& msg, int recursion_limit) {
  if (bytes.size() > static_cast<size_t>(INT_MAX))
    return out_of_range("{} bytes is over protobuf's 2 GiB message limit", bytes.size());
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  return parse_limited(raw, bytes.size(), msg, recursion_limit);
}

// Feeds a mapped file to the parser in blocks and drops the pages it has
// parsed (the message holds its own copy), so parsing a model never holds
// the file's bytes and the parsed ones at once.
class PageDroppingInputStream final : public google::protobuf::io::ZeroCopyInputStream {
 public:
  static constexpr int kBlock = 32 << 20;
  explicit PageDroppingInputStream(const MappedFile& file)
      : file_(file), inner_(file.data(), static_cast<int>(std::min<size_t>(file.size(), INT_MAX)),
                            kBlock) {}
  bool Next(const void** data, int* size) override {
    int64_t parsed = inner_.ByteCount();
    if (parsed > dropped_) {
      file_.release_resident(file_.data() + dropped_, static_cast<size_t>(parsed - dropped_));
      dropped_ = parsed;
    }
    return inner_.Next(data, size);
  }
  void BackUp(int count) override { inner_.BackUp(count); }
  bool Skip(int count) override { return inner_.Skip(count); }
  int64_t ByteCount() const override { return inner_.ByteCount(); }

 private:
  const MappedFile& file_;
  google::protobuf::io::ArrayInputStream inner_;
  int64_t dropped_ = 0;
};

}  // namespace

// Maps a whole regular file, refusing folders, FIFOs and devices (which could
// block or never end) and anything over `max_bytes`. Mapped, not read: the
// parser's copy is then the only one the process holds once the caller
// drops the mapping's pages.
Expected<std::shared_ptr<const MappedFile>> map_file_limited(const std::string& path,
                                                             int64_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return not_found("cannot open '{}': no such file", path);
    return io_error("cannot open '{}': {}", path, std::strerror(err));
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return io_error("cannot stat '{}': {}", path, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return io_error("'{}' is a directory, not a model file", path);
  if (!S_ISREG(st.st_mode)) return io_error("'{}' is not a regular file", path);
  if (st.st_size > max_bytes)
    return out_of_range("'{}' is {} bytes, over the {}-byte limit", path, st.st_size, max_bytes);
  return MappedFile::map(fd, fmt::format("'{}'", path));
}

// The checks every model gets after parsing.
Status check_parsed_model(const onnx::ModelProto& model) {
  if (!model.has_graph() || (model.opset_import_size() == 0 && model.ir_version() == 0))
    return invalid_model("not an ONNX model (it has no graph or no opset_import)");
  return Status::ok_status();
}

Status parse_model(std::string_view bytes, const ImportOptions& options, onnx::ModelProto& model) {
  if (static_cast<int64_t>(bytes.size()) > options.max_model_bytes)
    return out_of_range("the model is {} bytes, over the {}-byte limit", bytes.size(),
                        options.max_model_bytes);
  if (bytes.empty()) return invalid_model("the file is empty, not an ONNX model");
  RETURN_IF_ERROR(parse_limited(bytes, model, options.recursion_limit));
  return check_parsed_model(model);
}

// Parses a model file through a mapping whose pages are dropped once parsed.
Status parse_model_file(const std::string& path, const ImportOptions& options,
                        onnx::ModelProto& model) {
  ASSIGN_OR_RETURN(auto file, map_file_limited(path, options.max_model_bytes));
  if (file->size() == 0)
    return invalid_model("the file is empty, not an ONNX model").with_context(path);
  PageDroppingInputStream stream(*file);
  Status st = parse_limited(stream, file->size(), model, options.recursion_limit);
  file->release_resident(file->data(), file->size());
  if (st.ok()) st = check_parsed_model(model);
  return st.ok() ? st : st.with_context(path);
}

Status parse_tensor_file(const std::string& path, onnx::TensorProto& proto) {
  ASSIGN_OR_RETURN(auto file, map_file_limited(path, int64_t{2} << 30));
  Status st = parse_limited(bytes_of(*file), proto, 64);
  return st.ok() ? st : st.with_context(path);
}

}  // namespace graphc::importer
