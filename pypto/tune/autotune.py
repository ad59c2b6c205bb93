"""``@pl.autotune(configs=[...], key=[...])``: a kernel factory that picks its best config
per key on first use, by simulated cycles, and remembers the pick on disk.

    @pl.autotune(configs=[{"rows": 32}, {"rows": 64}], key=["a"])
    def exp_rows(rows):
        @pl.jit
        def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]): ...
        return kernel

    exp_rows(a, out)          # first call for a's shape and dtype: tries both, runs the best
    exp_rows.picks            # {key: config} in this process; also in the cache folder

``prune=fn``: ``fn(configs, named_args)`` returns the configs worth trying for this call (say,
none whose tile is larger than the input); ``print=True`` prints each pick, its cycles and the
sweep behind it.

The key of a call is, per named parameter, an array's (shape, dtype) or a scalar's value.
The pick file lives in ``$PYPTO_CACHE_DIR/autotune/`` under a name that changes with the
factory's source, the configs and the platform, so an edit never reuses a stale pick.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pypto import knobs
from pypto.runtime.config import RunConfig
from pypto.tune.errors import TuneError
from pypto.tune.runner import pruned, run_points

log = logging.getLogger(__name__)

Pruner = Callable[[list[dict[str, Any]], dict[str, Any]], Sequence[dict[str, Any]]]


def _source(fn: Any) -> str:
    """A function's source text (its name when the source is not at hand; '' for None)."""
    if fn is None:
        return ""
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return getattr(fn, "__qualname__", repr(fn))


def _key_part(value: Any) -> Any:
    shape = getattr(value, "shape", None)
    if shape is not None:
        return [list(shape), str(getattr(value, "dtype", ""))]
    return value


class Autotuned:
    """The decorated factory; calling it runs the picked kernel (``config=`` as a kernel)."""

    def __init__(self, factory: Callable[..., Any], configs: Sequence[dict[str, Any]], key: Sequence[str],
                 executor: Any = "serial", prune: Pruner | None = None,
                 verbose: bool = False) -> None:  # fmt: skip
        if not configs:
            raise TuneError("pl.autotune needs at least one config")
        self.factory, self.configs, self.key, self.executor = (
            factory,
            [dict(c) for c in configs],
            list(key),
            executor,
        )
        self.prune, self.verbose = prune, verbose
        self.picks: dict[str, dict[str, Any]] = {}
        self._kernels: dict[str, Any] = {}
        functools.update_wrapper(self, factory)

    @functools.cached_property
    def param_names(self) -> tuple[str, ...]:
        names = self.kernel(self.configs[0]).param_names
        unknown = [k for k in self.key if k not in names]
        if unknown:
            raise ValueError(
                f"pl.autotune key names {unknown} are not parameters of the kernel ({', '.join(names)})"
            )
        return names

    def kernel(self, config: dict[str, Any]) -> Any:
        name = json.dumps(config, sort_keys=True, default=str)
        if name not in self._kernels:
            self._kernels[name] = self.factory(**config)
        return self._kernels[name]

    def key_of(self, args: tuple, kwargs: dict[str, Any]) -> str:
        bound = dict(zip(self.param_names, args)) | kwargs
        return json.dumps([_key_part(bound[k]) for k in self.key], default=str)

    def cache_file(self, platform: str) -> Path:
        ident = json.dumps([_source(self.factory), _source(self.prune), self.configs, platform], default=str)
        digest = hashlib.sha256(ident.encode()).hexdigest()[:16]
        return knobs.cache_dir() / "autotune" / f"{self.factory.__name__}-{digest}.json"

    def _stored(self, path: Path) -> dict[str, Any]:
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return {}

    def pick(self, *args: Any, config: Any = None, **kwargs: Any) -> dict[str, Any]:
        """The config for these arguments: remembered, read from disk, or found by a sweep."""
        config = config or RunConfig()
        key = self.key_of(args, kwargs)
        if key in self.picks:
            return self.picks[key]
        path = self.cache_file(config.platform)
        stored = self._stored(path)
        if key in stored:
            self.picks[key] = stored[key]["config"]
            self._say(
                f"{key} -> {json.dumps(self.picks[key])} ({stored[key]['cycles']} cycles; read from {path})"
            )
            return self.picks[key]
        bound = dict(zip(self.param_names, args)) | kwargs
        call = tuple(bound[n] for n in self.param_names if n in bound)
        named = {n: bound[n] for n in self.param_names if n in bound}
        prune = self.prune
        todo, dropped = pruned(self.configs, None if prune is None else lambda c: prune(c, named))
        started = time.perf_counter()
        result = run_points(self.factory, todo, call,
                            config=config, executor=self.executor, progress=False,
                            params=sorted({k for c in self.configs for k in c}))  # fmt: skip
        result.pruned = dropped
        best = result.best_row
        chosen = next(c for c in self.configs if all(best[k] == v for k, v in c.items()))
        self._remember(path, key, chosen, best["cycles"])
        self.picks[key] = chosen
        self.last_sweep = result
        wall = time.perf_counter() - started
        self._say(f"{key} -> {json.dumps(chosen)} ({best['cycles']} cycles); {len(todo)} config(s) run, "
                  f"{len(dropped)} pruned, in {wall:.2f} s\n{result.format()}")  # fmt: skip
        return chosen

    def _remember(self, path: Path, key: str, chosen: dict[str, Any], cycles: Any) -> None:
        """Keeps a pick for later processes; a folder that cannot be written costs only that
        (the sweep's answer is still used in this process), never the sweep."""
        stored = self._stored(path) | {key: {"config": chosen, "cycles": cycles}}
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(stored, indent=1, default=str))
            os.replace(tmp, path)
        except OSError as e:
            log.warning(
                "autotune: cannot keep the pick for %s in %s (%s); it is used in this process only",
                self.factory.__name__, path, e.strerror or e,
            )  # fmt: skip

    def _say(self, text: str) -> None:
        """With ``print=True``: one pick, to stdout."""
        if self.verbose:
            print(f"pl.autotune {self.factory.__name__}: {text}", flush=True)

    def __call__(self, *args: Any, config: Any = None, **kwargs: Any) -> Any:
        kernel = self.kernel(self.pick(*args, config=config, **kwargs))
        out = kernel(*args, config=config, **kwargs)
        self.last_report = kernel.last_report
        return out


def autotune(configs: Sequence[dict[str, Any]], key: Sequence[str] = (), *, executor: Any = "serial",
             prune: Pruner | None = None, print: bool = False):  # fmt: skip
    """Decorator for a kernel factory: ``configs`` are its keyword sets, ``key`` names the
    kernel parameters whose shapes/values select a pick. ``executor`` as in ``sweep``
    (default: in this process, since a pick is usually a handful of configs).
    ``prune(configs, named_args)``: the configs worth trying for a call's arguments (by
    parameter name). ``print``: print each pick (its config, cycles and the sweep's table)."""
    verbose = print

    def wrap(factory: Callable[..., Any]) -> Autotuned:
        return Autotuned(factory, configs, key, executor, prune, verbose)

    return wrap
