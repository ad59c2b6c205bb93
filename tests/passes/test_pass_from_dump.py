"""Every pass reruns from a dump: for representative kernels, the dump before pass N, parsed
back and given to pass N alone, becomes the dump after pass N — the same IR (names
included) and the same text. So a dump holds everything a pass reads (no side channel),
and the printer and the frontend agree on every construct the passes produce.

Each planner runs the passes it selects; together the two planners cover the whole pass
list, which the tests assert, so a new pass cannot go unchecked."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from pypto import ir, platforms
from pypto.frontend import parse_text
from pypto.frontend.parser import parse_jit
from pypto.passes import pipeline as pp
from pypto.passes.context import PassContext
from pypto.passes.options import MemoryPlanner

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "tests" / "e2e") not in sys.path:  # kernels shared with the e2e tests
    sys.path.insert(0, str(ROOT / "tests" / "e2e"))

import batch_matmul_kernels  # noqa: E402
import cluster_kernels  # noqa: E402
import mixed_scope  # noqa: E402
import seed_kernels  # noqa: E402
import test_pipelining  # noqa: E402
import tune_kernels  # noqa: E402


def _example(name: str):
    """A script of examples/ as a module (registered: the frontend reads kernel sources)."""
    spec = importlib.util.spec_from_file_location(f"pass_dump_{name}", ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


gemm_example = _example("gemm")
attention_example = _example("flash_attention")
dynamic_example = _example("dynamic_shape")

F16, F32 = np.float16, np.float32


def _arrays(*specs):
    return [np.zeros(shape, dtype) for shape, dtype in specs]


def _cube(m, k, n):
    return _arrays(((m, k), F16), ((k, n), F16), ((m, n), F32))


def _exp(rows, depth):
    a = tune_kernels.seed_input()
    return tune_kernels.exp_kernel(rows, depth), [a, np.zeros_like(a)]


# name -> (kernel, arguments): what each case exercises is in its name
CASES = {
    "double_buffer": lambda: (
        seed_kernels.pipelined,
        _arrays(*[((seed_kernels.ROWS, seed_kernels.TC), F32)] * 2),
    ),
    "explicit_slots": lambda: (
        seed_kernels.explicit_slots,
        _arrays(*[((seed_kernels.ROWS, seed_kernels.TC), F32)] * 2),
    ),
    "pipeline_leftover_clones": lambda: _exp(64, 3),
    "pipeline_depth_gate": lambda: _exp(128, 4),  # only 2 of 4 stages fit: the gate reorders
    "pipeline_dynamic_trips": lambda: (
        test_pipelining.dynamic_trips,
        [*_arrays(*[((512, 128), F32)] * 2), 5],
    ),
    "pipeline_carried_values": lambda: (test_pipelining.carried_sum, _arrays(*[((512, 128), F32)] * 2)),
    "dynamic_shape": lambda: (dynamic_example.rms_scale, _arrays(*[((40, dynamic_example.C), F32)] * 2)),
    "flash_attention_cluster": lambda: (
        attention_example.make_attention(2, 128, 128, 64, br=64, bc=64, causal=True),
        [
            *attention_example.inputs(2, 128, 128, 64),
            attention_example.causal_mask(64, 64),
            _arrays(((256, 64), F32))[0],
        ],
    ),
    "pipelined_cube_gemm": lambda: (gemm_example.make_gemm(128, 256, 512), _cube(128, 512, 256)),
    "split_k": lambda: (batch_matmul_kernels.split_k(), _cube(32, 256, 32)),
    "batch_matmul": lambda: (
        batch_matmul_kernels.batch_matmul_k_loop,
        _arrays(((4, 32, 128), F16), ((4, 128, 32), F16), ((4, 32, 32), F32)),
    ),
    "cluster_up_down": lambda: (cluster_kernels.matmul_relu_up_down, _cube(cluster_kernels.M * 4, 128, 64)),
    "mixed_scope_split": lambda: (mixed_scope.scaled_matmul, [*_cube(64, 128, 64), 2.0]),
}

PLANNERS = [MemoryPlanner.PYPTO, MemoryPlanner.PTOAS]
# The PTOAS planner gives every clone its own region: these kernels do not fit it (by design,
# they exercise the PYPTO planner's depth gate and reuse).
PYPTO_ONLY = {"pipeline_depth_gate", "pipelined_cube_gemm"}
RUNS = [(c, p) for c in sorted(CASES) for p in PLANNERS if p is MemoryPlanner.PYPTO or c not in PYPTO_ONLY]


def _selected(planner: MemoryPlanner) -> list[str]:
    return [e.name for e in pp.PASSES if planner in e.planners]


def _dumps(case: str, planner: MemoryPlanner) -> list[tuple[str, str, ir.Program]]:
    kernel, args = CASES[case]()
    ctx = PassContext(platforms.get("a2a3sim"), planner=planner)
    seen: list[tuple[str, str, ir.Program]] = []
    pp.run_passes(
        parse_jit(kernel, args), ctx, dump=lambda i, name, p: seen.append((name, ir.print_program(p), p))
    )
    return seen


@pytest.mark.parametrize(("case", "planner"), RUNS, ids=[f"{c}-{p.name}" for c, p in RUNS])
def test_every_pass_reruns_from_the_dump_before_it(case, planner):
    dumps = _dumps(case, planner)
    entries = {e.name: e for e in pp.PASSES}
    covered = []
    for (_, before, _), (name, after, program) in zip(dumps, dumps[1:]):
        ctx = PassContext(platforms.get("a2a3sim"), planner=planner)
        got = ir.verify(entries[name].run(parse_text(before), ctx))
        expected = parse_text(after)
        ir.assert_structural_equal(got, expected, names=True)
        ir.assert_structural_equal(expected, program, names=True)  # the dump is the pipeline's IR
        assert ir.print_program(got) == after, f"{name} from its dump prints differently"
        covered.append(name)
    assert covered == _selected(planner)  # every pass the planner runs, none skipped


def test_the_planners_together_cover_every_pass():
    assert {n for p in PLANNERS for n in _selected(p)} == {e.name for e in pp.PASSES}
    assert {p for _, p in RUNS} == set(PLANNERS)
    assert {c for c, p in RUNS if p is MemoryPlanner.PTOAS} >= {"double_buffer", "pipeline_leftover_clones"}


def test_the_pipelining_records_are_in_the_dumps():
    dumps = {name: text for name, text, _ in _dumps("pipeline_depth_gate", MemoryPlanner.PYPTO)}
    planned = dumps["PlanPipelineLoops"]
    assert 'in pl.pipeline(4, stage=4, staged=["tile", "exp"]):' in planned
    assert "pipeline_groups=[" not in planned
    expanded = dumps["ExpandPipelineLoops"]
    assert "pipeline_groups=[" in expanded and "pl.pipeline(" not in expanded
    flat = " ".join(expanded.split())  # a group whose clones are long prints one field per line
    for k in ("", "_1", "_2", "_3"):
        fields = f'staged=["tile{k}", "exp{k}"], defs=["tile{k}", "exp{k}"], hoisted=["tile{k}"],'
        assert f"pl.PipelineClone( {fields} )," in flat
    assert "pipeline_groups=[" not in dumps["AllocateMemoryAddr"]  # consumed by the depth gate
