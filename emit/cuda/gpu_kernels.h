// One generator per kernel family; lower_for_gpu picks by the schedule's
// kernel kind. Each takes a plain node or a FusedGroup built around one
// anchor of its family (see anchor_frame.h) and returns one launch.
#pragma once

#include "emit/cuda/cuda_elementwise.h"
#include "emit/plan/schedule.h"
#include "ir/graph.h"
#include "support/status.h"

namespace graphc::emit {

// Reduce*, ArgMax/ArgMin, Softmax/LogSoftmax/Hardmax, TopK, the
// normalizations (BatchNormalization, LayerNormalization,
// InstanceNormalization, LRN, MeanVarianceNormalization) and the losses
// (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss). cuda_reduction.cpp
// dispatches; cuda_softmax.cpp, cuda_normalization.cpp, cuda_topk.cpp,
// cuda_loss.cpp; shared team machinery in cuda_reduction_common.h.
// Over a shape `range`, LayerNormalization and Softmax/LogSoftmax whose rows
// vary take the row count at run time; the rest are refused where a tensor varies.
Expected<GeneratedKernel> generate_reduction_kernel(const ir::Graph& graph, ir::NodeId node,
                                                    const ir::SymbolicShapes* range = nullptr);
// Transpose, Concat, Split, Slice, Gather*, Scatter*, Pad, Tile, Expand,
// Resize, DepthToSpace/SpaceToDepth, OneHot, EyeLike, Trilu, Range, CumSum,
// ConstantOfShape, Shape/Size, and inference Dropout. cuda_data_movement*.cpp and
// the cuda_* files of cuda_dm_ops.h
Expected<GeneratedKernel> generate_data_movement_kernel(const ir::Graph& graph, ir::NodeId node);
// MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool. cuda_pool.cpp
// Over a shape `range`, the batch alone may vary (batch_range.h).
Expected<GeneratedKernel> generate_pool_kernel(const ir::Graph& graph, ir::NodeId node,
                                               const ir::SymbolicShapes* range = nullptr);
// MatMul, Gemm, Einsum, Conv, ConvTranspose as generated kernels (the
// portable path; library calls are chosen over them where available).
// cuda_contraction*.cpp
// Over a shape `range`, a MatMul whose rows vary takes M at run time; the
// rest are refused where a tensor varies.
Expected<GeneratedKernel> generate_contraction_kernel(const ir::Graph& graph, ir::NodeId node,
                                                      const ir::SymbolicShapes* range = nullptr);

// What generators may depend on beyond the graph.
struct KernelOptions {
  int min_sm = 90;  // the oldest target SM (tiles that must fit its shared memory)
  // Set for an engine that serves a shape range: the lowered graph's symbolic
  // shapes. Families without run-time sizes refuse kernels whose tensors vary.
  const ir::SymbolicShapes* range = nullptr;
};

// The fused attention (an Attention node): the flash kernel of cuda_attention.h.
// cuda_attention_lowering.cpp
Expected<GeneratedKernel> generate_attention_kernel(const ir::Graph& graph, ir::NodeId node,
                                                    const KernelOptions& options);

// Dispatches on `kind` (elementwise kinds included).
Expected<GeneratedKernel> generate_gpu_kernel(const ir::Graph& graph, ir::NodeId node,
                                              KernelKind kind, const KernelOptions& options = {});

}  // namespace graphc::emit
