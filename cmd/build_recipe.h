// The build options an engine records for `graphc refit` (engine::BuildRecipe
// in Manifest.refit), from the flags graphc build took, and back: the flags
// that run the same pipeline again. Only what decides the engine is
// recorded; diagnostics (--dump-after, --verify-after-all), the NVRTC cache
// and jobs are not. Library algorithms chosen by --tune or a timing cache
// are in the engine's library calls, which a refit keeps.
#pragma once

#include <vector>

#include "cmd/build_pipeline.h"
#include "engine_format/engine_file.h"

namespace graphc::cli {

// `archs` as resolved (sorted sm_NN), `profiles` as parsed from the shape flags.
engine::BuildRecipe record_recipe(const BuildFlags& f, const std::vector<std::string>& archs,
                                  const std::vector<driver::ShapeProfile>& profiles);

// Flags that give `recipe` back (record_recipe of them equals it), without
// a model or output; the archs and profiles come from recipe_archs and
// recipe_profiles.
BuildFlags flags_from_recipe(const engine::BuildRecipe& recipe);
std::vector<std::string> recipe_archs(const engine::BuildRecipe& recipe);
std::vector<driver::ShapeProfile> recipe_profiles(const engine::BuildRecipe& recipe);

}  // namespace graphc::cli
