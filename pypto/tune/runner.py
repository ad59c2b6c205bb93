"""``sweep``: every point of a parameter space, compiled and run, ranked by simulated cycles.

A point is one value per parameter. Parameters named like ``RunConfig`` fields
(``memory_planner``, ``platform``, ``platform_overrides``, ...) configure the run; the others
go to the kernel factory, a function that returns a ``@pl.jit`` kernel built with them (tile
shapes and pipeline depths are compile-time constants of the kernel, hence a factory).

Points run through any ``concurrent.futures.Executor``: a local process pool by default,
``"serial"`` in this process, or a Dask cluster's ``Client(...).get_executor()`` (Ray's
``RayExecutor`` works the same way). A point that fails to compile (a tile that does not
fit, say) is a row with its error, not a failed sweep.
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
from pypto.tune import _worker
from pypto.tune.errors import TuneError

log = logging.getLogger(__name__)


RESULT_COLUMNS = ("cycles", "time_us", "bound", "wall_s", "error")


@dataclass
class SweepResult:
    """The rows of a sweep in space order, and the best point (fewest cycles, first on a tie)."""

    params: list[str]
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["error"] is None]

    @property
    def best_row(self) -> dict[str, Any]:
        if not self.ok:
            errors = "; ".join(sorted({r["error"] for r in self.rows}))[:800]
            raise TuneError(f"no point of the sweep ran: {errors}")
        return min(self.ok, key=lambda r: r["cycles"])

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
        return pandas.DataFrame(self.rows, columns=[*self.params, *RESULT_COLUMNS])

    def format(self) -> str:
        """The rows as an aligned text table, the best point marked with ``*``."""
        best = self.best_row if self.ok else None
        cols = [*self.params, "cycles", "bound"]
        cells = [[_cell(r, c) for c in cols] + [r["error"] or ""] for r in self.rows]
        widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
        head = "  ".join(c.rjust(w) for c, w in zip(cols, widths))
        lines = ["  " + head]
        for r, row in zip(self.rows, cells):
            mark = "* " if r is best else "  "
            text = "  ".join(v.rjust(w) for v, w in zip(row, widths))
            lines.append((mark + text + ("  " + row[-1] if row[-1] else "")).rstrip())
        return "\n".join(lines)


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
) -> SweepResult:
    """Runs ``kernel(**point)(*args, config=...)`` for every point of ``space``.

    ``args``: the call's arguments (outputs are copied per point), or a function of the
    point's parameters returning them. ``check(*args)`` may assert on the outputs.
    ``progress``: a tqdm bar (when tqdm is installed; None: only on a terminal).
    """
    _check_parameters(kernel, [k for k in space if k not in _worker.config_fields()])
    return run_points(kernel, points(space), args, config=config, executor=executor, check=check,
                      progress=progress, params=list(space))  # fmt: skip


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
    from pypto.runtime.config import RunConfig

    base = config or RunConfig()
    root = Path(base.output_dir) if base.output_dir else knobs.cache_dir() / "tune"
    name = (
        getattr(kernel, "__qualname__", getattr(kernel, "__name__", "kernel"))
        .replace("<", "")
        .replace(">", "")
    )
    tasks = [
        _worker.Task(kernel, p, args, base, check, str(_worker.point_folder(root, name, p))) for p in todo
    ]
    results = _execute(tasks, executor, _bar(progress, len(tasks), name))
    result = SweepResult(params if params is not None else sorted({k for p in todo for k in p}))
    for point, res in zip(todo, results):
        result.rows.append({**point, **{c: res.get(c) for c in RESULT_COLUMNS}})
    return result


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


def _execute(tasks: list[_worker.Task], executor: Executor | str | None, bar) -> list[dict[str, Any]]:
    from pypto.tune import _executors

    if executor not in (None, "process", "serial") and not isinstance(executor, Executor):
        raise TuneError(
            f"executor must be a concurrent.futures.Executor, 'process' or 'serial'; got {executor!r}"
        )
    payloads = [_worker.dumps(t) for t in tasks]
    tick = bar.update if bar is not None else (lambda n=1: None)
    try:
        if executor == "serial":
            return _executors.run_serial(payloads, tick)
        if executor is None or executor == "process":
            return _executors.run_pool(payloads, tick)
        assert isinstance(executor, Executor)
        return _executors.run_foreign(executor, payloads, tick)
    finally:
        if bar is not None:
            bar.close()
