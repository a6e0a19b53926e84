#include "runtime/warnings.h"

#include <cstdio>
#include <mutex>
#include <utility>

namespace graphc::runtime {

namespace {

std::mutex& sink_mutex() {
  static std::mutex m;
  return m;
}

WarningSink& current_sink() {
  static WarningSink sink;
  return sink;
}

}  // namespace

WarningSink set_warning_sink(WarningSink sink) {
  std::lock_guard<std::mutex> lock(sink_mutex());
  return std::exchange(current_sink(), std::move(sink));
}

void warn(const std::string& message) {
  std::lock_guard<std::mutex> lock(sink_mutex());
  if (current_sink()) {
    current_sink()(message);
    return;
  }
  std::fprintf(stderr, "graphc: warning: %s\n", message.c_str());
}

}  // namespace graphc::runtime
