// Runs the graphc binary (GRAPHC_BINARY) for the CLI tests, capturing stdout
// and stderr together. Header-only.
#pragma once

#include <cstdlib>

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace graphc::testing {

struct CliResult {
  int exit_code = -1;  // 128 + signal when the process was killed by a signal
  std::string output;  // stdout and stderr interleaved
  bool crashed() const { return exit_code < 0 || exit_code >= 128; }
};

// `args` is appended to the binary's path and run by /bin/sh; quote as needed.
inline CliResult run_graphc_binary(const std::string& binary, const std::string& args) {
  CliResult r;
  std::string cmd = binary + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int status = ::pclose(p);
  if (status == -1) return r;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.exit_code = 128 + WTERMSIG(status);
  return r;
}

// $GRAPHC_TEST_BINARY overrides the build tree's graphc: on the GPU machine the
// tests run from a copied folder, not where they were built.
inline CliResult run_graphc(const std::string& args) {
  const char* env = std::getenv("GRAPHC_TEST_BINARY");
  return run_graphc_binary(env && *env ? env : GRAPHC_BINARY, args);
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace graphc::testing
