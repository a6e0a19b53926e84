// The last step of `graphc refit`: the new model has been imported, checked
// against the engine's structure (driver/model_structure.h) and planned
// with the engine's recorded build options, without compiling. The engine's
// code can carry the new weights only when that plan is the engine's exactly;
// then the engine's manifest and code are written with the plan's weights,
// which is what a fresh build of the new model writes.
#pragma once

#include "engine_format/engine_file.h"

namespace graphc::driver {

// `engine`: the engine's manifest and code (its weights are not needed).
// `planned`: the manifest of the new model's plan (BuildOptions::compile off),
// which has no code modules. What a plan cannot give is taken from the
// engine before comparing: its code modules and the algorithms its library
// calls recorded (graphc build --tune or a timing cache). Any other
// difference is an error naming the field, both values and the kernel or
// tensor: the new weights changed what is compiled (a value the optimizer
// decides by) and the engine must be rebuilt.
Expected<engine::EngineContents> refit_contents(const engine::EngineContents& engine,
                                                engine::Manifest planned);

// The graphc build flags a recipe records, as one line for reports:
// "--arch sm_90 --precision fp16 --shape x:2x16x64" (defaults left out).
std::string recipe_flags(const engine::BuildRecipe& recipe);

}  // namespace graphc::driver
