"""``sweep``: every point of a parameter space, compiled and run, ranked by simulated cycles.

A point is one value per parameter. Parameters named like ``RunConfig`` fields
(``memory_planner``, ``platform``, ``platform_overrides``, ...) configure the run; the others
go to the kernel factory, a function that returns a ``@pl.jit`` kernel built with them (tile
shapes and pipeline depths are compile-time constants of the kernel, hence a factory).

Points run through any ``concurrent.futures.Executor``: a local process pool by default,
``"serial"`` in this process, or a Dask cluster's ``Client(...).get_executor()`` (Ray's
``RayExecutor`` works the same way). A point that fails to compile (a tile that does not
fit, say) is a row with its error, not a failed sweep.

A point whose work is empty is flagged in its row (``empty``: why) and is never the best,
however few its cycles: a loop that ran zero times is not a fast kernel. The work is empty
when the point ran no instruction of a stage — reading GM (MTE2), computing (CUBE, VECTOR),
writing GM (MTE3, FIXPIPE) — that every other point that ran with some work has, or when it
wrote nothing and left every array argument as it was. A point that runs a stage in another
form (a split-K point with or without its vector reduction) still has all three stages.
"""

from __future__ import annotations

import inspect
import itertools
import logging
import sys
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pypto import knobs
from pypto.hardware import PIPES
from pypto.runtime.config import RunConfig
from pypto.tune import _executors, _worker
from pypto.tune.errors import TuneError

log = logging.getLogger(__name__)


BUSY_COLUMNS = tuple(f"busy_{p}" for p in PIPES)
RESULT_COLUMNS = ("cycles", "time_us", "bound", "bound_cycles", *BUSY_COLUMNS, "empty", "wall_s", "error")
INT_COLUMNS = ("cycles", "bound_cycles", *BUSY_COLUMNS)  # nullable integers: None for a failed point
# The stages of a kernel's work, by the pipes that run them.
STAGES = {"reads GM": ("MTE2",), "computes": ("CUBE", "VECTOR"), "writes GM": ("MTE3", "FIXPIPE")}


@dataclass
class SweepResult:
    """The rows of a sweep in space order, and the best point (fewest cycles, first on a tie)."""

    params: list[str]
    rows: list[dict[str, Any]] = field(default_factory=list)
    pruned: list[dict[str, Any]] = field(default_factory=list)  # points ``prune=`` dropped
    sent_bytes: int = 0  # bytes pickled for the workers (the job once per worker, each point)

    @property
    def ok(self) -> list[dict[str, Any]]:
        """The rows of the points that ran (an empty point's too)."""
        return [r for r in self.rows if r["error"] is None]

    @property
    def best_row(self) -> dict[str, Any]:
        if not self.ok:
            errors = "; ".join(sorted({r["error"] for r in self.rows}))[:800]
            raise TuneError(f"no point of the sweep ran: {errors}")
        real = [r for r in self.ok if r["empty"] is None]
        if not real:
            why = "; ".join(sorted({r["empty"] for r in self.ok}))[:800]
            raise TuneError(f"every point of the sweep that ran did no work ({why}): none can be the best")
        return min(real, key=lambda r: r["cycles"])

    @property
    def best(self) -> dict[str, Any]:
        """The parameters of the best point."""
        return {k: self.best_row[k] for k in self.params}

    @property
    def table(self) -> Any:
        """A pandas DataFrame of the rows when pandas is installed, else the rows."""
        try:
            import pandas
        except ImportError:
            return self.rows
        frame = pandas.DataFrame(self.rows, columns=[*self.params, *RESULT_COLUMNS])
        return frame.astype(dict.fromkeys(INT_COLUMNS, "Int64"))

    def format(self) -> str:
        """The rows as an aligned text table: cycles, the bound, the busy cycles of every pipe
        some point used; the best point marked with ``*``, an empty point's reason after it."""
        best = self.best_row if any(r["empty"] is None for r in self.ok) else None
        used = [c for c in BUSY_COLUMNS if any(r.get(c) for r in self.rows)]
        cols = [*self.params, "cycles", "bound", *used]
        cells = [[_cell(r, c) for c in cols] + [_note(r)] for r in self.rows]
        widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
        head = "  ".join(c.removeprefix("busy_").rjust(w) for c, w in zip(cols, widths))
        lines = ["  " + head]
        for r, row in zip(self.rows, cells):
            mark = "* " if r is best else "  "
            text = "  ".join(v.rjust(w) for v, w in zip(row, widths))
            lines.append((mark + text + ("  " + row[-1] if row[-1] else "")).rstrip())
        return "\n".join(lines)


def _note(row: dict[str, Any]) -> str:
    if row["error"]:
        return row["error"]
    return f"empty: {row['empty']}" if row["empty"] else ""


def _cell(row: dict[str, Any], col: str) -> str:
    value = row.get(col)
    if value is None:
        return "-"
    return getattr(value, "name", None) or str(value)


def points(space: Mapping[str, Iterable[Any]]) -> list[dict[str, Any]]:
    """The product of the space, in order (the last parameter varies fastest)."""
    names = list(space)
    values = [list(space[n]) for n in names]
    for name, vals in zip(names, values):
        if not vals:
            raise TuneError(f"sweep parameter {name!r} has no values")
    return [dict(zip(names, combo)) for combo in itertools.product(*values)]


def sweep(
    kernel: Callable[..., Any],
    space: Mapping[str, Iterable[Any]],
    args: tuple | Callable[..., tuple],
    *,
    config: Any = None,
    executor: Executor | str | None = None,
    check: Callable[..., Any] | None = None,
    progress: bool | None = None,
    prune: Callable[[list[dict[str, Any]]], Iterable[dict[str, Any]]] | None = None,
) -> SweepResult:
    """Runs ``kernel(**point)(*args, config=...)`` for every point of ``space``.

    ``args``: the call's arguments (outputs are copied per point), or a function of the
    point's parameters returning them. ``check(*args)`` may assert on the outputs.
    ``progress``: a tqdm bar (when tqdm is installed; None: only on a terminal).
    ``prune(points)``: returns the points worth running; the others never run (``pruned``).
    """
    _check_parameters(kernel, [k for k in space if k not in _worker.config_fields()])
    todo, dropped = pruned(points(space), prune)
    result = run_points(kernel, todo, args, config=config, executor=executor, check=check,
                        progress=progress, params=list(space))  # fmt: skip
    result.pruned = dropped
    return result


def pruned(
    todo: list[dict[str, Any]], prune: Callable[[list[dict[str, Any]]], Iterable[dict[str, Any]]] | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the points ``prune`` keeps, in their order; those it drops)."""
    if prune is None:
        return todo, []
    kept = list(prune([dict(p) for p in todo]))
    strays = [p for p in kept if p not in todo]
    if strays:
        raise TuneError(f"prune returned points that are not in the space: {strays[:3]}")
    if not kept:
        raise TuneError(f"prune dropped every one of the {len(todo)} points: nothing to run")
    return [p for p in todo if p in kept], [p for p in todo if p not in kept]


def _check_parameters(kernel: Callable[..., Any], names: list[str]) -> None:
    """Every non-RunConfig parameter of the space must be one the factory takes."""
    try:
        sig = inspect.signature(kernel)
    except (TypeError, ValueError):
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        return
    unknown = [n for n in names if n not in sig.parameters]
    if unknown:
        name = getattr(kernel, "__name__", "the kernel factory")
        raise TuneError(
            f"sweep parameters {unknown} are neither parameters of {name}{sig} nor RunConfig fields"
        )


def run_points(
    kernel: Callable[..., Any],
    todo: list[dict[str, Any]],
    args: tuple | Callable[..., tuple],
    *,
    config: Any = None,
    executor: Executor | str | None = None,
    check: Callable[..., Any] | None = None,
    progress: bool | None = None,
    params: list[str] | None = None,
) -> SweepResult:
    base = config or RunConfig()
    root = Path(base.output_dir) if base.output_dir else knobs.cache_dir() / "tune"
    name = (
        getattr(kernel, "__qualname__", getattr(kernel, "__name__", "kernel"))
        .replace("<", "")
        .replace(">", "")
    )
    job = _worker.Job(kernel, args, base, check)
    folders = [str(_worker.point_folder(root, name, p)) for p in todo]
    results, sent = _execute(job, list(zip(todo, folders)), executor, _bar(progress, len(todo), name))
    result = SweepResult(params if params is not None else sorted({k for p in todo for k in p}))
    result.sent_bytes = sent
    for point, res in zip(todo, results):
        result.rows.append({**point, **{c: res.get(c) for c in RESULT_COLUMNS}})
    for row, res in zip(result.rows, results):
        row["empty"] = _empty(row, res.get("untouched", False), result.ok)
    return result


def _has(row: dict[str, Any], stage: str) -> bool:
    return any(row.get(f"busy_{p}") for p in STAGES[stage])


def _empty(row: dict[str, Any], untouched: bool, ran: list[dict[str, Any]]) -> str | None:
    """Why the point's work is empty (see the module's docstring), or None."""
    if row["error"] is not None:
        return None
    others = [r for r in ran if r is not row and any(_has(r, s) for s in STAGES)]  # not empty ones
    missing = [s for s in STAGES if not _has(row, s) and others and all(_has(r, s) for r in others)]
    if missing:
        return f"no instruction that {' or '.join(missing)}, which every other point runs"
    if untouched and not _has(row, "writes GM"):
        return "it wrote nothing (every array argument is as it was)"
    return None


def _bar(progress: bool | None, total: int, name: str):
    if progress is False:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    if progress is None and not sys.stderr.isatty():
        return None
    return tqdm(total=total, desc=f"sweep {name}", unit="point")


def _execute(
    job: _worker.Job, todo: list[tuple[dict[str, Any], str]], executor: Executor | str | None, bar
) -> tuple[list[dict[str, Any]], int]:
    """The points' results, and the bytes pickled for the workers."""
    if executor not in (None, "process", "serial") and not isinstance(executor, Executor):
        raise TuneError(
            f"executor must be a concurrent.futures.Executor, 'process' or 'serial'; got {executor!r}"
        )
    tick = bar.update if bar is not None else (lambda n=1: None)
    try:
        if executor == "serial":  # nothing leaves this process: the job is not pickled
            return _executors.run_serial(job, todo, tick), 0
        ship = _executors.Shipment(_worker.dumps(job), todo)
        if executor is None or executor == "process":
            rows = _executors.run_pool(ship, tick)
        else:
            assert isinstance(executor, Executor)
            rows = _executors.run_foreign(executor, ship, tick)
        return rows, ship.sent
    finally:
        if bar is not None:
            bar.close()
