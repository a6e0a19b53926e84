// Manifest validation: every index, offset and size the runtime will use is
// checked here, so the runtime can trust a parsed engine.
#include "engine_format/validate.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>
#include <string_view>

#include "engine_format/conv_params.h"
#include "engine_format/library_algorithm.h"
#include "engine_format/matmul_params.h"
#include "engine_format/refit_record.h"
#include "engine_format/sdpa_params.h"
#include "engine_format/shape_range.h"
#include "support/checked_math.h"

namespace graphc::engine {
namespace {

std::string_view location_name(int location) {
  switch (location) {
    case Tensor::ARENA: return "arena";
    case Tensor::WEIGHTS: return "weights";
    case Tensor::INPUT: return "input";
    case Tensor::OUTPUT: return "output";
    default: return "unknown";
  }
}

Status validate_tensor(const Manifest& m, int index, uint64_t weights_length) {
  const Tensor& t = m.tensors(index);
  auto where = fmt::format("manifest tensor {} '{}'", index, t.name());
  size_t elem = manifest_dtype_size(t.dtype());
  if (elem == 0) return invalid_engine("{}: unknown dtype {}", where, t.dtype());
  if (static_cast<size_t>(t.shape_size()) > kMaxRank) {
    return invalid_engine("{}: rank {} exceeds the limit of {}", where, t.shape_size(), kMaxRank);
  }
  std::vector<int64_t> dims(t.shape().begin(), t.shape().end());
  for (int64_t d : dims) {
    if (d < 0) return invalid_engine("{}: negative dimension {}", where, d);
  }
  auto numel = checked_numel(dims);
  auto bytes = numel ? checked_mul(*numel, static_cast<int64_t>(elem)) : std::nullopt;
  if (!bytes) return invalid_engine("{}: element count overflows", where);
  if (t.bytes() != static_cast<uint64_t>(*bytes)) {
    return invalid_engine("{}: size is {} bytes but its shape and dtype need {}", where, t.bytes(),
                          *bytes);
  }
  // GPUs fault on misaligned loads, so each tensor starts at a multiple of its element size.
  if (t.offset() % elem != 0) {
    return invalid_engine("{}: offset {} is not a multiple of its element size {}", where,
                          t.offset(), elem);
  }
  uint64_t end = 0;
  if (__builtin_add_overflow(t.offset(), t.bytes(), &end)) {
    return invalid_engine("{}: offset {} + size {} overflows", where, t.offset(), t.bytes());
  }
  switch (t.location()) {
    case Tensor::ARENA:
      if (end > m.arena_bytes()) {
        return invalid_engine("{}: bytes [{}, {}) lie outside the {}-byte arena", where, t.offset(),
                              end, m.arena_bytes());
      }
      return Status::ok_status();
    case Tensor::WEIGHTS:
      if (end > weights_length) {
        return invalid_engine("{}: bytes [{}, {}) lie outside the {}-byte weights section", where,
                              t.offset(), end, weights_length);
      }
      return Status::ok_status();
    case Tensor::INPUT:
    case Tensor::OUTPUT:
      // The caller's buffer holds exactly this tensor.
      if (t.offset() != 0) {
        return invalid_engine("{}: {} tensors have offset 0, not {}", where,
                              location_name(t.location()), t.offset());
      }
      return Status::ok_status();
    default:
      return invalid_engine("{}: unknown location {}", where, static_cast<int>(t.location()));
  }
}

Status validate_bindings(const Manifest& m, bool inputs) {
  const auto& list = inputs ? m.inputs() : m.outputs();
  const char* what = inputs ? "input" : "output";
  std::set<std::string> seen;
  for (int i = 0; i < list.size(); ++i) {
    const Binding& b = list[i];
    if (b.name().empty()) return invalid_engine("manifest {} binding {} has no name", what, i);
    if (!seen.insert(b.name()).second) {
      return invalid_engine("manifest {} binding {} '{}' repeats a name", what, i, b.name());
    }
    if (b.tensor() < 0 || b.tensor() >= m.tensors_size()) {
      return invalid_engine(
          "manifest {} binding '{}': tensor index {} is out of range (the manifest has {})", what,
          b.name(), b.tensor(), m.tensors_size());
    }
  }
  return Status::ok_status();
}

Status validate_dims(const std::string& where, const char* what,
                     const google::protobuf::RepeatedField<uint32_t>& dims, bool is_block) {
  if (dims.size() != 3)
    return invalid_engine("{}: {} has {} values, not 3", where, what, dims.size());
  uint64_t product = 1;
  for (int i = 0; i < 3; ++i) {
    uint32_t limit =
        is_block ? (i == 2 ? kMaxBlockZ : kMaxBlockThreads) : (i == 0 ? kMaxGridX : kMaxGridYZ);
    if (dims[i] == 0 || dims[i] > limit) {
      return invalid_engine("{}: {}[{}] = {} is outside [1, {}]", where, what, i, dims[i], limit);
    }
    product *= dims[i];  // three values below 2^31 each after the checks: no overflow for blocks
  }
  if (is_block && product > kMaxBlockThreads) {
    return invalid_engine("{}: a block of {} threads exceeds {}", where, product, kMaxBlockThreads);
  }
  return Status::ok_status();
}

// A device-to-device copy: two tensors of the same size, no code.
Status validate_copy(const Manifest& m, const Kernel& k, const std::string& where) {
  if (k.has_library_call() || !k.module_entry().empty())
    return invalid_engine("{}: a copy has no module entry and no library call", where);
  if (k.args_size() != 2)
    return invalid_engine("{}: a copy has 2 arguments (source, destination), not {}", where,
                          k.args_size());
  uint64_t src = m.tensors(k.args(0)).bytes(), dst = m.tensors(k.args(1)).bytes();
  if (src != dst)
    return invalid_engine("{}: copies {} bytes into a {}-byte tensor", where, src, dst);
  if (k.grid_size() != 0 || k.block_size() != 0 || k.shared_mem_bytes() != 0 || k.module() != 0)
    return invalid_engine("{}: a copy has no grid, block, shared memory or module", where);
  if (!k.params().empty()) return invalid_engine("{}: a copy takes no kernel parameters", where);
  return Status::ok_status();
}

// A cuBLASLt matmul: its descriptor decodes, and every operand tensor has
// the descriptor's dtype and holds what the call reads or writes.
Status validate_cublaslt_call(const Manifest& m, const Kernel& k, const std::string& where) {
  const LibraryCall& call = k.library_call();
  if (call.op() != "matmul")
    return invalid_engine("{}: unknown cublasLt op '{}' (matmul)", where, call.op());
  auto decoded = decode_matmul_params(call.params());
  if (!decoded.ok()) return decoded.status().with_context(where);
  const MatmulParams& p = *decoded;
  if (k.args_size() != p.num_args())
    return invalid_engine("{}: a matmul{}{} takes {} tensors, not {}", where,
                          p.has_c ? " with C" : "", p.has_bias ? " with bias" : "", p.num_args(),
                          k.args_size());
  auto check = [&](int arg, const char* role, int64_t elements, bool exact) -> Status {
    const Tensor& t = m.tensors(k.args(arg));
    const int32_t want = arg == 0 || arg == 1 ? p.dtype
                         : arg == p.d_arg()   ? p.d_dtype()
                                              : p.c_dtype();
    const auto elem = static_cast<int64_t>(manifest_dtype_size(want));
    if (t.dtype() != want)
      return invalid_engine("{}: {} tensor '{}' has dtype {}, the matmul {}", where, role, t.name(),
                            t.dtype(), want);
    const auto bytes = static_cast<int64_t>(t.bytes());
    if (elements > bytes / elem || (exact && elements * elem != bytes))
      return invalid_engine("{}: {} tensor '{}' has {} bytes; the matmul {} {} elements", where,
                            role, t.name(), bytes, exact ? "needs exactly" : "reads", elements);
    return Status::ok_status();
  };
  RETURN_IF_ERROR(check(0, "A", p.a_extent(), false));
  RETURN_IF_ERROR(check(1, "B", p.b_extent(), false));
  if (p.has_c) RETURN_IF_ERROR(check(p.c_arg(), "C", p.c_extent(), false));
  if (p.has_bias) RETURN_IF_ERROR(check(p.bias_arg(), "bias", p.n, true));
  RETURN_IF_ERROR(check(p.d_arg(), "D", p.d_extent(), false));
  const Tensor& d = m.tensors(k.args(p.d_arg()));
  if (d.location() != Tensor::ARENA && d.location() != Tensor::OUTPUT)
    return invalid_engine("{}: the matmul writes tensor '{}', which is {}", where, d.name(),
                          location_name(d.location()));
  return Status::ok_status();
}

// A cuDNN attention: its descriptor decodes, the call's algorithm is the
// descriptor's engine, every operand tensor has the operand's dtype and holds
// what its strides reach, and the output is written to the arena or an output
// that no input shares.
Status validate_cudnn_sdpa_call(const Manifest& m, const Kernel& k, const LibraryCall& call,
                                const std::string& where) {
  auto decoded = decode_sdpa_params(call.params());
  if (!decoded.ok()) return decoded.status().with_context(where);
  const SdpaParams& p = *decoded;
  if (call.algorithm() != p.engine)
    return invalid_engine("{}: the call records algorithm {}, its sdpa params engine {}", where,
                          call.algorithm(), p.engine);
  if (k.args_size() != p.num_args())
    return invalid_engine("{}: an sdpa{}{} takes {} tensors, not {}", where,
                          p.has_bias ? " with bias" : "", p.has_seq_lens ? " with seq lens" : "",
                          p.num_args(), k.args_size());
  for (const SdpaOperand& o : sdpa_operands(p)) {
    const Tensor& t = m.tensors(k.args(o.arg));
    if (t.dtype() != o.dtype)
      return invalid_engine("{}: {} tensor '{}' has dtype {}, the sdpa {}", where, o.role, t.name(),
                            t.dtype(), o.dtype);
    const auto elem = static_cast<int64_t>(manifest_dtype_size(o.dtype));
    const auto bytes = static_cast<int64_t>(t.bytes());
    if (o.elements < 0 || o.elements > bytes / elem)
      return invalid_engine("{}: {} tensor '{}' has {} bytes; the sdpa reaches {} elements", where,
                            o.role, t.name(), bytes, o.elements);
  }
  const Tensor& out = m.tensors(k.args(p.o_arg()));
  if (out.location() != Tensor::ARENA && out.location() != Tensor::OUTPUT)
    return invalid_engine("{}: the sdpa writes tensor '{}', which is {}", where, out.name(),
                          location_name(out.location()));
  for (int a = 0; a < p.o_arg(); ++a)
    if (k.args(a) == k.args(p.o_arg()))
      return invalid_engine("{}: the sdpa reads its output tensor '{}' as argument {}", where,
                            out.name(), a);
  return Status::ok_status();
}

// A cuDNN convolution: its descriptor decodes, the call's algorithm is the
// descriptor's, and every operand tensor has the descriptor's dtype and
// exactly the elements the call reads or writes (over a shape range, where
// the call has run-time sizes, tensors that vary hold at least the built
// shape's: each shape's fit is validate_shape_range's and the runtime's).
Status validate_cudnn_call(const Manifest& m, const Kernel& k, const std::string& where) {
  const LibraryCall& call = k.library_call();
  if (call.op() == "sdpa") return validate_cudnn_sdpa_call(m, k, call, where);
  if (call.op() != "conv")
    return invalid_engine("{}: unknown cudnn op '{}' (conv or sdpa)", where, call.op());
  auto decoded = decode_conv_params(call.params());
  if (!decoded.ok()) return decoded.status().with_context(where);
  const ConvParams& p = *decoded;
  if (call.algorithm() != p.algorithm)
    return invalid_engine("{}: the call records algorithm {}, its conv params {}", where,
                          call.algorithm(), p.algorithm);
  if (k.args_size() != p.num_args())
    return invalid_engine("{}: a conv{}{} takes {} tensors, not {}", where,
                          p.has_bias ? " with bias" : "", p.has_residual ? " with residual" : "",
                          p.num_args(), k.args_size());
  const auto elem = static_cast<int64_t>(manifest_dtype_size(p.dtype));
  auto check = [&](int arg, const char* role, int64_t elements) -> Status {
    const Tensor& t = m.tensors(k.args(arg));
    if (t.dtype() != p.dtype)
      return invalid_engine("{}: {} tensor '{}' has dtype {}, the conv {}", where, role, t.name(),
                            t.dtype(), p.dtype);
    const auto bytes = static_cast<int64_t>(t.bytes());
    const bool varies = call.sizes_size() > 0 && t.dim_sizes_size() > 0;
    if (varies ? elements * elem > bytes : elements * elem != bytes)
      return invalid_engine("{}: {} tensor '{}' has {} bytes; the conv needs {} {} elements",
                            where, role, t.name(), bytes, varies ? "at least" : "exactly",
                            elements);
    return Status::ok_status();
  };
  RETURN_IF_ERROR(check(0, "x", p.x_elements()));
  RETURN_IF_ERROR(check(1, "w", p.w_elements()));
  if (p.has_bias) RETURN_IF_ERROR(check(p.bias_arg(), "bias", p.k));
  if (p.has_residual) RETURN_IF_ERROR(check(p.residual_arg(), "residual", p.y_elements()));
  RETURN_IF_ERROR(check(p.y_arg(), "y", p.y_elements()));
  const Tensor& y = m.tensors(k.args(p.y_arg()));
  if (y.location() != Tensor::ARENA && y.location() != Tensor::OUTPUT)
    return invalid_engine("{}: the conv writes tensor '{}', which is {}", where, y.name(),
                          location_name(y.location()));
  // cuDNN reads x, w, bias and z while writing y: none may share y's bytes.
  for (int a = 0; a < p.y_arg(); ++a)
    if (k.args(a) == k.args(p.y_arg()))
      return invalid_engine("{}: the conv reads its output tensor '{}' as argument {}", where,
                            y.name(), a);
  return Status::ok_status();
}

// A generated kernel's preferred call (format 6): cuDNN's SDPA on the
// kernel's own arguments, valid at the shape it was built at; its run-time
// fields are checked with the shape range (shape_range.cpp).
Status validate_preferred_call(const Manifest& m, const Kernel& k, const std::string& where) {
  const LibraryCall& call = k.preferred_call();
  const std::string at = where + " preferred call";
  if (call.library() != "cudnn" || call.op() != "sdpa")
    return invalid_engine("{}: {} {}; only cudnn sdpa may be preferred to a kernel", at,
                          call.library(), call.op());
  if (call.sizes_size() != kSdpaRangeFields)
    return invalid_engine("{}: {} run-time fields, an sdpa over a shape range has {}", at,
                          call.sizes_size(), kSdpaRangeFields);
  if (call.params().size() > kMaxLibraryParamsBytes || call.workspace_bytes() > kMaxLibraryWorkspaceBytes)
    return invalid_engine("{}: {} bytes of parameters, {} of workspace", at, call.params().size(),
                          call.workspace_bytes());
  if (!call.algorithm_config().empty() || call.tuned_ms() != 0)
    return invalid_engine("{}: a preferred sdpa records no tuned algorithm", at);
  // Sequence lengths would be data the runtime's eager first run cannot trust.
  if (auto p = decode_sdpa_params(call.params()); p.ok() && p->has_seq_lens)
    return invalid_engine("{}: a preferred sdpa takes no sequence lengths", at);
  return validate_cudnn_sdpa_call(m, k, call, at);
}

Status validate_kernel(const Manifest& m, int index, int32_t modules) {
  const Kernel& k = m.kernels(index);
  auto where = fmt::format("manifest kernel {} '{}'", index, k.name());
  for (int a = 0; a < k.args_size(); ++a) {
    if (k.args(a) < 0 || k.args(a) >= m.tensors_size()) {
      return invalid_engine("{}: argument {} names tensor {}, out of range (the manifest has {})",
                            where, a, k.args(a), m.tensors_size());
    }
  }
  if (k.has_preferred_call() && (k.copy() || k.has_library_call()))
    return invalid_engine("{}: only a generated kernel has a preferred library call", where);
  if (k.copy()) return validate_copy(m, k, where);
  if (k.has_library_call()) {
    const LibraryCall& call = k.library_call();
    if (call.library() != "cublasLt" && call.library() != "cudnn") {
      return invalid_engine("{}: unknown library '{}' (cublasLt or cudnn)", where, call.library());
    }
    if (call.op().empty()) return invalid_engine("{}: library call names no op", where);
    if (call.params().size() > kMaxLibraryParamsBytes) {
      return invalid_engine("{}: {} bytes of library parameters exceed {}", where,
                            call.params().size(), kMaxLibraryParamsBytes);
    }
    if (k.module() != 0)
      return invalid_engine("{}: a library call has no code module, but module is {}", where,
                            k.module());
    if (!k.module_entry().empty() || k.grid_size() != 0 || k.block_size() != 0 ||
        k.shared_mem_bytes() != 0 || !k.params().empty())
      return invalid_engine(
          "{}: a library call has no module entry, grid, block, shared memory or parameters",
          where);
    if (call.workspace_bytes() > kMaxLibraryWorkspaceBytes)
      return invalid_engine("{}: workspace of {} bytes exceeds {}", where, call.workspace_bytes(),
                            kMaxLibraryWorkspaceBytes);
    RETURN_IF_ERROR(check_recorded_algorithm(call.library(), call.algorithm(),
                                             call.algorithm_config(), call.tuned_ms(),
                                             call.workspace_bytes())
                        .with_context(where));
    if (call.library() == "cublasLt") return validate_cublaslt_call(m, k, where);
    return validate_cudnn_call(m, k, where);
  }
  if (k.module_entry().empty())
    return invalid_engine("{}: no module entry and no library call", where);
  if (m.code_modules_size() == 0)
    return invalid_engine("{}: generated kernel but no code modules", where);
  if (k.module() < 0 || k.module() >= modules)
    return invalid_engine("{}: module {} is out of range (the engine has {} code modules)", where,
                          k.module(), modules);
  RETURN_IF_ERROR(validate_dims(where, "grid", k.grid(), false));
  RETURN_IF_ERROR(validate_dims(where, "block", k.block(), true));
  if (k.shared_mem_bytes() > kMaxSharedMemBytes) {
    return invalid_engine("{}: {} bytes of shared memory exceed {}", where, k.shared_mem_bytes(),
                          kMaxSharedMemBytes);
  }
  // CUDA passes at most 4 KiB of kernel parameters (the pointers included).
  if (k.params().size() + 8 * static_cast<size_t>(k.args_size()) > kMaxKernelParamBytes)
    return invalid_engine("{}: {} bytes of kernel parameters and {} pointers exceed {} bytes",
                          where, k.params().size(), k.args_size(), kMaxKernelParamBytes);
  if (k.has_preferred_call()) RETURN_IF_ERROR(validate_preferred_call(m, k, where));
  return Status::ok_status();
}

// Loops: each a generated control kernel whose body (the kernels after it)
// lies inside the kernel list and inside any loop around it, with the
// iteration, condition and flag tensors the runtime and the kernel rely on.
Status validate_loops(const Manifest& m) {
  constexpr int kMaxLoopDepth = 16;
  std::vector<int> open_ends;  // end (exclusive) of each enclosing loop's body
  for (int i = 0; i < m.kernels_size(); ++i) {
    while (!open_ends.empty() && open_ends.back() <= i) open_ends.pop_back();
    const Kernel& k = m.kernels(i);
    if (!k.has_loop()) continue;
    auto where = fmt::format("manifest kernel {} '{}'", i, k.name());
    if (k.copy() || k.has_library_call() || k.module_entry().empty() || !k.params().empty() ||
        k.size_block_size() != 0)
      return invalid_engine("{}: a loop's control kernel is a generated kernel without a "
                            "parameter block or run-time sizes",
                            where);
    if (k.args_size() < 4 || k.args_size() > 6)
      return invalid_engine("{}: a loop's control kernel takes 4 to 6 tensors, it names {}", where,
                            k.args_size());
    const int64_t end = int64_t{i} + 1 + k.loop().body_kernels();
    const int64_t limit = open_ends.empty() ? m.kernels_size() : open_ends.back();
    if (end > limit)
      return invalid_engine("{}: its body of {} kernels runs past the end of the {}", where,
                            k.loop().body_kernels(),
                            open_ends.empty() ? "kernel list" : "loop around it");
    if (open_ends.size() >= kMaxLoopDepth)
      return invalid_engine("{}: loops nested deeper than {}", where, kMaxLoopDepth);
    open_ends.push_back(static_cast<int>(end));
    struct Want {
      int arg;
      int32_t dtype;
      uint64_t bytes;
      const char* what;
    };
    const int n = k.args_size();
    for (const Want& w : {Want{n - 3, 7, 8, "iteration"}, Want{n - 2, 9, 1, "condition"},
                          Want{n - 1, 6, 4, "flag"}}) {
      const Tensor& t = m.tensors(k.args(w.arg));
      if (t.location() != Tensor::ARENA || t.dtype() != w.dtype || t.bytes() != w.bytes)
        return invalid_engine("{}: its {} tensor '{}' must be one {} in the arena", where, w.what,
                              t.name(), w.dtype == 7 ? "int64" : w.dtype == 9 ? "bool" : "int32");
    }
  }
  return Status::ok_status();
}

// A section index from a CodeModule: -1 (none) or a code section of `want`
// kind built for the module's arch.
Status check_code_ref(const std::string& where, int32_t index, SectionKind want,
                      const std::string& arch, const std::vector<SectionInfo>& sections,
                      std::vector<bool>& referenced) {
  if (index == -1) return Status::ok_status();
  const char* field = want == SectionKind::kCodePtx ? "ptx_section" : "cubin_section";
  if (index < 0 || static_cast<size_t>(index) >= sections.size()) {
    return invalid_engine("{}: {} {} is out of range (the file has {} sections)", where, field,
                          index, sections.size());
  }
  const SectionInfo& s = sections[index];
  if (s.kind != want || s.arch != arch) {
    return invalid_engine("{}: {} {} is the {} section, not {} {}", where, field, index,
                          section_kind_name(s.kind, s.arch),
                          want == SectionKind::kCodePtx ? "ptx" : "cubin", arch);
  }
  if (referenced[index])
    return invalid_engine("{}: section {} is already used by another module", where, index);
  referenced[index] = true;
  return Status::ok_status();
}

// Code modules: each (module, arch) once, modules numbered 0..N-1 without
// gaps, every module built for the same archs, every code section used.
// Returns N.
Expected<int32_t> validate_code_modules(const Manifest& m,
                                        const std::vector<SectionInfo>& sections) {
  std::vector<bool> referenced(sections.size(), false);
  std::set<std::pair<int32_t, std::string>> seen;
  std::map<std::string, int32_t> per_arch;  // arch -> modules built for it
  std::set<int32_t> modules;
  for (int i = 0; i < m.code_modules_size(); ++i) {
    const CodeModule& cm = m.code_modules(i);
    auto where = fmt::format("manifest code module {} '{}'", i, cm.arch());
    if (parse_sm_arch(cm.arch()) < 0)
      return invalid_engine("{}: arch is not of the form sm_NN", where);
    if (cm.module() < 0) return invalid_engine("{}: module {} is negative", where, cm.module());
    if (!seen.insert({cm.module(), cm.arch()}).second)
      return invalid_engine("{}: a second entry for module {} and this arch", where, cm.module());
    modules.insert(cm.module());
    ++per_arch[cm.arch()];
    if (cm.ptx_section() == -1 && cm.cubin_section() == -1)
      return invalid_engine("{}: has no code", where);
    RETURN_IF_ERROR(check_code_ref(where, cm.ptx_section(), SectionKind::kCodePtx, cm.arch(),
                                   sections, referenced));
    RETURN_IF_ERROR(check_code_ref(where, cm.cubin_section(), SectionKind::kCodeCubin, cm.arch(),
                                   sections, referenced));
  }
  // Code no module points at would be dead weight that select_code could still pick.
  for (size_t s = 0; s < sections.size(); ++s) {
    bool code =
        sections[s].kind == SectionKind::kCodePtx || sections[s].kind == SectionKind::kCodeCubin;
    if (code && !referenced[s]) {
      return invalid_engine("section {} ({}) is not used by any manifest code module", s,
                            section_kind_name(sections[s].kind, sections[s].arch));
    }
  }
  const auto count = static_cast<int32_t>(modules.size());
  if (!modules.empty() && *modules.rbegin() != count - 1) {
    int32_t gap = 0;
    while (modules.count(gap)) ++gap;
    return invalid_engine(
        "manifest code modules: module {} has no code (modules are numbered 0..N-1 without gaps)",
        gap);
  }
  // Each arch has at most one entry per module, so `count` entries means all of them.
  for (const auto& [arch, n] : per_arch) {
    if (n != count)
      return invalid_engine(
          "manifest code modules: {} of the {} modules have code for {} (every module is built "
          "for the same architectures)",
          n, count, arch);
  }
  return count;
}

// A module no kernel launches from is dead weight (and unchecked code).
Status check_modules_used(const Manifest& m, int32_t modules) {
  std::vector<bool> used(static_cast<size_t>(modules), false);
  for (const Kernel& k : m.kernels())
    if (!k.copy() && !k.has_library_call()) used[static_cast<size_t>(k.module())] = true;
  for (int32_t i = 0; i < modules; ++i)
    if (!used[static_cast<size_t>(i)])
      return invalid_engine("manifest code modules: module {} is not used by any kernel", i);
  return Status::ok_status();
}

}  // namespace

std::string section_kind_name(SectionKind kind, std::string_view arch) {
  switch (kind) {
    case SectionKind::kManifest: return "manifest";
    case SectionKind::kWeights: return "weights";
    case SectionKind::kCodePtx: return fmt::format("ptx {}", arch);
    case SectionKind::kCodeCubin: return fmt::format("cubin {}", arch);
  }
  return fmt::format("kind {}", static_cast<uint32_t>(kind));
}

int parse_sm_arch(std::string_view arch) {
  if (arch.size() < 5 || arch.size() > 6 || arch.substr(0, 3) != "sm_" || arch[3] == '0') return -1;
  int value = 0;
  for (char c : arch.substr(3)) {
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return value >= 10 ? value : -1;
}

size_t manifest_dtype_size(int32_t dtype) {
  switch (dtype) {
    case 2:
    case 3:
    case 9: return 1;  // uint8, int8, bool
    case 17:
    case 18:
    case 19:
    case 20:
    case 21:
    case 22:
    case 23:
    case 25:
    case 26: return 1;  // float8 (4 kinds), uint4, int4, float4e2m1, uint2, int2: one per byte
    case 4:
    case 5:
    case 10:
    case 16: return 2;  // uint16, int16, float16, bfloat16
    case 1:
    case 6:
    case 12: return 4;  // float32, int32, uint32
    case 7:
    case 11:
    case 13: return 8;  // int64, float64, uint64
    default: return 0;
  }
}

Status validate_manifest(const Manifest& m, const std::vector<SectionInfo>& sections) {
  uint64_t weights_length = 0;
  for (const auto& s : sections) {
    if (s.kind == SectionKind::kWeights) weights_length = s.length;
  }
  if (m.weights_bytes() != weights_length) {
    return invalid_engine("manifest says {} bytes of weights but the weights section holds {}",
                          m.weights_bytes(), weights_length);
  }
  for (int i = 0; i < m.tensors_size(); ++i) RETURN_IF_ERROR(validate_tensor(m, i, weights_length));
  RETURN_IF_ERROR(validate_bindings(m, true));
  RETURN_IF_ERROR(validate_bindings(m, false));
  ASSIGN_OR_RETURN(int32_t modules, validate_code_modules(m, sections));
  for (int i = 0; i < m.kernels_size(); ++i) RETURN_IF_ERROR(validate_kernel(m, i, modules));
  RETURN_IF_ERROR(validate_loops(m));
  RETURN_IF_ERROR(check_modules_used(m, modules));
  RETURN_IF_ERROR(validate_shape_range(m));
  RETURN_IF_ERROR(validate_refit_record(m));
  return validate_arena_lifetimes(m);
}

int32_t module_count(const Manifest& m) {
  int32_t count = 0;
  for (const CodeModule& cm : m.code_modules()) count = std::max(count, cm.module() + 1);
  return count;
}

Expected<const CodeBlob*> select_code(const EngineContents& contents, int device_sm,
                                      int32_t module) {
  const CodeBlob* best_ptx = nullptr;
  int best_ptx_sm = -1;
  std::vector<std::string> archs;
  for (const auto& blob : contents.code) {
    if (blob.module != module) continue;
    int sm = parse_sm_arch(blob.arch);
    if (std::find(archs.begin(), archs.end(), blob.arch) == archs.end()) archs.push_back(blob.arch);
    if (sm < 0) continue;
    if (blob.kind == CodeBlob::Kind::kCubin && sm == device_sm) return &blob;
    if (blob.kind == CodeBlob::Kind::kPtx && sm <= device_sm && sm > best_ptx_sm) {
      best_ptx = &blob;
      best_ptx_sm = sm;
    }
  }
  if (best_ptx) return best_ptx;
  if (archs.empty()) {
    if (module != 0)
      return invalid_engine("the engine has no code for module {}; this device is sm_{}", module,
                            device_sm);
    return invalid_engine("the engine has no code for any GPU; this device is sm_{}", device_sm);
  }
  return unsupported(
      "engine built for {}; this device is sm_{} and the engine has no PTX it can use",
      fmt::join(archs, ", "), device_sm);
}

}  // namespace graphc::engine
