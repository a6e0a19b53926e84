#include "engine_format/refit_record.h"

#include <google/protobuf/text_format.h>
#include <google/protobuf/util/message_differencer.h>

#include <algorithm>

#include "engine_format/validate.h"

namespace graphc::engine {

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::util::MessageDifferencer;
using Path = std::vector<MessageDifferencer::SpecificField>;

// Keeps the first difference the differencer reports (post-order: the
// deepest field first, so "kernels[3].grid[0]" rather than "kernels[3]").
class FirstDifference : public MessageDifferencer::Reporter {
 public:
  void ReportAdded(const Message&, const Message&, const Path& path) override { keep(path); }
  void ReportDeleted(const Message&, const Message&, const Path& path) override { keep(path); }
  void ReportModified(const Message&, const Message&, const Path& path) override { keep(path); }
  bool found = false;
  Path path;

 private:
  void keep(const Path& p) {
    if (found) return;
    found = true;
    path = p;
  }
};

// An element's index on one side: an added element has only new_index.
int index_on(const MessageDifferencer::SpecificField& f, bool second) {
  if (second && f.new_index >= 0) return f.new_index;
  return f.index >= 0 ? f.index : f.new_index;
}

std::string path_text(const Path& path) {
  std::string out;
  for (const auto& f : path) {
    if (!out.empty()) out += '.';
    out += f.field ? f.field->name() : std::to_string(f.unknown_field_number);
    if (f.field && f.field->is_repeated()) out += fmt::format("[{}]", index_on(f, false));
  }
  return out;
}

std::string shorten(std::string s) {
  constexpr size_t kMax = 160;
  if (s.size() > kMax) s = s.substr(0, kMax) + "...";
  return s;
}

// The value at `path` in `root` as text, or "none" where that side has none.
std::string value_at(const Message& root, const Path& path, bool second) {
  const Message* m = &root;
  for (size_t i = 0; i < path.size(); ++i) {
    const FieldDescriptor* f = path[i].field;
    if (!f) return "an unknown field";
    const auto* r = m->GetReflection();
    const int index = f->is_repeated() ? index_on(path[i], second) : -1;
    if (f->is_repeated() && (index < 0 || index >= r->FieldSize(*m, f))) return "none";
    if (i + 1 < path.size()) {
      if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) return "none";
      m = f->is_repeated() ? &r->GetRepeatedMessage(*m, f, index) : &r->GetMessage(*m, f);
      continue;
    }
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      const Message& leaf =
          f->is_repeated() ? r->GetRepeatedMessage(*m, f, index) : r->GetMessage(*m, f);
      return "{" + shorten(leaf.ShortDebugString()) + "}";
    }
    std::string text;
    google::protobuf::TextFormat::PrintFieldValueToString(*m, f, index, &text);
    return shorten(text);
  }
  return "none";
}

std::string kernel_text(const Kernel& k, int index) {
  std::string out = fmt::format("kernel {} '{}'", index, k.name());
  for (int n = 0; n < k.onnx_nodes_size() && n < 4; ++n)
    out += fmt::format("{}{}", n == 0 ? ", ONNX nodes " : ", ", k.onnx_nodes(n));
  if (k.onnx_nodes_size() > 4) out += ", ...";
  return out;
}

// What the top-level field of the path is about, from whichever side has it.
std::string where(const Manifest& a, const Manifest& b, const Path& path) {
  if (path.empty() || !path[0].field) return "";
  const std::string& field = path[0].field->name();
  const int ia = index_on(path[0], false), ib = index_on(path[0], true);
  if (field == "kernels") {
    if (ia >= 0 && ia < a.kernels_size()) return kernel_text(a.kernels(ia), ia);
    if (ib >= 0 && ib < b.kernels_size()) return kernel_text(b.kernels(ib), ib);
  }
  if (field == "tensors") {
    if (ia >= 0 && ia < a.tensors_size()) return fmt::format("tensor '{}'", a.tensors(ia).name());
    if (ib >= 0 && ib < b.tensors_size()) return fmt::format("tensor '{}'", b.tensors(ib).name());
  }
  return "";
}

}  // namespace

Status validate_refit_record(const Manifest& m) {
  if (!m.has_refit()) return Status::ok_status();
  const Refit& r = m.refit();
  if (r.module_sources_size() != module_count(m))
    return invalid_engine("the refit record has {} module source hashes for {} code modules",
                          r.module_sources_size(), module_count(m));
  const BuildRecipe& recipe = r.recipe();
  for (const auto& arch : recipe.archs())
    if (parse_sm_arch(arch) < 0)
      return invalid_engine("the refit record's arch '{}' is not of the form sm_NN", arch);
  for (const auto& profile : recipe.profiles())
    for (const auto& in : profile.inputs()) {
      const InputRange& range = in.range();
      if (static_cast<size_t>(range.min_size()) > kMaxRank ||
          range.min_size() != range.opt_size() || range.min_size() != range.max_size())
        return invalid_engine("the refit record's shape profile of '{}' is malformed", in.name());
    }
  return Status::ok_status();
}

std::string manifest_difference(const Manifest& a, const Manifest& b, std::string_view a_label,
                                std::string_view b_label) {
  // The fields that say most first: another graphc, then what the kernels
  // do, then where tensors live (an offset that moved follows from the rest).
  const auto* d = Manifest::descriptor();
  std::vector<std::vector<const FieldDescriptor*>> groups = {{d->FindFieldByName("producer")},
                                                             {d->FindFieldByName("kernels")},
                                                             {d->FindFieldByName("tensors")},
                                                             {}};
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    bool grouped = false;
    for (size_t g = 0; g + 1 < groups.size(); ++g) grouped |= groups[g].front() == f;
    if (!grouped) groups.back().push_back(f);
  }
  FirstDifference first;
  for (const auto& fields : groups) {
    MessageDifferencer differ;
    differ.ReportDifferencesTo(&first);
    if (!differ.CompareWithFields(a, b, fields, fields) && first.found) break;
  }
  if (!first.found) return "";
  const std::string context = where(a, b, first.path);
  return fmt::format("{}{}: {} in {}, {} in {}", path_text(first.path),
                     context.empty() ? "" : " (" + context + ")", value_at(a, first.path, false),
                     a_label, value_at(b, first.path, true), b_label);
}

Status check_refittable(const Manifest& engine, std::string_view what) {
  if (engine.has_refit()) return Status::ok_status();
  return invalid_engine(
      "{} has no refit record: it was built before refit support (engine format 5) or not by "
      "graphc build; rebuild it",
      what);
}

std::string structure_hash_text(uint64_t hash) { return fmt::format("{:016x}", hash); }

}  // namespace graphc::engine
