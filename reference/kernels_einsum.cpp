// Einsum reference kernel: one loop nest over the equation's labels. Outer
// loop: every output element (row-major over the output labels); inner loop:
// every combination of the summed labels, with per-operand offsets updated
// incrementally. Cost is (product of all label extents) x (operand count).
#include <optional>

#include "ir/einsum_equation.h"
#include "reference/contraction_util.h"
#include "reference/kernels.h"
#include "support/checked_math.h"

namespace graphc::reference::kernels {

namespace {

using ir::EinsumPlan;
using ir::Tensor;

// Multiply-adds above this are refused rather than left to run for hours
// (or overflow the loop count).
constexpr int64_t kMaxEinsumWork = int64_t{1} << 36;

template <typename T>
std::vector<T> evaluate(const EinsumPlan& plan, const std::vector<std::vector<T>>& values,
                        const std::vector<const Tensor*>& inputs) {
  const size_t num_labels = plan.label_dims.size();
  const size_t ops = values.size();
  // stride[k][l]: how far operand k's offset moves when label l advances by
  // one. A repeated label adds its axes' strides (the diagonal); an axis of
  // extent 1 under a larger label (ellipsis broadcast) contributes nothing.
  std::vector<std::vector<int64_t>> stride(ops, std::vector<int64_t>(num_labels, 0));
  for (size_t k = 0; k < ops; ++k) {
    const auto& shape = inputs[k]->shape();
    const auto axis_strides = strides_of(shape);
    for (size_t a = 0; a < shape.size(); ++a) {
      auto l = static_cast<size_t>(plan.operand_labels[k][a]);
      if (shape[a] == plan.label_dims[l]) stride[k][l] += axis_strides[a];
    }
  }
  std::vector<bool> in_output(num_labels, false);
  for (int l : plan.output_labels) in_output[static_cast<size_t>(l)] = true;
  std::vector<size_t> summed;
  int64_t summed_count = 1;
  for (size_t l = 0; l < num_labels; ++l)
    if (!in_output[l]) {
      summed.push_back(l);
      summed_count *= plan.label_dims[l];
    }

  const int64_t out_count = ir::shape_numel(plan.output_shape);
  std::vector<T> out(static_cast<size_t>(out_count), T{0});
  if (summed_count == 0) return out;
  std::vector<int64_t> out_idx(plan.output_labels.size(), 0);
  std::vector<int64_t> sum_idx(summed.size(), 0);
  std::vector<int64_t> offset(ops, 0);
  for (int64_t o = 0; o < out_count; ++o) {
    for (size_t k = 0; k < ops; ++k) {
      offset[k] = 0;
      for (size_t d = 0; d < out_idx.size(); ++d)
        offset[k] += out_idx[d] * stride[k][static_cast<size_t>(plan.output_labels[d])];
    }
    std::fill(sum_idx.begin(), sum_idx.end(), 0);
    T acc{0};
    for (int64_t s = 0; s < summed_count; ++s) {
      T prod = values[0][static_cast<size_t>(offset[0])];
      for (size_t k = 1; k < ops; ++k) prod *= values[k][static_cast<size_t>(offset[k])];
      acc += prod;
      // Advance the summed-label odometer, moving every operand's offset.
      for (size_t d = summed.size(); d-- > 0;) {
        const size_t l = summed[d];
        if (++sum_idx[d] < plan.label_dims[l]) {
          for (size_t k = 0; k < ops; ++k) offset[k] += stride[k][l];
          break;
        }
        sum_idx[d] = 0;
        for (size_t k = 0; k < ops; ++k) offset[k] -= stride[k][l] * (plan.label_dims[l] - 1);
      }
    }
    out[static_cast<size_t>(o)] = acc;
    next_index(out_idx, plan.output_shape);
  }
  return out;
}

// Product of all label extents (the loop nest's trip count), or nullopt when
// it is beyond kMaxEinsumWork.
std::optional<int64_t> loop_count(const EinsumPlan& plan) {
  int64_t total = 1;
  for (int64_t d : plan.label_dims)
    if (d == 0) return 0;
  for (int64_t d : plan.label_dims) {
    auto next = checked_mul(total, d);
    if (!next || *next > kMaxEinsumWork) return std::nullopt;
    total = *next;
  }
  return total;
}

}  // namespace

Status run_Einsum(KernelContext& ctx) {
  std::vector<ir::Shape> shapes;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (!ctx.has_input(i)) return invalid_model("Einsum input {} is empty", i);
    shapes.push_back(ctx.in(i).shape());
  }
  if (shapes.empty()) return invalid_model("Einsum needs at least one input");
  ASSIGN_OR_RETURN(EinsumPlan plan,
                   ir::plan_einsum(ctx.attrs().get_string("equation", ""), shapes));
  Tensor& Y = ctx.out(0);
  if (Y.shape() != plan.output_shape)
    return internal_error("Einsum: output shape {} differs from the equation's {}",
                          ir::shape_to_string(Y.shape()), ir::shape_to_string(plan.output_shape));
  if (!loop_count(plan))
    return unsupported(
        "Einsum '{}': the loop nest over all labels exceeds 2^36 steps; the "
        "reference kernel does not evaluate it",
        ctx.attrs().get_string("equation", ""));
  const ir::DType dt = ctx.in(0).dtype();
  if (ir::is_float(dt)) {
    std::vector<std::vector<double>> values;
    for (const Tensor* t : ctx.inputs) values.push_back(detail::load_f64(*t));
    auto out = evaluate(plan, values, ctx.inputs);
    detail::store_f64(Y, out.data());
  } else if (ir::is_integer(dt)) {
    std::vector<std::vector<uint64_t>> values;
    for (const Tensor* t : ctx.inputs) values.push_back(detail::load_wrapped(*t));
    auto out = evaluate(plan, values, ctx.inputs);
    detail::store_wrapped(Y, out.data());
  } else {
    return unsupported("Einsum: element type {} is not supported", ir::dtype_name(dt));
  }
  return Status::ok_status();
}

}  // namespace graphc::reference::kernels
