// cuDNN attention execution plans (see cudnn_sdpa.h): the engine
// configuration a call runs (the params' recorded engine, else cuDNN's
// heuristics, mode A then the fallback list), its plan within the workspace
// limit, for a handle or a device described by its properties JSON, and the
// note saying which engine was chosen and why the others were passed over.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cudnn_sdpa.h"
#include "runtime/cudnn_sdpa_internal.h"
#include "runtime/warnings.h"

namespace graphc::runtime {

namespace {

using engine::SdpaParams;

// The note of the last setup this thread made (last_sdpa_setup_note).
thread_local std::string t_last_note;

// What an engine configuration runs: its global index and notes, for the
// setup's note; best effort (an unknown value is -1 / empty).
struct EngineInfo {
  int64_t index = -1;
  std::vector<std::string> notes;
};

EngineInfo engine_info(const CudnnApi& api, cudnnBackendDescriptor_t config) {
  EngineInfo info;
  cudnnBackendDescriptor_t eng = nullptr;
  if (api.cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) !=
      CUDNN_STATUS_SUCCESS)
    return info;
  Desc owner(&api, eng);
  int64_t n = 0;
  if (api.cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                   &eng) != CUDNN_STATUS_SUCCESS)
    return info;
  int64_t index = -1;
  if (api.cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n,
                                   &index) == CUDNN_STATUS_SUCCESS)
    info.index = index;
  cudnnBackendBehaviorNote_t behavior[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT] = {};
  n = 0;
  if (api.cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                   CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &n,
                                   behavior) == CUDNN_STATUS_SUCCESS)
    for (int64_t i = 0; i < n && i < CUDNN_BEHAVIOR_NOTE_TYPE_COUNT; ++i) {
      if (behavior[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION)
        info.notes.push_back("runtime-compiled");
      else if (behavior[i] == CUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API)
        info.notes.push_back("native CUDA graph");
    }
  cudnnBackendNumericalNote_t numeric[CUDNN_NUMERICAL_NOTE_TYPE_COUNT] = {};
  n = 0;
  if (api.cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                   CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n,
                                   numeric) == CUDNN_STATUS_SUCCESS)
    for (int64_t i = 0; i < n && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; ++i) {
      if (numeric[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC)
        info.notes.push_back("non-deterministic");
      else if (numeric[i] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)
        info.notes.push_back("reduced-precision reduction");
    }
  return info;
}

}  // namespace

// A plan for `config` on `handle` within `limit` bytes of workspace, or why not.
Expected<PlanTry> try_plan(const CudnnApi& api, const Target& target,
                           cudnnBackendDescriptor_t config, uint64_t limit,
                           const std::string& what) {
  drain_last_error(api);
  cudnnBackendDescriptor_t d = nullptr;
  RETURN_IF_ERROR(sdpa_status(
      api, api.cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &d),
      what + ": cudnnBackendCreateDescriptor (execution plan)"));
  PlanTry out;
  out.plan = Desc(&api, d);
  if (target.handle)
    RETURN_IF_ERROR(
        sdpa_status(api,
                    api.cudnnBackendSetAttribute(d, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                                                 CUDNN_TYPE_HANDLE, 1, &target.handle),
                    what + ": cudnnBackendSetAttribute(CUDNN_ATTR_EXECUTION_PLAN_HANDLE)"));
  else
    RETURN_IF_ERROR(
        sdpa_status(api,
                    api.cudnnBackendSetAttribute(d, CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP,
                                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &target.device),
                    what + ": cudnnBackendSetAttribute(CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP)"));
  RETURN_IF_ERROR(
      sdpa_status(api,
                  api.cudnnBackendSetAttribute(d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &config),
                  what + ": cudnnBackendSetAttribute(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG)"));
  RETURN_IF_ERROR(sdpa_status(api, api.cudnnBackendFinalize(d),
                              what + ": execution plan cudnnBackendFinalize"));
  int64_t n = 0, bytes = 0;
  RETURN_IF_ERROR(
      sdpa_status(api,
                  api.cudnnBackendGetAttribute(d, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                               CUDNN_TYPE_INT64, 1, &n, &bytes),
                  what + ": cudnnBackendGetAttribute(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE)"));
  if (bytes < 0) return internal_error("{}: cuDNN reports {} bytes of workspace", what, bytes);
  out.workspace = static_cast<uint64_t>(bytes);
  if (out.workspace > limit)
    return unsupported("{}: needs {} bytes of workspace, the call allows {}", what, bytes, limit);
  return out;
}

namespace {

// The heuristics' engine configurations for the graph in `mode`, best first.
// With none, `why_none` gets cuDNN's account (each engine's refusal in its
// support checks), the most telling message when cuDNN takes no part of a call.
Expected<std::vector<Desc>> heuristic_configs(const CudnnApi& api, const Target& target,
                                              cudnnBackendDescriptor_t graph,
                                              cudnnBackendHeurMode_t mode, const std::string& what,
                                              std::string* why_none) {
  drain_last_error(api);
  cudnnBackendDescriptor_t h = nullptr;
  RETURN_IF_ERROR(
      sdpa_status(api, api.cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &h),
                  what + ": cudnnBackendCreateDescriptor"));
  Desc heur(&api, h);
  RETURN_IF_ERROR(
      sdpa_status(api,
                  api.cudnnBackendSetAttribute(h, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph),
                  what + ": cudnnBackendSetAttribute(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH)"));
  RETURN_IF_ERROR(sdpa_status(
      api,
      api.cudnnBackendSetAttribute(h, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode),
      what + ": cudnnBackendSetAttribute(CUDNN_ATTR_ENGINEHEUR_MODE)"));
  if (!target.handle)
    RETURN_IF_ERROR(
        sdpa_status(api,
                    api.cudnnBackendSetAttribute(h, CUDNN_ATTR_ENGINEHEUR_DEVICEPROP,
                                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &target.device),
                    what + ": cudnnBackendSetAttribute(CUDNN_ATTR_ENGINEHEUR_DEVICEPROP)"));
  RETURN_IF_ERROR(sdpa_status(api, api.cudnnBackendFinalize(h), what + ": cudnnBackendFinalize"));
  int64_t count = 0;
  RETURN_IF_ERROR(
      sdpa_status(api,
                  api.cudnnBackendGetAttribute(h, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
                  what + ": cudnnBackendGetAttribute(CUDNN_ATTR_ENGINEHEUR_RESULTS, count)"));
  std::vector<Desc> configs;
  if (count <= 0) {
    *why_none = take_last_error(api, 3000);
    return configs;
  }
  count = std::min<int64_t>(count, 64);
  std::vector<cudnnBackendDescriptor_t> raw(static_cast<size_t>(count), nullptr);
  for (auto& r : raw) {
    RETURN_IF_ERROR(
        sdpa_status(api, api.cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &r),
                    what + ": cudnnBackendCreateDescriptor (engine config)"));
    configs.emplace_back(&api, r);
  }
  int64_t got = 0;
  RETURN_IF_ERROR(sdpa_status(
      api,
      api.cudnnBackendGetAttribute(h, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                   count, &got, raw.data()),
      what + ": cudnnBackendGetAttribute(CUDNN_ATTR_ENGINEHEUR_RESULTS)"));
  configs.resize(static_cast<size_t>(std::clamp<int64_t>(got, 0, count)));
  // cuDNN drops the configurations that fail its support checks here.
  if (configs.empty()) *why_none = take_last_error(api, 3000);
  return configs;
}

std::string engine_text(const EngineInfo& info) {
  std::string out = info.index >= 0 ? fmt::format("engine {}", info.index) : "engine ?";
  if (!info.notes.empty()) out += fmt::format(" ({})", fmt::join(info.notes, ", "));
  return out;
}

}  // namespace

namespace {

Expected<std::unique_ptr<SdpaSetup>> setup_for(const CudnnApi& api, const Target& target,
                                               const SdpaParams& p, uint64_t workspace_limit) {
  if (!target.handle && !target.device)
    return internal_error("a cuDNN attention plan needs a handle or a device description");
  if (std::string why = engine::sdpa_cudnn_refusal(p); !why.empty()) return unsupported("{}", why);
  auto s = std::make_unique<SdpaSetup>();
  s->params = p;
  auto plan = std::make_shared<SdpaPlan>(api);
  RETURN_IF_ERROR(build_graph(api, target.handle, p, *plan));
  const size_t version = api.cudnnGetVersion();
  std::vector<std::string> tried;
  auto accept = [&](Desc config, PlanTry made, const std::string& how) {
    const EngineInfo info = engine_info(api, config.get());
    plan->config = std::move(config);
    plan->plan = std::move(made.plan);
    s->workspace_bytes = made.workspace;
    s->engine_index = info.index;
    s->note = fmt::format("cuDNN {}: {} ({}), {} B workspace", version, engine_text(info), how,
                          made.workspace);
    if (!tried.empty()) s->note += fmt::format("; passed over: {}", fmt::join(tried, "; "));
    t_last_note = s->note;
  };
  if (p.engine >= 0) {
    auto config = recorded_config(api, target, *plan, p.engine);
    Status why = config.status();
    if (config.ok()) {
      auto made = try_plan(api, target, config->get(), workspace_limit,
                           fmt::format("recorded engine {}", p.engine));
      if (made.ok()) {
        s->recorded = true;
        accept(std::move(*config), std::move(*made), "recorded");
        s->plan = std::move(plan);
        return s;
      }
      why = made.status();
    }
    tried.push_back(why.message());
    warn(
        fmt::format("cuDNN attention: the recorded engine {} cannot run here ({}); using cuDNN's "
                    "heuristics",
                    p.engine, why.message()));
  }
  for (auto [mode, mode_name] : {std::pair{CUDNN_HEUR_MODE_A, "heuristic mode A"},
                                 {CUDNN_HEUR_MODE_FALLBACK, "fallback list"}}) {
    std::string why_none;
    auto configs = heuristic_configs(api, target, plan->graph, mode, mode_name, &why_none);
    if (!configs.ok()) {
      tried.push_back(configs.status().message());
      continue;
    }
    if (configs->empty())
      tried.push_back(fmt::format("{}: no engine configuration{}", mode_name,
                                  why_none.empty() ? "" : " (cuDNN: " + why_none + ")"));
    for (size_t i = 0; i < configs->size(); ++i) {
      const std::string what =
          fmt::format("{} candidate {} of {} ({})", mode_name, i + 1, configs->size(),
                      engine_text(engine_info(api, (*configs)[i].get())));
      auto made = try_plan(api, target, (*configs)[i].get(), workspace_limit, what);
      if (!made.ok()) {
        tried.push_back(made.status().message());
        continue;
      }
      accept(std::move((*configs)[i]), std::move(*made),
             fmt::format("{}, candidate {} of {}", mode_name, i + 1, configs->size()));
      s->plan = std::move(plan);
      return s;
    }
  }
  t_last_note = "no plan";
  return unsupported(
      "cuDNN {} has no execution plan for {} within {} bytes of workspace: {}", version,
      engine::describe_sdpa(p), workspace_limit,
      tried.empty() ? std::string("no candidates") : fmt::format("{}", fmt::join(tried, "; ")));
}

}  // namespace

std::string last_sdpa_setup_note() { return t_last_note; }

Expected<std::unique_ptr<SdpaSetup>> make_sdpa_setup(const CudnnApi& api, cudnnHandle_t handle,
                                                     const SdpaParams& p,
                                                     uint64_t workspace_limit) {
  if (!handle) return internal_error("make_sdpa_setup needs a cuDNN handle");
  return setup_for(api, Target{handle, nullptr}, p, workspace_limit);
}

Expected<std::string> plan_sdpa_for_device(const CudnnApi& api, const SdpaParams& p,
                                           std::string_view device_json, uint64_t workspace_limit) {
  if (api.cudnnGetVersion() < 90800)
    return unsupported("cuDNN {} cannot describe a device without one (needs 9.8)",
                       api.cudnnGetVersion());
  cudnnBackendDescriptor_t d = nullptr;
  RETURN_IF_ERROR(
      sdpa_status(api, api.cudnnBackendCreateDescriptor(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, &d),
                  "device properties: cudnnBackendCreateDescriptor"));
  Desc device(&api, d);
  RETURN_IF_ERROR(sdpa_status(
      api,
      api.cudnnBackendSetAttribute(d, CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
                                   static_cast<int64_t>(device_json.size()), device_json.data()),
      "device properties: cudnnBackendSetAttribute(CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION)"));
  RETURN_IF_ERROR(
      sdpa_status(api, api.cudnnBackendFinalize(d), "device properties: cudnnBackendFinalize"));
  ASSIGN_OR_RETURN(auto setup, setup_for(api, Target{nullptr, d}, p, workspace_limit));
  return setup->note;
}

}  // namespace graphc::runtime
