// Reference kernels of the generators and per-axis ops of the data-movement
// group: ConstantOfShape, Range, Trilu, DepthToSpace, SpaceToDepth, OneHot,
// EyeLike, CumSum.
#include "reference/kernels_dm_util.h"

namespace graphc::reference::kernels {

using ir::DType;
using ir::Shape;
using ir::Tensor;

Status run_ConstantOfShape(KernelContext& ctx) {
  Tensor& out = ctx.out(0);
  if (out.numel() == 0) return Status::ok_status();
  size_t esz = ir::dtype_size(out.dtype());
  uint8_t* dst = out.mutable_data();
  const ir::Attribute* a = ctx.attrs().find("value");
  if (!a) return Status::ok_status();  // float32 zeros: the output starts zero-filled
  if (a->kind != ir::Attribute::Kind::kTensor || a->t.numel() != 1 || a->t.dtype() != out.dtype())
    return invalid_model("attribute 'value' must be one {} element", ir::dtype_name(out.dtype()));
  for (int64_t i = 0; i < out.numel(); ++i)
    std::memcpy(dst + static_cast<size_t>(i) * esz, a->t.data(), esz);
  return Status::ok_status();
}

// start + i * delta: exact for integers, in double for floats (then rounded
// to the output type).
Status run_Range(KernelContext& ctx) {
  Tensor& out = ctx.out(0);
  if (ir::is_integer(out.dtype())) {
    int64_t start = ctx.in(0).get_i64(0), delta = ctx.in(2).get_i64(0);
    for (int64_t i = 0; i < out.numel(); ++i)
      out.set_i64(i, static_cast<int64_t>(static_cast<uint64_t>(start) +
                                          static_cast<uint64_t>(i) * static_cast<uint64_t>(delta)));
  } else {
    double start = ctx.in(0).get_f64(0), delta = ctx.in(2).get_f64(0);
    for (int64_t i = 0; i < out.numel(); ++i)
      out.set_f64(i, start + static_cast<double>(i) * delta);
  }
  return Status::ok_status();
}

// Keeps elements with (col - row) >= k (upper) or <= k (lower) in the last two dims.
Status run_Trilu(KernelContext& ctx) {
  const Tensor& in = ctx.in(0);
  Tensor& out = ctx.out(0);
  int64_t k = ctx.has_input(1) ? ctx.in(1).get_i64(0) : 0;
  bool upper = ctx.attrs().get_int("upper", 1) != 0;
  const Shape& s = in.shape();
  int64_t rows = s[s.size() - 2], cols = s[s.size() - 1];
  if (out.numel() == 0) return Status::ok_status();
  int64_t mats = in.numel() / (rows * cols);
  size_t esz = ir::dtype_size(in.dtype());
  uint8_t* dst = out.mutable_data();  // zero-filled
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        // Compare in 128 bits: k may be any int64.
        __int128 diff = static_cast<__int128>(c) - r;
        bool keep = upper ? diff >= k : diff <= k;
        if (!keep) continue;
        size_t off = static_cast<size_t>((m * rows + r) * cols + c) * esz;
        std::memcpy(dst + off, in.data() + off, esz);
      }
  return Status::ok_status();
}

namespace {
// Copies between the depth layout (N, C*b*b, H, W) and the space layout
// (N, C, H*b, W*b). DCR: depth channel = (bi*b + bj)*C + c;
// CRD: depth channel = c*b*b + bi*b + bj.
void block_copy(const Tensor& depth_or_space, Tensor& out, int64_t b, bool crd,
                bool depth_to_space) {
  const Shape& space = depth_to_space ? out.shape() : depth_or_space.shape();
  const Shape& depth = depth_to_space ? depth_or_space.shape() : out.shape();
  int64_t n_ = space[0], c_ = space[1], h_ = depth[2], w_ = depth[3];
  int64_t dc = depth[1], sh = space[2], sw = space[3];
  size_t esz = ir::dtype_size(out.dtype());
  uint8_t* dst = out.numel() ? out.mutable_data() : nullptr;
  const uint8_t* src = depth_or_space.data();
  for (int64_t n = 0; n < n_; ++n)
    for (int64_t c = 0; c < c_; ++c)
      for (int64_t bi = 0; bi < b; ++bi)
        for (int64_t bj = 0; bj < b; ++bj) {
          int64_t ch = crd ? (c * b + bi) * b + bj : (bi * b + bj) * c_ + c;
          for (int64_t h = 0; h < h_; ++h)
            for (int64_t w = 0; w < w_; ++w) {
              int64_t d_off = ((n * dc + ch) * h_ + h) * w_ + w;
              int64_t s_off = ((n * c_ + c) * sh + h * b + bi) * sw + w * b + bj;
              int64_t from = depth_to_space ? d_off : s_off, to = depth_to_space ? s_off : d_off;
              std::memcpy(dst + static_cast<size_t>(to) * esz,
                          src + static_cast<size_t>(from) * esz, esz);
            }
        }
}
}  // namespace

Status run_DepthToSpace(KernelContext& ctx) {
  block_copy(ctx.in(0), ctx.out(0), ctx.attrs().get_int("blocksize", 1),
             ctx.attrs().get_string("mode", "DCR") == "CRD", true);
  return Status::ok_status();
}

Status run_SpaceToDepth(KernelContext& ctx) {
  block_copy(ctx.in(0), ctx.out(0), ctx.attrs().get_int("blocksize", 1),
             ctx.attrs().get_string("mode", "DCR") == "CRD", false);
  return Status::ok_status();
}

// Indices outside [-depth, depth) give an all-off row (the ONNX rule), not an error.
Status run_OneHot(KernelContext& ctx) {
  const Tensor &indices = ctx.in(0), &values = ctx.in(2);
  Tensor& out = ctx.out(0);
  int64_t r = indices.rank();
  int64_t axis = ctx.attrs().get_int("axis", -1);
  if (axis < 0) axis += r + 1;
  const Shape& os = out.shape();
  auto ax = static_cast<size_t>(axis);
  int64_t depth = os[ax];
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < ax; ++d) outer *= os[d];
  for (size_t d = ax + 1; d < os.size(); ++d) inner *= os[d];
  size_t esz = ir::dtype_size(out.dtype());
  const uint8_t* off_v = values.data();
  const uint8_t* on_v = values.data() + esz;
  if (out.numel() == 0) return Status::ok_status();
  uint8_t* dst = out.mutable_data();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t v = indices.get_i64(o * inner + i);
      if (v < 0) v += depth;
      for (int64_t k = 0; k < depth; ++k)
        std::memcpy(dst + static_cast<size_t>((o * depth + k) * inner + i) * esz,
                    k == v ? on_v : off_v, esz);
    }
  return Status::ok_status();
}

Status run_EyeLike(KernelContext& ctx) {
  Tensor& out = ctx.out(0);  // zero-filled
  int64_t k = ctx.attrs().get_int("k", 0);
  int64_t rows = out.shape()[0], cols = out.shape()[1];
  for (int64_t r = 0; r < rows; ++r) {
    __int128 c = static_cast<__int128>(r) + k;
    if (c >= 0 && c < cols) out.set_i64(r * cols + static_cast<int64_t>(c), 1);
  }
  return Status::ok_status();
}

// Running sum along `axis`, accumulated in the element type (fp16/bf16 in
// float, integers wrapping).
Status run_CumSum(KernelContext& ctx) {
  const Tensor& in = ctx.in(0);
  Tensor& out = ctx.out(0);
  ASSIGN_OR_RETURN(int64_t axis, ir::normalize_axis(ctx.in(1).get_i64(0), in.rank()));
  bool exclusive = ctx.attrs().get_int("exclusive", 0) != 0;
  bool reverse = ctx.attrs().get_int("reverse", 0) != 0;
  const Shape& s = in.shape();
  auto ax = static_cast<size_t>(axis);
  int64_t outer = 1, inner = 1, dim = s[ax];
  for (size_t d = 0; d < ax; ++d) outer *= s[d];
  for (size_t d = ax + 1; d < s.size(); ++d) inner *= s[d];
  if (out.numel() == 0) return Status::ok_status();
  size_t esz = ir::dtype_size(in.dtype());
  uint8_t* dst = out.mutable_data();
  const uint8_t* src = in.data();
  return dm::visit_dtype(in.dtype(), [&](auto tag) {
    using E = dm::Elem<decltype(tag)>;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        typename E::Acc acc{};
        for (int64_t t = 0; t < dim; ++t) {
          int64_t j = reverse ? dim - 1 - t : t;
          auto off = static_cast<size_t>((o * dim + j) * inner + i) * esz;
          typename E::Acc x = E::load(src + off);
          if (!exclusive) acc = E::add(acc, x);
          E::store(dst + off, acc);
          if (exclusive) acc = E::add(acc, x);
        }
      }
  });
}

}  // namespace graphc::reference::kernels
