#include "driver/engine_report.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "driver/refit.h"
#include "engine_format/conv_params.h"
#include "engine_format/library_algorithm.h"
#include "engine_format/matmul_params.h"
#include "engine_format/refit_record.h"
#include "engine_format/sdpa_params.h"
#include "engine_format/shape_range.h"
#include "ir/dtype.h"
#include "support/json.h"
#include "support/size_program.h"

namespace graphc::driver {

namespace {

// Length of the valid UTF-8 sequence at s[i] (no overlongs, surrogates or
// code points above U+10FFFF), or 0; `cp` gets the code point.
size_t utf8_sequence(std::string_view s, size_t i, uint32_t& cp) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  cp = n == 1 ? c : c & (0x7f >> n);
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3f);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

bool is_control(uint32_t cp) { return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f); }

// Printable text for a terminal: control characters and invalid bytes as \xNN.
std::string text(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    size_t n = utf8_sequence(s, i, cp);
    if (n == 0 || is_control(cp) || s[i] == '\\') {
      size_t len = std::max<size_t>(n, 1);
      for (size_t k = 0; k < len; ++k)
        out += fmt::format("\\x{:02x}", static_cast<unsigned char>(s[i + k]));
      i += len;
      continue;
    }
    out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

std::string human(uint64_t b) {
  if (b >= (uint64_t{1} << 30)) return fmt::format("{:.2f} GiB", b / double(uint64_t{1} << 30));
  if (b >= (uint64_t{1} << 20)) return fmt::format("{:.2f} MiB", b / double(1 << 20));
  if (b >= 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", b);
}

std::string dims(const google::protobuf::RepeatedField<uint32_t>& d) {
  return fmt::format("{}", fmt::join(d.begin(), d.end(), "x"));
}

// The tensor's dims: numbers, or for a varying tensor of an engine with
// shape ranges the expressions of its symbols ("batch", "2*seq").
std::vector<std::string> dim_texts(const engine::Manifest& m, const engine::Tensor& t) {
  std::vector<std::string> dims;
  const auto& r = m.shape_range();
  const std::vector<std::string> names(r.symbols().begin(), r.symbols().end());
  const std::vector<SizeProgram> programs =
      t.dim_sizes_size() > 0 ? engine::size_programs(r) : std::vector<SizeProgram>();
  for (int d = 0; d < t.shape_size(); ++d) {
    const int32_t s = d < t.dim_sizes_size() ? t.dim_sizes(d) : -1;
    if (s < 0 || s >= r.sizes_size()) {
      dims.push_back(std::to_string(t.shape(d)));
      continue;
    }
    std::string e = size_program_to_string(programs[static_cast<size_t>(s)], names);
    if (e.find_first_of(" */") != std::string::npos) e = "(" + e + ")";
    dims.push_back(std::move(e));
  }
  return dims;
}

std::string tensor_type(const engine::Manifest& m, const engine::Tensor& t) {
  return fmt::format("{}[{}]", ir::dtype_name(static_cast<ir::DType>(t.dtype())),
                     fmt::join(dim_texts(m, t), "x"));
}

// "1x1x64 / 4x16x64 / 32x512x64" for each input a profile ranges over.
std::string profile_text(const engine::Manifest& m, int p) {
  std::string out;
  const engine::Profile& profile = m.shape_range().profiles(p);
  for (int i = 0; i < profile.inputs_size() && i < m.inputs_size(); ++i) {
    const auto& in = profile.inputs(i);
    if (std::equal(in.min().begin(), in.min().end(), in.max().begin(), in.max().end())) continue;
    out += fmt::format("{}{}: {} / {} / {}", out.empty() ? "" : ", ", text(m.inputs(i).name()),
                       fmt::join(in.min(), "x"), fmt::join(in.opt(), "x"), fmt::join(in.max(), "x"));
  }
  return out.empty() ? "every input fixed" : out;
}

struct ArchCode {
  int32_t modules = 0;
  uint64_t ptx_bytes = 0, cubin_bytes = 0;
};

// Per arch, in the order the engine lists them (sorted by SM when graphc wrote it).
std::vector<std::pair<std::string, ArchCode>> code_by_arch(const engine::EngineContents& c) {
  std::vector<std::pair<std::string, ArchCode>> out;
  auto entry = [&](const std::string& arch) -> ArchCode& {
    for (auto& [a, code] : out)
      if (a == arch) return code;
    return out.emplace_back(arch, ArchCode{}).second;
  };
  for (const auto& cm : c.manifest.code_modules()) ++entry(cm.arch()).modules;
  for (const auto& blob : c.code) {
    ArchCode& code = entry(blob.arch);
    (blob.kind == engine::CodeBlob::Kind::kPtx ? code.ptx_bytes : code.cubin_bytes) +=
        blob.bytes.size();
  }
  return out;
}

// "fp16 M=128 N=3072 K=768 epilogue=bias+gelu_tanh" for a cuBLASLt matmul,
// "conv2d fp16 NCHW N=1 C=64->K=64 ... epilogue=bias+relu algo=heuristic" for a cuDNN conv.
// Which implementation runs an attention kernel with run-time sizes, and why
// (emit/library/sdpa_range.h, emit/cuda/attention_range.h).
constexpr const char* kRangeAttentionGenerated =
    "generated: sizes at run time (cuDNN SDPA does not take this attention at every shape of "
    "the range; `graphc inspect MODEL` with the ranges says why)";

std::string range_attention_lowering(const engine::Kernel& k) {
  if (!k.has_preferred_call()) return kRangeAttentionGenerated;
  const engine::LibraryCall& call = k.preferred_call();
  int varying = 0;
  for (int32_t s : call.sizes()) varying += s >= 0 ? 1 : 0;
  auto p = engine::decode_sdpa_params(call.params());
  return fmt::format(
      "cuDNN fused SDPA, planned per shape ({}; {} fields follow the shape; plans at each "
      "profile's opt, least and largest shapes built at load, any other from its first use on, "
      "in the background); per shape the faster of it and the generated kernel {} runs (both "
      "timed at the shape's first run), and the kernel where cuDNN refuses a shape or while its "
      "plan is being built",
      p.ok() ? engine::describe_sdpa(*p) + " as built" : std::string("invalid parameters"),
      varying, text(k.module_entry()));
}

std::string library_call_summary(const engine::LibraryCall& call) {
  if (call.library() == "cublasLt" && call.op() == "matmul") {
    auto p = engine::decode_matmul_params(call.params());
    return p.ok() ? engine::describe_matmul(*p) : "invalid parameters";
  }
  if (call.library() == "cudnn" && call.op() == "conv") {
    auto p = engine::decode_conv_params(call.params());
    return p.ok() ? engine::describe_conv(*p) : "invalid parameters";
  }
  if (call.library() == "cudnn" && call.op() == "sdpa") {
    auto p = engine::decode_sdpa_params(call.params());
    return p.ok() ? engine::describe_sdpa(*p) : "invalid parameters";
  }
  return "-";
}

// The generated elementwise kernel right after library call `i` that is the
// only reader of the call's result (its last argument): the epilogue the
// library could not take (a split group, target/epilogue_split.h and
// optimizer/pass_split_library_epilogues.cpp); -1 when there is none.
int generated_epilogue_of(const engine::Manifest& m, int i) {
  const engine::Kernel& call = m.kernels(i);
  if (i + 1 >= m.kernels_size() || call.args_size() == 0) return -1;
  const engine::Kernel& next = m.kernels(i + 1);
  if (next.has_library_call() || next.copy() ||
      (next.kind() != "elementwise" && next.kind() != "fused elementwise"))
    return -1;
  const int32_t result = call.args(call.args_size() - 1);
  auto reads = [&](const engine::Kernel& k) {
    return std::find(k.args().begin(), k.args().end(), result) != k.args().end();
  };
  if (!reads(next)) return -1;
  for (int k = i + 2; k < m.kernels_size(); ++k)
    if (reads(m.kernels(k))) return -1;
  for (const auto& out : m.outputs())
    if (out.tensor() == result) return -1;
  return i + 1;
}

// "heuristic at load" or "tuned: algo 21 tile 128x128 ... (0.123 ms)".
std::string algorithm_choice(const engine::LibraryCall& call) {
  return engine::describe_recorded_algorithm(call.library(), call.algorithm(),
                                             call.algorithm_config(), call.tuned_ms());
}

// A protobuf repeated field (numbers or names) as a JSON array.
template <typename Repeated>
Json json_array(const Repeated& items) {
  Json out = Json::array();
  for (const auto& item : items) out.push_back(item);
  return out;
}

// The recorded cuBLASLt configuration as a JSON object, or null.
Json algorithm_config_json(const engine::LibraryCall& call) {
  if (call.library() != "cublasLt" || call.algorithm_config().empty()) return nullptr;
  auto a = engine::decode_cublaslt_algorithm(call.algorithm_config());
  if (!a.ok()) return nullptr;
  return {{"algo_id", a->algo_id},
          {"tile_id", a->tile_id},
          {"tile", engine::cublaslt_tile_name(a->tile_id)},
          {"stages_id", a->stages_id},
          {"stages", engine::cublaslt_stages_name(a->stages_id)},
          {"splitk_num", a->splitk_num},
          {"reduction_scheme", a->reduction_scheme},
          {"cta_swizzling", a->cta_swizzling},
          {"custom_option", a->custom_option},
          {"inner_shape_id", a->inner_shape_id},
          {"cluster_shape_id", a->cluster_shape_id},
          {"workspace_bytes", a->workspace_bytes},
          {"library_version", a->library_version},
          {"compute_capability", a->compute_capability}};
}

// A call's workspace: what its recorded algorithm needs when the engine
// records one with its size, else what the algorithm chosen at load needs,
// within the call's limit.
std::string workspace_text(const engine::LibraryCall& call) {
  if (call.library() == "cublasLt" && !call.algorithm_config().empty())
    if (auto a = engine::decode_cublaslt_algorithm(call.algorithm_config()); a.ok())
      return fmt::format("workspace {} (the recorded algorithm's; limit {})",
                         human(a->workspace_bytes), human(call.workspace_bytes()));
  return fmt::format("workspace sized at load to the chosen algorithm, at most {}",
                     human(call.workspace_bytes()));
}

// Library calls per library, and the workspace an execution context
// allocates for them: per library one buffer of what the algorithms chosen
// at load need, at most the largest call's limit (runtime/cublaslt.h, cudnn.h).
struct LibraryUse {
  std::map<std::string, int> calls;  // library -> calls
  int total = 0;
  uint64_t cublaslt_workspace = 0, cudnn_workspace_limit = 0;
  int preferred = 0;  // generated kernels cuDNN's SDPA runs per shape (format 6)
};

LibraryUse library_use(const engine::Manifest& m) {
  LibraryUse u;
  for (const engine::Kernel& k : m.kernels()) {
    if (k.has_preferred_call()) {
      ++u.preferred;
      u.cudnn_workspace_limit =
          std::max<uint64_t>(u.cudnn_workspace_limit, k.preferred_call().workspace_bytes());
    }
    if (!k.has_library_call()) continue;
    const auto& call = k.library_call();
    ++u.calls[call.library()];
    ++u.total;
    uint64_t& ws = call.library() == "cudnn" ? u.cudnn_workspace_limit : u.cublaslt_workspace;
    ws = std::max<uint64_t>(ws, call.workspace_bytes());
  }
  return u;
}

std::string plural(int64_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string kind_of(const engine::Kernel& k) {
  if (k.copy()) return "copy";
  return k.kind().empty() ? std::string("-") : text(k.kind());
}

std::string nodes_text(const engine::Kernel& k) {
  std::vector<std::string> names;
  for (const auto& n : k.onnx_nodes()) names.push_back(text(n));
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

bool looks_like_engine(std::string_view bytes) {
  return bytes.size() >= sizeof(engine::kMagic) &&
         std::memcmp(bytes.data(), engine::kMagic, sizeof(engine::kMagic)) == 0;
}

std::string engine_report_text(const EngineReportInput& in) {
  const engine::EngineContents& c = *in.contents;
  const engine::Manifest& m = c.manifest;
  std::string out = fmt::format("engine    {} ({})\n", text(in.path), human(in.file_bytes));
  out += fmt::format("format    version {} (readers of version {} and newer)\n",
                     in.header.format_version, in.header.min_reader_version);
  out += fmt::format("producer  {}\n", text(in.header.producer));
  out += fmt::format("graph     {}\n", m.graph_name().empty() ? "-" : text(m.graph_name()));
  out += fmt::format("precision {}\n", m.precision().empty() ? "-" : text(m.precision()));
  auto archs = code_by_arch(c);
  const LibraryUse libs = library_use(m);
  std::string calls;
  for (const auto& [lib, n] : libs.calls)
    calls += fmt::format("{}{} {}", calls.empty() ? "" : ", ", text(lib), n);
  if (engine::module_count(m) > 0 || !archs.empty())
    out += fmt::format("code      {} for {}", plural(engine::module_count(m), "module", "modules"),
                       plural(static_cast<int64_t>(archs.size()), "architecture", "architectures"));
  else
    out += "code      no generated kernels";
  if (libs.total > 0)
    out += fmt::format("; {} ({}){}", plural(libs.total, "library call", "library calls"), calls,
                       archs.empty() ? ", which run on any GPU the library supports" : "");
  if (libs.preferred > 0)
    out += fmt::format("; {} cuDNN runs per shape",
                       plural(libs.preferred, "attention kernel", "attention kernels"));
  out += "\n";
  for (const auto& [arch, code] : archs)
    out += fmt::format("  {:<8} PTX {:>10}  CUBIN {:>10}\n", text(arch), human(code.ptx_bytes),
                       human(code.cubin_bytes));
  auto bindings = [&](const char* title, const auto& list) {
    out += title;
    out += '\n';
    for (const auto& b : list)
      out += fmt::format("  {:<24} {}\n", text(b.name()), tensor_type(m, m.tensors(b.tensor())));
  };
  bindings("inputs", m.inputs());
  bindings("outputs", m.outputs());
  if (m.has_shape_range()) {
    const auto& r = m.shape_range();
    out += fmt::format("shapes    set at run time: {} over {} (min / opt / max)\n",
                       plural(r.profiles_size(), "profile", "profiles"),
                       fmt::join(r.symbols(), ", "));
    for (int p = 0; p < r.profiles_size(); ++p)
      out += fmt::format("  profile {}: {}\n", p, profile_text(m, p));
  }
  if (m.has_refit())
    out += fmt::format("refit     structure {} ({} items); graphc refit keeps this build: {}\n",
                       engine::structure_hash_text(m.refit().structure_hash()),
                       m.refit().structure_size(), text(recipe_flags(m.refit().recipe())));
  else
    out += "refit     no refit record (built before refit support): rebuild to refit\n";
  out +=
      fmt::format("memory    arena {} ({} bytes), weights {} ({} bytes)\n", human(m.arena_bytes()),
                  m.arena_bytes(), human(m.weights_bytes()), m.weights_bytes());
  if (libs.total > 0 || libs.preferred > 0) {
    std::string parts;
    if (libs.calls.count("cublasLt"))
      parts += fmt::format("cuBLASLt at most {}", human(libs.cublaslt_workspace));
    if (libs.calls.count("cudnn") || libs.preferred > 0)
      parts += fmt::format("{}cuDNN at most {}", parts.empty() ? "" : ", ",
                           human(libs.cudnn_workspace_limit));
    out += fmt::format(
        "          library workspace: what the algorithms chosen at load need ({}; `graphc run` "
        "reports it)\n",
        parts);
    out += fmt::format("          per execution context: arena {} + library workspace at most {}\n",
                       human(m.arena_bytes()),
                       human(libs.cublaslt_workspace + libs.cudnn_workspace_limit));
  }

  // Kernel table: fixed columns sized to their widest entry, ONNX nodes last.
  struct Row {
    std::string index, kind, grid, block, smem, module, name, nodes;
  };
  std::vector<Row> rows;
  rows.push_back({"#", "kind", "grid", "block", "smem", "module", "name", "ONNX nodes"});
  for (int i = 0; i < m.kernels_size(); ++i) {
    const engine::Kernel& k = m.kernels(i);
    Row r{std::to_string(i), kind_of(k), "-", "-", "-", "-", text(k.name()), nodes_text(k)};
    if (k.has_library_call()) {
      const auto& call = k.library_call();
      r.kind = fmt::format("{} ({} {}, {})", r.kind, text(call.library()), text(call.op()),
                           call.sizes_size() > 0 ? std::string("M at run time, heuristic per M")
                           : call.algorithm() < 0
                               ? std::string("heuristic at load")
                               : fmt::format("algorithm {}", call.algorithm()));
    } else if (!k.copy()) {
      r.grid = dims(k.grid());
      r.block = dims(k.block());
      r.smem = human(k.shared_mem_bytes());
      r.module = std::to_string(k.module());
    }
    rows.push_back(std::move(r));
  }
  out += fmt::format("kernels   {} in launch order\n", m.kernels_size());
  if (m.kernels_size() == 0) return out;
  std::array<size_t, 6> w{};
  for (const Row& r : rows) {
    const std::string* cols[] = {&r.index, &r.kind, &r.grid, &r.block, &r.smem, &r.module};
    for (size_t i = 0; i < w.size(); ++i) w[i] = std::max(w[i], cols[i]->size());
  }
  for (const Row& r : rows) {
    std::string line =
        fmt::format("  {:>{}}  {:<{}}  {:<{}}  {:<{}}  {:>{}}  {:>{}}  {}", r.index, w[0], r.kind,
                    w[1], r.grid, w[2], r.block, w[3], r.smem, w[4], r.module, w[5], r.name);
    if (!r.nodes.empty()) line += "  <- " + r.nodes;
    out += line + "\n";
  }
  // Library calls: what each computes and how its algorithm is picked.
  bool header = false;
  for (int i = 0; i < m.kernels_size(); ++i) {
    const engine::Kernel& k = m.kernels(i);
    if (!k.has_library_call()) continue;
    if (!header) out += "library calls\n";
    header = true;
    const engine::LibraryCall& call = k.library_call();
    out += fmt::format("  {:>{}}  {} {}: {}; {}, {}\n", i, w[0], text(call.library()),
                       text(call.op()), library_call_summary(call), algorithm_choice(call),
                       workspace_text(call));
    if (int e = generated_epilogue_of(m, i); e >= 0)
      out += fmt::format("  {:>{}}  then generated epilogue: kernel {} {}\n", "", w[0], e,
                         text(m.kernels(e).name()));
  }
  // Attention that varies over the shape range: what runs it, and why.
  header = false;
  for (int i = 0; i < m.kernels_size(); ++i) {
    const engine::Kernel& k = m.kernels(i);
    if (k.has_library_call() || k.kind() != "attention" || k.size_block_size() == 0) continue;
    if (!header) out += "attention over the shape range\n";
    header = true;
    out += fmt::format("  {:>{}}  {}\n", i, w[0], range_attention_lowering(k));
  }
  return out;
}

std::string engine_report_json(const EngineReportInput& in) {
  const engine::EngineContents& c = *in.contents;
  const engine::Manifest& m = c.manifest;
  Json out = json_document();
  out["engine"] = in.path;
  out["file_bytes"] = in.file_bytes;
  out["format_version"] = in.header.format_version;
  out["min_reader_version"] = in.header.min_reader_version;
  out["producer"] = in.header.producer;
  out["graph_name"] = m.graph_name();
  out["precision"] = m.precision();
  Json arch_names = Json::array(), code = Json::array();
  for (const auto& [arch, a] : code_by_arch(c)) {
    arch_names.push_back(arch);
    code.push_back({{"arch", arch},
                    {"modules", a.modules},
                    {"ptx_bytes", a.ptx_bytes},
                    {"cubin_bytes", a.cubin_bytes}});
  }
  out["archs"] = std::move(arch_names);
  out["modules"] = engine::module_count(m);
  out["code"] = std::move(code);
  auto bindings = [&](const auto& list) {
    Json items = Json::array();
    for (const auto& b : list) {
      const engine::Tensor& t = m.tensors(b.tensor());
      Json item = {{"name", b.name()},
                   {"dtype", ir::dtype_name(static_cast<ir::DType>(t.dtype()))},
                   {"shape", json_array(t.shape())}};
      // Varying: "shape" is the largest; "dims" names each dim's expression.
      if (t.dim_sizes_size() > 0) item["dims"] = dim_texts(m, t);
      items.push_back(std::move(item));
    }
    return items;
  };
  out["inputs"] = bindings(m.inputs());
  out["outputs"] = bindings(m.outputs());
  // Shape ranges: per profile, per ranged input, its min/opt/max shapes.
  Json profiles = Json::array();
  if (m.has_shape_range()) {
    out["symbols"] = json_array(m.shape_range().symbols());
    for (const auto& p : m.shape_range().profiles()) {
      Json inputs = Json::object();
      for (int i = 0; i < p.inputs_size() && i < m.inputs_size(); ++i) {
        const auto& in = p.inputs(i);
        if (std::equal(in.min().begin(), in.min().end(), in.max().begin(), in.max().end())) continue;
        inputs[m.inputs(i).name()] = {
            {"min", json_array(in.min())}, {"opt", json_array(in.opt())}, {"max", json_array(in.max())}};
      }
      profiles.push_back({{"inputs", std::move(inputs)}});
    }
  }
  out["profiles"] = std::move(profiles);
  // The refit record (format 5), null when the engine has none.
  out["refit"] = nullptr;
  if (m.has_refit())
    out["refit"] = {{"structure_hash", engine::structure_hash_text(m.refit().structure_hash())},
                    {"structure_items", m.refit().structure_size()},
                    {"build_flags", recipe_flags(m.refit().recipe())}};
  out["arena_bytes"] = m.arena_bytes();
  out["weights_bytes"] = m.weights_bytes();
  const LibraryUse libs = library_use(m);
  out["library_calls"] = libs.total;
  out["preferred_library_calls"] = libs.preferred;
  out["library_workspace_bytes"] = {
      {"cublasLt", libs.cublaslt_workspace},
      {"cudnn_limit", libs.cudnn_workspace_limit},
      {"total_limit", libs.cublaslt_workspace + libs.cudnn_workspace_limit}};
  Json kernels = Json::array();
  for (int i = 0; i < m.kernels_size(); ++i) {
    const engine::Kernel& k = m.kernels(i);
    Json j = {{"name", k.name()}, {"kind", k.copy() ? std::string("copy") : k.kind()}};
    if (k.copy()) {
      j["type"] = "copy";
    } else if (k.has_library_call()) {
      const auto& call = k.library_call();
      j["type"] = "library";
      j["library"] = call.library();
      j["op"] = call.op();
      j["call"] = library_call_summary(call);
      j["algorithm"] = call.algorithm();
      j["workspace_bytes"] = call.workspace_bytes();
      j["algorithm_choice"] = algorithm_choice(call);
      j["tuned_ms"] = call.tuned_ms();
      j["algorithm_config"] = algorithm_config_json(call);
      j["runtime_sizes"] = call.sizes_size();  // a matmul's M set per shape
      if (int e = generated_epilogue_of(m, i); e >= 0) j["generated_epilogue"] = e;
    } else {
      j["type"] = "generated";
      j["module"] = k.module();
      j["entry"] = k.module_entry();
      j["grid"] = json_array(k.grid());  // the most over the shape range, if any
      j["block"] = json_array(k.block());
      j["runtime_sizes"] = k.size_block_size();
      if (k.kind() == "attention" && k.size_block_size() > 0) j["lowering"] = range_attention_lowering(k);
      if (k.has_preferred_call()) {
        const auto& call = k.preferred_call();
        int varying = 0;
        for (int32_t s : call.sizes()) varying += s >= 0 ? 1 : 0;
        j["preferred_call"] = {{"library", call.library()},
                               {"op", call.op()},
                               {"call", library_call_summary(call)},
                               {"workspace_bytes", call.workspace_bytes()},
                               {"runtime_fields", varying}};
      }
      j["shared_mem_bytes"] = k.shared_mem_bytes();
    }
    j["onnx_nodes"] = json_array(k.onnx_nodes());
    j["flops"] = k.flops();
    j["hbm_bytes"] = k.hbm_bytes();
    j["math"] = k.math();
    kernels.push_back(std::move(j));
  }
  out["kernels"] = std::move(kernels);
  return dump_json(out);
}

}  // namespace graphc::driver
