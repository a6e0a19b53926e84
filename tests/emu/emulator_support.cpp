#include "tests/emu/emulator_support.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include "emit/cuda/codegen_util.h"
#include "engine_format/loop_params.h"
#include "engine_format/matmul_params.h"
#include "support/size_program.h"
#include "tests/emu/cudnn_conv_emu.h"

namespace graphc::emu {

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream f(p);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

fs::path cache_dir() {
  const char* tmp = std::getenv("TMPDIR");
  return fs::path(tmp ? tmp : "/tmp") / "graphc-kernel-emulator";
}

}  // namespace

Expected<void*> load_module(const std::string& source, const std::string& extra,
                            const std::string& shim) {
  std::string body;
  size_t pos = 0;
  while (pos < source.size()) {
    size_t end = source.find('\n', pos);
    if (end == std::string::npos) end = source.size();
    const std::string line = source.substr(pos, end - pos);
    if (line.rfind("#include", 0) != 0) body += line + "\n";
    pos = end + 1;
  }
  const std::string full =
      fmt::format("{}\n{}{}", shim.empty() ? fmt::format("#include \"{}\"", GRAPHC_EMU_SHIM) : shim,
                  body, extra);
  const fs::path dir = cache_dir();
  std::error_code ec;
  fs::create_directories(dir, ec);
  // The shim's text is part of the key: an edited shim must not reuse old objects.
  // (A shim given as text is in `full` already.)
  static const std::string default_shim = read_text(GRAPHC_EMU_SHIM);
  const fs::path base =
      dir / fmt::format("{:016x}", emit::fnv1a(std::string(GRAPHC_EMU_CXX) + default_shim + full));
  const fs::path so = base.string() + ".so";
  if (!fs::exists(so)) {
    std::ofstream(base.string() + ".cpp") << full;
    const std::string cmd =
        fmt::format("{} -std=c++20 -O1 -w -shared -fPIC -o {}.tmp {}.cpp 2> {}.log", GRAPHC_EMU_CXX,
                    so.string(), base.string(), base.string());
    if (std::system(cmd.c_str()) != 0)
      return internal_error("host compile of {}.cpp failed:\n{}", base.string(),
                            read_text(base.string() + ".log").substr(0, 4000));
    fs::rename(so.string() + ".tmp", so, ec);
  }
  void* lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) return internal_error("dlopen {}: {}", so.string(), dlerror());
  return lib;
}

emit::LowerOptions generated_gemms() {
  emit::LowerOptions o;
  o.gemm.mode = target::GemmMode::kGenerated;
  o.conv.mode = target::ConvMode::kGenerated;
  return o;
}

std::string compare(const ir::Tensor& want, const ir::Tensor& got, double rtol_f32,
                    double half_atol) {
  if (want.numel() != got.numel()) return "element counts differ";
  // Older ONNX test data stores bfloat16 results as their uint16 bits.
  if (want.dtype() == ir::DType::kUInt16 && got.dtype() == ir::DType::kBFloat16) {
    ir::Tensor bits(ir::DType::kBFloat16, want.shape());
    std::memcpy(bits.mutable_data(), want.data(), want.byte_size());
    return compare(bits, got, rtol_f32, half_atol);
  }
  const ir::DType dt = want.dtype();
  const bool half = dt == ir::DType::kFloat16 || dt == ir::DType::kBFloat16;
  const double rtol = dt == ir::DType::kFloat16    ? 1.0 / 1024
                      : dt == ir::DType::kBFloat16 ? 1.0 / 128
                      : ir::is_float(dt)           ? rtol_f32
                                                   : 0;
  int64_t bad = 0, first = -1;
  for (int64_t k = 0; k < want.numel(); ++k) {
    const double a = want.get_f64(k), b = got.get_f64(k);
    if ((std::isnan(a) && std::isnan(b)) || (std::isinf(a) && a == b)) continue;
    const bool ok = rtol == 0 ? a == b
                              : std::fabs(a - b) <=
                                    std::max(1e-5 + rtol * std::fabs(a), half ? half_atol : 0.0);
    if (!ok && bad++ == 0) first = k;
  }
  if (!bad) return "";
  return fmt::format("{} of {} differ; first at {}: want {}, got {}", bad, want.numel(), first,
                     want.get_f64(first), got.get_f64(first));
}


namespace {

// The plan at one shape: each slot's dims and bytes there.
struct PlanAt {
  std::vector<ir::Shape> shape;
  std::vector<int64_t> bytes;
};

Expected<PlanAt> resolve(const emit::GpuPlan& plan, const std::vector<int64_t>& symbols) {
  PlanAt at;
  for (const auto& slot : plan.slots) {
    ir::Shape s = slot.shape;
    for (size_t d = 0; d < slot.dim_sizes.size(); ++d)
      if (slot.dim_sizes[d] >= 0) {
        ASSIGN_OR_RETURN(s[d], evaluate_size_program(
                                   plan.range->sizes[static_cast<size_t>(slot.dim_sizes[d])],
                                   symbols));
      }
    const int64_t bytes = ir::shape_numel(s) * static_cast<int64_t>(ir::dtype_size(slot.dtype));
    if (bytes > slot.bytes)
      return internal_error("slot '{}' takes {} bytes at this shape, more than the {} planned",
                            slot.name, bytes, slot.bytes);
    at.shape.push_back(std::move(s));
    at.bytes.push_back(bytes);
  }
  return at;
}

// The attention kernels run on their own host shims (tests/emu/attention_host_shim.h for
// the flash kernel, attention_generic_shim.h for the general one: one thread per CUDA
// thread, warp collectives and tensor-core fragments emulated), over the portable part
// of the plan's source (the CUDA helpers swapped for the shim's). `block`: the size
// block of a range kernel, else the parameter block.
Status run_attention(const emit::LaunchPlan& l, const std::string& source, std::vector<void*>& args,
                     const void* block, const std::array<unsigned, 3>& grid) {
  const size_t portable = source.find("// Run-time arguments (");
  if (portable == std::string::npos)
    return internal_error("launch '{}': no portable attention source", l.name);
  const bool generic = l.entry.rfind("graphc_attn_generic_", 0) == 0;
  const std::string dir = fs::path(GRAPHC_EMU_SHIM).parent_path().string();
  std::string shim = fmt::format("#include \"{}/{}\"", dir,
                                 generic ? "attention_generic_shim.h" : "attention_host_shim.h");
  if (!generic && source.find("typedef __nv_bfloat16 elem_t;") != std::string::npos)
    shim = "#define EMU_BF16 1\n" + shim;
  const std::string run = generic ? "emu_gen::run_grid(dim3{g[0], g[1], g[2]}, threads, smem, "
                                  : "emu::run_grid(dim3{g[0], g[1], g[2]}, threads, smem, false, ";
  const std::string extra = fmt::format(R"(
#include <tuple>
#include <type_traits>
#include <utility>
template <typename... P, size_t... I>
static void emu_attn_call(void (*fn)(P...), void** a, const void* block, std::index_sequence<I...>) {{
  std::remove_cv_t<std::tuple_element_t<sizeof...(P) - 1, std::tuple<P...>>> last;
  std::memcpy(&last, block, sizeof last);
  fn(static_cast<std::tuple_element_t<I, std::tuple<P...>>>(a[I])..., last);
}}
extern "C" void emu_attn_launch(void** a, const void* block, const unsigned* g, unsigned threads,
                                size_t smem) {{
  {run}[&] {{ emu_attn_call({entry}, a, block, std::make_index_sequence<{n}>{{}}); }});
}}
)",
                                        fmt::arg("run", run), fmt::arg("entry", l.entry),
                                        fmt::arg("n", args.size()));
  ASSIGN_OR_RETURN(void* lib, load_module(source.substr(portable), extra, shim));
  auto launch = reinterpret_cast<void (*)(void**, const void*, const unsigned*, unsigned, size_t)>(
      dlsym(lib, "emu_attn_launch"));
  if (!launch) return internal_error("kernel {} not found", l.entry);
  launch(args.data(), block, grid.data(), l.block[0], l.shared_bytes);
  return Status::ok_status();
}

}  // namespace

namespace {

// cuBLASLt's int8 matmul (engine_format/matmul_params.h, version 2) on the
// host: D[m, n] = sum_k A[m, k] * B[n, k] in int32, what its IMMA kernels
// compute exactly, so the generated epilogue after it is checked bit for bit.
// Other library calls are refused: the emulator runs generated kernels.
Status run_int8_matmul(const emit::LaunchPlan& l, const std::vector<uint8_t*>& ptr) {
  if (l.library->op != emit::LibraryOp::kCublasLtMatmul)
    return internal_error("launch '{}' is a library call", l.name);
  ASSIGN_OR_RETURN(engine::MatmulParams p, engine::decode_matmul_params(l.library->params));
  if (!p.int8() || p.batch != 1)
    return internal_error("launch '{}' is a float cuBLASLt call (the emulator runs int8 ones only)",
                          l.name);
  const auto* a = reinterpret_cast<const int8_t*>(ptr[static_cast<size_t>(l.args[0])]);
  const auto* b = reinterpret_cast<const int8_t*>(ptr[static_cast<size_t>(l.args[1])]);
  auto* d = reinterpret_cast<int32_t*>(ptr[static_cast<size_t>(l.args[static_cast<size_t>(p.d_arg())])]);
  for (int64_t m = 0; m < p.m; ++m)
    for (int64_t n = 0; n < p.n; ++n) {
      int32_t acc = 0;
      for (int64_t k = 0; k < p.k; ++k) acc += int32_t{a[m * p.lda + k]} * int32_t{b[n * p.ldb + k]};
      d[m * p.ldc + n] = acc;
    }
  return Status::ok_status();
}

}  // namespace

Expected<Outputs> run_plan(const emit::GpuPlan& plan, const ir::Graph& optimized,
                             const std::vector<int64_t>& symbols, const Outputs& feeds) {
  ASSIGN_OR_RETURN(const PlanAt at, resolve(plan, symbols));
  std::vector<uint8_t> arena(static_cast<size_t>(plan.arena_bytes) + 64, 0xcd);
  std::string weights = plan.weights;
  std::vector<std::vector<uint8_t>> own(plan.slots.size());
  std::vector<uint8_t*> ptr(plan.slots.size(), nullptr);
  for (size_t s = 0; s < plan.slots.size(); ++s) {
    const auto& slot = plan.slots[s];
    if (slot.location == emit::SlotLocation::kArena) {
      ptr[s] = arena.data() + slot.offset;
    } else if (slot.location == emit::SlotLocation::kWeights) {
      ptr[s] = reinterpret_cast<uint8_t*>(weights.data()) + slot.offset;
    } else {  // a binding: exactly this shape's bytes, garbage as cuMemAlloc leaves them
      own[s].assign(static_cast<size_t>(at.bytes[s]) + 16, 0xcd);
      ptr[s] = own[s].data();
    }
  }
  for (size_t i = 0; i < optimized.inputs.size(); ++i) {
    const auto slot = static_cast<size_t>(plan.inputs[i]);
    const ir::Tensor& t = feeds.at(optimized.value(optimized.inputs[i]).name);
    if (t.shape() != at.shape[slot])
      return internal_error("input '{}' is {} but the plan sizes it {}", plan.slots[slot].name,
                            ir::shape_to_string(t.shape()), ir::shape_to_string(at.shape[slot]));
    std::memcpy(ptr[slot], t.data(), t.byte_size());
  }
  // One launch; a loop's control kernel is run by run_range below.
  auto run_one = [&](const emit::LaunchPlan& l) -> Status {
    if (l.kind == target::KernelKind::kCopy) {
      std::memcpy(ptr[static_cast<size_t>(l.args[1])], ptr[static_cast<size_t>(l.args[0])],
                  static_cast<size_t>(at.bytes[static_cast<size_t>(l.args[1])]));
      return Status::ok_status();
    }
    if (l.library) {
      if (l.library->op == emit::LibraryOp::kCudnnConv)
        RETURN_IF_ERROR(run_cudnn_conv(plan, l, ptr, symbols));
      else
        RETURN_IF_ERROR(run_int8_matmul(l, ptr));
      return Status::ok_status();
    }
    std::array<unsigned, 3> grid = l.grid;
    const std::array<int32_t, 3> grid_sizes = {l.grid_x_size, l.grid_y_size, l.grid_z_size};
    for (size_t d = 0; d < 3; ++d) {
      if (grid_sizes[d] < 0) continue;
      ASSIGN_OR_RETURN(int64_t x, evaluate_size_program(
                                      plan.range->sizes[static_cast<size_t>(grid_sizes[d])], symbols));
      if (x < 1 || x > l.grid[d])
        return internal_error("launch '{}': grid[{}] {} outside [1, {}]", l.name, d, x, l.grid[d]);
      grid[d] = static_cast<unsigned>(x);
    }
    std::vector<void*> args;
    for (int32_t s : l.args) args.push_back(ptr[static_cast<size_t>(s)]);
    const std::string& source = plan.sources[static_cast<size_t>(l.module)];
    if (l.kind == target::KernelKind::kAttention) {
      std::vector<int64_t> block;
      for (int32_t p : l.size_block) {
        ASSIGN_OR_RETURN(int64_t v,
                         evaluate_size_program(plan.range->sizes[static_cast<size_t>(p)], symbols));
        block.push_back(v);
      }
      RETURN_IF_ERROR(run_attention(l, source, args,
                                    l.size_block.empty() ? static_cast<const void*>(l.params.data())
                                                         : static_cast<const void*>(block.data()),
                                    grid));
      return Status::ok_status();
    }
    if (l.size_block.empty()) {
      ASSIGN_OR_RETURN(void* lib, load_module(source));
      void* fn = dlsym(lib, l.entry.c_str());
      auto launch = reinterpret_cast<void (*)(void*, int, void**, const unsigned*, const unsigned*)>(
          dlsym(lib, "emu_launch"));
      if (!fn || !launch) return internal_error("kernel {} not found", l.entry);
      launch(fn, static_cast<int>(args.size()), args.data(), grid.data(), l.block.data());
      return Status::ok_status();
    }
    std::vector<int64_t> block;
    for (int32_t p : l.size_block) {
      ASSIGN_OR_RETURN(int64_t v,
                       evaluate_size_program(plan.range->sizes[static_cast<size_t>(p)], symbols));
      block.push_back(v);
    }
    ASSIGN_OR_RETURN(void* lib,
                     load_module(source, fmt::format("extern \"C\" void emu_sized_{0}(void** a, "
                                                     "const void* z) {{ emu_call_sized({0}, a, z); }}\n",
                                                     l.entry)));
    void* adapter = dlsym(lib, ("emu_sized_" + l.entry).c_str());
    auto launch = reinterpret_cast<void (*)(void*, void**, const void*, const unsigned*,
                                            const unsigned*)>(dlsym(lib, "emu_launch_sized"));
    if (!adapter || !launch) return internal_error("kernel {} not found", l.entry);
    launch(adapter, args.data(), block.data(), grid.data(), l.block.data());
      return Status::ok_status();
  };
  // Launches [begin, end), each loop run whole: its control kernel before the
  // body and after each iteration, as the runtime runs it from the host.
  std::function<Status(size_t, size_t)> run_range = [&](size_t begin, size_t end) -> Status {
    for (size_t i = begin; i < end; ++i) {
      const emit::LaunchPlan& l = plan.launches[i];
      if (l.loop_body < 0) {
        RETURN_IF_ERROR(run_one(l));
        continue;
      }
      std::vector<void*> args;
      for (int32_t s : l.args) args.push_back(ptr[static_cast<size_t>(s)]);
      ASSIGN_OR_RETURN(void* lib,
                       load_module(plan.sources[static_cast<size_t>(l.module)],
                                   fmt::format("extern \"C\" void emu_sized_{0}(void** a, const void* z) "
                                               "{{ emu_call_sized({0}, a, z); }}\n",
                                               l.entry)));
      auto control = reinterpret_cast<void (*)(void**, const void*)>(
          dlsym(lib, ("emu_sized_" + l.entry).c_str()));
      if (!control) return internal_error("kernel {} not found", l.entry);
      const auto* flag = reinterpret_cast<const int32_t*>(ptr[static_cast<size_t>(l.args.back())]);
      engine::LoopLaunchParams params;
      control(args.data(), &params);
      const size_t body_end = i + 1 + static_cast<size_t>(l.loop_body);
      params.mode = engine::kLoopModeStep;
      for (int64_t trips = 0; *flag; ++trips) {
        if (trips > (int64_t{1} << 20)) return internal_error("loop '{}' does not end", l.name);
        RETURN_IF_ERROR(run_range(i + 1, body_end));
        control(args.data(), &params);
      }
      i = body_end - 1;
    }
    return Status::ok_status();
  };
  RETURN_IF_ERROR(run_range(0, plan.launches.size()));
  Outputs out;
  for (size_t i = 0; i < optimized.outputs.size(); ++i) {
    const auto slot = static_cast<size_t>(plan.outputs[i]);
    ir::Tensor t(plan.slots[slot].dtype, at.shape[slot]);
    std::memcpy(t.mutable_data(), ptr[slot], t.byte_size());
    out[optimized.value(optimized.outputs[i]).name] = std::move(t);
  }
  return out;
}

}  // namespace graphc::emu
