// Every JSON document graphc prints or writes goes through support/json.h
// (nlohmann-json): each carries "schema_version", and names from models and
// engines that are not valid UTF-8 or hold control characters still give
// valid JSON (invalid bytes become U+FFFD). The documents are parsed here
// with nlohmann, which throws (failing the test) on anything invalid.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/json.h"
#include "tests/cli_util.h"
#include "tests/onnx_builder.h"

using namespace graphc;
using namespace graphc::testing;

namespace {

// An invalid UTF-8 byte and a control character, and how JSON gives them back.
const std::string kBad = "\xff\x01";
const std::string kShown = "\xef\xbf\xbd\x01";  // U+FFFD, then the control character

nlohmann::json parse_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  INFO(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

bool has_string(const nlohmann::json& list, const std::string& s) {
  for (const auto& item : list)
    if (item == s) return true;
  return false;
}

// y = Sigmoid(Relu(x) * 3), with hostile input, output and node names.
std::string write_hostile_model(const TempDir& dir) {
  OnnxModel m(17, "graph" + kBad);
  m.input("x" + kBad, onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
  m.initializer(float_tensor("three", {}, {3.0f}));
  m.node("Relu", {"x" + kBad}, {"r"}, "relu" + kBad);
  m.node("Mul", {"r", "three"}, {"m"}, "mul" + kBad);
  m.node("Sigmoid", {"m"}, {"y" + kBad}, "sigmoid" + kBad);
  m.output("y" + kBad, onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
  const std::string path = dir.file("hostile.onnx");
  m.write(path);
  return path;
}

}  // namespace

TEST_CASE("dump_json: U+FFFD for invalid UTF-8, escaped controls, null for NaN", "[json]") {
  Json doc = json_document();
  doc["name"] = "a" + kBad + "\"b\n\xc3\xa9";
  doc["nan"] = std::nan("");
  doc["inf"] = INFINITY;
  doc["x"] = 1.5;
  const std::string text = dump_json(doc);
  INFO(text);
  CHECK(text.rfind("{\n  \"schema_version\": 1,", 0) == 0);  // the first key
  CHECK(text.back() == '\n');
  CHECK(text.find("\\u0001") != std::string::npos);
  const auto parsed = nlohmann::json::parse(text);
  CHECK(parsed["schema_version"] == kJsonSchemaVersion);
  CHECK(parsed["name"] == "a" + kShown + "\"b\n\xc3\xa9");  // é is kept as it is
  CHECK(parsed["nan"].is_null());
  CHECK(parsed["inf"].is_null());
  CHECK(parsed["x"] == 1.5);
  const std::string line = dump_json(doc, -1);
  CHECK(line.find('\n') == line.size() - 1);
  CHECK(valid_utf8("a\xff"
                   "b\xc3") ==
        "a\xef\xbf\xbd"
        "b\xef\xbf\xbd");
  CHECK(valid_utf8("plain \xe2\x82\xac") == "plain \xe2\x82\xac");
}

TEST_CASE("inspect --json on a model with hostile names is valid JSON", "[json][cli]") {
  TempDir dir;
  const std::string model = write_hostile_model(dir);
  auto r = run_graphc("inspect --json " + model);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j["schema_version"] == 1);
  CHECK(j["inputs"][0]["name"] == "x" + kShown);
  CHECK(j["outputs"][0]["name"] == "y" + kShown);
  CHECK(j["shapes_inferred"] == true);
  REQUIRE(j["fusion"].is_object());
  bool found = false;
  for (const auto& k : j["fusion"]["kernel_list"])
    found = found || has_string(k["onnx_nodes"], "relu" + kShown);
  CHECK(found);
  // The text report does not crash on them either.
  auto text = run_graphc("inspect " + model);
  CHECK(text.exit_code == 0);
}

TEST_CASE("engine, run and export JSON with hostile names are valid JSON", "[json][cli]") {
  TempDir dir;
  const std::string model = write_hostile_model(dir);
  const std::string engine = dir.file("hostile.engine");
  auto built = run_graphc("build " + model + " --arch sm_90 -o " + engine);
  INFO(built.output);
  REQUIRE(built.exit_code == 0);

  auto inspect = run_graphc("inspect --json " + engine);
  REQUIRE(inspect.exit_code == 0);
  const auto e = nlohmann::json::parse(inspect.output);
  CHECK(e["schema_version"] == 1);
  CHECK(e["graph_name"] == "graph" + kShown);
  CHECK(e["inputs"][0]["name"] == "x" + kShown);
  CHECK(e["outputs"][0]["name"] == "y" + kShown);
  bool found = false;
  for (const auto& k : e["kernels"])
    found = found || has_string(k["onnx_nodes"], "sigmoid" + kShown);
  CHECK(found);
  CHECK(e["library_calls"] == 0);

  // `graphc run` on the stand-in driver: its kernels do nothing, so --check
  // fails (exit 3) and every report is still written.
  const std::string env = std::string("LD_LIBRARY_PATH=") + GRAPHC_FAKE_CUDA_DIR + " ";
  auto run = run_graphc_binary(
      env + GRAPHC_BINARY,
      "run " + engine + " --iterations 3 --warmUp 0 --dumpProfile --check --onnx " + model +
          " --json " + dir.file("r.json") + " --exportTimes " + dir.file("t.json") +
          " --exportProfile " + dir.file("p.json") + " --exportLayerInfo " + dir.file("l.json"));
  INFO(run.output);
  CHECK(run.exit_code == 3);
  const auto r = parse_file(dir.file("r.json"));
  CHECK(r["schema_version"] == 1);
  REQUIRE(r["check"].size() == 1);
  CHECK(r["check"][0]["output"] == "y" + kShown);
  CHECK(r["check"][0]["ok"] == false);
  found = false;
  for (const auto& l : r["profile"]) found = found || has_string(l["onnx_nodes"], "relu" + kShown);
  CHECK(found);
  const auto t = parse_file(dir.file("t.json"));
  CHECK(t["schema_version"] == 1);
  REQUIRE(t["iterations"].size() == 3);
  CHECK(t["iterations"][0]["compute_ms"] == 0.125);  // the stand-in's event time
  CHECK(t["iterations"][0]["h2d_ms"] == 0.125);
  CHECK(t["iterations"][0]["latency_ms"] == 0.375);
  const auto p = parse_file(dir.file("p.json"));
  CHECK(p["schema_version"] == 1);
  CHECK(p["profile"].size() == e["kernels"].size());
  CHECK(p["profile_summary"]["iterations"] == 3);
  const auto l = parse_file(dir.file("l.json"));
  CHECK(l == e);  // --exportLayerInfo is `inspect ENGINE --json`

  // --noDataTransfers: no copies timed, so none reported.
  auto alone = run_graphc_binary(env + GRAPHC_BINARY,
                                 "run " + engine + " --iterations 2 --warmUp 0 --noDataTransfers" +
                                     " --json " + dir.file("n.json") + " --exportTimes " +
                                     dir.file("nt.json"));
  INFO(alone.output);
  CHECK(alone.exit_code == 0);
  CHECK(contains(alone.output, "none in the timed loop (--noDataTransfers)"));
  const auto n = parse_file(dir.file("n.json"));
  CHECK(n["data_transfers"] == false);
  CHECK(n["h2d_ms"].is_null());
  CHECK(n["gpu_compute_ms"]["median"] == 0.125);
  const auto nt = parse_file(dir.file("nt.json"));
  CHECK(nt["iterations"][1]["h2d_ms"].is_null());
  CHECK(nt["iterations"][1]["latency_ms"] == 0.125);
}

TEST_CASE("conformance --json with hostile case and node names is valid JSON, failures exit 3",
          "[json][cli]") {
  // One case whose folder name holds an invalid byte and a control
  // character, with an expected output that is deliberately wrong.
  TempDir dir;
  const std::string case_dir = dir.file("cases/test_relu" + kBad);
  std::filesystem::create_directories(case_dir + "/test_data_set_0");
  OnnxModel m(13);
  m.input("x" + kBad, onnx::TensorProto::FLOAT, {int64_t{3}});
  m.node("Relu", {"x" + kBad}, {"y" + kBad}, "relu" + kBad);
  m.output("y" + kBad, onnx::TensorProto::FLOAT, {int64_t{3}});
  m.write(case_dir + "/model.onnx");
  auto write_tensor = [&](const std::string& file, const std::vector<float>& v) {
    std::string bytes;
    REQUIRE(float_tensor("t", {3}, v).SerializeToString(&bytes));
    std::ofstream(case_dir + "/test_data_set_0/" + file, std::ios::binary) << bytes;
  };
  write_tensor("input_0.pb", {-1.5f, 0.5f, 2.0f});
  write_tensor("output_0.pb", {0.0f, 0.5f, 2.5f});  // Relu gives 2.0, not 2.5
  const std::string out = dir.file("c.json");
  auto r = run_graphc("conformance " + dir.file("cases") + " --json " + out);
  INFO(r.output);
  CHECK(r.exit_code == 3);
  CHECK(contains(r.output, "conformance: 0 passed, 1 failed"));
  const auto j = parse_file(out);
  CHECK(j["schema_version"] == 1);
  CHECK(j["failed"] == 1);
  REQUIRE(j["cases"].size() == 1);
  CHECK(j["cases"][0]["name"] == "test_relu" + kShown);
  CHECK(j["cases"][0]["outcome"] == "fail");
  CHECK_FALSE(j["cases"][0]["reason"].get<std::string>().empty());
  CHECK(j["cases"][0]["ops"] == nlohmann::json::array({"Relu"}));
  // The same case with the right answer passes: exit 0.
  write_tensor("output_0.pb", {0.0f, 0.5f, 2.0f});
  auto ok = run_graphc("conformance " + dir.file("cases"));
  INFO(ok.output);
  CHECK(ok.exit_code == 0);
}
