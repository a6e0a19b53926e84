#include "ir/einsum_equation.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace graphc::ir {

namespace {

// One parsed term ("bij", "...ii"): letters before and after an ellipsis.
struct Term {
  std::string before, after;
  bool ellipsis = false;
  size_t letters() const { return before.size() + after.size(); }
};

Expected<Term> parse_term(const std::string& text, const std::string& where) {
  Term t;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == '.') {
      if (text.compare(i, 3, "...") != 0)
        return invalid_model("Einsum: {} '{}' has a '.' that is not part of an ellipsis '...'",
                             where, text);
      if (t.ellipsis)
        return invalid_model("Einsum: {} '{}' has more than one ellipsis", where, text);
      t.ellipsis = true;
      i += 3;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(c)))
      return invalid_model(
          "Einsum: {} '{}' has the character '{}'; only letters and '...' are "
          "allowed",
          where, text, c);
    (t.ellipsis ? t.after : t.before) += c;
    ++i;
  }
  return t;
}

int letter_slot(char c) {
  return std::islower(static_cast<unsigned char>(c)) ? c - 'a' : 26 + (c - 'A');
}

}  // namespace

Expected<EinsumPlan> plan_einsum(const std::string& equation, const std::vector<Shape>& shapes) {
  std::string eq;
  for (char c : equation)
    if (!std::isspace(static_cast<unsigned char>(c))) eq += c;
  std::string lhs = eq, rhs;
  bool explicit_out = false;
  if (size_t arrow = eq.find("->"); arrow != std::string::npos) {
    lhs = eq.substr(0, arrow);
    rhs = eq.substr(arrow + 2);
    explicit_out = true;
    if (rhs.find("->") != std::string::npos)
      return invalid_model("Einsum: equation '{}' has more than one '->'", equation);
  }
  std::vector<std::string> term_text;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    term_text.push_back(lhs.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (term_text.size() != shapes.size())
    return invalid_model("Einsum: equation '{}' has {} input term(s) but the node has {} input(s)",
                         equation, term_text.size(), shapes.size());

  std::vector<Term> terms;
  size_t ellipsis_rank = 0;
  for (size_t k = 0; k < term_text.size(); ++k) {
    ASSIGN_OR_RETURN(Term t, parse_term(term_text[k], fmt::format("input term {}", k)));
    size_t rank = shapes[k].size();
    if (t.ellipsis ? t.letters() > rank : t.letters() != rank)
      return invalid_model(
          "Einsum: input term {} '{}' has {} letter(s){} but input {} has rank {} "
          "(shape {})",
          k, term_text[k], t.letters(), t.ellipsis ? " and an ellipsis" : "", k, rank,
          shape_to_string(shapes[k]));
    if (t.ellipsis) ellipsis_rank = std::max(ellipsis_rank, rank - t.letters());
    terms.push_back(std::move(t));
  }

  // Labels 0..E-1: the ellipsis dims; then one label per distinct letter.
  EinsumPlan plan;
  plan.label_dims.assign(ellipsis_rank, 1);
  std::array<int, 52> letter_label;
  letter_label.fill(-1);
  std::array<int, 52> letter_count{};
  plan.operand_labels.resize(shapes.size());
  for (size_t k = 0; k < terms.size(); ++k) {
    const Term& t = terms[k];
    const Shape& shape = shapes[k];
    size_t e = t.ellipsis ? shape.size() - t.letters() : 0;
    auto& labels = plan.operand_labels[k];
    auto add_letter = [&](char c, size_t axis) -> Status {
      int slot = letter_slot(c);
      ++letter_count[static_cast<size_t>(slot)];
      int& id = letter_label[static_cast<size_t>(slot)];
      if (id < 0) {
        id = static_cast<int>(plan.label_dims.size());
        plan.label_dims.push_back(shape[axis]);
      } else if (plan.label_dims[static_cast<size_t>(id)] != shape[axis]) {
        return invalid_model(
            "Einsum: letter '{}' has extent {} in input {} (axis {} of shape {}) "
            "but {} elsewhere",
            c, shape[axis], k, axis, shape_to_string(shape),
            plan.label_dims[static_cast<size_t>(id)]);
      }
      labels.push_back(id);
      return Status::ok_status();
    };
    size_t axis = 0;
    for (char c : t.before) RETURN_IF_ERROR(add_letter(c, axis++));
    for (size_t j = 0; j < e; ++j, ++axis) {
      size_t label = ellipsis_rank - e + j;
      int64_t d = shape[axis];
      int64_t& have = plan.label_dims[label];
      if (d != 1) {
        if (have != 1 && have != d)
          return invalid_model(
              "Einsum: the ellipsis dims of input {} (shape {}) cannot be "
              "broadcast with the other inputs' ({} vs {})",
              k, shape_to_string(shape), d, have);
        have = d;
      }
      labels.push_back(static_cast<int>(label));
    }
    for (char c : t.after) RETURN_IF_ERROR(add_letter(c, axis++));
  }

  if (explicit_out) {
    ASSIGN_OR_RETURN(Term out, parse_term(rhs, "output term"));
    if (!out.ellipsis && ellipsis_rank > 0)
      return invalid_model(
          "Einsum: equation '{}': the inputs' ellipsis covers {} dim(s) but the "
          "output term has no '...'",
          equation, ellipsis_rank);
    std::array<bool, 52> seen{};
    auto add_out = [&](char c) -> Status {
      int slot = letter_slot(c);
      if (letter_label[static_cast<size_t>(slot)] < 0)
        return invalid_model("Einsum: output letter '{}' does not appear in any input term", c);
      if (seen[static_cast<size_t>(slot)])
        return invalid_model("Einsum: output letter '{}' appears more than once", c);
      seen[static_cast<size_t>(slot)] = true;
      plan.output_labels.push_back(letter_label[static_cast<size_t>(slot)]);
      return Status::ok_status();
    };
    for (char c : out.before) RETURN_IF_ERROR(add_out(c));
    if (out.ellipsis)
      for (size_t j = 0; j < ellipsis_rank; ++j) plan.output_labels.push_back(static_cast<int>(j));
    for (char c : out.after) RETURN_IF_ERROR(add_out(c));
  } else {
    // Implicit: the ellipsis dims, then letters used exactly once, sorted.
    for (size_t j = 0; j < ellipsis_rank; ++j) plan.output_labels.push_back(static_cast<int>(j));
    std::string once;
    for (int slot = 0; slot < 52; ++slot)
      if (letter_count[static_cast<size_t>(slot)] == 1)
        once += slot < 26 ? static_cast<char>('a' + slot) : static_cast<char>('A' + slot - 26);
    std::sort(once.begin(), once.end());  // ASCII order: uppercase first, as numpy
    for (char c : once)
      plan.output_labels.push_back(letter_label[static_cast<size_t>(letter_slot(c))]);
  }
  for (int l : plan.output_labels)
    plan.output_shape.push_back(plan.label_dims[static_cast<size_t>(l)]);
  return plan;
}

}  // namespace graphc::ir
