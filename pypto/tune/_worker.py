"""One point of a sweep, run wherever the executor puts it (a process, a Dask worker, here).

The task travels as bytes: the kernel factory, the point, the arguments, the base RunConfig
and the optional check, pickled by value (cloudpickle when installed) so a factory written
in a script, a notebook or a test module runs on a worker that cannot import it. The kernel
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


def pool_worker_init(one_thread: bool) -> None:
    """Initializer of the sweep's own process pool. Ctrl-C is the parent's to handle (it
    cancels the queue and kills the workers), so a worker ignores SIGINT instead of turning a
    terminal's Ctrl-C into a failed point and starting the next one. With a worker per CPU the
    pool already fills the CPUs, so each run keeps its data work on its own thread
    (PYPTO_SIM_THREADS; the same results)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if one_thread:
        os.environ.setdefault("PYPTO_SIM_THREADS", "1")


@dataclasses.dataclass
class Task:
    factory: Callable[..., Any]
    point: dict[str, Any]
    args: Any  # a tuple of call arguments, or a callable(**point) -> tuple
    config: Any  # RunConfig
    check: Callable[..., Any] | None
    folder: str  # where this point compiles (each point its own output_dir)


def config_fields() -> frozenset[str]:
    from pypto.runtime.config import RunConfig

    return frozenset(f.name for f in dataclasses.fields(RunConfig))


def point_folder(root: Path, name: str, point: dict[str, Any]) -> Path:
    digest = hashlib.sha256(repr(sorted(point.items(), key=lambda kv: kv[0])).encode()).hexdigest()[:12]
    return root / f"{name}-{digest}"


def dumps(task: Task) -> bytes:
    """Pickles ``task``; with cloudpickle the factory's own module goes by value."""
    try:
        import cloudpickle  # type: ignore[import-untyped]
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


def evaluate(payload: bytes, marker: str | None = None) -> dict[str, Any]:
    """Compiles and runs one point; its simulated cycles, or the error that stopped it.

    ``marker``: a file that exists while the point runs, so that when a worker process dies
    the sweep can tell the points it was running from those it never started."""
    if marker is None:
        return _evaluate(payload)
    Path(marker).touch()
    try:
        return _evaluate(payload)
    finally:  # not reached when the process dies: the marker stays
        Path(marker).unlink(missing_ok=True)


def _evaluate(payload: bytes) -> dict[str, Any]:
    data, texts = pickle.loads(payload)
    for file, text in texts.items():  # for the kernel parser, where the file is not on disk
        if text and not Path(file).is_file() and file not in linecache.cache:
            linecache.cache[file] = (len(text), None, text.splitlines(keepends=True), file)
    task: Task = pickle.loads(data)
    fields = config_fields()
    run_fields = {k: v for k, v in task.point.items() if k in fields}
    kernel_params = {k: v for k, v in task.point.items() if k not in fields}
    started = time.perf_counter()
    hints = logging.getLogger("pypto.perf_hints")  # each point's hints stay in its own log
    level, hints.level = hints.level, logging.ERROR
    try:
        kernel = task.factory(**kernel_params)
        args = task.args(**task.point) if callable(task.args) else _copied(task.args)
        config = dataclasses.replace(task.config, **run_fields, output_dir=task.folder)
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
        "bound": report.bound.pipe if report.bound else "",
        "wall_s": round(time.perf_counter() - started, 3),
        "error": None,
    }


def _copied(args: tuple) -> tuple:
    """Fresh output buffers per point when running in this process (arrays are written)."""
    return tuple(a.copy() if hasattr(a, "copy") and hasattr(a, "shape") else a for a in args)
