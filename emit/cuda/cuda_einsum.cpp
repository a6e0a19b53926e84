// Einsum kernels, mirroring reference/kernels_einsum.cpp (ir/einsum_equation.h
// labels: letters and ellipsis dims, diagonals through repeated letters,
// broadcast ellipsis dims of extent 1).
//
// Two operands: a batched GEMM on the tiled kernel. Output labels in both
// operands are the batch, those only in A the rows (M), only in B the
// columns (N); summed labels are K (a summed label of one operand only has
// stride 0 in the other, which sums it correctly). Each class may hold
// several labels: the baked per-label strides turn a flat m/n/k/batch index
// into operand and output offsets, so transposed and strided layouts need
// no copy. Any other operand count: one thread per output element looping
// over the summed labels.
#include <fmt/format.h>

#include <algorithm>

#include "emit/cuda/cuda_contraction.h"
#include "emit/cuda/cuda_gemm_tile.h"
#include "emit/cuda/cuda_ops.h"
#include "ir/einsum_equation.h"

namespace graphc::emit {

namespace {

using ir::DType;
using ir::EinsumPlan;

struct Labels {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> operand_strides;  // per operand, per label
  std::vector<int64_t> out_strides;                   // per label (0 for summed labels)
};

// Strides of label l in operand k as the reference computes them: a repeated
// label adds its axes' strides; an axis of extent 1 under a larger label adds nothing.
std::vector<std::vector<int64_t>> label_strides(const EinsumPlan& plan,
                                                const std::vector<ir::Shape>& shapes) {
  std::vector<std::vector<int64_t>> stride(shapes.size(),
                                           std::vector<int64_t>(plan.label_dims.size(), 0));
  for (size_t k = 0; k < shapes.size(); ++k) {
    int64_t s = 1;
    for (size_t a = shapes[k].size(); a-- > 0;) {
      auto l = static_cast<size_t>(plan.operand_labels[k][a]);
      if (shapes[k][a] == plan.label_dims[l]) stride[k][l] += s;
      s *= shapes[k][a];
    }
  }
  return stride;
}

// The dims and strides of the labels `ids`, for decompose_into.
Labels select(const std::vector<int>& ids, const EinsumPlan& plan,
              const std::vector<std::vector<int64_t>>& stride, const std::vector<int64_t>& out) {
  Labels r;
  r.operand_strides.resize(stride.size());
  for (int l : ids) {
    auto u = static_cast<size_t>(l);
    r.dims.push_back(plan.label_dims[u]);
    for (size_t k = 0; k < stride.size(); ++k) r.operand_strides[k].push_back(stride[k][u]);
    r.out_strides.push_back(out[u]);
  }
  return r;
}

Expected<GeneratedKernel> einsum_gemm(const AnchorFrame& f, const EinsumPlan& plan,
                                      const std::vector<std::vector<int64_t>>& stride,
                                      const std::vector<int64_t>& out_stride, int min_sm) {
  const size_t L = plan.label_dims.size();
  std::vector<bool> in_out(L, false), in_a(L, false), in_b(L, false);
  for (int l : plan.output_labels) in_out[static_cast<size_t>(l)] = true;
  for (int l : plan.operand_labels[0]) in_a[static_cast<size_t>(l)] = true;
  for (int l : plan.operand_labels[1]) in_b[static_cast<size_t>(l)] = true;
  std::vector<int> batch, rows, cols, sum;
  for (int l : plan.output_labels) {
    auto u = static_cast<size_t>(l);
    (in_a[u] && in_b[u] ? batch : in_a[u] ? rows : cols).push_back(l);
  }
  for (size_t l = 0; l < L; ++l)
    if (!in_out[l]) sum.push_back(static_cast<int>(l));
  const Labels B = select(batch, plan, stride, out_stride);
  const Labels M = select(rows, plan, stride, out_stride);
  const Labels N = select(cols, plan, stride, out_stride);
  const Labels K = select(sum, plan, stride, out_stride);
  const DType dt = f.input(0).dtype;

  TiledGemmSpec s;
  s.min_sm = min_sm;
  s.dtype = dt;
  s.batches = ir::shape_numel(B.dims);
  s.m = ir::shape_numel(M.dims);
  s.n = ir::shape_numel(N.dims);
  s.k = ir::shape_numel(K.dims);
  s.batch_setup = "    long long a_off = 0, b_off = 0, o_off = 0;\n" +
                  decompose_into("b", B.dims,
                                 {{B.operand_strides[0], "a_off"},
                                  {B.operand_strides[1], "b_off"},
                                  {B.out_strides, "o_off"}},
                                 "b");
  s.a_body = "      long long off = a_off;\n" +
             decompose_into("gm", M.dims, {{M.operand_strides[0], "off"}}, "m") +
             decompose_into("gk", K.dims, {{K.operand_strides[0], "off"}}, "k") +
             fmt::format("      return {};", f.load(0, "off"));
  s.b_body = "      long long off = b_off;\n" +
             decompose_into("gk", K.dims, {{K.operand_strides[1], "off"}}, "k") +
             decompose_into("gn", N.dims, {{N.operand_strides[1], "off"}}, "n") +
             fmt::format("      return {};", f.load(1, "off"));
  s.a_contiguous_k = !K.dims.empty() && K.operand_strides[0].back() == 1;
  s.b_contiguous_n = !N.dims.empty() && N.operand_strides[1].back() == 1;
  s.epilogue = "          long long off = o_off;\n" +
               decompose_into("gm", M.dims, {{M.out_strides, "off"}}, "om") +
               decompose_into("gn", N.dims, {{N.out_strides, "off"}}, "on") +
               fmt::format("          {}",
                           f.store(0, "off", fmt::format("({})(v)", cuda::compute_type(dt))));
  return emit_tiled_gemm(f, "einsum", s);
}

// Any operand count: thread per output element, nested loops over the summed labels.
Expected<GeneratedKernel> einsum_direct(const AnchorFrame& f, const EinsumPlan& plan,
                                        const std::vector<std::vector<int64_t>>& stride,
                                        const std::vector<int64_t>& out_stride) {
  const size_t ops = f.num_inputs();
  std::vector<int> outs(plan.output_labels.begin(), plan.output_labels.end()), sum;
  for (size_t l = 0; l < plan.label_dims.size(); ++l)
    if (std::find(outs.begin(), outs.end(), static_cast<int>(l)) == outs.end())
      sum.push_back(static_cast<int>(l));
  const Labels O = select(outs, plan, stride, out_stride);
  const Labels S = select(sum, plan, stride, out_stride);
  const int64_t total = ir::shape_numel(plan.output_shape);
  const DType dt = f.input(0).dtype;
  std::string b = fmt::format(
      "  typedef {acc} acc_t;\n"
      "  for (long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x; idx < {total}LL;\n"
      "       idx += (long long)gridDim.x * blockDim.x) {{\n",
      fmt::arg("acc", gemm_acc_type(dt)), fmt::arg("total", total));
  std::vector<OffsetTerm> terms;
  for (size_t k = 0; k < ops; ++k) {
    b += fmt::format("    long long off{} = 0;\n", k);
    terms.push_back({O.operand_strides[k], fmt::format("off{}", k)});
  }
  b += decompose_into("idx", O.dims, terms, "o");
  b += "    acc_t acc = (acc_t)0;\n";
  std::string indent = "    ";
  std::vector<std::string> offs(ops);
  for (size_t k = 0; k < ops; ++k) offs[k] = fmt::format("off{}", k);
  for (size_t d = 0; d < S.dims.size(); ++d) {
    b += fmt::format("{}for (long long s{} = 0; s{} < {}LL; ++s{}) {{\n", indent, d, d, S.dims[d],
                     d);
    for (size_t k = 0; k < ops; ++k)
      if (S.operand_strides[k][d] != 0)
        offs[k] += fmt::format(" + s{} * {}LL", d, S.operand_strides[k][d]);
    indent += "  ";
  }
  std::string prod;
  for (size_t k = 0; k < ops; ++k)
    prod += fmt::format("{}(acc_t)({})", k ? " * " : "", f.load(k, offs[k]));
  b += fmt::format("{}acc += {};\n", indent, prod);
  for (size_t d = 0; d < S.dims.size(); ++d) {
    indent.resize(indent.size() - 2);
    b += indent + "}\n";
  }
  b += fmt::format("    {}\n  }}\n",
                   f.store(0, "idx", fmt::format("({})(acc)", cuda::compute_type(dt))));
  LaunchShape launch;
  launch.block = {256, 1, 1};
  launch.grid = {std::clamp<int64_t>((total + 255) / 256, 1, int64_t{1} << 20), 1, 1};
  return finish_anchor_kernel(f, "einsum", "", b, launch);
}

}  // namespace

Expected<GeneratedKernel> generate_einsum_kernel(const AnchorFrame& f, int min_sm) {
  const ir::Node& n = *f.anchor;
  if (f.num_inputs() == 0 || !f.has_output(0))
    return invalid_model("Einsum '{}' needs inputs and an output", n.name);
  std::vector<ir::Shape> shapes;
  for (size_t k = 0; k < f.num_inputs(); ++k) {
    if (!f.has_input(k)) return invalid_model("Einsum '{}': input {} is empty", n.name, k);
    shapes.push_back(f.input(k).shape);
  }
  const DType dt = f.input(0).dtype;
  for (size_t k = 0; k < f.num_inputs(); ++k)
    if (f.input(k).dtype != dt)
      return invalid_model("Einsum '{}': inputs have different element types", n.name);
  if (f.output(0).dtype != dt || gemm_acc_type(dt).empty())
    return unsupported("Einsum '{}': element type {} is not supported", n.name, ir::dtype_name(dt));
  ASSIGN_OR_RETURN(EinsumPlan plan, ir::plan_einsum(n.attrs.get_string("equation", ""), shapes));
  if (plan.output_shape != f.output(0).shape)
    return invalid_model("Einsum '{}': output shape {} differs from the equation's {}", n.name,
                         ir::shape_to_string(f.output(0).shape),
                         ir::shape_to_string(plan.output_shape));
  // Output stride of each label (0 for summed labels).
  std::vector<int64_t> out_stride(plan.label_dims.size(), 0);
  int64_t s = 1;
  for (size_t d = plan.output_labels.size(); d-- > 0;) {
    out_stride[static_cast<size_t>(plan.output_labels[d])] = s;
    s *= plan.output_shape[d];
  }
  const auto stride = label_strides(plan, shapes);
  if (shapes.size() == 2) return einsum_gemm(f, plan, stride, out_stride, min_sm);
  return einsum_direct(f, plan, stride, out_stride);
}

}  // namespace graphc::emit
