// The timing cache file (driver/timing_cache.h) and the recorded cuBLASLt
// algorithm descriptor (engine_format/library_algorithm.h): plain data, so
// everything here runs without a GPU. A cache round-trips byte-exactly, any
// damaged byte or truncation is detected (and load_timing_cache turns it into
// a warning and an empty cache), and lookups are misses on any other device,
// library version or call.
#include "driver/timing_cache.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "engine_format/library_algorithm.h"
#include "tests/cli_util.h"
#include "tests/onnx_builder.h"

using namespace graphc;
using driver::TimingCache;
using driver::TimingKey;
using driver::TimingValue;
using engine::CublasLtAlgorithm;

namespace {

CublasLtAlgorithm sample_algorithm() {
  CublasLtAlgorithm a;
  a.algo_id = 21;
  a.tile_id = 20;  // 128x128
  a.splitk_num = 2;
  a.reduction_scheme = 2;
  a.cta_swizzling = 1;
  a.custom_option = 3;
  a.stages_id = 15;  // 64x3
  a.inner_shape_id = 4;
  a.cluster_shape_id = 2;
  a.workspace_bytes = 4096;
  a.library_version = 130100;
  a.compute_capability = 90;
  return a;
}

TimingKey key(std::string device, uint32_t cc, std::string params, uint32_t version = 130100) {
  return TimingKey{std::move(device), cc,       "cublasLt", version, "matmul",
                   std::move(params), 32u << 20};
}

TimingValue value(int32_t algo, double ms) {
  CublasLtAlgorithm a = sample_algorithm();
  a.algo_id = algo;
  return TimingValue{algo, engine::encode_cublaslt_algorithm(a), ms};
}

TimingCache sample_cache() {
  TimingCache c;
  c.put(key("NVIDIA H100 80GB HBM3", 90, "params-a"), value(21, 0.125));
  c.put(key("NVIDIA H100 80GB HBM3", 90, std::string("params\0b", 8)), value(6, 1.5));
  c.put(key("NVIDIA A100-SXM4-80GB", 80, "params-a"), value(31, 0.25));
  return c;
}

void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace

TEST_CASE("a timing cache round-trips byte-exactly", "[tune][cache]") {
  const TimingCache c = sample_cache();
  const std::string bytes = c.serialize();
  auto back = TimingCache::parse(bytes);
  INFO(back.status().message());
  REQUIRE(back.ok());
  CHECK(back->size() == 3);
  CHECK(back->serialize() == bytes);
  const TimingValue* hit =
      back->find(key("NVIDIA H100 80GB HBM3", 90, std::string("params\0b", 8)));
  REQUIRE(hit);
  CHECK(*hit == value(6, 1.5));
  // Insertion order does not matter: entries are sorted by key.
  TimingCache reordered;
  reordered.put(key("NVIDIA A100-SXM4-80GB", 80, "params-a"), value(31, 0.25));
  reordered.put(key("NVIDIA H100 80GB HBM3", 90, std::string("params\0b", 8)), value(6, 1.5));
  reordered.put(key("NVIDIA H100 80GB HBM3", 90, "params-a"), value(21, 0.125));
  CHECK(reordered.serialize() == bytes);
  // put replaces.
  reordered.put(key("NVIDIA H100 80GB HBM3", 90, "params-a"), value(7, 0.1));
  CHECK(reordered.size() == 3);
  CHECK(*reordered.find(key("NVIDIA H100 80GB HBM3", 90, "params-a")) == value(7, 0.1));
  // An empty cache is a valid file too.
  auto empty = TimingCache::parse(TimingCache{}.serialize());
  REQUIRE(empty.ok());
  CHECK(empty->size() == 0);
}

TEST_CASE("every damaged byte and every truncation of a timing cache is detected",
          "[tune][cache]") {
  const std::string good = sample_cache().serialize();
  REQUIRE(TimingCache::parse(good).ok());
  int detected = 0, tried = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    for (unsigned char mask : {0x01, 0x10, 0x80, 0xff}) {
      std::string bad = good;
      bad[i] = static_cast<char>(static_cast<unsigned char>(bad[i]) ^ mask);
      ++tried;
      auto parsed = TimingCache::parse(bad);
      if (!parsed.ok()) {
        ++detected;
      } else {
        FAIL_CHECK("flipping byte " << i << " with mask " << int(mask) << " went unnoticed");
      }
    }
  }
  CHECK(detected == tried);
  for (size_t n = 0; n < good.size(); ++n) {
    auto parsed = TimingCache::parse(good.substr(0, n));
    if (parsed.ok()) FAIL_CHECK("a cache truncated to " << n << " bytes was accepted");
  }
  auto padded = TimingCache::parse(good + "x");
  CHECK_FALSE(padded.ok());
}

TEST_CASE("a damaged, foreign or unreadable cache file is a warning and an empty cache",
          "[tune][cache]") {
  graphc::testing::TempDir dir;
  const std::string path = dir.path() + "/cache.bin";
  // Absent: empty, no warning.
  auto absent = driver::load_timing_cache(path);
  CHECK(absent.warning.empty());
  CHECK_FALSE(absent.existed);
  CHECK(absent.cache.size() == 0);
  // Good.
  write(path, sample_cache().serialize());
  auto good = driver::load_timing_cache(path);
  CHECK(good.warning.empty());
  CHECK(good.cache.size() == 3);
  // Damaged in the middle: the checksum catches it.
  std::string bytes = sample_cache().serialize();
  bytes[bytes.size() / 2] ^= 0x40;
  write(path, bytes);
  auto damaged = driver::load_timing_cache(path);
  CHECK(damaged.existed);
  CHECK(damaged.cache.size() == 0);
  CHECK(graphc::testing::contains(damaged.warning, "checksum"));
  CHECK(graphc::testing::contains(damaged.warning, path));
  // Foreign: an engine, a text file.
  write(path, "GRAPHCEN not a cache");
  CHECK(graphc::testing::contains(driver::load_timing_cache(path).warning,
                                  "not a graphc timing cache"));
  // Another version (re-checksummed, so only the version differs).
  std::string other = sample_cache().serialize();
  other[8] = 2;
  write(path, other);
  CHECK(graphc::testing::contains(driver::load_timing_cache(path).warning, "version 2"));
  // A folder where the file should be.
  std::filesystem::remove(path);
  std::filesystem::create_directory(path);
  auto folder = driver::load_timing_cache(path);
  CHECK_FALSE(folder.warning.empty());
  CHECK(folder.cache.size() == 0);
}

TEST_CASE("timing cache lookups miss on another device, library version or call", "[tune][cache]") {
  const TimingCache c = sample_cache();
  CHECK(c.find(key("NVIDIA H100 80GB HBM3", 90, "params-a")));
  CHECK_FALSE(c.find(key("NVIDIA H100 PCIe", 90, "params-a")));               // other device
  CHECK_FALSE(c.find(key("NVIDIA H100 80GB HBM3", 89, "params-a")));          // other capability
  CHECK_FALSE(c.find(key("NVIDIA H100 80GB HBM3", 90, "params-a", 130000)));  // other cuBLASLt
  CHECK_FALSE(c.find(key("NVIDIA H100 80GB HBM3", 90, "params-c")));          // other call
  TimingKey other_ws = key("NVIDIA H100 80GB HBM3", 90, "params-a");
  other_ws.workspace_limit = 0;
  CHECK_FALSE(c.find(other_ws));
  TimingKey other_lib = key("NVIDIA H100 80GB HBM3", 90, "params-a");
  other_lib.library = "cudnn";
  CHECK_FALSE(c.find(other_lib));

  // Without a GPU: by target capability only.
  const uint64_t ws = 32u << 20;
  auto sm90 = c.find_for_targets("cublasLt", "matmul", "params-a", ws, {90});
  REQUIRE(sm90);
  CHECK(sm90->first.device == "NVIDIA H100 80GB HBM3");
  CHECK(sm90->second == value(21, 0.125));
  auto sm80 = c.find_for_targets("cublasLt", "matmul", "params-a", ws, {80});
  REQUIRE(sm80);
  CHECK(sm80->second == value(31, 0.25));
  // Several targets: the newest capability's entry.
  auto both = c.find_for_targets("cublasLt", "matmul", "params-a", ws, {80, 90});
  REQUIRE(both);
  CHECK(both->first.compute_capability == 90);
  CHECK_FALSE(c.find_for_targets("cublasLt", "matmul", "params-a", ws, {86}));
  CHECK_FALSE(c.find_for_targets("cublasLt", "matmul", "params-a", 0, {90}));
  CHECK_FALSE(c.find_for_targets("cublasLt", "matmul", std::string("params\0b", 8), ws, {80}));
  // Same capability, two library versions: the newer one's.
  TimingCache two = c;
  two.put(key("NVIDIA H100 80GB HBM3", 90, "params-a", 130200), value(5, 0.5));
  auto newest = two.find_for_targets("cublasLt", "matmul", "params-a", ws, {90});
  REQUIRE(newest);
  CHECK(newest->first.library_version == 130200);
}

TEST_CASE("the recorded cuBLASLt algorithm descriptor is versioned and checked field by field",
          "[tune][engine]") {
  const CublasLtAlgorithm a = sample_algorithm();
  const std::string bytes = engine::encode_cublaslt_algorithm(a);
  auto back = engine::decode_cublaslt_algorithm(bytes);
  INFO(back.status().message());
  REQUIRE(back.ok());
  CHECK(*back == a);
  CHECK(engine::describe_cublaslt_algorithm(a) ==
        "algo 21 tile 128x128 stages 64x3 splitK 2 reduction compute-type swizzle 1 custom 3 "
        "inner 4 cluster 2");
  CHECK(engine::cublaslt_tile_name(0) == "undefined");
  CHECK(engine::cublaslt_tile_name(100000) == "#100000");
  for (size_t n = 0; n < bytes.size(); ++n)
    CHECK_FALSE(engine::decode_cublaslt_algorithm(bytes.substr(0, n)).ok());
  CHECK_FALSE(engine::decode_cublaslt_algorithm(bytes + '\0').ok());
  std::string v2 = bytes;
  v2[0] = 2;
  CHECK(graphc::testing::contains(engine::decode_cublaslt_algorithm(v2).status().message(),
                                  "version 2"));
  auto bad = [&](auto edit, const std::string& part) {
    CublasLtAlgorithm b = a;
    edit(b);
    auto r = engine::decode_cublaslt_algorithm(engine::encode_cublaslt_algorithm(b));
    REQUIRE_FALSE(r.ok());
    CHECK(graphc::testing::contains(r.status().message(), part));
  };
  bad([](CublasLtAlgorithm& b) { b.algo_id = -1; }, "algo id");
  bad([](CublasLtAlgorithm& b) { b.tile_id = 1u << 20; }, "tile");
  bad([](CublasLtAlgorithm& b) { b.splitk_num = 0; }, "split-K");
  bad([](CublasLtAlgorithm& b) { b.reduction_scheme = 8; }, "reduction scheme");
  bad([](CublasLtAlgorithm& b) { b.cta_swizzling = 2; }, "swizzling");
  bad([](CublasLtAlgorithm& b) { b.workspace_bytes = uint64_t{1} << 40; }, "workspace");
  bad([](CublasLtAlgorithm& b) { b.compute_capability = 5000; }, "compute capability");
}

TEST_CASE("recorded algorithms are checked against their library call", "[tune][engine]") {
  const std::string config = engine::encode_cublaslt_algorithm(sample_algorithm());
  const uint64_t ws = 32u << 20;
  CHECK(engine::check_recorded_algorithm("cublasLt", 21, config, 0.125, ws).ok());
  CHECK(engine::check_recorded_algorithm("cublasLt", -1, "", 0, ws).ok());  // heuristic at load
  CHECK(engine::check_recorded_algorithm("cublasLt", 3, "", 0, ws).ok());   // older engines
  CHECK(engine::check_recorded_algorithm("cudnn", 1, "", 0.5, ws).ok());    // a cuDNN enum
  auto refused = [&](std::string_view lib, int64_t algo, const std::string& cfg, double ms,
                     uint64_t limit, const std::string& part) {
    Status st = engine::check_recorded_algorithm(lib, algo, cfg, ms, limit);
    REQUIRE_FALSE(st.ok());
    CHECK(graphc::testing::contains(st.message(), part));
  };
  refused("cublasLt", 22, config, 0.125, ws, "differs from its config's algo id 21");
  refused("cublasLt", 21, config, 0.125, 1024, "needs 4096 bytes of workspace");
  refused("cublasLt", 21, config, -1, ws, "tuned time");
  refused("cublasLt", 21, config, std::nan(""), ws, "tuned time");
  refused("cublasLt", -1, "", 0.5, ws, "without a recorded algorithm");
  refused("cublasLt", 21, "junk", 0.125, ws, "cublasLt algorithm config");
  refused("cublasLt", 64, "", 0, ws, "algorithm 64");
  refused("cudnn", 1, config, 0, ws, "record no algorithm config");
  refused("cudnn", -2, "", 0, ws, "algorithm -2");
  CHECK(engine::describe_recorded_algorithm("cublasLt", -1, "", 0) == "heuristic at load");
  CHECK(engine::describe_recorded_algorithm("cublasLt", 21, config, 0.125) ==
        "tuned: algo 21 tile 128x128 stages 64x3 splitK 2 reduction compute-type swizzle 1 "
        "custom 3 inner 4 cluster 2 (0.125 ms)");
}
