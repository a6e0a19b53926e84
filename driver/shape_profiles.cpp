#include "driver/shape_profiles.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>

#include "driver/load_model.h"

namespace graphc::driver {

bool ShapeProfile::is_static() const {
  return std::all_of(inputs.begin(), inputs.end(),
                     [](const auto& entry) { return entry.second.is_static(); });
}

std::map<std::string, ir::Shape> ShapeProfile::at_opt() const {
  std::map<std::string, ir::Shape> out;
  for (const auto& [name, range] : inputs) out[name] = range.opt;
  return out;
}

std::optional<std::map<std::string, ir::Shape>> single_shape(
    const std::vector<ShapeProfile>& profiles) {
  if (profiles.empty()) return std::map<std::string, ir::Shape>{};
  for (const auto& p : profiles)
    if (!p.is_static() || p.inputs != profiles.front().inputs) return std::nullopt;
  return profiles.front().at_opt();
}

Expected<ShapeRange> parse_shape_range(const std::string& text) {
  std::vector<std::string> parts;
  size_t pos = 0;
  while (true) {
    const size_t slash = text.find('/', pos);
    parts.push_back(text.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos));
    if (slash == std::string::npos) break;
    pos = slash + 1;
  }
  if (parts.size() != 1 && parts.size() != 3)
    return invalid_argument("'{}' must be MIN/OPT/MAX (e.g. 1x8/8x128/32x512) or one shape",
                            text);
  std::vector<ir::Shape> shapes;
  for (const auto& part : parts) {
    // parse_shape_flag's dims syntax, with a placeholder name.
    auto parsed = parse_shape_flag("_:" + part);
    if (!parsed.ok())
      return invalid_argument("'{}': '{}' is not a shape (DxDx..., or 'scalar')", text, part);
    shapes.push_back(parsed->second);
  }
  if (shapes.size() == 1) return ShapeRange{shapes[0], shapes[0], shapes[0]};
  return ShapeRange{shapes[0], shapes[1], shapes[2]};
}

Expected<ShapeProfile> parse_profile_flag(const std::string& text) {
  ShapeProfile profile;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = text.find(',', pos);
    const std::string item =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    const size_t colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0)
      return invalid_argument("--shape-profile '{}': '{}' must look like NAME:MIN/OPT/MAX", text, item);
    const std::string name = item.substr(0, colon);
    auto range = parse_shape_range(item.substr(colon + 1));
    if (!range.ok()) return range.status().with_context(fmt::format("--shape-profile input '{}'", name));
    if (!profile.inputs.emplace(name, *range).second)
      return invalid_argument("--shape-profile '{}' gives input '{}' twice", text, name);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return profile;
}

std::string range_to_string(const ShapeRange& r) {
  if (r.is_static() && r.opt == r.min) return ir::shape_to_string(r.min);
  return fmt::format("{} / {} / {}", ir::shape_to_string(r.min), ir::shape_to_string(r.opt),
                     ir::shape_to_string(r.max));
}

Status check_range(const std::string& where, const ShapeRange& r) {
  if (r.min.size() != r.opt.size() || r.opt.size() != r.max.size())
    return invalid_argument("{}: min {}, opt {} and max {} have different ranks", where,
                            ir::shape_to_string(r.min), ir::shape_to_string(r.opt),
                            ir::shape_to_string(r.max));
  for (size_t d = 0; d < r.min.size(); ++d) {
    if (r.min[d] < 0)
      return invalid_argument("{} dim {}: min {} is negative", where, d, r.min[d]);
    if (r.opt[d] < r.min[d])
      return invalid_argument("{} dim {}: opt {} is below min {}", where, d, r.opt[d], r.min[d]);
    if (r.max[d] < r.opt[d])
      return invalid_argument("{} dim {}: max {} is below opt {}", where, d, r.max[d], r.opt[d]);
  }
  return Status::ok_status();
}

namespace {

// A dim that varies over the profile: every (input, axis) it stands for.
struct FreeDim {
  std::string label;  // "'batch'" (a model dim name) or "x dim 0"
  int64_t min = 0, opt = 0, max = 0;
  std::vector<std::pair<std::string, size_t>> members;
};

std::string dim_name(const ir::Value& v, size_t d) {
  return d < v.dim_names.size() ? v.dim_names[d] : std::string();
}

// Free dims of a checked profile, dims the model names alike merged.
std::vector<FreeDim> free_dims(const ir::Graph& g, const ShapeProfile& p) {
  std::vector<FreeDim> dims;
  std::map<std::string, size_t> by_name;
  for (const auto& [input, r] : p.inputs) {
    auto id = g.find_value(input);
    for (size_t d = 0; d < r.min.size(); ++d) {
      if (r.min[d] == r.max[d]) continue;
      const std::string name = id ? dim_name(g.value(*id), d) : std::string();
      auto it = name.empty() ? by_name.end() : by_name.find(name);
      if (it != by_name.end()) {
        dims[it->second].members.emplace_back(input, d);
        continue;
      }
      if (!name.empty()) by_name[name] = dims.size();
      dims.push_back({name.empty() ? fmt::format("{} dim {}", input, d) : "'" + name + "'",
                      r.min[d], r.opt[d], r.max[d], {{input, d}}});
    }
  }
  return dims;
}

// An odd value strictly between lo and hi near `target` (target itself when no
// odd value fits), or nothing when the range has no inside.
std::optional<int64_t> odd_inside(int64_t lo, int64_t hi, int64_t target) {
  if (hi - lo < 2) return std::nullopt;
  int64_t v = std::clamp(target, lo + 1, hi - 1);
  if (v % 2 == 0) v = v + 1 < hi ? v + 1 : v - 1;
  return v > lo && v < hi ? v : std::clamp(target, lo + 1, hi - 1);
}

std::string point_to_string(const std::map<std::string, ir::Shape>& point) {
  std::string out;
  for (const auto& [name, shape] : point)
    out += fmt::format("{}{}:{}", out.empty() ? "" : ",", name, ir::shape_to_string(shape));
  return out;
}

}  // namespace

Status check_profile_against_model(const ir::Graph& g, const ShapeProfile& p, size_t index) {
  std::string known;
  for (ir::ValueId in : g.inputs) known += (known.empty() ? "" : ", ") + g.value(in).name;
  // Model dim name -> the first (input, dim, range) that gave it.
  std::map<std::string, std::tuple<std::string, size_t, int64_t, int64_t, int64_t>> named;
  for (const auto& [input, r] : p.inputs) {
    const std::string where = fmt::format("profile {}, input '{}'", index, input);
    auto id = g.find_value(input);
    if (!id || !g.is_graph_input(*id))
      return invalid_argument("profile {} names '{}', which is not a model input (inputs: {})",
                              index, input, known);
    RETURN_IF_ERROR(check_range(where, r));
    const ir::Value& v = g.value(*id);
    if (!v.has_shape) continue;  // rank unknown to the model: the range decides
    if (v.shape.size() != r.min.size())
      return invalid_argument("{}: the range {} has rank {}, but the model declares rank {} ({})",
                              where, range_to_string(r), r.min.size(), v.shape.size(),
                              ir::shape_to_string(v.shape));
    for (size_t d = 0; d < r.min.size(); ++d) {
      const std::string name = dim_name(v, d);
      if (name.empty() && v.shape[d] >= 0) {
        if (r.min[d] != v.shape[d] || r.max[d] != v.shape[d])
          return invalid_argument("{} dim {}: the model fixes it at {}, the range is {}..{}",
                                  where, d, v.shape[d], r.min[d], r.max[d]);
        continue;
      }
      if (name.empty()) continue;
      auto [it, fresh] = named.emplace(name, std::make_tuple(input, d, r.min[d], r.opt[d], r.max[d]));
      if (fresh) continue;
      const auto& [first, first_dim, lo, opt, hi] = it->second;
      if (lo != r.min[d] || opt != r.opt[d] || hi != r.max[d])
        return invalid_argument(
            "profile {}: input '{}' dim {} and input '{}' dim {} are the model's dim '{}', but "
            "their ranges differ ({}/{}/{} and {}/{}/{}): give both the same min/opt/max",
            index, first, first_dim, input, d, name, lo, opt, hi, r.min[d], r.opt[d], r.max[d]);
    }
  }
  for (ir::ValueId in : g.inputs) {
    const ir::Value& v = g.value(in);
    if (p.inputs.count(v.name)) continue;
    std::vector<std::string> symbolic;
    for (size_t d = 0; d < v.shape.size(); ++d)
      if (v.shape[d] < 0) symbolic.push_back(dim_name(v, d).empty() ? "?" : dim_name(v, d));
    if (!v.has_shape) symbolic.push_back("unknown rank");
    if (!symbolic.empty())
      return invalid_argument(
          "profile {} does not give input '{}' (declared {}; symbolic: {}): add {}:MIN/OPT/MAX",
          index, v.name, ir::shape_to_string(v.shape), fmt::join(symbolic, ", "), v.name);
  }
  return Status::ok_status();
}

std::vector<std::map<std::string, ir::Shape>> range_check_points(const ir::Graph& g,
                                                                 const ShapeProfile& p) {
  const std::vector<FreeDim> dims = free_dims(g, p);
  // A point as one value per free dim, applied over the opt shapes.
  auto make = [&](const std::vector<int64_t>& values) {
    auto point = p.at_opt();
    for (size_t k = 0; k < dims.size(); ++k)
      for (const auto& [input, d] : dims[k].members) point[input][d] = values[k];
    return point;
  };
  auto pick = [&](auto&& f) {
    std::vector<int64_t> values(dims.size());
    for (size_t k = 0; k < dims.size(); ++k) values[k] = f(dims[k], k);
    return values;
  };
  std::set<std::vector<int64_t>> chosen;
  chosen.insert(pick([](const FreeDim& f, size_t) { return f.min; }));
  chosen.insert(pick([](const FreeDim& f, size_t) { return f.opt; }));
  chosen.insert(pick([](const FreeDim& f, size_t) { return f.max; }));
  for (size_t k = 0; k < dims.size(); ++k) {
    for (bool high : {false, true}) {
      auto values = pick([](const FreeDim& f, size_t) { return f.opt; });
      values[k] = high ? dims[k].max : dims[k].min;
      chosen.insert(values);
    }
  }
  if (dims.size() <= 4) {
    for (uint32_t mask = 0; mask < (1u << dims.size()); ++mask)
      chosen.insert(pick([&](const FreeDim& f, size_t k) { return (mask >> k) & 1 ? f.max : f.min; }));
  }
  for (int third : {1, 2}) {
    auto values = pick([&](const FreeDim& f, size_t) {
      return odd_inside(f.min, f.max, f.min + (f.max - f.min) * third / 3).value_or(f.opt);
    });
    chosen.insert(values);
  }
  std::vector<std::map<std::string, ir::Shape>> points;
  for (const auto& values : chosen) points.push_back(make(values));
  return points;
}

namespace {

// Infers concrete shapes at every range_check_points point (a checked
// profile); with `symbolic`, also compares every value's symbolic shape there.
Status infer_at_points(const ir::Graph& imported, const ShapeProfile& p, size_t index,
                       const ir::SymbolicShapes* symbolic, size_t* points_checked) {
  const std::vector<FreeDim> dims = free_dims(imported, p);
  const auto points = range_check_points(imported, p);
  for (const auto& point : points) {
    ir::Graph copy = imported;  // tensors are shared, not copied
    Status st = bind_input_shapes(copy, point);
    if (st.ok()) st = infer_graph_shapes(copy);
    if (!st.ok())
      return invalid_argument("profile {}: the model does not take the input shapes {}, inside "
                              "the range: {}",
                              index, point_to_string(point), st.message());
    if (!symbolic) continue;
    std::vector<int64_t> values;  // symbol k is free dim k
    for (const FreeDim& f : dims) values.push_back(point.at(f.members.front().first)[f.members.front().second]);
    st = ir::check_symbolic_shapes_at(*symbolic, copy, values);
    if (!st.ok())
      return st.with_context(fmt::format("profile {} at {}", index, point_to_string(point)));
  }
  if (points_checked) *points_checked = points.size();
  return Status::ok_status();
}

}  // namespace

Status check_profile_over_range(const ir::Graph& imported, const ShapeProfile& p, size_t index,
                                size_t* points_checked) {
  RETURN_IF_ERROR(check_profile_against_model(imported, p, index));
  return infer_at_points(imported, p, index, nullptr, points_checked);
}

ShapeProfile bounding_profile(const std::vector<ShapeProfile>& profiles) {
  ShapeProfile out;
  for (const auto& p : profiles)
    for (const auto& [name, r] : p.inputs) {
      auto [it, fresh] = out.inputs.emplace(name, r);
      if (fresh || it->second.min.size() != r.min.size()) continue;
      for (size_t d = 0; d < r.min.size(); ++d) {
        it->second.min[d] = std::min(it->second.min[d], r.min[d]);
        it->second.max[d] = std::max(it->second.max[d], r.max[d]);
      }
    }
  return out;
}

ir::SymbolicInputs profile_symbolic_inputs(const ir::Graph& imported, const ShapeProfile& p,
                                           std::vector<int64_t>* opt) {
  const std::vector<FreeDim> dims = free_dims(imported, p);
  ir::SymbolicInputs out;
  for (const auto& [name, r] : p.inputs) {
    ir::SymShape s;
    for (int64_t d : r.opt) s.emplace_back(d);
    out.inputs[name] = std::move(s);
  }
  if (opt) opt->clear();
  for (size_t k = 0; k < dims.size(); ++k) {
    const FreeDim& f = dims[k];
    const auto& [input, axis] = f.members.front();
    out.symbols.names.push_back(f.label.front() == '\'' ? f.label.substr(1, f.label.size() - 2)
                                                        : fmt::format("{}.{}", input, axis));
    out.symbols.min.push_back(f.min);
    out.symbols.max.push_back(f.max);
    if (opt) opt->push_back(f.opt);
    for (const auto& [member, d] : f.members)
      out.inputs[member][d] = ir::DimExpr::symbol(static_cast<int>(k));
  }
  return out;
}

Expected<std::vector<int64_t>> symbol_values_at(const ir::Graph& imported, const ShapeProfile& p,
                                                const std::map<std::string, ir::Shape>& point) {
  const std::vector<FreeDim> dims = free_dims(imported, p);
  std::vector<int64_t> values;
  for (const auto& [name, r] : p.inputs) {
    auto it = point.find(name);
    if (it == point.end()) return invalid_argument("no shape given for input '{}'", name);
    if (it->second.size() != r.min.size())
      return invalid_argument("input '{}': shape {} has rank {}, the profile's is {}", name,
                              ir::shape_to_string(it->second), it->second.size(), r.min.size());
    for (size_t d = 0; d < r.min.size(); ++d)
      if (it->second[d] < r.min[d] || it->second[d] > r.max[d])
        return out_of_range("input '{}' dim {} is {}, outside the profile's range [{}, {}]", name,
                            d, it->second[d], r.min[d], r.max[d]);
  }
  for (const FreeDim& f : dims) {
    const auto& [input, axis] = f.members.front();
    const int64_t v = point.at(input)[axis];
    for (const auto& [member, d] : f.members)
      if (point.at(member)[d] != v)
        return invalid_argument("input '{}' dim {} is {} but input '{}' dim {} is {}: the model "
                                "names both {}", member, d, point.at(member)[d], input, axis, v,
                                f.label);
    values.push_back(v);
  }
  return values;
}

Expected<ir::SymbolicShapes> symbolic_shapes(const ir::Graph& imported, const ShapeProfile& p,
                                             size_t index, size_t* points_checked) {
  RETURN_IF_ERROR(check_profile_against_model(imported, p, index));
  const ir::SymbolicInputs in = profile_symbolic_inputs(imported, p);
  const ir::SymbolTable& table = in.symbols;
  const std::map<std::string, ir::SymShape>& inputs = in.inputs;
  ir::Graph typed = imported;
  Status st = bind_input_shapes(typed, p.at_opt());
  if (st.ok()) st = infer_graph_shapes(typed);
  if (!st.ok()) return st.with_context(fmt::format("profile {} at its opt shapes", index));
  auto sym = ir::infer_symbolic_shapes(typed, inputs, table);
  if (!sym.ok()) return sym.status().with_context(fmt::format("profile {}", index));
  RETURN_IF_ERROR(infer_at_points(imported, p, index, &*sym, points_checked));
  return sym;
}

}  // namespace graphc::driver
