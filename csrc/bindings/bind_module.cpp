#include "bindings/bind.hpp"
#include "pypto/abi.h"

PYBIND11_MODULE(_native, m) {
  m.doc() = "pypto native core: ISA library, simulated AI cores, kernel loader";
  m.attr("abi_version") = PYPTO_ABI_VERSION;
  pypto::bind_errors(m);
  pypto::bind_platform(m);
  pypto::bind_runtime(m);
  pypto::bind_tools(m);
  pypto::bind_compile(m);
  pypto::bind_isolate(m);
}
