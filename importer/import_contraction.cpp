// Importers for MatMul, Gemm, Einsum, Conv and ConvTranspose. Their
// signatures are unchanged across opsets 7..21 (Gemm's C became optional in
// opset 11, which the canonical form already allows), so the importers only
// check attribute kinds (the IR getters fall back to defaults on a kind
// mismatch, which would silently change the meaning) and drop Gemm's
// pre-opset-7 `broadcast` flag, which the canonical broadcasting subsumes.
#include <utility>

#include "importer/node_importers.h"

namespace graphc::importer {

namespace {

using Kind = ir::Attribute::Kind;

Status check_kinds(NodeImportContext& ctx,
                   std::initializer_list<std::pair<const char*, Kind>> expected) {
  for (const auto& [name, kind] : expected) {
    const ir::Attribute* a = ctx.node.attrs.find(name);
    if (a && a->kind != kind)
      return invalid_model("attribute '{}' must be of type {}, got {}", name,
                           ir::attribute_kind_name(kind), ir::attribute_kind_name(a->kind));
  }
  return Status::ok_status();
}

Status import_Gemm(NodeImportContext& ctx) {
  ctx.node.attrs.erase("broadcast");
  return check_kinds(ctx, {{"alpha", Kind::kFloat},
                           {"beta", Kind::kFloat},
                           {"transA", Kind::kInt},
                           {"transB", Kind::kInt}});
}

Status import_Einsum(NodeImportContext& ctx) {
  if (!ctx.node.attrs.has("equation"))
    return invalid_model("Einsum needs the attribute 'equation'");
  return check_kinds(ctx, {{"equation", Kind::kString}});
}

Status import_conv(NodeImportContext& ctx) {
  return check_kinds(ctx, {{"auto_pad", Kind::kString},
                           {"dilations", Kind::kInts},
                           {"group", Kind::kInt},
                           {"kernel_shape", Kind::kInts},
                           {"pads", Kind::kInts},
                           {"strides", Kind::kInts},
                           {"output_padding", Kind::kInts},
                           {"output_shape", Kind::kInts}});
}

}  // namespace

void register_contraction_importers(ImporterTable& table) {
  table[static_cast<size_t>(ir::OpKind::Gemm)] = &import_Gemm;
  table[static_cast<size_t>(ir::OpKind::Einsum)] = &import_Einsum;
  table[static_cast<size_t>(ir::OpKind::Conv)] = &import_conv;
  table[static_cast<size_t>(ir::OpKind::ConvTranspose)] = &import_conv;
}

}  // namespace graphc::importer
