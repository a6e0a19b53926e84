// Importer checks for Attention (opsets 23-25, one canonical form: the newest
// signature). Opset 24 added input 6 (nonpad_kv_seqlen), opset 25 the
// left/right_window_size attributes: a model of an older opset that uses them
// is refused rather than read with a meaning its opset does not have. The
// attribute kinds are checked because the IR getters fall back to defaults on
// a kind mismatch, which would silently change the meaning.
#include <utility>

#include "importer/node_importers.h"
#include "ir/attention_params.h"

namespace graphc::importer {

namespace {

using Kind = ir::Attribute::Kind;

Status import_Attention(NodeImportContext& ctx) {
  const std::pair<const char*, Kind> kinds[] = {
      {"is_causal", Kind::kInt},         {"kv_num_heads", Kind::kInt},
      {"q_num_heads", Kind::kInt},       {"qk_matmul_output_mode", Kind::kInt},
      {"scale", Kind::kFloat},           {"softcap", Kind::kFloat},
      {"softmax_precision", Kind::kInt}, {"left_window_size", Kind::kInt},
      {"right_window_size", Kind::kInt}};
  for (const auto& [name, kind] : kinds) {
    const ir::Attribute* a = ctx.node.attrs.find(name);
    if (a && a->kind != kind)
      return invalid_model("attribute '{}' must be of type {}, got {}", name,
                           ir::attribute_kind_name(kind), ir::attribute_kind_name(a->kind));
  }
  for (const auto& [name, kind] : ctx.node.attrs.items()) {
    bool known = false;
    for (const auto& k : kinds) known = known || name == k.first;
    if (!known) return invalid_model("Attention has no attribute '{}'", name);
  }
  if (ctx.opset < 24 && ctx.node.inputs.size() > ir::kAttnNonpadKvSeqlen &&
      ctx.node.inputs[ir::kAttnNonpadKvSeqlen] != ir::kNoValue)
    return invalid_model(
        "Attention input 6 (nonpad_kv_seqlen) exists from opset 24; the model is opset {}",
        ctx.opset);
  if (ctx.opset < 25)
    for (const char* name : {"left_window_size", "right_window_size"})
      if (ctx.node.attrs.has(name))
        return invalid_model("Attention attribute '{}' exists from opset 25; the model is opset {}",
                             name, ctx.opset);
  return Status::ok_status();
}

}  // namespace

void register_attention_importers(ImporterTable& table) {
  table[static_cast<size_t>(ir::OpKind::Attention)] = &import_Attention;
}

}  // namespace graphc::importer
