"""A kernel translation unit to build (:class:`KernelSource`) and one build job of it."""

from __future__ import annotations

import re
from pathlib import Path

from pypto._light import Record, sha256
from pypto.errors import KernelBuildError, PyptoError

_PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_STEM_MAX = 96  # well below the 255 bytes a file name may take, leaving room for suffixes


def file_stem(name: str) -> str:
    """``name`` as a file name: itself when it is plain ASCII and short, else its plain
    characters (others as ``_``) cut short, with a digest of the whole name to keep it unique
    (a kernel named in another script, or after a 250-character ``name_hint``)."""
    if _PLAIN_NAME.fullmatch(name) and len(name) <= _STEM_MAX:
        return name
    plain = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[: _STEM_MAX - 13].lstrip(".")
    return f"{plain}-{sha256(name.encode()).hexdigest()[:12]}"


class KernelSource(Record):
    """One kernel translation unit: generated ``code``, or a ``path`` to a ``.cpp`` (exactly one).

    A ``path`` source is compiled in place, so its relative ``#include``s work; ``include_dirs``
    are extra ``-I`` folders. ``name`` labels the kernel in file names and error messages.
    A frozen Record, not a dataclass: a program-cache hit makes these without the decorator's cost.
    """

    __slots__ = ("name", "code", "path", "include_dirs")
    name: str
    code: str | None
    path: Path | None
    include_dirs: tuple[Path, ...]

    def __init__(
        self,
        name: str,
        code: str | None = None,
        path: Path | None = None,
        include_dirs: tuple[Path, ...] = (),
    ) -> None:
        if (code is None) == (path is None):
            raise PyptoError(f"kernel {name!r}: give exactly one of `code` and `path`")
        if not isinstance(name, str) or not name or any(c in name for c in "/\\\0"):
            raise PyptoError(f"kernel name {name!r} must be a non-empty name without / \\ or NUL")
        dirs = tuple(Path(d).absolute() for d in include_dirs)
        for field, value in zip(
            self.__slots__, (name, code, None if path is None else Path(path).absolute(), dirs)
        ):
            object.__setattr__(self, field, value)

    @property
    def stem(self) -> str:
        """The name of the kernel's files (see :func:`file_stem`)."""
        return file_stem(self.name)

    def read(self) -> bytes:
        """The source bytes; a missing file is a :class:`KernelBuildError` naming its path."""
        if self.code is not None:
            return self.code.encode()
        assert self.path is not None
        try:
            return self.path.read_bytes()
        except OSError as exc:
            raise KernelBuildError(
                f"kernel {self.name!r}: cannot read source {self.path}: {exc.strerror}"
            ) from None


class Job:
    """A kernel of this call: its key, where it is compiled, where its cache entry lives."""

    __slots__ = ("source", "data", "key", "entry", "src_file", "out", "status")

    def __init__(self, source: KernelSource, data: bytes, key: str, entry: Path) -> None:
        self.source = source
        self.data = data
        self.key = key
        self.entry = entry
        self.src_file: Path | None = None  # the file the compiler reads; set once the build dir is known
        self.out: Path | None = None  # the .so the compiler writes
        self.status: int | None = None  # the compile+link command's exit status (-N: killed by signal N)
