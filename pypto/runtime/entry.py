"""Upstream PyPTO's entry points, on the simulator.

* ``pypto.runtime.run(program, *tensors, config=RunConfig(...))`` compiles a ``@pl.program``
  (or a ``@pl.jit`` kernel), runs it when tensors are given and returns the compiled program;
* ``pypto.ir.compile(program, output_dir=..., platform=...)`` compiles without running;
* ``CompiledProgram.from_dir(output_dir)`` rebuilds a compiled program from its folder
  (``compiled_meta.json`` + ``program.py``, the lowered IR as text), rebuilding kernels whose
  shared objects are gone from the cache;
* a compiled program is callable: ``compiled(a, b, c)`` runs it in place.

A ``@pl.program`` has fixed tensor types, so every call checks the arguments against them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pypto.errors import PyptoError
from pypto.ir.stmt import Program
from pypto.ir.types import DynDim, TensorType
from pypto.runtime.marshal import ArgumentError

META = "compiled_meta.json"
PROGRAM_TEXT = "program.py"
SCHEMA = 1


class CompiledDirError(PyptoError):
    """An output_dir that holds no compiled program this version can rebuild."""


def _shape_dtype(value: Any) -> tuple[tuple[int, ...], str] | None:
    shape = getattr(value, "shape", None)
    if shape is None:
        return None
    return tuple(int(d) for d in shape), str(getattr(value, "dtype", "")).removeprefix("torch.")


def _dtype_of(value: Any) -> Any:
    from pypto.ir.dtypes import from_array_dtype

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
    from pypto.runtime.config import RunConfig
    from pypto.runtime.jit import compile_program

    if config is None:
        config = RunConfig(platform=platform, output_dir=output_dir, **options)
    compiled = compile_program(ProgramSource(program), (), {}, config)
    compiled.fixed_signature = True
    return compiled


def run(program: Any, *tensors: Any, config: Any = None) -> Any:
    """``pypto.runtime.run``: compile ``program`` (a ``@pl.program`` or a ``@pl.jit`` kernel),
    run it on ``tensors`` when given, and return the ``CompiledProgram``."""
    from pypto.language.decorators import JitFunction
    from pypto.runtime.config import RunConfig
    from pypto.runtime.jit import compile_program

    config = config or RunConfig()
    if isinstance(program, JitFunction):
        compiled = compile_program(program, tensors, {}, config)
    else:
        compiled = compile(program, config=config)
    if tensors:
        compiled(*tensors)
    return compiled


# --- the folder form --------------------------------------------------------------------------
def save(compiled: Any, scalar_args: dict[str, Any]) -> None:
    """Writes what ``from_dir`` needs next to the build (at every fresh compile)."""
    from pypto.ir.printer import print_program

    cfg = compiled.config
    meta = {
        "schema": SCHEMA,
        "name": compiled.name,
        "platform": cfg.platform,
        "memory_planner": cfg.planner.name,
        "platform_overrides": dict(cfg.platform_overrides),
        "cost_profile": cfg.cost_profile,
        "seed": cfg.seed,
        "trace": cfg.trace,
        "scalar_args": scalar_args,
        "kernels": {name: str(path) for name, path in compiled.kernels.items()},
        "external": [
            {"name": s.name, "path": str(s.path), "include_dirs": [str(d) for d in s.include_dirs]}
            for s in compiled.external
        ],
    }
    out = compiled.output_dir
    out.mkdir(parents=True, exist_ok=True)
    _write_whole(out / PROGRAM_TEXT, print_program(compiled.program))
    _write_whole(out / META, json.dumps(meta, indent=1))


def _write_whole(path: Path, text: str) -> None:
    """Written then renamed: a process reading the folder never sees half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _read_meta(folder: Path) -> dict[str, Any]:
    path = folder / META
    try:
        meta = json.loads(path.read_text())
    except FileNotFoundError:
        raise CompiledDirError(f"{folder} holds no {META}: not the output_dir of a compile") from None
    except (OSError, ValueError) as e:
        raise CompiledDirError(f"{path} cannot be read ({e}); recompile to refresh it") from None
    if not isinstance(meta, dict) or meta.get("schema") != SCHEMA:
        raise CompiledDirError(f"{path} is not a schema-{SCHEMA} compiled program; recompile to refresh it")
    return meta


def from_dir(output_dir: str | Path) -> Any:
    """``CompiledProgram.from_dir``: the compiled program kept in ``output_dir``."""
    from pypto.frontend.parser import parse_file
    from pypto.passes.options import MemoryPlanner
    from pypto.runtime.build import KernelSource, build_kernels
    from pypto.runtime.build.source import file_stem
    from pypto.runtime.config import RunConfig
    from pypto.runtime.jit import CompiledProgram, _entry_outputs
    from pypto.runtime.plan import plan_orchestration

    folder = Path(output_dir).resolve()
    meta = _read_meta(folder)
    program = parse_file(folder / PROGRAM_TEXT)
    config = RunConfig(
        platform=meta["platform"],
        memory_planner=MemoryPlanner[meta["memory_planner"]],
        platform_overrides=meta["platform_overrides"],
        cost_profile=meta.get("cost_profile", "device"),
        seed=meta["seed"],
        trace=meta["trace"],
        output_dir=folder,
    )
    external = [
        KernelSource(name=e["name"], path=Path(e["path"]), include_dirs=tuple(map(Path, e["include_dirs"])))
        for e in meta["external"]
    ]
    generated = [
        KernelSource(name=name, code=(folder / "kernels" / f"{file_stem(name)}.cpp").read_text())
        for name in meta["kernels"]
        if name not in {e.name for e in external}
    ]
    # A cache lookup when the shared objects are still there, a rebuild when they are not.
    paths = build_kernels(generated + external, platform=config.platform, output_dir=folder)
    kernels = {s.name: p for s, p in zip(generated + external, paths)}
    names, outs, tensors = _entry_outputs(program)
    plan = plan_orchestration(program, program.entry, meta["scalar_args"])
    compiled = CompiledProgram(meta["name"], folder, names, config.platform, program, config, kernels, plan,
                               outs, tensors, [], external, meta["scalar_args"])  # fmt: skip
    compiled.fixed_signature = True
    return compiled
