// The CUDA target: cuBLASLt takes the MatMul/Gemm groups it wins on
// (cublaslt_rules.h), cuDNN the convolutions (cudnn_rules.h), generated CUDA
// kernels everything else (emit/cuda/). Its options are graphc build's
// --gemm, --conv and --allow-tf32.
#pragma once

#include "target/cuda/attention_rules.h"
#include "target/cuda/cublaslt_rules.h"
#include "target/cuda/cudnn_rules.h"
#include "target/roofline.h"
#include "target/target.h"

namespace graphc::target {

struct CudaOptions {
  GemmOptions gemm;
  ConvOptions conv;
  AttentionOptions attention;
  // The oldest SM the engine is built for (the smallest --arch): generated
  // kernels whose tiles depend on the chip (the flash attention's shared
  // memory) pick ones every target GPU can launch.
  int min_sm = 90;
};

class CudaTarget final : public Target {
 public:
  explicit CudaTarget(CudaOptions options = {}) : options_(options) {
    options_.conv.gpu = gpu_for_sm(options_.min_sm);  // the depthwise cost model's roofline
  }
  const CudaOptions& options() const { return options_; }

  std::string_view name() const override { return "cuda"; }
  bool library_takes_conv(const ir::Graph& g, const ir::Node& n) const override;
  std::optional<size_t> library_epilogue_ops(const ir::Graph& g, ir::NodeId group) const override;
  std::string library_epilogue_stop(const ir::Graph& g, ir::NodeId group) const override;
  Lowering lowering(const ir::Graph& g, ir::NodeId node) const override;

  // The library call for a gemm / conv kernel, when a library takes it.
  GemmChoice choose_gemm(const ir::Graph& g, ir::NodeId node) const {
    return choose_gemm_lowering(g, node, options_.gemm);
  }
  ConvChoice choose_conv(const ir::Graph& g, ir::NodeId node) const {
    return choose_conv_lowering(g, node, options_.conv);
  }
  // What a kernel's contraction of element type `dtype` runs on, for the
  // roofline: library calls and the generated fp16/bf16 GEMM (WMMA) on tensor
  // cores; fp32 on CUDA cores unless --allow-tf32 lets the library use TF32;
  // the generated depthwise conv (a direct kernel accumulating in fp32) on
  // fp32 CUDA cores.
  Math contraction_math(ir::DType dtype, Library library, bool depthwise) const;
  AttentionChoice choose_attention(const ir::Graph& g, ir::NodeId node) const {
    return choose_attention_lowering(g, node, options_.attention);
  }

 private:
  CudaOptions options_;
};

}  // namespace graphc::target
