// Absorbs a Transpose that swaps only the last two axes of a MatMul/Gemm
// operand into the contraction, which reads the operand transposed for free
// (cuBLASLt's op(A)/op(B)):
//   Gemm(Transpose(a, [1,0]), b)         -> Gemm(a, b, transA = !transA)   (same for B)
//   MatMul(Transpose(a, [..,r-1,r-2]), b) -> MatMul(a, b, _trans_a = 1)     (same for B)
// `_trans_a` / `_trans_b` are graphc-internal MatMul attributes (the shape rule
// and the reference kernel honour them). Only when the Transpose output has no
// other reader, so the transposed copy is not needed anyway. A transposed
// constant weight is not handled here: fold-constants has already folded it.
#include "ir/data_movement_params.h"
#include "optimizer/passes.h"
#include "optimizer/rewrite_util.h"

namespace graphc::optimizer {

using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::ValueId;

namespace {

// True when `t` is a Transpose of perm [0, 1, ..., r-3, r-1, r-2].
bool swaps_last_two(const Graph& g, const Node& t) {
  if (t.inputs.empty() || t.inputs[0] == ir::kNoValue || !g.value(t.inputs[0]).has_shape)
    return false;
  auto rank = static_cast<int64_t>(g.value(t.inputs[0]).shape.size());
  if (rank < 2) return false;
  auto perm = ir::dm::transpose_perm(t.attrs.get_ints("perm"), t.attrs.has("perm"), rank);
  if (!perm.ok()) return false;
  for (int64_t i = 0; i < rank - 2; ++i)
    if ((*perm)[static_cast<size_t>(i)] != i) return false;
  return (*perm)[static_cast<size_t>(rank - 2)] == rank - 1 &&
         (*perm)[static_cast<size_t>(rank - 1)] == rank - 2;
}

void toggle(ir::AttributeMap& attrs, const char* name) {
  if (attrs.get_int(name, 0) != 0)
    attrs.erase(name);
  else
    attrs.set(name, ir::Attribute::of_int(1));
}

}  // namespace

Status fold_transpose_into_matmul(Graph& g, PassContext& ctx) {
  for (auto& n : g.nodes) {
    if (n.dead || (n.op != OpKind::MatMul && n.op != OpKind::Gemm) || n.inputs.size() < 2) continue;
    const bool gemm = n.op == OpKind::Gemm;
    for (size_t slot = 0; slot < 2; ++slot) {
      ValueId v = n.inputs[slot];
      const Node* t = producer_if(g, v, OpKind::Transpose);
      if (!t || g.is_graph_output(v) || consumer_count(g, v) != 1 || !swaps_last_two(g, *t))
        continue;
      // Gemm's C must not read the same Transpose (it would lose its producer).
      if (n.inputs.size() > 2 && n.inputs[2] == v) continue;
      ValueId src = t->inputs[0];
      ir::NodeId tid = g.value(v).producer;
      // MatMul(T, T) reads one Transpose twice: both operands flip.
      for (size_t k = slot; k < 2; ++k) {
        if (n.inputs[k] != v) continue;
        n.inputs[k] = src;
        toggle(n.attrs, gemm ? (k == 0 ? "transA" : "transB") : (k == 0 ? "_trans_a" : "_trans_b"));
      }
      g.node(tid).dead = true;
      ctx.count("fold-transpose-into-matmul: transposes absorbed");
    }
  }
  return Status::ok_status();
}

}  // namespace graphc::optimizer
