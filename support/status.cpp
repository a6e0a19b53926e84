#include "support/status.h"

namespace graphc {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kInvalidModel: return "invalid model";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kInvalidEngine: return "invalid engine";
    case ErrorCode::kIo: return "i/o error";
    case ErrorCode::kOutOfRange: return "out of range";
    case ErrorCode::kDevice: return "device error";
    case ErrorCode::kInternal: return "internal error";
  }
  return "unknown";
}

}  // namespace graphc
