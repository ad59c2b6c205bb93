"""``@pl.jit`` end to end: find or make the compiled program of a call, then run it.

The compile itself is :mod:`pypto.compile` (its product, an ``Artifact``); how a compiled
program runs is :mod:`pypto.runtime.compiled` (``CompiledProgram`` is importable from here too).

The compiled program is cached on the kernel object per (specialisation key, config), so a
warm call costs a dict lookup plus the native run. Its Artifact is kept beside it per
(specialisation key, compile options), so another run option (trace, timeline, cost profile,
output folder, ...) never compiles again; and on disk (:mod:`pypto.runtime.program_cache`), so
a new process skips parse, passes and codegen.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pypto import knobs, logs
from pypto._light import Logger, sha256
from pypto.compile.artifact import Artifact
from pypto.compile.codecs import to_folder
from pypto.compile.options import CompileOptions
from pypto.frontend import captured
from pypto.kernel_build.source import file_stem
from pypto.runtime import program_cache
from pypto.runtime.compiled import CompiledProgram
from pypto.runtime.config import RunConfig, call_config
from pypto.runtime.warm import MISS, WarmCall

if TYPE_CHECKING:
    from pypto.ir.stmt import Program

# The compiler (frontend, passes, codegen), the IR node classes, the planner and the report
# are imported when first needed: a process whose programs all come from the program cache
# runs without loading them (a new process's first call stays within milliseconds).

log = Logger(__name__)

_WARM = "warm"  # the compiled-program cache's entry for the latest plain call (pypto.runtime.warm)

__all__ = ["CompiledProgram", "call_jit", "compile_program", "lower_program", "program_key"]


def _output_dir(jf: Any, key: tuple, config: RunConfig) -> Path:
    if config.output_dir is not None:
        return Path(config.output_dir).resolve()  # ninja runs in another folder
    # Where the kernel is defined is part of the folder's name: two files' kernels of one name
    # never share a folder (nor its report/perf_hints.log).
    code = getattr(getattr(jf, "fn", None), "__code__", None)
    origin = (code.co_filename, code.co_firstlineno) if code is not None else getattr(jf, "origin", None)
    digest = sha256(repr((jf.name, origin, key)).encode()).hexdigest()[:16]
    return knobs.cache_dir() / "programs" / f"{file_stem(jf.name)}-{digest}"


def lower_program(jf: Any, args: tuple, kwargs: dict, config: RunConfig) -> Program:
    """Frontend + passes: the lowered IR (no codegen, no artifacts)."""
    from pypto.compile.driver import KernelCall, lower

    return lower(KernelCall(jf, args, kwargs), config.compile_options())


def compile_program(jf: Any, args: tuple, kwargs: dict, config: RunConfig) -> CompiledProgram:
    """The compiled program of this call under ``config``: one per (specialisation, config) on
    the kernel object, made from the Artifact of (specialisation, compile options), which is
    kept beside it, else read from the program cache, else compiled."""
    key = (jf.specialization_key(*args, **kwargs), config.compile_key())
    cache = jf.__dict__.setdefault("_pypto_compiled", {})
    compiled = cache.get(key)  # one lookup: hashing the key's enums runs Python code
    if compiled is not None and not _captured_changed(jf, cache):
        compiled.refresh_external()
        return compiled
    guard = not cache and getattr(jf, "fn", None) is not None  # the values this compile folds in
    logs.configure()
    out = _output_dir(jf, key, config)
    options = config.compile_options()
    shared = ("artifact", key[0], options.key())  # what every run option shares
    artifact = cache.get(shared)
    if artifact is not None:  # compiled for other run options: its folder gets the compile's files
        to_folder(artifact, out, config.run_options())
    else:
        artifact, record = _artifact(jf, args, kwargs, key[0], config, out)
        cache[shared] = artifact
        if guard:  # the program cache's record names what the source reads: no parse for it
            jf._pypto_captured = captured.guards(jf.fn, record)
    compiled = cache[key] = CompiledProgram(artifact, config, out)
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


def _artifact(
    jf: Any, args: tuple, kwargs: dict, spec_key: tuple, config: RunConfig, out: Path
) -> tuple[Artifact, tuple | None]:
    """From the program cache, else compiled (and stored there); either way its folder written.
    With it, the program cache's dependency record of the kernel on a hit (None: compiled)."""
    options = config.compile_options()
    # Dumps are made by a compile, so a dumping config always compiles.
    disk_key = program_key(jf, spec_key, options) if options.dump_level.name == "NONE" else None
    fn = getattr(jf, "fn", None)  # None: a @pl.program (its key is its IR)
    if disk_key is not None:
        hit = program_cache.load(disk_key, fn)
        if hit is not None:
            artifact, record = hit
            _restored(artifact, out, config)
            log.debug("program cache hit for %s (%s)", jf.name, disk_key[:16])
            return artifact, record
    artifact = _compile(jf, args, kwargs, options, out)
    to_folder(artifact, out, config.run_options())  # what CompiledProgram.from_dir reads back
    if disk_key is not None:
        program_cache.store(disk_key, fn, artifact)
    return artifact, None


def _compile(jf: Any, args: tuple, kwargs: dict, options: CompileOptions, out: Path) -> Artifact:
    """The compile driver's stages: parse, passes, codegen, build, launch plan."""
    from pypto.compile.driver import KernelCall, compile

    return compile(KernelCall(jf, args, kwargs), options, out)


def program_key(jf: Any, spec_key: tuple, options: CompileOptions) -> str | None:
    """The program cache key of this compile (None: not cached on disk): of a ``@pl.jit``
    kernel's function, or of a ``@pl.program``'s parsed IR (it has no function to key on)."""
    fn = getattr(jf, "fn", None)
    if fn is not None:
        return program_cache.program_key(fn, spec_key, options)
    program = getattr(jf, "program", None)
    return program_cache.ir_program_key(program, spec_key, options) if program is not None else None


def _restored(artifact: Artifact, out: Path, config: RunConfig) -> None:
    """A program cache hit: the user's folder gets the compile's files, and the hints are
    said again, as a compile whose hints are unchanged says them (at INFO)."""
    if config.output_dir is not None:
        to_folder(artifact, out, config.run_options())
    if artifact.hints:
        sites = len({line.rsplit(" at ", 1)[-1] for line in artifact.hints})
        logging.getLogger("pypto.perf_hints").info(
            "[perf_hint] %d hints across %d sites; see %s",
            len(artifact.hints),
            sites,
            out / "report" / "perf_hints.log",
        )


def call_jit(jf: Any, args: tuple, kwargs: dict, config: RunConfig | None) -> Any:
    """``kernel(*args, config=...)``: compile (cached), run, keep ``last_report``, return outputs."""
    cache = jf.__dict__.get("_pypto_compiled")
    warm = cache.get(_WARM) if cache else None
    if warm is not None and warm.given is config and not kwargs:  # the same config object (or None)
        outs = warm.call(jf, args)
        if outs is not MISS:
            return outs
    given, config = config, call_config(config)
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
        specs = compiled.launch_specs  # the task list this call ran
        jf.last_report = functools.partial(compiled.launch_report, results, False, traffic, specs)
        jf._pypto_compiled[_WARM] = WarmCall.of(jf, compiled, given, config, args, kwargs)
    outs = compiled.returned
    if len(outs) == 1:
        return args[outs[0]]
    return tuple(args[i] for i in outs) if outs else None
