"""Property: for random tile shapes, trip counts (static and dynamic) and pipeline depths,
the PYPTO planner keeps every tile in capacity, never gives two tiles that are live at once
overlapping bytes, and the kernel's output equals numpy with no race reported.

The overlap check is independent of the planner's own liveness: within each straight-line
block of the lowered kernel, a tile is live from its definition to its last use in that
block (a use inside a nested statement counts at that statement), and any two tiles whose
intervals meet must occupy disjoint bytes (slot by slot for declared slots).
"""

from __future__ import annotations

import importlib.util
import itertools
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pypto import ir, platforms
from pypto.ir.stmt import Assign, For, If
from pypto.runtime import RunConfig

CFG = RunConfig(platform="a2a3sim")
CAPACITY = {"Vec": int(platforms.get("a2a3sim").ub_bytes)}
MAX_TRIPS = 10
OPS = {"exp": lambda x, y: np.exp(x), "add": np.add, "mul": np.multiply}

TEMPLATE = """
import pypto.language as pl


@pl.jit
def kernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]{extra}):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline({trips}, stage={stage}):
            x = pl.load(a, [i * {r}, 0], [{r}, {c}])
            y = pl.load(b, [i * {r}, 0], [{r}, {c}])
            z = {expr}
            pl.store(z, [i * {r}, 0], out)
    return out
"""
EXPR = {"exp": "pl.exp(x)", "add": "pl.add(x, y)", "mul": "pl.mul(x, y)"}
_modules = itertools.count()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("pipeline_kernels")


def _module(workdir, text: str):
    path = workdir / f"pipe_{next(_modules)}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _bytes(t: ir.TileType, env_slot: int | None) -> tuple[int, int]:
    ref = t.memref
    lo = ref.offset + (env_slot or 0) * ref.size
    return lo, lo + (ref.size * ref.slots if ref.slots > 1 and env_slot is None else t.nbytes)


def _check_block(body: tuple, space_limit: dict[str, int]) -> None:
    defs: dict[str, tuple[int, ir.Var]] = {}
    last: dict[str, int] = {}
    for pos, s in enumerate(body):
        for v in ir.nodes_of(s, ir.Var):
            if isinstance(v.type, ir.TileType):
                last[v.name] = pos
        if isinstance(s, Assign) and isinstance(s.var.type, ir.TileType):
            defs.setdefault(s.var.name, (pos, s.var))
        if isinstance(s, For):
            _check_block(s.body, space_limit)
        if isinstance(s, If):
            _check_block(s.then_body, space_limit)
            _check_block(s.else_body, space_limit)
    tiles = [(pos, last.get(n, pos), v) for n, (pos, v) in defs.items()]
    for _, _, v in tiles:
        lo, hi = _bytes(v.type, None)
        assert lo >= 0 and hi <= space_limit[v.type.memory.name], f"{v.name} outside capacity"
    for (p1, e1, v1), (p2, e2, v2) in itertools.combinations(tiles, 2):
        same_ref = v1.type.memref.name == v2.type.memref.name
        if p1 <= e2 and p2 <= e1 and v1.type.memory == v2.type.memory and not same_ref:
            (l1, h1), (l2, h2) = _bytes(v1.type, None), _bytes(v2.type, None)
            assert h1 <= l2 or h2 <= l1, f"{v1.name} and {v2.name} are live together and overlap"


@settings(
    max_examples=int(os.environ.get("PYPTO_FUZZ_EXAMPLES", "20")),
    derandomize=os.environ.get("PYPTO_FUZZ_RANDOM", "") != "1",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    r=st.sampled_from([8, 16, 32, 64, 128]),
    c=st.sampled_from([32, 64, 128, 256]),
    trips=st.integers(1, MAX_TRIPS),
    stage=st.integers(1, 4),
    op=st.sampled_from(sorted(OPS)),
    dynamic=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_pipelined_kernels_fit_never_overlap_and_match_numpy(workdir, r, c, trips, stage, op, dynamic, seed):
    assume(3 * r * c * 4 <= CAPACITY["Vec"])  # one stage's x, y, z must fit
    extra = ", n: pl.Scalar[pl.INDEX]" if dynamic else ""
    text = TEMPLATE.format(extra=extra, trips="n" if dynamic else trips, stage=stage, r=r, c=c, expr=EXPR[op])
    kernel = _module(workdir, text).kernel
    rng = np.random.default_rng(seed)
    a, b = (rng.uniform(-1, 1, (MAX_TRIPS * r, c)).astype(np.float32) for _ in range(2))
    out = np.zeros_like(a)
    args = (a, b, out, trips) if dynamic else (a, b, out)

    program = kernel.lower(*args, config=CFG)
    for fn in program.functions:
        if fn.kind.is_incore:
            _check_block(fn.body, CAPACITY)
    kernel(*args, config=CFG)
    assert kernel.last_report.hazards == []
    want = np.zeros_like(a)
    rows = trips * r
    want[:rows] = OPS[op](a[:rows], b[:rows])
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6, err_msg=text)
