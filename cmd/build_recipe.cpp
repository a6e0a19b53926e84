#include "cmd/build_recipe.h"

#include <set>

namespace graphc::cli {

namespace {

void put_shape(google::protobuf::RepeatedField<int64_t>* out, const ir::Shape& shape) {
  for (int64_t d : shape) out->Add(d);
}

ir::Shape shape_of(const google::protobuf::RepeatedField<int64_t>& dims) {
  return ir::Shape(dims.begin(), dims.end());
}

}  // namespace

engine::BuildRecipe record_recipe(const BuildFlags& f, const std::vector<std::string>& archs,
                                  const std::vector<driver::ShapeProfile>& profiles) {
  engine::BuildRecipe r;
  for (const auto& arch : archs) r.add_archs(arch);
  r.set_precision(precision_name(f.opt));
  r.set_convert_io(f.opt.convert_io);
  // As the pass manager takes them: a set.
  for (const auto& pass :
       std::set<std::string>(f.opt.disable_pass.begin(), f.opt.disable_pass.end()))
    r.add_disabled_passes(pass);
  r.set_no_optimize(f.opt.no_optimize);
  r.set_gemm(f.lowering.gemm);
  r.set_conv(f.lowering.conv);
  r.set_attention(f.lowering.attention);
  r.set_allow_tf32(f.lowering.allow_tf32);
  r.set_int8_gemm(f.opt.int8_gemm);
  if (f.opt.int8_precision != "same") r.set_int8_precision(f.opt.int8_precision);
  for (const auto& profile : profiles) {
    engine::RecipeProfile* p = r.add_profiles();
    for (const auto& [name, range] : profile.inputs) {  // a map: sorted by name
      engine::RecipeInput* in = p->add_inputs();
      in->set_name(name);
      put_shape(in->mutable_range()->mutable_min(), range.min);
      put_shape(in->mutable_range()->mutable_opt(), range.opt);
      put_shape(in->mutable_range()->mutable_max(), range.max);
    }
  }
  return r;
}

BuildFlags flags_from_recipe(const engine::BuildRecipe& r) {
  BuildFlags f;
  f.opt.precision = r.precision();
  f.opt.convert_io = r.convert_io();
  f.opt.disable_pass.assign(r.disabled_passes().begin(), r.disabled_passes().end());
  f.opt.no_optimize = r.no_optimize();
  f.lowering.gemm = r.gemm();
  f.lowering.conv = r.conv();
  f.lowering.attention = r.attention();
  f.lowering.allow_tf32 = r.allow_tf32();
  f.opt.int8_gemm = r.int8_gemm();
  if (!r.int8_precision().empty()) f.opt.int8_precision = r.int8_precision();
  f.archs = recipe_archs(r);
  return f;
}

std::vector<std::string> recipe_archs(const engine::BuildRecipe& r) {
  return {r.archs().begin(), r.archs().end()};
}

std::vector<driver::ShapeProfile> recipe_profiles(const engine::BuildRecipe& r) {
  std::vector<driver::ShapeProfile> profiles;
  for (const auto& p : r.profiles()) {
    driver::ShapeProfile& out = profiles.emplace_back();
    for (const auto& in : p.inputs())
      out.inputs[in.name()] = {shape_of(in.range().min()), shape_of(in.range().opt()),
                               shape_of(in.range().max())};
  }
  if (profiles.empty()) profiles.emplace_back();  // as parse_shape_profiles gives without flags
  return profiles;
}

}  // namespace graphc::cli
