"""Build kernel translation units into loadable shared objects, through a content-addressed cache.

One entry point, :func:`build_kernels` (and :func:`build_kernel` for one source), serves generated
kernels and hand-written ``external_source`` ones alike.

Cache key: sha256 of the source bytes, the toolchain fingerprint (compiler id, flags, pypto
version, ABI, every kernel-facing header), the platform, the include dirs and, for a file source,
its path (its relative ``#include``s resolve against its folder). Headers outside the toolchain
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
for rebuilding by hand), then each result is published with ``os.replace`` under the key's lock,
so concurrent builders of one kernel all succeed and leave one valid entry. The depfile comes
from ``-MMD``, not ``-MD``: system headers change only with the compiler, which the fingerprint
covers, and re-hashing the C++ standard library on every lookup would cost milliseconds.

Validation on a hit: ``meta.json`` parses, the ``.so`` has the recorded size, and its sha256
matches (``cache_files.digest``: hashed once per process while the file's inode, size and
mtime hold, racily-clean files always re-hashed). Recorded headers use the same memo.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pypto import knobs
from pypto._light import Logger, sha256
from pypto.errors import KernelBuildError, PyptoError
from pypto.runtime.build_commands import (
    compile_command,
    extra_flags,
    link_args,
    ninja_path,
    parse_depfile,
    shell,
    trim,
)
from pypto.runtime.cache_files import atomic_write, digest, ensure_dir, file_lock
from pypto.runtime.toolchain import Toolchain
from pypto.runtime.toolchain import toolchain as installed_toolchain

# subprocess, tempfile, shutil, shlex and fcntl are imported where a build needs them: a cache
# hit (the common case in a new process) uses none of them.
logger = Logger(__name__)

_SO_PREFIX = "kernel-"
META_JSON = "meta.json"
_META_FORMAT = 1
_KEY_SALT = b"pypto-kernel-cache-1"
_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_STALE_BUILD_DIR_S = 24 * 3600


@dataclass(frozen=True)
class KernelSource:
    """One kernel translation unit: generated ``code``, or a ``path`` to a ``.cpp`` (exactly one).

    A ``path`` source is compiled in place, so its relative ``#include``s work; ``include_dirs``
    are extra ``-I`` folders. ``name`` labels the kernel in file names and error messages.
    """

    name: str
    code: str | None = None
    path: Path | None = None
    include_dirs: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        if (self.code is None) == (self.path is None):
            raise PyptoError(f"kernel {self.name!r}: give exactly one of `code` and `path`")
        if not _NAME_RE.fullmatch(self.name):
            raise PyptoError(f"kernel name {self.name!r} must match {_NAME_RE.pattern}")
        if self.path is not None:
            object.__setattr__(self, "path", Path(self.path).absolute())
        object.__setattr__(self, "include_dirs", tuple(Path(d).absolute() for d in self.include_dirs))

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


@dataclass
class _Job:
    """A kernel of this call: its key, where it is compiled, where its cache entry lives."""

    source: KernelSource
    data: bytes
    key: str
    entry: Path
    src_file: Path | None = None  # the file the compiler reads; set once the build dir is known
    out: Path | None = None  # the .so the compiler writes


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
    jobs = [_plan(src, tc, platform, root) for src in sources]
    _check_names(jobs)
    if output_dir is not None:
        _write_generated_sources(jobs, output_dir / "kernels")
    found: dict[str, Path] = {}
    misses: dict[str, _Job] = {}
    for job in jobs:
        if job.key not in found and job.key not in misses:
            so = _lookup(job.entry, warn=True)
            if so is not None:
                found[job.key] = so
            else:
                misses[job.key] = job
    if misses:
        found.update(_build_and_publish(list(misses.values()), tc, platform, output_dir))
    return [found[job.key] for job in jobs]


def kernel_cache_dir() -> Path:
    """``$PYPTO_CACHE_DIR/kernels``: where built kernels are kept."""
    return knobs.cache_dir() / "kernels"


def lookup_entry(entry: Path) -> Path | None:
    """The validated ``.so`` of a kernel cache entry folder, or None (a corrupt entry is logged)."""
    return _lookup(entry, warn=True)


def cache_key(source: KernelSource, toolchain: Toolchain, platform: str) -> str:
    """The content hash naming ``source``'s cache entry (its header closure is checked apart)."""
    return _key(source, source.read(), toolchain, platform)


# --- planning -----------------------------------------------------------------------------------
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


def _plan(source: KernelSource, tc: Toolchain, platform: str, root: Path) -> _Job:
    data = source.read()
    key = _key(source, data, tc, platform)
    return _Job(source=source, data=data, key=key, entry=root / key[:2] / key)


def _check_names(jobs: list[_Job]) -> None:
    """Generated sources share ``kernels/<name>.cpp``, so one name must mean one code."""
    seen: dict[str, bytes] = {}
    for job in jobs:
        if job.source.code is None:
            continue
        if seen.setdefault(job.source.name, job.data) != job.data:
            raise PyptoError(f"two different kernels are both named {job.source.name!r}")


def _write_generated_sources(jobs: list[_Job], folder: Path) -> None:
    """Each generated source into ``folder``, rewritten only when it changed (a hit in a
    read-only cache writes nothing)."""
    for job in jobs:
        if job.source.code is None:
            continue
        job.src_file = folder / f"{job.source.name}.cpp"
        with contextlib.suppress(OSError):
            if job.src_file.read_bytes() == job.data:
                continue  # unchanged: keep its mtime
        ensure_dir(folder)
        atomic_write(job.src_file, job.data)


# --- lookup and validation ----------------------------------------------------------------------
def _lookup(entry: Path, *, warn: bool) -> Path | None:
    """The entry's ``.so`` if it is intact and its recorded headers are unchanged, else None."""
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
    return None


def _corrupt(entry: Path, problem: str, warn: bool) -> None:
    if warn:
        logger.warning("corrupt kernel cache entry %s: %s; rebuilding", entry, problem)


# --- building -----------------------------------------------------------------------------------
def _build_and_publish(
    jobs: list[_Job], tc: Toolchain, platform: str, output_dir: Path | None
) -> dict[str, Path]:
    """Compile ``jobs`` and publish the results; key -> cached ``.so``."""
    import shutil

    build_dir, temporary = _make_build_dir(output_dir)
    started_ns = time.time_ns()
    try:
        # The lock keeps a concurrent build in the same output_dir off our outputs until published.
        with file_lock(build_dir / ".lock"):
            result = _run_build(jobs, tc, build_dir)
            built = [job for job in jobs if job.out is not None and job.out.is_file()]
            headers = _header_closure(built, tc, build_dir, started_ns)
            published = {job.key: _publish(job, headers[job.key], tc, platform) for job in built}
            failed = [job for job in jobs if job not in built]
            if failed:
                kept = build_dir if not temporary or knobs.keep_build() else None
                raise _build_error(failed, result, kept)
    finally:
        if temporary and not knobs.keep_build():
            shutil.rmtree(build_dir, ignore_errors=True)
        elif temporary:
            logger.info("kept kernel build directory %s", build_dir)
    return published


def _make_build_dir(output_dir: Path | None) -> tuple[Path, bool]:
    import tempfile

    if output_dir is not None:
        return ensure_dir(Path(output_dir).absolute() / "build"), False
    tmp_root = ensure_dir(knobs.cache_dir() / "tmp")
    _sweep_stale_build_dirs(tmp_root)
    return Path(tempfile.mkdtemp(prefix="build-", dir=tmp_root)), True


def _sweep_stale_build_dirs(tmp_root: Path) -> None:
    """Remove build dirs left by crashed (or PYPTO_KEEP_BUILD) builds more than a day ago."""
    import shutil

    cutoff = time.time() - _STALE_BUILD_DIR_S
    for old in tmp_root.glob("build-*"):
        with contextlib.suppress(OSError):
            if old.stat().st_mtime < cutoff:
                shutil.rmtree(old, ignore_errors=True)


def _run_build(jobs: list[_Job], tc: Toolchain, build_dir: Path) -> str:
    """Write the sources and ``build.ninja`` for ``jobs`` into ``build_dir``, then run each
    compile+link command (up to ``PYPTO_BUILD_JOBS`` at once); returns launcher errors.

    The commands run directly rather than through ninja: starting ninja and querying its deps
    log cost two process launches, a large share of a one-kernel first call. ``build.ninja``
    is still written, so ``ninja -C <build dir>`` reproduces the build by hand.
    """
    for job in jobs:
        if job.source.path is not None:
            job.src_file = job.source.path  # compiled in place
        elif job.src_file is None:
            job.src_file = build_dir / "kernels" / f"{job.source.name}.cpp"
            job.src_file.parent.mkdir(exist_ok=True)
            job.src_file.write_bytes(job.data)
        job.out = build_dir / f"{job.source.name}.{job.key[:16]}.so"
        job.out.unlink(missing_ok=True)  # a leftover output must not pass for a fresh one
    (build_dir / "build.ninja").write_text(_ninja_file(jobs, tc))
    return _run_commands(jobs, tc, knobs.build_jobs())


def _run_commands(jobs: list[_Job], tc: Toolchain, parallel: int) -> str:
    import subprocess

    pending, running, problems = list(jobs), [], []  # type: ignore[var-annotated]
    while pending or running:
        while pending and len(running) < parallel:
            job = pending.pop(0)
            assert job.src_file is not None and job.out is not None
            cmd = compile_command(job.src_file, job.out, job.source.include_dirs, tc, extra_flags(job.source))
            cmd[1:1] = ["-pipe", "-MMD", "-MF", f"{job.out}.d"]  # no temp files; a depfile
            logger.debug("running %s", cmd)
            with open(f"{job.out}.log", "wb") as log:
                try:
                    running.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT))
                except OSError as exc:
                    why = "not found" if isinstance(exc, FileNotFoundError) else exc.strerror
                    problems.append(f"cannot run the C++ compiler {tc.cxx}: {why}")
        if running:
            running.pop(0).wait()
    return "\n".join(problems)


# --- after the build ----------------------------------------------------------------------------
def _header_closure(
    built: list[_Job], tc: Toolchain, build_dir: Path, started_ns: int
) -> dict[str, dict[str, str]]:
    """Per key, the headers each kernel included (outside the toolchain) and their sha256."""
    toolchain_headers = tc.include_dir.resolve()
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
            if path != src and not path.is_relative_to(toolchain_headers):
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


def _publish(job: _Job, headers: dict[str, str], tc: Toolchain, platform: str) -> Path:
    """Put ``job``'s fresh .so into its cache entry, unless a concurrent builder got there first.

    The file is named by its content hash, so a rebuilt entry (a header changed) gets a new path
    and a process that already loaded the old one cannot get it back from ``dlopen``'s cache.
    """
    assert job.out is not None
    data = job.out.read_bytes()
    sha = sha256(data).hexdigest()
    so = job.entry / f"{_SO_PREFIX}{sha[:16]}.so"
    meta = _meta(job, tc, platform, so.name, sha, len(data), headers)
    ensure_dir(job.entry)
    with file_lock(job.entry.parent / f"{job.key}.lock"):
        existing = _lookup(job.entry, warn=False)
        if existing is not None:
            return existing
        atomic_write(so, data, mode=0o755)
        atomic_write(job.entry / META_JSON, json.dumps(meta, indent=2).encode())
        for old in job.entry.iterdir():  # under the lock, other files are stale or crash leftovers
            if old not in (so, job.entry / META_JSON):
                old.unlink(missing_ok=True)
    return so


def _meta(
    job: _Job, tc: Toolchain, platform: str, so_name: str, sha: str, size: int, headers: dict[str, str]
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


def _ninja_file(jobs: list[_Job], tc: Toolchain) -> str:
    lines = [
        "# Generated by pypto.runtime.build: one compile+link edge per kernel.",
        "ninja_required_version = 1.3",
        f"cxx = {shell(tc.cxx)}",
        f"cflags = {shell(*tc.flags, f'-I{tc.include_dir}')}",
        f"linkflags = {shell(*link_args(tc))}",
        "rule kernel",
        "  command = $cxx $cflags $incs -MMD -MF $out.d $in -o $out $linkflags $extra > $out.log 2>&1",
        "  depfile = $out.d",
        "  deps = gcc",
        "  description = CXX $name",
    ]
    for job in jobs:
        assert job.src_file is not None and job.out is not None
        lines.append(f"build {ninja_path(job.out.name)}: kernel {ninja_path(str(job.src_file))}")
        lines.append(f"  name = {job.source.name}")
        lines.append(f"  incs = {shell(*(f'-I{d}' for d in job.source.include_dirs))}")
        lines.append(f"  extra = {shell(*extra_flags(job.source))}")
    return "\n".join(lines) + "\n"


def _build_error(failed: list[_Job], launch_problems: str, kept_dir: Path | None) -> KernelBuildError:
    """One error for all failed kernels, each with its (trimmed) compiler diagnostics."""
    parts = []
    for job in failed[:3]:
        assert job.out is not None
        try:
            log = job.out.with_name(job.out.name + ".log").read_text(errors="replace")
        except OSError:
            log = ""
        if not log.strip():  # the compiler could not be started
            log = launch_problems.strip() or "the compiler exited without output"
        where = job.source.path if job.source.path is not None else job.src_file
        parts.append(f"kernel {job.source.name!r} failed to compile ({where}):\n{trim(log)}")
    if len(failed) > 3:
        parts.append("also failed: " + ", ".join(repr(job.source.name) for job in failed[3:]))
    hint = f"build directory: {kept_dir}" if kept_dir else "set PYPTO_KEEP_BUILD=1 to keep the build files"
    return KernelBuildError("\n\n".join(parts) + f"\n({hint})")
