// graphc_shape_switch_bench ENGINE INPUT SHAPE_A SHAPE_B [NEW_SHAPE...]
// What changing shapes costs the host on an engine with shape ranges
// (issue: cached < 20 us, first use < 5 ms; docs/dynamic-shapes.md):
//   - steady: enqueue at one shape, host microseconds per call (the baseline);
//   - switch: set_input_shape to the other cached shape, then enqueue, alternating
//     A and B (both graphs captured before timing): host microseconds per call;
//   - first use: for each NEW_SHAPE, set_input_shape + enqueue (the CUDA graph
//     captured then) + synchronize, host milliseconds;
//   - GPU time at A and B (CUDA events, median of the timed enqueues).
// Shapes are DxDx...; INPUT names the engine input they set (the others stay
// at the profile's opt). One JSON object on stdout.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/engine.h"
#include "runtime/engine_loader.h"

using namespace graphc;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<int64_t> parse_dims(const std::string& s) {
  std::vector<int64_t> d;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t x = s.find('x', pos);
    if (x == std::string::npos) x = s.size();
    d.push_back(std::stoll(s.substr(pos, x - pos)));
    pos = x + 1;
  }
  return d;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int fail(const Status& st) {
  std::fprintf(stderr, "graphc_shape_switch_bench: %s\n", st.message().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s ENGINE INPUT SHAPE_A SHAPE_B [NEW_SHAPE...]\n", argv[0]);
    return 2;
  }
  const std::string input = argv[2];
  const std::vector<int64_t> a = parse_dims(argv[3]), b = parse_dims(argv[4]);
  auto engine = runtime::load_engine_file(argv[1]);
  if (!engine.ok()) return fail(engine.status());
  auto ctx = (*engine)->create_context();
  if (!ctx.ok()) return fail(ctx.status());
  auto& c = **ctx;
  auto timer = runtime::GpuTimer::create(**engine);
  if (!timer.ok()) return fail(timer.status());
  constexpr int kIterations = 200;
  auto at = [&](const std::vector<int64_t>& shape) -> Status {
    RETURN_IF_ERROR(c.set_input_shape(input, shape));
    RETURN_IF_ERROR(c.enqueue());
    return c.synchronize();
  };
  // Capture both graphs first.
  for (const auto* s : {&a, &b})
    if (Status st = at(*s); !st.ok()) return fail(st);
  // Steady state at A, and GPU time at A and B.
  std::vector<double> steady_us, gpu_a, gpu_b;
  for (const auto* s : {&a, &b}) {
    if (Status st = at(*s); !st.ok()) return fail(st);
    for (int i = 0; i < kIterations; ++i) {
      if (Status st = (*timer)->start(c.stream()); !st.ok()) return fail(st);
      const auto t0 = Clock::now();
      if (Status st = c.enqueue(); !st.ok()) return fail(st);
      const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
      if (Status st = (*timer)->stop(c.stream()); !st.ok()) return fail(st);
      auto ms = (*timer)->elapsed_ms();
      if (!ms.ok()) return fail(ms.status());
      (s == &a ? gpu_a : gpu_b).push_back(*ms * 1000.0);
      if (s == &a) steady_us.push_back(us);
    }
  }
  // Alternating cached shapes.
  std::vector<double> switch_us;
  for (int i = 0; i < kIterations; ++i) {
    const auto& s = i % 2 ? a : b;
    const auto t0 = Clock::now();
    if (Status st = c.set_input_shape(input, s); !st.ok()) return fail(st);
    if (Status st = c.enqueue(); !st.ok()) return fail(st);
    switch_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    if (Status st = c.synchronize(); !st.ok()) return fail(st);
  }
  std::string first_use = "[";
  for (int k = 5; k < argc; ++k) {
    const auto t0 = Clock::now();
    if (Status st = at(parse_dims(argv[k])); !st.ok()) return fail(st);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    first_use += (k > 5 ? ", " : "") + std::string("{\"shape\": \"") + argv[k] +
                 "\", \"host_ms\": " + std::to_string(ms) + "}";
  }
  first_use += "]";
  std::printf(
      "{\"device\": \"%s\", \"input\": \"%s\", \"shape_a\": \"%s\", \"shape_b\": \"%s\", "
      "\"steady_enqueue_host_us_median\": %.3f, \"switch_enqueue_host_us_median\": %.3f, "
      "\"switch_cost_host_us\": %.3f, \"gpu_us_median_a\": %.3f, \"gpu_us_median_b\": %.3f, "
      "\"first_use\": %s}\n",
      (*engine)->device_name().c_str(), input.c_str(), argv[3], argv[4], median(steady_us),
      median(switch_us), median(switch_us) - median(steady_us), median(gpu_a), median(gpu_b),
      first_use.c_str());
  return 0;
}
