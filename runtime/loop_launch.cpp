#include "runtime/loop_launch.h"

namespace graphc::runtime {

Status capture_loop(const LoopRun& run, CUstream stream) {
  const DriverApi& a = run.api;
  if (!a.conditional_nodes)
    return internal_error("capturing a loop needs CUDA graph conditional nodes");
  CUstreamCaptureStatus status{};
  cuuint64_t id = 0;
  CUgraph graph = nullptr;
  const CUgraphNode* deps = nullptr;
  const CUgraphEdgeData* edges = nullptr;
  size_t count = 0;
  GRAPHC_CU(a, cuStreamGetCaptureInfo(stream, &status, &id, &graph, &deps, &edges, &count),
            "reading the capture state before a loop");
  if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE || !graph)
    return internal_error("capturing a loop on a stream that is not capturing");
  // The handle's value is set by the control kernel before the node and at
  // the end of each iteration, never by default at launch.
  CUgraphConditionalHandle handle = 0;
  GRAPHC_CU(a, cuGraphConditionalHandleCreate(&handle, graph, run.context, 0, 0),
            "creating a loop's conditional handle");
  engine::LoopLaunchParams params;
  params.handle = handle;
  params.mode = engine::kLoopModeGraph;
  RETURN_IF_ERROR(run.control(stream, params));
  GRAPHC_CU(a, cuStreamGetCaptureInfo(stream, &status, &id, &graph, &deps, &edges, &count),
            "reading the capture state before a loop");
  CUgraphNodeParams node_params{};
  node_params.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  node_params.conditional.handle = handle;
  node_params.conditional.type = CU_GRAPH_COND_TYPE_WHILE;
  node_params.conditional.size = 1;
  node_params.conditional.ctx = run.context;
  CUgraphNode node = nullptr;
  GRAPHC_CU(a, cuGraphAddNode(&node, graph, deps, edges, count, &node_params),
            "adding a loop's WHILE node");
  GRAPHC_CU(a,
            cuStreamUpdateCaptureDependencies(stream, &node, nullptr, 1,
                                              CU_STREAM_SET_CAPTURE_DEPENDENCIES),
            "ordering the work after a loop");
  CUgraph body = node_params.conditional.phGraph_out[0];
  GRAPHC_CU(a,
            cuStreamBeginCaptureToGraph(run.body_stream, body, nullptr, nullptr, 0,
                                        CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            "starting the capture of a loop's body");
  Status st = run.body(run.body_begin, run.body_end, run.body_stream);
  if (st.ok()) {
    params.mode = engine::kLoopModeGraph | engine::kLoopModeStep;
    st = run.control(run.body_stream, params);
  }
  CUgraph captured = nullptr;
  CUresult end = a.cuStreamEndCapture(run.body_stream, &captured);  // always end a started capture
  RETURN_IF_ERROR(st);
  return check_cuda(a, end, "ending the capture of a loop's body");
}

Status run_loop_on_host(const LoopRun& run, CUstream stream) {
  const DriverApi& a = run.api;
  // Pinned would be faster; one int per iteration does not need it (the
  // synchronize below waits for the copy either way).
  int32_t go = 0;
  auto decide = [&]() -> Status {
    GRAPHC_CU(a, cuMemcpyDtoHAsync(&go, run.flag, sizeof go, stream), "reading a loop's condition");
    GRAPHC_CU(a, cuStreamSynchronize(stream), "running a loop");
    return Status::ok_status();
  };
  engine::LoopLaunchParams params;
  RETURN_IF_ERROR(run.control(stream, params));
  RETURN_IF_ERROR(decide());
  params.mode = engine::kLoopModeStep;
  while (go) {
    RETURN_IF_ERROR(run.body(run.body_begin, run.body_end, stream));
    RETURN_IF_ERROR(run.control(stream, params));
    RETURN_IF_ERROR(decide());
  }
  return Status::ok_status();
}

}  // namespace graphc::runtime
