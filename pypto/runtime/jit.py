"""``@pl.jit`` end to end: parse → passes → C++ → build → launch plan → run.

This module compiles (or restores from the program cache) and calls; the compiled program
itself, and how it runs, is :mod:`pypto.runtime.compiled` (``CompiledProgram`` is importable
from here too).

A compiled program is cached on the kernel object per (specialisation key, compile options),
so a warm call costs a dict lookup plus the native run; and on disk
(:mod:`pypto.runtime.program_cache`), so a new process skips parse, passes and codegen.
"""

from __future__ import annotations

import functools
import pickle
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pypto import _native, knobs, logs
from pypto._light import Logger, sha256
from pypto.errors import ConfigError, KernelLoadError
from pypto.frontend import captured
from pypto.ir.enums import Direction
from pypto.runtime import program_cache
from pypto.runtime.build import KernelSource, build_kernels, kernel_cache_dir
from pypto.runtime.build.source import file_stem
from pypto.runtime.compiled import CompiledProgram, RestoredProgram
from pypto.runtime.config import RunConfig

if TYPE_CHECKING:
    from pypto.ir.stmt import Program

# The compiler (frontend, passes, codegen), the IR node classes, the planner and the report
# are imported when first needed: a process whose programs all come from the program cache
# runs without loading them (a new process's first call stays within milliseconds).

log = Logger(__name__)

__all__ = ["CompiledProgram", "call_jit", "compile_program", "lower_program", "program_key"]


def _entry_outputs(program: Program) -> tuple[list[str], frozenset[int], list[int]]:
    from pypto.ir.types import TensorType  # loaded with the program's IR

    entry = program.entry
    names = [p.var.name for p in entry.params]
    outs = frozenset(i for i, p in enumerate(entry.params) if p.direction in (Direction.Out, Direction.InOut))
    tensors = [i for i, p in enumerate(entry.params) if isinstance(p.var.type, TensorType)]
    return names, outs, tensors


def _output_dir(jf: Any, key: tuple, config: RunConfig) -> Path:
    if config.output_dir is not None:
        return Path(config.output_dir).resolve()  # ninja runs in another folder
    # Where the kernel is defined is part of the folder's name: two files' kernels of one name
    # never share a folder (nor its report/perf_hints.log).
    code = getattr(getattr(jf, "fn", None), "__code__", None)
    origin = (code.co_filename, code.co_firstlineno) if code is not None else getattr(jf, "origin", None)
    digest = sha256(repr((jf.name, origin, key)).encode()).hexdigest()[:16]
    return knobs.cache_dir() / "programs" / f"{file_stem(jf.name)}-{digest}"


def _dumper(out: Path, config: RunConfig):
    if config.dump_level.name == "NONE":
        return None
    from pypto.ir.printer import print_program
    from pypto.runtime.cache_files import ensure_dir

    folder = ensure_dir(out / "passes_dump")
    for old in folder.glob("*.py"):
        old.unlink()

    def dump(index: int, pass_name: str, program: Program) -> None:
        stem = "00_frontend" if index == 0 else f"{index:02d}_after_{pass_name}"
        (folder / f"{stem}.py").write_text(print_program(program))

    return dump


def lower_program(
    jf: Any,
    args: tuple,
    kwargs: dict,
    config: RunConfig,
    out: Path | None = None,
    sink: Any = None,
) -> Program:
    """Frontend + passes: the lowered IR (no codegen, no artifacts unless dumping)."""
    from pypto.diagnostics.hints import HintSink
    from pypto.passes.context import PassContext
    from pypto.passes.pipeline import run_passes

    program = jf.parse(*args, **kwargs)
    ctx = PassContext(config.resolved_platform(), config.planner, sink or HintSink())
    dump = _dumper(out, config) if out is not None else None
    return run_passes(program, ctx, dump=dump)


def _external_sources(program: Program) -> list[KernelSource]:
    return [
        KernelSource(
            name=f.name, path=Path(f.external_source), include_dirs=tuple(Path(d) for d in f.include_dirs)
        )
        for f in program.functions
        if f.external_source is not None
    ]


def _check_loadable(paths: dict[str, Path], sources: list[KernelSource], platform: str) -> None:
    """Load each kernel now, so a missing entry point is a compile error naming the file.

    A cached kernel that passed validation yet does not load is never trusted again: its
    entry is evicted and the kernel rebuilt once (``paths`` is updated in place).
    """
    for src in sources:
        try:
            _native.load_kernel(str(paths[src.name]))
        except KernelLoadError as e:
            if _evicted(paths[src.name], e):
                paths[src.name] = build_kernels([src], platform=platform)[0]
                _check_loadable(paths, [src], platform)
                continue
            where = src.path if src.path is not None else f"generated kernel {src.name}"
            raise KernelLoadError(f"{where}: {e.message}") from None


def _evicted(so: Path, error: KernelLoadError) -> bool:
    """Evicts ``so``'s kernel cache entry if it has one; False if ``so`` is not in the cache."""
    from pypto.runtime.build.cache import evict

    if not so.is_relative_to(kernel_cache_dir()):
        return False
    evict(so.parent, error.message)
    return True


def compile_program(jf: Any, args: tuple, kwargs: dict, config: RunConfig) -> CompiledProgram:
    key = (jf.specialization_key(*args, **kwargs), config.compile_key())
    cache = jf.__dict__.setdefault("_pypto_compiled", {})
    compiled = cache.get(key)  # one lookup: hashing the key's enums runs Python code
    if compiled is not None and not _captured_changed(jf, cache):
        compiled.refresh_external()
        return compiled
    if not cache and getattr(jf, "fn", None) is not None:  # the values this compile folds in
        jf._pypto_captured = captured.guards(jf.fn)
    logs.configure()
    out = _output_dir(jf, key, config)
    # Dumps are artifacts of a compile, so a dumping config always compiles.
    disk_key = program_key(jf, key[0], config) if config.dump_level.name == "NONE" else None
    compiled = _from_disk(jf, disk_key, config, out) if disk_key else None
    if compiled is None:
        compiled = _compile(jf, args, kwargs, config, out, disk_key)
    cache[key] = compiled
    return compiled


def _captured_changed(jf: Any, cache: dict) -> bool:
    """Whether a module constant or closure value the kernel folded in was rebound since it
    compiled: then every specialisation is stale, as a new process would see the new value."""
    name = captured.changed(jf.__dict__.get("_pypto_captured", ()))
    if name is None:
        return False
    log.info("%s: %s changed since it was compiled; compiling again", jf.name, name)
    cache.clear()
    return True


def program_key(jf: Any, spec_key: tuple, config: RunConfig) -> str | None:
    """The program cache key of this compile (None: not cached on disk)."""
    fn = getattr(jf, "fn", None)  # a @pl.program has no Python function to key on
    return program_cache.program_key(fn, spec_key, config) if fn is not None else None


def _from_disk(jf: Any, disk_key: str, config: RunConfig, out: Path) -> CompiledProgram | None:
    """The program cache's entry for ``disk_key``, its kernels validated; None on a miss."""
    entry = program_cache.load(disk_key, jf.fn)
    if entry is None:
        return None
    paths = program_cache.kernel_paths(entry)
    if paths is None or not _all_load(paths):
        return None
    compiled = RestoredProgram(
        jf.name,
        out,
        entry.param_names,
        config.platform,
        None,  # type: ignore[arg-type]  # the IR and the plan stay pickled until read
        config,
        paths,
        None,  # type: ignore[arg-type]
        entry.outputs,
        entry.tensor_params,
        entry.hints,
        entry.external,
        entry.scalar_values,
    )
    state = compiled.__dict__
    del state["program"], state["plan"]
    state["_blobs"] = {"program": entry.program_blob, "plan": entry.plan_blob}
    state.update(
        launch_specs=entry.launch_specs,
        dynamic_plan=entry.dynamic_plan,
        intermediates=entry.intermediates,
        cube_kernels=entry.cube_kernels,
    )
    if config.output_dir is not None:  # the user's folder gets a compile's artifacts
        from pypto.runtime.cache_files import atomic_write, ensure_dir

        ensure_dir(out / "kernels")
        for name, code in entry.sources.items():
            atomic_write(out / "kernels" / f"{file_stem(name)}.cpp", code.encode())
        _write_hint_lines(entry.hints, out)
    if entry.hints:  # as a compile whose hints are unchanged says it: at INFO
        import logging

        sites = len({line.rsplit(" at ", 1)[-1] for line in entry.hints})
        logging.getLogger("pypto.perf_hints").info(
            "[perf_hint] %d hints across %d sites; see %s",
            len(entry.hints),
            sites,
            out / "report" / "perf_hints.log",
        )
    compiled.refresh_external()  # hand-written kernels: a build-cache lookup (rebuilt if edited)
    log.debug("program cache hit for %s (%s)", jf.name, disk_key[:16])
    return compiled


def _all_load(paths: dict[str, Path]) -> bool:
    """Loads every cached kernel of a program cache entry; one that does not load is evicted
    (the compile that follows rebuilds it)."""
    for so in paths.values():
        try:
            _native.load_kernel(str(so))
        except KernelLoadError as e:
            _evicted(so, e)
            return False
    return True


def _write_hint_lines(lines: list[str], out: Path) -> None:
    from pypto.runtime.cache_files import ensure_dir

    log_file = ensure_dir(out / "report") / "perf_hints.log"
    log_file.write_text("".join(line + "\n" for line in lines))  # rewritten per compile, never appended


def _compile(
    jf: Any, args: tuple, kwargs: dict, config: RunConfig, out: Path, disk_key: str | None
) -> CompiledProgram:
    """Parse, passes, codegen and build; the result is stored under ``disk_key`` if given."""
    from pypto.codegen import kernel_sources
    from pypto.diagnostics.hints import HintSink, write_hints
    from pypto.runtime.cache_files import ensure_dir
    from pypto.runtime.plan import plan_orchestration

    sink = HintSink(frozenset(config.disabled_diagnostics or ()))
    lowered = lower_program(jf, args, kwargs, config, out, sink)
    sources = [KernelSource(name=name, code=code) for name, code in kernel_sources(lowered)]
    external = _external_sources(lowered)
    paths = dict(
        zip(
            [s.name for s in sources + external],
            build_kernels(sources + external, platform=config.platform, output_dir=out),
        )
    )
    _check_loadable(paths, sources + external, config.platform)
    ensure_dir(out)
    write_hints(sink, out)
    names, outs, tensors = _entry_outputs(lowered)
    scalar_args = {n: a for n, a in zip(names, args) if isinstance(a, (int, float))}
    plan = plan_orchestration(lowered, lowered.entry, scalar_args, _positional(names, args, kwargs))
    hints = sink.lines()
    compiled = CompiledProgram(
        jf.name, out, names, config.platform, lowered, config, paths, plan, outs, tensors, hints, external,
        scalar_args,
    )  # fmt: skip
    from pypto.runtime.entry import save as save_compiled

    save_compiled(compiled, scalar_args)  # what CompiledProgram.from_dir reads back
    if disk_key is not None:
        root = kernel_cache_dir()
        program_cache.store(
            disk_key,
            jf.fn,
            {
                "program_blob": pickle.dumps(lowered, protocol=pickle.HIGHEST_PROTOCOL),
                "plan_blob": pickle.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL),
                "launch_specs": compiled.launch_specs,
                "dynamic_plan": compiled.dynamic_plan,
                "intermediates": compiled.intermediates,
                "cube_kernels": compiled.cube_kernels,
                "param_names": names,
                "outputs": outs,
                "tensor_params": tensors,
                "hints": hints,
                "kernels": {s.name: str(paths[s.name].parent.relative_to(root)) for s in sources},
                "sources": {s.name: s.code for s in sources},
                "external": external,
                "scalar_values": scalar_args,
            },
        )
    log.debug("compiled %s into %s (%d kernels, %d tasks)", jf.name, out, len(paths), len(plan.tasks))
    return compiled


def call_jit(jf: Any, args: tuple, kwargs: dict, config: RunConfig | None) -> Any:
    """``kernel(*args, config=...)``: compile (cached), run, keep ``last_report``, return outputs."""
    if config is None:
        config = RunConfig()
    elif not isinstance(config, RunConfig):
        raise ConfigError(
            f"config must be a pypto.runtime.RunConfig, got {type(config).__name__} {config!r} "
            "(e.g. config=RunConfig(platform='a5sim'))"
        )
    compiled = compile_program(jf, args, kwargs, config)
    args = compiled.positional(args, kwargs)
    before = config.dfx.before_launch(compiled, args) if config.any_dfx_enabled() else None
    results = compiled.execute(args, config.trace, config)
    traffic = compiled.account_worker(args)
    if config.trace or before is not None:  # the trace files are written now, with the report
        jf.last_report = compiled.launch_report(results, config.trace, traffic)
        if before is not None:
            config.dfx.after_launch(compiled, args, jf.last_report, before)
    else:  # built when first read: most warm calls never look at it
        jf.last_report = functools.partial(compiled.launch_report, results, False, traffic)
    outs = compiled.returned
    if len(outs) == 1:
        return args[outs[0]]
    return tuple(args[i] for i in outs) if outs else None


def _positional(names: list[str], args: tuple, kwargs: dict) -> tuple:
    """The call's arguments in parameter order (keywords placed by name)."""
    if not kwargs:
        return args
    from pypto.frontend.specialize import bind_arguments

    return tuple(bind_arguments("", names, args, kwargs, None))
