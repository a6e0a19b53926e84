// Engine format 2: one code module per distinct kernel. Round trip with the
// module of every code blob, select_code per module, reading format-1 files,
// every new field's validation (writer and reader refuse the same lies), and
// the runtime view (executable_from_engine: one image per module).
#include <catch2/catch.hpp>

#include "driver/engine_build.h"
#include "engine_format/engine_file.h"
#include "runtime/engine_loader.h"
#include "tests/engine_test_util.h"

using namespace graphc;
using namespace graphc::engine;
using namespace graphc::engine::testing;

TEST_CASE("a multi-module engine round trips with the module of every code blob", "[engine]") {
  // The reader gives every code blob the module its CodeModule entry names.
  EngineContents c = modular_engine();
  std::string bytes = serialize_ok(c);
  auto parsed = parse_engine(bytes);
  INFO(parsed.status().message());
  REQUIRE(parsed.ok());
  CHECK(same_contents(c, *parsed));
  CHECK(module_count(parsed->manifest) == 2);
  REQUIRE(parsed->code.size() == 8);
  CHECK(parsed->code[2].module == 1);
  CHECK(parsed->code[5].module == 0);
  CHECK(serialize_ok(*parsed) == bytes);
  auto header = read_engine_header(bytes);
  REQUIRE(header.ok());
  CHECK(header->format_version == 2);
  CHECK(header->min_reader_version == 2);
}

TEST_CASE("select_code picks per module: exact CUBIN, else newest usable PTX", "[engine]") {
  // Each module resolves on its own; a device older than every arch names the
  // archs; a module the engine lacks is an error naming it.
  EngineContents c = modular_engine();
  for (int32_t module : {0, 1}) {
    auto pick = select_code(c, 90, module);
    REQUIRE(pick.ok());
    CHECK(((*pick)->arch == "sm_90" && (*pick)->kind == CodeBlob::Kind::kCubin &&
           (*pick)->module == module));
    pick = select_code(c, 89, module);
    REQUIRE(pick.ok());
    CHECK(((*pick)->arch == "sm_80" && (*pick)->kind == CodeBlob::Kind::kPtx &&
           (*pick)->module == module));
    pick = select_code(c, 120, module);
    REQUIRE(pick.ok());
    CHECK(((*pick)->arch == "sm_90" && (*pick)->kind == CodeBlob::Kind::kPtx));
  }
  auto old = select_code(c, 75, 1);
  REQUIRE_FALSE(old.ok());
  CHECK(old.status().message() ==
        "engine built for sm_80, sm_90; this device is sm_75 and the engine has no PTX it can use");
  auto missing = select_code(c, 90, 2);
  REQUIRE_FALSE(missing.ok());
  CHECK(contains(missing.status().message(), "no code for module 2"));
}

TEST_CASE("format 1 engines (one module per arch) still read", "[engine]") {
  // A file written by a format-1 writer: no module fields, version 1 in the
  // header. The reader accepts it as one module.
  EngineContents c = sample_engine();
  std::string bytes =
      assemble(c.manifest.SerializeAsString(), c.code, c.weights, "graphc 0.1.0", 1);
  auto parsed = parse_engine(bytes);
  INFO(parsed.status().message());
  REQUIRE(parsed.ok());
  CHECK(parsed->manifest.code_modules_size() == 2);
  CHECK(module_count(parsed->manifest) == 1);
  auto header = read_engine_header(bytes);
  REQUIRE(header.ok());
  CHECK(header->format_version == 1);
}

TEST_CASE("module and copy lies are refused by writer and reader", "[engine]") {
  // Every format-2 field is validated: kernel and code-module module indices,
  // gaps, repeats, modules built for different archs, unused modules, and
  // copies that are not plain same-size copies.
  expect_invalid_manifest(
      modular_with([](auto& c) { c.manifest.mutable_kernels(1)->set_module(2); }),
      "kernel 1 'tanh': module 2 is out of range (the engine has 2 code modules)");
  expect_invalid_manifest(
      modular_with([](auto& c) { c.manifest.mutable_kernels(0)->set_module(-1); }),
      "module -1 is out of range");
  expect_invalid_manifest(
      modular_with([](auto& c) { c.manifest.mutable_code_modules(1)->set_module(-3); }),
      "manifest code module 1 'sm_80': module -3 is negative");
  expect_invalid_manifest(
      modular_with([](auto& c) { c.manifest.mutable_code_modules(1)->set_module(0); }),
      "a second entry for module 0 and this arch");
  expect_invalid_manifest(modular_with([](auto& c) {
                            // Module 1 renumbered 2 everywhere: module 1 is missing.
                            c.manifest.mutable_code_modules(1)->set_module(2);
                            c.manifest.mutable_code_modules(3)->set_module(2);
                            c.manifest.mutable_kernels(1)->set_module(2);
                            for (auto& blob : c.code)
                              if (blob.module == 1) blob.module = 2;
                          }),
                          "module 1 has no code (modules are numbered 0..N-1 without gaps)");
  expect_invalid_manifest(modular_with([](auto& c) {
                            // sm_90 of module 1 dropped with its two sections.
                            c.manifest.mutable_code_modules()->RemoveLast();
                            c.code.resize(6);
                          }),
                          "1 of the 2 modules have code for sm_90");
  expect_invalid_manifest(
      modular_with([](auto& c) { c.manifest.mutable_kernels(1)->set_module(0); }),
      "module 1 is not used by any kernel");
  expect_invalid_manifest(
      modular_with([](auto& c) { c.manifest.mutable_kernels(2)->set_module_entry("copy_entry"); }),
      "a copy has no module entry and no library call");
  expect_invalid_manifest(modular_with([](auto& c) { c.manifest.mutable_kernels(2)->add_args(0); }),
                          "a copy has 2 arguments (source, destination), not 3");
  expect_invalid_manifest(modular_with([](auto& c) {
                            auto* t = c.manifest.mutable_tensors(3);
                            t->set_shape(0, 4);
                            t->set_bytes(16);
                          }),
                          "copies 32 bytes into a 16-byte tensor");
  expect_invalid_manifest(modular_with([](auto& c) {
                            for (uint32_t g : {1u, 1u, 1u})
                              c.manifest.mutable_kernels(2)->add_grid(g);
                          }),
                          "a copy has no grid, block, shared memory or module");
  expect_invalid_manifest(
      modular_with([](auto& c) { c.manifest.mutable_kernels(2)->set_module(1); }),
      "a copy has no grid, block, shared memory or module");
  expect_invalid_manifest(modular_with([](auto& c) {
                            Kernel* k = c.manifest.add_kernels();
                            k->set_name("gemm");
                            k->set_module(1);
                            k->mutable_library_call()->set_library("cublasLt");
                            k->mutable_library_call()->set_op("matmul");
                          }),
                          "a library call has no code module, but module is 1");
}

TEST_CASE("the writer refuses code blobs whose module disagrees with the manifest", "[engine]") {
  // CodeBlob::module is what the reader derives from the manifest; a caller
  // that sets it differently has built inconsistent contents.
  EngineContents c = modular_engine();
  c.code[3].module = 0;  // sm_80 CUBIN of module 1
  auto bytes = serialize_engine(c);
  REQUIRE_FALSE(bytes.ok());
  CHECK(contains(bytes.status().message(),
                 "code blob 3 (cubin sm_80) belongs to module 0, but the manifest places it in "
                 "module 1"));
}

TEST_CASE("executable_from_engine loads one image per module for the device", "[engine]") {
  // sm_90: both modules' CUBINs; sm_86: both modules' sm_80 PTX; launches keep
  // their module, the copy has none.
  EngineContents c = modular_engine();
  auto exe = runtime::executable_from_engine(c, 90);
  INFO(exe.status().message());
  REQUIRE(exe.ok());
  REQUIRE(exe->images.size() == 2);
  CHECK(exe->images[0] == c.code[5].bytes);
  CHECK(exe->images[1] == c.code[7].bytes);
  REQUIRE(exe->launches.size() == 3);
  REQUIRE(exe->launches[0].kernel());
  REQUIRE(exe->launches[1].kernel());
  CHECK(exe->launches[0].kernel()->module == 0);
  CHECK(exe->launches[1].kernel()->module == 1);
  CHECK(exe->launches[1].kernel()->entry == "tanh_entry");
  CHECK(exe->launches[2].is_copy());
  CHECK(exe->launches[2].args == std::vector<int32_t>{1, 3});
  exe = runtime::executable_from_engine(c, 86);
  REQUIRE(exe.ok());
  CHECK(exe->images[1] == c.code[2].bytes);  // module 1's sm_80 PTX
  auto old = runtime::executable_from_engine(c, 75);
  REQUIRE_FALSE(old.ok());
  CHECK(contains(old.status().message(), "this device is sm_75 and the engine has no PTX"));
}

TEST_CASE("random manifest mutations of a multi-module engine never crash the reader", "[engine]") {
  // As for the format sample: 1-8 random bytes of the manifest changed, the
  // checksums fixed; the reader fails cleanly or accepts, and the writer
  // accepts whatever the reader accepts (module, copy and section checks included).
  int accepted = mutate_manifest_checked(serialize_ok(modular_engine()), 4321, 3000,
                                         [](const EngineContents& parsed) {
    for (int sm : {75, 80, 90}) (void)runtime::executable_from_engine(parsed, sm);
                                         });
  CHECK(accepted < 3000);
}
