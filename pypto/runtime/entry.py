"""Upstream PyPTO's entry points, on the simulator.

* ``pypto.runtime.run(program, *tensors, config=RunConfig(...))`` compiles a ``@pl.program``
  (or a ``@pl.jit`` kernel), runs it when tensors are given and returns the compiled program;
* ``pypto.ir.compile(program, output_dir=..., platform=...)`` compiles without running;
* ``CompiledProgram.from_dir(output_dir)`` rebuilds a compiled program from its folder (the
  folder codec of :mod:`pypto.compile.codecs`), rebuilding kernels whose shared objects are
  gone from the cache;
* a compiled program is callable: ``compiled(a, b, c)`` runs it in place.

A ``@pl.program`` has fixed tensor types, so every call checks the arguments against them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pypto.compile.codecs import META, PROGRAM_TEXT, CompiledDirError, from_folder
from pypto.ir.dtypes import from_array_dtype
from pypto.ir.stmt import Program
from pypto.ir.types import DynDim, TensorType
from pypto.language.decorators import JitFunction
from pypto.runtime.config import RunConfig
from pypto.runtime.jit import CompiledProgram, compile_program
from pypto.runtime.marshal import ArgumentError

__all__ = [
    "META",
    "PROGRAM_TEXT",
    "CompiledDirError",
    "ProgramSource",
    "check_signature",
    "compile",
    "from_dir",
    "run",
]


def _shape_dtype(value: Any) -> tuple[tuple[int, ...], str] | None:
    shape = getattr(value, "shape", None)
    if shape is None:
        return None
    return tuple(int(d) for d in shape), str(getattr(value, "dtype", "")).removeprefix("torch.")


def _dtype_of(value: Any) -> Any:

    try:
        return from_array_dtype(value.dtype)
    except Exception:  # not an array dtype pypto knows: reported as a mismatch below
        return None


def check_signature(program: Program, args: tuple) -> None:
    """Tensor arguments must match the program's declared shapes and dtypes."""
    params = program.entry.params
    if len(args) != len(params):
        names = ", ".join(p.var.name for p in params)
        raise ArgumentError(f"{program.name} takes {len(params)} arguments ({names}), got {len(args)}")
    for p, arg in zip(params, args):
        t = p.var.type
        if not isinstance(t, TensorType):
            continue
        got = _shape_dtype(arg)
        if got is None or not _shape_fits(got[0], t.shape) or _dtype_of(arg) != t.dtype:
            shown = "a non-array" if got is None else f"shape {got[0]} dtype {got[1]}"
            raise ArgumentError(
                f"{program.name}: argument {p.var.name!r} must be a tensor of shape {tuple(t.shape)} "
                f"and dtype {t.dtype.name}, got {shown}",
                p.span,
            )


def _shape_fits(got: tuple[int, ...], declared: tuple) -> bool:
    """An array shape against a declared one; a ``pl.dynamic`` dim takes any size."""
    return len(got) == len(declared) and all(isinstance(d, DynDim) or g == d for g, d in zip(got, declared))


class ProgramSource:
    """A ``@pl.program`` seen as the compiler's kernel source (what ``compile_program`` takes)."""

    def __init__(self, program: Program) -> None:
        if not isinstance(program, Program):
            raise TypeError(f"expected a @pl.program (an ir.Program), got {type(program).__name__}")
        self.program = program
        self.name = program.name
        span = program.entry.span
        self.origin = (str(span.file), span.line) if span is not None else None

    def parse(self, *args: Any, **kwargs: Any) -> Program:
        if args:
            check_signature(self.program, args)
        return self.program

    def specialization_key(self, *args: Any, **kwargs: Any) -> tuple:
        return tuple(_shape_dtype(a) or type(a).__name__ for a in args)


def compile(program: Any, output_dir: str | Path | None = None, *, platform: str = "a2a3sim",
            config: Any = None, **options: Any) -> Any:  # fmt: skip
    """``pypto.ir.compile``: the ``CompiledProgram`` of a ``@pl.program`` (not run).

    ``options`` take ``RunConfig`` fields; upstream options that mean nothing on the
    simulator are accepted with a warning."""
    if config is None:
        config = RunConfig(platform=platform, output_dir=output_dir, **options)
    compiled = compile_program(ProgramSource(program), (), {}, config)
    compiled.fixed_signature = True
    return compiled


def run(program: Any, *tensors: Any, config: Any = None) -> Any:
    """``pypto.runtime.run``: compile ``program`` (a ``@pl.program`` or a ``@pl.jit`` kernel),
    run it on ``tensors`` when given, and return the ``CompiledProgram``."""
    config = config or RunConfig()
    if isinstance(program, JitFunction):
        compiled = compile_program(program, tensors, {}, config)
    else:
        compiled = compile(program, config=config)
    if tensors:
        compiled(*tensors)
    return compiled


def from_dir(output_dir: str | Path) -> Any:
    """``CompiledProgram.from_dir``: the compiled program kept in ``output_dir``."""

    folder = Path(output_dir).resolve()
    artifact, run = from_folder(folder)
    options = artifact.options
    config = RunConfig(
        platform=options.platform,
        memory_planner=options.planner,
        platform_overrides=dict(options.platform_overrides),
        disabled_diagnostics=set(options.disabled_diagnostics) if options.disabled_diagnostics else None,
        cost_profile=run.cost_profile,
        seed=run.seed,
        trace=run.trace,
        output_dir=folder,
    )
    compiled = CompiledProgram(artifact, config, folder)
    compiled.fixed_signature = True
    return compiled
