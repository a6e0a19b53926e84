// What a GPU target can do, asked by the optimizer and the emitter, so that
// lowering policy lives in one place: which operators and epilogues a library
// takes (and so where a fused group splits, and which convolutions may run
// channels-last), and how each kernel of an optimized graph is lowered
// (generated, or a library call) and why, for `graphc inspect`. The CUDA
// target (target/cuda/cuda_target.h) is the one implementation; a second
// target plugs in here.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "ir/graph.h"
#include "target/kernel_kind.h"

namespace graphc::target {

enum class Library : uint8_t { kNone, kCublasLt, kCudnn };
std::string_view library_name(Library library);  // "", "cuBLASLt", "cuDNN"

// How one kernel of an optimized graph runs.
struct Lowering {
  Library library = Library::kNone;  // kNone: a generated kernel
  std::string reason;  // gemm/conv kernels: what the library computes, or why generated
};

class Target {
 public:
  virtual ~Target() = default;
  virtual std::string_view name() const = 0;

  // Whether plain Conv/ConvTranspose node `n` as it stands runs channels-last
  // on this target: a library takes it (its tensor-core layout), or a
  // generated kernel that also runs channels-last does (the CUDA target's
  // depthwise kernel). The channels-last pass converts only those.
  virtual bool library_takes_conv(const ir::Graph& g, const ir::Node& n) const = 0;

  // For a fused anchor group (node `group` of `g`) that a library takes with
  // only the leading part of its epilogue: how many epilogue ops it absorbs.
  // nullopt when a library takes the whole group, or none of it.
  virtual std::optional<size_t> library_epilogue_ops(const ir::Graph& g,
                                                     ir::NodeId group) const = 0;
  // Why the library's part stops there, where reports should say so (the
  // float8 GEMM's epilogue); else "".
  virtual std::string library_epilogue_stop(const ir::Graph& g, ir::NodeId group) const {
    return "";
  }

  // How kernel `node` (a node of the optimized, split graph) runs, and why.
  virtual Lowering lowering(const ir::Graph& g, ir::NodeId node) const = 0;

  // The kind of kernel a node becomes.
  KernelKind kernel_kind(const ir::Node& n) const { return kernel_kind_of(n); }
};

}  // namespace graphc::target
