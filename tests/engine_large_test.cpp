// Engines past 4 GiB and the streaming reader/writer: a weights section over
// 2^32 bytes written without holding it in memory (a sparse file), opened
// without reading it, its tensors at offsets above 4 GiB validated, its
// checksum verified in chunks; the streamed writer gives serialize_engine's
// bytes; a file-backed reader refuses what the in-memory one refuses.
#include <fcntl.h>
#include <sys/stat.h>

#include <fstream>

#include "tests/engine_test_util.h"

using namespace graphc;
using namespace graphc::engine;
using namespace graphc::engine::testing;

namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Copies a weight tensor to an output: an engine of copies needs no code.
void add_weight_copy(Manifest& m, const std::string& name, uint64_t offset, uint64_t bytes) {
  const int w = m.tensors_size();
  add_tensor(m, name, 2, {static_cast<int64_t>(bytes)}, Tensor::WEIGHTS, offset, bytes);
  add_tensor(m, name + "_out", 2, {static_cast<int64_t>(bytes)}, Tensor::OUTPUT, 0, bytes);
  Binding* b = m.add_outputs();
  b->set_name(name + "_out");
  b->set_tensor(w + 1);
  Kernel* k = m.add_kernels();
  k->set_name("copy_" + name);
  k->set_copy(true);
  k->add_args(w);
  k->add_args(w + 1);
}

// A deterministic, non-zero pattern for weights bytes [at, at + n).
char pattern_byte(uint64_t at) { return static_cast<char>((at * 2654435761u >> 13) | 1); }

}  // namespace

TEST_CASE("the streamed writer gives serialize_engine's bytes and EngineFile reads them back",
          "[engine][large]") {
  TempDir dir;
  EngineContents c = sample_engine((20 << 20) + 56);  // two writer chunks
  for (size_t i = 56; i < c.weights.size(); ++i) c.weights[i] = pattern_byte(i);
  const std::string path = (dir.path / "a.engine").string();
  REQUIRE(write_engine_file(path, c).ok());
  CHECK(file_bytes(path) == serialize_ok(c));

  auto file = EngineFile::open(path);
  REQUIRE(file.ok());
  CHECK((*file)->weights_bytes() == c.weights.size());
  CHECK((*file)->weights_offset() % kWeightsAlign == 0);
  CHECK((*file)->contents().weights.empty());
  CHECK((*file)->contents().code.size() == c.code.size());
  std::string streamed;
  REQUIRE((*file)->for_each_weights_chunk(1 << 20, [&](uint64_t at, std::string_view chunk) {
    CHECK(at == streamed.size());
    streamed.append(chunk);
    return Status::ok_status();
  }).ok());
  CHECK(streamed == c.weights);
  std::string tail(100, '\0');
  REQUIRE((*file)->read_weights(c.weights.size() - 100, tail.data(), 100).ok());
  CHECK(tail == c.weights.substr(c.weights.size() - 100));
  Status past = (*file)->read_weights(c.weights.size() - 10, tail.data(), 100);
  REQUIRE_FALSE(past.ok());
  CHECK(contains(past.message(), "outside the"));
  CHECK(contains(past.message(), path));
}

TEST_CASE("EngineFile refuses a corrupted weights section when its chunks are checked",
          "[engine][large]") {
  TempDir dir;
  EngineContents c = sample_engine(2 << 20);
  const std::string path = (dir.path / "a.engine").string();
  REQUIRE(write_engine_file(path, c).ok());
  std::string bytes = file_bytes(path);
  bytes[bytes.size() - 12345] ^= 0x10;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  auto file = EngineFile::open(path);  // the manifest and code are intact
  REQUIRE(file.ok());
  Status st = (*file)->for_each_weights_chunk(
      1 << 16, [](uint64_t, std::string_view) { return Status::ok_status(); });
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.message(), "(weights) is corrupted: checksum mismatch"));
  auto whole = read_engine_file(path);
  REQUIRE_FALSE(whole.ok());
  CHECK(contains(whole.status().message(), "checksum mismatch"));
}

TEST_CASE("EngineFile refuses every truncation of an engine like parse_engine", "[engine][large]") {
  // The file-backed reader reads only up to the weights; a table whose
  // sections run past the file or into the weights is refused, never read.
  TempDir dir;
  const std::string full = serialize_ok(sample_engine(600));
  const std::string path = (dir.path / "t.engine").string();
  for (size_t n = 0; n < full.size(); n += 7) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << full.substr(0, n);
    auto file = EngineFile::open(path);
    INFO("truncated to " << n);
    bool refused = !file.ok();
    if (file.ok())  // cut inside the weights: the checksum refuses it
      refused = !(*file)->for_each_weights_chunk(1 << 10, [](uint64_t, std::string_view) {
                           return Status::ok_status();
                         }).ok();
    CHECK(refused);
  }
  // A code section claimed to end inside the weights (checksums resealed).
  std::string lying = patch_u64(full, 1, kEntryLength, get_u64(full, entry(1) + kEntryLength) + 64);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << lying;
  CHECK_FALSE(EngineFile::open(path).ok());
}

TEST_CASE("an engine with a weights section past 4 GiB is written sparse, validated and read",
          "[engine][large]") {
  // 4 GiB + 512 bytes of weights: a tensor at offset 0 and one above 2^32,
  // the rest zeros that the writer leaves as holes, so the file takes a few
  // blocks on disk and the test never holds the weights in memory.
  constexpr uint64_t kHigh = (uint64_t{1} << 32) + 256;
  constexpr uint64_t kWeights = kHigh + 256;
  TempDir dir;
  const auto space = fs::space(dir.path);
  if (space.available < (uint64_t{1} << 30)) {
    WARN("skipped: " << dir.path << " has " << (space.available >> 20)
                     << " MiB free; the sparse 4 GiB engine needs about 1 GiB of headroom");
    return;
  }
  EngineContents c;
  Manifest& m = c.manifest;
  m.set_producer("graphc 0.1.0");
  m.set_graph_name("large");
  m.set_precision("fp32");
  m.set_weights_bytes(kWeights);
  add_weight_copy(m, "low", 0, 256);
  add_weight_copy(m, "high", kHigh, 256);
  WeightsSource source{kWeights, [&](uint64_t at, char* dst, size_t n) {
                         for (size_t i = 0; i < n; ++i) {
                           const uint64_t p = at + i;
                           dst[i] = p < 256 || p >= kHigh ? pattern_byte(p) : '\0';
                         }
                         return Status::ok_status();
                       }};
  const std::string path = (dir.path / "large.engine").string();
  Status written = write_engine_file(path, c, source);
  INFO(written.message());
  REQUIRE(written.ok());
  struct stat st;
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK(static_cast<uint64_t>(st.st_size) > kWeights);
  INFO("blocks on disk: " << st.st_blocks);
  if (static_cast<uint64_t>(st.st_blocks) * 512 > (uint64_t{1} << 30))
    WARN("the file system did not keep the engine sparse");

  auto file = EngineFile::open(path);
  INFO((file.ok() ? "" : file.status().message()));
  REQUIRE(file.ok());
  CHECK((*file)->weights_bytes() == kWeights);
  const Manifest& read = (*file)->contents().manifest;
  CHECK(read.weights_bytes() == kWeights);
  CHECK(read.tensors(2).offset() == kHigh);  // above 2^32, kept exact
  std::string high(256, '\0');
  REQUIRE((*file)->read_weights(kHigh, high.data(), high.size()).ok());
  for (size_t i = 0; i < high.size(); ++i) REQUIRE(high[i] == pattern_byte(kHigh + i));
  uint64_t seen = 0;
  Status verified = (*file)->for_each_weights_chunk(
      kWeightsChunk, [&](uint64_t at, std::string_view chunk) {
        CHECK(at == seen);
        seen += chunk.size();
        return Status::ok_status();
      });
  INFO(verified.message());
  CHECK(verified.ok());
  CHECK(seen == kWeights);

  // Deterministic: a second write gives the same header, table (with the
  // weights' CRC) and manifest.
  const std::string again = (dir.path / "again.engine").string();
  REQUIRE(write_engine_file(again, c, source).ok());
  std::string a(static_cast<size_t>((*file)->weights_offset()), '\0'), b = a;
  std::ifstream(path, std::ios::binary).read(a.data(), static_cast<std::streamsize>(a.size()));
  std::ifstream(again, std::ios::binary).read(b.data(), static_cast<std::streamsize>(b.size()));
  CHECK(a == b);
  fs::remove(again);

  // A flipped byte above 4 GiB is caught by the checksum.
  {
    int fd = ::open(path.c_str(), O_WRONLY);
    REQUIRE(fd >= 0);
    const char flipped = static_cast<char>(pattern_byte(kHigh + 7) ^ 0x40);
    REQUIRE(::pwrite(fd, &flipped, 1, static_cast<off_t>((*file)->weights_offset() + kHigh + 7)) ==
            1);
    ::close(fd);
  }
  Status corrupted = (*file)->for_each_weights_chunk(
      kWeightsChunk, [](uint64_t, std::string_view) { return Status::ok_status(); });
  REQUIRE_FALSE(corrupted.ok());
  CHECK(contains(corrupted.message(), "checksum mismatch"));

  // The validator takes the section's 64-bit length: a tensor one byte past it is refused.
  EngineContents bad = c;
  bad.manifest.mutable_tensors(2)->set_offset(kWeights - 255);
  Status refused = write_engine_file((dir.path / "bad.engine").string(), bad, source);
  REQUIRE_FALSE(refused.ok());
  CHECK(contains(refused.message(), "refusing to write an invalid engine"));
}
