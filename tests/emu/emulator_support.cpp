#include "tests/emu/emulator_support.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "emit/cuda/codegen_util.h"

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

Expected<void*> load_module(const std::string& source, const std::string& extra) {
  std::string body;
  size_t pos = 0;
  while (pos < source.size()) {
    size_t end = source.find('\n', pos);
    if (end == std::string::npos) end = source.size();
    const std::string line = source.substr(pos, end - pos);
    if (line.rfind("#include", 0) != 0) body += line + "\n";
    pos = end + 1;
  }
  const std::string full = fmt::format("#include \"{}\"\n{}{}", GRAPHC_EMU_SHIM, body, extra);
  const fs::path dir = cache_dir();
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path base = dir / fmt::format("{:016x}", emit::fnv1a(std::string(GRAPHC_EMU_CXX) + full));
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


}  // namespace graphc::emu
