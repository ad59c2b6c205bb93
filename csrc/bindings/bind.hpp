// One bind_<area>.cpp per area; bind_module.cpp calls them in order.
#pragma once
#include <pybind11/pybind11.h>

#include "simulator/platform/platform.hpp"

namespace pypto {
void bind_errors(pybind11::module_& m);
void bind_platform(pybind11::module_& m);
void bind_runtime(pybind11::module_& m);
void bind_tools(pybind11::module_& m);
void bind_compile(pybind11::module_& m);
void bind_isolate(pybind11::module_& m);

// A platform from a Python dict {"name": base platform, <field>: override, ...}.
Platform platform_from_dict(const pybind11::dict& d);
}  // namespace pypto
