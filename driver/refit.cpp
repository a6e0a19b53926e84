#include "driver/refit.h"

#include <fmt/ranges.h>

#include <algorithm>

#include "engine_format/conv_params.h"
#include "engine_format/refit_record.h"

namespace graphc::driver {

Expected<engine::EngineContents> refit_contents(const engine::EngineContents& engine,
                                                engine::Manifest planned) {
  const engine::Manifest& m = engine.manifest;
  RETURN_IF_ERROR(engine::check_refittable(m, "the engine"));
  *planned.mutable_code_modules() = m.code_modules();
  // A tuned build records the algorithm it measured (or found in a timing
  // cache) for each call; a refit keeps the engine's, as the calls are the same.
  for (int i = 0; i < planned.kernels_size() && i < m.kernels_size(); ++i) {
    if (!planned.kernels(i).has_library_call() || !m.kernels(i).has_library_call()) continue;
    engine::LibraryCall* call = planned.mutable_kernels(i)->mutable_library_call();
    const engine::LibraryCall& recorded = m.kernels(i).library_call();
    if (call->algorithm() == recorded.algorithm()) continue;
    call->set_algorithm(recorded.algorithm());
    call->set_algorithm_config(recorded.algorithm_config());
    call->set_tuned_ms(recorded.tuned_ms());
    // A cuDNN conv's descriptor carries its algorithm too, as tuning sets it.
    if (call->library() == "cudnn" && call->op() == "conv") {
      ASSIGN_OR_RETURN(engine::ConvParams p, engine::decode_conv_params(call->params()));
      p.algorithm = static_cast<int32_t>(recorded.algorithm());
      call->set_params(engine::encode_conv_params(p));
    }
  }
  const std::string diff =
      engine::manifest_difference(m, planned, "the engine", "this model's plan");
  if (!diff.empty())
    return invalid_model(
        "the new model compiles to a different engine, so its weights cannot replace the "
        "engine's without compiling: {}. A weight value the optimizer decides by differs (an "
        "attention mask, values beyond float16's range, constants equal in one model only), or "
        "the engine was built by another graphc; rebuild with graphc build",
        diff);
  engine::EngineContents out;
  out.manifest = m;
  out.code = engine.code;
  return out;
}

namespace {

std::string dims_text(const google::protobuf::RepeatedField<int64_t>& dims) {
  if (dims.empty()) return "scalar";
  return fmt::format("{}", fmt::join(dims, "x"));
}

bool same_dims(const engine::InputRange& r) {
  return std::equal(r.min().begin(), r.min().end(), r.max().begin(), r.max().end()) &&
         std::equal(r.min().begin(), r.min().end(), r.opt().begin(), r.opt().end());
}

}  // namespace

std::string recipe_flags(const engine::BuildRecipe& r) {
  std::vector<std::string> flags;
  for (const auto& arch : r.archs()) flags.push_back("--arch " + arch);
  if (r.precision() != "fp32") flags.push_back("--precision " + r.precision());
  if (r.convert_io()) flags.push_back("--convert-io");
  for (const auto& pass : r.disabled_passes()) flags.push_back("--disable-pass " + pass);
  if (r.no_optimize()) flags.push_back("--no-optimize");
  if (r.gemm() != "auto") flags.push_back("--gemm " + r.gemm());
  if (r.conv() != "auto") flags.push_back("--conv " + r.conv());
  if (r.attention() != "auto") flags.push_back("--attention " + r.attention());
  if (r.allow_tf32()) flags.push_back("--allow-tf32");
  if (r.int8_gemm()) flags.push_back("--int8-gemm");
  if (!r.int8_precision().empty()) flags.push_back("--int8-precision " + r.int8_precision());
  // Inputs fixed in every profile as --shape; ranges as profile 0's
  // --min/--opt/--max-shape and one --shape-profile per further profile.
  for (int p = 0; p < r.profiles_size(); ++p)
    for (const auto& in : r.profiles(p).inputs()) {
      const engine::InputRange& range = in.range();
      if (same_dims(range)) {
        if (p == 0)
          flags.push_back(fmt::format("--shape {}:{}", in.name(), dims_text(range.min())));
        continue;
      }
      if (p == 0) {
        flags.push_back(fmt::format("--min-shape {}:{}", in.name(), dims_text(range.min())));
        flags.push_back(fmt::format("--opt-shape {}:{}", in.name(), dims_text(range.opt())));
        flags.push_back(fmt::format("--max-shape {}:{}", in.name(), dims_text(range.max())));
      } else {
        flags.push_back(fmt::format("--shape-profile {}:{}/{}/{}", in.name(),
                                    dims_text(range.min()), dims_text(range.opt()),
                                    dims_text(range.max())));
      }
    }
  return fmt::format("{}", fmt::join(flags, " "));
}

}  // namespace graphc::driver
