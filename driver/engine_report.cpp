#include "driver/engine_report.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>

#include "engine_format/conv_params.h"
#include "engine_format/library_algorithm.h"
#include "engine_format/matmul_params.h"
#include "engine_format/sdpa_params.h"
#include "ir/dtype.h"

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

// A JSON string literal; invalid UTF-8 bytes become U+FFFD.
std::string json(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    size_t n = utf8_sequence(s, i, cp);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    if (cp == '"' || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (is_control(cp)) {
      out += fmt::format("\\u{:04x}", cp);
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out + "\"";
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

std::string tensor_type(const engine::Tensor& t) {
  return fmt::format("{}[{}]", ir::dtype_name(static_cast<ir::DType>(t.dtype())),
                     fmt::join(t.shape().begin(), t.shape().end(), "x"));
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
// library could not take (a split group, emit/library_split.h); -1 when there
// is none.
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

// The recorded cuBLASLt configuration as a JSON object, or null.
std::string algorithm_config_json(const engine::LibraryCall& call) {
  if (call.library() != "cublasLt" || call.algorithm_config().empty()) return "null";
  auto a = engine::decode_cublaslt_algorithm(call.algorithm_config());
  if (!a.ok()) return "null";
  return fmt::format(
      "{{\"algo_id\": {}, \"tile_id\": {}, \"tile\": {}, \"stages_id\": {}, \"stages\": {}, "
      "\"splitk_num\": {}, \"reduction_scheme\": {}, \"cta_swizzling\": {}, "
      "\"custom_option\": {}, \"inner_shape_id\": {}, \"cluster_shape_id\": {}, "
      "\"workspace_bytes\": {}, \"library_version\": {}, \"compute_capability\": {}}}",
      a->algo_id, a->tile_id, json(engine::cublaslt_tile_name(a->tile_id)), a->stages_id,
      json(engine::cublaslt_stages_name(a->stages_id)), a->splitk_num, a->reduction_scheme,
      a->cta_swizzling, a->custom_option, a->inner_shape_id, a->cluster_shape_id,
      a->workspace_bytes, a->library_version, a->compute_capability);
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
  out += fmt::format("code      {} modules for {} architectures\n", engine::module_count(m),
                     archs.size());
  for (const auto& [arch, code] : archs)
    out += fmt::format("  {:<8} PTX {:>10}  CUBIN {:>10}\n", text(arch), human(code.ptx_bytes),
                       human(code.cubin_bytes));
  auto bindings = [&](const char* title, const auto& list) {
    out += title;
    out += '\n';
    for (const auto& b : list)
      out += fmt::format("  {:<24} {}\n", text(b.name()), tensor_type(m.tensors(b.tensor())));
  };
  bindings("inputs", m.inputs());
  bindings("outputs", m.outputs());
  out +=
      fmt::format("memory    arena {} ({} bytes), weights {} ({} bytes)\n", human(m.arena_bytes()),
                  m.arena_bytes(), human(m.weights_bytes()), m.weights_bytes());

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
      r.kind = fmt::format("{} ({} {}, algorithm {})", r.kind, text(k.library_call().library()),
                           text(k.library_call().op()), k.library_call().algorithm());
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
    out += fmt::format("  {:>{}}  {} {}: {}; {}, workspace {}\n", i, w[0], text(call.library()),
                       text(call.op()), library_call_summary(call), algorithm_choice(call),
                       human(call.workspace_bytes()));
    if (int e = generated_epilogue_of(m, i); e >= 0)
      out += fmt::format("  {:>{}}  then generated epilogue: kernel {} {}\n", "", w[0], e,
                         text(m.kernels(e).name()));
  }
  return out;
}

std::string engine_report_json(const EngineReportInput& in) {
  const engine::EngineContents& c = *in.contents;
  const engine::Manifest& m = c.manifest;
  std::string out = "{\n";
  out += fmt::format("  \"engine\": {},\n  \"file_bytes\": {},\n", json(in.path), in.file_bytes);
  out += fmt::format("  \"format_version\": {},\n  \"min_reader_version\": {},\n",
                     in.header.format_version, in.header.min_reader_version);
  out += fmt::format("  \"producer\": {},\n  \"graph_name\": {},\n  \"precision\": {},\n",
                     json(in.header.producer), json(m.graph_name()), json(m.precision()));
  auto archs = code_by_arch(c);
  std::vector<std::string> arch_names, code;
  for (const auto& [arch, a] : archs) {
    arch_names.push_back(json(arch));
    code.push_back(
        fmt::format("{{\"arch\": {}, \"modules\": {}, \"ptx_bytes\": {}, \"cubin_bytes\": {}}}",
                    json(arch), a.modules, a.ptx_bytes, a.cubin_bytes));
  }
  out += fmt::format("  \"archs\": [{}],\n  \"modules\": {},\n", fmt::join(arch_names, ", "),
                     engine::module_count(m));
  out += fmt::format("  \"code\": [{}],\n", fmt::join(code, ", "));
  auto bindings = [&](const auto& list) {
    std::vector<std::string> items;
    for (const auto& b : list) {
      const engine::Tensor& t = m.tensors(b.tensor());
      items.push_back(fmt::format("{{\"name\": {}, \"dtype\": \"{}\", \"shape\": [{}]}}",
                                  json(b.name()), ir::dtype_name(static_cast<ir::DType>(t.dtype())),
                                  fmt::join(t.shape().begin(), t.shape().end(), ", ")));
    }
    return fmt::format("[{}]", fmt::join(items, ", "));
  };
  out += fmt::format("  \"inputs\": {},\n  \"outputs\": {},\n", bindings(m.inputs()),
                     bindings(m.outputs()));
  out += fmt::format("  \"arena_bytes\": {},\n  \"weights_bytes\": {},\n", m.arena_bytes(),
                     m.weights_bytes());
  std::vector<std::string> kernels;
  for (const engine::Kernel& k : m.kernels()) {
    std::vector<std::string> nodes;
    for (const auto& n : k.onnx_nodes()) nodes.push_back(json(n));
    std::string launch = "\"type\": \"generated\"";
    if (k.copy()) {
      launch = "\"type\": \"copy\"";
    } else if (k.has_library_call()) {
      const auto& call = k.library_call();
      launch = fmt::format(
          "\"type\": \"library\", \"library\": {}, \"op\": {}, \"call\": {}, \"algorithm\": {}, "
          "\"workspace_bytes\": {}, \"algorithm_choice\": {}, \"tuned_ms\": {}, "
          "\"algorithm_config\": {}",
          json(call.library()), json(call.op()), json(library_call_summary(call)), call.algorithm(),
          call.workspace_bytes(), json(algorithm_choice(call)), call.tuned_ms(),
          algorithm_config_json(call));
      const int index = static_cast<int>(kernels.size());
      if (int e = generated_epilogue_of(m, index); e >= 0)
        launch += fmt::format(", \"generated_epilogue\": {}", e);
    } else {
      launch += fmt::format(
          ", \"module\": {}, \"entry\": {}, \"grid\": [{}], \"block\": [{}], "
          "\"shared_mem_bytes\": {}",
          k.module(), json(k.module_entry()), fmt::join(k.grid().begin(), k.grid().end(), ", "),
          fmt::join(k.block().begin(), k.block().end(), ", "), k.shared_mem_bytes());
    }
    kernels.push_back(fmt::format("    {{\"name\": {}, \"kind\": {}, {}, \"onnx_nodes\": [{}]}}",
                                  json(k.name()), json(k.copy() ? "copy" : k.kind()), launch,
                                  fmt::join(nodes, ", ")));
  }
  out += fmt::format("  \"kernels\": [{}{}{}]\n}}\n", kernels.empty() ? "" : "\n",
                     fmt::join(kernels, ",\n"), kernels.empty() ? "" : "\n  ");
  return out;
}

}  // namespace graphc::driver
