// cuDNN attention (runtime/cudnn_sdpa.h) on the GPU against a double-precision
// CPU reference, on fresh random inputs (Q, K, V in [-1, 1], biases in [-2, 2];
// never zeros), through the runtime as engines run it (an Executable with the
// call, Engine + context, CUDA graph after the eager warm-up):
//  - fp16 and bf16; head dims 64 and 128 (required), 32, 256 and a value dim
//    unlike the key dim (probed: reported, a failure only if cuDNN runs them
//    and gets them wrong); odd and cross lengths; causal (top-left); additive
//    biases broadcast over batch and/or heads (and, probed, over queries);
//    [B, L, H*D] operands through strides; grouped- and multi-query attention
//    and padding masks from sequence lengths (probed);
//  - the same engine without a CUDA graph and in a second context (plans are
//    shared by contexts, each with its own handle), repeated calls and equal
//    calls sharing one plan giving identical bits;
//  - cuDNN's refusals as Status (unsupported), and probe_sdpa's note.
// Tolerance: relative L2 error (||gpu - ref|| / ||ref||) < 2e-3 for fp16,
// 1e-2 for bf16. Each case prints cuDNN's choice (engine, workspace) and its
// GPU time (not asserted), so one GPU run tells what went wrong where.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>

#include "runtime/cudnn_sdpa.h"
#include "runtime/engine.h"
#include "runtime/session.h"
#include "tests/gpu/sdpa_gpu_util.h"

using namespace graphc;
using graphc::engine::SdpaParams;
namespace sd = graphc::testing::sdpa;

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::mt19937& rng() {
  static std::mt19937 r(20261125);
  return r;
}

double tolerance(const SdpaParams& p) { return p.dtype == 16 ? 1e-2 : 2e-3; }

struct Outcome {
  bool ran = false;
  Status status = Status::ok_status();
  sd::Comparison cmp;
  float ms = 0;
  std::string note;
};

// Runs `p` once through a Session on fresh inputs and compares with the reference.
Outcome run_case(const SdpaParams& p, runtime::RunOptions options = {}) {
  Outcome out;
  const runtime::Executable exe = sd::executable(p);
  auto session = runtime::Session::create(exe, options);
  if (!session.ok()) {
    out.status = session.status();
    return out;
  }
  out.note = runtime::last_sdpa_setup_note();  // what cuDNN chose for the engine just loaded
  const sd::HostData h = sd::random_data(p, rng());
  std::vector<std::string> outputs;
  out.status = (*session)->run(sd::input_bytes(p, h), outputs);
  if (!out.status.ok()) return out;
  out.ran = true;
  out.ms = (*session)->last_gpu_ms();
  out.cmp = sd::compare(p, h, sd::reference(p, h), outputs.at(0));
  return out;
}

struct Case {
  std::string name;
  SdpaParams p;
  bool required = true;  // else probed: cuDNN may refuse it (reported)
};

// Every case in fp16; the core ones in bf16 too (the dtype changes only the
// element type, and each case costs cuDNN a plan, often a compile).
std::vector<Case> cases() {
  std::vector<Case> out;
  for (int32_t dt : {10, 16}) {
    const std::string t = dt == 16 ? "bf16 " : "fp16 ";
    const size_t first = out.size();
    out.push_back({t + "d64 [B,H,L,D]", sd::bhsd(dt, 2, 4, 128, 128, 64)});
    out.push_back({t + "d128 [B,H,L,D]", sd::bhsd(dt, 2, 4, 128, 128, 128)});
    out.push_back({t + "d64 odd lengths", sd::bhsd(dt, 3, 2, 77, 77, 64)});
    out.push_back({t + "d128 cross attention Lq 33 Lk 150", sd::bhsd(dt, 2, 3, 33, 150, 128)});
    out.push_back({t + "d64 causal", sd::bhsd(dt, 2, 4, 130, 130, 64, true)});
    out.push_back(
        {t + "d128 causal cross Lq 64 Lk 100 (top-left)", sd::bhsd(dt, 1, 4, 64, 100, 128, true)});
    {
      SdpaParams p = sd::bhsd(dt, 2, 4, 96, 96, 64);
      sd::set_bias(p, false, false, true);
      out.push_back({t + "bias [1,1,Lq,Lk]", p});
    }
    {
      SdpaParams p = sd::bhsd(dt, 2, 4, 80, 112, 64);
      sd::set_bias(p, true, false, true);
      out.push_back({t + "bias [B,1,Lq,Lk]", p});
    }
    {
      SdpaParams p = sd::bhsd(dt, 2, 3, 64, 72, 128);
      sd::set_bias(p, true, true, true);
      out.push_back({t + "bias [B,H,Lq,Lk]", p});
    }
    {
      SdpaParams p = sd::bhsd(dt, 2, 4, 100, 104, 64, true);
      sd::set_bias(p, false, true, true);
      out.push_back({t + "bias [1,H,Lq,Lk] + causal", p});
    }
    {
      SdpaParams p = sd::bhsd(dt, 2, 4, 64, 77, 64);
      sd::set_bias(p, true, false, true);
      out.push_back({t + "bias with an odd key count (row stride 77)", p, false});
    }
    {
      SdpaParams p = sd::bhsd(dt, 2, 4, 64, 96, 64);
      sd::set_bias(p, true, false, false);
      out.push_back({t + "key-padding bias [B,1,1,Lk]", p, false});
    }
    {
      SdpaParams p = sd::bhsd(dt, 2, 4, 90, 90, 64);
      sd::repack(p, true);
      out.push_back({t + "d64 [B,L,H*D] operands", p});
    }
    {
      SdpaParams p = sd::bhsd(dt, 2, 6, 70, 130, 128, true);
      sd::repack(p, true);
      out.push_back({t + "d128 [B,L,H*D] causal cross", p});
    }
    {
      SdpaParams p = sd::bhsd(dt, 2, 8, 64, 96, 64);
      p.kv_heads = 2;
      sd::repack(p);
      out.push_back({t + "GQA 8 heads, 2 kv heads", p, false});
    }
    {
      SdpaParams p = sd::bhsd(dt, 2, 8, 64, 64, 128, true);
      p.kv_heads = 1;
      sd::repack(p, true);
      out.push_back({t + "MQA 8 heads, 1 kv head, [B,L,H*D], causal", p, false});
    }
    {
      SdpaParams p = sd::bhsd(dt, 4, 2, 64, 96, 64);
      p.has_seq_lens = true;
      out.push_back({t + "padding masks from sequence lengths", p, false});
    }
    {
      SdpaParams p = sd::bhsd(dt, 3, 2, 50, 70, 64, true);
      p.has_seq_lens = true;
      sd::set_bias(p, true, false, true);
      out.push_back({t + "sequence lengths + bias + causal", p, false});
    }
    out.push_back({t + "d32", sd::bhsd(dt, 2, 4, 64, 64, 32), false});
    out.push_back({t + "d256", sd::bhsd(dt, 2, 2, 64, 80, 256), false});
    out.push_back({t + "d256 causal", sd::bhsd(dt, 1, 2, 128, 128, 256, true), false});
    {
      SdpaParams p = sd::bhsd(dt, 2, 4, 64, 64, 128);
      p.value_dim = 64;
      sd::repack(p);
      out.push_back({t + "D 128, Dv 64", p, false});
    }
    if (dt == 16) {  // bf16: the core cases only
      const char* core[] = {"d64 [B,H,L,D]",
                            "d128 cross attention Lq 33 Lk 150",
                            "d64 causal",
                            "bias [B,1,Lq,Lk]",
                            "d128 [B,L,H*D] causal cross",
                            "GQA 8 heads, 2 kv heads",
                            "d256"};
      std::vector<Case> kept;
      for (size_t i = first; i < out.size(); ++i)
        for (const char* name : core)
          if (out[i].name == t + name) kept.push_back(out[i]);
      out.resize(first);
      out.insert(out.end(), kept.begin(), kept.end());
    }
  }
  return out;
}

}  // namespace

TEST_CASE("cuDNN SDPA against the reference", "[gpu][cudnn][sdpa]") {
  int required_failed = 0, probed_refused = 0;
  for (const Case& c : cases()) {
    const std::string what = c.name + ": " + engine::describe_sdpa(c.p);
    INFO(what);
    const Outcome o = run_case(c.p);
    if (!o.status.ok()) {
      const bool refused = o.status.code() == ErrorCode::kUnsupported;
      std::printf("sdpa %-8s %s\n       %s: %s\n", c.required ? "FAIL" : "refused", what.c_str(),
                  refused ? "cuDNN refused" : "error", o.status.message().c_str());
      if (c.required || !refused) {
        ++required_failed;
        CHECK(o.status.ok());
      } else {
        ++probed_refused;
      }
      continue;
    }
    const bool good = o.cmp.rel_l2 < tolerance(c.p);
    std::printf("sdpa %-8s %s\n       rel L2 %.3g (max abs %.3g, %lld non-finite), %.4f ms; %s\n",
                good ? "ok" : "WRONG", what.c_str(), o.cmp.rel_l2, o.cmp.max_abs,
                static_cast<long long>(o.cmp.non_finite), o.ms, o.note.c_str());
    INFO("cuDNN: " << o.note << "; rel L2 " << o.cmp.rel_l2 << ", max abs " << o.cmp.max_abs
                   << ", non-finite " << o.cmp.non_finite);
    CHECK(o.cmp.rel_l2 < tolerance(c.p));
  }
  std::printf("sdpa summary: %d failed, %d probed cases refused by cuDNN\n", required_failed,
              probed_refused);
  std::fflush(stdout);
}

TEST_CASE("cuDNN SDPA without a CUDA graph, in two contexts, repeated, shared plans",
          "[gpu][cudnn][sdpa]") {
  SdpaParams p = sd::bhsd(10, 2, 4, 96, 112, 64, true);
  sd::set_bias(p, true, false, true);
  const sd::HostData h = sd::random_data(p, rng());
  const std::vector<std::string> in = sd::input_bytes(p, h);
  const std::vector<double> ref = sd::reference(p, h);
  std::vector<std::string> graph_out, direct_out;
  {
    auto s = runtime::Session::create(sd::executable(p));
    INFO((s.ok() ? "" : s.status().message()));
    REQUIRE(s.ok());
    REQUIRE((*s)->run(in, graph_out).ok());
    std::vector<std::string> again;
    REQUIRE((*s)->run(in, again).ok());
    CHECK(again == graph_out);  // repeated replays give the same bits
  }
  {
    auto s = runtime::Session::create(sd::executable(p), runtime::RunOptions{false});
    REQUIRE(s.ok());
    REQUIRE((*s)->run(in, direct_out).ok());
  }
  CHECK(sd::compare(p, h, ref, graph_out[0]).rel_l2 < 2e-3);
  CHECK(direct_out == graph_out);
  // Two contexts of one engine: the plans are the engine's, the handles and
  // workspaces each context's own.
  auto eng = runtime::Engine::create(sd::executable(p));
  INFO((eng.ok() ? "" : eng.status().message()));
  REQUIRE(eng.ok());
  auto a = (*eng)->create_context();
  auto b = (*eng)->create_context();
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  std::vector<std::string> out_a(1), out_b(1);
  std::vector<std::string_view> views(in.begin(), in.end());
  REQUIRE((*a)->run_host(views, out_a).ok());
  REQUIRE((*b)->run_host(views, out_b).ok());
  CHECK(out_a == graph_out);
  CHECK(out_b == graph_out);
  // Three launches: two equal calls (one shared setup) and a non-causal one.
  SdpaParams other = p;
  other.causal = false;
  auto multi = runtime::Session::create(sd::executable(p, 3, {p, p, other}));
  INFO((multi.ok() ? "" : multi.status().message()));
  REQUIRE(multi.ok());
  std::vector<std::string> outs;
  REQUIRE((*multi)->run(in, outs).ok());
  REQUIRE(outs.size() == 3);
  CHECK(outs[0] == graph_out[0]);
  CHECK(outs[1] == graph_out[0]);
  CHECK(sd::compare(other, h, sd::reference(other, h), outs[2]).rel_l2 < 2e-3);
  auto setups = runtime::EngineSdpas::create(sd::executable(p, 3, {p, p, other}));
  REQUIRE(setups.ok());
  CHECK((*setups)->setup(0) == (*setups)->setup(1));
  CHECK((*setups)->setup(0) != (*setups)->setup(2));
}

TEST_CASE("cuDNN SDPA refusals are Status values", "[gpu][cudnn][sdpa]") {
  // A head dim cuDNN does not take: the engine fails to load with
  // kUnsupported, naming the launch (a compiler falls back on it).
  SdpaParams odd = sd::bhsd(10, 1, 2, 16, 16, 12);
  auto eng = runtime::Engine::create(sd::executable(odd));
  REQUIRE_FALSE(eng.ok());
  INFO(eng.status().message());
  CHECK(eng.status().code() == ErrorCode::kUnsupported);
  CHECK(has(eng.status().message(), "cuDNN attention (launch 0"));
  // No workspace allowed: either a plan needing none or a refusal, never a crash.
  auto none = runtime::Engine::create(sd::executable(sd::bhsd(10, 2, 4, 128, 128, 64), 1, {}, 0));
  if (!none.ok()) CHECK(none.status().code() == ErrorCode::kUnsupported);
  std::printf("sdpa with no workspace allowed: %s\n",
              none.ok() ? "planned" : none.status().message().c_str());
  // probe_sdpa: what the compiler asks on a machine with the GPU.
  auto note = runtime::probe_sdpa(sd::bhsd(16, 2, 4, 256, 256, 128, true), sd::kWorkspaceLimit);
  INFO((note.ok() ? "" : note.status().message()));
  REQUIRE(note.ok());
  std::printf("probe_sdpa: %s\n", note->c_str());
  CHECK(has(*note, "cuDNN"));
}
