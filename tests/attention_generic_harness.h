// Problems for the general attention kernel (emit/cuda/cuda_attention_generic.h)
// and their reference outputs, shared by the host emulator
// (tests/emu/attention_generic_emu.cpp) and the GPU test
// (tests/gpu/attention_generic_gpu_test.cpp). Header-only, no Catch2, no GPU.
//
// A case is one ONNX Attention node: a graph with that node alone (every one
// of its four outputs a graph output) runs through graphc's reference
// executor (reference/kernels_attention.cpp, the oracle) on fresh random
// inputs (never zeros); the kernel's spec and params come from
// ir::attention_params + emit::generic_attention_from_ir, as the emitter's
// glue gets them. The kernel reads the same input bytes and writes
// NaN-poisoned output buffers; compare_generic_outputs checks every requested
// output: no element left unwritten (a NaN where the reference has none), the
// same NaNs and infinities, relative L2 under the dtype's tolerance (fp32
// 1e-5, fp16 2e-3, bf16 1e-2), fully masked rows exactly 0, present_key/value
// bit-exact.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "emit/cuda/cuda_attention_generic.h"
#include "ir/attention_params.h"
#include "reference/executor.h"
#include "tests/test_util.h"

namespace graphc::testing::attn_generic {

using emit::GenericAttentionArg;
using emit::GenericAttentionTile;
using ir::DType;
using ir::Shape;
using ir::Tensor;

enum class MaskKind { kNone, kBool, kAdditive };

struct GenericCase {
  std::string name;
  DType dtype = DType::kFloat32;
  int64_t b = 2, hq = 2, hkv = 2, lq = 5, lkv = 7, past = 0, d = 8, dv = 8;
  bool three_d = false;
  bool causal = false;
  MaskKind mask = MaskKind::kNone;
  Shape mask_shape;                      // rank 1..4, right-aligned to [B, Hq, Lq, <= T]
  DType mask_dtype = DType::kUndefined;  // additive: defaults to dtype
  bool masked_rows = false;              // every 4th mask row fully masked (false / -inf)
  bool finite_fill_rows =
      false;  // additive: every 3rd mask row a finite fill (-1e4 / -1e9 / finfo.min)
  std::optional<double> scale;  // the attribute; none: 1/sqrt(D)
  double softcap = 0;
  int64_t left = -1, right = -1;
  std::vector<int64_t> nonpad;  // nonpad_kv_seqlen values ([B]); empty: none
  bool present_key = false, present_value = false;
  int qk_mode = -1;                          // -1: no qk_matmul_output
  std::optional<GenericAttentionTile> tile;  // else the default for Lq
};

inline double tolerance(DType t) {
  return t == DType::kFloat32 ? 1e-5 : t == DType::kFloat16 ? 2e-3 : 1e-2;
}

struct GenericProblem {
  ir::Graph graph;
  std::map<std::string, Tensor> feeds;
  std::vector<Tensor> want;  // reference outputs: Y, present_key, present_value, qk_matmul_output
  emit::GenericAttentionLaunch launch;
  std::vector<GenericAttentionArg> args;  // the kernel's pointer parameters in order
  std::vector<const Tensor*> arg_inputs;  // per arg: the input tensor, or nullptr for outputs
  std::vector<int> arg_outputs;           // per arg: the output index 0..3, or -1
};

inline Shape qkv_shape(const GenericCase& c, int64_t heads, int64_t len, int64_t dim) {
  return c.three_d ? Shape{c.b, len, heads * dim} : Shape{c.b, heads, len, dim};
}

// Normal(0, 1) values, never exactly zero.
inline Tensor random_normal(DType dt, const Shape& s, std::mt19937& rng) {
  Tensor t(dt, s);
  std::normal_distribution<double> nd(0.0, 1.0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double x = nd(rng);
    if (x == 0.0) x = 0.5;
    t.set_f64(i, x);
    if (t.get_f64(i) == 0.0) t.set_f64(i, 0.25);
  }
  return t;
}

inline Tensor make_mask(const GenericCase& c, std::mt19937& rng) {
  const DType mdt = c.mask == MaskKind::kBool
                        ? DType::kBool
                        : (c.mask_dtype == DType::kUndefined ? c.dtype : c.mask_dtype);
  Tensor m(mdt, c.mask_shape);
  const int64_t last = c.mask_shape.back();
  std::uniform_real_distribution<double> ud(0.0, 1.0);
  const double fills[] = {-1e4, -1e9,
                          mdt == DType::kFloat32
                              ? -static_cast<double>(std::numeric_limits<float>::max())
                          : mdt == DType::kFloat16 ? -65504.0
                                                   : -1e30};
  for (int64_t e = 0; e < m.numel(); ++e) {
    const int64_t row = last > 0 ? e / last : 0;
    const bool kill = c.masked_rows && row % 4 == 1;
    if (c.mask == MaskKind::kBool) {
      m.set_i64(e, kill ? 0 : (ud(rng) < 0.7 ? 1 : 0));
      continue;
    }
    double v = -3.0 * ud(rng) + 0.5;
    if (ud(rng) < 0.15) v = -std::numeric_limits<double>::infinity();
    if (kill) v = -std::numeric_limits<double>::infinity();
    if (c.finite_fill_rows && row % 3 == 2) {
      double f = fills[(row / 3) % 3];
      if (mdt == DType::kFloat16 && f < -65504.0) f = -65504.0;
      v = f;
    }
    m.set_f64(e, v);
  }
  return m;
}

// Builds the graph, runs the reference, resolves the node and fills the
// kernel's spec and params. The error names what failed.
inline Expected<GenericProblem> make_problem(const GenericCase& c, std::mt19937& rng, int sm = 90) {
  GenericProblem pr;
  GraphBuilder gb;
  auto input = [&](const std::string& name, Tensor t) {
    const ir::ValueId id = gb.input(name, t.dtype(), t.shape());
    pr.feeds[name] = std::move(t);
    return id;
  };
  std::vector<ir::ValueId> ins;
  ins.push_back(input("Q", random_normal(c.dtype, qkv_shape(c, c.hq, c.lq, c.d), rng)));
  ins.push_back(input("K", random_normal(c.dtype, qkv_shape(c, c.hkv, c.lkv, c.d), rng)));
  ins.push_back(input("V", random_normal(c.dtype, qkv_shape(c, c.hkv, c.lkv, c.dv), rng)));
  ins.push_back(c.mask == MaskKind::kNone ? ir::kNoValue : input("mask", make_mask(c, rng)));
  if (c.past > 0) {
    ins.push_back(input("past_key", random_normal(c.dtype, {c.b, c.hkv, c.past, c.d}, rng)));
    ins.push_back(input("past_value", random_normal(c.dtype, {c.b, c.hkv, c.past, c.dv}, rng)));
  } else {
    ins.push_back(ir::kNoValue);
    ins.push_back(ir::kNoValue);
  }
  if (!c.nonpad.empty()) {
    Tensor n(DType::kInt64, {c.b});
    for (int64_t b = 0; b < c.b; ++b) n.set_i64(b, c.nonpad[static_cast<size_t>(b)]);
    ins.push_back(input("nonpad", n));
  }
  while (!ins.empty() && ins.back() == ir::kNoValue) ins.pop_back();
  ir::AttributeMap a;
  if (c.three_d) {
    a.set("q_num_heads", ir::Attribute::of_int(c.hq));
    a.set("kv_num_heads", ir::Attribute::of_int(c.hkv));
  }
  if (c.causal) a.set("is_causal", ir::Attribute::of_int(1));
  if (c.scale) a.set("scale", ir::Attribute::of_float(*c.scale));
  if (c.softcap > 0) a.set("softcap", ir::Attribute::of_float(c.softcap));
  if (c.left >= 0) a.set("left_window_size", ir::Attribute::of_int(c.left));
  if (c.right >= 0) a.set("right_window_size", ir::Attribute::of_int(c.right));
  if (c.qk_mode >= 0) a.set("qk_matmul_output_mode", ir::Attribute::of_int(c.qk_mode));
  gb.node(ir::OpKind::Attention, ins, a, 4, "attention");
  for (ir::ValueId o : gb.graph().nodes.back().outputs) gb.output(o);
  pr.graph = gb.build();
  const ir::Node& node = pr.graph.nodes.back();

  auto ref = reference::execute(pr.graph, pr.feeds);
  if (!ref.ok()) return ref.status();
  for (ir::ValueId o : node.outputs) pr.want.push_back(ref->at(pr.graph.value(o).name));

  std::vector<const Shape*> shapes;
  std::vector<DType> dtypes;
  for (ir::ValueId id : node.inputs) {
    shapes.push_back(id == ir::kNoValue ? nullptr : &pr.graph.value(id).shape);
    dtypes.push_back(id == ir::kNoValue ? DType::kUndefined : pr.graph.value(id).dtype);
  }
  ASSIGN_OR_RETURN(ir::AttentionParams ap, ir::attention_params(node.attrs, shapes, dtypes));
  emit::GenericAttentionOutputs outs;
  outs.present_key = c.present_key;
  outs.present_value = c.present_value;
  outs.qk_matmul_output = c.qk_mode >= 0;
  ASSIGN_OR_RETURN(pr.launch, emit::generic_attention_from_ir(ap, outs, sm));
  if (c.tile) {
    pr.launch.spec.tile = *c.tile;
    RETURN_IF_ERROR(emit::validate_generic_attention_spec(pr.launch.spec));
  }
  pr.args = emit::generic_attention_kernel_args(pr.launch.spec);
  for (GenericAttentionArg g : pr.args) {
    const Tensor* in = nullptr;
    int out = -1;
    switch (g) {
      case GenericAttentionArg::kQ: in = &pr.feeds.at("Q"); break;
      case GenericAttentionArg::kK: in = &pr.feeds.at("K"); break;
      case GenericAttentionArg::kV: in = &pr.feeds.at("V"); break;
      case GenericAttentionArg::kMask: in = &pr.feeds.at("mask"); break;
      case GenericAttentionArg::kPastKey: in = &pr.feeds.at("past_key"); break;
      case GenericAttentionArg::kPastValue: in = &pr.feeds.at("past_value"); break;
      case GenericAttentionArg::kNonpad: in = &pr.feeds.at("nonpad"); break;
      case GenericAttentionArg::kY: out = 0; break;
      case GenericAttentionArg::kPresentKey: out = 1; break;
      case GenericAttentionArg::kPresentValue: out = 2; break;
      case GenericAttentionArg::kQkOutput: out = 3; break;
    }
    pr.arg_inputs.push_back(in);
    pr.arg_outputs.push_back(out);
  }
  return pr;
}

// Output buffers, poisoned with 0xff bytes (NaN in every float dtype).
inline std::vector<std::vector<uint8_t>> poisoned_outputs(const GenericProblem& pr) {
  std::vector<std::vector<uint8_t>> bufs;
  for (int o : pr.arg_outputs)
    if (o >= 0) bufs.emplace_back(pr.want[static_cast<size_t>(o)].byte_size(), 0xff);
  return bufs;
}

struct OutputCheck {
  std::string output;
  double rel_l2 = 0;
  int64_t nan_mismatch = 0;    // NaN on one side only (unwritten poison shows here)
  int64_t inf_mismatch = 0;    // an infinity the other side lacks
  int64_t masked_nonzero = 0;  // Y rows the reference has all zero (fully masked) but not 0 here
  int64_t bit_mismatch = 0;    // present outputs: not bit-exact
  bool ok = true;
  std::string summary() const;
};

inline std::string OutputCheck::summary() const {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: rel_l2 %.2e nan!= %lld inf!= %lld masked!=0 %lld bits!= %lld",
                output.c_str(), rel_l2, static_cast<long long>(nan_mismatch),
                static_cast<long long>(inf_mismatch), static_cast<long long>(masked_nonzero),
                static_cast<long long>(bit_mismatch));
  return buf;
}

// Compares the kernel's output buffers (in poisoned_outputs order) with the reference.
inline std::vector<OutputCheck> compare_generic_outputs(
    const GenericCase& c, const GenericProblem& pr,
    const std::vector<std::vector<uint8_t>>& got_bytes) {
  static const char* names[] = {"Y", "present_key", "present_value", "qk_matmul_output"};
  std::vector<OutputCheck> checks;
  size_t slot = 0;
  for (int o : pr.arg_outputs) {
    if (o < 0) continue;
    const Tensor& want = pr.want[static_cast<size_t>(o)];
    const std::vector<uint8_t>& bytes = got_bytes[slot++];
    Tensor got(want.dtype(), want.shape());
    if (bytes.size() == want.byte_size() && !bytes.empty())
      std::memcpy(got.mutable_data(), bytes.data(), bytes.size());
    OutputCheck ch;
    ch.output = names[o];
    double num = 0, den = 0;
    for (int64_t e = 0; e < want.numel(); ++e) {
      const double w = want.get_f64(e), g = got.get_f64(e);
      if (o == 1 || o == 2) {
        if (std::memcmp(want.data() + e * static_cast<int64_t>(ir::dtype_size(want.dtype())),
                        got.data() + e * static_cast<int64_t>(ir::dtype_size(want.dtype())),
                        ir::dtype_size(want.dtype())) != 0)
          ++ch.bit_mismatch;
        continue;
      }
      if (std::isnan(w) || std::isnan(g)) {
        if (std::isnan(w) != std::isnan(g)) ++ch.nan_mismatch;
        continue;
      }
      if (std::isinf(w) || std::isinf(g)) {
        if (w != g) ++ch.inf_mismatch;
        continue;
      }
      num += (g - w) * (g - w);
      den += w * w;
    }
    ch.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    if (o == 0 || (o == 3 && c.qk_mode == 3)) {
      // Rows the reference gives exactly 0 everywhere (fully masked) must be 0.
      const int64_t row_len = want.shape().back();
      const int64_t rows = row_len > 0 ? want.numel() / row_len : 0;
      if (o == 0 && c.three_d) {
        // Y [B, Lq, Hq*Dv]: a row is one head's Dv elements.
        for (int64_t r = 0; r < want.numel() / std::max<int64_t>(1, c.dv); ++r) {
          bool zero = true;
          for (int64_t e = 0; e < c.dv && zero; ++e) zero = want.get_f64(r * c.dv + e) == 0.0;
          if (zero)
            for (int64_t e = 0; e < c.dv; ++e)
              ch.masked_nonzero += got.get_f64(r * c.dv + e) != 0.0;
        }
      } else {
        for (int64_t r = 0; r < rows; ++r) {
          bool zero = true;
          for (int64_t e = 0; e < row_len && zero; ++e) zero = want.get_f64(r * row_len + e) == 0.0;
          if (zero)
            for (int64_t e = 0; e < row_len; ++e)
              ch.masked_nonzero += got.get_f64(r * row_len + e) != 0.0;
        }
      }
    }
    ch.ok = ch.nan_mismatch == 0 && ch.inf_mismatch == 0 && ch.masked_nonzero == 0 &&
            ch.bit_mismatch == 0 && ch.rel_l2 < tolerance(c.dtype);
    checks.push_back(ch);
  }
  return checks;
}

// Rows of the reference Y that are fully masked (all exactly 0): how many.
inline int64_t zero_rows(const GenericCase& c, const GenericProblem& pr) {
  const Tensor& y = pr.want[0];
  int64_t n = 0;
  for (int64_t r = 0; r < y.numel() / std::max<int64_t>(1, c.dv); ++r) {
    bool zero = true;
    for (int64_t e = 0; e < c.dv && zero; ++e) zero = y.get_f64(r * c.dv + e) == 0.0;
    n += zero;
  }
  return n;
}

// The cases: every feature of the operator, small enough for the host
// emulator (one host thread per CUDA thread), in all three dtypes.
inline std::vector<GenericCase> generic_cases() {
  std::vector<GenericCase> cs;
  const DType f32 = DType::kFloat32, f16 = DType::kFloat16, bf16 = DType::kBFloat16;
  auto add = [&](std::string name, DType dt, auto edit) {
    GenericCase c;
    c.name = std::move(name);
    c.dtype = dt;
    edit(c);
    cs.push_back(std::move(c));
  };
  auto tile = [](int wq, int wk, int r) {
    GenericAttentionTile t;
    t.row_warps = wq;
    t.key_warps = wk;
    t.rows_per_warp = r;
    return t;
  };
  for (DType dt : {f32, f16, bf16}) {
    const std::string tag = std::string(" ") + std::string(ir::dtype_name(dt));
    add("4-D MHA" + tag, dt, [](GenericCase&) {});
    add("3-D GQA 4/2, D 12, Dv 20, scale 0.3" + tag, dt, [](GenericCase& c) {
      c.three_d = true;
      c.hq = 4;
      c.hkv = 2;
      c.d = 12;
      c.dv = 20;
      c.scale = 0.3;
    });
    add("multi-tile: Lq 37, Lkv 100, causal" + tag, dt, [&](GenericCase& c) {
      c.b = 1;
      c.lq = 37;
      c.lkv = 100;
      c.causal = true;
      c.d = 16;
      c.dv = 16;
      c.tile = tile(2, 1, 4);
    });
    add("past + present, causal, mask [B,1,Lq,T]" + tag, dt, [](GenericCase& c) {
      c.past = 6;
      c.causal = true;
      c.mask = MaskKind::kAdditive;
      c.mask_shape = {c.b, 1, c.lq, c.past + c.lkv};
      c.present_key = c.present_value = true;
    });
    add("qk mode 3, bool mask with fully masked rows" + tag, dt, [](GenericCase& c) {
      c.mask = MaskKind::kBool;
      c.mask_shape = {c.b, c.hq, c.lq, c.lkv};
      c.masked_rows = true;
      c.qk_mode = 3;
    });
  }
  // Head dims and shapes.
  add("head dim 1, Dv 1", f32, [](GenericCase& c) { c.d = c.dv = 1; });
  add("head dim 3, Dv 33", f32, [](GenericCase& c) {
    c.d = 3;
    c.dv = 33;
  });
  add("head dim 256 (fp16)", f16, [](GenericCase& c) {
    c.b = 1;
    c.d = c.dv = 256;
    c.lq = 3;
    c.lkv = 40;
  });
  add("D 256, Dv 40, 3-D (bf16)", bf16, [](GenericCase& c) {
    c.b = 1;
    c.three_d = true;
    c.d = 256;
    c.dv = 40;
    c.lq = 4;
    c.lkv = 9;
  });
  add("D 72, Dv 136", f32, [](GenericCase& c) {
    c.b = 1;
    c.d = 72;
    c.dv = 136;
    c.lq = 6;
    c.lkv = 35;
  });
  add("MQA 4/1, 3-D", f32, [](GenericCase& c) {
    c.hq = 4;
    c.hkv = 1;
    c.three_d = true;
  });
  add("Lq 1 (decode), key_warps 2, T 70", f32, [&](GenericCase& c) {
    c.lq = 1;
    c.lkv = 70;
    c.tile = tile(1, 2, 1);
  });
  add("Lq 3, key_warps 2, rows 4, causal with past 50", f16, [&](GenericCase& c) {
    c.lq = 3;
    c.lkv = 3;
    c.past = 50;
    c.causal = true;
    c.present_key = true;
    c.tile = tile(1, 2, 4);
  });
  add("Lq > T causal (first rows fully masked)", f32, [](GenericCase& c) {
    c.lq = 9;
    c.lkv = 4;
    c.causal = true;
  });
  add("Lq < T causal (upper-left triangle)", f32, [](GenericCase& c) {
    c.lq = 4;
    c.lkv = 11;
    c.causal = true;
  });
  // Masks: every rank, broadcasts, short last dim, dtypes.
  add("bool mask rank 1 [T]", f32, [](GenericCase& c) {
    c.mask = MaskKind::kBool;
    c.mask_shape = {c.lkv};
  });
  add("additive mask rank 2 [Lq, T] with causal", f32, [](GenericCase& c) {
    c.mask = MaskKind::kAdditive;
    c.mask_shape = {c.lq, c.lkv};
    c.causal = true;
  });
  add("additive mask rank 3 [Hq, Lq, T], Lq > T", f16, [](GenericCase& c) {
    c.lq = 9;
    c.mask = MaskKind::kAdditive;
    c.mask_shape = {c.hq, c.lq, c.lkv};
  });
  add("additive mask [B,1,1,T] bf16", bf16, [](GenericCase& c) {
    c.mask = MaskKind::kAdditive;
    c.mask_shape = {c.b, 1, 1, c.lkv};
  });
  add("short mask [Lq, T-3]: missing keys masked", f32, [](GenericCase& c) {
    c.mask = MaskKind::kAdditive;
    c.mask_shape = {c.lq, c.lkv - 3};
  });
  add("mask last dim 1: only key 0", f32, [](GenericCase& c) {
    c.mask = MaskKind::kBool;
    c.mask_shape = {c.b, 1, c.lq, 1};
  });
  add("short bool mask [1,1,Lq,T-2] with past", f16, [](GenericCase& c) {
    c.past = 4;
    c.mask = MaskKind::kBool;
    c.mask_shape = {1, 1, c.lq, c.past + c.lkv - 2};
  });
  add("additive -inf rows: fully masked", f32, [](GenericCase& c) {
    c.mask = MaskKind::kAdditive;
    c.mask_shape = {c.b, c.hq, c.lq, c.lkv};
    c.masked_rows = true;
  });
  add("finite fill rows -1e4 / -1e9 / finfo.min (fp32)", f32, [](GenericCase& c) {
    c.lq = 9;
    c.mask = MaskKind::kAdditive;
    c.mask_shape = {c.b, 1, c.lq, c.lkv};
    c.finite_fill_rows = true;
  });
  add("finite fill rows (fp16)", f16, [](GenericCase& c) {
    c.lq = 9;
    c.mask = MaskKind::kAdditive;
    c.mask_shape = {c.lq, c.lkv};
    c.finite_fill_rows = true;
  });
  // Cache, nonpad, windows.
  add("3-D, past, GQA, Dv != D, present", f32, [](GenericCase& c) {
    c.three_d = true;
    c.past = 3;
    c.hq = 4;
    c.hkv = 2;
    c.dv = 5;
    c.present_key = c.present_value = true;
  });
  add("present_value alone, past 9, bf16", bf16, [](GenericCase& c) {
    c.past = 9;
    c.present_value = true;
  });
  add("nonpad_kv_seqlen with causal (one batch empty)", f32, [](GenericCase& c) {
    c.b = 3;
    c.lkv = 9;
    c.nonpad = {6, 0, 9};
    c.causal = true;
  });
  add("nonpad_kv_seqlen, no causal, 3-D", f16, [](GenericCase& c) {
    c.three_d = true;
    c.nonpad = {3, 7};
  });
  add("left window 2 with causal", f32, [](GenericCase& c) {
    c.lq = 8;
    c.lkv = 8;
    c.left = 2;
    c.causal = true;
  });
  add("window left 1, right 2", f32, [](GenericCase& c) {
    c.left = 1;
    c.right = 2;
  });
  add("right window 0 only, past 4", f16, [](GenericCase& c) {
    c.right = 0;
    c.past = 4;
  });
  add("left window 5, multi-tile T 90, causal past 80", f32, [&](GenericCase& c) {
    c.b = 1;
    c.lq = 10;
    c.lkv = 10;
    c.past = 80;
    c.left = 5;
    c.causal = true;
    c.tile = tile(2, 1, 2);
  });
  // Scale, softcap.
  add("softcap 2.5, scale 0.3, MQA", f32, [](GenericCase& c) {
    c.hq = 4;
    c.hkv = 1;
    c.scale = 0.3;
    c.softcap = 2.5;
  });
  add("softcap 5 with additive mask and causal", bf16, [](GenericCase& c) {
    c.softcap = 5;
    c.causal = true;
    c.mask = MaskKind::kAdditive;
    c.mask_shape = {c.lq, c.lkv};
  });
  add("negative scale: NaN rows, fully masked rows 0", f32, [](GenericCase& c) {
    c.scale = -0.125;
    c.mask = MaskKind::kBool;
    c.mask_shape = {c.b, 1, c.lq, c.lkv};
    c.masked_rows = true;
    c.qk_mode = 3;
  });
  add("scale 0", f16, [](GenericCase& c) { c.scale = 0.0; });
  // qk_matmul_output modes.
  add("qk mode 0 with softcap (scores after softcap)", f32, [](GenericCase& c) {
    c.softcap = 3;
    c.qk_mode = 0;
  });
  add("qk mode 1 with mask and causal", f16, [](GenericCase& c) {
    c.qk_mode = 1;
    c.causal = true;
    c.mask = MaskKind::kAdditive;
    c.mask_shape = {c.lq, c.lkv};
  });
  add("qk mode 2 (masked scores, -inf), causal, window", f32, [](GenericCase& c) {
    c.qk_mode = 2;
    c.causal = true;
    c.left = 3;
    c.mask = MaskKind::kAdditive;
    c.mask_shape = {c.b, c.hq, c.lq, c.lkv};
  });
  add("qk mode 3, key_warps 2, Lq 2, T 75, past, all outputs", f32, [&](GenericCase& c) {
    c.lq = 2;
    c.past = 68;
    c.qk_mode = 3;
    c.present_key = c.present_value = true;
    c.causal = true;
    c.tile = tile(1, 2, 2);
  });
  add("qk mode 3, nonpad, bf16, 3-D", bf16, [](GenericCase& c) {
    c.three_d = true;
    c.nonpad = {0, 5};
    c.qk_mode = 3;
  });
  return cs;
}

}  // namespace graphc::testing::attn_generic
