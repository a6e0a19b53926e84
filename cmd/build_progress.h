// Progress of `graphc build` on a terminal: one status line on stderr,
// rewritten in place (\r), naming the phase (import, optimize, emit,
// compile N/M with a bar, write). Nothing is drawn when stderr is not a
// terminal. Each phase's duration is logged at info level (-v), with the
// line cleared first so log lines and the status line never mix.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace graphc::cli {

class BuildProgress {
 public:
  explicit BuildProgress(bool terminal);
  ~BuildProgress();  // clears the status line
  BuildProgress(const BuildProgress&) = delete;
  BuildProgress& operator=(const BuildProgress&) = delete;

  // Ends the current phase (logging its duration) and starts `name`.
  void phase(const std::string& name);
  // Compilations done of total, for the compile phase's bar.
  void compiled(size_t done, size_t total);
  // Ends the current phase (logging its duration) and clears the line.
  void finish();
  // Clears the line without logging: the build failed and its error follows.
  void stop();
  // Logs at info level without tearing the status line.
  void log(const std::string& message);
  // Seconds since construction.
  double elapsed() const;

 private:
  void draw(const std::string& line, bool force);
  void clear();

  bool terminal_;
  bool drawn_ = false;
  std::string phase_;
  std::string line_;
  std::chrono::steady_clock::time_point start_, phase_start_, last_draw_;
};

}  // namespace graphc::cli
