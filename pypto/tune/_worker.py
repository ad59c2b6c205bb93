"""One point of a sweep, run wherever the executor puts it (a process, a Dask worker, here).

What every point shares — the kernel factory, the arguments, the base RunConfig and the
optional check — is one ``Job``, pickled once by value (cloudpickle when installed) so a
factory written in a script, a notebook or a test module runs on a worker that cannot import
it. The job's bytes reach each worker once (the pool's initializer, a Dask scatter) and are
decoded once per worker process; a point then travels as its parameters and its folder. The kernel
parser reads a kernel's source text: code objects travel whole (``marshal``, keeping their
file names, which cloudpickle would rename) and the text of every file they name travels
with them, handed to ``linecache`` on a worker that lacks the file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import linecache
import logging
import marshal
import os
import pickle
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pypto.errors import PyptoError

# Per worker process: the job bytes the pool's initializer installed, and the last decoded job
# (keyed by its bytes' digest, so another sweep's job is never mistaken for it).
_BLOBS: dict[str, bytes] = {}
_DECODED: dict[str, Job] = {}


def pool_worker_init(one_thread: bool, key: str = "", job_file: str = "") -> None:
    """Initializer of the sweep's own process pool. Ctrl-C is the parent's to handle (it
    cancels the queue and kills the workers), so a worker ignores SIGINT instead of turning a
    terminal's Ctrl-C into a failed point and starting the next one. With a worker per CPU the
    pool already fills the CPUs, so each run keeps its data work on its own thread
    (PYPTO_SIM_THREADS; the same results). ``job_file``: the sweep's job, read once here."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if one_thread:
        os.environ.setdefault("PYPTO_SIM_THREADS", "1")
    if key:
        _BLOBS[key] = Path(job_file).read_bytes()


@dataclasses.dataclass
class Job:
    """What every point of one sweep shares."""

    factory: Callable[..., Any]
    args: Any  # a tuple of call arguments, or a callable(**point) -> tuple
    config: Any  # RunConfig
    check: Callable[..., Any] | None


def shipped(blob: bytes) -> bytes:
    """The job's bytes, as a Dask task's result (see ``_executors._dask_job``)."""
    return blob


def job_key(blob: bytes) -> str:
    return hashlib.sha256(blob).hexdigest()[:24]


def config_fields() -> frozenset[str]:
    from pypto.runtime.config import RunConfig

    return frozenset(f.name for f in dataclasses.fields(RunConfig))


def point_folder(root: Path, name: str, point: dict[str, Any]) -> Path:
    digest = hashlib.sha256(repr(sorted(point.items(), key=lambda kv: kv[0])).encode()).hexdigest()[:12]
    return root / f"{name}-{digest}"


def dumps(task: Job) -> bytes:
    """Pickles ``task``; with cloudpickle the factory's own module goes by value."""
    try:
        import cloudpickle
    except ImportError:
        return pickle.dumps((pickle.dumps(task), {}))
    files: set[str] = set()

    class _Pickler(cloudpickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, types.CodeType):
                files.add(obj.co_filename)
                return marshal.loads, (marshal.dumps(obj),)
            return super().reducer_override(obj)

    module = sys.modules.get(getattr(task.factory, "__module__", "") or "")
    by_value = module is not None and module.__name__.split(".")[0] not in ("pypto", "__main__")
    if by_value:
        cloudpickle.register_pickle_by_value(module)
    try:
        buffer = io.BytesIO()
        _Pickler(buffer).dump(task)
    finally:
        if by_value:
            cloudpickle.unregister_pickle_by_value(module)
    texts = {f: "".join(linecache.getlines(f)) for f in sorted(files) if f.endswith(".py")}
    return pickle.dumps((buffer.getvalue(), texts))


def evaluate(
    job: Job | bytes | str, point: dict[str, Any], folder: str, marker: str | None = None
) -> dict[str, Any]:
    """Compiles and runs one point in ``folder``; its simulated cycles, or the error that stopped it.

    ``job``: the job itself (in this process), its bytes, or the key of the bytes this worker
    was given (``pool_worker_init``).
    ``marker``: a file that exists while the point runs, so that when a worker process dies
    the sweep can tell the points it was running from those it never started."""
    if marker is None:
        return _evaluate(_job(job), point, folder)
    Path(marker).touch()
    try:
        return _evaluate(_job(job), point, folder)
    finally:  # not reached when the process dies: the marker stays
        Path(marker).unlink(missing_ok=True)


def _job(job: Job | bytes | str) -> Job:
    """The decoded job, decoding it only the first time this process sees it."""
    if isinstance(job, Job):
        return job
    key = job if isinstance(job, str) else job_key(job)
    decoded = _DECODED.get(key)
    if decoded is None:
        decoded = loads(_BLOBS[key] if isinstance(job, str) else job)
        _DECODED.clear()  # the latest sweep's job only: an older job's arrays are let go
        _DECODED[key] = decoded
    return decoded


def loads(blob: bytes) -> Job:
    data, texts = pickle.loads(blob)
    for file, text in texts.items():  # for the kernel parser, where the file is not on disk
        if text and not Path(file).is_file() and file not in linecache.cache:
            linecache.cache[file] = (len(text), None, text.splitlines(keepends=True), file)
    return pickle.loads(data)


def _evaluate(task: Job, point: dict[str, Any], folder: str) -> dict[str, Any]:
    fields = config_fields()
    run_fields = {k: v for k, v in point.items() if k in fields}
    kernel_params = {k: v for k, v in point.items() if k not in fields}
    started = time.perf_counter()
    hints = logging.getLogger("pypto.perf_hints")  # each point's hints stay in its own log
    level, hints.level = hints.level, logging.ERROR
    try:
        kernel = task.factory(**kernel_params)
        given = task.args(**point) if callable(task.args) else task.args
        args = _copied(given)
        config = dataclasses.replace(task.config, **run_fields, output_dir=folder)
        kernel(*args, config=config)
        report = kernel.last_report
        if task.check is not None:
            task.check(*args)
    except (PyptoError, ValueError, AssertionError) as e:
        return {"cycles": None, "error": f"{type(e).__name__}: {e}".splitlines()[0]}
    finally:
        hints.setLevel(level)
    return {
        "cycles": report.cycles,
        "time_us": round(report.time_us, 3),
        **_bound(report),
        **{f"busy_{p}": busy for p, busy in report.pipe_busy.items()},
        "untouched": _untouched(given, args),
        "wall_s": round(time.perf_counter() - started, 3),
        "error": None,
    }


def _bound(report: Any) -> dict[str, Any]:
    """What bounds the run: its busiest pipe on one core, or HBM when every byte HBM served,
    at the chip's shared bandwidth, needs more cycles (as the report's kernel rows decide)."""
    pipe = report.bound
    if pipe is None or not pipe.busy:  # nothing ran: nothing bounds it
        return {"bound": "", "bound_cycles": 0}
    roof = report.rooflines()
    if roof.hbm_cycles > pipe.busy:
        return {"bound": "HBM", "bound_cycles": round(roof.hbm_cycles)}
    return {"bound": pipe.pipe, "bound_cycles": pipe.busy}


def _untouched(given: tuple, args: tuple) -> bool:
    """Whether the run left every array argument as it was (compared bytewise: NaNs too)."""
    import numpy as np

    pairs = [(g, a) for g, a in zip(given, args) if isinstance(g, np.ndarray) and g is not a]
    return bool(pairs) and all(
        np.array_equal(np.ascontiguousarray(g).view(np.uint8), np.ascontiguousarray(a).view(np.uint8))
        for g, a in pairs
    )


def _copied(args: tuple) -> tuple:
    """Fresh buffers per point (numpy ``copy``, torch ``clone``): the kernel writes its
    outputs, and the arguments every point shares stay as given."""
    return tuple(_fresh(a) if hasattr(a, "shape") else a for a in args)


def _fresh(a: Any) -> Any:
    copy = getattr(a, "copy", None) or getattr(a, "clone", None)
    return copy() if copy is not None else a
