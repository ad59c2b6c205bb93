"""Compiling cache misses: a private build folder, one compile+link command per kernel
(``PYPTO_BUILD_JOBS`` at a time) with a ``build.ninja`` of the same edges beside them, and
the error a failed compile raises.

A cache hit (the common case in a new process) never imports this module. A build here
imports neither ``subprocess`` (with ``selectors`` and ``locale``) nor ``tempfile`` and
``shutil`` (with ``random`` and the compression modules) unless it needs a private build
folder: each compiler is started with ``os.posix_spawnp`` in a session of its own and reaped
with ``os.waitpid``, which is all the build asks of a child process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from pypto import knobs
from pypto._light import Logger
from pypto.errors import KernelBuildError
from pypto.kernel_build.cache import header_closure, publish
from pypto.kernel_build.cache_files import ensure_dir, file_lock
from pypto.kernel_build.commands import (
    compile_command,
    extra_flags,
    link_args,
    ninja_path,
    pch_include,
    shell,
    trim,
)
from pypto.kernel_build.source import Job
from pypto.kernel_build.toolchain import Toolchain
from pypto.kernel_build.verify import elf_problem

logger = Logger("pypto.kernel_build")

_STALE_BUILD_DIR_S = 24 * 3600


def build_and_publish(
    jobs: list[Job], tc: Toolchain, platform: str, output_dir: Path | None
) -> dict[str, Path]:
    """Compile ``jobs`` and publish the verified results; key -> cached ``.so``.

    A result is published only if its command exited 0 and the file is a complete shared
    object (:func:`elf_problem`); :func:`publish` then loads it before making it visible.
    """
    build_dir, temporary = _make_build_dir(output_dir)
    started_ns = time.time_ns()
    try:
        # The lock keeps a concurrent build in the same output_dir off our outputs until published.
        with file_lock(build_dir / ".lock"):
            result = _run_build(jobs, tc, build_dir)
            problems = {job.key: _output_problem(job) for job in jobs}
            built = [job for job in jobs if problems[job.key] is None]
            headers = header_closure(built, tc, build_dir, started_ns)
            published = {job.key: publish(job, headers[job.key], tc, platform) for job in built}
            failed = [job for job in jobs if job not in built]
            if failed:
                kept = build_dir if not temporary or knobs.keep_build() else None
                raise _build_error(failed, problems, result, kept)
    finally:
        if temporary and not knobs.keep_build():
            import shutil

            shutil.rmtree(build_dir, ignore_errors=True)
        elif temporary:
            logger.info("kept kernel build directory %s", build_dir)
    return published


def _output_problem(job: Job) -> str | None:
    """Why ``job``'s output must not be published (its exit status, then the file), or None."""
    assert job.out is not None
    if job.status is None:
        return "the compiler did not run"
    if job.status < 0:
        try:
            name = signal.Signals(-job.status).name
        except ValueError:
            name = f"signal {-job.status}"
        return f"the compiler was killed by {name}"
    if job.status > 0:
        return f"the compiler exited with status {job.status}"
    problem = elf_problem(job.out)
    return f"its output {job.out.name} {problem}" if problem else None


def _make_build_dir(output_dir: Path | None) -> tuple[Path, bool]:
    if output_dir is not None:
        return ensure_dir(Path(output_dir).absolute() / "build"), False
    import tempfile

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


def _run_build(jobs: list[Job], tc: Toolchain, build_dir: Path) -> str:
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
            job.src_file = build_dir / "kernels" / f"{job.source.stem}.cpp"
            job.src_file.parent.mkdir(exist_ok=True)
            job.src_file.write_bytes(job.data)
        job.out = build_dir / f"{job.source.stem}.{job.key[:16]}.so"
        job.out.unlink(missing_ok=True)  # a leftover output must not pass for a fresh one
    (build_dir / "build.ninja").write_text(_ninja_file(jobs, tc))
    return _run_commands(jobs, tc, knobs.build_jobs())


def _run_commands(jobs: list[Job], tc: Toolchain, parallel: int) -> str:
    """Runs each job's command, recording its exit status in ``job.status`` (as
    ``subprocess`` reports it: negative for a signal); returns launcher errors. On any
    exception (Ctrl-C included) the commands still running are killed with their children
    (each runs in a session, so a process group, of its own) and reaped, so none writes into
    the build folder after this returns."""
    pending = list(jobs)
    running: list[tuple[Job, int]] = []
    problems: list[str] = []
    try:
        while pending or running:
            while pending and len(running) < parallel:
                job = pending.pop(0)
                pid = _start(job, tc, problems)
                if pid is not None:
                    running.append((job, pid))
            if running:
                job, pid = running[0]
                job.status = _wait(pid)
                running.pop(0)  # only once reaped: an interrupted wait leaves it to the cleanup
    finally:
        for _, pid in running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            _wait(pid)
    return "\n".join(problems)


def _wait(pid: int) -> int:
    """Reaps ``pid``: its exit status, or minus the signal that ended it."""
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _start(job: Job, tc: Toolchain, problems: list[str]) -> int | None:
    """Starts ``job``'s compiler (found on PATH as a shell would) in a new session, its output
    and diagnostics into ``<out>.log``; its process id, or None when it cannot be started."""
    assert job.src_file is not None and job.out is not None
    cmd = compile_command(job.src_file, job.out, job.source.include_dirs, tc, extra_flags(job.source))
    cmd[1:1] = ["-pipe", "-MMD", "-MF", f"{job.out}.d"]  # no temp files; a depfile
    logger.debug("running %s", cmd)
    log = os.open(f"{job.out}.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        redirect = [(os.POSIX_SPAWN_DUP2, log, 1), (os.POSIX_SPAWN_DUP2, log, 2)]
        # SIGPIPE and SIGXFSZ back to their defaults (Python ignores them), as subprocess does
        defaults = (signal.SIGPIPE, signal.SIGXFSZ)
        return os.posix_spawnp(
            cmd[0], cmd, os.environ, file_actions=redirect, setsid=True, setsigdef=defaults
        )
    except OSError as exc:
        why = "not found" if isinstance(exc, FileNotFoundError) else exc.strerror
        problems.append(f"cannot run the C++ compiler {tc.cxx}: {why}")
        return None
    finally:
        os.close(log)


def _ninja_file(jobs: list[Job], tc: Toolchain) -> str:
    lines = [
        "# Generated by pypto.kernel_build: one compile+link edge per kernel.",
        "ninja_required_version = 1.3",
        f"cxx = {shell(tc.cxx)}",
        f"cflags = {shell(*tc.flags)}",
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
        lines.append(f"  name = {job.source.stem}")
        incs = [*pch_include(tc, extra_flags(job.source)), f"-I{tc.include_dir}"]
        lines.append(f"  incs = {shell(*incs, *(f'-I{d}' for d in job.source.include_dirs))}")
        lines.append(f"  extra = {shell(*extra_flags(job.source))}")
    return "\n".join(lines) + "\n"


def _build_error(
    failed: list[Job], problems: dict[str, str | None], launch_problems: str, kept_dir: Path | None
) -> KernelBuildError:
    """One error for all failed kernels, each with why and its (trimmed) compiler diagnostics."""
    parts = []
    for job in failed[:3]:
        assert job.out is not None
        try:
            log = job.out.with_name(job.out.name + ".log").read_text(errors="replace")
        except OSError:
            log = ""
        if not log.strip():  # the compiler could not be started, or died silently
            log = launch_problems.strip() or "the compiler exited without output"
        where = job.source.path if job.source.path is not None else job.src_file
        why = problems.get(job.key) or "it failed"
        parts.append(f"kernel {job.source.name!r} failed to build ({where}): {why}:\n{trim(log)}")
    if len(failed) > 3:
        parts.append("also failed: " + ", ".join(repr(job.source.name) for job in failed[3:]))
    hint = f"build directory: {kept_dir}" if kept_dir else "set PYPTO_KEEP_BUILD=1 to keep the build files"
    return KernelBuildError("\n\n".join(parts) + f"\n({hint})")
