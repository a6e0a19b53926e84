#include "cmd/build_progress.h"

#include <spdlog/spdlog.h>

#include <cstdio>

namespace graphc::cli {

namespace {
constexpr int kBarWidth = 24;
// Redraw at most this often (a cached rebuild finishes thousands of
// compilations in a blink); the final state is always drawn.
constexpr auto kRedrawInterval = std::chrono::milliseconds(50);
}  // namespace

BuildProgress::BuildProgress(bool terminal)
    : terminal_(terminal), start_(std::chrono::steady_clock::now()), phase_start_(start_) {}

BuildProgress::~BuildProgress() { clear(); }

double BuildProgress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void BuildProgress::phase(const std::string& name) {
  auto now = std::chrono::steady_clock::now();
  if (!phase_.empty())
    log(fmt::format("build: {} took {:.0f} ms", phase_,
                    std::chrono::duration<double, std::milli>(now - phase_start_).count()));
  phase_ = name;
  phase_start_ = now;
  if (!name.empty()) draw(fmt::format("[graphc build] {}", name), true);
}

void BuildProgress::compiled(size_t done, size_t total) {
  if (!terminal_) return;
  size_t filled = total == 0 ? kBarWidth : done * kBarWidth / total;
  std::string bar(filled, '#');
  bar.resize(kBarWidth, '.');
  draw(fmt::format("[graphc build] compile [{}] {}/{} kernels", bar, done, total),
       done == total || done == 0);
}

void BuildProgress::finish() {
  phase("");
  clear();
}

void BuildProgress::stop() {
  phase_.clear();
  clear();
}

void BuildProgress::log(const std::string& message) {
  if (!spdlog::should_log(spdlog::level::info)) return;
  bool redraw = drawn_;
  clear();
  spdlog::info("{}", message);
  if (redraw) draw(line_, true);
}

void BuildProgress::draw(const std::string& line, bool force) {
  line_ = line;
  if (!terminal_ || line.empty()) return;
  auto now = std::chrono::steady_clock::now();
  if (!force && drawn_ && now - last_draw_ < kRedrawInterval) return;
  last_draw_ = now;
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void BuildProgress::clear() {
  if (!terminal_ || !drawn_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace graphc::cli
