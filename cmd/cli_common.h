// Shared by the graphc subcommands: turning a Status into a message and an
// exit code (the only place that happens), and the --shape flag.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "support/status.h"

namespace graphc::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;  // the input or the operation failed
inline constexpr int kExitUsage = 2;  // bad flags

// Prints "graphc: error: <message>" to stderr; returns the exit code.
int report(const Status& status);

Expected<std::map<std::string, ir::Shape>> parse_shape_flags(const std::vector<std::string>& flags);

// Writes `contents` to `path` atomically (temporary file in the same folder,
// then rename), so a failure never leaves a partial file.
Status write_file_atomic(const std::string& path, const std::string& contents);

}  // namespace graphc::cli
