"""``python -m pypto.tools.clean_sim_trace <bin | OPPROF dir>... [-o DIR] [--keep-scalar] [--raw-metrics]``

Turns an op-simulator ``visualize_data.bin`` — written by a pypto run with
``RunConfig(trace=True)`` or by the vendor's op simulator — into

* ``trace.clean.json``: Chrome-trace JSON for Perfetto / ``chrome://tracing`` with only the
  pipeline lanes, in dataflow order, sync flags redrawn as arrows;
* ``instr_metrics.json``: the API_INSTR block reshaped to one record list per core (with
  ``--raw-metrics``: the block's JSON exactly as stored).

Outputs go next to the input, or to ``-o DIR``; then the raw simulator files are copied to
``DIR/raw_simulator/`` so the folder stands alone. Several inputs (a glob such as
``OPPROF_*`` matching the folders of several runs) are each cleaned, with ``-o`` into
``DIR/<the input's OPPROF folder name>/``. Prints ``wrote <path>`` per file; a missing
input, a corrupt block or a file without a TRACE block is ``error: ...`` and exit status 1.

The rebuild (lanes, sub-lanes, flags to arrows; the rules are listed in
``csrc/tools/trace_clean.hpp`` and in ``docs/trace.md``) runs once per event of traces of
millions, so it is native: it reads the TRACE block's JSON bytes and writes the clean JSON
bytes with the GIL released. It reads our own traces and the vendor's alike: string or
numeric pids/tids (numeric ones named by metadata), flag slices as ``X`` or ``B``/``E``
pairs, metadata anywhere in the file.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import mmap
import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto import __version__, _native
from pypto.report.opprof_format import API_INSTR, TRACE, Block, ContainerError, iter_blocks, source_lines
from pypto.tools._cli import error_line, guarded

BIN_NAME = "visualize_data.bin"
OUTPUTS = ("trace.clean.json", "instr_metrics.json")


class CleanError(Exception):
    """A problem with the input that ends the tool with ``error: ...`` and status 1."""


@dataclass
class Clean:
    """What the rebuild made: slices kept, lanes drawn (sub-lanes included), flow arrows, and
    sync flags skipped for want of a partner or an instruction on one side."""

    slices: int
    lanes: int
    flows: int
    skipped_flags: int


@dataclass
class Result:
    """What one run of the tool wrote."""

    clean: Clean
    written: list[Path]
    raw_copy: Path | None


def find_bin(path: Path) -> Path:
    """The ``visualize_data.bin`` that ``path`` names: the file itself, inside an OPPROF or
    ``simulator`` folder, or in the newest ``OPPROF_*`` folder below ``path``."""
    if not path.exists():
        raise CleanError(f"no such file or directory: {path}")
    if path.is_file():
        return path
    for candidate in (path / BIN_NAME, path / "simulator" / BIN_NAME):
        if candidate.is_file():
            return candidate
    runs = sorted(path.glob(f"**/OPPROF_*/simulator/{BIN_NAME}"), key=lambda p: p.parent.parent.name)
    if runs:
        return runs[-1]
    raise CleanError(f"no {BIN_NAME} in {path} (expected {path}/simulator/{BIN_NAME})")


def read_blocks(path: Path, data: bytes | memoryview) -> tuple[Block, bytes | None]:
    """The TRACE block of ``data`` (the bytes of ``path``) and the raw API_INSTR payload (None
    when absent)."""
    try:
        blocks = list(iter_blocks(data))
    except ContainerError as e:
        raise CleanError(f"{path}: {e}") from None
    trace_block = next((b for b in blocks if b.type == TRACE), None)
    if trace_block is None:
        kinds = sorted({b.type for b in blocks})
        raise CleanError(f"{path} has no TRACE block (type {TRACE}); block types found: {kinds or 'none'}")
    api = next((bytes(b.payload) for b in blocks if b.type == API_INSTR), None)
    return trace_block, api


def mapped(path: Path) -> bytes | memoryview:
    """The bytes of ``path``, mapped rather than read: a trace of millions of events is read
    once, by the rebuild, straight from the page cache. The mapping goes with its last view."""
    with path.open("rb") as f:
        if os.fstat(f.fileno()).st_size == 0:  # an empty file cannot be mapped
            return b""
        return memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))


def rebuild(
    block: Block, source: Path, *, keep_scalar: bool = False, sources: dict[str, str] | None = None
) -> tuple[bytes, Clean]:
    """trace.clean.json's bytes for a TRACE block, and what went into them (``sources``:
    :func:`source_lines`, added to the slices' args as ``source_line``). A payload that is
    not JSON, or not a trace, is a ``CleanError`` naming the block's offset and the problem."""
    with _format_errors(block, source):
        data, stats = _native.clean_trace(block.payload, keep_scalar, str(source), sources or {})
    return data, Clean(**stats)


def rebuild_to(
    block: Block,
    source: Path,
    target: Path,
    *,
    keep_scalar: bool = False,
    sources: dict[str, str] | None = None,
) -> Clean:
    """``rebuild``, streamed into the file ``target`` (never the whole output in memory). It is
    written under a temporary name and renamed once complete: a failure leaves no file and an
    earlier ``target`` as it was."""
    partial = target.with_name(f".{target.name}.partial")
    try:
        with _format_errors(block, source):
            stats = _native.clean_trace_to_file(
                block.payload, keep_scalar, str(source), str(partial), sources or {}
            )
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    return Clean(**stats)


@contextmanager
def _format_errors(block: Block, source: Path) -> Iterator[None]:
    try:
        yield
    except _native.TraceFormatError as e:  # "not valid JSON: ... at byte N" / "not a trace: ..."
        raise CleanError(f"{source}: the TRACE block at offset {block.offset} is {e}") from None


def reshape_metrics(api: dict[str, Any]) -> dict[str, Any]:
    """API_INSTR → ``{"cores", "instructions": {core: [record, ...]}, "column_types"}``: each
    per-core array is split so every core gets its own scalar-valued records; keys become
    ``snake_case`` (``"Vector Utilization Percentage"`` → ``vector_utilization_percentage``)."""
    cores = [str(c) for c in api.get("Cores", [])]
    per_core: dict[str, list[dict[str, Any]]] = {c: [] for c in cores}
    for entry in api.get("Instructions", []):
        fields = [(k.lower().replace(" ", "_"), v) for k, v in entry.items()]
        if "AscendC Inner Code" in entry:  # the Python source line, under the name every output uses
            fields.append(("source_line", entry["AscendC Inner Code"]))
        for i, core in enumerate(cores):
            per_core[core].append(
                {k: v[i] if isinstance(v, list) and len(v) == len(cores) else v for k, v in fields}
            )
    return {"cores": cores, "instructions": per_core, "column_types": api.get("Instructions Dtype", {})}


def _parsed(api: bytes) -> Any:
    """The API_INSTR block's JSON document."""
    try:
        return json.loads(api)
    except ValueError as e:
        raise CleanError(f"the API_INSTR block is not valid JSON: {e}") from None


def _write_metrics(api: bytes, doc: Any, out: Path, raw: bool) -> Path:
    target = out / OUTPUTS[1]
    if raw:
        target.write_bytes(api)
        return target
    try:
        metrics = reshape_metrics(doc)
    except (AttributeError, TypeError, KeyError, IndexError) as e:  # JSON, but not the block's layout
        raise CleanError(
            f"the API_INSTR block is not an instruction table ({type(e).__name__}: {e}); "
            "pass --raw-metrics to copy it unchanged"
        ) from None
    target.write_text(json.dumps(metrics, indent=1))
    return target


def _missing_folders(out: Path) -> list[Path]:
    """The folders ``out.mkdir(parents=True)`` would make, innermost first."""
    made = []
    while not out.exists() and out != out.parent:
        made.append(out)
        out = out.parent
    return made


def _copy_raw(src: Path, out: Path) -> Path:
    """Copies the raw simulator output (the whole ``simulator/`` folder when the input sits in
    one, else the file) to ``out/raw_simulator/``."""
    dest = out / "raw_simulator"
    dest.mkdir(parents=True, exist_ok=True)
    if src.parent.name == "simulator":
        shutil.copytree(src.parent, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*OUTPUTS))
    else:
        shutil.copy2(src, dest / src.name)
    return dest


def clean_file(
    src: Path, out: Path | None = None, *, keep_scalar: bool = False, raw_metrics: bool = False
) -> Result:
    """Library form of the command: cleans ``src`` (a bin or a folder) into ``out``."""
    bin_path = find_bin(Path(src))
    out = Path(out) if out is not None else bin_path.parent
    target = out / OUTPUTS[0]
    trace, api = read_blocks(bin_path, mapped(bin_path))
    doc = _parsed(api) if api is not None and not raw_metrics else None
    if api is not None and doc is None:  # copied raw: its lines are used if it reads as JSON
        with contextlib.suppress(ValueError):
            doc = json.loads(api)
    made = _missing_folders(out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        clean = rebuild_to(trace, bin_path, target, keep_scalar=keep_scalar, sources=source_lines(doc))
    except (CleanError, OSError):
        for folder in made:  # a failure leaves no trace: not even the folders made for it
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    written = [target]
    if api is not None:
        written.append(_write_metrics(api, doc, out, raw_metrics))
    elsewhere = out.resolve() != bin_path.parent.resolve()
    raw_copy = _copy_raw(bin_path, out) if elsewhere else None
    return Result(clean, written, raw_copy)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pypto-clean-sim-trace",
        description="Clean an op-simulator visualize_data.bin into a Perfetto-ready pipeline trace.",
    )
    p.add_argument("--version", action="version", version=f"pypto {__version__}")
    p.add_argument(
        "path",
        type=Path,
        nargs="+",
        help="visualize_data.bin, or an OPPROF_* folder holding one (or several)",
    )
    p.add_argument("-o", "--output", type=Path, help="output folder (default: next to the input)")
    p.add_argument("--keep-scalar", action="store_true", help="keep the SCALAR lane")
    p.add_argument("--raw-metrics", action="store_true", help="write the API_INSTR block unchanged")
    return p


def _opprof_name(path: Path) -> str:
    """The OPPROF folder an input belongs to (``.../OPPROF_x/simulator/visualize_data.bin``)."""
    for part in reversed(path.resolve().parts):
        if part.startswith("OPPROF_"):
            return part
    return path.stem


@guarded
def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    several = len(args.path) > 1
    if several and len({_opprof_name(p) for p in args.path}) < len(args.path) and args.output:
        print("error: two inputs share an OPPROF folder name; clean them one by one", file=sys.stderr)
        return 1
    for path in args.path:
        out = args.output / _opprof_name(path) if several and args.output else args.output
        try:
            result = clean_file(path, out, keep_scalar=args.keep_scalar, raw_metrics=args.raw_metrics)
        except (CleanError, OSError) as e:
            print(f"error: {error_line(e)}", file=sys.stderr)
            return 1
        _say(result)
    return 0


def _say(result: Result) -> None:
    for path in result.written:
        print(f"wrote {path}")
    if len(result.written) == 1:
        print("warning: no API_INSTR block; instr_metrics.json not written", file=sys.stderr)
    if result.raw_copy is not None:
        print(f"copied the raw simulator files to {result.raw_copy}")
    c = result.clean
    print(
        f"{c.slices} slices on {c.lanes} lanes, {c.flows} flow arrows"
        + (f"; {c.skipped_flags} sync flags skipped (no instruction on one side)" if c.skipped_flags else "")
    )


if __name__ == "__main__":
    sys.exit(main())
