// Status / Expected: the one error model of the graphc library.
// Library code never prints or exits; it returns a Status naming what failed
// and where. Only cmd/ turns a Status into a message and an exit code.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace graphc {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // bad user input: flags, shapes, names
  kNotFound,         // missing file, input, value
  kInvalidModel,     // the model file is malformed or inconsistent
  kUnsupported,      // valid ONNX that graphc does not handle
  kInvalidEngine,    // the engine file is malformed or incompatible
  kIo,               // the file system said no
  kOutOfRange,       // limits exceeded
  kDevice,           // CUDA / driver / library failures
  kInternal,         // a graphc bug
};

const char* error_code_name(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return {}; }
  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes the message with where the error happened ("node 'x': ...").
  Status with_context(const std::string& where) const {
    if (ok()) return *this;
    return Status(code_, where + ": " + message_);
  }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

template <typename... Args>
Status make_error(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  return Status(code, fmt::format(format, std::forward<Args>(args)...));
}
#define GRAPHC_ERROR_FACTORY(fn, code)                                 \
  template <typename... Args>                                          \
  Status fn(fmt::format_string<Args...> format, Args&&... args) {      \
    return Status(code, fmt::format(format, std::forward<Args>(args)...)); \
  }
GRAPHC_ERROR_FACTORY(invalid_argument, ErrorCode::kInvalidArgument)
GRAPHC_ERROR_FACTORY(not_found, ErrorCode::kNotFound)
GRAPHC_ERROR_FACTORY(invalid_model, ErrorCode::kInvalidModel)
GRAPHC_ERROR_FACTORY(unsupported, ErrorCode::kUnsupported)
GRAPHC_ERROR_FACTORY(invalid_engine, ErrorCode::kInvalidEngine)
GRAPHC_ERROR_FACTORY(io_error, ErrorCode::kIo)
GRAPHC_ERROR_FACTORY(out_of_range, ErrorCode::kOutOfRange)
GRAPHC_ERROR_FACTORY(device_error, ErrorCode::kDevice)
GRAPHC_ERROR_FACTORY(internal_error, ErrorCode::kInternal)
#undef GRAPHC_ERROR_FACTORY

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : state_(std::move(value)) {}  // NOLINT: implicit by design
  Expected(Status status) : state_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(state_).ok() && "Expected built from an ok Status");
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(state_);
  }
  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace graphc

#define GRAPHC_CONCAT_INNER(a, b) a##b
#define GRAPHC_CONCAT(a, b) GRAPHC_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                         \
  do {                                                \
    ::graphc::Status graphc_status_ = (expr);         \
    if (!graphc_status_.ok()) return graphc_status_;  \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

// ASSIGN_OR_RETURN(auto x, f()) or ASSIGN_OR_RETURN(x, f()).
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(GRAPHC_CONCAT(graphc_expected_, __LINE__), lhs, expr)
