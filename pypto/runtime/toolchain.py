"""The C++ toolchain kernels are built with: the compiler, flags, headers and library that the
native build recorded in ``build_info.json`` next to ``pypto._native``.

:func:`toolchain` returns it (cached per process). Its :attr:`Toolchain.fingerprint` is part
of every kernel's cache key, so a new compiler, new flags, a new pypto version or an edited
kernel-facing header each invalidate previously built kernels. Tests and tools that do not
have the native build construct one with :meth:`Toolchain.create`.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from pypto import knobs
from pypto._light import Logger, sha256
from pypto.errors import PyptoError

logger = Logger(__name__)

BUILD_INFO_NAME = "build_info.json"
DEFAULT_FLAGS: tuple[str, ...] = ("-std=c++17", "-O2", "-fPIC", "-fno-math-errno")
DEFAULT_LDFLAGS: tuple[str, ...] = ("-shared",)


@dataclass(frozen=True)
class Toolchain:
    """A compiler plus everything a kernel compile and link needs.

    ``fingerprint`` is a sha256 over the compiler id, flags, libraries, versions and the
    content of every file under ``include_dir``; it is computed once, when the object is made.
    """

    cxx: str
    compiler_id: str
    flags: tuple[str, ...]
    ldflags: tuple[str, ...]
    include_dir: Path
    lib_dir: Path
    libs: tuple[str, ...] = ()
    version: str = "0"
    abi_version: int = 1
    fingerprint: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Normalise what callers may pass as lists / strings, then fingerprint once.
        object.__setattr__(self, "flags", tuple(self.flags))
        object.__setattr__(self, "ldflags", tuple(self.ldflags))
        object.__setattr__(self, "libs", tuple(self.libs))
        object.__setattr__(self, "include_dir", Path(self.include_dir).absolute())
        object.__setattr__(self, "lib_dir", Path(self.lib_dir).absolute())
        object.__setattr__(self, "fingerprint", _fingerprint(self))

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
        return cls(
            cxx=cxx,
            compiler_id=compiler_id,
            flags=tuple(info["cxx_flags"]),
            ldflags=tuple(info["ldflags"]),
            include_dir=base / info["include_dir"],
            lib_dir=base / info["lib_dir"],
            libs=tuple(info["libs"]),
            version=str(info["version"]),
            abi_version=int(info["abi_version"]),
        )


def toolchain() -> Toolchain:
    """The toolchain of the installed native build, honouring ``PYPTO_CXX``; cached per process."""
    return _installed_toolchain(knobs.cxx())


@functools.cache
def _installed_toolchain(cxx_override: str | None) -> Toolchain:
    return Toolchain.from_build_info(native_dir() / BUILD_INFO_NAME, cxx_override=cxx_override)


def native_dir() -> Path:
    """The folder holding the compiled ``pypto._native`` module and its build outputs.

    Found through the import system, not ``pypto.__file__``: in an editable install the Python
    sources and the built files live in different folders.
    """
    spec = importlib.util.find_spec("pypto._native")
    if spec is None or spec.origin is None:
        raise PyptoError(
            "pypto's native module (pypto._native) is not built; install pypto with "
            "`pip install .` (or an editable install) before building kernels"
        )
    return Path(spec.origin).parent


def detect_compiler_id(cxx: str) -> str:
    """The first line of ``cxx --version``, e.g. ``c++ (Debian 12.2.0-14) 12.2.0``."""
    import subprocess

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
        return recorded, recorded_id  # the common case, without importing shutil
    import shutil

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


def _fingerprint(tc: Toolchain) -> str:
    digest = sha256()
    settings = [tc.compiler_id, tc.flags, tc.ldflags, tc.libs, tc.version, tc.abi_version]
    digest.update(json.dumps(settings).encode())
    if tc.include_dir.is_dir():
        for path in sorted(p for p in tc.include_dir.rglob("*") if p.is_file()):
            digest.update(path.relative_to(tc.include_dir).as_posix().encode() + b"\0")
            digest.update(sha256(path.read_bytes()).digest())
    return digest.hexdigest()
