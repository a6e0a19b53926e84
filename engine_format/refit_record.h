// The refit record (Manifest.refit, format 5): its validation as untrusted
// input, and the comparison a refit makes between two manifests, which must
// be equal but for the weights' bytes (which the manifest does not hold).
// `graphc refit` (driver/refit.h) and Engine::refit_weights (runtime/) both
// use it, so the CLI and the runtime refuse the same things with the same words.
#pragma once

#include <string>
#include <string_view>

#include "engine_format/engine_file.h"

namespace graphc::engine {

// The record against the rest of the manifest: one source hash per code
// module, well-formed archs, ranks within limits. OK when there is none.
Status validate_refit_record(const Manifest& manifest);

// "" when `a` and `b` are equal; else the first difference, as the field's
// path, both values and where it is ("kernels[3].grid[0] (kernel 3
// 'fused_gemm/fc1', ONNX nodes MatMul_1, Add_2): 64 in A, 128 in B"), with
// `a_label` and `b_label` naming the two sides.
std::string manifest_difference(const Manifest& a, const Manifest& b, std::string_view a_label,
                                std::string_view b_label);

// Why a refit of `engine` is refused before anything is compared: it has no
// refit record (built before refit support, or not by graphc build). OK when
// it has one. `what` names the engine in the message.
Status check_refittable(const Manifest& engine, std::string_view what);

// "0123456789abcdef": a structure hash as `graphc inspect` prints it.
std::string structure_hash_text(uint64_t hash);

}  // namespace graphc::engine
