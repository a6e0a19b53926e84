// Reference kernels of the shape ops and the layout ops: Shape, Size, Reshape,
// Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Slice, Expand, Tile,
// Pad. They move element bytes (dtype_size each) and never convert, so every
// dtype works the same way. Parameters come from ir/data_movement_params.h,
// the same code the shape rules use.
#include "ir/data_movement_params.h"
#include "reference/kernels_dm_util.h"

namespace graphc::reference::kernels {

using ir::DType;
using ir::Shape;
using ir::Tensor;

namespace {

std::optional<std::vector<int64_t>> ints_if_present(const KernelContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::nullopt;
  return ctx.in(i).to_i64_vector();
}

// Output has the same elements in the same order (Reshape, Flatten, Squeeze,
// Unsqueeze): copy the bytes.
Status copy_through(KernelContext& ctx) {
  const Tensor& in = ctx.in(0);
  Tensor& out = ctx.out(0);
  if (in.byte_size() != out.byte_size())
    return internal_error("input has {} bytes, output {}", in.byte_size(), out.byte_size());
  if (in.byte_size()) std::memcpy(out.mutable_data(), in.data(), in.byte_size());
  return Status::ok_status();
}

}  // namespace

Status run_Shape(KernelContext& ctx) {
  const Shape& in = ctx.in(0).shape();
  std::optional<int64_t> end;
  if (ctx.attrs().has("end")) end = ctx.attrs().get_int("end", 0);
  auto [s, e] = ir::dm::shape_range(ctx.in(0).rank(), ctx.attrs().get_int("start", 0), end);
  Tensor& out = ctx.out(0);
  if (out.numel() != e - s)
    return internal_error("Shape output has {} elements, want {}", out.numel(), e - s);
  for (int64_t d = s; d < e; ++d) out.set_i64(d - s, in[static_cast<size_t>(d)]);
  return Status::ok_status();
}

Status run_Size(KernelContext& ctx) {
  ctx.out(0).set_i64(0, ctx.in(0).numel());
  return Status::ok_status();
}

Status run_Reshape(KernelContext& ctx) { return copy_through(ctx); }
Status run_Flatten(KernelContext& ctx) { return copy_through(ctx); }
Status run_Squeeze(KernelContext& ctx) { return copy_through(ctx); }
Status run_Unsqueeze(KernelContext& ctx) { return copy_through(ctx); }

Status run_Transpose(KernelContext& ctx) {
  const Tensor& in = ctx.in(0);
  ASSIGN_OR_RETURN(auto perm, ir::dm::transpose_perm(ctx.attrs().get_ints("perm"),
                                                     ctx.attrs().has("perm"), in.rank()));
  auto in_strides = strides_of(in.shape());
  std::vector<int64_t> strides;
  for (int64_t p : perm) strides.push_back(in_strides[static_cast<size_t>(p)]);
  dm::strided_copy(ctx.out(0).mutable_data(), ctx.out(0).shape(), in.data(), 0, strides,
                   ir::dtype_size(in.dtype()));
  return Status::ok_status();
}

Status run_Concat(KernelContext& ctx) {
  Tensor& out = ctx.out(0);
  auto rank = out.rank();
  ASSIGN_OR_RETURN(int64_t axis, ir::normalize_axis(ctx.attrs().get_int("axis", 0), rank));
  size_t esz = ir::dtype_size(out.dtype());
  const Shape& os = out.shape();
  int64_t outer = ir::shape_numel(Shape(os.begin(), os.begin() + axis));
  int64_t inner = ir::shape_numel(Shape(os.begin() + axis + 1, os.end()));
  uint8_t* dst = out.mutable_data();
  int64_t out_row = os[static_cast<size_t>(axis)] * inner;  // elements per outer step
  int64_t col = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Tensor& in = ctx.in(i);
    int64_t chunk = in.shape()[static_cast<size_t>(axis)] * inner;
    for (int64_t o = 0; o < outer; ++o)
      dm::copy_bytes(dst + static_cast<size_t>(o * out_row + col) * esz,
                     in.data() + static_cast<size_t>(o * chunk) * esz, chunk, esz);
    col += chunk;
  }
  return Status::ok_status();
}

Status run_Split(KernelContext& ctx) {
  const Tensor& in = ctx.in(0);
  ASSIGN_OR_RETURN(int64_t axis, ir::normalize_axis(ctx.attrs().get_int("axis", 0), in.rank()));
  const Shape& is = in.shape();
  ASSIGN_OR_RETURN(auto sizes,
                   ir::dm::split_sizes(is[static_cast<size_t>(axis)], ints_if_present(ctx, 1),
                                       ctx.attrs().get_int("num_outputs", -1),
                                       static_cast<int64_t>(ctx.outputs.size())));
  size_t esz = ir::dtype_size(in.dtype());
  int64_t outer = ir::shape_numel(Shape(is.begin(), is.begin() + axis));
  int64_t inner = ir::shape_numel(Shape(is.begin() + axis + 1, is.end()));
  int64_t in_row = is[static_cast<size_t>(axis)] * inner;
  int64_t col = 0;
  for (size_t k = 0; k < ctx.outputs.size(); ++k) {
    int64_t chunk = sizes[k] * inner;
    Tensor& out = ctx.out(k);
    if (!out.empty_storage()) {  // omitted outputs have no storage
      uint8_t* dst = out.mutable_data();
      for (int64_t o = 0; o < outer; ++o)
        dm::copy_bytes(dst + static_cast<size_t>(o * chunk) * esz,
                       in.data() + static_cast<size_t>(o * in_row + col) * esz, chunk, esz);
    }
    col += chunk;
  }
  return Status::ok_status();
}

Status run_Slice(KernelContext& ctx) {
  const Tensor& in = ctx.in(0);
  ASSIGN_OR_RETURN(
      auto p, ir::dm::slice_params(in.shape(), ctx.in(1).to_i64_vector(), ctx.in(2).to_i64_vector(),
                                   ints_if_present(ctx, 3), ints_if_present(ctx, 4)));
  auto in_strides = strides_of(in.shape());
  int64_t base = 0;
  std::vector<int64_t> strides(in_strides.size());
  for (size_t d = 0; d < in_strides.size(); ++d) {
    if (p.out[d] > 0) base += p.start[d] * in_strides[d];
    strides[d] = p.step[d] * in_strides[d];
  }
  dm::strided_copy(ctx.out(0).mutable_data(), p.out, in.data(), base, strides,
                   ir::dtype_size(in.dtype()));
  return Status::ok_status();
}

Status run_Expand(KernelContext& ctx) {
  const Tensor& in = ctx.in(0);
  Tensor& out = ctx.out(0);
  const Shape& os = out.shape();
  auto in_strides = strides_of(in.shape());
  size_t lead = os.size() - in.shape().size();
  std::vector<int64_t> strides(os.size(), 0);
  for (size_t d = 0; d < in.shape().size(); ++d)
    strides[lead + d] = in.shape()[d] == 1 ? 0 : in_strides[d];
  dm::strided_copy(out.mutable_data(), os, in.data(), 0, strides, ir::dtype_size(in.dtype()));
  return Status::ok_status();
}

Status run_Tile(KernelContext& ctx) {
  const Tensor& in = ctx.in(0);
  Tensor& out = ctx.out(0);
  const Shape &is = in.shape(), &os = out.shape();
  if (out.numel() == 0) return Status::ok_status();
  size_t esz = ir::dtype_size(in.dtype());
  auto in_strides = strides_of(is);
  std::vector<int64_t> idx(os.size(), 0);
  uint8_t* dst = out.mutable_data();
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < os.size(); ++d) off += (idx[d] % is[d]) * in_strides[d];
    std::memcpy(dst + static_cast<size_t>(i) * esz, in.data() + static_cast<size_t>(off) * esz,
                esz);
    next_index(idx, os);
  }
  return Status::ok_status();
}

namespace {
// Maps a position relative to the (cropped) input window of size w into
// [0, w) for the non-constant pad modes.
int64_t pad_source(ir::dm::PadMode mode, int64_t p, int64_t w) {
  switch (mode) {
    case ir::dm::PadMode::kEdge: return std::clamp<int64_t>(p, 0, w - 1);
    case ir::dm::PadMode::kWrap: return ((p % w) + w) % w;
    case ir::dm::PadMode::kReflect: {
      if (w == 1) return 0;
      int64_t period = 2 * (w - 1);
      int64_t m = ((p % period) + period) % period;
      return m >= w ? period - m : m;
    }
    case ir::dm::PadMode::kConstant: break;
  }
  return p;
}
}  // namespace

// Negative pads crop first; the non-constant modes then reflect/replicate/wrap
// the cropped input (onnxruntime's behaviour). The pad value is input 2 when
// given, else the `_value` IR attribute (opset < 11 `value`), else 0.
Status run_Pad(KernelContext& ctx) {
  const Tensor& in = ctx.in(0);
  Tensor& out = ctx.out(0);
  ASSIGN_OR_RETURN(auto mode, ir::dm::pad_mode(ctx.attrs().get_string("mode", "constant")));
  ASSIGN_OR_RETURN(auto p, ir::dm::pad_params(in.shape(), ctx.in(1).to_i64_vector(),
                                              ints_if_present(ctx, 3), mode));
  size_t esz = ir::dtype_size(in.dtype());
  Tensor value(in.dtype(), {});
  if (ctx.has_input(2)) {
    if (ctx.in(2).dtype() != in.dtype() || ctx.in(2).numel() != 1)
      return invalid_argument("constant_value must be one {} value", ir::dtype_name(in.dtype()));
    std::memcpy(value.mutable_data(), ctx.in(2).data(), esz);
  } else {
    value.set_f64(0, ctx.attrs().get_float("_value", 0.0));
  }
  const Shape &is = in.shape(), &os = out.shape();
  if (out.numel() == 0) return Status::ok_status();
  auto in_strides = strides_of(is);
  size_t rank = is.size();
  std::vector<int64_t> lo(rank), w(rank);
  for (size_t d = 0; d < rank; ++d) {
    lo[d] = std::max<int64_t>(-p.begin[d], 0);
    w[d] = is[d] - lo[d] - std::max<int64_t>(-p.end[d], 0);
  }
  std::vector<int64_t> idx(rank, 0);
  uint8_t* dst = out.mutable_data();
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t off = 0;
    bool inside = true;
    for (size_t d = 0; d < rank && inside; ++d) {
      int64_t q = idx[d] - std::max<int64_t>(p.begin[d], 0);  // position in the window
      if (q < 0 || q >= w[d]) {
        if (mode == ir::dm::PadMode::kConstant)
          inside = false;
        else
          q = pad_source(mode, q, w[d]);
      }
      off += (lo[d] + q) * in_strides[d];
    }
    const uint8_t* src = inside ? in.data() + static_cast<size_t>(off) * esz : value.data();
    std::memcpy(dst + static_cast<size_t>(i) * esz, src, esz);
    next_index(idx, os);
  }
  return Status::ok_status();
}

}  // namespace graphc::reference::kernels
