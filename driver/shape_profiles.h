// Shape profiles (TensorRT's optimization profiles): for each input a range of
// shapes, min <= opt <= max per dim, that one engine is to serve. This file
// parses the CLI's spellings, checks a profile against the model (names,
// ranks, fixed dims, model dims shared between inputs) and checks every
// operator over the whole range: shape inference runs at the range's corners,
// min, opt, max and odd sizes between, so an operator that cannot take some
// shape in the range (a Reshape that needs a multiple of 4, a convolution
// whose output vanishes at the smallest input, two inputs that stop
// broadcasting) is refused at build time naming the input, dim and node.
// docs/dynamic-shapes.md says what engines do with a range today.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/symbolic_shapes.h"

namespace graphc::driver {

struct ShapeRange {
  ir::Shape min, opt, max;
  bool is_static() const { return min == max; }
  bool operator==(const ShapeRange&) const = default;
};

// One profile: every runtime input of the model that it names. An input a
// profile does not name keeps the model's fixed shape.
struct ShapeProfile {
  std::map<std::string, ShapeRange> inputs;
  bool is_static() const;  // every range has min == max
  std::map<std::string, ir::Shape> at_opt() const;
};

// The one shape per input that `profiles` give when they serve one shape
// (every range static, every profile alike); nothing when they give a range.
std::optional<std::map<std::string, ir::Shape>> single_shape(
    const std::vector<ShapeProfile>& profiles);

// "1x8x64/8x128x64/32x512x64" (min/opt/max) or "1x8x64" (min = opt = max).
Expected<ShapeRange> parse_shape_range(const std::string& text);
// "x:1x8/8x128/32x512,y:1x8/8x128/32x512" (--shape-profile) -> one profile.
Expected<ShapeProfile> parse_profile_flag(const std::string& text);
// "x: 1x8 / 8x128 / 32x512" ("x: 1x8" for a static range).
std::string range_to_string(const ShapeRange& range);

// The range alone: equal ranks, 0 <= min <= opt <= max in every dim. Errors
// name `where` (e.g. "profile 0, input 'x'") and the dim.
Status check_range(const std::string& where, const ShapeRange& range);

// The profile against the imported (unbound) model: every named input
// exists and has the model's rank, fixed dims agree over the whole range,
// every symbolic dim of every input is covered, and dims the model names alike
// ("batch" of two inputs) are given the same range.
Status check_profile_against_model(const ir::Graph& imported, const ShapeProfile& profile,
                                   size_t index);

// The input shapes the range check infers at: all-min, all-opt, all-max, each
// free dim alone at its min and its max (the others at opt), up to 16 corners,
// and two points of odd sizes strictly inside the range. Dims the model names
// alike move together. Sorted and without repeats; at least one point.
std::vector<std::map<std::string, ir::Shape>> range_check_points(const ir::Graph& imported,
                                                                 const ShapeProfile& profile);

// The one profile whose ranges cover all of `profiles` (per input: the least
// min, the greatest max; opt of the first profile): what an engine with
// several profiles is planned over (docs/dynamic-shapes.md).
ShapeProfile bounding_profile(const std::vector<ShapeProfile>& profiles);

// Binds and infers shapes at every range_check_points point (on a copy of the
// imported graph); the first failure names the profile, each input's shape at
// that point, and the node. `points_checked` (optional) counts them.
Status check_profile_over_range(const ir::Graph& imported, const ShapeProfile& profile,
                                size_t index, size_t* points_checked = nullptr);

// Every value's shape over the profile's range as expressions of its free
// dims (one symbol per dim the model names alike, else per input dim: "batch",
// "x.1"), inferred at opt and checked against concrete inference at every
// range_check_points point (which is check_profile_over_range's check too:
// its errors are the same). An error names the node an op rule cannot take.
// `points_checked` (optional) counts the points.
Expected<ir::SymbolicShapes> symbolic_shapes(const ir::Graph& imported,
                                             const ShapeProfile& profile, size_t index,
                                             size_t* points_checked = nullptr);

// The profile's symbols (names as symbolic_shapes prints them, their min and
// max) and each input's shape over them; symbol values at the profile's opt
// shapes in `opt` (optional). Requires check_profile_against_model to pass.
ir::SymbolicInputs profile_symbolic_inputs(const ir::Graph& imported, const ShapeProfile& profile,
                                           std::vector<int64_t>* opt = nullptr);

// The symbol values at one point of the profile (input name -> shape), in
// profile_symbolic_inputs's order; an error naming the input and dim where
// the point leaves the range or two inputs disagree on a shared dim.
Expected<std::vector<int64_t>> symbol_values_at(const ir::Graph& imported,
                                                const ShapeProfile& profile,
                                                const std::map<std::string, ir::Shape>& point);

}  // namespace graphc::driver
