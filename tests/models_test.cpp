// The shipped models (models/*.onnx, made by scripts/make_models.py): their
// structure after import, and ([needs-ops]) the reference executor's outputs
// against hand-written double-precision implementations of each model.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <map>

#include "driver/load_model.h"
#include "importer/importer.h"
#include "reference/executor.h"
#include "tests/cli_util.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::testing;
using ir::DType;

namespace {

std::string model_path(const std::string& name) { return source_path("models/" + name + ".onnx"); }

std::vector<double> weights(const ir::Graph& g, const std::string& name) {
  auto id = g.find_value(name);
  REQUIRE(id.has_value());
  REQUIRE(g.value(*id).constant.has_value());
  return g.value(*id).constant->to_f64_vector();
}

std::map<std::string, int64_t> op_counts(const ir::Graph& g) {
  std::map<std::string, int64_t> c;
  for (const auto& n : g.nodes) ++c[std::string(ir::op_name(n.op))];
  return c;
}

// Runs `g` on input x and returns output y as doubles.
std::vector<double> run(const ir::Graph& g, const ir::Tensor& x) {
  auto out = reference::execute(g, {{"x", x}});
  INFO(out.status().message());
  REQUIRE(out.ok());
  return out->at("y").to_f64_vector();
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(got[i] - want[i]) / (1.0 + std::fabs(want[i])));
  INFO("worst relative error " << worst);
  CHECK(worst < tol);
}

// out[r][c] = sum_k a[r][k] * w[k][c] + bias[c]
std::vector<double> linear(const std::vector<double>& a, int64_t rows, int64_t in,
                           const std::vector<double>& w, const std::vector<double>& bias,
                           int64_t out) {
  std::vector<double> r(static_cast<size_t>(rows * out));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < out; ++j) {
      double s = bias[static_cast<size_t>(j)];
      for (int64_t k = 0; k < in; ++k)
        s += a[static_cast<size_t>(i * in + k)] * w[static_cast<size_t>(k * out + j)];
      r[static_cast<size_t>(i * out + j)] = s;
    }
  return r;
}

std::vector<double> layer_norm(const std::vector<double>& a, int64_t rows, int64_t d,
                               const std::vector<double>& g, const std::vector<double>& b) {
  std::vector<double> r(a.size());
  for (int64_t i = 0; i < rows; ++i) {
    double mean = 0, var = 0;
    for (int64_t k = 0; k < d; ++k) mean += a[static_cast<size_t>(i * d + k)];
    mean /= static_cast<double>(d);
    for (int64_t k = 0; k < d; ++k) var += std::pow(a[static_cast<size_t>(i * d + k)] - mean, 2);
    var /= static_cast<double>(d);
    for (int64_t k = 0; k < d; ++k)
      r[static_cast<size_t>(i * d + k)] = (a[static_cast<size_t>(i * d + k)] - mean) /
                                              std::sqrt(var + 1e-5) * g[static_cast<size_t>(k)] +
                                          b[static_cast<size_t>(k)];
  }
  return r;
}

// The models written out by hand in double precision, reading the weights
// from the imported graph (independent of graphc's kernels).
std::vector<double> hand_mlp(const ir::Graph& g, const std::vector<double>& x) {
  auto relu = [](std::vector<double> v) {
    for (auto& e : v) e = std::max(e, 0.0);
    return v;
  };
  auto h = relu(linear(x, 4, 64, weights(g, "fc0.weight"), weights(g, "fc0.bias"), 128));
  h = relu(linear(h, 4, 128, weights(g, "fc1.weight"), weights(g, "fc1.bias"), 64));
  return linear(h, 4, 64, weights(g, "fc2.weight"), weights(g, "fc2.bias"), 10);
}

std::vector<double> hand_conv_block(const ir::Graph& g, const std::vector<double>& xs) {
  const int64_t C = 16, H = 32, W = 32;
  auto at = [&](const std::vector<double>& v, int64_t c, int64_t i, int64_t j) {
    return (i < 0 || j < 0 || i >= H || j >= W) ? 0.0 : v[static_cast<size_t>((c * H + i) * W + j)];
  };
  auto conv = [&](const std::vector<double>& in, const std::vector<double>& w,
                  const std::vector<double>* bias) {
    std::vector<double> out(static_cast<size_t>(C * H * W));
    for (int64_t o = 0; o < C; ++o)
      for (int64_t i = 0; i < H; ++i)
        for (int64_t j = 0; j < W; ++j) {
          double s = bias ? (*bias)[static_cast<size_t>(o)] : 0.0;
          for (int64_t c = 0; c < C; ++c)
            for (int64_t ki = 0; ki < 3; ++ki)
              for (int64_t kj = 0; kj < 3; ++kj)
                s += at(in, c, i + ki - 1, j + kj - 1) *
                     w[static_cast<size_t>(((o * C + c) * 3 + ki) * 3 + kj)];
          out[static_cast<size_t>((o * H + i) * W + j)] = s;
        }
    return out;
  };
  auto bn = [&](std::vector<double> v, const std::string& p) {
    auto scale = weights(g, p + ".scale"), bias = weights(g, p + ".bias");
    auto mean = weights(g, p + ".mean"), var = weights(g, p + ".var");
    for (int64_t c = 0; c < C; ++c)
      for (int64_t k = 0; k < H * W; ++k) {
        auto& e = v[static_cast<size_t>(c * H * W + k)];
        auto cu = static_cast<size_t>(c);
        e = (e - mean[cu]) / std::sqrt(var[cu] + 1e-5) * scale[cu] + bias[cu];
      }
    return v;
  };
  auto h = bn(conv(xs, weights(g, "conv1.weight"), nullptr), "bn1");
  for (auto& e : h) e = std::max(e, 0.0);
  auto b2 = weights(g, "conv2.bias");
  auto y = bn(conv(h, weights(g, "conv2.weight"), &b2), "bn2");
  for (size_t i = 0; i < y.size(); ++i) y[i] = std::max(y[i] + xs[i], 0.0);
  return y;
}

std::vector<double> hand_transformer(const ir::Graph& g, const std::vector<double>& xs, int64_t B) {
  const int64_t S = 16, D = 64, NH = 4, HD = 16, F = 128, R = B * S;
  auto w = [&](const std::string& n) { return weights(g, n); };
  auto ln1 = layer_norm(xs, R, D, w("ln1.weight"), w("ln1.bias"));
  auto q = linear(ln1, R, D, w("attn.q.weight"), w("attn.q.bias"), D);
  auto k = linear(ln1, R, D, w("attn.k.weight"), w("attn.k.bias"), D);
  auto v = linear(ln1, R, D, w("attn.v.weight"), w("attn.v.bias"), D);
  std::vector<double> ctx(static_cast<size_t>(R * D));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < NH; ++h)
      for (int64_t i = 0; i < S; ++i) {
        std::vector<double> p(static_cast<size_t>(S));
        double mx = -1e300, sum = 0;
        for (int64_t j = 0; j < S; ++j) {
          double s = 0;
          for (int64_t d = 0; d < HD; ++d)
            s += q[static_cast<size_t>((b * S + i) * D + h * HD + d)] *
                 k[static_cast<size_t>((b * S + j) * D + h * HD + d)];
          p[static_cast<size_t>(j)] = s / std::sqrt(static_cast<double>(HD));
          mx = std::max(mx, p[static_cast<size_t>(j)]);
        }
        for (auto& e : p) sum += (e = std::exp(e - mx));
        for (int64_t d = 0; d < HD; ++d) {
          double s = 0;
          for (int64_t j = 0; j < S; ++j)
            s += p[static_cast<size_t>(j)] / sum *
                 v[static_cast<size_t>((b * S + j) * D + h * HD + d)];
          ctx[static_cast<size_t>((b * S + i) * D + h * HD + d)] = s;
        }
      }
  auto attn = linear(ctx, R, D, w("attn.out.weight"), w("attn.out.bias"), D);
  std::vector<double> h1(xs.size());
  for (size_t i = 0; i < h1.size(); ++i) h1[i] = xs[i] + attn[i];
  auto u = linear(layer_norm(h1, R, D, w("ln2.weight"), w("ln2.bias")), R, D, w("mlp.fc1.weight"),
                  w("mlp.fc1.bias"), F);
  for (auto& e : u) e = e * 0.5 * (1.0 + std::erf(e / std::sqrt(2.0)));
  auto m = linear(u, R, F, w("mlp.fc2.weight"), w("mlp.fc2.bias"), D);
  for (size_t i = 0; i < m.size(); ++i) m[i] += h1[i];
  return m;
}

}  // namespace

TEST_CASE("shipped models import with their documented structure", "[importer]") {
  // Each model is < 1 MB, imports, and has the inputs, dims, ops and random
  // (non-zero) weights that models/README.md describes.
  for (auto name : {"mlp", "conv_block", "transformer_block"})
    CHECK(std::filesystem::file_size(model_path(name)) < (1u << 20));
  auto mlp = importer::import_model_file(model_path("mlp"));
  REQUIRE(mlp.ok());
  CHECK(mlp->opset == 13);
  CHECK(mlp->value(mlp->inputs[0]).shape == ir::Shape{4, 64});
  CHECK(op_counts(*mlp) == std::map<std::string, int64_t>{{"Add", 3}, {"MatMul", 3}, {"Relu", 2}});
  auto conv = importer::import_model_file(model_path("conv_block"));
  REQUIRE(conv.ok());
  CHECK(conv->value(conv->inputs[0]).shape == ir::Shape{1, 16, 32, 32});
  CHECK(op_counts(*conv) == std::map<std::string, int64_t>{
                                {"Add", 1}, {"BatchNormalization", 2}, {"Conv", 2}, {"Relu", 2}});
  CHECK(conv->nodes[0].inputs.size() == 2);  // conv1 without bias
  CHECK(conv->nodes[3].inputs.size() == 3);  // conv2 with bias
  auto tb = importer::import_model_file(model_path("transformer_block"));
  REQUIRE(tb.ok());
  CHECK(tb->opset == 17);
  const auto& x = tb->value(tb->inputs[0]);
  CHECK(x.dim_names == std::vector<std::string>{"batch", "", ""});
  CHECK(x.shape == ir::Shape{-1, 16, 64});
  auto counts = op_counts(*tb);
  CHECK(counts["Shape"] == 1);
  CHECK(counts["Gather"] == 2);
  CHECK(counts["Unsqueeze"] == 2);
  CHECK(counts["Concat"] == 2);
  CHECK(counts["Erf"] == 1);
  CHECK(counts["LayerNormalization"] == 2);
  for (const auto& g : {&*mlp, &*conv, &*tb})
    for (const auto& v : g->values)
      if (v.is_initializer && v.constant && v.constant->numel() > 16) {
        int64_t zeros = 0;
        for (int64_t i = 0; i < v.constant->numel(); ++i) zeros += v.constant->get_f64(i) == 0;
        CHECK(zeros == 0);
      }
}

TEST_CASE("mlp.onnx on the reference executor matches a hand-written MLP",
          "[importer][needs-ops]") {
  // y = relu(relu(x W0 + b0) W1 + b1) W2 + b2 in double, for a random x.
  auto g = driver::load_model(model_path("mlp"));
  INFO(g.status().message());
  REQUIRE(g.ok());
  ir::Tensor x = random_tensor(DType::kFloat32, {4, 64}, test_rng());
  check_close(run(*g, x), hand_mlp(*g, x.to_f64_vector()), 1e-4);
}

TEST_CASE("conv_block.onnx on the reference executor matches a hand-written block",
          "[importer][needs-ops]") {
  // relu(bn2(conv2(relu(bn1(conv1(x))))) + x), 3x3 convs with padding 1.
  auto g = driver::load_model(model_path("conv_block"));
  INFO(g.status().message());
  REQUIRE(g.ok());
  ir::Tensor x = random_tensor(DType::kFloat32, {1, 16, 32, 32}, test_rng());
  check_close(run(*g, x), hand_conv_block(*g, x.to_f64_vector()), 1e-4);
}

TEST_CASE("transformer_block.onnx on the reference executor matches a hand-written block",
          "[importer][needs-ops]") {
  // batch bound to 2: pre-LN attention with 4 heads of 16 and an Erf-GELU MLP,
  // written out directly in double.
  driver::LoadOptions opts;
  opts.input_shapes = {{"x", {2, 16, 64}}};
  auto g = driver::load_model(model_path("transformer_block"), opts);
  INFO(g.status().message());
  REQUIRE(g.ok());
  ir::Tensor x = random_tensor(DType::kFloat32, {2, 16, 64}, test_rng());
  check_close(run(*g, x), hand_transformer(*g, x.to_f64_vector(), 2), 2e-4);
}
