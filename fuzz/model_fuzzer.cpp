// ONNX model bytes -> importer -> verify -> shape inference (with constant
// propagation) -> the optimizer pipeline: the path `graphc build` takes before
// code generation. Any crash, sanitizer report, leak or allocation past
// libFuzzer's -rss_limit_mb / -malloc_limit_mb is a finding; a Status error is
// the expected answer to most inputs.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "driver/load_model.h"
#include "importer/importer.h"
#include "ir/verifier.h"
#include "optimizer/pass.h"
#include "target/cuda/cuda_target.h"

using namespace graphc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  importer::ImportOptions options;
  // Small enough that a fuzzer-made huge initializer is refused by the size
  // check rather than allocated (the library default is 16 GiB).
  options.max_tensor_bytes = int64_t{64} << 20;
  // No model folder: external data must be refused, never read.
  auto graph = importer::import_model_bytes(
      std::string_view(reinterpret_cast<const char*>(data), size), "", "fuzz.onnx", options);
  if (!graph.ok()) return 0;
  if (!ir::verify(*graph).ok()) return 0;
  // Symbolic input dims are left unbound: bind_input_shapes refuses them, as
  // the CLI does without --shape.
  if (!driver::bind_input_shapes(*graph, {}).ok()) return 0;
  if (!driver::infer_graph_shapes(*graph).ok()) return 0;
  optimizer::PassContext ctx;
  ctx.verify_after_all = true;
  // As graphc build runs it: half the inputs (by size parity) in fp16, where
  // the precision and channels-last passes have work to do.
  ctx.target = std::make_shared<target::CudaTarget>();
  if (size % 2 == 1) ctx.precision = optimizer::Precision::kFp16;
  (void)optimizer::run_passes(*graph, ctx);
  return 0;
}
