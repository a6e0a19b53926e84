// Runs the general attention kernel's generated source on the host
// (tests/emu/attention_generic_shim.h: one thread per CUDA thread) against
// graphc's reference executor on a graph with one Attention node
// (tests/attention_generic_harness.h): every feature of the operator in fp32,
// fp16 and bf16, outputs poisoned with NaN first so an unwritten element
// shows. A developer tool with small cases, not a ctest (the cases take
// minutes on two cores); run it with nice:
//
//   nice -n 19 graphc_attention_generic_emu [--list] [--keep DIR] [FILTER...]
//
// FILTER: substrings of case names (generic_cases()). Exit 1 on any failure.
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "emit/cuda/cuda_attention_generic.h"
#include "tests/attention_generic_harness.h"

using namespace graphc;
using namespace graphc::testing::attn_generic;

#ifndef GRAPHC_SOURCE_DIR
#define GRAPHC_SOURCE_DIR "."
#endif
#ifndef GRAPHC_EMU_CXX
#define GRAPHC_EMU_CXX "g++"
#endif

namespace {

using LaunchFn = void (*)(unsigned, unsigned, unsigned, unsigned, size_t, void**, const void*);

std::string source_dir() {
  const char* e = std::getenv("GRAPHC_SOURCE_DIR");
  return e && *e ? e : GRAPHC_SOURCE_DIR;
}

// Compiles the spec's portable source with the host shim into a shared
// object named by the hash of its text (so a changed generator rebuilds).
std::string build(const emit::GenericAttentionSpec& spec, const std::string& dir) {
  std::string body = "#include \"tests/emu/attention_generic_shim.h\"\n";
  body += emit::detail::generic_attention_portable_source(spec, "attn_generic_emu_kernel");
  body +=
      "extern \"C\" void emu_launch(unsigned gx, unsigned gy, unsigned gz, unsigned threads, "
      "size_t smem,\n"
      "                             void** a, const void* params) {\n"
      "  const GenericAttentionParams p = *static_cast<const GenericAttentionParams*>(params);\n"
      "  emu_gen::run_grid(dim3{gx, gy, gz}, threads, smem, [&] {\n"
      "    attn_generic_emu_kernel(";
  const auto args = emit::generic_attention_kernel_args(spec);
  for (size_t i = 0; i < args.size(); ++i) {
    using A = emit::GenericAttentionArg;
    const char* cast = "(const elem_t*)";
    if (args[i] == A::kMask) cast = "(const mask_t*)";
    if (args[i] == A::kNonpad) cast = "(const long long*)";
    if (args[i] == A::kY || args[i] == A::kPresentKey || args[i] == A::kPresentValue ||
        args[i] == A::kQkOutput)
      cast = "(elem_t*)";
    body += std::string(cast) + "a[" + std::to_string(i) + "], ";
  }
  body += "p);\n  });\n}\n";
  // The cache key covers the shim's text too.
  std::ifstream shim(source_dir() + "/tests/emu/attention_generic_shim.h");
  const std::string shim_text((std::istreambuf_iterator<char>(shim)),
                              std::istreambuf_iterator<char>());
  char hash[32];
  std::snprintf(hash, sizeof hash, "%016zx", std::hash<std::string>{}(body + shim_text));
  const std::string base = dir + "/" + emit::generic_attention_entry_name(spec) + "_" + hash;
  const std::string cpp = base + ".cpp", so = base + ".so";
  if (std::filesystem::exists(so)) return so;
  std::ofstream(cpp) << body;
  const std::string cmd = std::string(GRAPHC_EMU_CXX) +
                          " -std=c++20 -O1 -ffp-contract=off -w -shared -fPIC -I" + source_dir() +
                          " " + cpp + " -o " + so + ".tmp && mv " + so + ".tmp " + so;
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "host compile failed: %s\n", cmd.c_str());
    std::exit(2);
  }
  return so;
}

}  // namespace

int main(int argc, char** argv) {
  std::string keep;
  bool list = false;
  std::vector<std::string> filters;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--keep" && i + 1 < argc)
      keep = argv[++i];
    else if (a == "--list")
      list = true;
    else
      filters.push_back(a);
  }
  std::string dir = keep;
  if (dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/graphc-attn-generic-emu";
  }
  std::filesystem::create_directories(dir);
  std::mt19937 rng(20260317);
  int failed = 0, ran = 0;
  for (const GenericCase& c : generic_cases()) {
    bool match = filters.empty();
    for (const auto& f : filters) match = match || c.name.find(f) != std::string::npos;
    if (!match) continue;
    if (list) {
      std::printf("%s\n", c.name.c_str());
      continue;
    }
    auto pr = make_problem(c, rng);
    if (!pr.ok()) {
      std::printf("FAIL  %-60s %s\n", c.name.c_str(), pr.status().message().c_str());
      ++failed;
      continue;
    }
    const emit::GenericAttentionSpec& spec = pr->launch.spec;
    const emit::GenericAttentionParams& p = pr->launch.params;
    const std::string so = build(spec, dir);
    void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      std::printf("FAIL  dlopen %s: %s\n", so.c_str(), dlerror());
      return 2;
    }
    auto launch = reinterpret_cast<LaunchFn>(dlsym(h, "emu_launch"));
    std::vector<std::vector<uint8_t>> outs = poisoned_outputs(*pr);
    std::vector<void*> ptrs;
    size_t slot = 0;
    for (size_t i = 0; i < pr->args.size(); ++i)
      ptrs.push_back(pr->arg_inputs[i] ? const_cast<uint8_t*>(pr->arg_inputs[i]->data())
                                       : static_cast<void*>(outs[slot++].data()));
    const emit::LaunchShape ls = emit::generic_attention_launch_shape(spec, p);
    const auto t0 = std::chrono::steady_clock::now();
    launch(static_cast<unsigned>(ls.grid[0]), static_cast<unsigned>(ls.grid[1]),
           static_cast<unsigned>(ls.grid[2]), static_cast<unsigned>(ls.block[0]),
           static_cast<size_t>(ls.shared_bytes), ptrs.data(), &p);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto checks = compare_generic_outputs(c, *pr, outs);
    bool ok = true;
    std::string detail;
    for (const auto& ch : checks) {
      ok = ok && ch.ok;
      detail += "  " + ch.summary() + "\n";
    }
    std::printf("%s  %-60s %-12s zero rows %lld (%.1f s)\n%s", ok ? "ok  " : "FAIL", c.name.c_str(),
                emit::generic_attention_tile_name(spec.tile).c_str(),
                static_cast<long long>(zero_rows(c, *pr)), secs, detail.c_str());
    std::fflush(stdout);
    ++ran;
    if (!ok) ++failed;
    dlclose(h);
  }
  if (!list) std::printf("%d run, %d failed\n", ran, failed);
  return failed ? 1 : 0;
}
