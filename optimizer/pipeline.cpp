#include <spdlog/spdlog.h>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "optimizer/pass.h"
#include "optimizer/passes.h"

namespace graphc::optimizer {

// pass_fuse_index_maps.cpp. Belongs in passes.h with the others; declared here
// for now because touching passes.h recompiles every pass and most tests.
Status fuse_index_maps(ir::Graph& g, PassContext& ctx);
// pass_constant_reshape_targets.cpp (declared here for the same reason).
Status constant_reshape_targets(ir::Graph& g, PassContext& ctx);
// pass_optimize_loop_bodies.cpp (declared here for the same reason).
Status optimize_loop_bodies(ir::Graph& g, PassContext& ctx);

const std::vector<Pass>& default_pipeline() {
  static const std::vector<Pass> kPipeline = {
      {"inline-control-flow",
       "If with a build-time condition becomes its branch; Loop/Scan with build-time trip counts "
       "are unrolled (straight-line code for the rest)",
       &inline_control_flow},
      {"lower-recurrent",
       "RNN/GRU/LSTM become one input-projection MatMul and a per-step MatMul + gate chain "
       "(a launch sequence the CUDA graph replays)",
       &lower_recurrent},
      {"fuse-qdq-matmul",
       "MatMul/Gemm between a DequantizeLinear of int8 activations and one of int8 weights "
       "becomes an int8 tensor-core GEMM (MatMulInteger) with the dequantize after it, in its "
       "epilogue; float8 e4m3fn ones become cuBLASLt's FP8 GEMM where it takes them (before "
       "fold-constants, which would fold DQ(W) to float)",
       &fuse_qdq_matmul},
      {"fuse-qdq-conv",
       "Conv between a DequantizeLinear of int8 activations and one of int8 weights becomes an "
       "int8 tensor-core conv (ConvInteger) with the dequantize after it, in its epilogue "
       "(--int8-gemm; before fold-constants)",
       &fuse_qdq_conv},
      {"lower-integer-contractions",
       "MatMulInteger/ConvInteger/QLinearMatMul/QLinearConv become an int32 MatMul/Conv on "
       "shifted operands + a requantize chain the GEMM epilogue takes (before fold-constants, "
       "which folds the shifted weights)",
       &lower_integer_contractions},
      {"fold-constants", "evaluate nodes whose inputs are all known (shape subgraphs, weight prep)",
       &fold_constants},
      {"remove-noops", "drop Identity, inference Dropout, same-type Cast, same-shape Reshape",
       &remove_noops},
      {"cse", "merge identical nodes so later passes see one value",
       &eliminate_common_subexpressions},
      {"dce", "remove nodes whose outputs nobody reads", &eliminate_dead_code},
      {"cancel-transposes",
       "Transpose/Reshape pairs that undo or repeat each other become one op or none (after cse)",
       &cancel_transposes},
      {"fold-batchnorm",
       "inference BatchNormalization becomes the preceding Conv's weights and bias",
       &fold_batchnorm_into_conv},
      {"recognize-gelu", "the erf and tanh GELU formulas become one Gelu (an epilogue activation)",
       &recognize_gelu},
      {"recognize-layernorm",
       "ReduceMean/Sub/Pow/Sqrt/Div (+affine) chains become LayerNormalization",
       &recognize_layernorm},
      {"unflatten-gemm",
       "Reshape -> Gemm -> Reshape (exported Linear on [B,S,K]) becomes MatMul + Add, so the "
       "epilogue after it can fuse",
       &unflatten_gemm},
      {"fuse-attention",
       "MatMul/scale/mask/Softmax/MatMul attention becomes one Attention kernel (before the "
       "matmul rewrites below take its pattern apart)",
       &fuse_attention},
      {"hoist-matmul-scale",
       "a scalar scale on a MatMul operand moves after it, into the softmax kernel",
       &hoist_matmul_scale},
      {"fold-transpose-into-matmul",
       "a last-two-axes Transpose feeding MatMul/Gemm becomes a transA/transB flag",
       &fold_transpose_into_matmul},
      {"merge-matmul-bias", "2-D MatMul + bias Add becomes Gemm (after transposes are flags)",
       &merge_matmul_bias},
      {"dce-after-rewrites", "drop what the rewrites left unread (old weights, pattern pieces)",
       &eliminate_dead_code},
      {"convert-precision",
       "--precision fp16/bf16: retype weights and compute before fusion, so groups see final "
       "dtypes",
       &convert_precision},
      {"expand-quantize",
       "QuantizeLinear/DequantizeLinear with constant scales become elementwise ops the fusion "
       "takes (after convert-precision, which keeps them float32)",
       &expand_quantize},
      {"channels-last",
       "fp16/bf16 convs that cuDNN takes run NHWC (its tensor-core layout); transposes move "
       "past elementwise ops and cancel (graphc build with cuDNN convs only)",
       &convert_to_channels_last},
      {"fuse-reductions",
       "softmax/layernorm/reduce/pool take their elementwise prologue (scale, mask) and epilogue",
       &fuse_reductions},
      {"fuse-epilogues", "MatMul/Gemm/Conv take the bias, activation and residual chain after them",
       &fuse_epilogues},
      {"fuse-elementwise", "remaining elementwise DAGs become one kernel per iteration shape",
       &fuse_elementwise},
      {"constant-reshape-targets",
       "over a shape range, Reshape targets computed from shapes become constants with 0s and "
       "-1 that say the same at every shape (so index-map fusion can take the views)",
       &constant_reshape_targets},
      {"fuse-index-maps",
       "chains of Transpose/Reshape/Slice/Concat/Pad/... and the elementwise ops after them "
       "become one kernel reading through the composed index map (after the fusions above)",
       &fuse_index_maps},
      {"split-library-epilogues",
       "a MatMul/Conv group whose epilogue the target's library takes only in part becomes the "
       "library call, then a generated kernel for the rest",
       &split_library_epilogues},
      {"optimize-loop-bodies",
       "a Loop on a run-time trip count or condition stays one node; its body, typed for the "
       "node's inputs, runs this pipeline as a graph of its own (the GPU plan runs it as a "
       "sub-plan in a CUDA graph WHILE node)",
       &optimize_loop_bodies},
  };
  return kPipeline;
}

const Pass* find_pass(const std::string& name) {
  for (const auto& p : default_pipeline())
    if (name == p.name) return &p;
  return nullptr;
}

Status validate_pass_names(const std::set<std::string>& names, bool allow_all) {
  for (const auto& n : names) {
    if (allow_all && n == "all") continue;
    if (!find_pass(n)) {
      std::string known;
      for (const auto& p : default_pipeline())
        known += std::string(known.empty() ? "" : ", ") + p.name;
      return invalid_argument("unknown pass '{}' (passes: {})", n, known);
    }
  }
  return Status::ok_status();
}

Status run_passes(ir::Graph& graph, PassContext& ctx, const std::vector<Pass>* passes) {
  const auto& list = passes ? *passes : default_pipeline();
  for (const auto& pass : list) {
    if (ctx.disabled.count(pass.name)) {
      spdlog::debug("pass {} disabled", pass.name);
      continue;
    }
    int64_t before = graph.live_node_count();
    Status st = pass.run(graph, ctx);
    if (!st.ok()) return st.with_context(fmt::format("pass {}", pass.name));
    graph.compact();
    spdlog::debug("pass {:<18} nodes {} -> {}", pass.name, before, graph.live_node_count());
    if (ctx.verify_after_all) {
      Status v = ir::verify(graph, {.require_shapes = true});
      if (!v.ok()) return v.with_context(fmt::format("IR invalid after pass {}", pass.name));
    }
    if (ctx.dump_after.count("all") || ctx.dump_after.count(pass.name)) {
      std::string text = ir::print_graph(graph);
      if (ctx.dump_sink)
        ctx.dump_sink(pass.name, text);
      else
        std::fprintf(stderr, "--- after %s ---\n%s", pass.name, text.c_str());
    }
  }
  return Status::ok_status();
}

std::string describe_pipeline() {
  std::string out;
  int i = 1;
  for (const auto& p : default_pipeline())
    out += fmt::format("{:>2}. {:<20} {}\n", i++, p.name, p.reason);
  return out;
}

}  // namespace graphc::optimizer
