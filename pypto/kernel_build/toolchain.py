"""The C++ toolchain kernels are built with: the compiler, flags, headers and library that the
native build recorded in ``build_info.json`` next to ``pypto._native``.

:func:`toolchain` returns it (cached per process). Its :attr:`Toolchain.fingerprint` is part
of every kernel's cache key, so a new compiler, new flags, a new pypto version or an edited
kernel-facing header each invalidate previously built kernels. Tests and tools that do not
have the native build construct one with :meth:`Toolchain.create`.

A gcc build also installs a precompiled ``kernel.hpp`` (``cmake/PyptoKernelPch.cmake``) and a
stamp of what it was built from. gcc checks a ``.gch``'s flags but not that the header is the
one it was made from, and a truncated ``.gch`` is a hard error; so the toolchain only offers it
(:attr:`Toolchain.pch_dir`) when the stamp names this compiler, the file has the recorded size
and every header has the recorded sha256. Without it kernels build the same, just slower.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

from pypto import knobs
from pypto._light import Logger, Record, sha256
from pypto.errors import PyptoError

logger = Logger(__name__)

BUILD_INFO_NAME = "build_info.json"
DEFAULT_FLAGS: tuple[str, ...] = ("-std=c++17", "-O2", "-fPIC", "-fno-math-errno")
DEFAULT_LDFLAGS: tuple[str, ...] = ("-shared",)


class _Fingerprinted(Record):
    """Holds the fingerprint in a slot of its own: a Record compares, hashes, prints and
    pickles by its class's own ``__slots__``, which leaves it out (it is derived from them)."""

    __slots__ = ("fingerprint",)
    fingerprint: str


class Toolchain(_Fingerprinted):
    """A compiler plus everything a kernel compile and link needs.

    ``fingerprint`` is a sha256 over the compiler id, flags, libraries, versions and the
    content of every file under ``include_dir``; it is computed once, when the object is made
    (from ``headers``, the include folder's digests, when the caller already has them). A
    frozen Record rather than a dataclass: every program-cache hit makes one.
    """

    __slots__ = (
        "cxx",
        "compiler_id",
        "flags",
        "ldflags",
        "include_dir",
        "lib_dir",
        "libs",
        "version",
        "abi_version",
        "pch_dir",  # the folder holding pypto/kernel.hpp.gch, if usable
        "pch_flags",  # the exact flags it was compiled with
    )
    cxx: str
    compiler_id: str
    flags: tuple[str, ...]
    ldflags: tuple[str, ...]
    include_dir: Path
    lib_dir: Path
    libs: tuple[str, ...]
    version: str
    abi_version: int
    pch_dir: Path | None
    pch_flags: tuple[str, ...]

    def __init__(
        self,
        cxx: str,
        compiler_id: str,
        flags: tuple[str, ...],
        ldflags: tuple[str, ...],
        include_dir: Path,
        lib_dir: Path,
        libs: tuple[str, ...] = (),
        version: str = "0",
        abi_version: int = 1,
        pch_dir: Path | None = None,
        pch_flags: tuple[str, ...] = (),
        *,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> None:
        # Normalise what callers may pass as lists / strings, then fingerprint once.
        values = (
            cxx,
            compiler_id,
            tuple(flags),
            tuple(ldflags),
            Path(include_dir).absolute(),
            Path(lib_dir).absolute(),
            tuple(libs),
            version,
            abi_version,
            pch_dir,
            tuple(pch_flags),
        )
        for name, value in zip(self.__slots__, values):
            object.__setattr__(self, name, value)
        if headers is None:
            headers = _header_digests(self.include_dir)
        object.__setattr__(self, "fingerprint", _fingerprint(self, headers))

    def replace(self, **changes: Any) -> Toolchain:
        """A copy with ``changes`` (as ``dataclasses.replace``), fingerprinted anew."""
        return Toolchain(**{**dict(zip(self.__slots__, self._values())), **changes})

    @classmethod
    def create(
        cls,
        include_dir: Path,
        *,
        cxx: str = "c++",
        flags: tuple[str, ...] = DEFAULT_FLAGS,
        ldflags: tuple[str, ...] = DEFAULT_LDFLAGS,
        lib_dir: Path | None = None,
        libs: tuple[str, ...] = (),
        version: str = "0",
        abi_version: int = 1,
        compiler_id: str | None = None,
    ) -> Toolchain:
        """An explicit toolchain; the compiler id is probed (``cxx --version``) unless given."""
        return cls(
            cxx=cxx,
            compiler_id=compiler_id if compiler_id is not None else detect_compiler_id(cxx),
            flags=flags,
            ldflags=ldflags,
            include_dir=Path(include_dir),
            lib_dir=Path(lib_dir) if lib_dir is not None else Path(include_dir).parent,
            libs=libs,
            version=version,
            abi_version=abi_version,
        )

    @classmethod
    def from_build_info(cls, info_path: Path, *, cxx_override: str | None = None) -> Toolchain:
        """The toolchain a ``build_info.json`` describes (its dirs are relative to its folder)."""
        info = _read_build_info(info_path)
        base = info_path.parent
        cxx, compiler_id = _choose_compiler(str(info["cxx"]), str(info["compiler_id"]), cxx_override)
        include_dir = base / info["include_dir"]
        headers = _header_digests(include_dir)
        pch = _usable_pch(base / info["pch_dir"], cxx, headers) if "pch_dir" in info else None
        return cls(
            cxx=cxx,
            compiler_id=compiler_id,
            flags=tuple(info["cxx_flags"]),
            ldflags=tuple(info["ldflags"]),
            include_dir=include_dir,
            lib_dir=base / info["lib_dir"],
            libs=tuple(info["libs"]),
            version=str(info["version"]),
            abi_version=int(info["abi_version"]),
            pch_dir=pch[0] if pch else None,
            pch_flags=pch[1] if pch else (),
            headers=headers,
        )


def toolchain() -> Toolchain:
    """The toolchain of the installed native build, honouring ``PYPTO_CXX``; cached per process."""
    return _installed_toolchain(knobs.cxx())


@functools.cache
def _installed_toolchain(cxx_override: str | None) -> Toolchain:
    return Toolchain.from_build_info(native_dir() / BUILD_INFO_NAME, cxx_override=cxx_override)


def native_dir() -> Path:
    """The folder holding the compiled ``pypto._native`` module and its build outputs.

    The module's own file, not ``pypto.__file__``: in an editable install the Python sources
    and the built files live in different folders.
    """
    try:
        from pypto import _native
    except ImportError as exc:
        raise PyptoError(
            "pypto's native module (pypto._native) is not built; install pypto with "
            f"`pip install .` (or an editable install) before building kernels ({exc})"
        ) from None
    return Path(_native.__file__).parent


def detect_compiler_id(cxx: str) -> str:
    """The first line of ``cxx --version``, e.g. ``c++ (Debian 12.2.0-14) 12.2.0``."""
    import subprocess  # here: a call served by the program cache never runs a compiler

    try:
        proc = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PyptoError(f"cannot run the C++ compiler {cxx!r}: {exc}") from None
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise PyptoError(f"`{cxx} --version` failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return lines[0].strip()


_REQUIRED_KEYS = (
    "cxx",
    "compiler_id",
    "cxx_flags",
    "ldflags",
    "include_dir",
    "lib_dir",
    "libs",
    "version",
    "abi_version",
)


def _read_build_info(info_path: Path) -> dict:
    try:
        info = json.loads(info_path.read_text())
    except (OSError, ValueError) as exc:
        raise PyptoError(f"cannot read the native build's toolchain record {info_path}: {exc}") from None
    missing = [k for k in _REQUIRED_KEYS if k not in info]
    if missing:
        raise PyptoError(f"{info_path} lacks the keys {missing}; rebuild pypto's native module")
    return info


def _choose_compiler(recorded: str, recorded_id: str, override: str | None) -> tuple[str, str]:
    """The compiler to use and its id: the override, else the recorded one, else ``c++``."""
    if override:
        return override, detect_compiler_id(override)
    if os.path.isabs(recorded) and os.access(recorded, os.X_OK):
        return recorded, recorded_id  # the common case
    import shutil  # here: it loads the compression modules, which a cache hit never needs

    if shutil.which(recorded):
        return recorded, recorded_id
    # A wheel built elsewhere may record a compiler this machine lacks.
    fallback = shutil.which("c++")
    if fallback is None:
        raise PyptoError(
            f"the recorded C++ compiler {recorded} is missing and no `c++` is on PATH; set PYPTO_CXX"
        )
    logger.warning("recorded C++ compiler %s not found; using %s", recorded, fallback)
    return fallback, detect_compiler_id(fallback)


def _usable_pch(
    pch_dir: Path, cxx: str, headers: list[tuple[str, bytes]]
) -> tuple[Path, tuple[str, ...]] | None:
    """``(pch_dir, its flags)`` if its stamp matches the compiler, the ``.gch`` and ``headers``
    (the include folder's :func:`_header_digests`)."""
    try:
        stamp = json.loads((pch_dir / "stamp.json").read_bytes())
        fits = (
            stamp["cxx"] == cxx
            and (pch_dir / stamp["gch"]).stat().st_size == stamp["gch_size"]
            and (pch_dir / "pypto" / "kernel.hpp").is_file()  # the forwarder to the real header
            and stamp["headers"] == {rel: sha.hex() for rel, sha in headers}
        )
        flags = tuple(stamp["flags"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        logger.debug("not using the precompiled kernel header in %s: %s", pch_dir, exc)
        return None
    if not fits:
        logger.debug("not using the precompiled kernel header in %s: it is stale", pch_dir)
        return None
    return pch_dir.absolute(), flags


def _header_digests(include_dir: Path) -> list[tuple[str, bytes]]:
    """(relative path, sha256) of every file under ``include_dir``, in path order (os.walk:
    a glob would compile a pattern, most of this in a new process's first call)."""
    found: list[Path] = []
    for folder, _, names in os.walk(include_dir):
        found.extend(Path(folder, name) for name in names)
    files = sorted(p for p in found if p.is_file())
    return [(p.relative_to(include_dir).as_posix(), sha256(p.read_bytes()).digest()) for p in files]


def _fingerprint(tc: Toolchain, headers: list[tuple[str, bytes]]) -> str:
    digest = sha256()
    # The precompiled header leaves the output unchanged (tests check it is byte-identical), but
    # whether one is used is keyed anyway, so nothing about a build hides from the key.
    pch = list(tc.pch_flags) if tc.pch_dir is not None else None
    settings = [tc.compiler_id, tc.flags, tc.ldflags, tc.libs, tc.version, tc.abi_version, pch]
    digest.update(json.dumps(settings).encode())
    for rel, sha in headers:
        digest.update(rel.encode() + b"\0")
        digest.update(sha)
    return digest.hexdigest()
