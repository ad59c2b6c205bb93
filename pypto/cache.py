"""The on-disk cache: what it holds, its size cap, and ``python -m pypto.cache {info,clean}``.

Everything pypto keeps between runs lives under one folder, ``knobs.cache_dir()``
(``$PYPTO_CACHE_DIR``, else ``$XDG_CACHE_HOME/pypto``, else ``~/.cache/pypto``), in areas:

==========  ==================================  ==================================================
area        entries                             last used
==========  ==================================  ==================================================
kernels     ``kernels/<k[:2]>/<key>/``          ``meta.json``'s mtime, refreshed by every hit
programs    ``programs/index/<k[:2]>/<key>.pkl``  its mtime, refreshed by every hit
runs        ``programs/<kernel>-<digest>/``     newest file inside: generated sources, reports,
                                                perf hints, traces (``OPPROF_*``) of runs
                                                without an ``output_dir``
tune        ``tune/<kernel>/``, ``autotune/``   newest file inside: sweep points' folders and
                                                autotune records
tmp         ``tmp/build-*``                     crash leftovers of private build folders
==========  ==================================  ==================================================

**Size cap.** After each build that adds kernels and each new program entry (at most every
``_TRIM_EVERY_S``), :func:`trim` removes the least recently used entries of every area until
the folder is within ``knobs.cache_max_bytes()`` (``$PYPTO_CACHE_MAX_BYTES``, default 2 GiB; 0
turns it off). An entry used in the last ``GRACE_S`` seconds is never removed, whatever the cap
says. Traces are the bulk of run folders; ``clean --traces [DIR]`` removes only the ``OPPROF_*``
folders, of the cache or of a user's ``output_dir``.

**Concurrent processes.** A hit refreshes its entry's time *before* validating and loading it
(:func:`touch`), and the kernel cache publishes under a per-key ``flock``. Removing a kernel entry
takes that lock without waiting (an entry being published is skipped), checks the time again
under it (an entry a process started loading since the scan is skipped), then removes
``meta.json`` first: the publish scheme's commit point, so a reader sees a miss and rebuilds,
never a half-removed entry. A kernel already loaded stays mapped after its file is removed.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

from pypto import knobs
from pypto._light import Record

GRACE_S = 600  # an entry used this recently is in use (or about to be): never evicted
_TOUCH_S = 60  # a hit rewrites its entry's time only when older: most hits write nothing
_TRIM_EVERY_S = 30  # the automatic trim's scan runs at most this often
_META = "meta.json"  # the kernel entry's commit point (pypto.kernel_build.cache)
AREAS = ("kernels", "programs", "runs", "tune", "tmp")


class Entry(Record):
    """One removable unit of the cache: its area, path, size in bytes and last use (seconds
    since the epoch). A Record: this module is loaded by every cache hit."""

    __slots__ = ("area", "path", "bytes", "used")
    area: str
    path: Path
    bytes: int
    used: float

    def __init__(self, area: str, path: Path, bytes: int, used: float) -> None:
        for name, value in zip(self.__slots__, (area, path, bytes, used)):
            object.__setattr__(self, name, value)


def touch(path: Path) -> None:
    """Marks ``path`` (an entry's time-keeping file) used now; never fails (a read-only cache
    cannot be trimmed either)."""
    with contextlib.suppress(OSError):
        if time.time() - path.stat().st_mtime > _TOUCH_S:
            os.utime(path)


def entries(root: Path | None = None) -> list[Entry]:
    """Every entry of every area under ``root`` (default: the cache folder)."""
    root = root if root is not None else knobs.cache_dir()
    found: list[Entry] = []
    for entry_dir in _children(root / "kernels", depth=2, dirs=True):
        found.append(_entry("kernels", entry_dir, entry_dir / _META))
    for pkl in _children(root / "programs" / "index", depth=2, dirs=False):
        found.append(_entry("programs", pkl, pkl))
    for run in _children(root / "programs", depth=1, dirs=True):
        if run.name != "index":
            found.append(_entry("runs", run, None))
    for folder in ("tune", "autotune"):
        found += [_entry("tune", p, None) for p in _children(root / folder, depth=1, dirs=None)]
    found += [_entry("tmp", p, None) for p in _children(root / "tmp", depth=1, dirs=None)]
    return found


def _children(folder: Path, *, depth: int, dirs: bool | None) -> Iterator[Path]:
    """Paths ``depth`` levels below ``folder``: folders (True), files (False) or both (None);
    names starting with ``.`` (atomic writes in flight) and ``.lock`` files are skipped."""
    try:
        items = list(os.scandir(folder))
    except OSError:
        return
    for item in items:
        if item.name.startswith(".") or item.name.endswith(".lock"):
            continue
        is_dir = item.is_dir(follow_symlinks=False)
        if depth > 1:
            if is_dir:
                yield from _children(Path(item.path), depth=depth - 1, dirs=dirs)
        elif dirs is None or dirs == is_dir:
            yield Path(item.path)


def _entry(area: str, path: Path, clock: Path | None) -> Entry:
    """``path``'s size and last use: ``clock``'s mtime, else the newest mtime of it and of
    everything inside (a folder's own mtime counts: a build folder just made is still empty)."""
    total, newest = 0, 0.0
    for item, is_file in _walk(path):
        with contextlib.suppress(OSError):  # another process may be removing it meanwhile
            st = os.lstat(item)
            total += st.st_size if is_file else 0
            newest = max(newest, st.st_mtime)
    if clock is not None:
        with contextlib.suppress(OSError):
            newest = clock.stat().st_mtime
    return Entry(area, path, total, newest)


def _walk(path: Path) -> Iterator[tuple[str, bool]]:
    """``path`` and everything below it, with whether each is a file; what vanishes during
    the walk is skipped (``os.walk`` ignores errors)."""
    yield str(path), not path.is_dir()
    for folder, dirs, files in os.walk(path):
        yield from ((os.path.join(folder, d), False) for d in dirs)
        yield from ((os.path.join(folder, f), True) for f in files)


def remove(entry: Entry, *, now: float | None = None) -> bool:
    """Removes ``entry`` unless it is in use; True if it is gone. ``now=None`` (an explicit
    clean) removes whatever its age."""
    if entry.area != "kernels":
        if now is not None and _used(entry) > now - GRACE_S:
            return False
        _rmtree(entry.path)
        return True
    import fcntl

    lock = entry.path.parent / f"{entry.path.name}.lock"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # being published right now
        if now is not None and _used(entry) > now - GRACE_S:
            return False  # a process started using it since the scan
        (entry.path / _META).unlink(missing_ok=True)  # the commit point first: now a miss
        _rmtree(entry.path)
        return True
    finally:
        os.close(fd)


def _used(entry: Entry) -> float:
    return _entry(entry.area, entry.path, entry.path / _META if entry.area == "kernels" else None).used


def _rmtree(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        import shutil  # here: it loads the compression modules, which a cache hit never needs

        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def trim(root: Path | None = None, cap: int | None = None, *, force: bool = False) -> int:
    """Removes least recently used entries until the cache is within ``cap`` bytes (default
    ``knobs.cache_max_bytes()``; 0: no cap). Returns the bytes removed.

    The scan walks the whole folder, so unless ``force`` it runs at most once per
    ``_TRIM_EVERY_S`` per cache (a stamp file's mtime says when it last ran): a burst of builds
    may overshoot the cap until the next scan."""
    cap = knobs.cache_max_bytes() if cap is None else cap
    root = root if root is not None else knobs.cache_dir()
    if cap <= 0 or not (force or _due(root / ".trimmed")):
        return 0
    found = entries(root)
    total = sum(e.bytes for e in found)
    freed, now = 0, time.time()
    for entry in sorted(found, key=lambda e: e.used):
        if total - freed <= cap:
            break
        if entry.used <= now - GRACE_S and remove(entry, now=now):
            freed += entry.bytes
    return freed


def _due(stamp: Path) -> bool:
    """Whether the last scan is older than ``_TRIM_EVERY_S`` (and, if so, claims this one)."""
    try:
        if time.time() - stamp.stat().st_mtime < _TRIM_EVERY_S:
            return False
        os.utime(stamp)
    except FileNotFoundError:
        with contextlib.suppress(OSError):
            stamp.touch()
    except OSError:
        return False
    return True


def clean(areas: tuple[str, ...] = AREAS, older_than_s: float = 0.0, root: Path | None = None) -> int:
    """Removes the entries of ``areas`` last used more than ``older_than_s`` ago (``OPPROF_*``
    trace folders are in ``runs``). Returns the bytes removed."""
    now = time.time()
    freed = 0
    for entry in entries(root):
        if entry.area in areas and entry.used <= now - older_than_s and remove(entry):
            freed += entry.bytes
    return freed


def traces(folder: Path) -> list[Entry]:
    """Every ``OPPROF_*`` trace folder under ``folder`` (a run folder, the cache, any output_dir):
    one per traced launch, named by its time, so they pile up run after run."""
    found = []
    for parent, dirs, _ in os.walk(folder):
        for name in [d for d in dirs if d.startswith("OPPROF_")]:
            found.append(_entry("runs", Path(parent) / name, None))
            dirs.remove(name)  # nothing to find inside one
    return found


def _clean_traces(folder: Path, older_than_s: float) -> int:
    now, freed = time.time(), 0
    for entry in traces(folder):
        if entry.used <= now - older_than_s and remove(entry):
            freed += entry.bytes
    return freed


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError


def _info(root: Path) -> str:
    found = entries(root)
    cap = knobs.cache_max_bytes()
    lines = [f"location: {root}", f"cap:      {_human(cap) if cap else 'none'} (PYPTO_CACHE_MAX_BYTES)"]
    for area in AREAS:
        mine = [e for e in found if e.area == area]
        size = sum(e.bytes for e in mine)
        lines.append(f"{area:9} {len(mine):6} entries  {size:14,} bytes  ({_human(size)})")
    size = sum(e.bytes for e in found)
    lines.append(f"{'total':9} {len(found):6} entries  {size:14,} bytes  ({_human(size)})")
    opprof = traces(root / "programs")
    size = sum(e.bytes for e in opprof)
    lines.append(f"of which {len(opprof)} OPPROF_* trace folders in runs: {size:,} bytes ({_human(size)})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m pypto.cache", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="print the cache's location, entries and bytes per area")
    c = sub.add_parser("clean", help="remove cache entries (all areas unless --area)")
    c.add_argument("--area", action="append", choices=AREAS, help="only this area (repeatable)")
    c.add_argument(
        "--older-than", type=float, default=0.0, metavar="DAYS", help="only entries unused this long"
    )
    c.add_argument(
        "--to-cap", action="store_true", help="only evict least recently used entries down to the cap"
    )
    c.add_argument(
        "--traces", nargs="?", const=True, metavar="DIR",
        help="only the OPPROF_* trace folders: of the cache's run folders, or under DIR (an output_dir)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    root = knobs.cache_dir()
    if args.command == "info":
        print(_info(root))
    elif args.traces:
        where = root / "programs" if args.traces is True else Path(args.traces)
        print(f"removed {_human(_clean_traces(where, args.older_than * 86400))} of traces from {where}")
    elif args.to_cap:
        print(f"removed {_human(trim(root, force=True))} from {root}")
    else:
        freed = clean(tuple(args.area or AREAS), args.older_than * 86400, root)
        print(f"removed {_human(freed)} from {root}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
