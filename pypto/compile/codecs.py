"""The two stored forms of an :class:`Artifact`, each a codec with a round trip.

* **bytes** (the program cache's payload): plain data, with the IR and the launch plan each
  pickled apart so that a run from the cache never loads the IR classes; kernels are named by
  their kernel-cache entries and looked up (validated and loaded) when decoded.
* **folder** (a compile's ``output_dir``): ``compiled_meta.json``, ``program.py`` (the lowered
  IR as text, parsed back), ``kernels/<name>.cpp``, ``report/perf_hints.log`` and, when the
  compile dumped its passes, ``passes_dump/NN_after_<Pass>.py``; decoding
  rebuilds any kernel whose shared object left the kernel cache. The folder also records the
  options of the run it was written for, so a program read back runs as it did.
"""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path
from typing import Any

from pypto import kernel_build as build
from pypto.compile.artifact import DUMP_FOLDER, Artifact, Lazy
from pypto.compile.kernels import cached_kernels
from pypto.compile.options import CompileOptions, RunOptions
from pypto.errors import PyptoError
from pypto.ir.enums import PassDumpLevel
from pypto.kernel_build import KernelSource
from pypto.kernel_build.cache_files import ensure_dir
from pypto.kernel_build.source import file_stem
from pypto.passes.options import MemoryPlanner

META = "compiled_meta.json"
PROGRAM_TEXT = "program.py"
SCHEMA = 1


class CompiledDirError(PyptoError):
    """An output_dir that holds no compiled program this version can rebuild."""


# --- Artifact <-> bytes -----------------------------------------------------------------------
def to_bytes(artifact: Artifact) -> bytes:
    """The Artifact as bytes; its kernels as entries of the kernel cache (relative paths)."""
    root = build.kernel_cache_dir()
    state = {
        "name": artifact.name,
        "options": artifact.options,
        "program": artifact.program.blob(),
        "plan": artifact.plan.blob(),
        "launch": artifact.launch,
        "kernels": {n: str(artifact.kernels[n].parent.relative_to(root)) for n in artifact.sources},
        "sources": dict(artifact.sources),
        "external": artifact.external,
        "hints": artifact.hints,
        "params": dict(artifact.params),
        "param_names": artifact.param_names,
        "outputs": artifact.outputs,
        "tensor_params": artifact.tensor_params,
        "dumps": artifact.dumps,
    }
    return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)


def from_bytes(data: bytes) -> Artifact | None:
    """The Artifact ``to_bytes`` wrote, its kernels found and loaded; None when one left the
    kernel cache or does not load (that entry is evicted: the compile that follows rebuilds it).
    Bytes of another pypto build raise what unpickling raises."""
    state = pickle.loads(data)
    kernels = cached_kernels(state["kernels"])
    if kernels is None:
        return None
    external = tuple(state["external"])
    if external:  # hand-written kernels: a build-cache lookup (rebuilt if their file was edited)
        paths = build.build_kernels(external, platform=state["options"].platform)
        kernels.update({src.name: path for src, path in zip(external, paths)})
    return Artifact(
        name=state["name"],
        options=state["options"],
        program=Lazy(blob=state["program"]),
        plan=Lazy(blob=state["plan"]),
        launch=state["launch"],
        kernels=kernels,
        sources=state["sources"],
        external=external,
        hints=tuple(state["hints"]),
        params=state["params"],
        param_names=tuple(state["param_names"]),
        outputs=state["outputs"],
        tensor_params=tuple(state["tensor_params"]),
        dumps=tuple(state["dumps"]),
    )


# --- Artifact <-> folder ----------------------------------------------------------------------
def to_folder(artifact: Artifact, folder: Path, run: RunOptions) -> None:
    """Writes the Artifact into ``folder`` (each file whole, and only when it changed)."""
    from pypto.ir.printer import print_program

    options = artifact.options
    meta = {
        "schema": SCHEMA,
        "name": artifact.name,
        "platform": options.platform,
        "memory_planner": options.planner.name,
        "dump_level": options.dump_level.name,
        "platform_overrides": dict(options.platform_overrides),
        "disabled_diagnostics": list(options.disabled_diagnostics) if options.disabled_diagnostics else None,
        "cost_profile": run.cost_profile,
        "seed": run.seed,
        "trace": run.trace,
        "scalar_args": dict(artifact.params),
        "kernels": {name: str(path) for name, path in artifact.kernels.items()},
        "external": [
            {"name": s.name, "path": str(s.path), "include_dirs": [str(d) for d in s.include_dirs]}
            for s in artifact.external
        ],
    }
    for name, code in artifact.sources.items():
        _write_whole(ensure_dir(folder / "kernels") / f"{file_stem(name)}.cpp", code)
    _write_whole(
        ensure_dir(folder / "report") / "perf_hints.log", "".join(line + "\n" for line in artifact.hints)
    )
    if artifact.dumps:
        _write_dumps(artifact.dumps, ensure_dir(folder / DUMP_FOLDER))
    _write_whole(folder / PROGRAM_TEXT, print_program(artifact.program.get()))
    _write_whole(folder / META, json.dumps(meta, indent=1))


def _write_dumps(dumps: tuple[tuple[str, str], ...], folder: Path) -> None:
    """The pass dumps replace the folder's (a dump of another compile is never left among them)."""
    keep = {f"{stem}.py" for stem, _ in dumps}
    for old in folder.glob("*.py"):
        if old.name not in keep:
            old.unlink()
    for stem, text in dumps:
        _write_whole(folder / f"{stem}.py", text)


def from_folder(folder: Path) -> tuple[Artifact, RunOptions]:
    """The Artifact kept in ``folder`` and the options of the run it was written for; kernels
    whose shared objects left the kernel cache are rebuilt from ``kernels/*.cpp``."""
    from pypto.compile.driver import from_lowered
    from pypto.frontend.parser import parse_file

    meta = _read_meta(folder)
    try:
        options, sources = _meta_options(meta), _meta_sources(folder, meta)
        run = RunOptions(
            cost_profile=meta.get("cost_profile", "device"), seed=meta["seed"], trace=meta["trace"]
        )
        name, scalar_args = meta["name"], meta["scalar_args"]
    except CompiledDirError:
        raise
    except OSError as e:
        raise CompiledDirError(f"{folder}: {e.strerror}: {e.filename}; recompile to refresh it") from None
    except (KeyError, TypeError, ValueError, AttributeError, PyptoError) as e:
        what = f"no {e}" if isinstance(e, KeyError) else str(e)
        raise CompiledDirError(f"{folder / META} is damaged ({what}); recompile to refresh it") from None
    program = parse_file(folder / PROGRAM_TEXT)
    artifact = from_lowered(name, options, folder, program, sources, scalar_args, _hints(folder))
    artifact = artifact.replace(dumps=_dumps(folder))
    return artifact, run


def _meta_options(meta: dict[str, Any]) -> CompileOptions:
    disabled = meta.get("disabled_diagnostics")
    return CompileOptions(
        platform=meta["platform"],
        planner=MemoryPlanner[meta["memory_planner"]],
        dump_level=PassDumpLevel[meta.get("dump_level", "NONE")],
        disabled_diagnostics=tuple(disabled) if disabled else None,
        platform_overrides=tuple(sorted(meta["platform_overrides"].items())),
    )


def _meta_sources(folder: Path, meta: dict[str, Any]) -> list[KernelSource]:
    """The hand-written sources where the metadata says, the generated ones from ``kernels/``
    (a name never leaves that folder: its file is named by its plain stem)."""
    external = [
        KernelSource(name=e["name"], path=Path(e["path"]), include_dirs=tuple(map(Path, e["include_dirs"])))
        for e in meta["external"]
    ]
    generated = [
        KernelSource(name=name, code=(folder / "kernels" / f"{file_stem(name)}.cpp").read_text())
        for name in meta["kernels"]
        if name not in {e.name for e in external}
    ]
    return generated + external


def _hints(folder: Path) -> tuple[str, ...]:
    try:
        return tuple((folder / "report" / "perf_hints.log").read_text().splitlines())
    except OSError:
        return ()


def _dumps(folder: Path) -> tuple[tuple[str, str], ...]:
    return tuple((f.stem, f.read_text()) for f in sorted((folder / DUMP_FOLDER).glob("*.py")))


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


def _write_whole(path: Path, text: str) -> None:
    """Written then renamed, and only when it changed: a process reading the folder never sees
    half a file, and an unchanged file keeps its mtime."""
    try:
        if path.read_text() == text:
            return
    except OSError:
        pass
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
