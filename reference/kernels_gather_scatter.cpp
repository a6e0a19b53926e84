// Reference kernels of the indexing ops: Gather, GatherElements, GatherND,
// ScatterElements, ScatterND. Element bytes are copied by dtype size;
// reductions compute in the element type (fp16/bf16 in float). Negative
// indices wrap once; an index still out of range is an error Status.
#include "reference/kernels_dm_util.h"

namespace graphc::reference::kernels {

using ir::Shape;
using ir::Tensor;

namespace {
int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t d = from; d < to; ++d) n *= s[d];
  return n;
}
}  // namespace

Status run_Gather(KernelContext& ctx) {
  const Tensor &data = ctx.in(0), &indices = ctx.in(1);
  Tensor& out = ctx.out(0);
  ASSIGN_OR_RETURN(int64_t axis, ir::normalize_axis(ctx.attrs().get_int("axis", 0), data.rank()));
  const Shape& ds = data.shape();
  auto ax = static_cast<size_t>(axis);
  int64_t outer = prod(ds, 0, ax), dim = ds[ax], inner = prod(ds, ax + 1, ds.size());
  int64_t n = indices.numel();
  size_t esz = ir::dtype_size(data.dtype());
  uint8_t* dst = out.numel() ? out.mutable_data() : nullptr;
  for (int64_t k = 0; k < n; ++k) {
    ASSIGN_OR_RETURN(int64_t j, dm::read_index(indices, k, dim, "indices"));
    for (int64_t o = 0; o < outer; ++o)
      dm::copy_bytes(dst + static_cast<size_t>((o * n + k) * inner) * esz,
                     data.data() + static_cast<size_t>((o * dim + j) * inner) * esz, inner, esz);
  }
  return Status::ok_status();
}

Status run_GatherElements(KernelContext& ctx) {
  const Tensor &data = ctx.in(0), &indices = ctx.in(1);
  Tensor& out = ctx.out(0);
  ASSIGN_OR_RETURN(int64_t axis, ir::normalize_axis(ctx.attrs().get_int("axis", 0), data.rank()));
  if (out.numel() == 0) return Status::ok_status();
  auto ax = static_cast<size_t>(axis);
  auto ds = strides_of(data.shape());
  int64_t dim = data.shape()[ax];
  size_t esz = ir::dtype_size(data.dtype());
  std::vector<int64_t> idx(indices.shape().size(), 0);
  uint8_t* dst = out.mutable_data();
  for (int64_t i = 0; i < indices.numel(); ++i) {
    ASSIGN_OR_RETURN(int64_t j, dm::read_index(indices, i, dim, "indices"));
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += (d == ax ? j : idx[d]) * ds[d];
    std::memcpy(dst + static_cast<size_t>(i) * esz, data.data() + static_cast<size_t>(off) * esz,
                esz);
    next_index(idx, indices.shape());
  }
  return Status::ok_status();
}

namespace {
// Flat element offset into `data` (rank r) of the index tuple at
// indices[t * k .. t * k + k) applied to dims [first, first + k).
Expected<int64_t> nd_offset(const Tensor& data, const Tensor& indices, int64_t t, int64_t k,
                            size_t first, const std::vector<int64_t>& strides) {
  int64_t off = 0;
  for (int64_t c = 0; c < k; ++c) {
    size_t d = first + static_cast<size_t>(c);
    ASSIGN_OR_RETURN(int64_t j, dm::read_index(indices, t * k + c, data.shape()[d], "indices"));
    off += j * strides[d];
  }
  return off;
}
}  // namespace

Status run_GatherND(KernelContext& ctx) {
  const Tensor &data = ctx.in(0), &indices = ctx.in(1);
  Tensor& out = ctx.out(0);
  const Shape &ds = data.shape(), &is = indices.shape();
  auto b = static_cast<size_t>(ctx.attrs().get_int("batch_dims", 0));
  int64_t k = is.back();
  int64_t batches = prod(ds, 0, b);
  int64_t per_batch_tuples = prod(is, b, is.size() - 1);
  int64_t chunk = prod(ds, b + static_cast<size_t>(k), ds.size());
  int64_t batch_stride = prod(ds, b, ds.size());
  auto strides = strides_of(ds);
  size_t esz = ir::dtype_size(data.dtype());
  uint8_t* dst = out.numel() ? out.mutable_data() : nullptr;
  for (int64_t bi = 0; bi < batches; ++bi) {
    for (int64_t t = 0; t < per_batch_tuples; ++t) {
      int64_t tuple = bi * per_batch_tuples + t;
      ASSIGN_OR_RETURN(int64_t off, nd_offset(data, indices, tuple, k, b, strides));
      dm::copy_bytes(dst + static_cast<size_t>(tuple * chunk) * esz,
                     data.data() + static_cast<size_t>(bi * batch_stride + off) * esz, chunk, esz);
    }
  }
  return Status::ok_status();
}

Status run_ScatterElements(KernelContext& ctx) {
  const Tensor &data = ctx.in(0), &indices = ctx.in(1), &updates = ctx.in(2);
  Tensor& out = ctx.out(0);
  ASSIGN_OR_RETURN(int64_t axis, ir::normalize_axis(ctx.attrs().get_int("axis", 0), data.rank()));
  ASSIGN_OR_RETURN(auto red, dm::parse_reduction(ctx.attrs().get_string("reduction", "none")));
  RETURN_IF_ERROR(dm::visit_dtype(data.dtype(), [](auto) {}));
  if (data.byte_size()) std::memcpy(out.mutable_data(), data.data(), data.byte_size());
  if (indices.numel() == 0) return Status::ok_status();
  auto ax = static_cast<size_t>(axis);
  auto ds = strides_of(data.shape());
  int64_t dim = data.shape()[ax];
  size_t esz = ir::dtype_size(data.dtype());
  std::vector<int64_t> idx(indices.shape().size(), 0);
  uint8_t* dst = out.mutable_data();
  for (int64_t i = 0; i < indices.numel(); ++i) {
    ASSIGN_OR_RETURN(int64_t j, dm::read_index(indices, i, dim, "indices"));
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += (d == ax ? j : idx[d]) * ds[d];
    dm::reduce_into(data.dtype(), red, dst + static_cast<size_t>(off) * esz,
                    updates.data() + static_cast<size_t>(i) * esz);
    next_index(idx, indices.shape());
  }
  return Status::ok_status();
}

Status run_ScatterND(KernelContext& ctx) {
  const Tensor &data = ctx.in(0), &indices = ctx.in(1), &updates = ctx.in(2);
  Tensor& out = ctx.out(0);
  ASSIGN_OR_RETURN(auto red, dm::parse_reduction(ctx.attrs().get_string("reduction", "none")));
  RETURN_IF_ERROR(dm::visit_dtype(data.dtype(), [](auto) {}));
  if (data.byte_size()) std::memcpy(out.mutable_data(), data.data(), data.byte_size());
  const Shape &ds = data.shape(), &is = indices.shape();
  int64_t k = is.back();
  int64_t tuples = prod(is, 0, is.size() - 1);
  int64_t chunk = prod(ds, static_cast<size_t>(k), ds.size());
  if (tuples == 0 || chunk == 0) return Status::ok_status();
  auto strides = strides_of(ds);
  size_t esz = ir::dtype_size(data.dtype());
  uint8_t* dst = out.mutable_data();
  for (int64_t t = 0; t < tuples; ++t) {
    ASSIGN_OR_RETURN(int64_t off, nd_offset(data, indices, t, k, 0, strides));
    for (int64_t e = 0; e < chunk; ++e)
      dm::reduce_into(data.dtype(), red, dst + static_cast<size_t>(off + e) * esz,
                      updates.data() + static_cast<size_t>(t * chunk + e) * esz);
  }
  return Status::ok_status();
}

}  // namespace graphc::reference::kernels
