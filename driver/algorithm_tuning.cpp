#include "driver/algorithm_tuning.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <map>
#include <tuple>

#include "engine_format/conv_params.h"
#include "engine_format/library_algorithm.h"
#include "engine_format/matmul_params.h"
#include "runtime/cuda_driver.h"
#include "runtime/cudnn.h"

namespace graphc::driver {

namespace {

// ---- cuBLASLt ---------------------------------------------------------------

Expected<TuneOutcome> tune_cublaslt(const TuneRequest& r) {
  if (r.op != "matmul") return unsupported("cublasLt op '{}' has no tuner", r.op);
  ASSIGN_OR_RETURN(engine::MatmulParams p, engine::decode_matmul_params(r.params));
  ASSIGN_OR_RETURN(runtime::MatmulTuning t,
                   runtime::tune_cublaslt_matmul(p, r.workspace_limit, *r.timing));
  TuneOutcome out;
  for (const runtime::MatmulCandidate& c : t.candidates) {
    const std::string algo = engine::describe_cublaslt_algorithm(c.algorithm);
    if (c.status.ok()) {
      ++out.candidates;
      out.details.push_back(fmt::format("#{:<2} {:.4f} ms  {} workspace {} (max |diff| {:.3g})",
                                        c.rank, c.median_ms, algo, c.algorithm.workspace_bytes,
                                        c.max_abs_diff));
    } else {
      out.details.push_back(
          fmt::format("#{:<2} rejected  {}: {}", c.rank, algo, c.status.message()));
    }
  }
  if (t.best < 0) return device_error("no candidate algorithm ran correctly");
  const runtime::MatmulCandidate& best = t.candidates[static_cast<size_t>(t.best)];
  out.best.algorithm = best.algorithm.algo_id;
  out.best.config = engine::encode_cublaslt_algorithm(best.algorithm);
  out.best.ms = best.median_ms;
  out.heuristic_ms = t.candidates.front().median_ms;
  return out;
}

std::string describe_cublaslt(std::string_view op, std::string_view params) {
  auto p = engine::decode_matmul_params(params);
  return p.ok() ? engine::describe_matmul(*p) : std::string(op);
}

// ---- cuDNN ------------------------------------------------------------------

Expected<uint32_t> cudnn_version() {
  ASSIGN_OR_RETURN(const runtime::CudnnApi* api, runtime::load_cudnn());
  return static_cast<uint32_t>(api->cudnnGetVersion());
}

// Every algorithm cuDNN has for the convolution, timed on this GPU as the
// engine runs it (the fused call with its epilogue: its speed depends on the
// algorithm too), the fastest that ran kept. cuDNN has no "first heuristic choice" here to compare
// with: the log shows every candidate instead.
Expected<TuneOutcome> tune_cudnn_conv(const TuneRequest& r) {
  if (r.op != "conv") return unsupported("cudnn op '{}' has no tuner", r.op);
  ASSIGN_OR_RETURN(engine::ConvParams p, engine::decode_conv_params(r.params));
  ASSIGN_OR_RETURN(std::vector<runtime::ConvAlgoTiming> timings,
                   runtime::time_conv_algorithms(p, r.workspace_limit));
  TuneOutcome out;
  const runtime::ConvAlgoTiming* best = nullptr;
  for (const runtime::ConvAlgoTiming& t : timings) {
    if (t.ok) {
      ++out.candidates;
      if (!best || t.ms < best->ms) best = &t;
      out.details.push_back(fmt::format(
          "algo {:<2} {:.4f} ms {} (bare conv {:.4f} ms)  workspace {}  math {}", t.algorithm, t.ms,
          t.fused ? "fused" : "unfused", t.bare_ms, t.workspace_bytes, t.math_type));
    } else {
      out.details.push_back(fmt::format("algo {:<2} rejected: {}", t.algorithm, t.status));
    }
  }
  if (!best) return device_error("no cuDNN algorithm ran for {}", engine::describe_conv(p));
  out.best.algorithm = best->algorithm;
  out.best.config = "";
  out.best.ms = best->ms;
  out.heuristic_ms = best->ms;
  return out;
}

std::string describe_cudnn_conv(std::string_view op, std::string_view params) {
  auto p = engine::decode_conv_params(params);
  return p.ok() ? engine::describe_conv(*p) : std::string(op);
}

// ---- the library table --------------------------------------------------------

const LibraryTuner kTuners[] = {
    {"cublasLt", runtime::cublaslt_version, tune_cublaslt, describe_cublaslt},
    {"cudnn", cudnn_version, tune_cudnn_conv, describe_cudnn_conv},
};

struct CallKey {
  std::string library, op, params;
  uint64_t workspace = 0;
  auto operator<=>(const CallKey&) const = default;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

const LibraryTuner* find_library_tuner(std::string_view library) {
  for (const LibraryTuner& t : kTuners)
    if (t.library == library) return &t;
  return nullptr;
}

Expected<DeviceIdentity> tuning_device() {
  ASSIGN_OR_RETURN(const runtime::DriverApi* cu, runtime::load_driver());
  int count = 0;
  GRAPHC_CU(*cu, cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count < 1) return unsupported("no CUDA device");
  CUdevice dev;
  GRAPHC_CU(*cu, cuDeviceGet(&dev, 0), "cuDeviceGet");
  char name[256] = {};
  GRAPHC_CU(*cu, cuDeviceGetName(name, sizeof name - 1, dev), "cuDeviceGetName");
  int major = 0, minor = 0;
  GRAPHC_CU(*cu, cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
            "compute capability");
  GRAPHC_CU(*cu, cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
            "compute capability");
  return DeviceIdentity{name, static_cast<uint32_t>(major * 10 + minor)};
}

Status tune_library_calls(engine::Manifest& m, const TuneOptions& o, TuneStats* stats) {
  const auto start = std::chrono::steady_clock::now();
  TuneStats local;
  TuneStats& st = stats ? *stats : local;
  st = TuneStats{};
  auto log = [&](TuneLogLevel level, const std::string& text) {
    if (o.log) o.log(level, text);
  };

  // Distinct calls in first-appearance order, each with its kernels.
  std::vector<CallKey> order;
  std::map<CallKey, std::vector<int>> kernels;
  for (int i = 0; i < m.kernels_size(); ++i) {
    if (!m.kernels(i).has_library_call()) continue;
    const engine::LibraryCall& c = m.kernels(i).library_call();
    CallKey key{c.library(), c.op(), c.params(), c.workspace_bytes()};
    auto [it, added] = kernels.try_emplace(key);
    if (added) order.push_back(key);
    it->second.push_back(i);
    ++st.calls;
  }
  st.distinct = order.size();

  std::vector<uint32_t> target_ccs;
  for (const std::string& arch : o.archs)
    if (int sm = engine::parse_sm_arch(arch); sm >= 0)
      target_ccs.push_back(static_cast<uint32_t>(sm));
  DeviceIdentity device;
  if (o.measure && !order.empty()) {
    auto found = tuning_device();
    if (!found.ok()) return found.status().with_context("--tune needs a GPU");
    device = std::move(*found);
  }

  for (const CallKey& call : order) {
    const std::vector<int>& uses = kernels[call];
    const LibraryTuner* tuner = find_library_tuner(call.library);
    std::string what =
        fmt::format("{} {} call '{}'", call.library, call.op, m.kernels(uses[0]).name());
    if (uses.size() > 1) what += fmt::format(" (and {} identical)", uses.size() - 1);
    if (!tuner || (call.library == "cudnn" && call.op != "conv")) {  // no sdpa tuner yet
      ++st.heuristic;
      log(TuneLogLevel::kInfo,
          fmt::format("tune: {}: no tuner for {} yet; keeps the heuristic at load", what,
                      call.library));
      continue;
    }
    what += ": " + tuner->describe(call.op, call.params);
    // A cache entry is untrusted data: it must be a valid record for this call.
    auto usable = [&](const TimingValue& v) {
      Status ok = engine::check_recorded_algorithm(call.library, v.algorithm, v.config, v.ms,
                                                   call.workspace);
      if (ok.ok() && v.algorithm < 0) ok = invalid_argument("no algorithm recorded");
      if (!ok.ok())
        log(TuneLogLevel::kWarning,
            fmt::format("tune: {}: ignoring its timing cache entry ({})", what, ok.message()));
      return ok.ok();
    };
    TimingValue chosen;
    if (o.measure) {
      auto version = tuner->version();
      if (!version.ok()) return version.status().with_context("--tune: " + what);
      const TimingKey key{
          device.name,   device.compute_capability, call.library, *version, call.op, call.params,
          call.workspace};
      const TimingValue* hit = o.cache ? o.cache->find(key) : nullptr;
      if (hit && usable(*hit)) {
        chosen = *hit;
        ++st.cache_hits;
        log(TuneLogLevel::kInfo,
            fmt::format("tune: {}: timing cache hit ({:.4f} ms)", what, hit->ms));
      } else {
        TuneRequest request{call.op, call.params, call.workspace, &o.timing};
        auto outcome = tuner->tune(request);
        if (!outcome.ok()) return outcome.status().with_context("--tune: " + what);
        ++st.timed;
        st.candidates += outcome->candidates;
        log(TuneLogLevel::kInfo,
            fmt::format(
                "tune: {}: {} candidates timed; best {:.4f} ms, heuristic's choice {:.4f} ms", what,
                outcome->candidates, outcome->best.ms, outcome->heuristic_ms));
        for (const std::string& line : outcome->details)
          log(TuneLogLevel::kInfo, "tune:   " + line);
        chosen = outcome->best;
        if (o.cache) {
          o.cache->put(key, chosen);
          ++st.cache_added;
        }
      }
    } else {
      const auto* hit = o.cache ? o.cache->find_for_targets(call.library, call.op, call.params,
                                                            call.workspace, target_ccs)
                                : nullptr;
      if (!hit || !usable(hit->second)) {
        ++st.heuristic;
        log(TuneLogLevel::kInfo,
            fmt::format("tune: {}: not in the timing cache for {}; heuristic at load", what,
                        fmt::join(o.archs, ", ")));
        continue;
      }
      chosen = hit->second;
      ++st.cache_hits;
      log(TuneLogLevel::kInfo,
          fmt::format("tune: {}: from the timing cache ({}, sm_{}, {} {}; {:.4f} ms)", what,
                      hit->first.device, hit->first.compute_capability, call.library,
                      hit->first.library_version, chosen.ms));
    }
    for (int i : uses) {
      engine::LibraryCall* c = m.mutable_kernels(i)->mutable_library_call();
      c->set_algorithm(chosen.algorithm);
      c->set_algorithm_config(chosen.config);
      c->set_tuned_ms(chosen.ms);
      // A cuDNN descriptor carries its algorithm too (the validator wants both
      // equal); the timing cache keeps the untuned bytes as its key.
      if (c->library() == "cudnn") {
        ASSIGN_OR_RETURN(engine::ConvParams p, engine::decode_conv_params(c->params()));
        p.algorithm = static_cast<int32_t>(chosen.algorithm);
        c->set_params(engine::encode_conv_params(p));
      }
    }
  }
  st.seconds = seconds_since(start);
  return Status::ok_status();
}

}  // namespace graphc::driver
