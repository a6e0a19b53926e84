// Shared by the refit tests (tests/refit_test.cpp, cli_refit_test.cpp and
// gpu/runtime_refit_gpu_test.cpp): a model with new random weights, and
// engines built and refit in-process as the CLI builds and refits them.
// Header-only.
#pragma once

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cmd/build_pipeline.h"
#include "cmd/refit_pipeline.h"
#include "engine_format/engine_file.h"
#include "onnx/onnx.pb.h"

namespace graphc::testing {

inline std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The model at `path` with every float32 initializer of more than one element
// scaled elementwise by random factors in [0.5, 1.5] (signs kept, so
// BatchNorm variances stay positive; nothing becomes zero). One-element
// constants (0.5, sqrt 2, epsilon) and integer ones (shapes, axes) are the
// model's structure and stay.
inline std::string reweighted_model(const std::string& path, std::mt19937& rng) {
  onnx::ModelProto m;
  m.ParseFromString(read_file_bytes(path));
  std::uniform_real_distribution<float> factor(0.5f, 1.5f);
  for (auto& t : *m.mutable_graph()->mutable_initializer()) {
    if (t.data_type() != onnx::TensorProto::FLOAT) continue;
    std::vector<float> v;
    if (!t.raw_data().empty()) {
      v.resize(t.raw_data().size() / sizeof(float));
      std::memcpy(v.data(), t.raw_data().data(), v.size() * sizeof(float));
    } else {
      v.assign(t.float_data().begin(), t.float_data().end());
    }
    if (v.size() <= 1) continue;
    for (float& x : v) x *= factor(rng);
    t.clear_float_data();
    t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
  }
  std::string out;
  m.SerializeToString(&out);
  return out;
}

// graphc build's flags for `model` on sm_90 (the tests add shapes,
// precision, lowering).
inline cli::BuildFlags refit_test_flags(const std::string& model) {
  cli::BuildFlags f;
  f.model = model;
  f.archs = {"sm_90"};
  return f;
}

// The engine file graphc build writes for `f`, as bytes.
inline Expected<std::string> built_engine_bytes(const cli::BuildFlags& f) {
  ASSIGN_OR_RETURN(cli::BuiltEngine built, cli::build_engine_from_flags(f, {}));
  return engine::serialize_engine(built.contents);
}

// The engine file graphc refit ENGINE MODEL writes, as bytes.
inline Expected<std::string> refit_engine_bytes(const std::string& engine,
                                                const std::string& model) {
  ASSIGN_OR_RETURN(cli::RefitEngine refit, cli::refit_engine_from_files({engine, model, ""}, {}));
  refit.contents.weights.resize(static_cast<size_t>(refit.weights.bytes));
  RETURN_IF_ERROR(
      refit.weights.fill(0, refit.contents.weights.data(), refit.contents.weights.size()));
  return engine::serialize_engine(refit.contents);
}

}  // namespace graphc::testing
