// Runs the fused attention kernel's generated source on the host
// (tests/emu/attention_host_shim.h: one thread per CUDA thread, emulated
// ldmatrix / mma.sync / cp.async groups) against the double reference of
// tests/attention_harness.h. Checks fragment layouts, index math, masking,
// the online softmax and the pipeline's waits without a GPU; slow (every
// warp-collective op is two barriers), so it is a developer tool with a
// size cap, not a ctest.
//
//   graphc_attention_emu [--eager] [--all-tiles] [--max-work N] [--keep DIR] [FILTER...]
//
// FILTER: substrings of case names (tests/attention_harness.h attention_cases()).
// --all-tiles: every tile variant of each case's spec. --eager: cp.async
// lands at issue instead of at the wait that forces it.
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "emit/cuda_attention.h"
#include "tests/attention_harness.h"

using namespace graphc;
using namespace graphc::testing::attn;

#ifndef GRAPHC_SOURCE_DIR
#define GRAPHC_SOURCE_DIR "."
#endif
#ifndef GRAPHC_EMU_CXX
#define GRAPHC_EMU_CXX "g++"
#endif

namespace {

using LaunchFn = void (*)(unsigned, unsigned, unsigned, unsigned, size_t, int, const void*, const void*,
                          const void*, const void*, void*, const void*);

std::string source_dir() {
  const char* e = std::getenv("GRAPHC_SOURCE_DIR");
  return e && *e ? e : GRAPHC_SOURCE_DIR;
}

// Compiles the spec's portable source with the host shim into a shared object.
std::string build(const AttentionKernelSpec& spec, const std::string& dir) {
  const std::string name = emit::attention_entry_name(spec);
  const std::string cpp = dir + "/" + name + ".cpp", so = dir + "/" + name + ".so";
  if (std::filesystem::exists(so)) return so;
  const bool has_mask = spec.mask != AttentionKernelSpec::Mask::kNone;
  std::ofstream f(cpp);
  if (spec.dtype == ir::DType::kBFloat16) f << "#define EMU_BF16 1\n";
  f << "#include \"tests/emu/attention_host_shim.h\"\n";
  f << emit::detail::attention_portable_source(spec, "attn_emu_kernel");
  f << "extern \"C\" void emu_launch(unsigned gx, unsigned gy, unsigned gz, unsigned threads, size_t smem, int eager,\n"
       "    const void* q, const void* k, const void* v, const void* mask, void* o, const void* params) {\n"
       "  (void)mask;\n"
       "  const AttentionParams p = *static_cast<const AttentionParams*>(params);\n"
       "  emu::run_grid(dim3{gx, gy, gz}, threads, smem, eager != 0, [&] {\n"
       "    attn_emu_kernel((const elem_t*)q, (const elem_t*)k, (const elem_t*)v, "
    << (has_mask ? "(const mask_t*)mask, " : "")
    << "(elem_t*)o, p);\n"
       "  });\n"
       "}\n";
  f.close();
  const std::string cmd = std::string(GRAPHC_EMU_CXX) + " -std=c++20 -O1 -w -shared -fPIC -I" + source_dir() + " " +
                          cpp + " -o " + so + ".tmp && mv " + so + ".tmp " + so;
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "host compile failed: %s\n", cmd.c_str());
    std::exit(2);
  }
  return so;
}

}  // namespace

int main(int argc, char** argv) {
  bool eager = false, all_tiles = false;
  double max_work = 3e6;
  std::string keep;
  std::vector<std::string> filters;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--eager") eager = true;
    else if (a == "--all-tiles") all_tiles = true;
    else if (a == "--max-work" && i + 1 < argc) max_work = std::atof(argv[++i]);
    else if (a == "--keep" && i + 1 < argc) keep = argv[++i];
    else filters.push_back(a);
  }
  std::string dir = keep;
  if (dir.empty()) {
    char tmpl[] = "/tmp/graphc-attn-emu-XXXXXX";
    dir = mkdtemp(tmpl);
  }
  std::filesystem::create_directories(dir);
  std::mt19937 rng(1234);
  int failed = 0, ran = 0;
  for (AttentionCase c : attention_cases()) {
    bool match = filters.empty();
    for (const auto& f : filters) match = match || c.name.find(f) != std::string::npos;
    if (!match) continue;
    const double work = double(c.batch) * c.q_heads * c.q_len * c.kv_len * (c.spec.head_dim + c.spec.head_dim_v);
    if (work > max_work) {
      std::printf("SKIP  %-55s (work %.3g > --max-work)\n", c.name.c_str(), work);
      continue;
    }
    std::vector<emit::AttentionTile> tiles = {c.spec.tile};
    if (all_tiles) tiles = emit::attention_tile_variants(c.spec);
    for (const auto& tile : tiles) {
      c.spec.tile = tile;
      if (auto st = emit::validate_attention_spec(c.spec); !st.ok()) {
        std::printf("FAIL  %s: %s\n", c.name.c_str(), st.message().c_str());
        ++failed;
        continue;
      }
      const std::string so = build(c.spec, dir);
      void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) {
        std::printf("FAIL  dlopen %s: %s\n", so.c_str(), dlerror());
        return 2;
      }
      auto launch = reinterpret_cast<LaunchFn>(dlsym(h, "emu_launch"));
      AttentionInputs in = make_attention_inputs(c, rng);
      if (auto st = emit::validate_attention_params(c.spec, in.p); !st.ok()) {
        std::printf("FAIL  %s: %s\n", c.name.c_str(), st.message().c_str());
        ++failed;
        continue;
      }
      const std::vector<double> ref = attention_reference(c, in);
      std::vector<uint16_t> out(static_cast<size_t>(in.o_elems), 0x7e00);  // NaN poison
      const emit::LaunchShape ls = emit::attention_launch_shape(c.spec, in.p);
      const auto t0 = std::chrono::steady_clock::now();
      launch(static_cast<unsigned>(ls.grid[0]), static_cast<unsigned>(ls.grid[1]), static_cast<unsigned>(ls.grid[2]),
             static_cast<unsigned>(ls.block[0]), static_cast<size_t>(ls.shared_bytes), eager ? 1 : 0, in.q.data(),
             in.k.data(), in.v.data(), in.mask.empty() ? nullptr : in.mask.data(), out.data(), &in.p);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const Comparison r = compare_attention(c, in, ref, out);
      const bool ok = r.ok(attention_tolerance(c.spec.dtype));
      std::printf("%s  %-55s %-22s rel_l2 %.2e unwritten %lld masked!=0 %lld (%.1f s)\n", ok ? "ok  " : "FAIL",
                  c.name.c_str(), emit::attention_tile_name(tile).c_str(), r.rel_l2,
                  static_cast<long long>(r.unwritten), static_cast<long long>(r.masked_nonzero), secs);
      std::fflush(stdout);
      ++ran;
      if (!ok) ++failed;
      dlclose(h);
    }
  }
  std::printf("%d run, %d failed\n", ran, failed);
  return failed ? 1 : 0;
}
