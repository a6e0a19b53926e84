// Small pieces every CUDA source generator shares: identifiers from node
// names, content hashes for entry names, and constants embedded in the source.
#pragma once

#include <cstdint>
#include <string>

#include "ir/tensor.h"

namespace graphc::emit {

// `s` with every character outside [A-Za-z0-9] replaced by '_', cut to `max_len`.
std::string sanitize(const std::string& s, size_t max_len);
// FNV-1a 64-bit hash (entry names carry the hash of their source).
uint64_t fnv1a(const std::string& s);
// The entry name of a kernel: `<family>_<hash of its code>`. The hash skips
// the source's first line (the comment naming the node), so identical kernels
// of repeated layers get one name and share one code module.
std::string kernel_entry_name(const std::string& family, const std::string& source);
// The tensor as a file-scope `__device__ const` array of its storage bits, so
// non-finite values need no special literals.
std::string constant_array(const std::string& name, const ir::Tensor& t);
// Element `idx` of an embedded constant array, converted to the compute type.
std::string constant_load(const std::string& name, ir::DType t, const std::string& idx);
// A one-element tensor as a literal of its compute type.
std::string scalar_literal(const ir::Tensor& t);

}  // namespace graphc::emit
