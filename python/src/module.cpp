// graphc._graphc: the extension behind the `graphc` Python package. A thin
// nanobind layer over python/src/core/graphc_py.h; the Python package
// (python/graphc) holds the user-facing API, the array protocols and the
// docs. The GIL is released for every call that compiles or touches the GPU.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "python/src/core/graphc_py.h"
#include "python/src/torch_run.h"

namespace nb = nanobind;
using namespace nb::literals;
namespace gp = graphc::py;

namespace {

using release_gil = nb::call_guard<nb::gil_scoped_release>;

// graphc errors become graphc.Error subclasses (graphc/_errors.py picks the
// class from the code), carrying graphc's message.
void translate_error(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const gp::Error& e) {
    try {
      nb::object cls = nb::module_::import_("graphc._errors").attr("error_class")(e.code());
      PyErr_SetString(cls.ptr(), e.what());
    } catch (nb::python_error& pe) {
      pe.restore();  // graphc._errors itself failed: show that
    }
  }
}

// (address, device type, device id, shape, strides in elements or None,
// (dtype code, bits, lanes)) of any DLPack-capable array (JAX, CuPy, ...).
nb::tuple dlpack_info(nb::ndarray<nb::ro> a) {
  nb::list shape, strides;
  for (size_t i = 0; i < a.ndim(); ++i) {
    shape.append(a.shape(i));
    strides.append(a.stride(i));
  }
  auto dt = a.dtype();
  return nb::make_tuple(reinterpret_cast<uintptr_t>(a.data()), a.device_type(), a.device_id(),
                        nb::tuple(shape), nb::tuple(strides),
                        nb::make_tuple(dt.code, dt.bits, dt.lanes));
}

}  // namespace

NB_MODULE(_graphc, m) {
  m.doc() = "graphc's compiler and runtime (use the `graphc` package, not this module)";
  nb::register_exception_translator(translate_error);

  nb::class_<gp::ModelSource>(m, "ModelSource")
      .def(nb::init<>())
      .def_rw("path", &gp::ModelSource::path)
      .def_prop_rw(
          "bytes", [](const gp::ModelSource& s) { return nb::bytes(s.bytes.data(), s.bytes.size()); },
          [](gp::ModelSource& s, nb::bytes b) { s.bytes.assign(b.c_str(), b.size()); })
      .def_rw("display_name", &gp::ModelSource::display_name);

  nb::class_<gp::CompileFlags>(m, "CompileFlags")
      .def(nb::init<>())
      .def_rw("shapes", &gp::CompileFlags::shapes)
      .def_rw("min_shapes", &gp::CompileFlags::min_shapes)
      .def_rw("opt_shapes", &gp::CompileFlags::opt_shapes)
      .def_rw("max_shapes", &gp::CompileFlags::max_shapes)
      .def_rw("profiles", &gp::CompileFlags::profiles)
      .def_rw("precision", &gp::CompileFlags::precision)
      .def_rw("convert_io", &gp::CompileFlags::convert_io)
      .def_rw("disable_passes", &gp::CompileFlags::disable_passes)
      .def_rw("no_optimize", &gp::CompileFlags::no_optimize)
      .def_rw("gemm", &gp::CompileFlags::gemm)
      .def_rw("conv", &gp::CompileFlags::conv)
      .def_rw("attention", &gp::CompileFlags::attention)
      .def_rw("allow_tf32", &gp::CompileFlags::allow_tf32);

  nb::class_<gp::BuildRequest>(m, "BuildRequest")
      .def(nb::init<>())
      .def_rw("model", &gp::BuildRequest::model)
      .def_rw("flags", &gp::BuildRequest::flags)
      .def_rw("archs", &gp::BuildRequest::archs)
      .def_rw("output", &gp::BuildRequest::output)
      .def_rw("tune", &gp::BuildRequest::tune)
      .def_rw("timing_cache", &gp::BuildRequest::timing_cache)
      .def_rw("nvrtc_cache", &gp::BuildRequest::nvrtc_cache)
      .def_rw("jobs", &gp::BuildRequest::jobs);

  m.def(
      "build",
      [](const gp::BuildRequest& r) {
        std::string bytes;
        {
          nb::gil_scoped_release release;
          bytes = gp::build(r);
        }
        return nb::bytes(bytes.data(), bytes.size());
      },
      "request"_a, "Builds an engine: its bytes, or b'' when written to request.output.");
  m.def("inspect_json", &gp::inspect_json, "model"_a, "flags"_a, release_gil(),
        "The `graphc inspect --json` document of a model or an engine.");

  nb::class_<gp::Binding>(m, "Binding")
      .def_ro("name", &gp::Binding::name)
      .def_ro("is_input", &gp::Binding::is_input)
      .def_ro("dtype", &gp::Binding::dtype)
      .def_ro("shape", &gp::Binding::shape)
      .def_ro("bytes", &gp::Binding::bytes);
  m.def("engine_bindings", &gp::engine_bindings, "engine"_a, release_gil(),
        "An engine's bindings, read without a GPU.");

  nb::class_<gp::Engine>(m, "Engine")
      .def_static("load", &gp::Engine::load, "engine"_a, "device"_a, release_gil())
      .def_prop_ro("bindings", &gp::Engine::bindings)
      .def_prop_ro("device", &gp::Engine::device)
      .def_prop_ro("device_name", &gp::Engine::device_name)
      .def_prop_ro("weights_bytes", &gp::Engine::weights_bytes)
      .def_prop_ro("arena_bytes", &gp::Engine::arena_bytes)
      .def("create_context", &gp::Engine::create_context, release_gil())
      .def_prop_ro("has_shape_ranges", &gp::Engine::has_shape_ranges)
      .def_prop_ro("num_profiles", &gp::Engine::num_profiles)
      .def("input_range", &gp::Engine::input_range, "name"_a, "profile"_a);

  nb::class_<gp::Context>(m, "Context")
      .def("run_device", &gp::Context::run_device, "addresses"_a, "stream"_a, "synchronize"_a,
           release_gil())
      .def("run_host", &gp::Context::run_host, "addresses"_a, release_gil())
      .def("synchronize", &gp::Context::synchronize, release_gil())
      .def_prop_ro("stream", &gp::Context::stream)
      .def("set_profile", &gp::Context::set_profile, "profile"_a)
      .def("set_input_shapes", &gp::Context::set_input_shapes, "shapes"_a)
      .def("binding_shapes", &gp::Context::binding_shapes)
      .def("binding_bytes", &gp::Context::binding_bytes)
      .def("time_enqueue_us", &gp::Context::time_enqueue_us, "addresses"_a, "stream"_a,
           "iterations"_a, release_gil());

  m.def("dlpack_info", &dlpack_info, "array"_a);
  gp::bind_torch_run(m);
}
