// `graphc run`: everything checkable without a GPU is checked first (flags,
// the engine, --input specs and .npy files, the --check model), with errors
// naming the input, the file, expected and actual dtype/shape; on a machine
// without a GPU the run then fails with a clear device error and writes no
// files. Where a GPU is present the same engine runs and --check passes.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cmd/run_profile.h"
#include "cmd/run_support.h"
#include "engine_format/engine_file.h"
#include "runtime/cuda_driver.h"
#include "support/npy.h"
#include "tests/cli_util.h"
#include "tests/onnx_builder.h"

using namespace graphc;
using namespace graphc::testing;

namespace {

bool have_gpu() { return runtime::load_driver().ok(); }

// out = Relu(x + y), "out:1/sig" = Sigmoid(x); x float32[2, 3], y float32[3].
struct RunFixture {
  TempDir dir;
  std::string onnx = dir.file("ew.onnx");
  std::string engine = dir.file("ew.engine");

  RunFixture() {
    OnnxModel m;
    m.input("x", onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
    m.input("y", onnx::TensorProto::FLOAT, {int64_t{3}});
    m.node("Add", {"x", "y"}, {"s"});
    m.node("Relu", {"s"}, {"out"});
    m.node("Sigmoid", {"x"}, {"out:1/sig"});
    m.output("out", onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
    m.output("out:1/sig", onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
    m.write(onnx);
    auto built = run_graphc("build " + onnx + " --arch sm_80 --arch sm_90 -o " + engine);
    INFO(built.output);
    REQUIRE(built.exit_code == 0);
  }

  std::string npy(const std::string& name, int32_t dtype, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    auto bytes = npy::serialize(dtype, shape, std::string(n * npy::dtype_size(dtype), '\0'));
    REQUIRE(bytes.ok());
    return dir.write(name, *bytes);
  }
  std::string run(const std::string& args) {
    auto r = run_graphc("run " + engine + " " + args);
    last_exit = r.exit_code;
    return r.output;
  }
  int last_exit = -1;
};

}  // namespace

TEST_CASE("graphc run without a GPU fails with a device error and writes nothing", "[cli]") {
  if (have_gpu()) return;  // covered by the GPU case below
  RunFixture f;
  const std::string x = f.npy("x.npy", 1, {2, 3});
  auto out = f.run("--input x=" + x + " --output-dir " + f.dir.file("outs") + " --json " +
                   f.dir.file("r.json") + " --check --onnx " + f.onnx);
  INFO(out);
  CHECK(f.last_exit == 1);
  CHECK(contains(out, "no CUDA"));
  CHECK_FALSE(std::filesystem::exists(f.dir.file("outs")));
  CHECK_FALSE(std::filesystem::exists(f.dir.file("r.json")));
}

TEST_CASE("graphc run on a GPU writes outputs, JSON and passes --check", "[cli]") {
  if (!have_gpu()) return;
  RunFixture f;
  auto out = f.run("--iterations 20 --warmup-ms 10 --output-dir " + f.dir.file("outs") +
                   " --json " + f.dir.file("r.json") + " --check --onnx " + f.onnx);
  INFO(out);
  REQUIRE(f.last_exit == 0);
  CHECK(contains(out, "GPU compute"));
  CHECK(contains(out, "check        out: max abs error"));
  auto relu = npy::read_file(f.dir.file("outs/out.npy"));
  REQUIRE(relu.ok());
  CHECK(relu->shape == std::vector<int64_t>{2, 3});
  CHECK(npy::read_file(f.dir.file("outs/out_1_sig.npy")).ok());  // sanitised name
  std::ifstream json(f.dir.file("r.json"));
  std::string j((std::istreambuf_iterator<char>(json)), std::istreambuf_iterator<char>());
  CHECK(contains(j, "\"gpu_compute_ms\""));
  CHECK(contains(j, "\"ok\": true"));
}

TEST_CASE("graphc run: bad --input specs and .npy files are clear errors", "[cli]") {
  RunFixture f;
  const std::string good = f.npy("x.npy", 1, {2, 3});
  const std::string f64 = f.npy("x64.npy", 11, {2, 3});
  const std::string wrong_shape = f.npy("x32.npy", 1, {3, 2});
  struct Case {
    std::string args;
    int exit;
    std::vector<std::string> says;
  };
  const std::vector<Case> cases = {
      {"--input x", 2, {"--input 'x' must look like NAME=FILE.npy"}},
      {"--input =" + good, 2, {"NAME=FILE.npy"}},
      {"--input z=" + good, 2, {"no input 'z'", "its inputs: x, y"}},
      {"--input x=" + good + " --input x=" + good, 2, {"--input given twice for 'x'"}},
      {"--input x=" + f.dir.file("missing.npy"), 1, {"--input x", "missing.npy"}},
      {"--input x=" + f64, 2, {"--input x=", "x64.npy", "float32 [2, 3]", "float64 [2, 3]"}},
      {"--input y=" + wrong_shape, 2, {"--input y=", "x32.npy", "float32 [3]", "float32 [3, 2]"}},
      {"--input x=" + f.dir.write("junk.npy", "junk"), 2, {"junk.npy", "not a .npy file"}},
      {"--check", 2, {"--check needs --onnx", "holds kernels and weights, not the graph"}},
      {"--onnx " + f.onnx, 2, {"--onnx is only used with --check"}},
      {"--check --onnx " + f.dir.file("nope.onnx"), 1, {"nope.onnx"}},
      {"--iterations 0", 2, {"--iterations must be at least 1"}},
      {"--device -1", 2, {"--device"}},
      {"--duration -1", 2, {"--duration"}},
      {"--warmup-ms -5", 2, {"--warmup-ms"}},
      {"--check-rtol 0 --check --onnx " + f.onnx, 2, {"--check-rtol"}},
      {"--output-dir " + good, 2, {"is not a folder"}},
  };
  for (const Case& c : cases) {
    auto out = f.run(c.args);
    INFO(c.args << "\n" << out);
    CHECK(f.last_exit == c.exit);
    for (const auto& s : c.says) CHECK(contains(out, s));
    CHECK_FALSE(contains(out, "no CUDA"));  // refused before the driver is loaded
  }
  auto missing = run_graphc("run " + f.dir.file("missing.engine"));
  CHECK(missing.exit_code == 1);
  CHECK(contains(missing.output, "missing.engine"));
  CHECK(std::filesystem::exists(good));
  CHECK_FALSE(std::filesystem::exists(f.dir.file("outs")));
}

TEST_CASE("graphc run through a stand-in driver: reports, outputs, JSON, --check", "[cli]") {
  // tests/fake_cuda: host memory, copies and CUDA graphs replayed, kernels do
  // nothing. So every path of `graphc run` but the arithmetic runs here: the
  // outputs are garbage, --check must say so (exit 3) while still writing the
  // .npy outputs and the JSON report.
  RunFixture f;
  const std::string env = std::string("LD_LIBRARY_PATH=") + GRAPHC_FAKE_CUDA_DIR + " ";
  const std::string x = f.npy("x.npy", 1, {2, 3});
  auto r = run_graphc_binary(
      env + GRAPHC_BINARY, "run " + f.engine + " --input x=" + x + " --iterations 7 --warmup-ms 1" +
                               " --output-dir " + f.dir.file("outs") + " --json " +
                               f.dir.file("r.json") + " --check --onnx " + f.onnx);
  INFO(r.output);
  CHECK(r.exit_code == 3);  // the run worked; the accuracy check failed
  CHECK(contains(r.output, "input        x float32 2x3 from " + x));
  CHECK(contains(r.output, "from random data (seed 1)"));
  CHECK(contains(r.output, "one CUDA graph"));
  CHECK(contains(r.output, "device       0: graphc fake GPU (sm_90)"));
  CHECK(contains(r.output, "iterations   7 in"));
  CHECK(contains(r.output, "GPU compute  min 0.1250"));
  CHECK(contains(r.output, "H2D copies"));
  CHECK(contains(r.output, "device mem   84 bytes"));  // 4 bindings of 24/12/24/24 bytes
  CHECK(contains(r.output, "check        out: max abs error"));
  CHECK(contains(r.output, "above --check-rtol 0.001"));
  CHECK(contains(r.output, "check failed: 2 of 2 outputs"));
  for (const char* name : {"outs/out.npy", "outs/out_1_sig.npy"}) {
    auto a = npy::read_file(f.dir.file(name));
    REQUIRE(a.ok());
    CHECK(a->dtype == 1);
    CHECK(a->shape == std::vector<int64_t>{2, 3});
  }
  std::ifstream json(f.dir.file("r.json"));
  const auto j = nlohmann::json::parse(json);  // throws (fails) unless valid JSON
  CHECK(j["schema_version"] == 1);
  CHECK(j["device"] == "graphc fake GPU (sm_90)");
  CHECK(j["iterations"] == 7);
  CHECK(j["gpu_compute_ms"]["min"] == 0.125);
  for (const char* key : {"h2d_ms", "d2h_ms", "enqueue_host_ms"}) CHECK(j[key]["median"] >= 0);
  CHECK(j["throughput_per_s"] > 0);
  CHECK(j["data_transfers"] == true);
  CHECK(j["device_memory_bytes"]["io"] == 84);
  REQUIRE(j["check"].size() == 2);
  CHECK(j["check"][1]["output"] == "out:1/sig");
  CHECK(j["check"][1]["ok"] == false);
  // Where the load went: each step of the device load by its end, in order.
  const auto& load = j["load_ms"];
  const auto& steps = load["device_steps"];
  for (const char* step : {"driver", "context", "modules", "libraries"}) {
    INFO(step);
    REQUIRE(steps.contains(step));
    CHECK(steps[step] >= 0);
    CHECK(steps[step] <= load["device"]);
  }
  CHECK(steps["driver"] <= steps["context"]);
  CHECK(steps["context"] <= steps["modules"]);
  CHECK(load["upload_read_wait"] >= 0);
  CHECK(load["first_run"] > 0);
  CHECK(load["first_result"] >= load["first_run"]);
  CHECK(load["first_result"] >= load["device"]);
  CHECK(load["first_result_unix"] > 1.7e12);  // ms since the epoch: after 2023
  // Without the CUDA graph, for a duration; no temporary files anywhere.
  auto plain = run_graphc_binary(env + GRAPHC_BINARY, "run " + f.engine +
                                                          " --no-cuda-graph --warmup-ms 0 "
                                                          "--iterations 1 --duration 0.05");
  INFO(plain.output);
  CHECK(plain.exit_code == 0);
  CHECK(contains(plain.output, "launched one by one"));
  for (const auto& e : std::filesystem::directory_iterator(f.dir.file("outs")))
    CHECK(e.path().filename().string()[0] != '.');
  // The C example runs through the whole C API.
  auto example = run_graphc_binary(env + GRAPHC_EXAMPLE_BINARY, f.engine);
  INFO(example.output);
  CHECK(example.exit_code == 0);
  CHECK(contains(example.output, "output out:1/sig"));
  // A driver without a device.
  auto none =
      run_graphc_binary("GRAPHC_FAKE_CUDA_NO_DEVICE=1 " + env + GRAPHC_BINARY, "run " + f.engine);
  CHECK(none.exit_code == 1);
  CHECK(contains(none.output, "no CUDA device"));
}

TEST_CASE("graphc run needs libcublasLt only for engines that call it", "[cli][cublaslt]") {
  TempDir dir;
  const std::string onnx = dir.file("mm.onnx"), lib = dir.file("lib.engine"),
                    gen = dir.file("gen.engine");
  OnnxModel m;
  m.input("a", onnx::TensorProto::FLOAT, {int64_t{8}, int64_t{16}});
  m.input("b", onnx::TensorProto::FLOAT, {int64_t{16}, int64_t{4}});
  m.node("MatMul", {"a", "b"}, {"y"});
  m.output("y", onnx::TensorProto::FLOAT, {int64_t{8}, int64_t{4}});
  m.write(onnx);
  for (auto [engine, mode] : {std::pair{lib, "cublaslt"}, {gen, "generated"}}) {
    auto built = run_graphc("build " + onnx + " --arch sm_90 --gemm " + mode + " -o " + engine);
    INFO(built.output);
    REQUIRE(built.exit_code == 0);
  }
  CHECK(contains(run_graphc("inspect " + lib).output, "cublasLt matmul: fp32 M=8 N=4 K=16"));
  const std::string env = std::string("GRAPHC_CUBLASLT_PATH=/nonexistent/libcublasLt.so.13 ") +
                          "LD_LIBRARY_PATH=" + GRAPHC_FAKE_CUDA_DIR + " ";
  auto missing = run_graphc_binary(env + GRAPHC_BINARY, "run " + lib + " --iterations 1");
  INFO(missing.output);
  CHECK(missing.exit_code == 1);
  CHECK(contains(missing.output, "/nonexistent/libcublasLt.so.13 could not be loaded"));
  CHECK(contains(missing.output, "--gemm generated"));
  auto fine = run_graphc_binary(env + GRAPHC_BINARY, "run " + gen + " --iterations 1");
  INFO(fine.output);
  CHECK(fine.exit_code == 0);
  auto bad_flag = run_graphc("build " + onnx + " --arch sm_90 --gemm fast -o " + gen);
  CHECK(bad_flag.exit_code != 0);
}

TEST_CASE("graphc run helpers: file-safe names, percentiles, the check metric", "[cli]") {
  using cli::file_safe_name;
  CHECK(file_safe_name("out:1/sig") == "out_1_sig");
  CHECK(file_safe_name("..") == "_.");
  CHECK(file_safe_name(".hidden") == "_hidden");
  CHECK(file_safe_name("") == "output");
  CHECK(file_safe_name("../../etc/passwd") == "_._.._etc_passwd");
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  auto s = cli::summarize(v);
  CHECK(s.min == 1);
  CHECK(s.mean == Approx(50.5));
  CHECK(s.median == Approx(50.5));
  CHECK(s.p90 == 90);
  CHECK(s.p95 == 95);
  CHECK(s.p99 == 99);
  CHECK(cli::summarize({3.0}).p99 == 3);
  auto ref = ir::Tensor::from_f32({1, 2, NAN, 4}, {4});
  auto same = cli::compare_output("y", ref, ref, 1e-3);
  REQUIRE(same.ok());
  CHECK(same->ok);
  CHECK(same->max_abs == 0);
  auto off = cli::compare_output("y", ir::Tensor::from_f32({1, 2, NAN, 4.1f}, {4}), ref, 1e-3);
  REQUIRE(off.ok());
  CHECK_FALSE(off->ok);
  CHECK(off->max_abs == Approx(0.1).epsilon(1e-5));
  auto nan = cli::compare_output("y", ir::Tensor::from_f32({1, 2, 3, 4}, {4}), ref, 1e-3);
  REQUIRE(nan.ok());
  CHECK_FALSE(nan->ok);  // NaN where the reference has a number (or the reverse) fails
  CHECK_FALSE(cli::compare_output("y", ir::Tensor::from_f32({1, 2}, {2}), ref, 1).ok());
}

TEST_CASE("graphc run --profile through a stand-in driver: table, sum, JSON", "[cli][profile]") {
  // The stand-in's events always read 0.125 ms, so every launch shows 125 us
  // and an equal share; names and ONNX nodes come from the engine manifest.
  RunFixture f;
  const std::string env = std::string("LD_LIBRARY_PATH=") + GRAPHC_FAKE_CUDA_DIR + " ";
  auto r = run_graphc_binary(env + GRAPHC_BINARY, "run " + f.engine +
                                                      " --iterations 5 --warmup-ms 0 --profile "
                                                      "--json " +
                                                      f.dir.file("p.json"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto contents = engine::read_engine_file(f.engine);
  REQUIRE(contents.ok());
  const int kernels = contents->manifest.kernels_size();
  REQUIRE(kernels >= 1);
  CHECK(contains(r.output, fmt::format("profile      {} launches", kernels)));
  CHECK(contains(r.output, "median of 5 runs"));
  CHECK(contains(r.output, "rank  kernel"));
  for (const auto& k : contents->manifest.kernels()) {
    CHECK(contains(r.output, k.name()));
    for (const auto& node : k.onnx_nodes()) CHECK(contains(r.output, node));
  }
  CHECK(contains(r.output, "125.00"));
  CHECK(contains(r.output,
                 fmt::format("sum of the launch medians         {:10.2f} us", 125.0 * kernels)));
  CHECK(contains(r.output, "launched one by one, end to end"));
  CHECK(contains(r.output, "one CUDA graph, end to end            125.00 us"));
  std::ifstream json(f.dir.file("p.json"));
  const auto j = nlohmann::json::parse(json);  // throws (fails) unless valid JSON
  CHECK(j["schema_version"] == 1);
  REQUIRE(j["profile"].size() == static_cast<size_t>(kernels));
  CHECK(j["profile"][0]["rank"] == 1);
  CHECK(j["profile"][0]["launch"] == 0);
  CHECK(j["profile"][0]["median_us"] == 125.0);
  CHECK(j["profile_summary"]["launches"] == kernels);
  CHECK(j["profile_summary"]["cuda_graph_median_us"] == 125.0);
  // Without the graph there is no graph time to compare with.
  auto plain = run_graphc_binary(env + GRAPHC_BINARY, "run " + f.engine +
                                                          " --iterations 2 --warmup-ms 0 --profile "
                                                          "--no-cuda-graph");
  INFO(plain.output);
  CHECK(plain.exit_code == 0);
  CHECK(contains(plain.output, "not measured (--no-cuda-graph)"));
}

TEST_CASE("graphc run --profile helpers: order, shares, truncated node lists", "[cli][profile]") {
  runtime::LaunchProfile p;
  p.iterations = 10;
  p.one_by_one_median_us = 70;
  auto timing = [](int launch, const char* name, const char* kind, double us,
                   std::vector<std::string> nodes) {
    runtime::LaunchTiming t;
    t.launch = launch;
    t.name = name;
    t.kind = kind;
    t.median_us = t.min_us = t.max_us = us;
    t.onnx_nodes = std::move(nodes);
    return t;
  };
  p.launches = {timing(0, "k_small", "generated elementwise", 10, {"/a/Add"}),
                timing(1, "gemm_0", "cublasLt matmul", 30, {"/fc/MatMul", "/fc/Add"}),
                timing(2, "k_tie", "generated reduction", 10, {}),
                timing(3, "output copy y", "copy", 10, {})};
  CHECK(p.sum_median_us() == 60);
  const std::string table = cli::profile_table(p, 50.0);
  INFO(table);
  // Sorted by time, ties in launch order; shares of the 60 us sum.
  const auto gemm = table.find("gemm_0"), small = table.find("k_small"), tie = table.find("k_tie");
  REQUIRE(gemm != std::string::npos);
  CHECK(gemm < small);
  CHECK(small < tie);
  CHECK(contains(table, "50.0%"));
  CHECK(contains(table, "16.7%"));
  CHECK(contains(table, "/fc/MatMul, /fc/Add"));
  CHECK(contains(table, "launch overhead the graph removes      20.00 us"));
  CHECK(contains(table, "left between kernels in the graph     -10.00 us"));
  const Json j = cli::profile_json(p, std::nullopt);
  REQUIRE(j["profile"].size() == 4);
  CHECK(j["profile"][0] == Json({{"rank", 1},
                                 {"launch", 1},
                                 {"name", "gemm_0"},
                                 {"kind", "cublasLt matmul"},
                                 {"median_us", 30.0},
                                 {"min_us", 30.0},
                                 {"max_us", 30.0},
                                 {"percent", 50.0},
                                 {"onnx_nodes", {"/fc/MatMul", "/fc/Add"}},
                                 {"flops", 0},
                                 {"hbm_bytes", 0},
                                 {"math", ""},
                                 {"roofline_us", nullptr},
                                 {"roofline_bound", nullptr},
                                 {"achieved_tflops", nullptr},
                                 {"achieved_gb_per_s", nullptr},
                                 {"roofline_fraction", nullptr}}));
  // No launch carries a model (an engine from before the roofline fields).
  CHECK(contains(table, "records no roofline model"));
  CHECK(j["profile_summary"]["roofline"]["modelled_launches"] == 0);
  CHECK(j["profile_summary"]["cuda_graph_median_us"].is_null());
  CHECK(j["profile_summary"]["sum_median_us"] == 60.0);
  CHECK(j["profile_summary"]["one_by_one_median_us"] == 70.0);
  // Long node lists: whole names, then how many more.
  std::vector<std::string> nodes;
  for (int i = 0; i < 50; ++i) nodes.push_back(fmt::format("/encoder/layer.{}/Add", i));
  const std::string shown = cli::truncated_node_list(nodes, 72);
  INFO(shown);
  CHECK(shown.size() <= 72);
  CHECK(contains(shown, "/encoder/layer.0/Add, /encoder/layer.1/Add"));
  CHECK(contains(shown, "more)"));
  CHECK(cli::truncated_node_list({"a", "b"}, 72) == "a, b");
  CHECK(cli::truncated_node_list({std::string(100, 'n')}, 20) == std::string(17, 'n') + "...");
  // An engine with nothing to launch.
  runtime::LaunchProfile empty;
  CHECK(contains(cli::profile_table(empty, 1.0), "0 launches"));
  CHECK(cli::profile_json(empty, 1.0)["profile"] == Json::array());
}

TEST_CASE("graphc run --profile: achieved rates and time lost against the roofline",
          "[cli][profile][roofline]") {
  runtime::LaunchProfile p;
  p.iterations = 5;
  p.one_by_one_median_us = 200;
  auto timing = [](int launch, const char* name, const char* kind, double us, uint64_t flops,
                   uint64_t bytes, const char* math) {
    runtime::LaunchTiming t;
    t.launch = launch;
    t.name = name;
    t.kind = kind;
    t.median_us = t.min_us = t.max_us = us;
    t.flops = flops;
    t.hbm_bytes = bytes;
    t.math = math;
    return t;
  };
  // H100: 989.4 TFLOP/s fp16 tensor core, 3350 GB/s.
  // gemm: 2 GFLOP -> roofline 2e9 / 989.4e12 s = 2.0214 us (compute-bound; 1 MB is 0.30 us).
  // elementwise: 33.5 MB -> 10 us at 3350 GB/s (memory-bound), measured 40 us.
  p.launches = {timing(0, "gemm_0", "cublasLt matmul", 20, 2'000'000'000, 1'000'000, "fp16-tc"),
                timing(1, "k_add", "generated elementwise", 40, 0, 33'500'000, ""),
                timing(2, "old", "generated reduction", 5, 0, 0, "")};
  const cli::ProfileRooflineGpu h100{target::Gpu::kH100, "--gpu"};
  const Json j = cli::profile_json(p, 150.0, h100);
  const Json& add = j["profile"][0];  // 40 us: first by time
  REQUIRE(add["name"] == "k_add");
  CHECK(add["roofline_us"].get<double>() == Approx(10.0));
  CHECK(add["roofline_bound"] == "memory");
  CHECK(add["achieved_gb_per_s"].get<double>() == Approx(837.5));  // 33.5 MB / 40 us
  CHECK(add["roofline_fraction"].get<double>() == Approx(0.25));
  CHECK(add["achieved_tflops"].get<double>() == 0.0);
  const Json& gemm = j["profile"][1];
  REQUIRE(gemm["name"] == "gemm_0");
  const double gemm_roof = 2e9 / 989.4e12 * 1e6;
  CHECK(gemm["roofline_us"].get<double>() == Approx(gemm_roof));
  CHECK(gemm["roofline_bound"] == "compute");
  CHECK(gemm["achieved_tflops"].get<double>() == Approx(100.0));  // 2 GFLOP in 20 us
  CHECK(gemm["math"] == "fp16-tc");
  CHECK(j["profile"][2]["roofline_us"].is_null());  // no model recorded
  const Json& roof = j["profile_summary"]["roofline"];
  CHECK(roof["gpu"] == "h100");
  CHECK(roof["gpu_source"] == "--gpu");
  CHECK(roof["modelled_launches"] == 2);
  CHECK(roof["measured_us"].get<double>() == Approx(60.0));
  CHECK(roof["roofline_us"].get<double>() == Approx(10.0 + gemm_roof));
  CHECK(roof["lost_us"].get<double>() == Approx(50.0 - gemm_roof));
  CHECK(roof["unmodelled_us"].get<double>() == Approx(5.0));
  REQUIRE(roof["lost_by_kind"].size() == 2);
  CHECK(roof["lost_by_kind"][0]["kind"] == "generated elementwise");  // 30 us, then the gemm's 18
  CHECK(roof["lost_by_kind"][0]["lost_us"].get<double>() == Approx(30.0));
  REQUIRE(roof["most_lost"].size() == 2);
  CHECK(roof["most_lost"][0]["launch"] == 1);
  // The same GPU table gives another roofline on another GPU: an L4's 300 GB/s.
  const Json l4 = cli::profile_json(p, 150.0, {target::Gpu::kL4, "--gpu"});
  CHECK(l4["profile"][0]["roofline_us"].get<double>() == Approx(33.5e6 / 300e9 * 1e6));
  const std::string table = cli::profile_table(p, 150.0, h100);
  INFO(table);
  CHECK(contains(table, "roofline     NVIDIA H100 SXM (--gpu)"));
  CHECK(contains(table, "% roofline"));
  CHECK(contains(table, "25%"));  // k_add's share of its roofline
  CHECK(contains(table, "838"));  // its GB/s (837.5)
  CHECK(contains(table, "100.0"));  // the gemm's TFLOP/s
  CHECK(contains(table, "launches losing the most:"));
  CHECK(contains(table, "#1    k_add"));
}
