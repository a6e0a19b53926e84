// The fused graph as a Graphviz picture (`graphc inspect MODEL --svg FILE`):
// every kernel of the fusion report is a cluster holding the IR nodes it
// computes, filled with a colour per kernel kind and labelled with its row
// number (as in the text report), kind, library lowering and roofline time (on the report's GPU);
// edges between kernels carry the tensor's type. A legend lists the kinds.
#pragma once

#include <string>

#include "driver/fusion_report.h"
#include "ir/graph.h"

namespace graphc::driver {

// `optimized`: the graph optimize_and_report left; `report`: its result.
std::string fusion_graph_dot(const ir::Graph& optimized, const FusionReport& report);

}  // namespace graphc::driver
