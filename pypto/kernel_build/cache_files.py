"""The cache folders' file operations: folders that must be usable, atomic writes, locks, and
file hashes memoised per process.

``digest`` computes a file's sha256 on first sight per process and then trusts it while the
file's (inode, size, mtime) stay the same — except for files modified in the last
``RACY_WINDOW_NS``, which are always re-hashed, because a same-size rewrite within one mtime
tick would otherwise go unnoticed (git's "racily clean" problem).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

from pypto import knobs
from pypto._light import sha256
from pypto.errors import CacheDirError

RACY_WINDOW_NS = 2_000_000_000  # files changed this recently are always re-hashed


def ensure_dir(path: Path) -> Path:
    """``mkdir -p path``; a folder that cannot be created or written is a :class:`CacheDirError`
    naming ``PYPTO_CACHE_DIR`` (inside the cache) or ``output_dir`` (elsewhere)."""
    problem = None
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        problem = "a file is in the way of the folder"
    except OSError as exc:
        problem = f"cannot create the folder ({exc.strerror})"
    if problem is None and not os.access(path, os.W_OK | os.X_OK):
        problem = "the folder is not writable"
    if problem is not None:
        cache = knobs.cache_dir()
        where = f"PYPTO_CACHE_DIR={cache}" if path.is_relative_to(cache) else "output_dir"
        raise CacheDirError(f"{where} is not usable: {path}: {problem}")
    return path


# (inode, size, mtime_ns) -> sha256 for files already hashed in this process.
_memo: dict[Path, tuple[tuple[int, int, int], str]] = {}


def digest(path: Path) -> str | None:
    """sha256 of ``path`` (None if unreadable), memoised while its stat signature holds."""
    try:
        st = path.stat()
    except OSError:
        return None
    sig = (st.st_ino, st.st_size, st.st_mtime_ns)
    memo = _memo.get(path)
    if memo is not None and memo[0] == sig:
        return memo[1]
    try:
        digest = _sha256_file(path)
    except OSError:
        return None
    if time.time_ns() - st.st_mtime_ns > RACY_WINDOW_NS:
        _memo[path] = (sig, digest)
    return digest


def _sha256_file(path: Path) -> str:
    return sha256(path.read_bytes()).hexdigest()


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``path`` (created if needed), released on exit."""
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write ``data`` to a temp file beside ``path`` and rename it over ``path``.

    The temp file's name is this process's id and a random suffix, created exclusively
    (``tempfile.mkstemp`` does the same, but importing ``tempfile`` loads ``random``, ``shutil``
    and the compression modules, a millisecond of a first call's build)."""
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{os.getpid()}-{os.urandom(6).hex()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(f"no free temporary name beside {path}")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
