#include "cmd/refit_pipeline.h"

#include "cmd/build_recipe.h"
#include "driver/refit.h"
#include "engine_format/refit_record.h"

namespace graphc::cli {

Expected<RefitEngine> refit_engine_from_files(const RefitFlags& f, const BuildHooks& hooks) {
  if (f.model.empty()) return invalid_argument("no model to take the new weights from");
  if (!f.output.empty()) RETURN_IF_ERROR(check_output_path(f.model, f.output));
  ASSIGN_OR_RETURN(std::unique_ptr<engine::EngineFile> file, engine::EngineFile::open(f.engine));
  const engine::Manifest& m = file->contents().manifest;
  RETURN_IF_ERROR(engine::check_refittable(m, fmt::format("engine '{}'", f.engine)));

  BuildFlags build = flags_from_recipe(m.refit().recipe());
  build.model = f.model;
  build.stream_weights = true;
  build.refit_of = &m.refit();
  auto built = build_engine_from_flags(build, hooks);
  if (!built.ok())
    return built.status().with_context(fmt::format("refitting engine '{}'", f.engine));
  auto contents = driver::refit_contents(file->contents(), std::move(built->contents.manifest));
  if (!contents.ok())
    return contents.status().with_context(
        fmt::format("refitting engine '{}' with '{}'", f.engine, f.model));
  RefitEngine out;
  out.contents = std::move(*contents);
  out.graph = std::move(built->graph);
  out.weights = std::move(*built->weights);
  out.structure_hash = engine::structure_hash_text(m.refit().structure_hash());
  return out;
}

}  // namespace graphc::cli
