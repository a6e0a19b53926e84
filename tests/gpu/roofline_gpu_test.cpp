// The roofline on the GPU: an engine's recorded model against measured
// launch times. A large fp16 GEMM through cuBLASLt and a large elementwise
// kernel must land at a plausible share of their datasheet roofline: never
// clearly faster than it (that would mean the model or the peaks table is
// wrong), and not hopelessly slower (the model would then be useless).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cmd/run_profile.h"
#include "runtime/cuda_driver.h"
#include "target/roofline.h"
#include "tests/gpu/built_engine.h"
#include "tests/test_util.h"

using namespace graphc;

namespace {

// y = MatMul(x, w) (4096x768 · 768x3072, fp16, cuBLASLt) and z = Tanh(y) + y
// (12.6 M fp16 elements: memory-bound).
ir::Graph gemm_and_elementwise_graph() {
  auto& rng = testing::test_rng();
  testing::GraphBuilder b;
  auto x = b.input("x", ir::DType::kFloat16, {4096, 768});
  auto w = b.constant("w", testing::random_tensor(ir::DType::kFloat16, {768, 3072}, rng, -0.05, 0.05));
  auto y = b.node(ir::OpKind::MatMul, {x, w}, {}, 1, "/ffn/MatMul");
  auto t = b.node(ir::OpKind::Tanh, {y}, {}, 1, "/act/Tanh");
  b.output(b.node(ir::OpKind::Mul, {t, y}, {}, 1, "/act/Mul"));
  return b.build();
}

}  // namespace

TEST_CASE("profile against the roofline: a cuBLASLt GEMM and an elementwise kernel",
          "[gpu][profile][roofline]") {
  auto b = testing::build_engine_for_gpu(gemm_and_elementwise_graph(), target::GemmMode::kCublasLt);
  auto ctx = b.engine->create_context();
  REQUIRE(ctx.ok());
  runtime::ProfileOptions po;
  po.iterations = 50;
  auto p = (*ctx)->profile(po);
  INFO((p.ok() ? "" : p.status().message()));
  REQUIRE(p.ok());
  const auto gpu = target::gpu_from_device_name(b.engine->device_name());
  if (!gpu) {
    WARN("skipped: " << b.engine->device_name() << " is not in the roofline table");
    return;
  }
  const cli::ProfileRooflineGpu roof_gpu{*gpu, "from the device name"};
  std::printf("%s", cli::profile_table(*p, std::nullopt, roof_gpu).c_str());
  const Json j = cli::profile_json(*p, std::nullopt, roof_gpu);
  bool saw_gemm = false, saw_elementwise = false;
  for (const Json& l : j["profile"]) {
    INFO(l.dump());
    if (l["roofline_fraction"].is_null()) continue;
    const double fraction = l["roofline_fraction"].get<double>();
    CHECK(fraction <= 1.10);  // measured beyond the hardware's limit: the model is wrong
    if (l["kind"] == "cublasLt matmul") {
      saw_gemm = true;
      CHECK(l["flops"] == 2LL * 4096 * 3072 * 768);
      CHECK(l["math"] == "fp16-tc");
      CHECK(l["roofline_bound"] == "compute");
      CHECK(fraction >= 0.25);  // cuBLASLt reaches well over half of the fp16 peak here
    } else if (l["hbm_bytes"].get<uint64_t>() > 40'000'000) {
      saw_elementwise = true;
      CHECK(l["roofline_bound"] == "memory");
      CHECK(fraction >= 0.25);  // a streaming kernel runs near HBM bandwidth
    }
  }
  CHECK(saw_gemm);
  CHECK(saw_elementwise);
  const Json& summary = j["profile_summary"]["roofline"];
  CHECK(summary["modelled_launches"].get<int>() >= 2);
  CHECK(summary["lost_us"].get<double>() >= -0.1 * summary["measured_us"].get<double>());
}
