// cuDNN attention over a shape range (see EngineSdpas in cudnn_sdpa.h): the
// preferred calls' plans at the profiles' opt and corner shapes at load, the
// plan of any other shape from its first use on (on the planning thread, or
// at once with GRAPHC_SDPA_SYNC_PLANS=1; kept in BackgroundPlans), and each
// context's eager first run of a plan before a capture records it.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cudnn_sdpa.h"
#include "runtime/shape_state.h"
#include "runtime/warnings.h"

namespace graphc::runtime {

using engine::SdpaParams;

// A static plan for this shape alone. (Plans of one attention structure at
// several shapes sharing a cuDNN kernel cache, with dynamic shapes enabled,
// gave wrong results on cuDNN 9 on an H100 at all but the first shape.)
Expected<std::shared_ptr<const SdpaSetup>> EngineSdpas::make_at(cudnnHandle_t handle,
                                                                const SdpaParams& at,
                                                                uint64_t limit) const {
  ASSIGN_OR_RETURN(auto made, make_sdpa_setup(*api_, handle, at, limit));
  return std::shared_ptr<const SdpaSetup>(std::move(made));
}

Status EngineSdpas::create_preferred(const Executable& exe) {
  preferred_.resize(exe.launches.size());
  for (size_t i = 0; i < exe.launches.size(); ++i) {
    const KernelLaunch* k = exe.launches[i].kernel();
    if (!k || !k->preferred_sdpa) continue;
    std::vector<int64_t> bytes;
    for (int32_t slot : exe.launches[i].args) bytes.push_back(exe.tensors[static_cast<size_t>(slot)].bytes);
    preferred_[i] = std::move(bytes);
  }
  if (!exe.shape_ranges) return internal_error("preferred attention calls without shape ranges");
  // For tests and users who would rather stall once than run the kernel
  // while a new shape's plan is built.
  const char* sync = std::getenv("GRAPHC_SDPA_SYNC_PLANS");
  sync_plans_ = sync && std::string(sync) == "1";
  if (const char* choice = std::getenv("GRAPHC_SDPA_CHOICE")) {
    const std::string c = choice;
    if (c == "cudnn")
      fixed_pick_ = Pick::kCudnn;
    else if (c == "kernel")
      fixed_pick_ = Pick::kKernel;
    else if (c != "measure")
      warn(fmt::format("GRAPHC_SDPA_CHOICE is '{}' (not measure, cudnn or kernel): measuring", c));
  }
  // The plans at each profile's opt, least and largest shapes: the workspace
  // is what they need (within each call's limit), and the opt shape's first
  // run (the shape an application runs most) builds nothing.
  ShapeState shapes(exe);
  std::vector<std::string> names;
  for (size_t i = 0; i < exe.inputs.size(); ++i)
    names.push_back(i < exe.input_names.size() ? exe.input_names[i]
                                               : exe.tensors[static_cast<size_t>(exe.inputs[i])].name);
  const ShapeRanges& r = *exe.shape_ranges;
  for (size_t p = 0; p < r.profiles.size(); ++p) {
    for (int corner = 0; corner < 3; ++corner) {  // opt, least, largest
      RETURN_IF_ERROR(shapes.set_profile(static_cast<int>(p)));
      for (size_t i = 0; corner > 0 && i < exe.inputs.size(); ++i) {
        const auto& in = r.profiles[p][i];
        RETURN_IF_ERROR(shapes.set_input_shape(static_cast<int>(i), names[i],
                                               corner == 1 ? in.min : in.max));
      }
      RETURN_IF_ERROR(shapes.resolve(names).with_context(
          fmt::format("cuDNN attention at shape profile {}'s {} shapes", p,
                      corner == 0 ? "opt" : corner == 1 ? "least" : "largest")));
      for (size_t i = 0; i < exe.launches.size(); ++i) {
        if (!preferred_[i]) continue;
        ASSIGN_OR_RETURN(const SdpaParams at, shapes.preferred_sdpa_params(i));
        const uint64_t limit = exe.launches[i].kernel()->preferred_sdpa->workspace_bytes;
        bool fresh = false;
        ASSIGN_OR_RETURN(const auto* entry,
                         plans_->build_now(engine::encode_sdpa_params(at),
                                           [&] { return make_at(handle_, at, limit); }, &fresh));
        if (entry->value)
          workspace_bytes_ = std::max(workspace_bytes_, entry->value->workspace_bytes);
        else if (fresh)
          warn(fmt::format("cuDNN attention (launch {} '{}'): cuDNN refuses {} ({}); the "
                           "generated kernel runs there",
                           i, exe.launches[i].label(), engine::describe_sdpa(at), entry->refusal));
      }
    }
  }
  return Status::ok_status();
}

Expected<EngineSdpas::At> EngineSdpas::setup_at(size_t launch, const SdpaParams& at) const {
  if (!prefers(launch)) return At{};  // no cuDNN here: the kernel runs
  // The arena and bindings hold each tensor at the range's largest shape;
  // a shape's call must stay inside them (the shape range's validation
  // checked the corners, this checks every shape).
  const std::vector<int64_t>& bytes = *preferred_[launch];
  for (const engine::SdpaOperand& o : engine::sdpa_operands(at)) {
    const int64_t elem = o.dtype == 6 ? 4 : 2;
    if (o.arg < 0 || static_cast<size_t>(o.arg) >= bytes.size() || o.elements < 0 ||
        o.elements > bytes[static_cast<size_t>(o.arg)] / elem)
      return out_of_range("cuDNN attention (launch {}): {} reaches {} elements at this shape, "
                          "past its tensor's {} bytes",
                          launch, o.role, o.elements,
                          o.arg >= 0 && static_cast<size_t>(o.arg) < bytes.size()
                              ? bytes[static_cast<size_t>(o.arg)]
                              : 0);
  }
  const std::string key = engine::encode_sdpa_params(at);
  auto refused = [launch, at](const std::string& why) {
    warn(fmt::format("cuDNN attention (launch {}): cuDNN refuses {} ({}); the generated kernel "
                     "runs at this shape",
                     launch, engine::describe_sdpa(at), why));
  };
  if (sync_plans_) {
    bool fresh = false;
    ASSIGN_OR_RETURN(const auto* entry,
                     plans_->build_now(key, [&] { return make_at(handle_, at, workspace_bytes_); },
                                       &fresh));
    if (!entry->value && fresh) refused(entry->refusal);
    return At{entry->value.get(), false};
  }
  // Off the critical path: the worker builds it, the kernel runs meanwhile.
  const auto* entry = plans_->find_or_queue(key, [this, launch, at, refused] {
    auto made = make_at(worker_handle_, at, workspace_bytes_);
    if (made.ok()) return made;
    if (made.status().code() == ErrorCode::kUnsupported)
      refused(made.status().message());
    else  // no caller to return it to: the shape keeps its kernel
      warn(fmt::format("cuDNN attention (launch {}): planning {} failed ({}); the generated "
                       "kernel runs at this shape",
                       launch, engine::describe_sdpa(at), made.status().message()));
    return made;
  });
  if (!entry) return At{nullptr, true};
  return At{entry->value.get(), false};
}

EngineSdpas::Pick EngineSdpas::pick(const SdpaSetup* setup) const {
  if (fixed_pick_ != Pick::kUnknown) return fixed_pick_;
  std::lock_guard<std::mutex> lock(picks_mutex_);
  auto it = picks_.find(setup);
  return it == picks_.end() ? Pick::kUnknown : it->second;
}

void EngineSdpas::set_pick(const SdpaSetup* setup, Pick pick) const {
  std::lock_guard<std::mutex> lock(picks_mutex_);
  picks_[setup] = pick;  // set-ups live as long as the engine
}

Status ContextSdpas::run_at(size_t launch, const SdpaSetup& setup,
                            const std::vector<CUdeviceptr>& args, CUstream stream) const {
  if (!handle_) return internal_error("attention launch {}: the context has no cuDNN handle", launch);
  return run_setup(launch, setup, args, stream, /*first=*/false);
}

Status ContextSdpas::warm_up_at(size_t launch, const SdpaSetup& setup,
                                const std::vector<CUdeviceptr>& args, CUstream stream) {
  if (warmed(&setup)) return Status::ok_status();
  if (!handle_) return internal_error("attention launch {}: the context has no cuDNN handle", launch);
  RETURN_IF_ERROR(run_setup(launch, setup, args, stream, /*first=*/true));
  warmed_setups_.insert(&setup);
  return Status::ok_status();
}

}  // namespace graphc::runtime
