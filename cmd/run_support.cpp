#include "cmd/run_support.h"

#include "runtime/engine_loader.h"
#include "runtime/shape_state.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>

#include "cmd/cli_common.h"
#include "driver/load_model.h"
#include "reference/executor.h"
#include "support/npy.h"

namespace graphc::cli {

namespace {

std::string dims_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string binding_dtype_name(int32_t dtype) {
  auto dt = ir::dtype_from_onnx(dtype);
  return dt ? std::string(ir::dtype_name(*dt)) : fmt::format("dtype {}", dtype);
}

std::string input_names(const std::vector<runtime::BindingInfo>& bindings) {
  std::string names;
  for (const auto& b : bindings)
    if (b.is_input) names += (names.empty() ? "" : ", ") + b.name;
  return names.empty() ? "none" : names;
}

Expected<ir::Tensor> random_input(const runtime::BindingInfo& b, std::mt19937& rng) {
  auto dt = ir::dtype_from_onnx(b.dtype);
  if (!dt) return unsupported("input '{}' has a dtype graphc cannot fill ({})", b.name, b.dtype);
  ASSIGN_OR_RETURN(ir::Tensor x, ir::Tensor::allocate(*dt, b.shape));
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (ir::is_float(*dt))
      x.set_f64(i, uniform(rng));
    else
      x.set_i64(i, *dt == ir::DType::kBool ? rng() % 2 : rng() % 8);
  }
  return x;
}

Expected<ir::Tensor> npy_input(const runtime::BindingInfo& b, const std::string& path) {
  const auto where = [&](const Status& st) {
    return st.with_context(fmt::format("--input {}={}", b.name, path));
  };
  if (b.dtype == static_cast<int32_t>(ir::DType::kBFloat16))
    return where(unsupported("the input is bfloat16, which .npy files cannot hold"));
  auto array = npy::read_file(path);  // its errors name the file
  if (!array.ok()) return array.status().with_context("--input " + b.name);
  if (array->dtype != b.dtype || array->shape != b.shape)
    return where(invalid_argument(
        "the engine expects {} {}, the file holds {} {} (dtype and shape must match exactly)",
        binding_dtype_name(b.dtype), dims_string(b.shape), npy::dtype_name(array->dtype),
        dims_string(array->shape)));
  auto dt = ir::dtype_from_onnx(b.dtype);
  if (!dt) return where(unsupported("unsupported dtype {}", b.dtype));
  ASSIGN_OR_RETURN(ir::Tensor x, ir::Tensor::allocate(*dt, b.shape));
  if (x.byte_size() != array->data.size() || static_cast<int64_t>(x.byte_size()) != b.bytes)
    return where(
        invalid_argument("{} bytes of data, the binding has {}", array->data.size(), b.bytes));
  if (x.byte_size()) std::memcpy(x.mutable_data(), array->data.data(), x.byte_size());
  return x;
}

}  // namespace

Expected<std::vector<HostInput>> prepare_inputs(const std::vector<runtime::BindingInfo>& bindings,
                                                const std::vector<std::string>& specs,
                                                uint32_t seed) {
  std::map<std::string, std::string> files;
  for (const std::string& spec : specs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return invalid_argument("--input '{}' must look like NAME=FILE.npy", spec);
    std::string name = spec.substr(0, eq);
    const bool known = std::any_of(bindings.begin(), bindings.end(),
                                   [&](const auto& b) { return b.is_input && b.name == name; });
    if (!known)
      return invalid_argument("--input '{}': the engine has no input '{}' (its inputs: {})", spec,
                              name, input_names(bindings));
    if (!files.emplace(name, spec.substr(eq + 1)).second)
      return invalid_argument("--input given twice for '{}'", name);
  }
  std::mt19937 rng(seed);
  std::vector<HostInput> out;
  for (const auto& b : bindings) {
    if (!b.is_input) continue;
    HostInput in;
    auto file = files.find(b.name);
    if (file != files.end()) {
      in.source = file->second;
      ASSIGN_OR_RETURN(in.tensor, npy_input(b, file->second));
    } else {
      in.source = "random";
      ASSIGN_OR_RETURN(in.tensor, random_input(b, rng));
    }
    out.push_back(std::move(in));
  }
  return out;
}

Expected<ir::Tensor> output_tensor(const runtime::BindingInfo& b, const std::string& bytes) {
  auto dt = ir::dtype_from_onnx(b.dtype);
  if (!dt) return unsupported("output '{}' has an unsupported dtype {}", b.name, b.dtype);
  ASSIGN_OR_RETURN(ir::Tensor t, ir::Tensor::allocate(*dt, b.shape));
  if (t.byte_size() != bytes.size())
    return internal_error("output '{}': {} bytes from the GPU, {} expected", b.name, bytes.size(),
                          t.byte_size());
  if (!bytes.empty()) std::memcpy(t.mutable_data(), bytes.data(), bytes.size());
  return t;
}

std::string file_safe_name(const std::string& name) {
  std::string out;
  for (char c : name) {
    const bool keep =
        std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
    out.push_back(keep ? c : '_');
  }
  if (out.empty()) out = "output";
  if (out[0] == '.') out[0] = '_';  // no hidden files, no "." or ".."
  return out.substr(0, 200);
}

Expected<std::vector<std::string>> write_outputs(const std::string& dir,
                                                 const std::vector<std::string>& names,
                                                 const std::vector<ir::Tensor>& outputs) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir, ec))
    return io_error("--output-dir '{}' is not a folder and cannot be created", dir);
  std::set<std::string> used;
  std::vector<std::string> written;
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string base = file_safe_name(names[i]);
    std::string stem = base;
    for (int k = 1; used.count(stem); ++k) stem = fmt::format("{}_{}", base, k);
    used.insert(stem);
    ir::Tensor t = outputs[i];
    if (t.dtype() == ir::DType::kBFloat16) t = t.cast_to(ir::DType::kFloat32);
    ASSIGN_OR_RETURN(
        std::string bytes,
        npy::serialize(static_cast<int32_t>(t.dtype()), t.shape(),
                       std::string_view(reinterpret_cast<const char*>(t.data()), t.byte_size())));
    const std::string path = (fs::path(dir) / (stem + ".npy")).string();
    RETURN_IF_ERROR(write_file_atomic(path, bytes));
    written.push_back(path);
  }
  return written;
}

Summary summarize(std::vector<double> v) {
  Summary s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto pct = [&](double p) {
    // Nearest rank: the smallest value with at least p% of values at or below it.
    auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
    return v[std::min(v.size() - 1, rank > 0 ? rank - 1 : 0)];
  };
  double sum = 0;
  for (double x : v) sum += x;
  s.min = v.front();
  s.mean = sum / static_cast<double>(v.size());
  s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  s.p90 = pct(90);
  s.p95 = pct(95);
  s.p99 = pct(99);
  return s;
}

Expected<CheckResult> compare_output(const std::string& name, const ir::Tensor& gpu,
                                     const ir::Tensor& ref, double rtol) {
  if (gpu.numel() != ref.numel() || gpu.shape() != ref.shape())
    return invalid_argument("--check: output '{}' has shape {} in the engine and {} in the model",
                            name, ir::shape_to_string(gpu.shape()),
                            ir::shape_to_string(ref.shape()));
  CheckResult r;
  r.name = name;
  double err2 = 0, ref2 = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double a = ref.get_f64(i), b = gpu.get_f64(i);
    double d;
    if (std::isnan(a) || std::isnan(b))
      d = std::isnan(a) && std::isnan(b) ? 0 : INFINITY;
    else if (a == b)
      d = 0;  // equal infinities too
    else
      d = std::fabs(a - b);
    r.max_abs = std::max(r.max_abs, d);
    err2 += d * d;
    if (std::isfinite(a)) ref2 += a * a;
  }
  r.rel_l2 = ref2 > 0 ? std::sqrt(err2) / std::sqrt(ref2) : std::sqrt(err2);
  r.ok = r.rel_l2 <= rtol;  // false for NaN
  return r;
}

Expected<ir::Graph> load_check_model(const std::string& onnx_path,
                                     const std::vector<runtime::BindingInfo>& bindings) {
  driver::LoadOptions load;
  for (const auto& b : bindings)
    if (b.is_input) load.input_shapes[b.name] = b.shape;
  auto graph = driver::load_model(onnx_path, load);
  if (!graph.ok()) return graph.status().with_context("--onnx");
  for (const auto& b : bindings) {
    if (b.is_input) continue;
    const bool found = std::any_of(graph->outputs.begin(), graph->outputs.end(),
                                   [&](auto v) { return graph->value(v).name == b.name; });
    if (!found)
      return invalid_argument(
          "--onnx '{}' has no output '{}': is it the model the engine was "
          "built from?",
          onnx_path, b.name);
  }
  return graph;
}

Expected<std::vector<ir::Tensor>> reference_outputs(
    const ir::Graph& graph, const std::vector<runtime::BindingInfo>& bindings,
    const std::vector<HostInput>& inputs) {
  std::map<std::string, ir::Tensor> feeds;
  size_t k = 0;
  for (const auto& b : bindings)
    if (b.is_input) feeds[b.name] = inputs.at(k++).tensor;
  auto result = reference::execute(graph, feeds);
  if (!result.ok()) return result.status().with_context("--check: the reference executor");
  std::vector<ir::Tensor> out;
  for (const auto& b : bindings) {
    if (b.is_input) continue;
    auto it = result->find(b.name);
    if (it == result->end())
      return internal_error("--check: the reference executor returned no '{}'", b.name);
    out.push_back(it->second);
  }
  return out;
}

Expected<std::vector<runtime::BindingInfo>> bindings_at_shapes(
    const engine::EngineContents& contents, const std::map<std::string, ir::Shape>& shapes,
    int profile, std::vector<std::vector<int64_t>>* input_shapes) {
  std::vector<runtime::BindingInfo> bindings = runtime::engine_bindings(contents);
  for (const auto& [name, shape] : shapes) {
    auto it = std::find_if(bindings.begin(), bindings.end(),
                           [&name = name](const auto& b) { return b.is_input && b.name == name; });
    if (it == bindings.end()) return invalid_argument("--shape: the engine has no input '{}'", name);
  }
  input_shapes->clear();
  if (!contents.manifest.has_shape_range()) {
    if (profile != 0)
      return invalid_argument("--shape-profile-index {}: the engine has fixed shapes (one profile)",
                              profile);
    for (const auto& b : bindings) {
      if (!b.is_input) continue;
      auto it = shapes.find(b.name);
      if (it != shapes.end() && it->second != b.shape)
        return invalid_argument(
            "--shape {}:{}: the engine was built for {} only (build it with "
            "--min-shape/--opt-shape/--max-shape to serve a range)",
            b.name, ir::shape_to_string(it->second), ir::shape_to_string(b.shape));
      input_shapes->push_back(b.shape);
    }
    return bindings;
  }
  ASSIGN_OR_RETURN(runtime::Executable layout, runtime::executable_layout(contents));
  RETURN_IF_ERROR(runtime::validate_shape_ranges(layout));
  runtime::ShapeState state(layout);
  if (Status st = state.set_profile(profile); !st.ok())
    return invalid_argument("--shape-profile-index: {}", st.message());
  std::vector<std::string> names;
  for (size_t i = 0; i < bindings.size(); ++i) {
    const auto& b = bindings[i];
    if (!b.is_input) continue;
    names.push_back(b.name);
    auto it = shapes.find(b.name);
    if (it == shapes.end()) continue;  // profile 0's opt shape
    // A shape the engine does not take is a usage error of --shape (exit 2).
    if (Status st = state.set_input_shape(static_cast<int>(i), b.name, it->second); !st.ok())
      return invalid_argument("--shape: {}", st.message());
  }
  if (Status st = state.resolve(names); !st.ok())
    return invalid_argument("--shape: {}", st.message());
  for (size_t i = 0; i < bindings.size(); ++i) {
    const int32_t slot = bindings[i].is_input ? layout.inputs[i]
                                              : layout.outputs[i - names.size()];
    bindings[i].shape = state.slot_shape(slot);
    bindings[i].bytes = state.slot_bytes(slot);
    if (bindings[i].is_input) input_shapes->push_back(bindings[i].shape);
  }
  return bindings;
}

}  // namespace graphc::cli
