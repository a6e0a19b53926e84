#include "engine_format/shape_range.h"

#include <fmt/ranges.h>

#include <set>

#include "engine_format/conv_params.h"
#include "engine_format/matmul_params.h"
#include "engine_format/sdpa_params.h"
#include "engine_format/validate.h"
#include "support/checked_math.h"

namespace graphc::engine {

namespace {

Status check_size_index(int32_t index, int sizes, const std::string& where) {
  if (index < -1 || index >= sizes)
    return invalid_engine("{}: size index {} is out of range (the engine has {} sizes)", where,
                          index, sizes);
  return Status::ok_status();
}

// The symbols' [min, max] in profile `p` (from the inputs that carry them).
Status profile_symbol_bounds(const Manifest& m, int p, const std::vector<std::vector<int>>& syms,
                             std::vector<int64_t>* lo, std::vector<int64_t>* hi) {
  const ShapeRange& r = m.shape_range();
  const Profile& profile = r.profiles(p);
  lo->assign(static_cast<size_t>(r.symbols_size()), -1);
  hi->assign(static_cast<size_t>(r.symbols_size()), -1);
  for (int i = 0; i < m.inputs_size(); ++i) {
    const Tensor& t = m.tensors(m.inputs(i).tensor());
    const InputRange& in = profile.inputs(i);
    const std::string where = fmt::format("shape profile {} input '{}'", p, m.inputs(i).name());
    if (in.min_size() != t.shape_size() || in.opt_size() != t.shape_size() ||
        in.max_size() != t.shape_size())
      return invalid_engine("{}: min/opt/max have ranks {}/{}/{}, the input {}", where,
                            in.min_size(), in.opt_size(), in.max_size(), t.shape_size());
    for (int d = 0; d < t.shape_size(); ++d) {
      const int64_t mn = in.min(d), op = in.opt(d), mx = in.max(d);
      if (mn < 0 || mn > op || op > mx || mx > kMaxRangeDim)
        return invalid_engine("{} dim {}: range {}/{}/{} is not 0 <= min <= opt <= max <= 2^31",
                              where, d, mn, op, mx);
      const int s = syms[static_cast<size_t>(i)][static_cast<size_t>(d)];
      if (s < 0) {
        if (mn != t.shape(d) || mx != t.shape(d))
          return invalid_engine("{} dim {}: a fixed dim of {} given the range [{}, {}]", where, d,
                                t.shape(d), mn, mx);
        continue;
      }
      auto& a = (*lo)[static_cast<size_t>(s)];
      auto& b = (*hi)[static_cast<size_t>(s)];
      if (a >= 0 && (a != mn || b != mx))
        return invalid_engine("{} dim {}: symbol '{}' has the range [{}, {}] here and [{}, {}] "
                              "at another input",
                              where, d, r.symbols(s), mn, mx, a, b);
      a = mn;
      b = mx;
    }
  }
  return Status::ok_status();
}

}  // namespace

std::vector<SizeProgram> size_programs(const ShapeRange& r) {
  std::vector<SizeProgram> out;
  for (const auto& p : r.sizes()) out.push_back(SizeProgram{{p.code().begin(), p.code().end()}});
  return out;
}

std::vector<std::vector<int>> input_symbols(const Manifest& m) {
  const std::vector<SizeProgram> sizes = size_programs(m.shape_range());
  std::vector<std::vector<int>> out;
  for (const auto& b : m.inputs()) {
    const Tensor& t = m.tensors(b.tensor());
    std::vector<int> dims(static_cast<size_t>(t.shape_size()), -1);
    for (int d = 0; d < t.dim_sizes_size(); ++d)
      if (t.dim_sizes(d) >= 0) dims[static_cast<size_t>(d)] = size_program_symbol(sizes[static_cast<size_t>(t.dim_sizes(d))]);
    out.push_back(std::move(dims));
  }
  return out;
}

// A cuBLASLt matmul with a run-time M (LibraryCall.sizes = [M]): one matrix,
// A not transposed, and only A, C and D vary.
static Status check_matmul_rows(const Manifest& m, const Kernel& kr, int sizes, const std::string& where) {
  const LibraryCall& call = kr.library_call();
  if (call.library() != "cublasLt" || call.op() != "matmul" || call.sizes_size() != 1)
    return invalid_engine("{}: run-time sizes are for a cuBLASLt matmul's M alone ({} {}, {} sizes)",
                          where, call.library(), call.op(), call.sizes_size());
  if (call.sizes(0) < 0 || call.sizes(0) >= sizes)
    return invalid_engine("{}: M's size index {} is out of range (the engine has {} sizes)", where,
                          call.sizes(0), sizes);
  auto p = decode_matmul_params(call.params());
  if (!p.ok()) return p.status().with_context(where);
  if (p->batch != 1 || p->trans_a)
    return invalid_engine("{}: a run-time M needs one matrix and A not transposed", where);
  if (kr.args_size() != p->num_args())
    return invalid_engine("{}: {} arguments for a matmul of {}", where, kr.args_size(), p->num_args());
  for (int i = 0; i < kr.args_size(); ++i) {
    const int32_t t = kr.args(i);
    if (t < 0 || t >= m.tensors_size()) return invalid_engine("{}: argument {} is no tensor", where, i);
    const bool rows = i == 0 || i == p->c_arg() || i == p->d_arg();
    if (!rows && m.tensors(t).dim_sizes_size() > 0)
      return invalid_engine("{}: tensor '{}' varies, but only A, C and D may", where,
                            m.tensors(t).name());
  }
  return Status::ok_status();
}

// At a profile's least and largest shapes M is at least 1 and A, C and D hold
// M rows.
static Status check_matmul_rows_fit(const Manifest& m, const Kernel& kr,
                             const std::vector<SizeProgram>& sizes, const std::vector<int64_t>& lo,
                             const std::vector<int64_t>& hi, int profile) {
  const LibraryCall& call = kr.library_call();
  auto p = decode_matmul_params(call.params());
  if (!p.ok()) return p.status();
  const SizeProgram& rows = sizes[static_cast<size_t>(call.sizes(0))];
  for (const auto* symbols : {&lo, &hi}) {
    auto v = evaluate_size_program(rows, *symbols);
    if (!v.ok() || *v < 1)
      return invalid_engine("kernel '{}': M at profile {}'s {} shapes is {}", kr.name(), profile,
                            symbols == &lo ? "least" : "largest",
                            v.ok() ? std::to_string(*v) : v.status().message());
    engine::MatmulParams at = *p;
    at.m = *v;
    const size_t elem = manifest_dtype_size(at.dtype);
    const std::pair<int, int64_t> extents[] = {
        {0, at.a_extent()}, {at.c_arg(), at.c_extent()}, {at.d_arg(), at.d_extent()}};
    for (const auto& [arg, extent] : extents) {
      if (arg < 0) continue;
      const Tensor& t = m.tensors(kr.args(arg));
      auto bytes = checked_mul(extent, static_cast<int64_t>(elem));
      if (!bytes || static_cast<uint64_t>(*bytes) > t.bytes())
        return invalid_engine("kernel '{}': at profile {}'s {} shapes M = {} needs more than "
                              "tensor '{}''s {} bytes",
                              kr.name(), profile, symbols == &lo ? "least" : "largest", at.m,
                              t.name(), t.bytes());
    }
  }
  return Status::ok_status();
}

// A kernel's preferred cuDNN sdpa (format 6) at a profile's least and
// largest shapes: its params there are valid and every operand fits its
// tensor's bytes (the most the range takes).
static Status check_preferred_sdpa_fits(const Manifest& m, const Kernel& kr,
                                        const std::vector<SizeProgram>& sizes,
                                        const std::vector<int64_t>& lo,
                                        const std::vector<int64_t>& hi, int profile) {
  const LibraryCall& call = kr.preferred_call();
  auto built = decode_sdpa_params(call.params());
  if (!built.ok()) return built.status();
  const std::vector<int32_t> fields(call.sizes().begin(), call.sizes().end());
  for (const auto* symbols : {&lo, &hi}) {
    const char* which = symbols == &lo ? "least" : "largest";
    std::vector<int64_t> values(sizes.size(), 0);
    for (int32_t f : fields) {
      if (f < 0) continue;
      auto v = evaluate_size_program(sizes[static_cast<size_t>(f)], *symbols);
      if (!v.ok()) return v.status().with_context(fmt::format("kernel '{}'", kr.name()));
      values[static_cast<size_t>(f)] = *v;
    }
    auto at = sdpa_params_at(*built, fields, values);
    if (!at.ok())
      return at.status().with_context(
          fmt::format("kernel '{}' at profile {}'s {} shapes", kr.name(), profile, which));
    for (const SdpaOperand& o : sdpa_operands(*at)) {
      const Tensor& t = m.tensors(kr.args(o.arg));
      auto bytes = checked_mul(o.elements, static_cast<int64_t>(manifest_dtype_size(o.dtype)));
      if (!bytes || static_cast<uint64_t>(*bytes) > t.bytes())
        return invalid_engine("kernel '{}': at profile {}'s {} shapes the sdpa's {} needs more "
                              "than tensor '{}''s {} bytes",
                              kr.name(), profile, which, o.role, t.name(), t.bytes());
    }
  }
  return Status::ok_status();
}

// A cuDNN convolution with run-time sizes (LibraryCall.sizes = N, x's and
// y's spatial dims: conv_params.h): the weights and bias do not vary.
static Status check_conv_sizes(const Manifest& m, const Kernel& kr, int sizes,
                               const std::string& where) {
  const LibraryCall& call = kr.library_call();
  auto p = decode_conv_params(call.params());
  if (!p.ok()) return p.status().with_context(where);
  if (call.sizes_size() != conv_range_sizes(p->spatial_rank))
    return invalid_engine("{}: {} run-time sizes for a conv of spatial rank {}", where,
                          call.sizes_size(), p->spatial_rank);
  for (int32_t s : call.sizes())
    if (s < 0 || s >= sizes)
      return invalid_engine("{}: size index {} is out of range (the engine has {} sizes)", where, s,
                            sizes);
  if (kr.args_size() != p->num_args())
    return invalid_engine("{}: {} arguments for a conv of {}", where, kr.args_size(), p->num_args());
  for (int i = 0; i < kr.args_size(); ++i) {
    const int32_t t = kr.args(i);
    if (t < 0 || t >= m.tensors_size()) return invalid_engine("{}: argument {} is no tensor", where, i);
    if ((i == 1 || i == p->bias_arg()) && m.tensors(t).dim_sizes_size() > 0)
      return invalid_engine("{}: tensor '{}' varies, but a conv's weights and bias may not", where,
                            m.tensors(t).name());
  }
  return Status::ok_status();
}

// At a profile's least and largest shapes the conv's sizes make a valid
// descriptor and x, the residual and y hold what it reads and writes.
static Status check_conv_sizes_fit(const Manifest& m, const Kernel& kr,
                                   const std::vector<SizeProgram>& sizes,
                                   const std::vector<int64_t>& lo, const std::vector<int64_t>& hi,
                                   int profile) {
  const LibraryCall& call = kr.library_call();
  auto p = decode_conv_params(call.params());
  if (!p.ok()) return p.status();
  for (const auto* symbols : {&lo, &hi}) {
    const char* which = symbols == &lo ? "least" : "largest";
    std::vector<int64_t> at;
    for (int32_t s : call.sizes()) {
      auto v = evaluate_size_program(sizes[static_cast<size_t>(s)], *symbols);
      if (!v.ok()) return v.status().with_context(fmt::format("kernel '{}'", kr.name()));
      at.push_back(*v);
    }
    auto q = conv_params_at(*p, at);
    if (!q.ok())
      return q.status().with_context(
          fmt::format("kernel '{}' at profile {}'s {} shapes", kr.name(), profile, which));
    const int64_t elem = q->dtype == 1 ? 4 : 2;
    const std::pair<int, int64_t> extents[] = {
        {0, q->x_elements()}, {q->residual_arg(), q->y_elements()}, {q->y_arg(), q->y_elements()}};
    for (const auto& [arg, elements] : extents) {
      if (arg < 0) continue;
      const Tensor& t = m.tensors(kr.args(arg));
      if (static_cast<uint64_t>(elements * elem) > t.bytes())
        return invalid_engine("kernel '{}': at profile {}'s {} shapes the conv needs more than "
                              "tensor '{}''s {} bytes",
                              kr.name(), profile, which, t.name(), t.bytes());
    }
  }
  return Status::ok_status();
}

Status validate_shape_range(const Manifest& m) {
  auto varies = [](const Tensor& t) { return t.dim_sizes_size() > 0; };
  if (!m.has_shape_range()) {
    for (const auto& t : m.tensors())
      if (varies(t)) return invalid_engine("tensor '{}' has run-time dims but the engine no shape range", t.name());
    for (const auto& k : m.kernels())
      if (k.size_block_size() || k.grid_sizes_size() || k.has_preferred_call())
        return invalid_engine("kernel '{}' has run-time sizes but the engine no shape range", k.name());
    return Status::ok_status();
  }
  const ShapeRange& r = m.shape_range();
  if (r.symbols_size() < 1 || static_cast<size_t>(r.symbols_size()) > kMaxSymbols)
    return invalid_engine("shape range: {} symbols (1 to {})", r.symbols_size(), kMaxSymbols);
  std::set<std::string> names;
  for (const auto& s : r.symbols())
    if (s.empty() || !names.insert(s).second)
      return invalid_engine("shape range: symbol '{}' is empty or repeated", s);
  const std::vector<SizeProgram> sizes = size_programs(r);
  for (size_t i = 0; i < sizes.size(); ++i)
    RETURN_IF_ERROR(validate_size_program(sizes[i], static_cast<size_t>(r.symbols_size()))
                        .with_context(fmt::format("shape range size {}", i)));
  const int n = static_cast<int>(sizes.size());
  for (int i = 0; i < m.tensors_size(); ++i) {
    const Tensor& t = m.tensors(i);
    if (!varies(t)) continue;
    const std::string where = fmt::format("manifest tensor {} '{}'", i, t.name());
    if (t.dim_sizes_size() != t.shape_size())
      return invalid_engine("{}: {} dim sizes for rank {}", where, t.dim_sizes_size(), t.shape_size());
    if (t.location() == Tensor::WEIGHTS)
      return invalid_engine("{}: a weight cannot vary with the shape", where);
    for (int32_t s : t.dim_sizes()) RETURN_IF_ERROR(check_size_index(s, n, where));
  }
  // Inputs: varying dims are plain symbols, and every symbol is some input's dim.
  const auto syms = input_symbols(m);
  std::vector<bool> carried(static_cast<size_t>(r.symbols_size()), false);
  for (int i = 0; i < m.inputs_size(); ++i) {
    const Tensor& t = m.tensors(m.inputs(i).tensor());
    for (int d = 0; d < t.dim_sizes_size(); ++d) {
      if (t.dim_sizes(d) < 0) continue;
      const int s = syms[static_cast<size_t>(i)][static_cast<size_t>(d)];
      if (s < 0)
        return invalid_engine("input '{}' dim {}: a varying input dim must be a symbol",
                              m.inputs(i).name(), d);
      carried[static_cast<size_t>(s)] = true;
    }
  }
  for (size_t s = 0; s < carried.size(); ++s)
    if (!carried[s])
      return invalid_engine("shape range: symbol '{}' is no input's dim", r.symbols(static_cast<int>(s)));
  for (int k = 0; k < m.kernels_size(); ++k) {
    const Kernel& kr = m.kernels(k);
    const std::string where = fmt::format("manifest kernel {} '{}'", k, kr.name());
    if (kr.has_library_call() || kr.copy()) {
      if (kr.size_block_size() || kr.grid_sizes_size())
        return invalid_engine("{}: only generated kernels take run-time sizes", where);
      if (!kr.has_library_call()) continue;
      if (kr.library_call().sizes_size() > 0) {
        if (kr.library_call().library() == "cudnn" && kr.library_call().op() == "conv")
          RETURN_IF_ERROR(check_conv_sizes(m, kr, n, where));
        else
          RETURN_IF_ERROR(check_matmul_rows(m, kr, n, where));
        continue;
      }
      for (int32_t a : kr.args())
        if (varies(m.tensors(a)))
          return invalid_engine("{}: a library call on tensor '{}', whose shape varies", where,
                                m.tensors(a).name());
      continue;
    }
    if (kr.has_preferred_call())
      for (int32_t s : kr.preferred_call().sizes())
        RETURN_IF_ERROR(check_size_index(s, n, where + " preferred call"));
    if (kr.grid_sizes_size() != 0 && kr.grid_sizes_size() != 3)
      return invalid_engine("{}: {} grid sizes (0 or 3)", where, kr.grid_sizes_size());
    for (int32_t s : kr.grid_sizes()) RETURN_IF_ERROR(check_size_index(s, n, where));
    for (int32_t s : kr.size_block())
      if (s < 0 || s >= n)
        return invalid_engine("{}: run-time size index {} is out of range (the engine has {})",
                              where, s, n);
    if (!kr.params().empty() && kr.size_block_size() > 0)
      return invalid_engine("{}: both a parameter block and run-time sizes", where);
    if (8 * (static_cast<size_t>(kr.size_block_size()) + static_cast<size_t>(kr.args_size())) >
        kMaxKernelParamBytes)
      return invalid_engine("{}: {} run-time sizes and {} pointers exceed {} bytes of parameters",
                            where, kr.size_block_size(), kr.args_size(), kMaxKernelParamBytes);
  }
  if (r.profiles_size() < 1) return invalid_engine("shape range: no profiles");
  for (int p = 0; p < r.profiles_size(); ++p) {
    if (r.profiles(p).inputs_size() != m.inputs_size())
      return invalid_engine("shape profile {}: ranges for {} inputs, the engine has {}", p,
                            r.profiles(p).inputs_size(), m.inputs_size());
    std::vector<int64_t> lo, hi;
    RETURN_IF_ERROR(profile_symbol_bounds(m, p, syms, &lo, &hi));
    // At the profile's largest dims every tensor fits and every grid is
    // launchable (the runtime checks each shape it is given too).
    for (int i = 0; i < m.tensors_size(); ++i) {
      const Tensor& t = m.tensors(i);
      if (!varies(t)) continue;
      std::vector<int64_t> dims(t.shape().begin(), t.shape().end());
      for (int d = 0; d < t.dim_sizes_size(); ++d)
        if (t.dim_sizes(d) >= 0) {
          auto v = evaluate_size_program(sizes[static_cast<size_t>(t.dim_sizes(d))], hi);
          if (!v.ok() || *v < 0)
            return invalid_engine("tensor '{}' dim {} at profile {}'s largest shapes: {}", t.name(),
                                  d, p, v.ok() ? "negative" : v.status().message());
          dims[static_cast<size_t>(d)] = *v;
        }
      auto numel = checked_numel(dims);
      auto bytes = numel ? checked_mul(*numel, static_cast<int64_t>(manifest_dtype_size(t.dtype())))
                         : std::nullopt;
      if (!bytes || static_cast<uint64_t>(*bytes) > t.bytes())
        return invalid_engine("tensor '{}' takes more than its {} bytes at profile {}'s largest "
                              "shapes",
                              t.name(), t.bytes(), p);
    }
    for (const auto& kr : m.kernels()) {
      if (!kr.has_library_call() || kr.library_call().sizes_size() == 0) continue;
      if (kr.library_call().library() == "cudnn")
        RETURN_IF_ERROR(check_conv_sizes_fit(m, kr, sizes, lo, hi, p));
      else
        RETURN_IF_ERROR(check_matmul_rows_fit(m, kr, sizes, lo, hi, p));
    }
    for (const auto& kr : m.kernels())
      if (kr.has_preferred_call())
        RETURN_IF_ERROR(check_preferred_sdpa_fits(m, kr, sizes, lo, hi, p));
    for (const auto& kr : m.kernels())
      for (int d = 0; d < kr.grid_sizes_size(); ++d) {
        if (kr.grid_sizes(d) < 0) continue;
        auto v = evaluate_size_program(sizes[static_cast<size_t>(kr.grid_sizes(d))], hi);
        if (!v.ok() || *v < 1 || *v > kr.grid(d))
          return invalid_engine("kernel '{}' grid[{}] at profile {}'s largest shapes is outside "
                                "[1, {}]",
                                kr.name(), d, p, kr.grid(d));
      }
  }
  return Status::ok_status();
}

}  // namespace graphc::engine
