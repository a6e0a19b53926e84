#include "reference/kernels_dm_util.h"

#include <cmath>

namespace graphc::reference::dm {

void strided_copy(uint8_t* dst, const ir::Shape& out_shape, const uint8_t* src, int64_t base,
                  const std::vector<int64_t>& strides, size_t esz) {
  int64_t n = ir::shape_numel(out_shape);
  if (n <= 0) return;
  auto rank = static_cast<int64_t>(out_shape.size());
  std::vector<int64_t> idx(out_shape.size(), 0);
  int64_t off = base;
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(dst + static_cast<size_t>(i) * esz, src + static_cast<size_t>(off) * esz, esz);
    for (int64_t d = rank - 1; d >= 0; --d) {
      auto du = static_cast<size_t>(d);
      if (++idx[du] < out_shape[du]) {
        off += strides[du];
        break;
      }
      off -= strides[du] * (out_shape[du] - 1);
      idx[du] = 0;
    }
  }
}

Expected<int64_t> read_index(const ir::Tensor& indices, int64_t i, int64_t dim, const char* what) {
  int64_t v = indices.get_i64(i);
  int64_t w = v < 0 ? v + dim : v;
  if (w < 0 || w >= dim)
    return invalid_argument(
        "{} value {} (at flat position {}) is out of range for a dim of size {}", what, v, i, dim);
  return w;
}

Expected<Reduction> parse_reduction(const std::string& name) {
  if (name == "none") return Reduction::kNone;
  if (name == "add") return Reduction::kAdd;
  if (name == "mul") return Reduction::kMul;
  if (name == "max") return Reduction::kMax;
  if (name == "min") return Reduction::kMin;
  return invalid_model("reduction '{}' is not one of none, add, mul, max, min", name);
}

namespace {
template <typename T>
void reduce_typed(Reduction r, uint8_t* dst, const uint8_t* src) {
  using E = Elem<T>;
  auto a = E::load(dst), b = E::load(src);
  switch (r) {
    case Reduction::kNone: E::store(dst, b); return;
    case Reduction::kAdd: E::store(dst, E::add(a, b)); return;
    case Reduction::kMul: E::store(dst, E::mul(a, b)); return;
    case Reduction::kMax:
      if constexpr (std::is_floating_point_v<decltype(a)>)
        E::store(dst, std::isnan(a) || std::isnan(b) ? a + b : std::max(a, b));
      else
        E::store(dst, std::max(a, b));
      return;
    case Reduction::kMin:
      if constexpr (std::is_floating_point_v<decltype(a)>)
        E::store(dst, std::isnan(a) || std::isnan(b) ? a + b : std::min(a, b));
      else
        E::store(dst, std::min(a, b));
      return;
  }
}
}  // namespace

void reduce_into(ir::DType dt, Reduction r, uint8_t* dst, const uint8_t* src) {
  Status st = visit_dtype(dt, [&](auto tag) { reduce_typed<decltype(tag)>(r, dst, src); });
  (void)st;  // dtypes were validated by the shape rule
}

}  // namespace graphc::reference::dm
