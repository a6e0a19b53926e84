// engine_format/: the writer and reader round trip, determinism, corruption
// detection (every byte flip, every truncation), code selection per device,
// and atomic file writes, and hostile files whose checksums are right but
// whose section table or manifest lies.
#include <catch2/catch.hpp>
#include <fstream>

#include "engine_format/engine_file.h"
#include "tests/engine_test_util.h"

using namespace graphc;
using namespace graphc::engine;
using namespace graphc::engine::testing;

TEST_CASE("engine round trip keeps manifest, code and weights", "[engine]") {
  // serialize_engine then parse_engine gives back exactly what went in, for
  // several weight sizes (including none and non-multiples of 256).
  for (size_t weights_size : {size_t{56}, size_t{300}, size_t{4096}, size_t{100003}}) {
    EngineContents c = sample_engine(weights_size);
    auto parsed = parse_engine(serialize_ok(c));
    INFO(parsed.status().message());
    REQUIRE(parsed.ok());
    CHECK(same_contents(c, *parsed));
    CHECK(parsed->manifest.kernels(1).onnx_nodes(1) == "Relu_2");
    CHECK(parsed->manifest.kernels(0).library_call().algorithm() == 7);
  }
  // An engine with no weights and no tensors in the weights section.
  EngineContents empty;
  empty.manifest.set_producer("graphc 0.1.0");
  auto parsed = parse_engine(serialize_ok(empty));
  INFO(parsed.status().message());
  REQUIRE(parsed.ok());
  CHECK(same_contents(empty, *parsed));
}

TEST_CASE("engine header reports versions and producer", "[engine]") {
  // read_engine_header exposes the fixed header fields of a valid file.
  // An engine without kernel parameters is stamped with the base version, so
  // older readers still run it; one with parameters needs version 3.
  auto header = read_engine_header(serialize_ok(sample_engine()));
  REQUIRE(header.ok());
  CHECK(header->format_version == kFormatVersionBase);
  CHECK(header->min_reader_version == kFormatVersionBase);
  CHECK(header->producer == "graphc 0.1.0");
  CHECK(header->section_count == 5);
  CHECK(header->flags == 0);
  EngineContents with_params = sample_engine();
  for (auto& k : *with_params.manifest.mutable_kernels())
    if (!k.module_entry().empty()) {
      k.set_params(std::string(16, '\x07'));
      break;
    }
  auto h3 = read_engine_header(serialize_ok(with_params));
  REQUIRE(h3.ok());
  CHECK(h3->format_version == kFormatVersionKernelParams);
  CHECK(h3->min_reader_version == kFormatVersionKernelParams);
  auto reread = parse_engine(serialize_ok(with_params));
  REQUIRE(reread.ok());
  CHECK(same_contents(with_params, *reread));
}

TEST_CASE("engine serialization is deterministic and weights are 256-byte aligned", "[engine]") {
  // Same contents give identical bytes, and re-serializing a parsed engine
  // reproduces the file; the weights payload starts on a 256-byte boundary.
  EngineContents c = sample_engine(1000);
  std::string a = serialize_ok(c);
  std::string b = serialize_ok(c);
  CHECK(a == b);
  auto parsed = parse_engine(a);
  REQUIRE(parsed.ok());
  CHECK(serialize_ok(*parsed) == a);
  size_t weights_offset = a.size() - c.weights.size();
  CHECK(weights_offset % kWeightsAlign == 0);
  CHECK(a.substr(weights_offset) == c.weights);
}

TEST_CASE("every single-byte flip of an engine is detected", "[engine]") {
  // Flipping any byte (xor 0xFF, and +1) anywhere — header, section table,
  // padding, manifest, code, weights — makes parse_engine fail; never succeed,
  // never crash.
  std::string good = serialize_ok(sample_engine(60, 16));
  REQUIRE(parse_engine(good).ok());
  size_t undetected = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    for (int mode = 0; mode < 2; ++mode) {
      std::string bad = good;
      bad[i] = mode == 0 ? static_cast<char>(bad[i] ^ 0xff) : static_cast<char>(bad[i] + 1);
      auto parsed = parse_engine(bad);
      if (parsed.ok()) {
        ++undetected;
        UNSCOPED_INFO("flip " << mode << " at offset " << i << " went undetected");
      } else {
        CHECK(parsed.status().code() == ErrorCode::kInvalidEngine);
      }
    }
  }
  CHECK(undetected == 0);
}

TEST_CASE("engine truncated at every offset is refused", "[engine]") {
  // Every proper prefix of a valid engine (including empty) fails to parse.
  std::string good = serialize_ok(sample_engine(60, 16));
  size_t accepted = 0;
  for (size_t n = 0; n < good.size(); ++n) {
    if (parse_engine(std::string_view(good).substr(0, n)).ok()) ++accepted;
  }
  CHECK(accepted == 0);
  auto parsed = parse_engine(std::string_view(good).substr(0, good.size() - 1));
  REQUIRE_FALSE(parsed.ok());
  CHECK(contains(parsed.status().message(), "section 4 (weights)"));
  CHECK(contains(parsed.status().message(), "past the end"));
}

TEST_CASE("corrupted payloads name their section", "[engine]") {
  // A flipped byte inside the weights or a code section names the section
  // and says checksum mismatch.
  std::string good = serialize_ok(sample_engine());
  std::string bad = good;
  bad[bad.size() - 10] ^= 0x01;
  auto parsed = parse_engine(bad);
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.status().message() == "section 4 (weights) is corrupted: checksum mismatch");

  bad = good;
  size_t cubin90 = bad.rfind(random_bytes(64, 2));
  REQUIRE(cubin90 != std::string::npos);
  bad[cubin90 + 5] ^= 0x40;
  parsed = parse_engine(bad);
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.status().message() == "section 3 (cubin sm_90) is corrupted: checksum mismatch");
}

TEST_CASE("wrong magic and short files are not graphc engines", "[engine]") {
  // Anything that does not start with GRAPHCEN — including empty and tiny
  // inputs and an ONNX-looking file — is "not a graphc engine (bad magic)".
  for (std::string bytes :
       {std::string(), std::string("GRAPH"), std::string("\x08\x07\x12\x04onnx", 8),
        std::string("GRAPHCEX") + std::string(200, '\0')}) {
    auto parsed = parse_engine(bytes);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().message() == "not a graphc engine (bad magic)");
  }
}

TEST_CASE("select_code prefers exact CUBIN, then newest usable PTX", "[engine]") {
  // CUBIN on an exact SM match; otherwise the newest PTX not newer than the
  // device; otherwise an error listing the archs the engine was built for.
  EngineContents c = sample_engine();
  c.code.push_back({"sm_75", CodeBlob::Kind::kPtx, "ptx75"});
  c.code.push_back({"sm_86", CodeBlob::Kind::kPtx, "ptx86"});

  auto pick = select_code(c, 90);
  REQUIRE(pick.ok());
  CHECK(((*pick)->arch == "sm_90" && (*pick)->kind == CodeBlob::Kind::kCubin));
  pick = select_code(c, 80);
  REQUIRE(pick.ok());
  CHECK(((*pick)->arch == "sm_80" && (*pick)->kind == CodeBlob::Kind::kCubin));
  pick = select_code(c, 89);  // no cubin for sm_89: newest PTX <= 89 is sm_86
  REQUIRE(pick.ok());
  CHECK(((*pick)->arch == "sm_86" && (*pick)->kind == CodeBlob::Kind::kPtx));
  pick = select_code(c, 100);
  REQUIRE(pick.ok());
  CHECK((*pick)->arch == "sm_86");
  pick = select_code(c, 75);
  REQUIRE(pick.ok());
  CHECK((*pick)->arch == "sm_75");

  // A cubin for a different SM is never used, and PTX newer than the device is useless.
  EngineContents only80;
  only80.code.push_back({"sm_80", CodeBlob::Kind::kCubin, "cubin"});
  only80.code.push_back({"sm_100", CodeBlob::Kind::kPtx, "ptx"});
  auto none = select_code(only80, 90);
  REQUIRE_FALSE(none.ok());
  CHECK(
      none.status().message() ==
      "engine built for sm_80, sm_100; this device is sm_90 and the engine has no PTX it can use");
  CHECK_FALSE(select_code(EngineContents{}, 90).ok());
}

TEST_CASE("write_engine_file writes atomically and leaves no temp files", "[engine]") {
  // A write into a missing folder fails and creates nothing; replacing an
  // existing engine leaves exactly the new file (no temporaries); an invalid
  // engine is refused before any file is touched.
  TempDir dir;
  EngineContents first = sample_engine(300);
  EngineContents second = sample_engine(5000);
  second.manifest.set_graph_name("second");

  std::string missing = (dir.path / "no_such_folder" / "model.engine").string();
  Status s = write_engine_file(missing, first);
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == ErrorCode::kIo);
  CHECK(contains(s.message(), missing));
  CHECK_FALSE(fs::exists(dir.path / "no_such_folder"));
  CHECK(dir.files().empty());

  std::string path = (dir.path / "model.engine").string();
  REQUIRE(write_engine_file(path, first).ok());
  CHECK(dir.files() == std::vector<std::string>{"model.engine"});
  auto read = read_engine_file(path);
  REQUIRE(read.ok());
  CHECK(same_contents(first, *read));
  CHECK((fs::status(path).permissions() & fs::perms::owner_read) != fs::perms::none);

  REQUIRE(write_engine_file(path, second).ok());
  CHECK(dir.files() == std::vector<std::string>{"model.engine"});
  read = read_engine_file(path);
  REQUIRE(read.ok());
  CHECK(read->manifest.graph_name() == "second");

  EngineContents invalid = sample_engine();
  invalid.manifest.mutable_inputs(0)->set_tensor(99);
  s = write_engine_file(path, invalid);
  REQUIRE_FALSE(s.ok());
  CHECK(contains(s.message(), "refusing to write an invalid engine"));
  CHECK(dir.files() == std::vector<std::string>{"model.engine"});
  read = read_engine_file(path);
  REQUIRE(read.ok());
  CHECK(read->manifest.graph_name() == "second");  // the old file is intact
}

TEST_CASE("read_engine_file reports missing files, folders and bad files with the path",
          "[engine]") {
  // I/O failures are Statuses naming the path; parse errors get the path as context.
  TempDir dir;
  auto missing = read_engine_file((dir.path / "nope.engine").string());
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == ErrorCode::kNotFound);
  auto folder = read_engine_file(dir.path.string());
  REQUIRE_FALSE(folder.ok());
  CHECK(contains(folder.status().message(), "not a regular file"));
  std::string onnx = (dir.path / "model.onnx").string();
  std::ofstream(onnx) << "not an engine at all";
  auto bad = read_engine_file(onnx);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "engine '" + onnx + "': not a graphc engine (bad magic)");
}

// ---- Hostile files: checksums are valid, the structure lies. ----

TEST_CASE("the test assembler matches the writer byte for byte", "[engine]") {
  // Guards the hostile tests below: their hand-made files use the real layout.
  EngineContents c = sample_engine();
  CHECK(assemble(c) == serialize_ok(c));
}

TEST_CASE("section table lies are refused with messages", "[engine]") {
  // Offsets out of range, length overflows (u64 near max), overlaps with the
  // header or another section, gaps, unknown kinds, misplaced or repeated
  // manifests, non-zero padding and trailing bytes all fail, each with a
  // message naming the section.
  std::string good = serialize_ok(sample_engine());
  uint64_t weights_off = get_u64(good, entry(4) + kEntryOffset);
  uint64_t code1_off = get_u64(good, entry(1) + kEntryOffset);

  expect_refused(patch_u64(good, 4, kEntryOffset, good.size() + 256),
                 "section 4 (weights): bytes [");
  expect_refused(patch_u64(good, 4, kEntryOffset, good.size() + 256), "run past the end");
  expect_refused(patch_u64(good, 4, kEntryLength, UINT64_MAX - 8), "overflows");
  expect_refused(patch_u64(good, 2, kEntryOffset, UINT64_MAX), "section 2 (cubin sm_80): offset");
  expect_refused(patch_u64(good, 2, kEntryLength, UINT64_MAX), "overflows");
  expect_refused(patch_u64(good, 0, kEntryOffset, 8), "overlaps the header and section table");
  expect_refused(patch_u64(good, 2, kEntryOffset, code1_off), "overlaps section 1");
  expect_refused(patch_u64(good, 4, kEntryOffset, weights_off + 256), "run past the end");
  expect_refused(patch_u64(good, 4, kEntryLength, 0), "bytes after the last section");
  expect_refused(patch_u64(good, 1, kEntryLength, 1), "leaves a gap");

  std::string bad = good;
  put_u32(bad, entry(2) + kEntryKind, 9);
  detail::reseal_header(bad);
  expect_refused(bad, "section 2 has unknown kind 9");
  bad = good;
  put_u32(bad, entry(2) + kEntryKind, 1);
  detail::reseal_header(bad);
  expect_refused(bad, "section 2 is a second manifest section");
  bad = good;
  put_u32(bad, entry(0) + kEntryKind, 4);
  detail::reseal_header(bad);
  expect_refused(bad, "the manifest must come first");
  bad = good;
  std::memcpy(bad.data() + entry(1) + 8, "sm_9x", 5);
  detail::reseal_header(bad);
  expect_refused(bad, "not of the form sm_NN");

  bad = good;
  REQUIRE(weights_off > 0);
  REQUIRE(bad[weights_off - 1] == '\0');  // the sample's weights follow padding
  bad[weights_off - 1] = 1;
  expect_refused(bad, "padding byte at offset");
  expect_refused(good + std::string(1, '\0'), "1 bytes after the last section");
}

TEST_CASE("engine header lies are refused", "[engine]") {
  // Newer min_reader_version stops the reader with the "newer" message before
  // anything else is read (even with a broken rest of the file); unknown
  // flags, section counts out of range and a bad header checksum fail.
  std::string good = serialize_ok(sample_engine());
  std::string newer = good.substr(0, 16);
  put_u32(newer, 8, kFormatVersion + 1);
  put_u32(newer, 12, kFormatVersion + 1);
  auto parsed = parse_engine(newer);
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.status().message() ==
        fmt::format("engine format version {} is newer than this graphc reads ({}); rebuild the "
                    "engine or update graphc",
                    kFormatVersion + 1, kFormatVersion));
  CHECK_FALSE(read_engine_header(newer).ok());

  std::string bad = good;
  put_u32(bad, 64, 1);
  detail::reseal_header(bad);
  expect_refused(bad, "flags 0x1");
  bad = good;
  put_u32(bad, 68, 1);
  expect_refused(bad, "1 sections");
  bad = good;
  put_u32(bad, 68, 100000);
  expect_refused(bad, "100000 sections");
  bad = good;
  put_u32(bad, 68, 6);  // one more entry than written: the table now eats the manifest
  detail::reseal_header(bad);
  CHECK_FALSE(parse_engine(bad).ok());
  bad = good;
  bad[20] = 'X';  // producer text, without resealing
  expect_refused(bad, "engine header is corrupted: checksum mismatch");
  bad = good;
  put_u32(bad, 12, 0);
  expect_refused(bad, "minimum reader version 0");
}

TEST_CASE("manifest index and range lies are refused by writer and reader", "[engine]") {
  // Binding, kernel-argument and code-module section indices out of range,
  // code modules pointing at the wrong kind or arch, tensors outside the arena
  // or weights, sizes that disagree with shape and dtype, bad launch dims:
  // serialize_engine refuses them and parse_engine refuses hand-made files.
  auto with = [](auto&& edit) {
    EngineContents c = sample_engine();
    edit(c);
    return c;
  };
  expect_invalid_manifest(with([](auto& c) { c.manifest.mutable_inputs(0)->set_tensor(5); }),
                          "input binding 'x': tensor index 5 is out of range");
  expect_invalid_manifest(with([](auto& c) { c.manifest.mutable_outputs(0)->set_tensor(-1); }),
                          "tensor index -1 is out of range");
  expect_invalid_manifest(with([](auto& c) { c.manifest.mutable_kernels(1)->set_args(0, 42); }),
                          "kernel 1 'fused_1': argument 0 names tensor 42, out of range");
  expect_invalid_manifest(
      with([](auto& c) { c.manifest.mutable_code_modules(0)->set_cubin_section(17); }),
      "cubin_section 17 is out of range");
  expect_invalid_manifest(
      with([](auto& c) { c.manifest.mutable_code_modules(0)->set_cubin_section(0); }),
      "is the manifest section");
  expect_invalid_manifest(
      with([](auto& c) { c.manifest.mutable_code_modules(1)->set_cubin_section(2); }),
      "is the cubin sm_80 section, not cubin sm_90");
  expect_invalid_manifest(
      with([](auto& c) { c.manifest.mutable_code_modules(0)->set_ptx_section(2); }),
      "not ptx sm_80");
  expect_invalid_manifest(with([](auto& c) { c.manifest.mutable_code_modules()->RemoveLast(); }),
                          "section 3 (cubin sm_90) is not used by any manifest code module");
  expect_invalid_manifest(with([](auto& c) { c.manifest.mutable_tensors(2)->set_offset(40); }),
                          "tensor 2 't': bytes [40, 72) lie outside the 64-byte arena");
  expect_invalid_manifest(
      with([](auto& c) { c.manifest.mutable_tensors(2)->set_offset(UINT64_MAX - 3); }),
      "overflows");
  expect_invalid_manifest(with([](auto& c) { c.manifest.mutable_tensors(3)->set_offset(296); }),
                          "outside the 300-byte weights section");
  expect_invalid_manifest(with([](auto& c) { c.manifest.mutable_tensors(3)->set_offset(47); }),
                          "not a multiple of its element size 2");
  expect_invalid_manifest(with([](auto& c) { c.manifest.set_weights_bytes(299); }),
                          "manifest says 299 bytes of weights but the weights section holds 300");
  expect_invalid_manifest(with([](auto& c) { c.manifest.mutable_tensors(1)->set_bytes(47); }),
                          "size is 47 bytes but its shape and dtype need 48");
  expect_invalid_manifest(with([](auto& c) { c.manifest.mutable_tensors(1)->set_shape(0, -3); }),
                          "negative dimension -3");
  expect_invalid_manifest(with([](auto& c) {
                            auto* t = c.manifest.mutable_tensors(2);
                            for (int i = 0; i < 3; ++i) t->add_shape(int64_t{1} << 40);
                          }),
                          "element count overflows");
  expect_invalid_manifest(with([](auto& c) { c.manifest.mutable_tensors(0)->set_dtype(8); }),
                          "unknown dtype 8");
  expect_invalid_manifest(
      with([](auto& c) {
        c.manifest.mutable_tensors(0)->set_location(static_cast<Tensor::Location>(7));
      }),
      "unknown location 7");
  expect_invalid_manifest(with([](auto& c) { c.manifest.mutable_tensors(4)->set_offset(32); }),
                          "output tensors have offset 0");
  expect_invalid_manifest(with([](auto& c) { c.manifest.mutable_kernels(1)->set_grid(0, 0); }),
                          "grid[0] = 0 is outside");
  expect_invalid_manifest(with([](auto& c) { c.manifest.mutable_kernels(1)->set_grid(1, 70000); }),
                          "grid[1] = 70000 is outside");
  expect_invalid_manifest(with([](auto& c) { c.manifest.mutable_kernels(1)->set_block(1, 16); }),
                          "a block of 2048 threads exceeds 1024");
  expect_invalid_manifest(
      with([](auto& c) { c.manifest.mutable_kernels(1)->mutable_block()->RemoveLast(); }),
      "block has 2 values, not 3");
  expect_invalid_manifest(
      with([](auto& c) { c.manifest.mutable_kernels(1)->set_shared_mem_bytes(1 << 20); }),
      "bytes of shared memory exceed");
  expect_invalid_manifest(
      with([](auto& c) { c.manifest.mutable_kernels(1)->set_module_entry(""); }),
      "no module entry and no library call");
  expect_invalid_manifest(
      with([](auto& c) {
        c.manifest.mutable_kernels(0)->mutable_library_call()->set_library("mkl");
      }),
      "unknown library 'mkl'");
  expect_invalid_manifest(with([](auto& c) { c.manifest.mutable_inputs(0)->set_name(""); }),
                          "input binding 0 has no name");
  expect_invalid_manifest(with([](auto& c) { *c.manifest.add_outputs() = c.manifest.outputs(0); }),
                          "repeats a name");
  expect_invalid_manifest(
      with([](auto& c) { c.manifest.mutable_code_modules(1)->set_arch("gfx90a"); }),
      "arch is not of the form sm_NN");
}

TEST_CASE("manifest bytes that are not a valid protobuf are refused", "[engine]") {
  // Garbage, truncated varints and deeply nested unknown groups in the
  // manifest section fail cleanly; a producer that disagrees with the header
  // is refused.
  expect_refused(assemble("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", {}, ""),
                 "not a valid protobuf");
  expect_refused(assemble(std::string("\x08", 1), {}, ""), "not a valid protobuf");
  std::string nested;
  for (int i = 0; i < 5000; ++i) nested += "\xa3\x06";  // start group, field 100
  for (int i = 0; i < 5000; ++i) nested += "\xa4\x06";  // end group, field 100
  expect_refused(assemble(nested, {}, ""), "not a valid protobuf");
  Manifest m;
  m.set_producer("graphc 9.9.9");
  expect_refused(assemble(m.SerializeAsString(), {}, ""), "differs from the header");
}

TEST_CASE("random manifest mutations with valid checksums never crash the reader", "[engine]") {
  // Mutates 1-8 bytes of the manifest payload, fixes the section and header
  // checksums, and parses: the reader must fail cleanly or accept, and what it
  // accepts the writer must accept too (so the validation is one rule set).
  int accepted = mutate_manifest_checked(serialize_ok(sample_engine()), 1234, 3000,
                                         [](const EngineContents&) {});
  CHECK(accepted < 3000);
}
