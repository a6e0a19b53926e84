// Session: one Engine and one ExecutionContext (runtime/engine.h) together.
#include "runtime/session.h"

namespace graphc::runtime {

Session::~Session() = default;

Expected<std::unique_ptr<Session>> Session::create(const Executable& exe, RunOptions options) {
  std::unique_ptr<Session> s(new Session());
  ASSIGN_OR_RETURN(s->engine_, Engine::create(exe));
  ContextOptions co;
  co.cuda_graph = options.cuda_graph;
  ASSIGN_OR_RETURN(s->context_, s->engine_->create_context(co));
  ASSIGN_OR_RETURN(s->timer_, GpuTimer::create(*s->engine_));
  return s;
}

Status Session::run(const std::vector<std::string>& inputs, std::vector<std::string>& outputs) {
  ExecutionContext& ctx = *context_;
  const int n_in = engine_->num_inputs();
  if (inputs.size() != static_cast<size_t>(n_in))
    return invalid_argument("the engine takes {} inputs, got {}", n_in, inputs.size());
  CUstream s = ctx.stream();
  for (int i = 0; i < n_in; ++i)
    RETURN_IF_ERROR(ctx.copy_input_from_host(i, inputs[static_cast<size_t>(i)].data(),
                                             inputs[static_cast<size_t>(i)].size(), s));
  RETURN_IF_ERROR(timer_->start(s));
  RETURN_IF_ERROR(ctx.enqueue(s));
  RETURN_IF_ERROR(timer_->stop(s));
  const auto& bindings = engine_->bindings();
  outputs.assign(static_cast<size_t>(engine_->num_outputs()), std::string());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const int b = n_in + static_cast<int>(i);
    outputs[i].resize(static_cast<size_t>(bindings[static_cast<size_t>(b)].bytes));
    RETURN_IF_ERROR(ctx.copy_output_to_host(b, outputs[i].data(), outputs[i].size(), s));
  }
  RETURN_IF_ERROR(ctx.synchronize());
  ASSIGN_OR_RETURN(last_ms_, timer_->elapsed_ms());
  return Status::ok_status();
}

Expected<std::vector<float>> Session::time_iterations(int iterations) {
  std::vector<float> times;
  CUstream s = context_->stream();
  for (int i = 0; i < iterations; ++i) {
    RETURN_IF_ERROR(timer_->start(s));
    RETURN_IF_ERROR(context_->enqueue(s));
    RETURN_IF_ERROR(timer_->stop(s));
    ASSIGN_OR_RETURN(float ms, timer_->elapsed_ms());
    times.push_back(ms);
  }
  return times;
}

}  // namespace graphc::runtime
