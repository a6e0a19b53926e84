// Reference kernels for MaxPool, AveragePool, GlobalAveragePool and
// GlobalMaxPool over any number of spatial dims (N x C x D1 x ... x Dk).
//
// Window semantics (ONNX spec): output position o along a spatial dim covers
// input positions o*stride - pad_begin + j*dilation, j < kernel. Positions
// outside [0, in) are padding: MaxPool ignores them; AveragePool divides by
// the number of in-range positions (count_include_pad=0) or by the number of
// positions inside the padded input [-pad_begin, in + pad_end)
// (count_include_pad=1), so ceil_mode windows that run past the padded input
// average only over their valid part.
#include <cstring>

#include "ir/pool_resize_params.h"
#include "reference/kernels.h"

namespace graphc::reference::kernels {

namespace {

using ir::PoolParams;
using ir::Tensor;

// Per spatial dim and output position: the in-range input positions of the
// window, and how many window positions lie inside the padded input.
struct DimWindows {
  std::vector<std::vector<int64_t>> taps;
  std::vector<int64_t> padded_count;
};

std::vector<DimWindows> windows(const PoolParams& p, const ir::Shape& x) {
  std::vector<DimWindows> out(static_cast<size_t>(p.spatial_rank));
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t in = x[i + 2];
    for (int64_t o = 0; o < p.out_spatial[i]; ++o) {
      std::vector<int64_t> taps;
      int64_t padded = 0;
      for (int64_t j = 0; j < p.kernel[i]; ++j) {
        const int64_t pos = o * p.strides[i] - p.pad_begin[i] + j * p.dilations[i];
        if (pos >= 0 && pos < in) taps.push_back(pos);
        if (pos >= -p.pad_begin[i] && pos < in + p.pad_end[i]) ++padded;
      }
      out[i].taps.push_back(std::move(taps));
      out[i].padded_count.push_back(padded);
    }
  }
  return out;
}

// x[a] > x[b], compared in the element's own type (integers exactly).
bool greater(const Tensor& x, int64_t a, int64_t b) {
  if (ir::is_float(x.dtype())) return x.get_f64(a) > x.get_f64(b);
  if (ir::is_unsigned_integer(x.dtype())) return x.get_u64(a) > x.get_u64(b);
  return x.get_i64(a) > x.get_i64(b);
}

// Calls f(spatial offset, spatial multi-index) for every tap of the window of
// output position `o` (row-major over the window: first spatial dim outermost).
template <typename F>
void for_each_tap(const std::vector<DimWindows>& w, const std::vector<int64_t>& o,
                  const std::vector<int64_t>& in_strides, F&& f) {
  const size_t k = w.size();
  std::vector<const std::vector<int64_t>*> taps(k);
  for (size_t i = 0; i < k; ++i) {
    taps[i] = &w[i].taps[static_cast<size_t>(o[i])];
    if (taps[i]->empty()) return;
  }
  std::vector<size_t> j(k, 0);
  std::vector<int64_t> pos(k);
  while (true) {
    int64_t off = 0;
    for (size_t i = 0; i < k; ++i) {
      pos[i] = (*taps[i])[j[i]];
      off += pos[i] * in_strides[i];
    }
    f(off, pos);
    size_t i = k;
    while (i > 0) {
      --i;
      if (++j[i] < taps[i]->size()) break;
      j[i] = 0;
      if (i == 0) return;
    }
  }
}

}  // namespace

Status run_MaxPool(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  ASSIGN_OR_RETURN(PoolParams p, ir::pool_params("MaxPool", ctx.attrs(), x.shape(), true));
  Tensor& y = ctx.out(0);
  const bool want_indices = ctx.node.outputs.size() > 1 && ctx.node.outputs[1] != ir::kNoValue;
  const ir::Shape in_spatial(x.shape().begin() + 2, x.shape().end());
  const ir::Shape out_spatial = p.out_spatial;
  const auto in_strides = strides_of(in_spatial);
  // Column-major strides for storage_order=1 (first spatial dim fastest).
  std::vector<int64_t> col_strides(in_spatial.size(), 1);
  for (size_t i = 1; i < in_spatial.size(); ++i)
    col_strides[i] = col_strides[i - 1] * in_spatial[i - 1];
  const int64_t in_plane = ir::shape_numel(in_spatial), out_plane = ir::shape_numel(out_spatial);
  const int64_t planes = x.shape()[0] * x.shape()[1];
  const auto w = windows(p, x.shape());
  const size_t es = ir::dtype_size(x.dtype());
  // Y may be omitted when only Indices is wanted.
  uint8_t* yd = ctx.node.outputs[0] != ir::kNoValue ? y.mutable_data() : nullptr;
  int64_t* id = want_indices ? ctx.out(1).mutable_data_as<int64_t>() : nullptr;
  std::vector<int64_t> o(out_spatial.size(), 0);
  for (int64_t op = 0; op < out_plane; ++op) {
    for (int64_t c = 0; c < planes; ++c) {
      const int64_t base = c * in_plane;
      int64_t best = -1;
      std::vector<int64_t> best_pos;
      for_each_tap(w, o, in_strides, [&](int64_t off, const std::vector<int64_t>& pos) {
        if (best < 0 || greater(x, base + off, best)) {  // first maximum wins
          best = base + off;
          best_pos = pos;
        }
      });
      if (best < 0)
        return internal_error("MaxPool: empty pooling window");  // rejected by pool_params
      const int64_t yi = c * out_plane + op;
      if (yd)
        std::memcpy(yd + static_cast<size_t>(yi) * es, x.data() + static_cast<size_t>(best) * es,
                    es);
      if (id) {
        int64_t flat = 0;
        for (size_t i = 0; i < best_pos.size(); ++i)
          flat += best_pos[i] * (p.storage_order == 0 ? in_strides[i] : col_strides[i]);
        id[yi] = base + flat;
      }
    }
    next_index(o, out_spatial);
  }
  return Status::ok_status();
}

Status run_AveragePool(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const bool include_pad = ctx.attrs().get_int("count_include_pad", 0) != 0;
  ASSIGN_OR_RETURN(PoolParams p,
                   ir::pool_params("AveragePool", ctx.attrs(), x.shape(), !include_pad));
  Tensor& y = ctx.out(0);
  const ir::Shape in_spatial(x.shape().begin() + 2, x.shape().end());
  const auto in_strides = strides_of(in_spatial);
  const int64_t in_plane = ir::shape_numel(in_spatial), out_plane = ir::shape_numel(p.out_spatial);
  const int64_t planes = x.shape()[0] * x.shape()[1];
  const auto w = windows(p, x.shape());
  std::vector<int64_t> o(p.out_spatial.size(), 0);
  for (int64_t op = 0; op < out_plane; ++op) {
    int64_t count = 1;
    for (size_t i = 0; i < o.size(); ++i) {
      const auto oi = static_cast<size_t>(o[i]);
      count *= include_pad ? w[i].padded_count[oi] : static_cast<int64_t>(w[i].taps[oi].size());
    }
    for (int64_t c = 0; c < planes; ++c) {
      const int64_t base = c * in_plane;
      double sum = 0;
      for_each_tap(w, o, in_strides,
                   [&](int64_t off, const std::vector<int64_t>&) { sum += x.get_f64(base + off); });
      y.set_f64(c * out_plane + op, sum / static_cast<double>(count));
    }
    next_index(o, p.out_spatial);
  }
  return Status::ok_status();
}

namespace {

Status global_pool(KernelContext& ctx, bool is_max) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  const int64_t planes = x.shape()[0] * x.shape()[1];
  int64_t plane = 1;
  for (size_t i = 2; i < x.shape().size(); ++i) plane *= x.shape()[i];
  if (plane == 0)
    return invalid_model("{}: spatial dims of X are empty",
                         is_max ? "GlobalMaxPool" : "GlobalAveragePool");
  for (int64_t c = 0; c < planes; ++c) {
    const int64_t base = c * plane;
    if (is_max) {
      int64_t best = base;
      for (int64_t i = 1; i < plane; ++i)
        if (greater(x, base + i, best)) best = base + i;
      y.set_f64(c, x.get_f64(best));
    } else {
      double sum = 0;
      for (int64_t i = 0; i < plane; ++i) sum += x.get_f64(base + i);
      y.set_f64(c, sum / static_cast<double>(plane));
    }
  }
  return Status::ok_status();
}

}  // namespace

Status run_GlobalAveragePool(KernelContext& ctx) { return global_pool(ctx, false); }
Status run_GlobalMaxPool(KernelContext& ctx) { return global_pool(ctx, true); }

}  // namespace graphc::reference::kernels
