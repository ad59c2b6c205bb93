"""The content-addressed kernel cache: keys, lookup and validation, publishing an entry.

See :mod:`pypto.kernel_build` for the layout and the rules.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from pypto import _native, knobs
from pypto._light import Logger, sha256
from pypto.cache import touch
from pypto.errors import KernelBuildError, KernelLoadError
from pypto.kernel_build.cache_files import atomic_write, digest, ensure_dir, file_lock
from pypto.kernel_build.commands import compile_command, extra_flags, parse_depfile
from pypto.kernel_build.source import Job, KernelSource
from pypto.kernel_build.toolchain import Toolchain
from pypto.kernel_build.verify import elf_problem

logger = Logger("pypto.kernel_build")

_SO_PREFIX = "kernel-"
META_JSON = "meta.json"
_META_FORMAT = 1
_KEY_SALT = b"pypto-kernel-cache-1"


def kernel_cache_dir() -> Path:
    """``$PYPTO_CACHE_DIR/kernels``: where built kernels are kept."""
    return knobs.cache_dir() / "kernels"


def lookup_entry(entry: Path) -> Path | None:
    """The validated ``.so`` of a kernel cache entry folder, or None (a corrupt entry is logged)."""
    return lookup(entry, warn=True)


def cache_key(source: KernelSource, toolchain: Toolchain, platform: str) -> str:
    """The content hash naming ``source``'s cache entry (its header closure is checked apart)."""
    return _key(source, source.read(), toolchain, platform)


def _key(source: KernelSource, data: bytes, tc: Toolchain, platform: str) -> str:
    digest = sha256(_KEY_SALT)
    where = str(source.path) if source.path is not None else ""
    parts = [
        data,
        tc.fingerprint.encode(),
        platform.encode(),
        where.encode(),
        " ".join(extra_flags(source)).encode(),
    ]
    parts += [str(d).encode() for d in source.include_dirs]
    for part in parts:  # length-prefixed, so no two part lists hash alike
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.hexdigest()


def plan(source: KernelSource, tc: Toolchain, platform: str, root: Path) -> Job:
    data = source.read()
    key = _key(source, data, tc, platform)
    return Job(source=source, data=data, key=key, entry=root / key[:2] / key)


def lookup(entry: Path, *, warn: bool) -> Path | None:
    """The entry's ``.so`` if it is intact and its recorded headers are unchanged, else None."""
    touch(entry / META_JSON)  # marked used before it is read: trimming the cache skips it now
    try:
        meta = json.loads((entry / META_JSON).read_bytes())
        so = entry / str(meta["so"])
        so_size, so_sha, headers = int(meta["so_size"]), str(meta["so_sha256"]), dict(meta["headers"])
        if so.parent != entry:
            raise ValueError(f"bad file name {meta['so']!r}")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        _corrupt(entry, f"unreadable {META_JSON} ({exc})", warn)
        return None
    problem = _so_problem(so, so_size, so_sha)
    if problem:
        _corrupt(entry, problem, warn)
        return None
    for header, recorded in headers.items():
        if digest(Path(header)) != recorded:
            logger.info("%s changed since kernel %s was built; rebuilding", header, meta.get("name"))
            return None
    return so


def _so_problem(so: Path, size: int, sha: str) -> str | None:
    try:
        actual = so.stat().st_size
    except FileNotFoundError:
        return f"{so.name} is missing"
    if actual != size:
        return f"{so.name} has {actual} bytes, {size} recorded"
    if digest(so) != sha:
        return f"{so.name} content does not match its recorded sha256"
    problem = elf_problem(so)  # an entry consistent with its meta can still hold a bad build
    return f"{so.name} {problem}" if problem else None


def _corrupt(entry: Path, problem: str, warn: bool) -> None:
    if warn:
        logger.warning("corrupt kernel cache entry %s: %s; rebuilding", entry, problem)


def header_closure(
    built: list[Job], tc: Toolchain, build_dir: Path, started_ns: int
) -> dict[str, dict[str, str]]:
    """Per key, the headers each kernel included (outside the toolchain) and their sha256."""
    toolchain_dirs = [d.resolve() for d in (tc.include_dir, tc.pch_dir) if d is not None]
    closure: dict[str, dict[str, str]] = {}
    for job in built:
        assert job.out is not None and job.src_file is not None
        try:
            deps = parse_depfile(Path(f"{job.out}.d").read_text(errors="surrogateescape"))
        except OSError:
            deps = []
            logger.warning(
                "no dependency record for kernel %r: header edits will not rebuild it", job.source.name
            )
        src = job.src_file.resolve()
        headers = {}
        for dep in deps:
            path = (build_dir / dep).resolve()
            if path != src and not any(path.is_relative_to(d) for d in toolchain_dirs):
                headers[str(path)] = _headerdigest(path, started_ns)
        closure[job.key] = headers
    return closure


def _headerdigest(path: Path, started_ns: int) -> str:
    """The header's sha256; "" (never matches) if it changed while the build ran."""
    try:
        if path.stat().st_mtime_ns >= started_ns:
            return ""  # edited mid-build: the .so may hold either version, so rebuild next time
    except OSError:
        return ""
    return digest(path) or ""


def publish(job: Job, headers: dict[str, str], tc: Toolchain, platform: str) -> Path:
    """Put ``job``'s verified .so into its cache entry, unless a concurrent builder got there first.

    The file is named by its content hash, so a rebuilt entry (a header changed) gets a new path
    and a process that already loaded the old one cannot get it back from ``dlopen``'s cache.
    ``meta.json`` is the commit point: it is written (atomically) only once the ``.so`` is in
    place and loads, so a failure anywhere before leaves a miss, never a bad entry.
    """
    assert job.out is not None
    data = job.out.read_bytes()
    sha = sha256(data).hexdigest()
    so = job.entry / f"{_SO_PREFIX}{sha[:16]}.so"
    meta = _meta(job, tc, platform, so.name, sha, len(data), headers)
    ensure_dir(job.entry)
    with file_lock(job.entry.parent / f"{job.key}.lock"):
        existing = lookup(job.entry, warn=False)
        if existing is not None:
            return existing
        (job.entry / META_JSON).unlink(missing_ok=True)  # a bad entry stays a miss meanwhile
        _write(job, so, data, 0o755)
        _probe_or_remove(job, so)
        _write(job, job.entry / META_JSON, json.dumps(meta, indent=2).encode())
        for old in job.entry.iterdir():  # under the lock, other files are stale or crash leftovers
            if old not in (so, job.entry / META_JSON):
                old.unlink(missing_ok=True)
    return so


def _write(job: Job, path: Path, data: bytes, mode: int = 0o644) -> None:
    try:
        atomic_write(path, data, mode=mode)
    except OSError as exc:  # a full disk, a file-size limit: nothing half-written is left
        raise KernelBuildError(
            f"kernel {job.source.name!r} was built but cannot be written into the kernel cache "
            f"{job.entry}: {exc.strerror or exc}"
        ) from None


def _probe_or_remove(job: Job, so: Path) -> None:
    """Loads and unloads ``so`` from its final path; one that does not load is removed."""
    problem = _native.probe_kernel(str(so))
    if problem:
        so.unlink(missing_ok=True)
        where = job.source.path if job.source.path is not None else f"generated kernel {job.source.name}"
        raise KernelLoadError(f"{where}: the built kernel does not load: {problem}")


def evict(entry: Path, why: str) -> None:
    """Turn ``entry`` into a miss (its ``meta.json`` removed under the key's lock): for an entry
    that passed validation but does not load. The next build of its key rebuilds it."""
    logger.warning("kernel cache entry %s does not load (%s); rebuilding", entry, why)
    with file_lock(entry.parent / f"{entry.name}.lock"):
        (entry / META_JSON).unlink(missing_ok=True)


def _meta(
    job: Job, tc: Toolchain, platform: str, so_name: str, sha: str, size: int, headers: dict[str, str]
) -> dict[str, object]:
    import shlex

    assert job.src_file is not None and job.out is not None
    command = compile_command(job.src_file, job.out, job.source.include_dirs, tc, extra_flags(job.source))
    return {
        "format": _META_FORMAT,
        "key": job.key,
        "name": job.source.name,
        "platform": platform,
        "source": str(job.source.path) if job.source.path is not None else None,
        "so": so_name,
        "so_sha256": sha,
        "so_size": size,
        "headers": headers,
        "toolchain": tc.fingerprint,
        "command": shlex.join(command),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
