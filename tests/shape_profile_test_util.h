// Helpers shared by the shape-profile and symbolic-shape tests.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "driver/load_model.h"
#include "driver/shape_profiles.h"
#include "tests/onnx_builder.h"

namespace graphc::testing {

// The model imported and verified, its symbolic dims left unbound.
inline ir::Graph import_unbound(const OnnxModel& m, const std::string& name = "model.onnx") {
  driver::LoadOptions options;
  options.infer = false;
  auto g = driver::load_model_bytes(m.bytes(), name, options);
  REQUIRE(g.ok());
  return std::move(*g);
}

// One --shape-profile flag's profile; the test fails if it does not parse.
inline driver::ShapeProfile profile_of(const std::string& text) {
  auto p = driver::parse_profile_flag(text);
  REQUIRE(p.ok());
  return *p;
}

}  // namespace graphc::testing
