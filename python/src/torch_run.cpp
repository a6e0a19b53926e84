// Context.run's PyTorch fast path (see torch_run.h). Written against the
// CPython API directly: every step of a call is a C call (no interpreted
// bytecode, no per-call Python objects but the result dict), which is where
// the Python version of this path spent its time.
#include "python/src/torch_run.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <string>
#include <vector>

#include "python/src/core/graphc_py.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace graphc::py {
namespace {

// CUDA's handle of the legacy default stream. PyTorch's default stream has
// handle 0, which graphc's Context reads as "the context's own stream"
// (_CU_STREAM_LEGACY in python/graphc/_runtime.py says the same).
constexpr uint64_t kStreamLegacy = 0x1;

nb::str interned(const std::string& s) {
  PyObject* p = PyUnicode_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size()));
  if (!p) throw nb::python_error();
  PyUnicode_InternInPlace(&p);  // callers' literal keys are interned: dict lookups match by pointer
  return nb::steal<nb::str>(p);
}

class TorchRun {
 public:
  // `dtypes` and `shapes`: per binding (inputs, then outputs), the torch
  // dtype (None where torch has none: such a binding never takes this path)
  // and the shape; `device_object` is torch.device("cuda", device) for
  // torch.empty; `current_stream(device)` gives PyTorch's current CUstream.
  TorchRun(nb::object context, nb::handle tensor_type, const std::vector<std::string>& input_names,
           const std::vector<std::string>& output_names, nb::list dtypes,
           const std::vector<std::vector<int64_t>>& shapes, int device, nb::object device_object,
           nb::object empty, nb::object current_stream)
      : context_object_(std::move(context)),
        context_(nb::cast<Context*>(context_object_)),
        device_(device),
        device_long_(nb::int_(device)),
        empty_(std::move(empty)),
        current_stream_(std::move(current_stream)),
        attr_dtype_(interned("dtype")),
        attr_shape_(interned("shape")),
        attr_is_cuda_(interned("is_cuda")),
        attr_get_device_(interned("get_device")),
        attr_is_contiguous_(interned("is_contiguous")),
        attr_data_ptr_(interned("data_ptr")) {
    if (!PyType_Check(tensor_type.ptr())) throw nb::type_error("tensor_type must be a type");
    tensor_type_object_ = nb::borrow(tensor_type);
    tensor_type_ = reinterpret_cast<PyTypeObject*>(tensor_type.ptr());
    const size_t n = input_names.size() + output_names.size();
    if (nb::len(dtypes) != n || shapes.size() != n)
      throw nb::value_error("one dtype and one shape per binding");
    for (size_t i = 0; i < n; ++i) {
      Spec s;
      const bool input = i < input_names.size();
      s.name = interned(input ? input_names[i] : output_names[i - input_names.size()]);
      s.dtype = dtypes[i];
      s.shape = shapes[i];
      if (!input) {
        nb::list dims;
        for (int64_t d : s.shape) dims.append(d);
        s.empty_args = nb::make_tuple(nb::tuple(dims));
        nb::dict kwargs;
        kwargs["dtype"] = s.dtype;
        kwargs["device"] = device_object;
        s.empty_kwargs = std::move(kwargs);
      }
      (input ? inputs_ : outputs_).push_back(std::move(s));
    }
  }

  // The outputs by name, or None when the arguments are not all contiguous
  // torch CUDA tensors of the bindings' dtypes and shapes on the engine's
  // device (the caller then takes the general path). `stream`: a CUstream
  // handle as given (the caller resolved it), or None for PyTorch's current
  // stream. Never waits for the GPU, like any PyTorch op.
  nb::object call(nb::handle inputs, nb::handle outputs, nb::handle stream) {
    if (inputs_.empty()) return nb::none();
    // Owned references: torch's getters could run Python code (a subclass,
    // a TorchFunctionMode) that changes the caller's list or dict.
    std::vector<nb::object> held;
    held.reserve(inputs_.size() + outputs_.size());
    if (!gather(inputs, inputs_, held)) return nb::none();
    std::vector<uint64_t> addresses(inputs_.size() + outputs_.size());
    for (size_t i = 0; i < inputs_.size(); ++i)
      if (!(addresses[i] = address_of(held[i].ptr(), inputs_[i]))) return nb::none();
    if (outputs.is_none()) {
      for (const Spec& s : outputs_)
        if (s.dtype.is_none()) return nb::none();
      for (const Spec& s : outputs_) {
        PyObject* t = PyObject_Call(empty_.ptr(), s.empty_args.ptr(), s.empty_kwargs.ptr());
        if (!t) throw nb::python_error();  // torch's own error (out of memory ...), as torch.empty gives it
        held.push_back(nb::steal(t));
      }
    } else if (!gather(outputs, outputs_, held)) {
      return nb::none();
    }
    for (size_t i = 0; i < outputs_.size(); ++i) {
      const size_t k = inputs_.size() + i;
      if (!(addresses[k] = address_of(held[k].ptr(), outputs_[i]))) return nb::none();
    }
    uint64_t handle = 0;
    if (stream.is_none()) {
      nb::object current = nb::steal(PyObject_CallOneArg(current_stream_.ptr(), device_long_.ptr()));
      if (!current.is_valid()) throw nb::python_error();
      handle = PyLong_AsUnsignedLongLong(current.ptr());
      if (handle == 0) handle = kStreamLegacy;
    } else {
      handle = PyLong_AsUnsignedLongLong(stream.ptr());
    }
    if (handle == static_cast<uint64_t>(-1) && PyErr_Occurred()) throw nb::python_error();
    {
      nb::gil_scoped_release release;  // only around the enqueue: the rest needs the GIL
      context_->run_device(addresses, handle, false);
    }
    nb::dict result;
    for (size_t i = 0; i < outputs_.size(); ++i)
      if (PyDict_SetItem(result.ptr(), outputs_[i].name.ptr(), held[inputs_.size() + i].ptr()) != 0)
        throw nb::python_error();
    return result;
  }

 private:
  struct Spec {
    nb::str name;
    nb::object dtype;
    std::vector<int64_t> shape;
    nb::object empty_args, empty_kwargs;  // outputs: torch.empty's arguments
  };

  // `arrays` as one object per binding: a list or tuple in order, a dict by
  // name (exactly the bindings), or one object for a one-binding side.
  static bool gather(nb::handle arrays, const std::vector<Spec>& specs, std::vector<nb::object>& held) {
    PyObject* a = arrays.ptr();
    if (PyList_Check(a) || PyTuple_Check(a)) {
      if (PySequence_Fast_GET_SIZE(a) != static_cast<Py_ssize_t>(specs.size())) return false;
      PyObject** items = PySequence_Fast_ITEMS(a);
      for (size_t i = 0; i < specs.size(); ++i) held.push_back(nb::borrow(items[i]));
      return true;
    }
    if (PyDict_Check(a)) {
      if (PyDict_GET_SIZE(a) != static_cast<Py_ssize_t>(specs.size())) return false;
      for (const Spec& s : specs) {
        PyObject* t = PyDict_GetItemWithError(a, s.name.ptr());
        if (!t) {
          PyErr_Clear();
          return false;
        }
        held.push_back(nb::borrow(t));
      }
      return true;
    }
    if (specs.size() != 1) return false;
    held.push_back(nb::borrow(arrays));
    return true;
  }

  // An attribute read or call that raised: the general path meets the same
  // error and reports it, so it is cleared here.
  static uint64_t refuse() {
    PyErr_Clear();
    return 0;
  }

  // `t`'s address when it is a contiguous CUDA tensor on the engine's device
  // with the binding's dtype and shape, else 0.
  uint64_t address_of(PyObject* t, const Spec& s) const {
    if (!PyObject_TypeCheck(t, tensor_type_)) return 0;
    nb::object v = nb::steal(PyObject_GetAttr(t, attr_dtype_.ptr()));
    if (!v.is_valid()) return refuse();
    if (!v.is(s.dtype)) return 0;
    v = nb::steal(PyObject_GetAttr(t, attr_shape_.ptr()));
    if (!v.is_valid()) return refuse();
    if (!PyTuple_Check(v.ptr()) || PyTuple_GET_SIZE(v.ptr()) != static_cast<Py_ssize_t>(s.shape.size()))
      return 0;
    for (size_t i = 0; i < s.shape.size(); ++i) {
      PyObject* d = PyTuple_GET_ITEM(v.ptr(), static_cast<Py_ssize_t>(i));
      if (!PyLong_Check(d)) return 0;
      const long long dim = PyLong_AsLongLong(d);
      if (dim == -1 && PyErr_Occurred()) return refuse();
      if (dim != s.shape[i]) return 0;
    }
    v = nb::steal(PyObject_GetAttr(t, attr_is_cuda_.ptr()));
    if (!v.is_valid()) return refuse();
    if (v.ptr() != Py_True) return 0;
    v = nb::steal(PyObject_CallMethodNoArgs(t, attr_get_device_.ptr()));
    if (!v.is_valid()) return refuse();
    const long device = PyLong_AsLong(v.ptr());
    if (device == -1 && PyErr_Occurred()) return refuse();
    if (device != device_) return 0;
    v = nb::steal(PyObject_CallMethodNoArgs(t, attr_is_contiguous_.ptr()));
    if (!v.is_valid()) return refuse();
    if (v.ptr() != Py_True) return 0;
    v = nb::steal(PyObject_CallMethodNoArgs(t, attr_data_ptr_.ptr()));
    if (!v.is_valid()) return refuse();
    const uint64_t address = PyLong_AsUnsignedLongLong(v.ptr());
    if (address == static_cast<uint64_t>(-1) && PyErr_Occurred()) return refuse();
    return address;  // 0 (an empty tensor): the general path reports it
  }

  nb::object context_object_;  // keeps context_ alive
  Context* context_;
  nb::object tensor_type_object_;
  PyTypeObject* tensor_type_ = nullptr;
  long device_;
  nb::object device_long_;
  nb::object empty_, current_stream_;
  nb::str attr_dtype_, attr_shape_, attr_is_cuda_, attr_get_device_, attr_is_contiguous_, attr_data_ptr_;
  std::vector<Spec> inputs_, outputs_;
};

}  // namespace

void bind_torch_run(nb::module_& m) {
  nb::class_<TorchRun>(m, "TorchRun")
      .def(nb::init<nb::object, nb::handle, const std::vector<std::string>&, const std::vector<std::string>&,
                    nb::list, const std::vector<std::vector<int64_t>>&, int, nb::object, nb::object, nb::object>(),
           "context"_a, "tensor_type"_a, "input_names"_a, "output_names"_a, "dtypes"_a, "shapes"_a, "device"_a,
           "device_object"_a, "empty"_a, "current_stream"_a)
      .def("__call__", &TorchRun::call, "inputs"_a, "outputs"_a.none(), "stream"_a.none() = nb::none(),
           "Runs on PyTorch CUDA tensors; None when the general path must run.");
}

}  // namespace graphc::py
