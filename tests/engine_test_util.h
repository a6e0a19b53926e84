// Shared by the engine_format tests: a sample engine, a raw assembler that
// lays out a file without validating it (to reach the reader's checks with
// hand-made manifests), and refusal checks for writer and reader. Header-only.
#pragma once

#include <fmt/format.h>
#include <google/protobuf/util/message_differencer.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "engine_format/engine_file.h"
#include "engine_format/matmul_params.h"

namespace graphc::engine::testing {

namespace fs = std::filesystem;

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

inline std::string random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

inline Tensor* add_tensor(Manifest& m, const std::string& name, int dtype,
                          std::vector<int64_t> shape, Tensor::Location loc, uint64_t offset,
                          uint64_t bytes) {
  Tensor* t = m.add_tensors();
  t->set_name(name);
  t->set_dtype(dtype);
  for (int64_t d : shape) t->add_shape(d);
  t->set_location(loc);
  t->set_offset(offset);
  t->set_bytes(bytes);
  return t;
}

// x[2,3] @ w[3,4] -> t (a cuBLASLt matmul), then y = t + b (a generated kernel).
// Code: PTX and CUBIN for sm_80, CUBIN only for sm_90. `weights_size` >= 56.
inline EngineContents sample_engine(size_t weights_size = 300, size_t code_size = 64) {
  EngineContents c;
  Manifest& m = c.manifest;
  m.set_producer("graphc 0.1.0");
  m.set_graph_name("tiny");
  m.set_precision("fp32");
  add_tensor(m, "x", 1, {2, 3}, Tensor::INPUT, 0, 24);
  add_tensor(m, "w", 1, {3, 4}, Tensor::WEIGHTS, 0, 48);
  add_tensor(m, "t", 1, {2, 4}, Tensor::ARENA, 0, 32);
  add_tensor(m, "b", 10, {4}, Tensor::WEIGHTS, 48, 8);
  add_tensor(m, "y", 1, {2, 4}, Tensor::OUTPUT, 0, 32);
  Binding* in = m.add_inputs();
  in->set_name("x");
  in->set_tensor(0);
  Binding* out = m.add_outputs();
  out->set_name("y");
  out->set_tensor(4);
  m.set_arena_bytes(64);
  m.set_weights_bytes(weights_size);

  Kernel* gemm = m.add_kernels();
  gemm->set_name("gemm_0");
  gemm->set_kind("gemm");
  for (int a : {0, 1, 2}) gemm->add_args(a);
  gemm->add_onnx_nodes("MatMul_0");
  LibraryCall* call = gemm->mutable_library_call();
  call->set_library("cublasLt");
  call->set_op("matmul");
  call->set_algorithm(7);
  call->set_workspace_bytes(1 << 20);
  MatmulParams params;  // t[2x4] = x[2x3] @ w[3x4]
  params.m = 2;
  params.k = 3;
  params.n = 4;
  params.lda = 3;
  params.ldb = 4;
  params.ldc = 4;
  params.stride_d = 8;
  call->set_params(encode_matmul_params(params));

  Kernel* add = m.add_kernels();
  add->set_name("fused_1");
  add->set_kind("fused elementwise");
  add->set_module_entry("graphc_fused_1");
  for (uint32_t g : {1u, 1u, 1u}) add->add_grid(g);
  for (uint32_t b : {128u, 1u, 1u}) add->add_block(b);
  add->set_shared_mem_bytes(0);
  for (int a : {2, 3, 4}) add->add_args(a);
  add->add_onnx_nodes("Add_1");
  add->add_onnx_nodes("Relu_2");

  c.code.push_back({"sm_80", CodeBlob::Kind::kPtx,
                    ".version 8.0\n.target sm_80\n" + std::string(code_size, 'p')});
  c.code.push_back({"sm_80", CodeBlob::Kind::kCubin, random_bytes(code_size, 1)});
  c.code.push_back({"sm_90", CodeBlob::Kind::kCubin, random_bytes(code_size, 2)});
  CodeModule* m80 = m.add_code_modules();
  m80->set_arch("sm_80");
  m80->set_ptx_section(code_section_index(0));
  m80->set_cubin_section(code_section_index(1));
  CodeModule* m90 = m.add_code_modules();
  m90->set_arch("sm_90");
  m90->set_ptx_section(-1);
  m90->set_cubin_section(code_section_index(2));

  c.weights = random_bytes(weights_size, 4);
  return c;
}

inline std::string serialize_ok(const EngineContents& c) {
  auto bytes = serialize_engine(c);
  INFO(bytes.status().message());
  REQUIRE(bytes.ok());
  return *bytes;
}

inline bool same_contents(const EngineContents& a, const EngineContents& b) {
  if (!google::protobuf::util::MessageDifferencer::Equals(a.manifest, b.manifest)) return false;
  if (a.weights != b.weights || a.code.size() != b.code.size()) return false;
  for (size_t i = 0; i < a.code.size(); ++i) {
    if (a.code[i].arch != b.code[i].arch || a.code[i].kind != b.code[i].kind ||
        a.code[i].bytes != b.code[i].bytes || a.code[i].module != b.code[i].module) {
      return false;
    }
  }
  return true;
}

// A fresh empty folder under the system temp folder, removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("graphc_engine_test_" + std::to_string(::getpid()) + "_" +
                                        std::to_string(std::random_device{}()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::vector<std::string> files() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path))
      names.push_back(e.path().filename().string());
    return names;
  }
};

// Field offsets documented in docs/engine-format.md.
inline constexpr size_t kEntryKind = 0, kEntryCrc = 4, kEntryOffset = 24, kEntryLength = 32;

inline void put_u32(std::string& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
inline void put_u64(std::string& b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
inline uint64_t get_u64(const std::string& b, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}
inline size_t entry(size_t section) { return kHeaderSize + section * kSectionEntrySize; }

// Patches a section table field and recomputes the header checksum, as an
// attacker would.
inline std::string patch_u64(std::string b, size_t section, size_t field, uint64_t v) {
  put_u64(b, entry(section) + field, v);
  detail::reseal_header(b);
  return b;
}

inline std::string expect_refused(const std::string& bytes, const std::string& part) {
  auto parsed = parse_engine(bytes);
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.status().code() == ErrorCode::kInvalidEngine);
  INFO(parsed.status().message());
  CHECK(contains(parsed.status().message(), part));
  return parsed.status().message();
}

// Changes 1-8 random bytes of the manifest payload of `good` (an engine's
// bytes) `iterations` times, fixes the section and header checksums, and
// parses: the reader must fail cleanly or accept, and what it accepts the
// writer must accept too (so the validation is one rule set). `on_accepted`
// gets every accepted engine. Returns how many were accepted.
template <typename OnAccepted>
int mutate_manifest_checked(const std::string& good, uint32_t seed, int iterations,
                            OnAccepted on_accepted) {
  uint64_t off = get_u64(good, entry(0) + kEntryOffset);
  uint64_t len = get_u64(good, entry(0) + kEntryLength);
  std::mt19937 rng(seed);
  int accepted = 0;
  for (int iter = 0; iter < iterations; ++iter) {
    std::string bad = good;
    int flips = 1 + static_cast<int>(rng() % 8);
    for (int f = 0; f < flips; ++f) bad[off + rng() % len] = static_cast<char>(rng() & 0xff);
    put_u32(bad, entry(0) + kEntryCrc, detail::crc32_of(std::string_view(bad).substr(off, len)));
    detail::reseal_header(bad);
    auto parsed = parse_engine(bad);
    if (!parsed.ok()) {
      CHECK(parsed.status().code() == ErrorCode::kInvalidEngine);
      continue;
    }
    ++accepted;
    auto rewritten = serialize_engine(*parsed);
    INFO(rewritten.status().message());
    CHECK(rewritten.ok());
    on_accepted(*parsed);
  }
  return accepted;
}

// Lays out a file like serialize_engine but without validating anything, so
// the reader's manifest checks can be reached with raw manifest bytes.
inline std::string assemble(const std::string& manifest_bytes, const std::vector<CodeBlob>& code,
                            const std::string& weights,
                            const std::string& producer = "graphc 0.1.0",
                            uint32_t format_version = kFormatVersionBase) {
  std::vector<std::tuple<uint32_t, std::string, std::string_view>> sections;
  sections.emplace_back(1, "", manifest_bytes);
  for (const auto& blob : code)
    sections.emplace_back(blob.kind == CodeBlob::Kind::kPtx ? 2 : 3, blob.arch, blob.bytes);
  sections.emplace_back(4, "", weights);
  std::string out(kHeaderSize + sections.size() * kSectionEntrySize, '\0');
  std::memcpy(out.data(), kMagic, 8);
  put_u32(out, 8, format_version);
  put_u32(out, 12, format_version);
  std::memcpy(out.data() + 16, producer.data(), producer.size());
  put_u32(out, 68, static_cast<uint32_t>(sections.size()));
  for (size_t i = 0; i < sections.size(); ++i) {
    const auto& [kind, arch, bytes] = sections[i];
    size_t align = kind == 4 ? kWeightsAlign : kSectionAlign;
    out.resize((out.size() + align - 1) / align * align, '\0');
    put_u32(out, entry(i) + kEntryKind, kind);
    put_u32(out, entry(i) + kEntryCrc, detail::crc32_of(bytes));
    std::memcpy(out.data() + entry(i) + 8, arch.data(), arch.size());
    put_u64(out, entry(i) + kEntryOffset, out.size());
    put_u64(out, entry(i) + kEntryLength, bytes.size());
    out.append(bytes);
  }
  detail::reseal_header(out);
  return out;
}

inline std::string assemble(const EngineContents& c) {
  return assemble(c.manifest.SerializeAsString(), c.code, c.weights);
}

// Both sides refuse: the writer (before writing) and the reader (hand-made file).
inline void expect_invalid_manifest(const EngineContents& c, const std::string& part) {
  auto written = serialize_engine(c);
  REQUIRE_FALSE(written.ok());
  INFO(written.status().message());
  CHECK(contains(written.status().message(), part));
  expect_refused(assemble(c), part);
}

// y = tanh(relu(x)) in two kernels (modules 0 and 1) and z = a copy of the
// intermediate (a view that is a graph output). PTX and CUBIN of both
// modules for sm_80 and sm_90, laid out arch-major as graphc writes them.
inline EngineContents modular_engine() {
  EngineContents c;
  Manifest& m = c.manifest;
  m.set_producer("graphc 0.1.0");
  m.set_graph_name("modular");
  m.set_precision("fp32");
  add_tensor(m, "x", 1, {2, 4}, Tensor::INPUT, 0, 32);
  add_tensor(m, "t", 1, {2, 4}, Tensor::ARENA, 0, 32);
  add_tensor(m, "y", 1, {2, 4}, Tensor::OUTPUT, 0, 32);
  add_tensor(m, "z", 1, {8}, Tensor::OUTPUT, 0, 32);
  Binding* in = m.add_inputs();
  in->set_name("x");
  in->set_tensor(0);
  for (auto [name, tensor] : {std::pair<const char*, int>{"y", 2}, {"z", 3}}) {
    Binding* out = m.add_outputs();
    out->set_name(name);
    out->set_tensor(tensor);
  }
  m.set_arena_bytes(256);
  auto generated = [&](const char* name, int32_t module, std::vector<int32_t> args) {
    Kernel* k = m.add_kernels();
    k->set_name(name);
    k->set_kind("elementwise");
    k->set_module_entry(std::string(name) + "_entry");
    k->set_module(module);
    for (uint32_t g : {1u, 1u, 1u}) k->add_grid(g);
    for (uint32_t b : {256u, 1u, 1u}) k->add_block(b);
    for (int32_t a : args) k->add_args(a);
    k->add_onnx_nodes(name);
  };
  generated("relu", 0, {0, 1});
  generated("tanh", 1, {1, 2});
  Kernel* copy = m.add_kernels();
  copy->set_name("copy/reshape");
  copy->set_kind("copy");
  copy->set_copy(true);
  copy->add_args(1);
  copy->add_args(3);
  copy->add_onnx_nodes("reshape");
  for (const char* arch : {"sm_80", "sm_90"}) {
    for (int32_t module = 0; module < 2; ++module) {
      CodeModule* cm = m.add_code_modules();
      cm->set_arch(arch);
      cm->set_module(module);
      c.code.push_back({arch, CodeBlob::Kind::kPtx,
                        fmt::format(".target {} // module {}", arch, module), module});
      cm->set_ptx_section(code_section_index(c.code.size() - 1));
      c.code.push_back({arch, CodeBlob::Kind::kCubin,
                        random_bytes(48, static_cast<uint32_t>(10 * module + arch[4])), module});
      cm->set_cubin_section(code_section_index(c.code.size() - 1));
    }
  }
  return c;
}

template <typename Edit>
EngineContents modular_with(Edit&& edit) {
  EngineContents c = modular_engine();
  edit(c);
  return c;
}

}  // namespace graphc::engine::testing
