// Per set of shapes (the symbols' values), what a context's library launches
// run there: one entry per launch (null: its generated kernel). A shape whose
// choices are settled costs one map lookup; a shape with a plan still being
// built elsewhere (BackgroundPlans) is resolved again only once the plans'
// generation has moved on, and the caller hears when its choices changed (it
// then drops the CUDA graph captured with the old ones). Not thread-safe: one
// per execution context.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "support/status.h"

namespace graphc::runtime {

template <typename Setup>
class ShapeChoices {
 public:
  using Choices = std::vector<const Setup*>;
  // What resolving a shape gives: the choices and whether any launch's plan
  // was still being built (ask again at a later generation).
  struct Resolved {
    Choices choices;
    bool pending = false;
  };
  using Resolve = std::function<Expected<Resolved>()>;

  // The choices at `key`. `generation`: the plans' generation, read before
  // `resolve` looks them up (a plan landing after it then moves it on).
  // `changed` (optional): whether a known shape's choices changed.
  Expected<const Choices*> get(const std::vector<int64_t>& key, uint64_t generation,
                               const Resolve& resolve, bool* changed = nullptr) {
    if (changed) *changed = false;
    auto known = entries_.find(key);
    if (known != entries_.end() &&
        (!known->second.pending || known->second.generation == generation))
      return &known->second.choices;
    ASSIGN_OR_RETURN(Resolved got, resolve());
    Entry entry{std::move(got.choices), got.pending, generation};
    if (known != entries_.end()) {
      if (changed) *changed = entry.choices != known->second.choices;
      known->second = std::move(entry);
      return &known->second.choices;
    }
    // Bounded: past this many shapes the lookups start over (the plans stay
    // with the engine).
    if (entries_.size() >= kMaxShapes) entries_.clear();
    return &entries_.emplace(key, std::move(entry)).first->second.choices;
  }
  size_t size() const { return entries_.size(); }
  static constexpr size_t kMaxShapes = 4096;

 private:
  struct Entry {
    Choices choices;
    bool pending = false;
    uint64_t generation = 0;
  };
  std::map<std::vector<int64_t>, Entry> entries_;
};

}  // namespace graphc::runtime
