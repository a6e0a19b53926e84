// Exporters lower a Linear on [batch, seq, K] as Reshape -> Gemm -> Reshape
// (HF GPT-2's Conv1D, the dynamo exporter's addmm). The views hide the GEMM's
// output from the elementwise ops after it, so the GELU and residual add could
// not ride its epilogue. This pass rewrites
//   Y = Reshape(Gemm(Reshape(X, [M, K]), B, C), X.shape[:-1] + [N])
// as Y = Add(MatMul(X', B), C) with X' = X viewed as Y.shape[:-1] + [K] (no
// view when X already has that shape; X may split K over trailing dims, as
// attention's [B, S, H, D] -> [B*S, H*D] does): the same numbers (one product,
// one bias add per element). Conditions: alpha = beta = 1, transA = 0,
// transB = 0 or a constant B (transposed here once), C of N elements, and
// both reshapes private to the pattern. Over a shape range the view copies
// the leading dims X shares with Y (0 in its target).
#include <cstring>

#include "optimizer/passes.h"
#include "optimizer/rewrite_util.h"

namespace graphc::optimizer {

using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::OpKind;
using ir::ValueId;

namespace {

bool is_flattening_view(OpKind op) { return op == OpKind::Reshape || op == OpKind::Flatten; }

// The only live reader of `v` when it is not a graph output, else -1.
NodeId private_consumer(const Graph& g, ValueId v) {
  if (g.is_graph_output(v)) return -1;
  auto c = g.consumers(v);
  return c.size() == 1 ? c[0] : -1;
}

// [K, N] copy of a constant [N, K] matrix.
ir::Tensor transpose_2d(const ir::Tensor& t) {
  const int64_t rows = t.shape()[0], cols = t.shape()[1];
  ir::Tensor out(t.dtype(), {cols, rows});
  const size_t esz = ir::dtype_size(t.dtype());
  const uint8_t* src = t.data();
  uint8_t* dst = out.mutable_data();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      std::memcpy(dst + static_cast<size_t>(c * rows + r) * esz,
                  src + static_cast<size_t>(r * cols + c) * esz, esz);
  return out;
}

}  // namespace

Status unflatten_gemm(Graph& g, PassContext& ctx) {
  for (size_t gi = 0; gi < g.nodes.size(); ++gi) {
    Node& gemm = g.nodes[gi];
    if (gemm.dead || gemm.op != OpKind::Gemm || gemm.outputs.size() != 1) continue;
    if (gemm.attrs.get_float("alpha", 1.0) != 1.0 || gemm.attrs.get_int("transA", 0) != 0) continue;
    if (gemm.has_input(2) && gemm.attrs.get_float("beta", 1.0) != 1.0) continue;
    const NodeId flat_id = g.value(gemm.inputs[0]).producer;
    if (flat_id < 0 || !is_flattening_view(g.node(flat_id).op)) continue;
    if (private_consumer(g, gemm.inputs[0]) != static_cast<NodeId>(gi)) continue;
    const ValueId x = g.node(flat_id).inputs[0];
    const ir::Shape x_shape = g.value(x).shape;
    if (!g.value(x).has_shape) continue;
    const ir::Shape a_shape = g.value(gemm.inputs[0]).shape;
    if (a_shape.size() != 2) continue;
    const NodeId unflat_id = private_consumer(g, gemm.outputs[0]);
    if (unflat_id < 0 || g.node(unflat_id).op != OpKind::Reshape) continue;
    const ValueId y = g.node(unflat_id).outputs[0];
    const int64_t n = g.value(gemm.outputs[0]).shape[1];
    const ir::Shape y_shape = g.value(y).shape;
    if (y_shape.size() < 3 || y_shape.back() != n) continue;
    int64_t lead = 1;  // Y's leading dims must hold the GEMM's M rows
    for (size_t d = 0; d + 1 < y_shape.size(); ++d) lead *= y_shape[d];
    if (lead != a_shape[0]) continue;
    ir::Shape x_view(y_shape.begin(), y_shape.end() - 1);  // Y.shape[:-1] + [K]
    x_view.push_back(a_shape[1]);
    // The view's target: over a shape range the opt shape's numbers would
    // fix the leading dims, so those X shares with Y are 0 (ONNX's "copy the
    // input's dim"); a range whose other leading dims differ keeps the views.
    ir::Shape target_dims = x_view;
    if (ctx.shape_range) {
      bool copies = true;
      for (size_t d = 0; d + 1 < x_view.size(); ++d) {
        if (d < x_shape.size() && x_shape[d] == x_view[d])
          target_dims[d] = 0;
        else
          copies = false;
      }
      if (!copies && x_view != x_shape) continue;
    }
    const bool trans_b = gemm.attrs.get_int("transB", 0) != 0;
    if (trans_b && !is_constant(g, gemm.inputs[1])) continue;
    const ValueId bias = gemm.input(2);
    if (bias != ir::kNoValue) {
      const ir::Shape& bs = g.value(bias).shape;
      const bool row =
          (bs.size() == 1 && bs[0] == n) || (bs.size() == 2 && bs[0] == 1 && bs[1] == n);
      if (!row) continue;
    }

    ValueId weight = gemm.inputs[1];
    if (trans_b) {
      weight = g.add_constant(g.unique_name(g.value(weight).name + "/transposed"),
                              transpose_2d(*g.value(weight).constant));
    }
    // The flattening view becomes the [.., K] view MatMul reads (or goes).
    ValueId a = x;
    if (x_view == x_shape) {
      g.node(flat_id).dead = true;
    } else {
      const int64_t rank = static_cast<int64_t>(x_view.size());
      const ValueId target = g.add_constant(g.unique_name(g.node(flat_id).name + "/shape"),
                                            ir::Tensor::from_i64(target_dims, {rank}));
      Node& view = g.node(flat_id);
      view.op = OpKind::Reshape;
      view.attrs = {};
      view.inputs = {x, target};
      a = view.outputs[0];
      g.value(a).shape = x_view;
    }
    ir::Value product = g.value(y);  // dtype and shape of Y
    product.name = g.unique_name(gemm.name + "/product");
    product.constant.reset();
    product.producer = -1;
    Node& matmul = g.nodes[gi];
    matmul.op = OpKind::MatMul;
    matmul.attrs = {};
    Node& tail = g.node(unflat_id);
    if (bias == ir::kNoValue) {
      matmul.inputs = {a, weight};
      matmul.outputs = {y};
      tail.dead = true;
    } else {
      const ValueId pid = g.add_value(std::move(product));
      Node& mm = g.nodes[gi];  // add_value may not move nodes, but re-fetch for clarity
      mm.inputs = {a, weight};
      mm.outputs = {pid};
      Node& add = g.node(unflat_id);
      add.op = OpKind::Add;
      add.attrs = {};
      add.inputs = {pid, bias};
    }
    g.rebuild_producers();
    ctx.count("unflatten-gemm: Reshape/Gemm/Reshape -> MatMul + Add");
  }
  return Status::ok_status();
}

}  // namespace graphc::optimizer
