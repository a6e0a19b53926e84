// Warnings from the runtime: things that do not stop a run but that its user
// should hear about (a recorded algorithm this GPU cannot run, so the
// heuristic's is used). The runtime has no logger of its own: the CLI routes
// them to its log, tests capture them, and the default prints to stderr.
#pragma once

#include <functional>
#include <string>

namespace graphc::runtime {

using WarningSink = std::function<void(const std::string& message)>;

// Replaces the process-wide sink (nullptr: the default, "graphc: warning: ..."
// on stderr) and returns the previous one. Thread-safe.
WarningSink set_warning_sink(WarningSink sink);
// Passes `message` to the sink. Thread-safe; sinks are called one at a time.
void warn(const std::string& message);

}  // namespace graphc::runtime
