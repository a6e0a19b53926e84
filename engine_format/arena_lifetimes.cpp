// The buffer-plan check of the engine validator: arena tensors whose bytes
// overlap must never be live at the same time, or a kernel would overwrite a
// value that a later kernel still reads. Lifetimes come from the kernel list
// (kernels run in manifest order): a tensor is live from the first kernel
// naming it to the last. One overlap is legal: a kernel writing an output over
// an input it reads for the last time (the planner's in-place elementwise
// reuse), i.e. one lifetime ending at the kernel where the other begins.
#include <algorithm>
#include <map>
#include <vector>

#include "engine_format/validate.h"
#include "support/status.h"

namespace graphc::engine {
namespace {

struct Lifetime {
  int32_t tensor = 0;
  int first = 0, last = 0;
  uint64_t begin = 0, end = 0;  // bytes [begin, end) of the arena
};

std::string tensor_label(const Manifest& m, int32_t t) {
  return fmt::format("tensor {} '{}'", t, m.tensors(t).name());
}

}  // namespace

Status validate_arena_lifetimes(const Manifest& m) {
  // Lifetimes of the arena tensors that some kernel uses (an unused one holds nothing).
  std::vector<int> first(static_cast<size_t>(m.tensors_size()), -1), last(first);
  for (int k = 0; k < m.kernels_size(); ++k) {
    for (int32_t a : m.kernels(k).args()) {  // validate_kernel checked the range
      auto i = static_cast<size_t>(a);
      if (first[i] < 0) first[i] = k;
      last[i] = k;
    }
  }
  std::vector<Lifetime> live;
  for (int32_t t = 0; t < m.tensors_size(); ++t) {
    const Tensor& x = m.tensors(t);
    if (x.location() != Tensor::ARENA || first[t] < 0 || x.bytes() == 0) continue;
    // validate_tensor checked offset + bytes against the arena: no overflow.
    live.push_back({t, first[t], last[t], x.offset(), x.offset() + x.bytes()});
  }
  std::sort(live.begin(), live.end(), [](const Lifetime& a, const Lifetime& b) {
    return a.first != b.first ? a.first < b.first : a.tensor < b.tensor;
  });
  // A sweep over kernels: `held` maps the start byte of every tensor live
  // across the current kernel to its lifetime, `ends` orders them by their
  // last kernel. Live tensors never overlap, so the held ranges are disjoint
  // and each new tensor is checked against its two neighbours in O(log n).
  std::map<uint64_t, const Lifetime*> held;
  std::multimap<int, const Lifetime*> ends;
  int step = -1;
  for (const Lifetime& cur : live) {
    // On reaching kernel k, every held tensor began before k. Those ending
    // before k are over; those ending at k may share bytes with a tensor first
    // written at k (in-place), so they leave too. Tensors beginning at k stay
    // held while the others beginning at k are checked.
    if (cur.first != step) {
      step = cur.first;
      while (!ends.empty() && ends.begin()->first <= step) {
        held.erase(ends.begin()->second->begin);
        ends.erase(ends.begin());
      }
    }
    const Lifetime* clash = nullptr;
    auto after = held.lower_bound(cur.begin);
    if (after != held.end() && after->second->begin < cur.end) clash = after->second;
    if (!clash && after != held.begin() && std::prev(after)->second->end > cur.begin)
      clash = std::prev(after)->second;
    if (clash) {
      return invalid_engine(
          "buffer plan: {} (arena bytes [{}, {}), kernels {}..{}) overlaps {} (bytes [{}, {}), "
          "kernels {}..{}) while both are live",
          tensor_label(m, cur.tensor), cur.begin, cur.end, cur.first, cur.last,
          tensor_label(m, clash->tensor), clash->begin, clash->end, clash->first, clash->last);
    }
    held.emplace(cur.begin, &cur);
    ends.emplace(cur.last, &cur);
  }
  return Status::ok_status();
}

}  // namespace graphc::engine
