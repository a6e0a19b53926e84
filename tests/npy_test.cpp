// support/npy: round trips of every dtype, the header grammar numpy writes,
// and malformed, truncated and hostile files (clear Status, never a crash).
#include "support/npy.h"

#include <catch2/catch.hpp>
#include <random>

#include "tests/onnx_builder.h"

using namespace graphc;

namespace {

// A .npy v1.0 file with `header` (padded as numpy does) and `data`.
std::string npy_with_header(std::string header, const std::string& data, char major = 1) {
  const size_t prefix = major == 1 ? 10 : 12;
  const size_t unpadded = prefix + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(major);
  out.push_back('\0');
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>((header.size() >> 8) & 0xff));
  if (major != 1) out.append(2, '\0');
  return out + header + data;
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace

TEST_CASE("npy round-trips every dtype and shape", "[npy]") {
  // dtype numbers are ONNX's: f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1.
  std::mt19937 rng(7);
  for (int32_t dtype : {10, 1, 11, 3, 5, 6, 7, 2, 4, 12, 13, 9}) {
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{}, {5}, {2, 3}, {1, 0, 4}, {2, 1, 3, 2}}) {
      INFO("dtype " << dtype << " shape " << npy::shape_string(shape));
      int64_t numel = 1;
      for (int64_t d : shape) numel *= d;
      std::string data(static_cast<size_t>(numel) * npy::dtype_size(dtype), '\0');
      for (char& c : data) c = static_cast<char>(dtype == 9 ? rng() % 2 : rng());
      auto bytes = npy::serialize(dtype, shape, data);
      REQUIRE(bytes.ok());
      CHECK((bytes->size() - data.size()) % 64 == 0);  // numpy's header alignment
      auto back = npy::parse(*bytes);
      REQUIRE(back.ok());
      CHECK(back->dtype == dtype);
      CHECK(back->shape == shape);
      CHECK(back->data == data);
    }
  }
  CHECK(npy::serialize(16, {2}, std::string(4, '\0')).status().code() == ErrorCode::kUnsupported);
  CHECK(npy::serialize(1, {2}, std::string(4, '\0')).status().code() ==
        ErrorCode::kInvalidArgument);
}

TEST_CASE("npy reads the header variants numpy writes", "[npy]") {
  // Key order, double quotes, versions 2.0/3.0, '=' and '|' byte orders,
  // a trailing comma, Python 2's 3L.
  const std::string f4(24, '\0');
  for (const std::string& h :
       {std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"),
        std::string("{'shape': (2,3), 'fortran_order': False, 'descr': '<f4'}"),
        std::string("{\"descr\": \"=f4\", \"fortran_order\": False, \"shape\": (2, 3)}"),
        std::string("{'descr':'<f4','fortran_order':False,'shape':(2L, 3L),}")}) {
    INFO(h);
    auto a = npy::parse(npy_with_header(h, f4));
    REQUIRE(a.ok());
    CHECK(a->shape == std::vector<int64_t>{2, 3});
  }
  auto v2 = npy::parse(
      npy_with_header("{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }", "abc", 2));
  REQUIRE(v2.ok());
  CHECK(v2->dtype == 2);
  auto scalar = npy::parse(npy_with_header(
      "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", std::string(8, '\x01')));
  REQUIRE(scalar.ok());
  CHECK(scalar->shape.empty());
}

TEST_CASE("npy refuses malformed, truncated and hostile files clearly", "[npy]") {
  auto error_of = [](const std::string& bytes) {
    auto r = npy::parse(bytes);
    REQUIRE_FALSE(r.ok());
    return r.status();
  };
  const std::string ok_header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  const std::string good = npy_with_header(ok_header, std::string(24, '\0'));
  CHECK(npy::parse(good).ok());
  // Every truncation of a valid file is an error, never a crash.
  for (size_t n = 0; n < good.size(); ++n) CHECK_FALSE(npy::parse(good.substr(0, n)).ok());
  CHECK(error_of("PK\x03\x04 not npy").message().find("not a .npy") != std::string::npos);
  CHECK(error_of(good + "x").message().find("after the") != std::string::npos);
  CHECK(error_of(good.substr(0, good.size() - 1)).message().find("truncated") != std::string::npos);
  auto fortran =
      error_of(npy_with_header("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", good));
  CHECK(fortran.message().find("Fortran") != std::string::npos);
  auto big = error_of(npy_with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }",
                                      std::string(8, '\0')));
  CHECK(big.message().find("big-endian") != std::string::npos);
  CHECK(npy::parse(npy_with_header("{'descr': '>u1', 'fortran_order': False, 'shape': (2,), }",
                                   "ab"))
            .ok());  // byte order is meaningless for one byte
  for (const char* descr : {"<c8", "<U5", "|O", "<f16", "<f3", "V8", "<M8[s]", "", "<"}) {
    INFO(descr);
    auto st = error_of(npy_with_header(
        "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (2,), }",
        "12345678"));
    CHECK(st.code() == ErrorCode::kUnsupported);
  }
  // Hostile headers: huge dims, overflowing products, negative dims, long
  // ranks, unknown/repeated/missing keys, junk, a header longer than the file.
  for (const std::string& h :
       {std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }"),
        std::string(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"),
        std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }"),
        std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }"),
        "{'descr': '<f4', 'fortran_order': False, 'shape': (" + repeat("1, ", 40) + "), }",
        std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}"),
        std::string("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}"),
        std::string("{'descr': '<f4', 'shape': (2,)}"),
        std::string("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}"),
        std::string("{'descr': '<f4', 'fortran_order': False, 'shape': [2]}"),
        std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} extra"),
        std::string("{'descr: '<f4', 'fortran_order': False, 'shape': (2,)}"),
        std::string("{'descr': '<f4\\x', 'fortran_order': False, 'shape': (2,)}"),
        std::string("")}) {
    INFO(h);
    CHECK_FALSE(npy::parse(npy_with_header(h, std::string(8, '\0'))).ok());
  }
  std::string long_header = good;
  long_header[8] = '\xff';
  long_header[9] = '\xff';  // claims 65535 header bytes
  CHECK(error_of(long_header).message().find("truncated") != std::string::npos);
  std::string v9 = good;
  v9[6] = 9;
  CHECK(error_of(v9).message().find("version 9") != std::string::npos);
  npy::Limits tight;
  tight.max_data_bytes = 16;
  CHECK(npy::parse(good, tight).status().code() == ErrorCode::kOutOfRange);
  auto bool_bad = error_of(npy_with_header(
      "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", std::string("\x01\x02", 2)));
  CHECK(bool_bad.message().find("bool") != std::string::npos);
  // Random bytes after a valid magic never crash.
  std::mt19937 rng(3);
  for (int i = 0; i < 2000; ++i) {
    std::string s = good;
    for (int k = 0; k < 4; ++k) s[rng() % s.size()] = static_cast<char>(rng());
    (void)npy::parse(s);
  }
}

TEST_CASE("npy files: missing files and the file name in errors", "[npy]") {
  testing::TempDir dir;
  auto missing = npy::read_file(dir.file("nope.npy"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == ErrorCode::kNotFound);
  CHECK(missing.status().message().find("nope.npy") != std::string::npos);
  auto bytes = npy::serialize(7, {3}, std::string(24, '\0'));
  REQUIRE(bytes.ok());
  auto read = npy::read_file(dir.write("x.npy", *bytes));
  REQUIRE(read.ok());
  CHECK(read->dtype == 7);
  auto bad = npy::read_file(dir.write("bad.npy", bytes->substr(0, 20)));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("bad.npy") != std::string::npos);
}
