// The Python module's native part, meshplan._meshplan: api::Call (include/meshplan/api.hpp)
// with the GIL released, so that other Python threads run during a search. The Python
// wrapper (python/meshplan/__init__.py) turns the JSON into Python data and errors into
// exceptions.
#include <pybind11/pybind11.h>

#include <string>
#include <utility>

#include "meshplan/api.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_meshplan, m) {
  m.doc() = "meshplan's commands on JSON requests (use the meshplan package, not this module)";
  m.def(
      "call",
      [](const std::string& command, const std::string& request) {
        // Files are the caller's to name: model, system and hwdb may be paths.
        const meshplan::api::Answer a = meshplan::api::Call(command, request, {true, 0, 0});
        return std::make_pair(a.status, a.body);
      },
      py::arg("command"), py::arg("request"), py::call_guard<py::gil_scoped_release>(),
      "Runs a meshplan command ('plan', 'check', 'explain', 'validate', 'models', 'systems', 'gpus') on a JSON "
      "request; returns (HTTP-like status, JSON text). Never raises for bad input.");
}
