// Every pass, one file each (optimizer/pass_*.cpp). The pipeline order and
// reasons live in pipeline.cpp.
#pragma once

#include "optimizer/pass.h"

namespace graphc::optimizer {

Status eliminate_dead_code(ir::Graph& g, PassContext& ctx);              // pass_dce.cpp
Status eliminate_common_subexpressions(ir::Graph& g, PassContext& ctx);  // pass_cse.cpp
Status remove_noops(ir::Graph& g, PassContext& ctx);                     // pass_remove_noops.cpp
Status fold_constants(ir::Graph& g, PassContext& ctx);                   // pass_fold_constants.cpp
Status inline_control_flow(ir::Graph& g, PassContext& ctx);  // pass_inline_control_flow.cpp
Status lower_recurrent(ir::Graph& g, PassContext& ctx);      // pass_lower_recurrent.cpp
Status fold_batchnorm_into_conv(ir::Graph& g, PassContext& ctx);         // pass_fold_batchnorm.cpp
Status recognize_gelu(ir::Graph& g, PassContext& ctx);                   // pass_recognize_gelu.cpp
Status recognize_layernorm(ir::Graph& g, PassContext& ctx);  // pass_recognize_layernorm.cpp
Status unflatten_gemm(ir::Graph& g, PassContext& ctx);       // pass_unflatten_gemm.cpp
Status fuse_attention(ir::Graph& g, PassContext& ctx);       // pass_fuse_attention.cpp
Status hoist_matmul_scale(ir::Graph& g, PassContext& ctx);   // pass_hoist_matmul_scale.cpp
Status cancel_transposes(ir::Graph& g, PassContext& ctx);    // pass_cancel_transposes.cpp
Status fold_transpose_into_matmul(ir::Graph& g,
                                  PassContext& ctx);              // pass_fold_transpose_matmul.cpp
Status merge_matmul_bias(ir::Graph& g, PassContext& ctx);         // pass_merge_matmul_bias.cpp
Status convert_precision(ir::Graph& g, PassContext& ctx);         // pass_convert_precision.cpp
Status expand_quantize(ir::Graph& g, PassContext& ctx);           // pass_expand_quantize.cpp
Status fuse_qdq_matmul(ir::Graph& g, PassContext& ctx);  // pass_fuse_qdq_matmul.cpp
Status fuse_qdq_conv(ir::Graph& g, PassContext& ctx);    // pass_fuse_qdq_conv.cpp
Status lower_integer_contractions(ir::Graph& g,
                                  PassContext& ctx);  // pass_lower_integer_contractions.cpp
Status convert_to_channels_last(ir::Graph& g, PassContext& ctx);  // pass_channels_last.cpp
Status fuse_reductions(ir::Graph& g, PassContext& ctx);           // pass_fuse.cpp
Status fuse_epilogues(ir::Graph& g, PassContext& ctx);            // pass_fuse.cpp
Status fuse_elementwise(ir::Graph& g, PassContext& ctx);          // pass_fuse.cpp
Status split_library_epilogues(ir::Graph& g,
                               PassContext& ctx);  // pass_split_library_epilogues.cpp

}  // namespace graphc::optimizer
