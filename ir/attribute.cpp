#include "ir/attribute.h"

#include <fmt/format.h>

namespace graphc::ir {

bool Attribute::operator==(const Attribute& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::kInt: return i == o.i;
    case Kind::kFloat: return f == o.f;
    case Kind::kString: return s == o.s;
    case Kind::kInts: return ints == o.ints;
    case Kind::kFloats: return floats == o.floats;
    case Kind::kStrings: return strings == o.strings;
    case Kind::kTensor: return t.same_bytes(o.t);
  }
  return false;
}

std::string Attribute::to_string() const {
  switch (kind) {
    case Kind::kInt: return std::to_string(i);
    case Kind::kFloat: return fmt::format("{:g}", f);
    case Kind::kString: return "\"" + s + "\"";
    case Kind::kInts: return fmt::format("[{}]", fmt::join(ints, ","));
    case Kind::kFloats: return fmt::format("[{}]", fmt::join(floats, ","));
    case Kind::kStrings: {
      std::string out = "[";
      for (size_t k = 0; k < strings.size(); ++k) out += (k ? ",\"" : "\"") + strings[k] + "\"";
      return out + "]";
    }
    case Kind::kTensor:
      return fmt::format("tensor<{},{}>", dtype_name(t.dtype()), shape_to_string(t.shape()));
  }
  return "?";
}

const char* attribute_kind_name(Attribute::Kind kind) {
  switch (kind) {
    case Attribute::Kind::kInt: return "int";
    case Attribute::Kind::kFloat: return "float";
    case Attribute::Kind::kString: return "string";
    case Attribute::Kind::kInts: return "ints";
    case Attribute::Kind::kFloats: return "floats";
    case Attribute::Kind::kStrings: return "strings";
    case Attribute::Kind::kTensor: return "tensor";
  }
  return "?";
}

const Attribute* AttributeMap::find(const std::string& name) const {
  auto it = map_.find(name);
  return it == map_.end() ? nullptr : &it->second;
}

int64_t AttributeMap::get_int(const std::string& name, int64_t def) const {
  const auto* a = find(name);
  return a && a->kind == Attribute::Kind::kInt ? a->i : def;
}
double AttributeMap::get_float(const std::string& name, double def) const {
  const auto* a = find(name);
  if (a && a->kind == Attribute::Kind::kFloat) return a->f;
  if (a && a->kind == Attribute::Kind::kInt) return static_cast<double>(a->i);
  return def;
}
std::string AttributeMap::get_string(const std::string& name, const std::string& def) const {
  const auto* a = find(name);
  return a && a->kind == Attribute::Kind::kString ? a->s : def;
}
std::vector<int64_t> AttributeMap::get_ints(const std::string& name,
                                            std::vector<int64_t> def) const {
  const auto* a = find(name);
  return a && a->kind == Attribute::Kind::kInts ? a->ints : def;
}
std::vector<double> AttributeMap::get_floats(const std::string& name,
                                             std::vector<double> def) const {
  const auto* a = find(name);
  return a && a->kind == Attribute::Kind::kFloats ? a->floats : def;
}

}  // namespace graphc::ir
