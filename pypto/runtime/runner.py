"""Upstream PyPTO's ``pypto.runtime.runner``: ``run``, ``RunConfig`` and ``execute_compiled``.

``execute_compiled(work_dir, args, ...)`` runs the program a compile left in ``work_dir`` (the
``output_dir`` of ``ir.compile`` or ``kernel.compile``), as model harnesses do, in this process
or a new one: the folder alone is enough (``CompiledProgram.from_dir``). ``args`` are in the
orchestration's parameter order; tensors are numpy arrays, torch tensors or ``DeviceTensor``s,
scalars plain numbers or ctypes values (``ctypes.c_int32(7)``). Outputs are written in place.
"""

from __future__ import annotations

import ctypes
import dataclasses
import os
from pathlib import Path
from typing import Any

from pypto.errors import ArgumentError
from pypto.runtime.config import RunConfig
from pypto.runtime.dfx import DfxOptions
from pypto.runtime.entry import META, from_dir, run

_DfxOpts = DfxOptions  # upstream's name, which model harnesses import from here

__all__ = ["DfxOptions", "RunConfig", "execute_compiled", "run"]

# Folders already rebuilt in this process, keyed by their compiled_meta.json's identity: a
# harness that runs one folder many times parses and plans it once.
_LOADED: dict[tuple[str, int, int], Any] = {}


def load_compiled(work_dir: str | Path) -> Any:
    """The ``CompiledProgram`` kept in ``work_dir`` (rebuilt once per change of the folder)."""
    folder = Path(work_dir).resolve()
    try:
        st = os.stat(folder / META)
        key = (str(folder), st.st_mtime_ns, st.st_size)
    except OSError:
        return from_dir(folder)  # names what is missing
    if key not in _LOADED:
        _LOADED[key] = from_dir(folder)
    return _LOADED[key]


def _plain(value: Any) -> Any:
    """A ctypes scalar as its Python value (upstream passes scalars as ctypes objects)."""
    return value.value if isinstance(value, ctypes._SimpleCData) else value


def execute_compiled(
    work_dir: str | Path,
    args: list[Any] | tuple[Any, ...],
    *,
    platform: str | None = None,
    device_id: int = 0,
    dfx: DfxOptions | None = None,
    level: int = 2,
    aicpu_thread_num: int | None = None,
    analyze_auto_scopes_for_deps: bool = False,
) -> None:
    """Runs the compiled program in ``work_dir`` on ``args``; outputs are written in place.

    ``platform`` (default: the one compiled for) must be the compiled one; ``device_id``,
    ``aicpu_thread_num`` and ``analyze_auto_scopes_for_deps`` are accepted and mean nothing on
    the simulator; ``dfx`` turns on diagnostics (:mod:`pypto.runtime.dfx`). The launch's
    ``RunReport`` is ``load_compiled(work_dir).last_report``."""
    del device_id, aicpu_thread_num, analyze_auto_scopes_for_deps
    if level != 2:
        raise ValueError(f"execute_compiled runs one chip (level=2), got level={level}")
    if dfx is not None and not isinstance(dfx, DfxOptions):
        raise TypeError(f"execute_compiled(dfx=...) takes a DfxOptions, got {type(dfx).__name__}")
    if not isinstance(args, (list, tuple)):
        raise TypeError(f"execute_compiled takes its arguments as a list, got {type(args).__name__}")
    compiled = load_compiled(work_dir)
    if platform is not None and platform != compiled.platform:
        raise ValueError(
            f"{work_dir} was compiled for {compiled.platform!r}, not {platform!r}; compile for {platform!r}"
        )
    values = tuple(_plain(a) for a in args)
    if len(values) != len(compiled.param_names):
        raise ArgumentError(
            f"{compiled.name} takes {len(compiled.param_names)} arguments "
            f"({', '.join(compiled.param_names)}), got {len(values)}"
        )
    _check_scalars(compiled, values)  # tensors are checked by the call, against the program's types
    config = compiled.config
    if dfx is not None and dfx.any():
        config = dataclasses.replace(config, **dataclasses.asdict(dfx))
    compiled(*values, config=config)


def _check_scalars(compiled: Any, values: tuple) -> None:
    """Scalars are compile-time constants here: a run with another value is refused."""
    for name, value in zip(compiled.param_names, values):
        if name in compiled.scalar_values and value != compiled.scalar_values[name]:
            raise ArgumentError(
                f"argument {name!r} is {value!r}, but {compiled.name} was compiled with "
                f"{compiled.scalar_values[name]!r} (scalars are compile-time constants); compile again"
            )
