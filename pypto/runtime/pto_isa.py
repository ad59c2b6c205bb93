"""Where the kernel ISA's headers are: upstream PyPTO's ``pto_isa_include_dir``.

Upstream resolves a pinned PTO-ISA checkout for hand-written kernels to include. pypto's kernel
ISA is ``<pypto/kernel.hpp>`` (and the C ABI ``<pypto/abi.h>``), shipped inside the package, so
the include folder is the installed one. A kernel that includes vendor headers (``pto/pto-inst.hpp``,
``kernel_operator.h``, ``tensor.h``, ...) finds none of them there: its build fails with a
``KernelBuildError`` carrying the compiler's "No such file or directory" line.
"""

from __future__ import annotations

from pathlib import Path

from pypto.kernel_build.toolchain import toolchain


def pto_isa_include_dir() -> Path:
    """The folder holding ``pypto/kernel.hpp`` (pass it in a kernel's ``include_dirs``)."""
    return Path(toolchain().include_dir).resolve()


def ensure_pto_isa_root() -> str:
    """The folder above the include folder (upstream: the ISA checkout's root)."""
    return str(pto_isa_include_dir().parent)
