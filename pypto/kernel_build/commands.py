"""The compiler command lines of kernel builds, and the text the build reads back: the
``build.ninja`` shell quoting, compiler depfiles and trimmed diagnostics."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pypto.kernel_build.toolchain import Toolchain

_MAX_DIAG_LINES = 40
_MAX_DIAG_CHARS = 4000
# Generated kernels are loops of ISA calls into libpypto_sim (no C++ runtime, no floating-point
# code of their own), so they are optimised less and linked without the default libraries:
# ~25 ms less per first call. libgcc stays for compiler helper routines; C library calls
# resolve at load time (RTLD_NOW, checked at compile). Hand-written kernels get the full link.
# The compile part is also what cmake/PyptoKernelPch.cmake precompiles kernel.hpp with.
GENERATED_CXX_FLAGS = ("-O1",)
GENERATED_FLAGS = (*GENERATED_CXX_FLAGS, "-nodefaultlibs", "-lgcc")


def compile_command(
    src: Path, out: Path, include_dirs: Sequence[Path], tc: Toolchain, extra: Sequence[str] = ()
) -> list[str]:
    """The compile+link command of one kernel (builds add ``-pipe -MMD -MF <out>.d``)."""
    incs = [*pch_include(tc, extra), f"-I{tc.include_dir}", *(f"-I{d}" for d in include_dirs)]
    cmd = [tc.cxx, *tc.flags, *incs, str(src), "-o", str(out), *link_args(tc)]
    return cmd + list(extra)


def pch_include(tc: Toolchain, extra: Sequence[str]) -> list[str]:
    """``-I`` of the precompiled ``kernel.hpp``, searched before the header, when this compile's
    flags are exactly the ones it was built with (gcc accepts some mismatches; we never rely on
    that). gcc skips a ``.gch`` it cannot use and goes on to the header itself."""
    if tc.pch_dir is None or tuple(extra) != GENERATED_FLAGS:
        return []
    return [f"-I{tc.pch_dir}"] if tc.pch_flags == (*tc.flags, *GENERATED_CXX_FLAGS) else []


def extra_flags(source) -> tuple[str, ...]:
    """The flags a source gets beyond the toolchain's: ``GENERATED_FLAGS`` for generated code."""
    return GENERATED_FLAGS if source.code is not None else ()


def link_args(tc: Toolchain) -> list[str]:
    link = [*tc.ldflags]
    if tc.libs:
        link += [f"-L{tc.lib_dir}", *(f"-l{lib}" for lib in tc.libs), f"-Wl,-rpath,{tc.lib_dir}"]
    return link


def shell(*args: str) -> str:
    """Shell-quoted words, escaped for a ninja variable value."""
    import shlex  # a build's (0.6 ms with re loaded): never on a cache hit

    return shlex.join(args).replace("$", "$$")


def ninja_path(path: str) -> str:
    return path.replace("$", "$$").replace(" ", "$ ").replace(":", "$:")


def parse_depfile(text: str) -> list[str]:
    """The prerequisites of a compiler's make-style depfile (``-MMD``): ``out: a.cpp b.h \\``
    lines, with ``\\ `` for a space in a path and ``$$`` for ``$``."""
    body = text.replace("\\\n", " ").replace("\\\r\n", " ")
    _, sep, rest = body.partition(": ")
    if not sep:
        return []
    deps, word, i = [], [], 0
    while i < len(rest):
        c = rest[i]
        if c == "\\" and i + 1 < len(rest) and rest[i + 1] in " #":
            word.append(rest[i + 1])
            i += 2
            continue
        if c == "$" and rest[i + 1 : i + 2] == "$":
            word.append("$")
            i += 2
            continue
        if c.isspace():
            if word:
                deps.append("".join(word))
                word = []
        else:
            word.append(c)
        i += 1
    if word:
        deps.append("".join(word))
    return deps


def trim(log: str) -> str:
    """At most ``_MAX_DIAG_LINES`` lines, starting just before the first error."""
    lines = log.rstrip().splitlines()
    first = next((i for i, line in enumerate(lines) if "error" in line), 0)
    start = max(0, first - 2) if len(lines) > _MAX_DIAG_LINES else 0
    kept = lines[start : start + _MAX_DIAG_LINES]
    text = "\n".join(kept)[:_MAX_DIAG_CHARS]
    dropped = len(lines) - len(kept)
    return text + (f"\n... ({dropped} more lines)" if dropped > 0 else "")
