#include "emit/plan/kernel_flops.h"

#include "ir/attention_params.h"
#include "ir/conv_geometry.h"
#include "ir/einsum_equation.h"

namespace graphc::emit {

namespace {

using ir::OpKind;

const ir::Shape* shape_of(const ir::Graph& g, const ir::Node& n, size_t input) {
  if (input >= n.inputs.size() || n.inputs[input] == ir::kNoValue) return nullptr;
  return &g.value(n.inputs[input]).shape;
}

int64_t output_numel(const ir::Graph& g, const ir::Node& n) {
  if (n.outputs.empty() || n.outputs[0] == ir::kNoValue) return 0;
  return ir::shape_numel(g.value(n.outputs[0]).shape);
}

// FLOPs of one unfused node (0 for what the model does not count).
int64_t node_flops(const ir::Graph& g, const ir::Node& n, bool& depthwise) {
  switch (n.op) {
    case OpKind::MatMul:
    case OpKind::MatMulInteger: {
      // Y = A·B: one multiply-add per output element and step of K (A's last dim).
      const ir::Shape* a = shape_of(g, n, 0);
      if (!a || a->empty()) return 0;
      return 2 * output_numel(g, n) * a->back();
    }
    case OpKind::Gemm: {
      const ir::Shape* a = shape_of(g, n, 0);
      if (!a || a->size() != 2) return 0;
      const int64_t k = n.attrs.get_int("transA", 0) ? (*a)[0] : (*a)[1];
      return 2 * output_numel(g, n) * k;
    }
    case OpKind::Conv:
    case OpKind::ConvInteger:
    case OpKind::ConvTranspose: {
      const ir::Shape* x = shape_of(g, n, 0);
      const ir::Shape* w = shape_of(g, n, 1);
      if (!x || !w) return 0;
      const bool tr = n.op == OpKind::ConvTranspose;
      auto geo = ir::resolve_conv_geometry(n.attrs, *x, *w, nullptr, tr);
      if (!geo.ok() || geo->group <= 0) return 0;
      const int64_t taps = ir::shape_numel(geo->kernel);
      depthwise = !tr && geo->group > 1 && geo->in_channels == geo->group;
      if (!tr)  // every output element sums C/group x kernel taps
        return 2 * ir::shape_numel(geo->output_shape()) * (geo->in_channels / geo->group) * taps;
      // ConvTranspose: every input element scatters into M/group x kernel taps.
      return 2 * ir::shape_numel(*x) * (geo->out_channels / geo->group) * taps;
    }
    case OpKind::Attention: {
      auto p = ir::attention_params_of(g, n);
      if (!p.ok()) return 0;
      // Q·Kᵀ over head_size, then P·V over v_head_size, for every score;
      // causal self-attention skips half (as emit::attention_flops counts it).
      const int64_t f = 2 * ir::shape_numel(p->qk_output_shape()) * (p->head_size + p->v_head_size);
      return p->is_causal && p->q_len == p->total_len ? f / 2 : f;
    }
    case OpKind::Einsum: {
      std::vector<ir::Shape> shapes;
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const ir::Shape* s = shape_of(g, n, i);
        if (!s) return 0;
        shapes.push_back(*s);
      }
      auto plan = ir::plan_einsum(n.attrs.get_string("equation", ""), shapes);
      if (!plan.ok() || shapes.size() < 2) return 0;
      // One multiply-add per point of the full index space (all labels).
      int64_t points = 1;
      for (int64_t d : plan->label_dims) points *= d;
      return 2 * points;
    }
    default: return 0;
  }
}

void accumulate(const ir::Graph& g, const ir::Node& n, KernelArithmetic& out) {
  if (n.body) {
    for (const ir::Node& inner : n.body->nodes)
      if (!inner.dead) accumulate(*n.body, inner, out);
    return;
  }
  bool depthwise = false;
  const int64_t flops = node_flops(g, n, depthwise);
  if (flops <= 0) return;
  out.flops += flops;
  out.depthwise |= depthwise;
  if (out.dtype == ir::DType::kUndefined) {
    const ir::Shape* a = shape_of(g, n, 0);
    if (a) out.dtype = g.value(n.inputs[0]).dtype;
  }
}

}  // namespace

KernelArithmetic kernel_arithmetic(const ir::Graph& g, const ir::Node& n) {
  KernelArithmetic out;
  accumulate(g, n, out);
  return out;
}

}  // namespace graphc::emit
