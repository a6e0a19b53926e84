// Concurrency on the GPU: 8 threads, each with its own ExecutionContext on
// one shared Engine, run many iterations on their own inputs; every result
// must be bit-identical to the same input's result from a serial run (same
// kernels, same cuBLASLt algorithm, same workspace size: nothing may depend
// on what the other threads do). Once with a cuBLASLt call in the engine and
// once with generated kernels only; half the contexts replay a CUDA graph,
// half launch one by one. The serial results are checked against the
// reference executor first, so identical garbage cannot pass.
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "tests/gpu/built_engine.h"

using namespace graphc;

namespace {

constexpr int kThreads = 8;
constexpr int kIterations = 40;
constexpr int64_t kM = 256, kK = 384, kN = 512;

void run_threads_against_serial(target::GemmMode gemm, const char* what) {
  INFO(what);
  auto b = testing::build_engine_for_gpu(testing::mixed_launch_graph(kM, kK, kN), gemm);
  const std::map<std::string, double> scale = {{"y", std::sqrt(double(kK))},
                                               {"s", std::sqrt(double(kK))}};
  int library_calls = 0;
  for (const auto& k : b.contents.manifest.kernels()) library_calls += k.has_library_call();
  std::printf("%s: %d launches, %d cuBLASLt calls\n", what, b.contents.manifest.kernels_size(),
              library_calls);
  if (gemm == target::GemmMode::kCublasLt) REQUIRE(library_calls >= 1);
  if (gemm == target::GemmMode::kGenerated) REQUIRE(library_calls == 0);
  const size_t n_out = b.engine->bindings().size() - static_cast<size_t>(b.engine->num_inputs());
  // Serial: one context, each thread's inputs in turn.
  std::vector<std::vector<std::string>> inputs(kThreads), expected(kThreads);
  {
    auto serial = b.engine->create_context();
    REQUIRE(serial.ok());
    for (int t = 0; t < kThreads; ++t) {
      std::mt19937 rng(9000 + t);
      std::map<std::string, ir::Tensor> feeds;
      inputs[t] = b.random_inputs(rng, &feeds);
      std::vector<std::string_view> in(inputs[t].begin(), inputs[t].end());
      expected[t].resize(n_out);
      Status st = (*serial)->run_host(in, expected[t]);
      INFO(st.message());
      REQUIRE(st.ok());
      INFO("serial run, thread " << t << "'s inputs");
      CHECK(testing::mismatch_vs_reference(b, feeds, expected[t], scale) == "");
    }
  }
  std::vector<std::string> errors(kThreads);
  std::vector<int> wrong(kThreads, 0), runs(kThreads, 0);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      runtime::ContextOptions co;
      co.cuda_graph = t % 2 == 0;
      auto ctx = b.engine->create_context(co);
      if (!ctx.ok()) {
        errors[t] = ctx.status().message();
        return;
      }
      std::vector<std::string_view> in(inputs[t].begin(), inputs[t].end());
      for (int it = 0; it < kIterations; ++it) {
        std::vector<std::string> out(n_out);
        Status st = (*ctx)->run_host(in, out);
        if (!st.ok()) {
          errors[t] = fmt::format("iteration {}: {}", it, st.message());
          return;
        }
        ++runs[t];
        if (out != expected[t] && wrong[t]++ == 0)
          for (size_t o = 0; o < n_out; ++o)
            if (out[o] != expected[t][o])
              errors[t] = fmt::format("iteration {}: output {} differs from the serial run", it, o);
      }
    });
  for (auto& th : threads) th.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: %d threads x %d runs in %.3f s\n", what, kThreads, kIterations, seconds);
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t << (t % 2 == 0 ? " (CUDA graph)" : " (one by one)") << ": " << runs[t]
                   << " runs, " << wrong[t] << " differ from serial; " << errors[t]);
    CHECK(errors[t] == "");
    CHECK(wrong[t] == 0);
    CHECK(runs[t] == kIterations);
  }
}

}  // namespace

TEST_CASE("8 threads, one context each on one cuBLASLt engine, match a serial run bit for bit",
          "[gpu][stress][cublaslt]") {
  run_threads_against_serial(target::GemmMode::kCublasLt, "cuBLASLt engine");
}

TEST_CASE("8 threads, one context each on one generated-kernel engine, match a serial run",
          "[gpu][stress]") {
  run_threads_against_serial(target::GemmMode::kGenerated, "generated-kernel engine");
}
