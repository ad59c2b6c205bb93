"""Pass dumps (docs/memory_map.md): ``00_frontend.py`` and ``NN_after_<Pass>.py`` for each pass that ran,
each reparsing to the IR that pass produced."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import seed_kernels as tk

from pypto import ir
from pypto.diagnostics.hints import HintSink
from pypto.frontend import parse_file
from pypto.ir import PassDumpLevel
from pypto.passes import MemoryPlanner
from pypto.passes.context import PassContext
from pypto.passes.pipeline import PASSES, run_passes
from pypto.runtime import RunConfig

A = np.ones((tk.ROWS, tk.TC), np.float32)


def stages(kernel, planner: MemoryPlanner) -> dict[int, tuple[str, ir.Program]]:
    """The IR after each pass, as the compile produces it."""
    seen: dict[int, tuple[str, ir.Program]] = {}
    ctx = PassContext(RunConfig().resolved_platform(), planner, HintSink())
    run_passes(kernel.parse(A, np.zeros_like(A)), ctx, dump=lambda i, name, p: seen.setdefault(i, (name, p)))
    return seen


@pytest.mark.parametrize("planner", [MemoryPlanner.PYPTO, MemoryPlanner.PTOAS], ids=lambda p: p.name)
@pytest.mark.parametrize("kernel", [tk.single_buffer, tk.explicit_slots], ids=lambda k: k.__name__)
def test_every_dump_reparses_to_the_ir_of_its_stage(kernel, planner, tmp_path: Path):
    cfg = RunConfig(dump_passes=PassDumpLevel.EXPLICIT, output_dir=tmp_path, memory_planner=planner)
    kernel.compile(A, np.zeros_like(A), config=cfg)
    ran = [e.name for e in PASSES if planner in e.planners]
    expected = ["00_frontend.py"] + [f"{i:02d}_after_{name}.py" for i, name in enumerate(ran, 1)]
    files = sorted((tmp_path / "passes_dump").glob("*.py"))
    assert [f.name for f in files] == expected
    assert ("AllocateMemoryAddr" in " ".join(expected)) == (planner is MemoryPlanner.PYPTO)
    want = stages(kernel, planner)
    for i, f in enumerate(files):
        text = f.read_text()
        assert text.startswith(f"# pypto.program: {kernel.__name__}\n")
        again = parse_file(f)
        ir.assert_structural_equal(want[i][1], again, names=True)
        assert ir.print_program(again) == text  # print ∘ parse is the identity on dumps


def test_no_dumps_unless_asked(tmp_path: Path):
    tk.single_buffer.compile(A, np.zeros_like(A), config=RunConfig(output_dir=tmp_path))
    assert not (tmp_path / "passes_dump").exists()
