#include "driver/engine_build.h"

#include <algorithm>
#include <atomic>
#include <chrono>

#include "emit/plan/gpu_plan.h"
#include "runtime/cuda_driver.h"
#include "runtime/engine_loader.h"
#include "support/fnv.h"
#include "support/version.h"

namespace graphc::driver {

namespace {

engine::Tensor::Location to_manifest(emit::SlotLocation l) {
  switch (l) {
    case emit::SlotLocation::kArena: return engine::Tensor::ARENA;
    case emit::SlotLocation::kWeights: return engine::Tensor::WEIGHTS;
    case emit::SlotLocation::kInput: return engine::Tensor::INPUT;
    case emit::SlotLocation::kOutput: return engine::Tensor::OUTPUT;
  }
  return engine::Tensor::ARENA;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Status check_arch_flag(const std::string& arch) {
  if (engine::parse_sm_arch(arch) >= 0) return emit::check_nvrtc_arch(arch);
  if (arch.size() > 3 && arch.back() == 'a' &&
      engine::parse_sm_arch(arch.substr(0, arch.size() - 1)) >= 0)
    return invalid_argument(
        "arch-specific targets such as '{}' are not supported in engine files yet; use {}", arch,
        arch.substr(0, arch.size() - 1));
  return invalid_argument("expected sm_NN (sm_80, sm_90, ...) or native");
}

Status fill_tensors_and_bindings(const ir::Graph& graph, const emit::GpuPlan& plan,
                                 engine::Manifest& m) {
  for (const auto& s : plan.slots) {
    engine::Tensor* t = m.add_tensors();
    t->set_name(s.name);
    t->set_dtype(static_cast<int32_t>(s.dtype));
    // A varying tensor is described at the range's largest dims (its bytes).
    std::vector<int64_t> shape = s.shape;
    for (size_t d = 0; d < s.dim_sizes.size(); ++d) {
      t->add_dim_sizes(s.dim_sizes[d]);
      if (s.dim_sizes[d] < 0) continue;
      ASSIGN_OR_RETURN(shape[d], evaluate_size_program(
                                     plan.range->sizes[static_cast<size_t>(s.dim_sizes[d])],
                                     plan.range->symbol_max));
    }
    if (!s.dim_sizes.empty() &&
        ir::shape_numel(shape) * static_cast<int64_t>(ir::dtype_size(s.dtype)) != s.bytes)
      return internal_error("tensor '{}': its largest dims {} do not give its planned {} bytes",
                            s.name, ir::shape_to_string(shape), s.bytes);
    for (int64_t d : shape) t->add_shape(d);
    t->set_location(to_manifest(s.location));
    t->set_offset(static_cast<uint64_t>(s.offset));
    t->set_bytes(static_cast<uint64_t>(s.bytes));
  }
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    engine::Binding* b = m.add_inputs();
    b->set_name(graph.value(graph.inputs[i]).name);
    b->set_tensor(plan.inputs[i]);
  }
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    engine::Binding* b = m.add_outputs();
    b->set_name(graph.value(graph.outputs[i]).name);
    b->set_tensor(plan.outputs[i]);
  }
  return Status::ok_status();
}

// The symbols, size programs and each profile's input ranges (an input a
// profile leaves out keeps its shape).
void fill_shape_range(const ir::Graph& graph, const emit::GpuPlan& plan,
                      const std::vector<ShapeProfile>& profiles, engine::Manifest& m) {
  engine::ShapeRange* r = m.mutable_shape_range();
  for (const auto& name : plan.range->symbol_names) r->add_symbols(name);
  for (const auto& p : plan.range->sizes) {
    auto* e = r->add_sizes();
    for (int64_t w : p.code) e->add_code(w);
  }
  for (const auto& profile : profiles) {
    engine::Profile* out = r->add_profiles();
    for (ir::ValueId id : graph.inputs) {
      const ir::Value& v = graph.value(id);
      engine::InputRange* in = out->add_inputs();
      auto it = profile.inputs.find(v.name);
      const ir::Shape& mn = it == profile.inputs.end() ? v.shape : it->second.min;
      const ir::Shape& op = it == profile.inputs.end() ? v.shape : it->second.opt;
      const ir::Shape& mx = it == profile.inputs.end() ? v.shape : it->second.max;
      for (int64_t d : mn) in->add_min(d);
      for (int64_t d : op) in->add_opt(d);
      for (int64_t d : mx) in->add_max(d);
    }
  }
}

void fill_kernels(const emit::GpuPlan& plan, engine::Manifest& m) {
  for (const auto& l : plan.launches) {
    engine::Kernel* k = m.add_kernels();
    k->set_name(l.name);
    k->set_kind(std::string(target::kernel_kind_name(l.kind)));
    for (int32_t a : l.args) k->add_args(a);
    for (const auto& n : l.onnx_nodes) k->add_onnx_nodes(n);
    k->set_flops(static_cast<uint64_t>(l.flops));
    k->set_hbm_bytes(static_cast<uint64_t>(l.hbm_bytes));
    k->set_math(std::string(target::math_name(l.math)));
    if (l.library) {  // no code: the runtime calls the library
      engine::LibraryCall* call = k->mutable_library_call();
      call->set_library(std::string(emit::library_call_library(l.library->op)));
      call->set_op(std::string(emit::library_call_op(l.library->op)));
      call->set_algorithm(l.library->algorithm);
      call->set_workspace_bytes(l.library->workspace_bytes);
      call->set_params(l.library->params);
      for (int32_t size : l.library->sizes) call->add_sizes(size);
      continue;
    }
    if (l.entry.empty()) {  // a device-to-device copy: no code, no launch shape
      k->set_copy(true);
      continue;
    }
    k->set_module_entry(l.entry);
    k->set_module(l.module);
    for (uint32_t g : l.grid) k->add_grid(g);
    for (uint32_t b : l.block) k->add_block(b);
    k->set_shared_mem_bytes(l.shared_bytes);
    if (!l.params.empty()) k->set_params(l.params);
    if (l.loop_body >= 0) k->mutable_loop()->set_body_kernels(static_cast<uint32_t>(l.loop_body));
    for (int32_t s : l.size_block) k->add_size_block(s);
    if (l.grid_x_size >= 0 || l.grid_y_size >= 0 || l.grid_z_size >= 0) {
      k->add_grid_sizes(l.grid_x_size);
      k->add_grid_sizes(l.grid_y_size);
      k->add_grid_sizes(l.grid_z_size);
    }
    if (l.preferred) {  // cuDNN's SDPA per shape; this kernel where cuDNN refuses one
      engine::LibraryCall* call = k->mutable_preferred_call();
      call->set_library(std::string(emit::library_call_library(l.preferred->op)));
      call->set_op(std::string(emit::library_call_op(l.preferred->op)));
      call->set_algorithm(l.preferred->algorithm);
      call->set_workspace_bytes(l.preferred->workspace_bytes);
      call->set_params(l.preferred->params);
      for (int32_t size : l.preferred->sizes) call->add_sizes(size);
    }
  }
}

// Module i is named after its entry point (unique per source), so a cached
// compilation is indistinguishable from a fresh one whatever model it came from.
std::vector<emit::CudaSource> module_sources(const emit::GpuPlan& plan) {
  std::vector<emit::CudaSource> sources(plan.sources.size());
  for (size_t i = 0; i < plan.sources.size(); ++i) sources[i].source = plan.sources[i];
  for (const auto& l : plan.launches)
    if (l.module >= 0 && sources[static_cast<size_t>(l.module)].name.empty())
      sources[static_cast<size_t>(l.module)].name = l.entry;
  for (size_t i = 0; i < sources.size(); ++i)
    if (sources[i].name.empty()) sources[i].name = "module" + std::to_string(i);
  return sources;
}

// The launches that use `module`, for error messages.
std::string kernels_of_module(const emit::GpuPlan& plan, int32_t module) {
  std::string names;
  for (const auto& l : plan.launches)
    if (l.module == module) names += (names.empty() ? "'" : ", '") + l.name + "'";
  return names;
}

}  // namespace

Expected<std::vector<std::string>> resolve_archs(const std::vector<std::string>& flags) {
  if (flags.empty()) return invalid_argument("no target architecture (--arch sm_90 ...)");
  std::vector<std::string> archs;
  for (const auto& flag : flags) {
    if (flag == "native") {
      auto sm = device_sm();
      if (!sm.ok())
        return sm.status().with_context("--arch native needs a GPU (name one, e.g. --arch sm_90)");
      std::string arch = fmt::format("sm_{}", *sm);
      RETURN_IF_ERROR(emit::check_nvrtc_arch(arch).with_context("--arch native"));
      archs.push_back(arch);
      continue;
    }
    RETURN_IF_ERROR(check_arch_flag(flag).with_context(fmt::format("--arch '{}'", flag)));
    archs.push_back(flag);
  }
  std::sort(archs.begin(), archs.end(), [](const std::string& a, const std::string& b) {
    return engine::parse_sm_arch(a) < engine::parse_sm_arch(b);
  });
  archs.erase(std::unique(archs.begin(), archs.end()), archs.end());
  return archs;
}

Expected<engine::EngineContents> build_engine(const ir::Graph& graph, const BuildOptions& options,
                                              BuildStats* stats) {
  ASSIGN_OR_RETURN(StreamedEngine built, build_engine_streamed(graph, options, stats));
  engine::EngineContents out = std::move(built.contents);
  out.weights.resize(static_cast<size_t>(built.weights.bytes));
  RETURN_IF_ERROR(built.weights.fill(0, out.weights.data(), out.weights.size()));
  return out;
}

Expected<StreamedEngine> build_engine_streamed(const ir::Graph& graph, const BuildOptions& options,
                                               BuildStats* stats) {
  if (options.archs.empty()) return invalid_argument("no target architecture (--arch sm_90 ...)");
  for (size_t i = 0; i < options.archs.size(); ++i) {
    const std::string& arch = options.archs[i];
    if (engine::parse_sm_arch(arch) < 0)
      return invalid_argument("architecture '{}' is not of the form sm_NN", arch);
    if (std::find(options.archs.begin(), options.archs.begin() + i, arch) !=
        options.archs.begin() + i)
      return invalid_argument("architecture '{}' is listed twice", arch);
  }
  BuildStats local;
  BuildStats& st = stats ? *stats : local;
  st = BuildStats{};

  if (options.on_phase) options.on_phase("emit");
  auto start = std::chrono::steady_clock::now();
  // The weights stay in the graph's constants: the plan says where each goes
  // and the engine writer copies them chunk by chunk (no packed copy).
  emit::PlanOptions plan_options;
  plan_options.pack_weights = false;
  plan_options.range = options.range;
  if (options.range && options.profiles.empty())
    return invalid_argument("a build for a shape range needs its profiles");
  ASSIGN_OR_RETURN(emit::GpuPlan plan,
                   emit::lower_for_gpu(graph, target::CudaTarget(options.lower), plan_options));
  StreamedEngine result;
  engine::EngineContents& out = result.contents;
  engine::WeightsSource& weights = result.weights;
  engine::Manifest& m = out.manifest;
  m.set_producer(std::string("graphc ") + kVersion);
  m.set_graph_name(graph.name);
  m.set_precision(options.precision);
  RETURN_IF_ERROR(fill_tensors_and_bindings(graph, plan, m));
  if (plan.range) fill_shape_range(graph, plan, options.profiles, m);
  m.set_arena_bytes(static_cast<uint64_t>(plan.arena_bytes));
  m.set_weights_bytes(static_cast<uint64_t>(plan.weights_bytes));
  weights.bytes = static_cast<uint64_t>(plan.weights_bytes);
  weights.fill = [spans = plan.weight_spans](uint64_t offset, char* dst, size_t n) {
    emit::fill_weights(spans, offset, dst, n);
    return Status::ok_status();
  };
  fill_kernels(plan, m);
  st.kernels = plan.launches.size();
  st.modules = plan.sources.size();
  st.compilations = plan.sources.size() * options.archs.size();
  st.emit_seconds = seconds_since(start);
  if (options.refit) {
    engine::Refit* refit = m.mutable_refit();
    *refit = *options.refit;
    refit->clear_module_sources();
    for (const emit::CudaSource& source : module_sources(plan))
      refit->add_module_sources(Fnv1a64().text(source.name).text(source.source).value());
  }
  if (options.tune.enabled()) {
    if (options.on_phase) options.on_phase("tune");
    RETURN_IF_ERROR(tune_library_calls(m, options.tune, &st.tuning));
  }
  if (options.plan_only) return result;

  // Every distinct kernel is its own module, compiled once per arch (CUBIN
  // for exactly that SM and PTX the driver can JIT on newer GPUs), in
  // parallel; the cache makes a rebuild compile only what changed.
  if (options.on_phase) options.on_phase("compile");
  start = std::chrono::steady_clock::now();
  std::atomic<size_t> hits{0}, misses{0};
  emit::CompileOptions copts = options.compile;
  copts.stop_on_error = true;
  copts.on_progress = options.on_compiled;
  copts.on_cache = [&hits, &misses, user = options.compile.on_cache](
                       emit::CacheEvent e, const std::string& name, const std::string& arch) {
    if (e == emit::CacheEvent::kHit) ++hits;
    if (e == emit::CacheEvent::kMiss || e == emit::CacheEvent::kCorrupt) ++misses;
    if (user) user(e, name, arch);
  };
  if (options.on_compiled) options.on_compiled(0, st.compilations);
  const std::vector<emit::CudaSource> sources = module_sources(plan);
  auto compiled = emit::compile_cuda_many(sources, options.archs, copts);
  st.cache_hits = hits;
  st.cache_misses = copts.cache_dir.empty() ? st.compilations : misses.load();
  st.compile_seconds = seconds_since(start);
  for (size_t i = 0; i < compiled.size(); ++i) {
    if (!compiled[i].ok())
      return compiled[i].status().with_context(fmt::format(
          "kernel {} (code module {})", kernels_of_module(plan, static_cast<int32_t>(i)), i));
  }
  // Arch-major, then module order: the code sections of one arch are contiguous.
  for (size_t a = 0; a < options.archs.size(); ++a) {
    const std::string& arch = options.archs[a];
    for (size_t i = 0; i < compiled.size(); ++i) {
      emit::ArchBinary& bin = compiled[i]->binaries.at(a);
      const auto module = static_cast<int32_t>(i);
      engine::CodeModule* cm = m.add_code_modules();
      cm->set_arch(arch);
      cm->set_module(module);
      out.code.push_back({arch, engine::CodeBlob::Kind::kPtx, std::move(bin.ptx), module});
      cm->set_ptx_section(engine::code_section_index(out.code.size() - 1));
      out.code.push_back({arch, engine::CodeBlob::Kind::kCubin,
                          std::string(bin.cubin.begin(), bin.cubin.end()), module});
      cm->set_cubin_section(engine::code_section_index(out.code.size() - 1));
    }
  }
  return result;
}

Expected<int> device_sm() { return runtime::device_compute_capability(0); }

}  // namespace graphc::driver
