// FusedGroup: the reference runs the group's body graph, so a fused group is
// checked against the unfused nodes on the CPU, before any GPU code exists.
#include "reference/executor.h"
#include "reference/kernels.h"

namespace graphc::reference::kernels {

Status run_FusedGroup(KernelContext& ctx) {
  const ir::Graph* body = ctx.node.body.get();
  if (!body) return internal_error("FusedGroup has no body");
  std::map<std::string, ir::Tensor> feeds;
  for (size_t i = 0; i < body->inputs.size(); ++i) {
    if (!ctx.has_input(i)) return internal_error("FusedGroup input {} is missing", i);
    feeds[body->value(body->inputs[i]).name] = ctx.in(i);
  }
  ASSIGN_OR_RETURN(auto results, execute(*body, feeds));
  for (size_t o = 0; o < body->outputs.size(); ++o)
    ctx.out(o) = results.at(body->value(body->outputs[o]).name);
  return Status::ok_status();
}

}  // namespace graphc::reference::kernels
