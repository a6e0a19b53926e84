#include "conformance/conformance.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "driver/gpu_execute.h"
#include "driver/load_model.h"
#include "importer/importer.h"
#include "importer/node_importers.h"
#include "ir/control_flow.h"
#include "ir/shape_inference.h"
#include "optimizer/pass.h"
#include "reference/executor.h"
#include "support/json.h"
#include "target/cuda/cuda_target.h"

namespace graphc::conformance {

namespace fs = std::filesystem;
using ir::Tensor;

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kPass: return "pass";
    case Outcome::kFail: return "fail";
    case Outcome::kSkip: return "skip";
  }
  return "?";
}

namespace {

// One unit in the last place of `v` stored as float16 (10 mantissa bits) or
// bfloat16 (7); 0 for other dtypes.
double storage_ulp(ir::DType t, double v) {
  const int bits = t == ir::DType::kFloat16 ? 10 : t == ir::DType::kBFloat16 ? 7 : -1;
  if (bits < 0) return 0;
  int exp = 0;
  std::frexp(v, &exp);                                        // v = m * 2^exp, 0.5 <= |m| < 1
  const int min_exp = t == ir::DType::kFloat16 ? -14 : -126;  // subnormal spacing floor
  return std::ldexp(1.0, std::max(exp - 1, min_exp) - bits);
}

}  // namespace

Status compare_tensors(const Tensor& expected, const Tensor& actual, const Tolerance& tol) {
  if (expected.dtype() != actual.dtype())
    return invalid_argument("dtype {} expected, got {}", ir::dtype_name(expected.dtype()),
                            ir::dtype_name(actual.dtype()));
  if (expected.shape() != actual.shape())
    return invalid_argument("shape {} expected, got {}", ir::shape_to_string(expected.shape()),
                            ir::shape_to_string(actual.shape()));
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    bool ok;
    if (ir::is_float(expected.dtype()) || ir::is_narrow_float(expected.dtype())) {
      double e = expected.get_f64(i), a = actual.get_f64(i);
      if (std::isnan(e) || std::isnan(a)) {
        ok = std::isnan(e) && std::isnan(a);
      } else if (std::isinf(e) || std::isinf(a)) {
        ok = e == a;
      } else {
        double err = std::fabs(e - a);
        ok = err <= tol.atol + tol.rtol * std::fabs(e);
        if (!ok && tol.half_ulps > 0) ok = err <= tol.half_ulps * storage_ulp(expected.dtype(), e);
        worst = std::max(worst, err);
      }
    } else if (expected.dtype() == ir::DType::kUInt64) {
      ok = expected.get_u64(i) == actual.get_u64(i);
    } else {
      ok = expected.get_i64(i) == actual.get_i64(i);
    }
    if (!ok) {
      if (first < 0) first = i;
      ++bad;
    }
  }
  if (bad)
    return invalid_argument(
        "{} of {} elements differ (first at {}: expected {}, got {}; max abs err {:g})", bad,
        expected.numel(), first, expected.get_f64(first), actual.get_f64(first), worst);
  return Status::ok_status();
}

namespace {

// Old test data (ONNX <= 1.12) stores bfloat16 tensors as uint16 bit patterns.
Tensor as_model_dtype(const Tensor& t, ir::DType want) {
  if (t.dtype() == ir::DType::kUInt16 && want == ir::DType::kBFloat16) {
    Tensor out(want, t.shape());
    if (t.byte_size()) std::memcpy(out.mutable_data(), t.data(), t.byte_size());
    return out;
  }
  return t;
}

std::vector<std::string> sorted_entries(const fs::path& dir, bool dirs, const std::string& prefix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (dirs != e.is_directory()) continue;
    auto name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0) out.push_back(name);
  }
  // Natural order for input_0.pb .. input_10.pb.
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    if (a.size() != b.size()) return a.size() < b.size();
    return a < b;
  });
  return out;
}

// Inputs that decide a build-time-constant slot (Reshape's shape, Reduce's
// axes, TopK's k ...), directly or through arithmetic on them, are bound as
// constants from the test data, as a user compiling for static shapes would.
std::set<ir::ValueId> shape_determining_inputs(const ir::Graph& g) {
  std::set<ir::ValueId> out;
  std::vector<ir::ValueId> stack;
  for (const auto& n : g.nodes) {
    uint32_t mask = ir::op_info(n.op).const_inputs;
    // A Loop's trip count decides a shape only through scan outputs: without
    // them it stays a run-time input (a CUDA graph WHILE node on the GPU).
    if (n.op == ir::OpKind::Loop && n.subgraphs.size() == 1) {
      const auto c = static_cast<size_t>(ir::captured_count(n));
      const size_t formal = n.inputs.size() - std::min(c, n.inputs.size());
      const size_t carried = formal > 2 ? formal - 2 : 0;
      if (n.outputs.size() <= carried) mask &= ~1u;
    }
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if ((mask >> i) & 1u && n.inputs[i] != ir::kNoValue) stack.push_back(n.inputs[i]);
  }
  std::set<ir::ValueId> seen;
  while (!stack.empty()) {
    ir::ValueId v = stack.back();
    stack.pop_back();
    if (!seen.insert(v).second) continue;
    if (g.is_graph_input(v)) out.insert(v);
    ir::NodeId p = g.value(v).producer;
    if (p < 0) continue;
    // Shape/Size read only the shape of their input, never its values.
    if (g.node(p).op == ir::OpKind::Shape || g.node(p).op == ir::OpKind::Size) continue;
    for (ir::ValueId in : g.node(p).inputs)
      if (in != ir::kNoValue) stack.push_back(in);
  }
  return out;
}

Status run_data_set(const ir::Graph& model, const fs::path& set_dir, const Options& options) {
  ir::Graph g = model;
  auto input_files = sorted_entries(set_dir, false, "input_");
  auto output_files = sorted_entries(set_dir, false, "output_");
  if (input_files.size() != g.inputs.size())
    return invalid_argument("{} has {} inputs, the model has {}", set_dir.filename().string(),
                            input_files.size(), g.inputs.size());
  std::vector<Tensor> inputs;
  for (const auto& f : input_files) {
    ASSIGN_OR_RETURN(Tensor t, importer::read_tensor_proto_file((set_dir / f).string()));
    inputs.push_back(std::move(t));
  }
  for (size_t i = 0; i < inputs.size() && i < g.inputs.size(); ++i)
    inputs[i] = as_model_dtype(inputs[i], g.value(g.inputs[i]).dtype);
  auto const_inputs = shape_determining_inputs(g);
  std::map<std::string, ir::Shape> shapes;
  std::map<std::string, Tensor> feeds;
  std::vector<ir::ValueId> runtime_inputs;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    ir::Value& v = g.value(g.inputs[i]);
    if (inputs[i].dtype() != v.dtype)
      return invalid_argument("input '{}' data is {}, model declares {}", v.name,
                              ir::dtype_name(inputs[i].dtype()), ir::dtype_name(v.dtype));
    if (const_inputs.count(g.inputs[i])) {
      v.constant = inputs[i];
      v.shape = inputs[i].shape();
      v.has_shape = true;
      v.dim_names.clear();
      continue;
    }
    runtime_inputs.push_back(g.inputs[i]);
    // The test data is the truth: a few ONNX 1.12 cases declare a shape their
    // data does not have (CastLike's `like`), so the data's shape wins here.
    v.has_shape = false;
    v.shape.clear();
    v.dim_names.clear();
    shapes[v.name] = inputs[i].shape();
    feeds[v.name] = inputs[i];
  }
  g.inputs = runtime_inputs;
  RETURN_IF_ERROR(ir::bind_input_shapes(g, shapes));
  RETURN_IF_ERROR(driver::infer_graph_shapes(g));
  if (options.transform) RETURN_IF_ERROR(options.transform(g));
  std::map<std::string, Tensor> outputs;
  if (options.backend == Backend::kCuda) {
    // The engine path: the default pipeline (unless a transform replaced it),
    // lowering, NVRTC for this GPU, one run. Kernels without a GPU lowering
    // yet make the case a skip that names them.
    if (!options.transform) {
      // As graphc build optimizes: for the CUDA target with its default flags.
      optimizer::PassContext ctx;
      ctx.target = std::make_shared<target::CudaTarget>();
      RETURN_IF_ERROR(optimizer::run_passes(g, ctx));
    }
    ASSIGN_OR_RETURN(outputs, driver::execute_on_gpu(g, feeds));
  } else {
    ASSIGN_OR_RETURN(outputs, reference::execute(g, feeds));
  }
  if (output_files.size() != g.outputs.size())
    return invalid_argument("{} has {} outputs, the model has {}", set_dir.filename().string(),
                            output_files.size(), g.outputs.size());
  for (size_t o = 0; o < output_files.size(); ++o) {
    ASSIGN_OR_RETURN(Tensor expected,
                     importer::read_tensor_proto_file((set_dir / output_files[o]).string()));
    const std::string& name = g.value(g.outputs[o]).name;
    expected = as_model_dtype(expected, g.value(g.outputs[o]).dtype);
    Status st = compare_tensors(expected, outputs.at(name), options.tolerance);
    if (!st.ok()) return st.with_context(fmt::format("output {} '{}'", o, name));
  }
  return Status::ok_status();
}

}  // namespace

std::vector<std::string> model_op_types(const fs::path& model_path);  // model_ops.cpp

bool case_in_scope(const CaseResult& result) {
  if (result.ops.empty()) return false;
  for (const auto& op : result.ops) {
    if (op == "Constant" || ir::op_from_name(op)) continue;
    bool alias = false;
    for (const auto& a : importer::op_aliases()) alias = alias || op == a.onnx_name;
    if (!alias) return false;
  }
  return true;
}

CaseResult run_case(const std::string& case_dir, const Options& options) {
  auto start = std::chrono::steady_clock::now();
  CaseResult r;
  r.name = fs::path(case_dir).filename().string();
  r.ops = model_op_types(fs::path(case_dir) / "model.onnx");
  auto finish = [&](Outcome o, std::string reason) {
    r.outcome = o;
    r.reason = std::move(reason);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  };
  auto model = importer::import_model_file((fs::path(case_dir) / "model.onnx").string());
  if (!model.ok()) {
    const auto& st = model.status();
    // Out-of-scope ops and dtypes are skips; anything else is a failure.
    if (st.code() == ErrorCode::kUnsupported) return finish(Outcome::kSkip, st.message());
    return finish(Outcome::kFail, st.message());
  }
  auto sets = sorted_entries(case_dir, true, "test_data_set_");
  if (sets.empty()) return finish(Outcome::kFail, "no test_data_set_* folder");
  for (const auto& s : sets) {
    Status st = run_data_set(*model, fs::path(case_dir) / s, options);
    if (!st.ok()) {
      auto outcome = st.code() == ErrorCode::kUnsupported ? Outcome::kSkip : Outcome::kFail;
      return finish(outcome, fmt::format("{}: {}", s, st.message()));
    }
  }
  return finish(Outcome::kPass, "");
}

Expected<Report> run_suite(const std::string& dir, const Options& options,
                           const std::function<void(const CaseResult&)>& on_case) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return not_found("conformance folder '{}' does not exist", dir);
  Report report;
  for (const auto& name : sorted_entries(dir, true, "")) {
    if (!fs::exists(fs::path(dir) / name / "model.onnx")) continue;
    if (!options.filter.empty() && name.find(options.filter) == std::string::npos) continue;
    CaseResult r = run_case((fs::path(dir) / name).string(), options);
    if (r.outcome == Outcome::kPass) ++report.passed;
    if (r.outcome == Outcome::kFail) ++report.failed;
    if (r.outcome == Outcome::kSkip) ++report.skipped;
    if (on_case) on_case(r);
    report.cases.push_back(std::move(r));
  }
  return report;
}

std::string Report::summary_line() const {
  return fmt::format("conformance: {} passed, {} failed, {} skipped of {}", passed, failed, skipped,
                     total());
}

std::string Report::to_json() const {
  Json doc = json_document();
  doc["passed"] = passed;
  doc["failed"] = failed;
  doc["skipped"] = skipped;
  doc["total"] = total();
  Json list = Json::array();
  for (const auto& c : cases)
    list.push_back({{"name", c.name},
                    {"outcome", outcome_name(c.outcome)},
                    {"reason", c.reason},
                    {"ops", c.ops},
                    // to 0.1 ms, as the text report
                    {"seconds", std::round(c.seconds * 1e4) / 1e4}});
  doc["cases"] = std::move(list);
  return dump_json(doc);
}

std::string Report::op_table() const {
  struct Counts {
    int pass = 0, fail = 0, skip = 0;
  };
  std::map<std::string, Counts> by_op;
  for (const auto& c : cases)
    for (const auto& op : c.ops) {
      auto& k = by_op[op];
      if (c.outcome == Outcome::kPass) ++k.pass;
      if (c.outcome == Outcome::kFail) ++k.fail;
      if (c.outcome == Outcome::kSkip) ++k.skip;
    }
  std::string out = fmt::format("{:<28} {:>6} {:>6} {:>6}\n", "operator", "pass", "fail", "skip");
  for (const auto& [op, k] : by_op)
    out += fmt::format("{:<28} {:>6} {:>6} {:>6}\n", op, k.pass, k.fail, k.skip);
  return out;
}

}  // namespace graphc::conformance
