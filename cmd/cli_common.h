// Shared by the graphc subcommands: turning a Status into a message and an
// exit code (the only place that happens), the shape flags, atomic writes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "driver/shape_profiles.h"
#include "ir/tensor.h"
#include "support/status.h"

namespace CLI {
class App;
}

namespace graphc::cli {

// Exit codes (docs/cli.md#exit-codes).
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;     // the input or the operation failed
inline constexpr int kExitUsage = 2;     // bad flags or flag combinations
inline constexpr int kExitAccuracy = 3;  // run --check / conformance: results differ

// Prints "graphc: error: <message>" to stderr; returns the exit code
// (kExitUsage for kInvalidArgument, else kExitError).
int report(const Status& status);

// The exit code of an accuracy check that ran: kExitOk when nothing failed,
// else kExitAccuracy (the results differ; the run itself worked).
int accuracy_exit_code(int failed);

// Input shapes, as trtexec spells them too:
//   --shape/--shapes NAME:DxD...[,NAME:DxD...]    (repeatable; a comma list of shapes)
//   --min-shape/--opt-shape/--max-shape NAME:DxD... (trtexec's --minShapes/--optShapes/
//                                                   --maxShapes): the first profile's ranges
//   --shape-profile NAME:MIN/OPT/MAX[,...]        (repeatable): one more profile each
struct ShapeFlags {
  std::vector<std::string> shapes, min, opt, max, profiles;
  bool empty() const {
    return shapes.empty() && min.empty() && opt.empty() && max.empty() && profiles.empty();
  }
};
// `help`: --shape's help text (the default: binding input shapes).
void add_shape_flags(CLI::App* cmd, ShapeFlags& flags, const std::string& help = "");

// The shape profiles the flags give (at least one, perhaps empty: no flags).
// Each range is checked alone (min <= opt <= max, ranks); --shape fixes its
// input in every profile. Errors name the flag or profile, the input and dim.
Expected<std::vector<driver::ShapeProfile>> parse_shape_profiles(const ShapeFlags& flags);

// Every input's one shape, for commands that take no ranges (run, inspect):
// a range (min != max, or profiles that differ) is an error naming the input.
Expected<std::map<std::string, ir::Shape>> parse_shape_flags(const ShapeFlags& flags);
Expected<std::map<std::string, ir::Shape>> parse_shape_flags(const std::vector<std::string>& flags);

// "a:2x8,b:1x1" -> {"a:2x8", "b:1x1"}. A part without ':' continues the one
// before it, so "a:1,3,224,224" (dims separated by commas) stays one shape.
std::vector<std::string> split_shape_list(const std::string& text);

// "760.5 KiB", "1.25 GiB": sizes in the summary lines of build and refit.
std::string human_bytes(uint64_t bytes);

// Writes `contents` to `path` atomically (temporary file in the same folder,
// then rename), so a failure never leaves a partial file.
Status write_file_atomic(const std::string& path, const std::string& contents);

}  // namespace graphc::cli
