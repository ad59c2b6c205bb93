"""Build kernel translation units into loadable shared objects, through a content-addressed cache.

One entry point, :func:`build_kernels` (and :func:`build_kernel` for one source), serves generated
kernels and hand-written ``external_source`` ones alike.

Cache key: sha256 of the source bytes, the toolchain fingerprint (compiler id, flags, pypto
version, ABI, every kernel-facing header, whether the precompiled ``kernel.hpp`` is used), the
platform, the include dirs and, for a file source, its path (its relative ``#include``s resolve
against its folder). Headers outside the toolchain
(a user's own, found through the compiler's depfile) are recorded with their sha256 in the entry's
``meta.json``; if one changes, the entry is stale and is rebuilt.

Layout::

    $PYPTO_CACHE_DIR/kernels/<key[:2]>/<key>/kernel-<sha256[:16]>.so
    $PYPTO_CACHE_DIR/kernels/<key[:2]>/<key>/meta.json  # .so name, sha256, size; headers; command
    $PYPTO_CACHE_DIR/kernels/<key[:2]>/<key>.lock        # flock held while publishing
    $PYPTO_CACHE_DIR/tmp/build-*/                        # private build dirs (removed)

The ``.so`` is named by its own hash, not plain ``kernel.so``: when a header edit rebuilds an
entry, the new file gets a new path, so a process that loaded the old one does not get the old
code back from ``dlopen`` (which returns an already-loaded library by path).

Misses are compiled by running one compile+link command per kernel (``PYPTO_BUILD_JOBS`` at a
time, each with a gcc depfile; a ``build.ninja`` describing the same edges is written beside them
for rebuilding by hand). The depfile comes from ``-MMD``, not ``-MD``: system headers change only
with the compiler, which the fingerprint covers, and re-hashing the C++ standard library on every
lookup would cost milliseconds.

Publishing: a result is published only after a verified build — the command exited 0, the file
is a complete ELF shared object (``verify.elf_problem``: a linker killed mid-write leaves a
prefix) and it loads and exports ``kernel_entry`` — and atomically: under the key's lock the
``.so`` is renamed into place, loaded, and only then ``meta.json`` (the commit point) is
renamed in, so a failure at any step leaves a miss. Concurrent builders of one kernel all
succeed and leave one valid entry. Ctrl-C during a build kills the compilers (with their
children) before the interrupt propagates.

Validation on a hit: ``meta.json`` parses, the ``.so`` has the recorded size, its sha256
matches (``cache_files.digest``: hashed once per process while the file's inode, size and
mtime hold, racily-clean files always re-hashed) and it is a complete ELF shared object.
Recorded headers use the same memo. An entry that passes and still does not load is evicted and
rebuilt by the compile that found it (``cache.evict``); a bad entry is never trusted.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

from pypto import knobs
from pypto.cache import trim as trim_cache
from pypto.errors import PyptoError
from pypto.kernel_build.cache import cache_key, kernel_cache_dir, lookup, lookup_entry, plan
from pypto.kernel_build.cache_files import atomic_write, ensure_dir
from pypto.kernel_build.commands import parse_depfile
from pypto.kernel_build.source import Job, KernelSource
from pypto.kernel_build.toolchain import Toolchain
from pypto.kernel_build.toolchain import toolchain as installed_toolchain

__all__ = [
    "KernelSource",
    "build_kernel",
    "build_kernels",
    "cache_key",
    "installed_toolchain",
    "kernel_cache_dir",
    "lookup_entry",
    "parse_depfile",
]


def build_kernel(
    source: KernelSource,
    *,
    platform: str,
    output_dir: Path | None = None,
    toolchain: Toolchain | None = None,
) -> Path:
    """Build one kernel; see :func:`build_kernels`."""
    return build_kernels([source], platform=platform, output_dir=output_dir, toolchain=toolchain)[0]


def build_kernels(
    sources: Sequence[KernelSource],
    *,
    platform: str,
    output_dir: Path | None = None,
    toolchain: Toolchain | None = None,
) -> list[Path]:
    """Build ``sources`` for ``platform``; returns, in order, the cached ``.so`` of each.

    Cache hits cost a lookup; the misses are compiled in parallel. With ``output_dir``,
    generated sources are also written to ``output_dir/kernels/<name>.cpp`` and the build
    (``build.ninja``, logs, depfiles) lives in ``output_dir/build/``. A compiler failure raises
    :class:`KernelBuildError` with the compiler's diagnostics (the other kernels are still cached).
    """
    tc = toolchain if toolchain is not None else installed_toolchain()
    root = kernel_cache_dir()
    if output_dir is not None:
        output_dir = Path(output_dir).absolute()
    jobs = [plan(src, tc, platform, root) for src in sources]
    _check_names(jobs)
    if output_dir is not None:
        _write_generated_sources(jobs, output_dir / "kernels")
    found: dict[str, Path] = {}
    misses: dict[str, Job] = {}
    reuse = not knobs.recompile()
    for job in jobs:
        if job.key not in found and job.key not in misses:
            so = lookup(job.entry, warn=True) if reuse else None
            if so is not None:
                found[job.key] = so
            else:
                misses[job.key] = job
    if misses:
        # Imported here: the builder's module serves misses only.
        from pypto.kernel_build.ninja import build_and_publish

        found.update(build_and_publish(list(misses.values()), tc, platform, output_dir))
        trim_cache()
    return [found[job.key] for job in jobs]


def _check_names(jobs: list[Job]) -> None:
    """Generated sources share ``kernels/<name>.cpp``, so one name must mean one code."""
    seen: dict[str, bytes] = {}
    for job in jobs:
        if job.source.code is None:
            continue
        if seen.setdefault(job.source.stem, job.data) != job.data:
            raise PyptoError(f"two different kernels are both named {job.source.name!r}")


def _write_generated_sources(jobs: list[Job], folder: Path) -> None:
    """Each generated source into ``folder``, rewritten only when it changed (a hit in a
    read-only cache writes nothing)."""
    for job in jobs:
        if job.source.code is None:
            continue
        job.src_file = folder / f"{job.source.stem}.cpp"
        with contextlib.suppress(OSError):
            if job.src_file.read_bytes() == job.data:
                continue  # unchanged: keep its mtime
        ensure_dir(folder)
        atomic_write(job.src_file, job.data)
