// Node attributes: a small tagged union over the ONNX attribute kinds graphc uses.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace graphc::ir {

struct Attribute {
  enum class Kind { kInt, kFloat, kString, kInts, kFloats, kStrings, kTensor };
  Kind kind = Kind::kInt;
  int64_t i = 0;
  double f = 0.0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<std::string> strings;
  Tensor t;

  static Attribute of_int(int64_t v) { Attribute a; a.kind = Kind::kInt; a.i = v; return a; }
  static Attribute of_float(double v) { Attribute a; a.kind = Kind::kFloat; a.f = v; return a; }
  static Attribute of_string(std::string v) {
    Attribute a; a.kind = Kind::kString; a.s = std::move(v); return a;
  }
  static Attribute of_ints(std::vector<int64_t> v) {
    Attribute a; a.kind = Kind::kInts; a.ints = std::move(v); return a;
  }
  static Attribute of_floats(std::vector<double> v) {
    Attribute a; a.kind = Kind::kFloats; a.floats = std::move(v); return a;
  }
  static Attribute of_strings(std::vector<std::string> v) {
    Attribute a; a.kind = Kind::kStrings; a.strings = std::move(v); return a;
  }
  static Attribute of_tensor(Tensor v) {
    Attribute a; a.kind = Kind::kTensor; a.t = std::move(v); return a;
  }
  bool operator==(const Attribute& o) const;
  std::string to_string() const;  // stable text form for the IR printer
};

const char* attribute_kind_name(Attribute::Kind kind);

// Ordered so printing and hashing are deterministic.
class AttributeMap {
 public:
  bool has(const std::string& name) const { return map_.count(name) != 0; }
  const Attribute* find(const std::string& name) const;
  void set(const std::string& name, Attribute a) { map_[name] = std::move(a); }
  void erase(const std::string& name) { map_.erase(name); }

  // Typed getters with defaults. The importer has already checked kinds, so a
  // kind mismatch here falls back to the default.
  int64_t get_int(const std::string& name, int64_t def) const;
  double get_float(const std::string& name, double def) const;
  std::string get_string(const std::string& name, const std::string& def) const;
  std::vector<int64_t> get_ints(const std::string& name, std::vector<int64_t> def = {}) const;
  std::vector<double> get_floats(const std::string& name, std::vector<double> def = {}) const;

  const std::map<std::string, Attribute>& items() const { return map_; }
  bool operator==(const AttributeMap& o) const { return map_ == o.map_; }

 private:
  std::map<std::string, Attribute> map_;
};

}  // namespace graphc::ir
