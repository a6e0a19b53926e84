// The engine validator's buffer-plan check: two arena tensors may share bytes
// only when their lifetimes (first to last kernel naming them) do not overlap,
// or touch at the one kernel that writes one over the other (in-place).
#include <catch2/catch.hpp>

#include "engine_format/validate.h"
#include "engine_test_util.h"

using namespace graphc::engine;
using namespace graphc::engine::testing;

namespace {

// sample_engine (kernel 0: x @ w -> t, kernel 1: t + b -> y) plus an arena
// tensor u of t's size at `u_offset`, kernel 1's output redirected to u, and
// a kernel 2 copying `copy_src` into y.
EngineContents with_second_arena_tensor(uint64_t u_offset, int copy_src) {
  EngineContents c = sample_engine();
  Manifest& m = c.manifest;
  add_tensor(m, "u", 1, {2, 4}, Tensor::ARENA, u_offset, 32);  // tensor 5
  m.mutable_kernels(1)->set_args(2, 5);
  Kernel* copy = m.add_kernels();
  copy->set_name("copy_2");
  copy->set_kind("copy");
  copy->set_copy(true);
  copy->add_args(copy_src);
  copy->add_args(4);
  return c;
}

void expect_accepted(const EngineContents& c) {
  auto bytes = serialize_engine(c);
  INFO(bytes.status().message());
  REQUIRE(bytes.ok());
  auto back = parse_engine(*bytes);
  INFO(back.status().message());
  CHECK(back.ok());
}

}  // namespace

TEST_CASE("an in-place output over an input read for the last time is accepted", "[engine]") {
  // t lives over kernels 0..1, u over 1..2: they touch at kernel 1, which
  // reads t and writes u over it.
  expect_accepted(with_second_arena_tensor(0, 5));
}

TEST_CASE("arena bytes reused after a lifetime ends are accepted", "[engine]") {
  EngineContents c = with_second_arena_tensor(0, 5);
  // u is written by the copy (kernel 2) only after t's last use (kernel 1).
  c.manifest.mutable_kernels(1)->set_args(2, 4);
  c.manifest.mutable_kernels(2)->set_args(0, 4);
  c.manifest.mutable_kernels(2)->set_args(1, 5);
  expect_accepted(c);
}

TEST_CASE("a buffer plan aliasing two live arena tensors is refused", "[engine]") {
  // t is still read by kernel 2 after kernel 1 wrote u over it.
  expect_invalid_manifest(with_second_arena_tensor(0, 2),
                          "buffer plan: tensor 5 'u' (arena bytes [0, 32), kernels 1..1) overlaps "
                          "tensor 2 't' (bytes [0, 32), kernels 0..2) while both are live");
  // A partial overlap is caught the same way.
  expect_invalid_manifest(with_second_arena_tensor(16, 2), "overlaps tensor 2 't'");
  // Disjoint bytes are fine with the same lifetimes.
  EngineContents c = with_second_arena_tensor(32, 2);
  expect_accepted(c);
}

TEST_CASE("two outputs of one kernel may not share arena bytes", "[engine]") {
  EngineContents c = with_second_arena_tensor(0, 5);
  // Kernel 0 becomes a generated kernel (the sample's is a cuBLASLt call,
  // whose argument count is fixed) that writes both t and u: both begin at
  // kernel 0.
  Kernel* k0 = c.manifest.mutable_kernels(0);
  *k0 = c.manifest.kernels(1);
  k0->set_name("two_outputs_0");
  k0->clear_args();
  for (int a : {0, 1, 2, 5}) k0->add_args(a);
  expect_invalid_manifest(c, "overlaps tensor 2 't'");
}
