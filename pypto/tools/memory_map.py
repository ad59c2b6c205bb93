"""``python -m pypto.tools.memory_map <dump | dir> [-o map.html] [--platform NAME]``

Renders a pass dump taken after address assignment (``NN_after_AllocateMemoryAddr.py``;
a folder means the newest such dump below it) as one self-contained HTML page: a lane per
memory space, address across, dump line down, the IR alongside (docs/memory_map.md; what is drawn is
in :mod:`pypto.report.memory_model`). A dump without planned addresses — compiled under
the PTOAS planner, or dumped before planning — is refused with ``error:`` and status 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pypto import __version__, platforms
from pypto.errors import PyptoError
from pypto.frontend import parse_file
from pypto.report.memory_map_page import render_page
from pypto.report.memory_model import CAPACITY_FIELDS, NotAllocated, latest_dump, map_program, to_json
from pypto.tools._cli import guarded, write_report


class MapError(Exception):
    """A problem with the input: ``error: ...`` and status 1."""


def find_dump(path: Path) -> Path:
    if not path.exists():
        raise MapError(f"no such file or directory: {path}")
    if path.is_file():
        return path
    dump = latest_dump(path)
    if dump is None:
        raise MapError(
            f"no *_after_AllocateMemoryAddr.py under {path}; compile with "
            "RunConfig(dump_passes=PassDumpLevel.EXPLICIT) and the PYPTO planner"
        )
    return dump


def _capacities(platform: str) -> dict[str, int]:
    try:
        plat = platforms.get(platform)
    except ValueError as e:
        raise MapError(str(e)) from None
    return {space: int(getattr(plat, name)) for space, name in CAPACITY_FIELDS.items()}


def build_page(dump: Path, platform: str = "a2a3sim") -> tuple[str, dict]:
    """The HTML text and its embedded data for one dump file."""
    try:
        program = parse_file(dump)
        lines = dump.read_text().splitlines()
    except (PyptoError, UnicodeDecodeError) as e:  # not a program, or not even UTF-8 text
        raise MapError(f"cannot read {dump} as a pypto program: {e}") from None
    try:
        maps = map_program(program)
    except NotAllocated:
        raise MapError(
            f"{dump} has no assigned addresses (compiled under the PTOAS planner, which chooses "
            "addresses when the kernel starts, or dumped before AllocateMemoryAddr); "
            "nothing to map"
        ) from None
    data = to_json(maps, _capacities(platform))
    data.update(program=program.name, source=str(dump), platform=platform)
    data["lines"] = lines
    return render_page(data), data


def write_map(path: str | Path, output: str | Path | None = None, platform: str = "a2a3sim") -> Path:
    """Library form of the command; returns the written page's path."""
    dump = find_dump(Path(path))
    page, _ = build_page(dump, platform)
    out = Path(output) if output is not None else dump.with_name("memory_map.html")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page)
    return out


@guarded
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="pypto-memory-map",
        description="Render a pass dump after address assignment as a self-contained HTML memory map.",
    )
    p.add_argument("--version", action="version", version=f"pypto {__version__}")
    p.add_argument("path", type=Path, help="a *_after_AllocateMemoryAddr.py dump, or a folder holding one")
    p.add_argument(
        "-o", "--output", type=Path, help="HTML file to write (default: memory_map.html by the dump)"
    )
    p.add_argument("--platform", default="a2a3sim", help="capacities from this platform (default a2a3sim)")
    args = p.parse_args(argv)
    return write_report(lambda: write_map(args.path, args.output, args.platform), (MapError, OSError))


if __name__ == "__main__":
    sys.exit(main())
