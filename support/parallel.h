// Splitting a large loop over the cores: for conversions of multi-GB weights,
// where one core is slower than the disk.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace graphc {

// Calls body(begin, end) over [0, n) in contiguous pieces of at least
// `min_piece` elements, one thread per piece up to the core count; returns
// when all are done. Small ranges run on the calling thread.
template <typename Body>
void parallel_for(int64_t n, int64_t min_piece, const Body& body) {
  const int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t pieces = std::clamp<int64_t>(n / std::max<int64_t>(min_piece, 1), 1, cores);
  if (pieces <= 1) {
    if (n > 0) body(int64_t{0}, n);
    return;
  }
  const int64_t step = (n + pieces - 1) / pieces;
  std::vector<std::thread> threads;
  for (int64_t p = 1; p < pieces; ++p)
    threads.emplace_back([&, p] { body(p * step, std::min(n, (p + 1) * step)); });
  body(int64_t{0}, std::min(n, step));
  for (auto& t : threads) t.join();
}

}  // namespace graphc
