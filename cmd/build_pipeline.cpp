#include "cmd/build_pipeline.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "cmd/build_recipe.h"
#include "driver/load_model.h"
#include "driver/model_structure.h"
#include "driver/range_graph.h"
#include "optimizer/pass.h"

namespace graphc::cli {

namespace {

namespace fs = std::filesystem;

// --arch as given, else this machine's GPU ("native"); without a GPU the
// error says how to name one.
Expected<std::vector<std::string>> target_archs(const std::vector<std::string>& flags) {
  if (!flags.empty()) return driver::resolve_archs(flags);
  if (auto sm = driver::device_sm(); !sm.ok())
    return invalid_argument(
        "no --arch given and no GPU here to build for ({}); name the GPU architecture, e.g. "
        "--arch sm_90 (H100), --arch sm_80 (A100) or --arch sm_89 (L4, RTX 40xx); --arch is "
        "repeatable",
        sm.status().message());
  return driver::resolve_archs({"native"});
}

void log(const BuildHooks& hooks, driver::TuneLogLevel level, const std::string& text) {
  if (hooks.log) hooks.log(level, text);
}

// Profiles that give a shape range: the model imported with its symbolic dims
// unbound, each profile checked against it and over its whole range, then
// typed at the first profile's opt shapes and optimized for the range that
// bounds them all (driver::optimize_for_range). What cannot follow a range
// yet is refused by the lowering, naming the kernel.
Expected<driver::RangeGraph> range_graph(const BuildFlags& f,
                                         const std::vector<driver::ShapeProfile>& profiles,
                                         const optimizer::PassContext& pass_ctx,
                                         const driver::BeforePasses& before_passes) {
  driver::LoadOptions load;
  load.infer = false;
  auto imported = f.model_bytes.empty() ? driver::load_model(f.model, load)
                                        : driver::load_model_bytes(f.model_bytes, f.model, load);
  if (!imported.ok()) return imported.status();
  for (size_t i = 0; i < profiles.size(); ++i)
    RETURN_IF_ERROR(driver::check_profile_over_range(*imported, profiles[i], i).with_context(f.model));
  const driver::ShapeProfile bounds = driver::bounding_profile(profiles);
  auto r =
      driver::optimize_for_range(*imported, bounds, 0, pass_ctx, !f.opt.no_optimize, before_passes);
  if (!r.ok()) return r.status().with_context(f.model);
  return r;
}

}  // namespace

Status check_output_path(const std::string& model, const std::string& output) {
  if (output.empty()) return invalid_argument("-o: the engine path is empty");
  std::error_code ec;
  fs::path target(output);
  if (fs::is_directory(target, ec))
    return io_error("cannot write engine '{}': it is a folder", output);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::exists(dir, ec))
    return io_error("cannot write engine '{}': folder '{}' does not exist", output, dir.string());
  if (!fs::is_directory(dir, ec))
    return io_error("cannot write engine '{}': '{}' is not a folder", output, dir.string());
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return io_error("cannot write engine '{}': folder '{}': {}", output, dir.string(),
                    std::strerror(errno));
  if (fs::equivalent(model, target, ec))
    return invalid_argument("-o '{}' is the model itself; refusing to overwrite it", output);
  return Status::ok_status();
}

Expected<BuiltEngine> build_engine_from_flags(const BuildFlags& f, const BuildHooks& hooks) {
  auto phase = [&](std::string_view p) {
    if (hooks.on_phase) hooks.on_phase(p);
  };
  ASSIGN_OR_RETURN(auto warnings, check_trtexec_flags(f.trtexec));
  for (const auto& w : warnings) log(hooks, driver::TuneLogLevel::kWarning, w);
  BuiltEngine out;
  if (f.refit_of && f.refit_of->recipe().archs().empty())
    return invalid_argument("the engine's refit record names no architecture");
  ASSIGN_OR_RETURN(out.archs, f.refit_of ? driver::resolve_archs(recipe_archs(f.refit_of->recipe()))
                                         : target_archs(f.archs));
  if (f.jobs < 0) return invalid_argument("--jobs must be 0 (every core) or more");
  ASSIGN_OR_RETURN(auto pass_ctx, make_pass_context(f.opt));
  using Profiles = std::vector<driver::ShapeProfile>;
  ASSIGN_OR_RETURN(Profiles profiles,
                   f.refit_of ? Expected<Profiles>(recipe_profiles(f.refit_of->recipe()))
                              : parse_shape_profiles(f.shapes));
  if (!f.output.empty()) RETURN_IF_ERROR(check_output_path(f.model, f.output));
  // --tune times on this machine's GPU: without one, stop before any work.
  if (f.tune) {
    if (auto gpu = driver::tuning_device(); !gpu.ok())
      return gpu.status().with_context(
          "--tune needs a GPU (use --timing-cache FILE alone to build from timings made on a GPU "
          "machine)");
  }
  if (!f.timing_cache.empty()) {
    out.timing_cache = driver::load_timing_cache(f.timing_cache);
    if (!out.timing_cache.warning.empty())
      log(hooks, driver::TuneLogLevel::kWarning, out.timing_cache.warning);
  }

  // One target for the passes (channels-last, split-library-epilogues) and
  // the emitter, so both take the same library decisions; tiles fit the
  // oldest target GPU (the architectures are sorted).
  ASSIGN_OR_RETURN(auto lower, make_cuda_options(f.lowering, engine::parse_sm_arch(out.archs.front())));
  lower.gemm.int8 = pass_ctx.int8_gemm;  // --int8-gemm: cuBLASLt may take the int8 GEMMs
  pass_ctx.target = std::make_shared<target::CudaTarget>(lower);

  // The record a refit needs: the model's structure before any pass (checked
  // against the engine's when this is a refit) and the options of this build.
  engine::Refit refit;
  *refit.mutable_recipe() = record_recipe(f, out.archs, profiles);
  auto before_passes = [&](const ir::Graph& typed) -> Status {
    RETURN_IF_ERROR(driver::describe_structure(typed, refit));
    if (f.refit_of) RETURN_IF_ERROR(driver::compare_structure(*f.refit_of, refit, typed));
    return Status::ok_status();
  };

  phase("import");
  const auto shapes = driver::single_shape(profiles);
  Expected<ir::Graph> graph = invalid_argument("no graph");
  if (shapes) {
    driver::LoadOptions load;
    load.input_shapes = *shapes;
    graph = f.model_bytes.empty() ? driver::load_model(f.model, load)
                                  : driver::load_model_bytes(f.model_bytes, f.model, load);
    if (!graph.ok()) return graph.status();
    if (Status st = before_passes(*graph); !st.ok()) return st.with_context(f.model);
    if (!f.opt.no_optimize) {
      phase("optimize");
      Status st = optimizer::run_passes(*graph, pass_ctx);
      if (!st.ok()) return st.with_context(f.model);
    }
  } else {
    phase("optimize");
    ASSIGN_OR_RETURN(driver::RangeGraph r, range_graph(f, profiles, pass_ctx, before_passes));
    out.range = std::make_unique<ir::SymbolicShapes>(std::move(r.symbolic));
    graph = std::move(r.optimized);
    out.profiles = profiles;
  }

  driver::BuildOptions opts;
  opts.range = out.range.get();
  opts.profiles = out.profiles;
  opts.lower = lower;
  opts.archs = out.archs;
  opts.precision = precision_name(f.opt);
  out.cache_dir = f.no_cache ? "" : emit::default_cache_dir();
  opts.compile.cache_dir = out.cache_dir;
  opts.compile.jobs = f.jobs;
  opts.compile.on_cache = [&](emit::CacheEvent e, const std::string& name,
                              const std::string& arch) {
    if (e == emit::CacheEvent::kCorrupt)
      log(hooks, driver::TuneLogLevel::kWarning,
          fmt::format("NVRTC cache entry of {} ({}) is damaged; recompiling", name, arch));
    else if (e != emit::CacheEvent::kStored)
      log(hooks, driver::TuneLogLevel::kDebug,
          fmt::format("NVRTC cache {} {} ({})", e == emit::CacheEvent::kHit ? "hit" : "miss",
                      name, arch));
  };
  opts.refit = std::move(refit);
  opts.plan_only = f.refit_of != nullptr;  // a refit keeps the engine's code
  opts.tune.measure = f.tune;
  opts.tune.cache = f.timing_cache.empty() ? nullptr : &out.timing_cache.cache;
  opts.tune.archs = out.archs;
  opts.tune.log = hooks.log;
  opts.on_phase = hooks.on_phase;
  opts.on_compiled = hooks.on_compiled;
  out.tuning = opts.tune.enabled();
  if (f.stream_weights) {
    out.graph = std::make_unique<ir::Graph>(std::move(*graph));
    auto built = driver::build_engine_streamed(*out.graph, opts, &out.stats);
    if (!built.ok()) return built.status().with_context(f.model);
    out.contents = std::move(built->contents);
    out.weights = std::move(built->weights);
    return out;
  }
  auto contents = driver::build_engine(*graph, opts, &out.stats);
  if (!contents.ok()) return contents.status().with_context(f.model);
  out.contents = std::move(*contents);
  return out;
}

Status write_back_timing_cache(const BuildFlags& f, const BuiltEngine& built, bool* written) {
  *written = false;
  if (f.timing_cache.empty()) return Status::ok_status();
  // New timings (or a damaged file to replace) are written back atomically.
  if (built.stats.tuning.cache_added == 0 && !(f.tune && !built.timing_cache.warning.empty()))
    return Status::ok_status();
  Status st = write_file_atomic(f.timing_cache, built.timing_cache.cache.serialize());
  if (!st.ok()) return st.with_context("writing the timing cache");
  *written = true;
  return Status::ok_status();
}

}  // namespace graphc::cli
