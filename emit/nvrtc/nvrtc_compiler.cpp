// NVRTC wrapper: one nvrtcProgram per (source, arch) with -arch=sm_XX, which
// yields both the CUBIN and the PTX (.target sm_XX). Cache entries hold the
// full key text (source, options, NVRTC version, arch), so a hit is exact,
// and a checksum; anything that does not validate is recompiled.
#include "emit/nvrtc/nvrtc_compiler.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#ifdef GRAPHC_HAVE_NVRTC
#include <nvrtc.h>
#endif

namespace graphc::emit {

namespace fs = std::filesystem;

std::string default_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::string(x) + "/graphc/nvrtc";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/graphc/nvrtc";
  return "";
}

namespace {

uint64_t fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

std::string numbered(const std::string& source) {
  std::string out;
  std::istringstream in(source);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) out += fmt::format("{:5} | {}\n", n, line);
  return out;
}

Status check_arch(const std::string& arch) {
  bool ok = arch.size() > 3 && arch.rfind("sm_", 0) == 0;
  size_t end = arch.size() - (arch.back() == 'a' ? 1 : 0);
  for (size_t i = 3; ok && i < end; ++i) ok = arch[i] >= '0' && arch[i] <= '9';
  ok = ok && end > 3;
  return ok ? Status::ok_status()
            : invalid_argument("architecture '{}': expected sm_<digits>[a] (sm_80, sm_90, sm_90a)",
                               arch);
}

std::vector<std::string> nvrtc_options(const std::string& arch, const CompileOptions& o) {
  std::vector<std::string> opts = {"-arch=" + arch, "-std=c++17"};
#ifdef GRAPHC_CUDA_INCLUDE_DIRS
  // Baked in at configure time (CUDAToolkit_INCLUDE_DIRS, '|'-separated).
  std::string dirs = GRAPHC_CUDA_INCLUDE_DIRS;
  for (size_t b = 0; b <= dirs.size();) {
    size_t e = dirs.find('|', b);
    if (e == std::string::npos) e = dirs.size();
    if (e > b) opts.push_back("-I" + dirs.substr(b, e - b));
    b = e + 1;
  }
#endif
  if (o.fast_math) opts.push_back("--use_fast_math");
  return opts;
}

// --- cache entries -------------------------------------------------------
// "GRAPHC-NVRTC-1\n" | u64 len + key | u64 len + cubin | u64 len + ptx | u64 fnv1a(all before)
constexpr char kMagic[] = "GRAPHC-NVRTC-1\n";
constexpr uint64_t kMaxEntry = uint64_t{1} << 30;

void put_blob(std::string& out, const void* data, uint64_t n) {
  for (int b = 0; b < 8; ++b) out += static_cast<char>((n >> (8 * b)) & 0xff);
  out.append(static_cast<const char*>(data), n);
}

std::string cache_path(const std::string& dir, const std::string& key) {
  return fmt::format("{}/{:016x}{:016x}.bin", dir, fnv1a(key.data(), key.size()),
                     fnv1a(key.data(), key.size(), 0x84222325cbf29ce4ull));
}

// The entry at `path` when it is complete, uncorrupted and for exactly `key`.
std::optional<ArchBinary> read_entry(const std::string& path, const std::string& key,
                                     bool& corrupt) {
  corrupt = false;
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  corrupt = true;
  auto size = fs::file_size(path, ec);
  if (ec || size > kMaxEntry) return std::nullopt;
  std::ifstream f(path, std::ios::binary);
  std::string bytes(size, '\0');
  if (!f.read(bytes.data(), static_cast<std::streamsize>(size))) return std::nullopt;
  size_t pos = sizeof(kMagic) - 1;
  if (bytes.compare(0, pos, kMagic) != 0) return std::nullopt;
  auto blob = [&](std::string& out) {
    if (bytes.size() - pos < 8) return false;
    uint64_t n = 0;
    for (int b = 0; b < 8; ++b)
      n |= uint64_t{static_cast<unsigned char>(bytes[pos + b])} << (8 * b);
    pos += 8;
    if (n > bytes.size() - pos) return false;
    out = bytes.substr(pos, n);
    pos += n;
    return true;
  };
  std::string k, cubin, ptx;
  if (!blob(k) || !blob(cubin) || !blob(ptx) || bytes.size() - pos != 8) return std::nullopt;
  uint64_t want = 0;
  for (int b = 0; b < 8; ++b)
    want |= uint64_t{static_cast<unsigned char>(bytes[pos + b])} << (8 * b);
  if (fnv1a(bytes.data(), pos) != want || k != key || cubin.empty() || ptx.empty())
    return std::nullopt;
  corrupt = false;
  ArchBinary a;
  a.cubin.assign(cubin.begin(), cubin.end());
  a.ptx = std::move(ptx);
  a.from_cache = true;
  return a;
}

// Best effort: a cache that cannot be written only costs a recompile later.
bool write_entry(const std::string& dir, const std::string& path, const std::string& key,
                 const ArchBinary& a) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::string out(kMagic, sizeof(kMagic) - 1);
  put_blob(out, key.data(), key.size());
  put_blob(out, a.cubin.data(), a.cubin.size());
  put_blob(out, a.ptx.data(), a.ptx.size());
  uint64_t sum = fnv1a(out.data(), out.size());
  for (int b = 0; b < 8; ++b) out += static_cast<char>((sum >> (8 * b)) & 0xff);
  // Temporary file + rename: readers never see half an entry.
  static std::atomic<uint64_t> counter{0};
  std::string tmp = fmt::format("{}.tmp{}.{}", path, static_cast<long>(::getpid()), counter++);
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f.write(out.data(), static_cast<std::streamsize>(out.size()))) {
      fs::remove(tmp, ec);
      return false;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
  return !ec;
}

#ifdef GRAPHC_HAVE_NVRTC
Expected<ArchBinary> nvrtc_compile(const std::string& source, const std::string& name,
                                   const std::string& arch, const std::vector<std::string>& opts) {
  nvrtcProgram prog = nullptr;
  std::string file = name + ".cu";
  if (nvrtcResult r = nvrtcCreateProgram(&prog, source.c_str(), file.c_str(), 0, nullptr, nullptr);
      r != NVRTC_SUCCESS)
    return internal_error("NVRTC: cannot create program '{}': {}", name, nvrtcGetErrorString(r));
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  nvrtcResult r = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  std::string log;
  if (nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    log.resize(log_size);
    nvrtcGetProgramLog(prog, log.data());
    log.resize(log_size - 1);
  }
  if (r != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    return internal_error("NVRTC failed to compile kernel '{}' for {} ({}):\n{}\nsource:\n{}", name,
                          arch, nvrtcGetErrorString(r), log, numbered(source));
  }
  ArchBinary a;
  a.arch = arch;
  size_t n = 0;
  bool ok = nvrtcGetCUBINSize(prog, &n) == NVRTC_SUCCESS;
  a.cubin.resize(n);
  ok = ok && nvrtcGetCUBIN(prog, reinterpret_cast<char*>(a.cubin.data())) == NVRTC_SUCCESS;
  ok = ok && nvrtcGetPTXSize(prog, &n) == NVRTC_SUCCESS;
  a.ptx.resize(n);
  ok = ok && nvrtcGetPTX(prog, a.ptx.data()) == NVRTC_SUCCESS;
  nvrtcDestroyProgram(&prog);
  if (!ok || a.cubin.empty() || a.ptx.empty())
    return internal_error("NVRTC: no CUBIN/PTX for kernel '{}' ({})", name, arch);
  while (!a.ptx.empty() && a.ptx.back() == '\0') a.ptx.pop_back();
  return a;
}
#endif

Expected<ArchBinary> compile_one(const std::string& source, const std::string& name,
                                 const std::string& arch, const CompileOptions& o) {
  RETURN_IF_ERROR(check_arch(arch));
#ifndef GRAPHC_HAVE_NVRTC
  (void)source;
  (void)name;
  (void)o;
  return unsupported("NVRTC not available: graphc was built without the CUDA toolkit");
#else
  ASSIGN_OR_RETURN(std::string version, nvrtc_version());
  auto opts = nvrtc_options(arch, o);
  std::string key = "nvrtc " + version + "\n";
  for (const auto& opt : opts) key += opt + "\n";
  key += "\n" + source;
  auto notify = [&](CacheEvent e) {
    if (o.on_cache) o.on_cache(e, name, arch);
  };
  std::string path;
  if (!o.cache_dir.empty()) {
    path = cache_path(o.cache_dir, key);
    bool corrupt = false;
    if (auto hit = read_entry(path, key, corrupt)) {
      hit->arch = arch;
      notify(CacheEvent::kHit);
      return std::move(*hit);
    }
    notify(corrupt ? CacheEvent::kCorrupt : CacheEvent::kMiss);
  }
  ASSIGN_OR_RETURN(ArchBinary a, nvrtc_compile(source, name, arch, opts));
  if (!path.empty() && write_entry(o.cache_dir, path, key, a)) notify(CacheEvent::kStored);
  return a;
#endif
}

}  // namespace

bool nvrtc_available() {
#ifdef GRAPHC_HAVE_NVRTC
  return true;
#else
  return false;
#endif
}

Expected<std::string> nvrtc_version() {
#ifdef GRAPHC_HAVE_NVRTC
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    return internal_error("NVRTC: nvrtcVersion failed");
  return fmt::format("{}.{}", major, minor);
#else
  return unsupported("NVRTC not available: graphc was built without the CUDA toolkit");
#endif
}

Expected<std::vector<int>> nvrtc_supported_archs() {
#ifdef GRAPHC_HAVE_NVRTC
  static const Expected<std::vector<int>> archs = []() -> Expected<std::vector<int>> {
    int n = 0;
    if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0)
      return internal_error("NVRTC: nvrtcGetNumSupportedArchs failed");
    std::vector<int> list(static_cast<size_t>(n));
    if (nvrtcGetSupportedArchs(list.data()) != NVRTC_SUCCESS)
      return internal_error("NVRTC: nvrtcGetSupportedArchs failed");
    std::sort(list.begin(), list.end());
    return list;
  }();
  return archs;
#else
  return unsupported("NVRTC not available: graphc was built without the CUDA toolkit");
#endif
}

Status check_nvrtc_arch(const std::string& arch) {
  RETURN_IF_ERROR(check_arch(arch));
  ASSIGN_OR_RETURN(std::vector<int> supported, nvrtc_supported_archs());
  size_t end = arch.size() - (arch.back() == 'a' ? 1 : 0);
  int sm = 0;
  for (size_t i = 3; i < end && sm < 10000; ++i) sm = sm * 10 + (arch[i] - '0');
  if (std::find(supported.begin(), supported.end(), sm) != supported.end())
    return Status::ok_status();
  std::string list;
  for (int s : supported) list += fmt::format("{}sm_{}", list.empty() ? "" : ", ", s);
  std::string version = nvrtc_version().ok() ? " " + *nvrtc_version() : "";
  return invalid_argument("architecture '{}' is not supported by NVRTC{} (supported: {})", arch,
                          version, list);
}

std::vector<Expected<CompiledModule>> compile_cuda_many(const std::vector<CudaSource>& sources,
                                                        const std::vector<std::string>& archs,
                                                        const CompileOptions& options) {
  const size_t tasks = sources.size() * archs.size();
  std::vector<std::optional<Expected<ArchBinary>>> done(tasks);
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex progress_mutex;
  size_t finished = 0;
  auto worker = [&] {
    for (size_t t; (t = next++) < tasks;) {
      const CudaSource& s = sources[t / archs.size()];
      if (options.stop_on_error && failed.load()) {
        done[t].emplace(internal_error("kernel '{}' ({}): not compiled after an earlier failure",
                                       s.name, archs[t % archs.size()]));
        continue;
      }
      done[t].emplace(compile_one(s.source, s.name, archs[t % archs.size()], options));
      if (!done[t]->ok()) failed = true;
      if (options.on_progress) {
        std::lock_guard<std::mutex> lock(progress_mutex);
        options.on_progress(++finished, tasks);
      }
    }
  };
  size_t jobs = options.jobs > 0 ? static_cast<size_t>(options.jobs)
                                 : std::max(1u, std::thread::hardware_concurrency());
  jobs = std::min(jobs, tasks);
  std::vector<std::thread> pool;
  for (size_t j = 1; j < jobs; ++j) pool.emplace_back(worker);
  if (tasks > 0) worker();
  for (auto& th : pool) th.join();

  std::vector<Expected<CompiledModule>> out;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (archs.empty()) {
      out.emplace_back(
          invalid_argument("kernel '{}': no architecture to compile for", sources[i].name));
      continue;
    }
    CompiledModule m;
    m.name = sources[i].name;
    std::optional<Status> err;
    for (size_t a = 0; a < archs.size() && !err; ++a) {
      auto& r = *done[i * archs.size() + a];
      if (!r.ok())
        err = r.status();
      else
        m.binaries.push_back(std::move(r).value());
    }
    if (err)
      out.emplace_back(*err);
    else
      out.emplace_back(std::move(m));
  }
  return out;
}

Expected<CompiledModule> compile_cuda(const std::string& source, const std::string& name,
                                      const std::vector<std::string>& archs,
                                      const CompileOptions& options) {
  auto r = compile_cuda_many({CudaSource{name, source}}, archs, options);
  return std::move(r[0]);
}

}  // namespace graphc::emit
