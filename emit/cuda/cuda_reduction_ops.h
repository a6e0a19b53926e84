// The per-op generators behind generate_reduction_kernel (gpu_kernels.h),
// each taking the anchor frame of the node (plain or fused group).
#pragma once

#include "emit/cuda/anchor_frame.h"
#include "support/status.h"

namespace graphc::emit::reduction {

// Reduce* and ArgMax/ArgMin. cuda_reduction.cpp
Expected<GeneratedKernel> generate_reduce(const AnchorFrame& frame);
Expected<GeneratedKernel> generate_arg(const AnchorFrame& frame);
// Softmax, LogSoftmax, Hardmax. cuda_softmax.cpp
Expected<GeneratedKernel> generate_softmax(const AnchorFrame& frame);
// LayerNormalization, InstanceNormalization, MeanVarianceNormalization,
// BatchNormalization, LRN. cuda_normalization.cpp
Expected<GeneratedKernel> generate_layer_norm(const AnchorFrame& frame);
Expected<GeneratedKernel> generate_instance_norm(const AnchorFrame& frame);
Expected<GeneratedKernel> generate_mean_variance_norm(const AnchorFrame& frame);
Expected<GeneratedKernel> generate_batch_norm(const AnchorFrame& frame);
Expected<GeneratedKernel> generate_lrn(const AnchorFrame& frame);
// GroupNormalization, RMSNormalization, LpNormalization. cuda_norm_group_rms_lp.cpp
Expected<GeneratedKernel> generate_group_norm(const AnchorFrame& frame);
Expected<GeneratedKernel> generate_rms_norm(const AnchorFrame& frame);
Expected<GeneratedKernel> generate_lp_norm(const AnchorFrame& frame);
// DynamicQuantizeLinear: min/max of the tensor, then the quantize. cuda_dynamic_quantize.cpp
Expected<GeneratedKernel> generate_dynamic_quantize(const AnchorFrame& frame);
// TopK. cuda_topk.cpp
Expected<GeneratedKernel> generate_topk(const AnchorFrame& frame);
// NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss. cuda_loss.cpp
Expected<GeneratedKernel> generate_loss(const AnchorFrame& frame);

}  // namespace graphc::emit::reduction
