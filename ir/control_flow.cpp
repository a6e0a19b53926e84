#include "ir/control_flow.h"

namespace graphc::ir {

int64_t captured_count(const Node& n) { return n.attrs.get_int("_captures", 0); }

Expected<Graph> infer_subgraph(const Graph& sub, const std::vector<SubgraphInput>& inputs,
                               const ShapeInferenceOptions& options) {
  if (inputs.size() != sub.inputs.size())
    return invalid_model("the sub-graph '{}' takes {} inputs, the node gives it {}", sub.name,
                         sub.inputs.size(), inputs.size());
  Graph g = sub;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Value& v = g.value(g.inputs[i]);
    const SubgraphInput& in = inputs[i];
    if (v.dtype != DType::kUndefined && v.dtype != in.dtype)
      return invalid_model("sub-graph '{}' input '{}' is declared {}, the node gives it {}",
                           sub.name, v.name, dtype_name(v.dtype), dtype_name(in.dtype));
    if (v.has_shape && v.shape.size() != in.shape.size())
      return invalid_model("sub-graph '{}' input '{}' is declared rank {}, the node gives it [{}]",
                           sub.name, v.name, v.shape.size(), shape_to_string(in.shape));
    for (size_t d = 0; v.has_shape && d < v.shape.size(); ++d)
      if (v.shape[d] >= 0 && v.shape[d] != in.shape[d])
        return invalid_model("sub-graph '{}' input '{}' is declared [{}], the node gives it [{}]",
                             sub.name, v.name, shape_to_string(v.shape), shape_to_string(in.shape));
    v.dtype = in.dtype;
    v.shape = in.shape;
    v.has_shape = true;
    v.dim_names.clear();
    if (in.constant) v.constant = *in.constant;
    else v.constant.reset();
  }
  Status st = infer_shapes(g, options);
  if (!st.ok()) return st.with_context(fmt::format("sub-graph '{}'", sub.name));
  return g;
}

Shape shape_without_axis(const Shape& s, int64_t axis) {
  Shape out = s;
  out.erase(out.begin() + axis);
  return out;
}

Shape shape_with_axis(const Shape& s, int64_t axis, int64_t n) {
  Shape out = s;
  out.insert(out.begin() + axis, n);
  return out;
}

Expected<ScanParams> scan_params(const Node& n, const std::vector<const Shape*>& input_shapes) {
  ScanParams p;
  p.batched = n.attrs.get_int("_batched", 0) != 0;
  p.scans = n.attrs.get_int("num_scan_inputs", 0);
  p.captures = captured_count(n);
  const auto nin = static_cast<int64_t>(n.inputs.size());
  if (p.scans <= 0 || p.scans + p.captures > nin)
    return invalid_model("num_scan_inputs is {}; the node has {} inputs ({} captured)", p.scans,
                         nin, p.captures);
  p.states = nin - p.scans - p.captures;
  p.outputs = static_cast<int64_t>(n.outputs.size()) - p.states;
  if (p.outputs < 0)
    return invalid_model("Scan has {} outputs, fewer than its {} state variables", n.outputs.size(),
                         p.states);
  for (int64_t i = 0; i < nin; ++i)
    if (!input_shapes[static_cast<size_t>(i)])
      return invalid_model("Scan input {} is empty", i);
  auto list = [&](const char* name, int64_t count) -> Expected<std::vector<int64_t>> {
    std::vector<int64_t> v = n.attrs.get_ints(name);
    if (v.empty()) return std::vector<int64_t>(static_cast<size_t>(count), 0);
    if (static_cast<int64_t>(v.size()) != count)
      return invalid_model("attribute '{}' has {} entries, the node has {}", name, v.size(), count);
    return v;
  };
  ASSIGN_OR_RETURN(p.input_axes, list("scan_input_axes", p.scans));
  ASSIGN_OR_RETURN(p.input_reverse, list("scan_input_directions", p.scans));
  ASSIGN_OR_RETURN(p.output_axes, list("scan_output_axes", p.outputs));
  ASSIGN_OR_RETURN(p.output_reverse, list("scan_output_directions", p.outputs));
  const int64_t lead = p.batched ? 1 : 0;
  if (p.batched) {
    p.batch = (*input_shapes[0]).empty() ? -1 : (*input_shapes[0])[0];
    for (int64_t i = 0; i < p.states + p.scans; ++i) {
      const Shape& s = *input_shapes[static_cast<size_t>(i)];
      if (s.empty() || s[0] != p.batch)
        return invalid_model("Scan (opset 8) input {} is [{}]; every state and scan input needs "
                             "the batch dim {} first",
                             i, shape_to_string(s), p.batch);
    }
  }
  for (int64_t j = 0; j < p.scans; ++j) {
    const Shape& s = *input_shapes[static_cast<size_t>(p.states + j)];
    auto rank = static_cast<int64_t>(s.size()) - lead;
    ASSIGN_OR_RETURN(int64_t axis, normalize_axis(p.input_axes[static_cast<size_t>(j)], rank));
    p.input_axes[static_cast<size_t>(j)] = axis;
    int64_t len = s[static_cast<size_t>(axis + lead)];
    if (j == 0) p.seq_len = len;
    if (len != p.seq_len)
      return invalid_model("Scan input {} has {} steps along axis {}, input {} has {}",
                           p.states + j, len, axis, p.states, p.seq_len);
  }
  return p;
}

}  // namespace graphc::ir
