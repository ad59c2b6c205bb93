"""IR → C++: one translation unit per InCore function, against ``<pypto/kernel.hpp>``."""

from pypto.codegen.kernel import CodegenError, generate_kernel, kernel_sources

__all__ = ["CodegenError", "generate_kernel", "kernel_sources"]
