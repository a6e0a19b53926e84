// The two input-tensor readers: NumPy .npy bytes (support/npy.h) and a
// serialized onnx.TensorProto (the backend tests' input_N.pb, importer/).
// The first byte picks the reader so one corpus covers both.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "importer/tensor_proto.h"
#include "onnx/onnx.pb.h"
#include "support/npy.h"

using namespace graphc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) {
    npy::Limits limits;
    limits.max_data_bytes = 64ull << 20;
    auto array = npy::parse(bytes, limits);
    if (array.ok()) {
      // Round trip: what the reader accepts, the writer writes and reads back the same.
      auto again = npy::serialize(array->dtype, array->shape, array->data);
      if (!again.ok()) __builtin_trap();
      auto back = npy::parse(*again, limits);
      if (!back.ok() || back->dtype != array->dtype || back->shape != array->shape ||
          back->data != array->data)
        __builtin_trap();
    }
    return 0;
  }
  onnx::TensorProto proto;
  // Same limits as the importer's model parse (nesting is shallow in a TensorProto).
  if (bytes.size() > (64u << 20)) return 0;
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return 0;
  importer::TensorLoadContext ctx;
  ctx.model_dir = "";  // external data refused
  ctx.max_tensor_bytes = int64_t{64} << 20;
  (void)importer::tensor_from_proto(proto, ctx);
  return 0;
}
