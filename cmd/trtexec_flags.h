// trtexec flags that have no graphc equivalent. graphc accepts the trtexec
// spellings of what it does (--onnx, --saveEngine, --fp16, --shapes, ...: see
// each command and docs/cli.md's migration table); the flags registered here
// say what becomes of them: a warning when ignoring them changes nothing a
// user relies on, an error when ignoring them would mislead (e.g. --int8
// would silently build an fp32 engine).
#pragma once

#include <string>
#include <vector>

#include "support/status.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace graphc::cli {

struct TrtexecFlags {
  struct Entry {
    std::string name;
    bool refuse = false;  // an error rather than a warning
    std::string why;
    CLI::Option* option = nullptr;
  };
  std::vector<Entry> entries;
  std::vector<std::string> values;  // storage for flags that take a value
};

// Registers the trtexec flags that do not apply to `command` ("build" or
// "run") in the help group "trtexec flags graphc does not use".
void add_trtexec_flags(CLI::App* cmd, const std::string& command, TrtexecFlags& flags);

// After parsing: the warnings for the ignored flags given (one line each), or
// the error for the first refused one.
Expected<std::vector<std::string>> check_trtexec_flags(const TrtexecFlags& flags);

}  // namespace graphc::cli
