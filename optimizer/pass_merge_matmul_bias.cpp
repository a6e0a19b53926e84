// Turns a 2-D MatMul followed by a bias Add into one Gemm, whose C input is
// the bias (beta = 1), so the library call adds it in its epilogue:
//   Add(MatMul(A[M,K], B[K,N]), c)  -> Gemm(A, B, c)
// where c broadcasts to [M,N] the way Gemm's C may ([N], [1,N], [M,1], [M,N],
// [1] or a scalar) and the Add's output is [M,N]. MatMul's _trans_a/_trans_b
// become transA/transB. Only when the MatMul output is read by the Add alone.
// A batched (rank > 2) MatMul is left alone: Gemm is 2-D only, and
// fuse-epilogues already takes its bias Add into the gemm group.
#include "optimizer/passes.h"
#include "optimizer/rewrite_util.h"

namespace graphc::optimizer {

using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::ValueId;

namespace {

// True when `c` can be Gemm's C for an [m, n] output (unidirectional broadcast).
bool gemm_bias_shape(const ir::Shape& c, int64_t m, int64_t n) {
  if (c.size() > 2) return false;
  if (!c.empty() && c.back() != 1 && c.back() != n) return false;
  return c.size() < 2 || c[0] == 1 || c[0] == m;
}

}  // namespace

Status merge_matmul_bias(Graph& g, PassContext& ctx) {
  for (auto& add : g.nodes) {
    if (add.dead || add.op != OpKind::Add || add.inputs.size() != 2 || add.outputs.size() != 1)
      continue;
    const ir::Value& sum = g.value(add.outputs[0]);
    for (size_t side = 0; side < 2; ++side) {
      ValueId mm_out = add.inputs[side];
      ValueId bias = add.inputs[1 - side];
      const Node* mm = producer_if(g, mm_out, OpKind::MatMul);
      if (!mm || bias == mm_out || g.is_graph_output(mm_out) || consumer_count(g, mm_out) != 1)
        continue;
      const ir::Value& a = g.value(mm->inputs[0]);
      const ir::Value& b = g.value(mm->inputs[1]);
      const ir::Value& y = g.value(mm_out);
      const ir::Value& c = g.value(bias);
      if (a.shape.size() != 2 || b.shape.size() != 2 || y.shape.size() != 2) continue;
      // The Add must not broadcast the product to a larger shape.
      if (sum.shape != y.shape || sum.dtype != y.dtype || c.dtype != y.dtype) continue;
      if (!gemm_bias_shape(c.shape, y.shape[0], y.shape[1])) continue;
      Node gemm;
      gemm.op = OpKind::Gemm;
      gemm.name = mm->name;  // the contraction is what reports look for
      gemm.inputs = {mm->inputs[0], mm->inputs[1], bias};
      gemm.outputs = add.outputs;
      gemm.absorbed = mm->absorbed;
      gemm.absorbed.push_back(add.name);
      gemm.absorbed.insert(gemm.absorbed.end(), add.absorbed.begin(), add.absorbed.end());
      if (mm->attrs.get_int("_trans_a", 0) != 0) gemm.attrs.set("transA", ir::Attribute::of_int(1));
      if (mm->attrs.get_int("_trans_b", 0) != 0) gemm.attrs.set("transB", ir::Attribute::of_int(1));
      g.node(g.value(mm_out).producer).dead = true;
      // The Gemm takes the Add's place: the bias may be computed after the MatMul.
      add = std::move(gemm);
      ctx.count("merge-matmul-bias: MatMul+Add became Gemm");
      break;
    }
  }
  g.rebuild_producers();
  return Status::ok_status();
}

}  // namespace graphc::optimizer
