// Engine::refit_weights: new weights into a loaded engine's device buffer, in
// place, from an engine file that differs from the loaded one in its weights
// alone (engine_format/refit_record.h decides "alone", as graphc refit does).
#include "engine_format/engine_file.h"
#include "engine_format/refit_record.h"
#include "runtime/engine_impl.h"
#include "runtime/weights_upload.h"

namespace graphc::runtime {

Status Engine::refit_weights(const engine::EngineFile& file, const RefitOptions& options) {
  Impl& e = *impl_;
  std::lock_guard<std::mutex> one_at_a_time(e.refit_mutex);
  const std::string what = fmt::format("engine '{}'", file.path());
  if (!e.exe.refit_manifest)
    return invalid_engine(
        "the loaded engine has no refit record (built before refit support, engine format 5, or "
        "not by graphc build): it cannot be refit; rebuild it");
  const engine::Manifest& m = file.contents().manifest;
  RETURN_IF_ERROR(engine::check_refittable(m, what));
  const std::string diff =
      engine::manifest_difference(*e.exe.refit_manifest, m, "the loaded engine", what);
  if (!diff.empty())
    return invalid_engine(
        "{} is not the loaded engine with other weights (refit it from the same engine with "
        "graphc refit, or build it with the same options): {}",
        what, diff);
  RETURN_IF_ERROR(device_usable());
  const DriverApi& a = *e.api;
  const uint64_t bytes = file.weights_bytes();  // = the loaded engine's: the manifests agree
  if (options.verify_first)
    RETURN_IF_ERROR(file.for_each_weights_chunk(
        options.upload_chunk_bytes,
        [](uint64_t, std::string_view) { return Status::ok_status(); }));
  GRAPHC_CU(a, cuCtxSetCurrent(e.context), "cuCtxSetCurrent");
  // From the first byte overwritten until the last is checked, no context may run.
  e.weights_incomplete.store(true, std::memory_order_release);
  uint32_t crc = 0;
  Status st = upload_streamed(
      a, e.weights, bytes,
      [&](uint64_t offset, char* dst, size_t n) -> Status {
        RETURN_IF_ERROR(file.read_weights(offset, dst, n));
        crc = engine::crc32_update(crc, std::string_view(dst, n));
        return Status::ok_status();
      },
      options.upload_chunk_bytes);
  if (st.ok()) st = file.check_weights_crc(crc);
  if (!st.ok())
    return st.with_context(
        "refitting the engine's weights (they are now incomplete: contexts refuse to run until a "
        "refit succeeds)");
  e.weights_incomplete.store(false, std::memory_order_release);
  return Status::ok_status();
}

}  // namespace graphc::runtime
