// Normalizations: BatchNormalization (inference), LayerNormalization,
// InstanceNormalization, LRN, MeanVarianceNormalization, checked against
// hand-written loops on fresh random inputs, plus importer conversions and
// error paths.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "importer/importer.h"
#include "ir/shape_inference.h"
#include "onnx/onnx.pb.h"
#include "reference/executor.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::attrs;
using graphc::testing::GraphBuilder;
using graphc::testing::random_tensor;
using graphc::testing::test_rng;

namespace {

Attribute I(int64_t v) { return Attribute::of_int(v); }
Attribute F(double v) { return Attribute::of_float(v); }

std::vector<Tensor> run_graph(const Graph& g, const std::map<std::string, Tensor>& feeds) {
  auto r = reference::execute(g, feeds);
  if (!r.ok()) FAIL("execute failed: " << r.status().message());
  std::vector<Tensor> out;
  for (ValueId id : g.outputs) out.push_back(r->at(g.value(id).name));
  return out;
}

Status infer(GraphBuilder& b) {
  ShapeInferenceOptions opts;
  opts.evaluator = reference::constant_evaluator();
  return infer_shapes(b.graph(), opts);
}

bool close(double a, double e, double tol = 1e-4) {
  return std::fabs(a - e) <= tol * (1 + std::fabs(e));
}

}  // namespace

TEST_CASE("BatchNormalization inference matches the per-channel formula", "[normalization]") {
  // y = s*(x-mean)/sqrt(var+eps)+b over [N,C,H,W], for float32 and float16 X
  // (parameters float32, as opset 15 allows), random parameters.
  for (DType dt : {DType::kFloat32, DType::kFloat16}) {
    Shape shape = {2, 3, 4, 5};
    GraphBuilder b;
    auto x = b.input("x", dt, shape);
    std::vector<ValueId> ins = {x};
    std::vector<Tensor> params;
    for (int i = 0; i < 4; ++i) {
      Tensor p = random_tensor(DType::kFloat32, {3}, test_rng(), i == 3 ? 0.5 : -2, 2);
      params.push_back(p);
      ins.push_back(b.constant(fmt::format("p{}", i), p));
    }
    b.output(b.node(OpKind::BatchNormalization, ins, attrs({{"epsilon", F(0.01)}})));
    Graph g = b.build();
    Tensor xt = random_tensor(dt, shape, test_rng());
    Tensor y = run_graph(g, {{"x", xt}})[0];
    REQUIRE(y.dtype() == dt);
    for (int64_t f = 0; f < xt.numel(); ++f) {
      int64_t c = (f / 20) % 3;
      double e = params[0].get_f64(c) * (xt.get_f64(f) - params[2].get_f64(c)) /
                     std::sqrt(params[3].get_f64(c) + 0.01) +
                 params[1].get_f64(c);
      CHECK(close(y.get_f64(f), e, dt == DType::kFloat16 ? 2e-3 : 1e-5));
    }
  }
}

TEST_CASE("BatchNormalization rejects training mode and bad parameter shapes", "[normalization]") {
  // training_mode=1 and training outputs are unsupported; scale of the wrong
  // length and a rank-1 X are invalid; spatial=0 is accepted only for 2-D X.
  auto make = [](Shape xs, Shape ps, AttributeMap a, int outs = 1) {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, xs);
    std::vector<ValueId> ins = {x};
    for (int i = 0; i < 4; ++i)
      ins.push_back(b.constant(fmt::format("p{}", i),
                               random_tensor(DType::kFloat32, ps, test_rng(), 0.5, 1)));
    b.output(b.node(OpKind::BatchNormalization, ins, a, outs));
    return infer(b);
  };
  Status tm = make({2, 3, 4}, {3}, attrs({{"training_mode", I(1)}}));
  CHECK(tm.code() == ErrorCode::kUnsupported);
  CHECK(tm.message().find("training_mode") != std::string::npos);
  CHECK(make({2, 3, 4}, {3}, {}, 3).code() == ErrorCode::kUnsupported);
  Status shp = make({2, 3, 4}, {4}, {});
  CHECK(shp.code() == ErrorCode::kInvalidModel);
  CHECK(shp.message().find("scale") != std::string::npos);
  CHECK(make({3}, {3}, {}).code() == ErrorCode::kInvalidModel);
  CHECK(make({2, 3, 4}, {3}, attrs({{"_spatial", I(0)}})).code() == ErrorCode::kUnsupported);
  CHECK(make({2, 3}, {3}, attrs({{"_spatial", I(0)}})).ok());
  CHECK(make({2, 3, 1, 1}, {3}, attrs({{"_spatial", I(0)}})).ok());
}

namespace {

Expected<Graph> import_bn(int64_t opset, int num_outputs,
                          std::vector<std::pair<std::string, int64_t>> int_attrs) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  auto* os = m.add_opset_import();
  os->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("bn");
  const char* names[] = {"x", "s", "b", "m", "v"};
  for (int i = 0; i < 5; ++i) {
    auto* in = g->add_input();
    in->set_name(names[i]);
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    if (i == 0) {
      for (int64_t d : {2, 3, 4}) tt->mutable_shape()->add_dim()->set_dim_value(d);
    } else {
      tt->mutable_shape()->add_dim()->set_dim_value(3);
    }
  }
  auto* n = g->add_node();
  n->set_op_type("BatchNormalization");
  for (const char* in : names) n->add_input(in);
  for (int o = 0; o < num_outputs; ++o) {
    std::string out_name = fmt::format("y{}", o);
    n->add_output(out_name);
    g->add_output()->set_name(out_name);
  }
  for (const auto& [name, v] : int_attrs) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  std::string bytes;
  m.SerializeToString(&bytes);
  auto graph = importer::import_model_bytes(bytes, "", "bn");
  if (!graph.ok()) return graph.status();
  ShapeInferenceOptions opts;
  Status st = infer_shapes(*graph, opts);
  if (!st.ok()) return st;
  return graph;
}

}  // namespace

TEST_CASE("BatchNormalization importer: old opsets, training outputs, spatial", "[normalization]") {
  // Opset 9 with training outputs and opset 15 training_mode=1 are
  // unsupported; opset 7 spatial=1 imports; opset 7 spatial=0 on a 3-D input
  // is unsupported at shape inference.
  CHECK(import_bn(9, 1, {}).ok());
  auto train9 = import_bn(9, 5, {});
  CHECK(train9.status().code() == ErrorCode::kUnsupported);
  CHECK(import_bn(15, 3, {{"training_mode", 1}}).status().code() == ErrorCode::kUnsupported);
  auto sp1 = import_bn(7, 1, {{"spatial", 1}});
  REQUIRE(sp1.ok());
  CHECK(!sp1->nodes[0].attrs.has("spatial"));
  CHECK(import_bn(7, 1, {{"spatial", 0}}).status().code() == ErrorCode::kUnsupported);
}

TEST_CASE("LayerNormalization matches a hand computation for every axis", "[normalization]") {
  // Normalise over dims [axis, rank); Scale has the normalised shape, B is
  // broadcast from a smaller shape; Mean/InvStdDev have the normalised dims
  // set to 1 and stash dtype float32.
  Shape shape = {2, 3, 4};
  for (int64_t axis : {0, 1, 2, -1, -2}) {
    int64_t a = axis < 0 ? axis + 3 : axis;
    Shape norm(shape.begin() + a, shape.end());
    Shape bshape = {shape.back()};  // broadcasts along the last dim
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, shape);
    Tensor sc = random_tensor(DType::kFloat32, norm, test_rng());
    Tensor bi = random_tensor(DType::kFloat32, bshape, test_rng());
    b.node(OpKind::LayerNormalization, {x, b.constant("s", sc), b.constant("b", bi)},
           attrs({{"axis", I(axis)}, {"epsilon", F(1e-3)}}), 3);
    for (ValueId o : b.graph().nodes.back().outputs) b.output(o);
    Graph g = b.build();
    Tensor xt = random_tensor(DType::kFloat32, shape, test_rng());
    auto out = run_graph(g, {{"x", xt}});
    int64_t cols = shape_numel(norm), rows = xt.numel() / cols;
    Shape stats = shape;
    for (size_t d = (size_t)a; d < 3; ++d) stats[d] = 1;
    REQUIRE(out[1].shape() == stats);
    REQUIRE(out[2].dtype() == DType::kFloat32);
    for (int64_t r = 0; r < rows; ++r) {
      double m = 0, v = 0;
      for (int64_t c = 0; c < cols; ++c) m += xt.get_f64(r * cols + c);
      m /= cols;
      for (int64_t c = 0; c < cols; ++c) v += std::pow(xt.get_f64(r * cols + c) - m, 2);
      v /= cols;
      double inv = 1 / std::sqrt(v + 1e-3);
      CHECK(close(out[1].get_f64(r), m, 1e-5));
      CHECK(close(out[2].get_f64(r), inv, 1e-5));
      for (int64_t c = 0; c < cols; ++c) {
        int64_t f = r * cols + c;
        double e = (xt.get_f64(f) - m) * inv * sc.get_f64(c) + bi.get_f64(f % shape.back());
        CHECK(close(out[0].get_f64(f), e, 1e-5));
      }
    }
  }
}

TEST_CASE("LayerNormalization rejects bad axis, scale shape and stash_type", "[normalization]") {
  // axis beyond rank, a Scale that does not broadcast to X, stash_type not a float type.
  auto make = [](int64_t axis, Shape sshape, int64_t stash) {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {2, 3, 4});
    auto s = b.constant("s", random_tensor(DType::kFloat32, sshape, test_rng()));
    b.output(b.node(OpKind::LayerNormalization, {x, s},
                    attrs({{"axis", I(axis)}, {"stash_type", I(stash)}})));
    return infer(b);
  };
  CHECK(make(-1, {4}, 1).ok());
  CHECK(make(3, {4}, 1).code() == ErrorCode::kInvalidModel);
  Status sh = make(-1, {3}, 1);
  CHECK(sh.code() == ErrorCode::kInvalidModel);
  CHECK(sh.message().find("Scale") != std::string::npos);
  CHECK(make(-1, {2, 3, 4, 1}, 1).code() == ErrorCode::kInvalidModel);
  CHECK(make(-1, {4}, 7).code() == ErrorCode::kInvalidModel);
}

TEST_CASE("InstanceNormalization matches per-(n,c) statistics", "[normalization]") {
  // Mean and population variance over the spatial dims of each (n, c).
  Shape shape = {2, 3, 2, 5};
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat64, shape);
  Tensor sc = random_tensor(DType::kFloat64, {3}, test_rng());
  Tensor bi = random_tensor(DType::kFloat64, {3}, test_rng());
  b.output(b.node(OpKind::InstanceNormalization, {x, b.constant("s", sc), b.constant("b", bi)},
                  attrs({{"epsilon", F(0.05)}})));
  Graph g = b.build();
  Tensor xt = random_tensor(DType::kFloat64, shape, test_rng());
  Tensor y = run_graph(g, {{"x", xt}})[0];
  for (int64_t nc = 0; nc < 6; ++nc) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < 10; ++i) m += xt.get_f64(nc * 10 + i) / 10;
    for (int64_t i = 0; i < 10; ++i) v += std::pow(xt.get_f64(nc * 10 + i) - m, 2) / 10;
    int64_t c = nc % 3;
    for (int64_t i = 0; i < 10; ++i) {
      double e =
          sc.get_f64(c) * (xt.get_f64(nc * 10 + i) - m) / std::sqrt(v + 0.05) + bi.get_f64(c);
      CHECK(close(y.get_f64(nc * 10 + i), e, 1e-12));
    }
  }
  // Errors: wrong scale length, rank-2 input.
  GraphBuilder bad;
  auto xb = bad.input("x", DType::kFloat32, {2, 3, 4});
  bad.output(bad.node(OpKind::InstanceNormalization,
                      {xb, bad.constant("s", random_tensor(DType::kFloat32, {2}, test_rng())),
                       bad.constant("b", random_tensor(DType::kFloat32, {3}, test_rng()))}));
  CHECK(infer(bad).code() == ErrorCode::kInvalidModel);
  GraphBuilder bad2;
  auto x2 = bad2.input("x", DType::kFloat32, {2, 3});
  bad2.output(bad2.node(OpKind::InstanceNormalization,
                        {x2, bad2.constant("s", random_tensor(DType::kFloat32, {3}, test_rng())),
                         bad2.constant("b", random_tensor(DType::kFloat32, {3}, test_rng()))}));
  CHECK(infer(bad2).code() == ErrorCode::kInvalidModel);
}

TEST_CASE("LRN sums squares over ONNX's channel window", "[normalization]") {
  // Odd and even sizes: window c - floor((size-1)/2) .. c + ceil((size-1)/2),
  // clipped to [0, C); y = x / (bias + alpha/size * sum)^beta.
  Shape shape = {2, 5, 3};
  for (int64_t size : {1, 3, 4}) {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, shape);
    b.output(
        b.node(OpKind::LRN, {x},
               attrs({{"size", I(size)}, {"alpha", F(0.3)}, {"beta", F(0.6)}, {"bias", F(1.5)}})));
    Graph g = b.build();
    Tensor xt = random_tensor(DType::kFloat32, shape, test_rng());
    Tensor y = run_graph(g, {{"x", xt}})[0];
    int64_t before = (size - 1) / 2;  // floor
    int64_t after = size / 2;         // ceil((size-1)/2)
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t c = 0; c < 5; ++c)
        for (int64_t i = 0; i < 3; ++i) {
          double sq = 0;
          for (int64_t k = c - before; k <= c + after; ++k)
            if (k >= 0 && k < 5) sq += std::pow(xt.get_f64((n * 5 + k) * 3 + i), 2);
          int64_t f = (n * 5 + c) * 3 + i;
          double e = xt.get_f64(f) / std::pow(1.5 + 0.3 / size * sq, 0.6);
          CHECK(close(y.get_f64(f), e, 1e-5));
        }
  }
  for (int64_t bad_size : {0, -2}) {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, shape);
    b.output(b.node(OpKind::LRN, {x}, attrs({{"size", I(bad_size)}})));
    CHECK(infer(b).code() == ErrorCode::kInvalidModel);
  }
  GraphBuilder nosize;
  auto xn = nosize.input("x", DType::kFloat32, shape);
  nosize.output(nosize.node(OpKind::LRN, {xn}));
  Status st = infer(nosize);
  CHECK(st.code() == ErrorCode::kInvalidModel);
  CHECK(st.message().find("size") != std::string::npos);
}

TEST_CASE("MeanVarianceNormalization uses (x - mean) / (std + 1e-9) over axes", "[normalization]") {
  // Default axes [0,2,3] (per channel) and a custom axes [1]; duplicate axes are an error.
  Shape shape = {2, 3, 2, 2};
  for (bool custom : {false, true}) {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, shape);
    AttributeMap a;
    if (custom) a.set("axes", Attribute::of_ints({-3}));
    b.output(b.node(OpKind::MeanVarianceNormalization, {x}, a));
    Graph g = b.build();
    Tensor xt = random_tensor(DType::kFloat32, shape, test_rng());
    Tensor y = run_graph(g, {{"x", xt}})[0];
    // Group key: channel (default) or (n, h, w) (custom).
    std::map<int64_t, std::vector<int64_t>> groups;
    for (int64_t f = 0; f < xt.numel(); ++f) {
      int64_t n = f / 12, c = (f / 4) % 3, hw = f % 4;
      groups[custom ? n * 4 + hw : c].push_back(f);
    }
    for (auto& [key, members] : groups) {
      double m = 0, v = 0;
      for (int64_t f : members) m += xt.get_f64(f) / members.size();
      for (int64_t f : members) v += std::pow(xt.get_f64(f) - m, 2) / members.size();
      for (int64_t f : members)
        CHECK(close(y.get_f64(f), (xt.get_f64(f) - m) / (std::sqrt(v) + 1e-9), 1e-5));
    }
  }
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, shape);
  b.output(b.node(OpKind::MeanVarianceNormalization, {x},
                  attrs({{"axes", Attribute::of_ints({1, -3})}})));
  CHECK(infer(b).code() == ErrorCode::kInvalidModel);
  GraphBuilder b3;
  auto x3 = b3.input("x", DType::kFloat32, {4, 5});  // default axes need rank 4
  b3.output(b3.node(OpKind::MeanVarianceNormalization, {x3}));
  CHECK(infer(b3).code() == ErrorCode::kInvalidModel);
}
