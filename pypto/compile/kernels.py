"""An Artifact's kernels in the kernel cache: each is loaded before it is trusted, and a cached
kernel that does not load is evicted (the next build makes it again)."""

from __future__ import annotations

from pathlib import Path

from pypto import _native
from pypto import kernel_build as build
from pypto.errors import KernelLoadError
from pypto.kernel_build import KernelSource, build_kernels
from pypto.kernel_build.cache import evict


def check_loadable(paths: dict[str, Path], sources: list[KernelSource], platform: str) -> None:
    """Loads each kernel, so a missing entry point is a compile error naming the file. A cached
    kernel that passed validation yet does not load is never trusted again: its entry is
    evicted and the kernel rebuilt once (``paths`` is updated in place)."""
    for src in sources:
        try:
            _native.load_kernel(str(paths[src.name]))
        except KernelLoadError as e:
            if evict_unloadable(paths[src.name], e):
                paths[src.name] = build_kernels([src], platform=platform)[0]
                check_loadable(paths, [src], platform)
                continue
            where = src.path if src.path is not None else f"generated kernel {src.name}"
            raise KernelLoadError(f"{where}: {e.message}") from None


def cached_kernels(entries: dict[str, str]) -> dict[str, Path] | None:
    """The loaded shared object of each kernel-cache entry (paths relative to the cache); None
    when one left the cache or does not load (that one is evicted)."""
    root = build.kernel_cache_dir()
    kernels = {}
    for name, rel in entries.items():
        so = build.lookup_entry(root / rel)
        if so is None:
            return None
        try:
            _native.load_kernel(str(so))
        except KernelLoadError as e:
            evict_unloadable(so, e)
            return None
        kernels[name] = so
    return kernels


def evict_unloadable(so: Path, error: KernelLoadError) -> bool:
    """Evicts ``so``'s kernel cache entry (it does not load); False if ``so`` is not in the cache."""
    if not so.is_relative_to(build.kernel_cache_dir()):
        return False
    evict(so.parent, error.message)
    return True
