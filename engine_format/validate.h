// Manifest validation shared by the writer (refuse to write what the reader
// would refuse) and the reader (refuse untrusted bytes before use).
#pragma once

#include <string>
#include <vector>

#include "engine_format/engine_file.h"

namespace graphc::engine {

// What the manifest may refer to: one entry per section table row.
struct SectionInfo {
  SectionKind kind;
  std::string arch;  // code sections only
  uint64_t length = 0;
};

// "manifest", "weights", "ptx sm_90", "cubin sm_80"; "kind 7" when unknown.
std::string section_kind_name(SectionKind kind, std::string_view arch);

// Launch limits every current NVIDIA GPU shares; beyond them a launch fails.
inline constexpr uint32_t kMaxGridX = 0x7fffffffu;
inline constexpr uint32_t kMaxGridYZ = 65535;
inline constexpr uint32_t kMaxBlockThreads = 1024;
inline constexpr uint32_t kMaxBlockZ = 64;
inline constexpr uint32_t kMaxSharedMemBytes = 227 * 1024;  // sm_90's opt-in maximum
inline constexpr size_t kMaxKernelParamBytes = 4096;  // CUDA's kernel parameter limit
inline constexpr size_t kMaxRank = 64;
inline constexpr size_t kMaxLibraryParamsBytes = 64 * 1024;
inline constexpr uint64_t kMaxLibraryWorkspaceBytes = 1ull << 30;  // per library call

// Checks the tensors, bindings, kernels and code modules against each other
// and against `sections` (the file's section table, in order).
Status validate_manifest(const Manifest& manifest, const std::vector<SectionInfo>& sections);

// The buffer plan: no two arena tensors share bytes while both are live
// (lifetimes from the kernel order; a kernel may write an output over an input
// it reads for the last time). Needs tensors and kernel arguments validated.
Status validate_arena_lifetimes(const Manifest& manifest);

}  // namespace graphc::engine
