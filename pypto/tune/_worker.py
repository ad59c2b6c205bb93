"""One point of a sweep, run wherever the executor puts it (a process, a Dask worker, here).

The task travels as bytes: the kernel factory, the point, the arguments, the base RunConfig
and the optional check, pickled by value (cloudpickle when installed) so a factory written
in a script, a notebook or a test module runs on a worker that cannot import it. The kernel
parser reads a kernel's source text, which pickling by value drops (cloudpickle renames the
code's file), so the task carries the factory's file text and the worker puts it back.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import linecache
import logging
import pickle
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pypto.errors import PyptoError


@dataclasses.dataclass
class Task:
    factory: Callable[..., Any]
    point: dict[str, Any]
    args: Any  # a tuple of call arguments, or a callable(**point) -> tuple
    config: Any  # RunConfig
    check: Callable[..., Any] | None
    folder: str  # where this point compiles (each point its own output_dir)
    sources: dict[str, tuple[str, str]] = dataclasses.field(default_factory=dict)  # qualname: (file, text)

    def __post_init__(self) -> None:
        for fn in (self.factory, self.check, self.args):
            code = getattr(fn, "__code__", None)
            if code is not None and fn.__qualname__ not in self.sources:
                try:
                    file = inspect.getsourcefile(fn) or code.co_filename
                    self.sources[fn.__qualname__] = (file, "".join(linecache.getlines(file)))
                except TypeError:
                    pass


def config_fields() -> frozenset[str]:
    from pypto.runtime.config import RunConfig

    return frozenset(f.name for f in dataclasses.fields(RunConfig))


def point_folder(root: Path, name: str, point: dict[str, Any]) -> Path:
    digest = hashlib.sha256(repr(sorted(point.items(), key=lambda kv: kv[0])).encode()).hexdigest()[:12]
    return root / f"{name}-{digest}"


def dumps(task: Task) -> bytes:
    """Pickles ``task``; with cloudpickle the factory's own module goes by value."""
    try:
        import cloudpickle
    except ImportError:
        return pickle.dumps(task)
    module = sys.modules.get(getattr(task.factory, "__module__", "") or "")
    by_value = module is not None and module.__name__.split(".")[0] not in ("pypto", "__main__")
    if by_value:
        cloudpickle.register_pickle_by_value(module)
    try:
        return cloudpickle.dumps(task)
    finally:
        if by_value:
            cloudpickle.unregister_pickle_by_value(module)


def evaluate(payload: bytes) -> dict[str, Any]:
    """Compiles and runs one point; its simulated cycles, or the error that stopped it."""
    task: Task = pickle.loads(payload)
    for fn in (task.factory, task.check, task.args):
        _restore_source(fn, task.sources)
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


def _refiled(code: types.CodeType, file: str) -> types.CodeType:
    consts = tuple(_refiled(c, file) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=file, co_consts=consts)


def _restore_source(fn: Any, sources: dict[str, tuple[str, str]]) -> None:
    """Gives a function unpickled by value its file name back, and that file's text to
    linecache (so the kernel parser finds the source even where the file does not exist)."""
    code = getattr(fn, "__code__", None)
    entry = sources.get(getattr(fn, "__qualname__", ""))
    if code is None or entry is None:
        return
    file, text = entry
    if code.co_filename != file:
        fn.__code__ = _refiled(code, file)
    if text and file not in linecache.cache:
        linecache.cache[file] = (len(text), None, text.splitlines(keepends=True), file)
