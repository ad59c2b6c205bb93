"""pl.spmd: one InCore kernel dispatched as n blocks at once, each reading its block index
from pl.get_block_idx(); numerics, the task table, one kernel build and the bad uses."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pypto.language as pl
from pypto import platforms
from pypto.errors import MisplacedOpError, PyptoError, TypeCheckError
from pypto.runtime import RunConfig

BLOCKS, R, C = 48, 16, 64
ROWS = BLOCKS * R


@pl.jit
def spmd_exp(x: pl.Tensor[[ROWS, C], pl.FP32], out: pl.Out[pl.Tensor[[ROWS, C], pl.FP32]]):
    with pl.spmd(BLOCKS, name_hint="exp_rows"):
        i = pl.get_block_idx()
        pl.store(pl.exp(pl.load(x, [i * R, 0], [R, C])), [i * R, 0], out)
    return out


@pl.jit
def spmd_add_loop(
    a: pl.Tensor[[ROWS, C], pl.FP32],
    b: pl.Tensor[[ROWS, C], pl.FP32],
    out: pl.Out[pl.Tensor[[ROWS, C], pl.FP32]],
):
    for i in pl.spmd(BLOCKS):
        pl.store(pl.add(pl.load(a, [i * R, 0], [R, C]), pl.load(b, [i * R, 0], [R, C])), [i * R, 0], out)
    return out


@pl.jit
def spmd_then_after(x: pl.Tensor[[4 * R, C], pl.FP32], y: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]]):
    """Four blocks copy x's row blocks into tmp in reverse order (block b writes block n-1-b,
    n from pl.get_block_num()); a task after them reads all of tmp."""
    tmp = pl.create_tensor([4 * R, C], pl.FP32)
    with pl.spmd(core_num=4, name_hint="fill"):  # upstream's parameter name, by keyword
        b = pl.get_block_idx()
        n = pl.get_block_num()
        t = pl.load(x, [b * R, 0], [R, C])
        pl.store(pl.adds(t, 1.0), [(n - 1 - b) * R, 0], tmp)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="after"):
        pl.store(pl.neg(pl.load(tmp, [0, 0], [4 * R, C])), [0, 0], y)
    return y


def test_spmd_exp_matches_numpy_on_48_blocks_started_together(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    x = np.random.default_rng(0).standard_normal((ROWS, C)).astype(np.float32)
    out = np.zeros_like(x)
    report = spmd_exp.compile(x, out).run(x, out)
    np.testing.assert_allclose(out, np.exp(x), rtol=1e-5)
    rows = report.task_table()
    assert len(rows) == BLOCKS and {r["kernel"] for r in rows} == {"exp_rows"}
    cold = platforms.get("a2a3sim").task_cold_head_cycles  # each block the first task on its core
    assert all(r["start"] == cold for r in rows)  # one dispatch: no block waits for another
    assert len({r["core"] for r in rows}) == BLOCKS  # 48 AIV cores, one block each
    assert sorted(t.block for t in report.tasks) == list(range(BLOCKS))
    assert len(list((tmp_path / "cache" / "kernels").rglob("meta.json"))) == 1  # one kernel build


def test_plan_has_one_task_per_block_with_its_index():
    x = np.zeros((ROWS, C), np.float32)
    tasks = spmd_exp.compile(x, x).tasks
    assert [(t.block_idx, t.block_num) for t in tasks] == [(b, BLOCKS) for b in range(BLOCKS)]
    assert all(t.deps == () for t in tasks)


def test_loop_form_binds_the_block_index():
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((ROWS, C)).astype(np.float32) for _ in range(2))
    out = np.zeros_like(a)
    spmd_add_loop(a, b, out)
    np.testing.assert_array_equal(out, a + b)


def test_block_num_and_a_task_after_the_blocks():
    x = np.random.default_rng(2).standard_normal((4 * R, C)).astype(np.float32)
    y = np.zeros_like(x)
    report = spmd_then_after.compile(x, y).run(x, y)
    want = -(x.reshape(4, R, C)[::-1].reshape(4 * R, C) + np.float32(1.0))
    np.testing.assert_array_equal(y, want)
    fill = [t for t in report.tasks if t.name == "fill"]
    after = next(t for t in report.tasks if t.name == "after")
    assert len(fill) == 4 and after.start >= max(t.end for t in fill)
    assert sorted(after.deps) == [i for i, t in enumerate(report.tasks) if t.name == "fill"]


def _line_of(text: str) -> str:
    lines = Path(__file__).read_text().splitlines()
    return f"test_spmd.py:{lines.index(text) + 1}:"


@pytest.mark.parametrize("bad", [0, 70000, 2.5])
def test_block_count_must_be_a_positive_int_in_range(bad):
    @pl.jit
    def k(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
        with pl.spmd(bad):  # bad block count
            i = pl.get_block_idx()
            pl.store(pl.load(x, [i * 0, 0], [R, C]), [0, 0], out)
        return out

    x = np.zeros((R, C), np.float32)
    with pytest.raises(
        TypeCheckError, match=r"block count must be a compile-time integer in \[1, 65535\]"
    ) as e:
        k(x, np.zeros_like(x))
    assert _line_of("        with pl.spmd(bad):  # bad block count") in str(e.value)
    assert f"`bad` = {bad!r}" in str(e.value)


def test_get_block_idx_outside_a_kernel_is_refused_with_the_line():
    @pl.jit
    def k(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
        i = pl.get_block_idx()  # outside any kernel
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(x, [i, 0], [R, C]), [0, 0], out)
        return out

    x = np.zeros((R, C), np.float32)
    with pytest.raises(MisplacedOpError) as e:
        k(x, np.zeros_like(x))
    assert _line_of("        i = pl.get_block_idx()  # outside any kernel") in str(e.value)


def test_a_body_that_never_reads_the_block_index_is_refused():
    @pl.jit
    def k(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
        with pl.spmd(4):  # same work in every block
            pl.store(pl.load(x, [0, 0], [R, C]), [0, 0], out)
        return out

    x = np.zeros((R, C), np.float32)
    with pytest.raises(TypeCheckError, match="never reads pl.get_block_idx") as e:
        k(x, np.zeros_like(x))
    assert _line_of("        with pl.spmd(4):  # same work in every block") in str(e.value)


def test_spmd_cannot_nest_in_pl_at():
    @pl.jit
    def k(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):  # noqa: SIM117 - the nesting is the error
            with pl.spmd(2):  # nested
                i = pl.get_block_idx()
                pl.store(pl.load(x, [i * 0, 0], [R, C]), [0, 0], out)
        return out

    x = np.zeros((R, C), np.float32)
    with pytest.raises(PyptoError) as e:
        k(x, np.zeros_like(x))
    assert _line_of("            with pl.spmd(2):  # nested") in str(e.value)


@pl.program
class SpmdProgram:
    """The direct form: a pl.spmd body that is one call of an InCore kernel."""

    @pl.function
    def main(
        self, x: pl.Tensor[[8 * R, C], pl.FP32], out: pl.Out[pl.Tensor[[8 * R, C], pl.FP32]]
    ) -> pl.Tensor[[8 * R, C], pl.FP32]:
        with pl.spmd(8):
            r: pl.Tensor[[8 * R, C], pl.FP32] = self.neg_rows(x, out)
        return r

    @pl.function(type=pl.FunctionType.AIV)
    def neg_rows(
        self, x: pl.Tensor[[8 * R, C], pl.FP32], out: pl.Out[pl.Tensor[[8 * R, C], pl.FP32]]
    ) -> pl.Tensor[[8 * R, C], pl.FP32]:
        b = pl.get_block_idx()
        t: pl.Tile[[R, C], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [b * R, 0], [R, C])
        pl.tile.store(pl.tile.neg(t), [b * R, 0], out)
        return out


def test_direct_form_dispatches_a_kernel_per_block():
    from pypto.runtime import RunConfig, run

    x = np.random.default_rng(3).standard_normal((8 * R, C)).astype(np.float32)
    out = np.zeros_like(x)
    compiled = run(SpmdProgram, x, out, config=RunConfig(platform="a2a3sim"))
    np.testing.assert_array_equal(out, -x)
    assert [(t.kernel, t.block_idx) for t in compiled.tasks] == [("neg_rows", b) for b in range(8)]
    cold = platforms.get("a2a3sim").task_cold_head_cycles
    assert all(t.start == cold for t in compiled.last_report.tasks)


@pl.jit
def spmd_with_deps(a: pl.Tensor, x: pl.Out[pl.Tensor], y: pl.Out[pl.Tensor], z: pl.Out[pl.Tensor]):
    """No tensor is shared: the blocks wait for `first` and `last` for the blocks by deps= only."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="first") as first:
        pl.store(pl.exp(pl.load(a, [0, 0], [R, C])), [0, 0], x)
    with pl.spmd(4, name_hint="rows", deps=[first]) as rows:
        i = pl.get_block_idx()
        pl.store(pl.neg(pl.load(a, [i * R, 0], [R, C])), [i * R, 0], y)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="last", deps=[rows]):
        pl.store(pl.relu(pl.load(a, [0, 0], [R, C])), [0, 0], z)
    return x, y, z


def test_deps_and_handles_order_whole_dispatches():
    a = np.random.default_rng(4).standard_normal((4 * R, C)).astype(np.float32)
    x, y, z = np.zeros((R, C), np.float32), np.zeros_like(a), np.zeros((R, C), np.float32)
    tasks = spmd_with_deps.compile(a, x, y, z).tasks
    assert [(t.kernel, t.block_idx, t.deps) for t in tasks] == [
        ("first", 0, ()),
        *[("rows", b, (0,)) for b in range(4)],
        ("last", 0, (1, 2, 3, 4)),
    ]
    spmd_with_deps(a, x, y, z)
    np.testing.assert_array_equal(y, -a)


MB, KB, NB, FUSED_BLOCKS = 128, 128, 128, 4
CFG = RunConfig(platform="a2a3sim")


def _fused_blocks(mode: pl.SplitMode):
    """A matmul + vector epilogue per block, its epilogue split between the AIVs by ``mode``."""

    @pl.jit
    def fused_blocks(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, c: pl.Out[pl.Tensor]):
        for i in pl.spmd(FUSED_BLOCKS, name_hint="fused", optimizations=[pl.split(mode)]):
            acc = pl.matmul(
                pl.move(
                    pl.load(a, [i * MB, 0], [MB, KB], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left
                ),
                pl.move(pl.load(b, [0, 0], [KB, NB], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right),
            )
            x = pl.move(acc, target_memory=pl.Mem.Vec)
            pl.store(pl.relu(pl.add(x, pl.load(bias, [i * MB, 0], [MB, NB]))), [i * MB, 0], c)
        return c

    return fused_blocks


def test_spmd_optimizations_split_the_outlined_scope_as_pl_at_does():
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (FUSED_BLOCKS * MB, KB)).astype(np.float16)
    b = rng.uniform(-1, 1, (KB, NB)).astype(np.float16)
    bias = rng.uniform(-1, 1, (FUSED_BLOCKS * MB, NB)).astype(np.float32)
    want = np.maximum(a.astype(np.float32) @ b.astype(np.float32) + bias, 0)
    for mode, rows in ((pl.SplitMode.NONE, MB), (pl.SplitMode.UP_DOWN, MB // 2)):
        kernel, c = _fused_blocks(mode), np.zeros_like(bias)
        kernel(a, b, bias, c, config=CFG)
        np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
        text = kernel.lower(a, b, bias, c, config=CFG).as_python()
        assert f"pl.tile.tpop_from_aic(shape=[{rows}, {NB}]" in text  # each AIV pops its half


def test_spmd_optimizations_on_a_kernel_call_body_is_refused():
    @pl.jit.incore
    def exp_block(x: pl.Tensor[[ROWS, C], pl.FP32], out: pl.Out[pl.Tensor[[ROWS, C], pl.FP32]]):
        i = pl.get_block_idx()
        pl.store(pl.exp(pl.load(x, [i * R, 0], [R, C])), [i * R, 0], out)
        return out

    @pl.jit
    def calls(x: pl.Tensor[[ROWS, C], pl.FP32], out: pl.Out[pl.Tensor[[ROWS, C], pl.FP32]]):
        with pl.spmd(BLOCKS, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            exp_block(x, out)
        return out

    x = np.zeros((ROWS, C), np.float32)
    with pytest.raises(
        TypeCheckError, match=r"optimizations= of pl.spmd applies to the scope it outlines.*test_spmd.py:\d+"
    ):
        calls.lower(x, x.copy(), config=CFG)


@pl.jit.incore
def exp_rows_block(x: pl.Tensor[[ROWS, C], pl.FP32], out: pl.Out[pl.Tensor[[ROWS, C], pl.FP32]]):
    i = pl.get_block_idx()
    pl.store(pl.exp(pl.load(x, [i * R, 0], [R, C])), [i * R, 0], out)
    return out


@pl.jit.incore
def doubled(y: pl.Tensor[[ROWS, C], pl.FP32], z: pl.Out[pl.Tensor[[ROWS, C], pl.FP32]]):
    for r in pl.range(0, ROWS, R):
        pl.store(pl.muls(pl.load(y, [r, 0], [R, C]), 2.0), [r, 0], z)
    return z


@pl.jit
def submitted(
    x: pl.Tensor[[ROWS, C], pl.FP32],
    y: pl.Out[pl.Tensor[[ROWS, C], pl.FP32]],
    z: pl.Out[pl.Tensor[[ROWS, C], pl.FP32]],
):
    with pl.manual_scope():  # only deps= orders these tasks
        y, exp_tid = pl.spmd_submit(exp_rows_block, x, y, core_num=BLOCKS)
        z, _ = pl.submit(doubled, y, z, deps=[exp_tid])
    return y, z


def test_spmd_submit_and_submit_launch_kernels_and_name_their_tasks():
    x = np.random.default_rng(4).standard_normal((ROWS, C)).astype(np.float32)
    y, z = np.zeros_like(x), np.zeros_like(x)
    submitted(x, y, z, config=CFG)
    np.testing.assert_allclose(y, np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(z, 2 * np.exp(x), rtol=1e-6)
    tasks = submitted.last_report.tasks
    assert len(tasks) == BLOCKS + 1 and tasks[-1].deps == tuple(range(BLOCKS))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("pl.spmd_submit(exp_rows_block, x, y)", "pl.spmd_submit needs core_num="),
        (
            "pl.spmd_submit(exp_rows_block, x, y, core_num=4, sync_start=1)",
            "sync_start= must be True or False",
        ),
        (
            "pl.spmd_submit(exp_rows_block, x, y, core_num=4, predicate=1)",
            "pl.spmd_submit has no parameter `predicate`",
        ),
        ("pl.submit(pl.exp, x, y)", "pl.submit launches a kernel: its first argument must be one"),
    ],
)
def test_bad_submits_are_refused_at_their_line(tmp_path: Path, call: str, message: str):
    src = tmp_path / "bad_submit.py"
    src.write_text(
        "import pypto.language as pl\n"
        "T = pl.Tensor[[768, 64], pl.FP32]\n"
        "@pl.jit.incore\n"
        "def exp_rows_block(x: T, y: pl.Out[T]):\n"
        "    return pl.store(pl.exp(pl.load(x, [0, 0], [16, 64])), [0, 0], y)\n"
        "@pl.jit\n"
        "def bad(x: T, y: pl.Out[T]):\n"
        f"    y, tid = {call}\n"
        "    return y\n"
    )
    import importlib.util

    spec = importlib.util.spec_from_file_location("bad_submit", src)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    x = np.zeros((ROWS, C), np.float32)
    with pytest.raises(TypeCheckError, match=message + r".*bad_submit.py:8:"):
        mod.bad.lower(x, x.copy(), config=CFG)


GM_BLOCKS, GM_M = 4, 64


@pl.jit
def spmd_matmul_relu(
    a: pl.Tensor[[GM_BLOCKS * GM_M, KB], pl.FP16],
    b: pl.Tensor[[KB, NB], pl.FP16],
    c: pl.Out[pl.Tensor[[GM_BLOCKS * GM_M, NB], pl.FP32]],
):
    """A mixed body with no pl.split: a cube task and a vector task per block, the product
    crossing through a GM intermediate."""
    for i in pl.spmd(GM_BLOCKS, name_hint="mm_relu"):
        p = pl.matmul(a[i * GM_M : (i + 1) * GM_M, :], b, out_dtype=pl.FP32)
        c[i * GM_M : (i + 1) * GM_M, :] = pl.relu(p)
    return c


def test_a_mixed_spmd_body_gives_each_block_its_own_rows_of_the_gm_intermediate():
    """The blocks run at once, so one shared intermediate would be a race (and block i's
    vector task could read block j's product); each block stores and loads its own rows."""
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, (GM_BLOCKS * GM_M, KB)).astype(np.float16)
    b = rng.uniform(-1, 1, (KB, NB)).astype(np.float16)
    c = np.zeros((GM_BLOCKS * GM_M, NB), np.float32)
    spmd_matmul_relu(a, b, c, config=CFG)
    want = np.maximum(a.astype(np.float32) @ b.astype(np.float32), 0)
    for blk in range(GM_BLOCKS):
        rows = slice(blk * GM_M, (blk + 1) * GM_M)
        np.testing.assert_allclose(c[rows], want[rows], rtol=1e-5, atol=1e-5)
    text = spmd_matmul_relu.lower(a, b, c, config=CFG).as_python()
    assert f"pl.tensor.create([{GM_BLOCKS * GM_M}, {NB}], pl.FP32)" in text  # one tile per block
    report = spmd_matmul_relu.last_report
    assert sorted((t.name, t.block) for t in report.tasks) == [
        (side, blk) for side in ("mm_relu_cube", "mm_relu_vector") for blk in range(GM_BLOCKS)
    ]
    # each vector block starts after the last cube block (it reads the whole intermediate):
    # that end, the task pickup, then the cold head of an AIV's first task
    plat, table = platforms.get("a2a3sim"), report.task_table()
    cube_end = max(r["end"] for r in table if r["kernel"] == "mm_relu_cube")
    assert cube_end == 6632
    assert {r["start"] for r in table if r["kernel"] == "mm_relu_vector"} == {
        cube_end + plat.task_dispatch_cycles + plat.task_cold_head_cycles
    }
    assert report.cycles == 13397


def test_a_mixed_body_under_a_dynamic_block_count_is_refused_at_the_crossing_value():
    """Its intermediate would need a run-time number of rows, which a GM tensor type cannot
    hold; pl.split keeps both sides in one cluster task, which needs none."""
    m = pl.dynamic("M")

    @pl.jit
    def dyn_matmul_relu(
        a: pl.Tensor[[m, KB], pl.FP16],
        b: pl.Tensor[[KB, NB], pl.FP16],
        c: pl.Out[pl.Tensor[[m, NB], pl.FP32]],
    ):
        for i in pl.spmd(m // GM_M):
            prod = pl.matmul(a[i * GM_M : (i + 1) * GM_M, :], b, out_dtype=pl.FP32)
            c[i * GM_M : (i + 1) * GM_M, :] = pl.relu(prod)
        return c

    a, b = np.zeros((2 * GM_M, KB), np.float16), np.zeros((KB, NB), np.float16)
    c = np.ones((2 * GM_M, NB), np.float32)
    line = next(
        n
        for n, text in enumerate(Path(__file__).read_text().splitlines(), 1)
        if "prod = pl.matmul(a[i * GM_M" in text
    )
    with pytest.raises(PyptoError, match=rf"uses `prod`, computed on the cube side.*test_spmd.py:{line}:"):
        dyn_matmul_relu(a, b, c, config=CFG)
    assert (c == 1).all()  # nothing ran
