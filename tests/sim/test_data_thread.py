"""The data thread (chip/core/data_queue): a run's data work is done on a second host thread
in issue order, so outputs, cycles and traces are the same as with it off
(PYPTO_SIM_THREADS=1), and whatever reads data on the run's own thread sees every earlier
op's work. Each kernel here issues more ops than the queue does in place before it starts its
thread (256)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from cube_numerics import k_order

import pypto.language as pl
from pypto import _native_testing
from pypto.errors import OutOfBoundsError, PyptoError
from pypto.runtime import RunConfig, run_kernel_file

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
import flash_attention as fa  # noqa: E402

R, C = 16, 64


def both_ways(monkeypatch, run):
    """`run()` with the data thread and without it."""
    monkeypatch.delenv("PYPTO_SIM_THREADS", raising=False)
    threaded = run()
    monkeypatch.setenv("PYPTO_SIM_THREADS", "1")
    in_place = run()
    monkeypatch.delenv("PYPTO_SIM_THREADS")
    return threaded, in_place


def same_report(a, b):
    assert a.cycles == b.cycles
    assert [(t.core_name, t.start, t.end, t.pipe_busy) for t in a.tasks] == [
        (t.core_name, t.start, t.end, t.pipe_busy) for t in b.tasks
    ]


@pytest.mark.parametrize("k_inf", [False, True], ids=["finite", "inf-in-K"])
def test_attention_gives_the_same_bits_cycles_and_trace(monkeypatch, k_inf):
    heads, s, d = 2, 256, 128
    kernel = fa.make_attention(heads, s, s, d, 64, 128, False)
    q, k, v = fa.inputs(heads, s, s, d)
    if k_inf:  # the cube's operands are widened the general way (a shared piece saw an inf)
        k = k.copy()
        k.reshape(-1)[1000] = np.inf
    mask = fa.causal_mask(64, 128)
    compiled = kernel.compile(q, k, v, mask, np.zeros((heads * s, d), np.float32), config=RunConfig())

    def run():
        out = np.zeros((heads * s, d), np.float32)
        rep = compiled.run(q, k, v, mask, out, trace=True)
        return out, rep

    (out_t, rep_t), (out_p, rep_p) = both_ways(monkeypatch, run)
    np.testing.assert_array_equal(out_t, out_p)  # NaNs in the same places count as equal
    assert np.isnan(out_t).any() == k_inf
    same_report(rep_t, rep_p)
    for a, b in zip(rep_t.tasks, rep_p.tasks):
        assert a.trace.intervals("CUBE") == b.trace.intervals("CUBE")
        assert a.trace.intervals("VECTOR") == b.trace.intervals("VECTOR")


def load_split_k():
    argv, sys.argv = sys.argv, ["split_k.py", "1024", "4"]
    try:
        spec = importlib.util.spec_from_file_location("split_k_data_thread", ROOT / "examples" / "split_k.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    finally:
        sys.argv = argv
    return module


def test_atomic_adds_land_in_the_same_order(monkeypatch):
    sk = load_split_k()
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (sk.M, sk.K)).astype(np.float16)
    b = rng.uniform(-1, 1, (sk.K, sk.N)).astype(np.float16)
    (c_t, rep_t), (c_p, rep_p) = both_ways(monkeypatch, lambda: sk.run(sk.matmul_split_k, a, b))
    np.testing.assert_array_equal(c_t, c_p)
    same_report(rep_t, rep_p)


@pl.jit
def store_then_read(x: pl.Tensor, out: pl.Out[pl.Tensor], out2: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for _i in pl.range(100):  # 300 queued ops: the data thread is running
            a = pl.load(x, [0, 0], [R, C])
            b = pl.add(a, a)
            pl.store(b, [0, 0], out)
        v = pl.read(out, [2, 3])  # GM written by the queued stores
        c = pl.load(x, [0, 0], [R, C])
        first = pl.read(c, [1, 1])  # a tile written by a queued load
        pl.store(pl.muls(c, v + first), [0, 0], out2)
    return out, out2


def test_scalar_reads_see_the_queued_work_before_them(monkeypatch):
    x = np.random.default_rng(1).uniform(-2, 2, (R, C)).astype(np.float32)

    def run():
        out, out2 = np.zeros_like(x), np.zeros_like(x)
        store_then_read(x, out, out2)
        return out, out2

    (out_t, out2_t), (out_p, out2_p) = both_ways(monkeypatch, run)
    np.testing.assert_array_equal(out_t, x + x)
    np.testing.assert_array_equal(out2_t, x * np.float32(2 * x[2, 3] + x[1, 1]))
    np.testing.assert_array_equal(out2_t, out2_p)


@pl.jit
def reshape_in_loop(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for _i in pl.range(100):  # a TRESHAPE between queued ops, twice an iteration
            b = pl.reshape(pl.add(pl.load(x, [0, 0], [R, C]), pl.load(x, [0, 0], [R, C])), [2 * R, C // 2])
            pl.store(pl.reshape(pl.muls(b, 3.0), [R, C]), [0, 0], out)
    return out


def test_a_reshape_waits_for_no_queued_work(monkeypatch):
    """A reshape is a view of its tile's bytes: it touches no data, so the run's thread goes on
    past it while the data thread works (it waited at each one: a third of a decode's time)."""
    x = np.random.default_rng(2).uniform(-2, 2, (R, C)).astype(np.float32)

    def run():
        out = np.zeros_like(x)
        before = _native_testing.data_queue_times()["drains"]
        reshape_in_loop(x, out)
        return out, _native_testing.data_queue_times()["drains"] - before

    (out_t, drains_t), (out_p, drains_p) = both_ways(monkeypatch, run)
    np.testing.assert_array_equal(out_t, (x + x) * np.float32(3))
    np.testing.assert_array_equal(out_t, out_p)
    assert drains_t <= 1 and drains_p == 0  # the end of the run's, with the thread; none without


@pl.jit
def window_in_loop(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for _i in pl.range(100):  # a TWINDOW of the accumulator between queued ops
            a_l = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            b_r = pl.move(pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            acc = pl.matmul(a_l, b_r)
            pl.store(acc[32:64, :], [0, 0], out)
    return out


def test_a_window_of_a_tile_waits_for_no_queued_work(monkeypatch):
    """A window (a store of an accumulator's row band) is a view of its tile's bytes, as a
    reshape is: the run's thread goes on past it while the data thread works (it waited at
    each one)."""
    rng = np.random.default_rng(4)
    a, b = (rng.uniform(-1, 1, (64, 64)).astype(np.float16) for _ in range(2))

    def run():
        out = np.zeros((32, 64), np.float32)
        before = _native_testing.data_queue_times()["drains"]
        window_in_loop(a, b, out)
        return out, _native_testing.data_queue_times()["drains"] - before

    (out_t, drains_t), (out_p, drains_p) = both_ways(monkeypatch, run)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(out_t, want[32:64], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out_t, out_p)
    assert drains_t <= 1 and drains_p == 0  # the end of the run's, with the thread; none without


@pl.jit
def read_input_in_loop(x: pl.Tensor, lens: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.load(x, [0, 0], [R, C])
        for i in pl.range(100):  # a GM scalar read of an input between queued ops
            acc = pl.adds(pl.add(acc, pl.load(x, [0, 0], [R, C])), pl.read(lens, [i % 4]))
        pl.store(acc, [0, 0], out)
    return out


def test_a_scalar_read_of_memory_no_op_writes_waits_for_no_queued_work(monkeypatch):
    """A decode's sequence lengths and block table: inputs no tensor of the run writes, read
    as scalars between queued ops (each read had waited for all the queued work)."""
    x = np.random.default_rng(3).uniform(-2, 2, (R, C)).astype(np.float32)
    lens = np.array([1, 2, 3, 4], np.float32)

    def run():
        out = np.zeros_like(x)
        before = _native_testing.data_queue_times()["drains"]
        read_input_in_loop(x, lens, out)
        return out, _native_testing.data_queue_times()["drains"] - before

    (out_t, drains_t), (out_p, drains_p) = both_ways(monkeypatch, run)
    want = x.copy()
    for i in range(100):
        want = (want + x) + np.float32(lens[i % 4])
    np.testing.assert_array_equal(out_t, want)
    np.testing.assert_array_equal(out_t, out_p)
    assert drains_t <= 1 and drains_p == 0


@pl.jit
def read_what_a_task_wrote(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.create_tensor([R, C], dtype=pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.load(x, [0, 0], [R, C])
        for _i in pl.range(100):  # stores the data thread may not have done when this task ends
            acc = pl.add(acc, pl.load(x, [0, 0], [R, C]))
            pl.store(acc, [0, 0], t)
    with pl.at(level=pl.Level.CORE_GROUP):  # t is its input: flagged read-only here
        pl.store(pl.muls(pl.load(x, [0, 0], [R, C]), pl.read(t, [2, 3])), [0, 0], out)
    return out


def test_a_scalar_read_of_an_input_another_task_writes_sees_that_tasks_work(monkeypatch):
    x = np.random.default_rng(4).uniform(-2, 2, (R, C)).astype(np.float32)

    def run():
        out = np.zeros_like(x)
        read_what_a_task_wrote(x, out)
        return out

    out_t, out_p = both_ways(monkeypatch, run)
    t = x[2, 3]
    for _ in range(100):
        t = t + x[2, 3]
    np.testing.assert_array_equal(out_t, x * t)
    np.testing.assert_array_equal(out_t, out_p)


@pl.jit
def fail_late(x: pl.Tensor, i: pl.INDEX, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for _j in pl.range(100):
            a = pl.load(x, [0, 0], [R, C])
            pl.store(pl.add(a, a), [0, 0], out)
        v = pl.read(x, [i, 0])
        pl.store(pl.muls(pl.load(x, [0, 0], [R, C]), v), [0, 0], out)
    return out


def test_an_error_after_queued_work_is_reported_and_the_next_run_is_right():
    x = np.ones((R, C), np.float32)
    out = np.zeros_like(x)
    with pytest.raises(OutOfBoundsError, match=r"TREAD: index \[16, 0\] is outside") as e:
        fail_late(x, R, out)
    assert "test_data_thread.py:" in str(e.value)
    fail_late(x, 0, out)
    np.testing.assert_array_equal(out, x)


EXERCISE = """
import sys
import numpy as np
from pypto import _native_testing
drain_every, when_waited, gap_us = int(sys.argv[1]), sys.argv[2] == "1", int(sys.argv[3])
ops, rows = (20000 if gap_us == 0 else 600), 40
out, by_run = _native_testing.data_queue_exercise(
    ops, rows, drain_every, when_waited=when_waited, gap_us=gap_us
)
n = 1 + (7 * np.arange(ops)) % rows  # the rows op i writes
first = 1 + np.concatenate([[0], np.cumsum(n)[:-1]])  # each op starts where the last ended
expect = np.where(np.arange(rows) < n[:, None], first[:, None] + np.arange(rows), 0)
assert np.array_equal(out, expect), np.argwhere(out != expect)[:3]
# Who ran each piece (rows 3p .. 3p + 2): one thread per piece, and the run's thread never
# began an op of three or more pieces on its last (it would keep the data thread waiting).
for i in range(ops):
    pieces = [by_run[i, b : min(b + 3, n[i])] for b in range(0, n[i], 3)]
    assert all(p.min() == p.max() for p in pieces), (i, by_run[i])
    took = [bool(p[0]) for p in pieces]
    if len(took) >= 3 and took[-1]:
        assert any(took[:-1]), (i, took)
print("ok", int(by_run[256:].sum()))
"""


# when_waited: the ops split with split_when_waited, shared only while the run's thread waits
# for the queue: here it drains after every op, so it waits (and takes pieces) all the time.
# gap_us: the run's thread pauses after each op, longer than the data thread spins before it
# sleeps, so each op is published to a thread falling or fallen asleep (publish does not fence:
# a publish it misses is seen at the next one, or at the drain, which fences and wakes it).
@pytest.mark.parametrize(
    ("drain_every", "when_waited", "gap_us"),
    [(997, False, 0), (1, True, 0), (7, False, 60)],
    ids=["split", "split_when_waited", "asleep_between_ops"],
)
def test_split_work_is_shared_without_losing_or_repeating_a_piece(tmp_path, drain_every, when_waited, gap_us):
    # In a subprocess with a timeout (a protocol bug would hang rather than fail), run outside
    # the checkout so that an installed pypto is not shadowed by the source tree.
    import subprocess

    r = subprocess.run(
        [sys.executable, "-c", EXERCISE, str(drain_every), str(int(when_waited)), str(gap_us)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stderr


def test_a_bad_thread_count_is_refused_before_the_run(monkeypatch):
    x = np.ones((R, C), np.float32)
    out = np.full_like(x, 7.0)
    monkeypatch.setenv("PYPTO_SIM_THREADS", "0")
    with pytest.raises(PyptoError, match=r"invalid environment variable PYPTO_SIM_THREADS='0'"):
        fail_late(x, 0, out)
    assert (out == 7.0).all()  # nothing ran


def test_the_queue_accounts_a_runs_host_cpu_to_its_threads(monkeypatch):
    """DataQueue::times (what bench_sim splits a run's CPU and the threads' waits by): a run
    with a data thread adds that thread's CPU, no less than what it spent idle; a run without
    one adds nothing."""
    heads, s, d = 2, 256, 128
    kernel = fa.make_attention(heads, s, s, d, 64, 128, False)
    args = (*fa.inputs(heads, s, s, d), fa.causal_mask(64, 128), np.zeros((heads * s, d), np.float32))
    compiled = kernel.compile(*args, config=RunConfig())

    def delta():
        before = _native_testing.data_queue_times()
        compiled.run(*args)
        return {k: v - before[k] for k, v in _native_testing.data_queue_times().items()}

    threaded, in_place = both_ways(monkeypatch, delta)
    assert threaded["data_cpu_ns"] > 0
    assert threaded["data_cpu_ns"] >= threaded["data_idle_ns"] >= 0
    assert threaded["run_waiting_ns"] >= 0 and threaded["run_helping_ns"] >= 0
    # the waits split by reason: a full queue is part of the run's thread's waiting, and the
    # data thread's fork-join waits are counted apart from its idling
    assert 0 <= threaded["run_full_ns"] <= threaded["run_waiting_ns"]
    assert threaded["data_joining_ns"] >= 0
    assert set(in_place.values()) == {0}


def test_l1_to_l0_extracts_give_the_same_bits_and_cycles_on_the_data_thread(monkeypatch):
    """TEXTRACT queues its copy: the GEMM's L1 -> L0 windows, with the data thread and without."""
    spec = importlib.util.spec_from_file_location("gemm_data_thread", ROOT / "examples" / "gemm.py")
    gemm = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = gemm
    spec.loader.exec_module(gemm)
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (512, 512)).astype(np.float16)
    b = rng.uniform(-1, 1, (512, 512)).astype(np.float16)
    kernel = gemm.make_gemm(512, 512, 512)

    def run():
        c = np.zeros((512, 512), np.float32)
        kernel(a, b, c)
        return c, kernel.last_report

    (c_t, rep_t), (c_p, rep_p) = both_ways(monkeypatch, run)
    np.testing.assert_array_equal(c_t, c_p)
    same_report(rep_t, rep_p)
    assert gemm.relative_error(c_t, gemm.reference(a, b)[0]) < 1e-3


BM, BN, BK, BLOCKS = 64, 128, 64, 80  # 6 ops a block: the thread starts after block 42


@pl.jit
def matmuls_bt(a: pl.Tensor, bt: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(BLOCKS):
            a_l = pl.move(
                pl.load(a, [i * BM, 0], [BM, BK], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left
            )
            b_r = pl.move(
                pl.load(bt, [i * BN, 0], [BN, BK], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right
            )
            pl.store(pl.matmul(a_l, b_r, b_trans=True), [i * BM, 0], out)
    return out


def test_a_matmuls_column_pieces_give_the_k_order_bits_when_one_piece_meets_an_inf(monkeypatch):
    """On the data thread an fp16 matmul's output columns are pieces, each widening its own
    operands (a transposed right operand here); one piece's columns meet an inf and take the
    general conversion while its neighbours do not, and every block is still the exact k-order
    sum — the same bits and cycles as in place, where the matmul is one piece."""
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (BLOCKS * BM, BK)).astype(np.float16)
    bt = rng.uniform(-1, 1, (BLOCKS * BN, BK)).astype(np.float16)
    bt[70 * BN + 70, 5] = np.inf  # block 70, output column 70: one piece of four

    def run():
        before = _native_testing.data_queue_times()["data_cpu_ns"]
        out = np.zeros((BLOCKS * BM, BN), np.float32)
        matmuls_bt(a, bt, out)
        return out, matmuls_bt.last_report, _native_testing.data_queue_times()["data_cpu_ns"] > before

    (out_t, rep_t, threaded), (out_p, rep_p, _) = both_ways(monkeypatch, run)
    assert threaded
    np.testing.assert_array_equal(out_t, out_p)
    same_report(rep_t, rep_p)
    for i in (0, 70, BLOCKS - 1):
        with np.errstate(invalid="ignore"):
            ref = k_order(a[i * BM : (i + 1) * BM], bt[i * BN : (i + 1) * BN].T)
        np.testing.assert_array_equal(out_t[i * BM : (i + 1) * BM], ref)
    assert np.isinf(out_t).sum() == BM and np.isinf(out_t[70 * BM : 71 * BM, 70]).all()


def test_a_pushed_tile_its_core_rewrites_before_the_pop_arrives_as_pushed(monkeypatch, fixture_kernel):
    """With a data thread a push's copy waits for the pop, which copies straight from the pushed
    tile; the pushing core rewriting the tile first, or ending its task, copies it at once. The
    AIC pushes acc = (i + 1) x and then accumulates into the same tile before the AIV pops it."""
    steps = 120  # the fixture's kSteps
    x = (np.arange(64 * 64).reshape(64, 64) % 251 / 64).astype(np.float16)
    eye = np.eye(64, dtype=np.float16)
    so = fixture_kernel("cluster_push_overwrite")

    def run():
        out = np.zeros((steps * 64, 64), np.float32)
        rep = run_kernel_file(so, [x, eye, out], outputs={2}, core="cluster")
        return out, rep

    (out_t, rep_t), (out_p, rep_p) = both_ways(monkeypatch, run)
    expect = np.arange(1, steps + 1, dtype=np.float32)[:, None, None] * x.astype(np.float32)
    np.testing.assert_array_equal(out_t, expect.reshape(steps * 64, 64))
    np.testing.assert_array_equal(out_p, out_t)
    same_report(rep_t, rep_p)


def test_the_cores_storage_never_overlaps_and_reuses_the_blocks_given_back():
    """The on-chip spaces' bytes (core_storage): blocks live at once are disjoint, each at
    least its size; given back, the next spaces of their size classes get them again (nothing
    grows across runs). A space past 4 MiB (a what-if size) is taken and given back too."""
    from pypto import _native_testing

    sizes = [1024, 64 << 10, 192 << 10, 256 << 10, 256 << 10, 512 << 10, 3 << 20, 5 << 20]
    first, second = _native_testing.core_storage_rounds(sizes)
    spans = sorted(zip(first, sizes))
    for (a, n), (b, _) in zip(spans, spans[1:]):
        assert a + n <= b, "two live spaces overlap"
    kept = [a for a, n in zip(first, sizes) if n <= 4 << 20]
    assert sorted(a for a, n in zip(second, sizes) if n <= 4 << 20) == sorted(kept)


@pytest.mark.parametrize("taken_meanwhile", [False, True], ids=["own-storage", "other-storage"])
def test_a_reused_empty_context_keeps_its_checked_tiles_only_with_its_own_storage(taken_meanwhile):
    """A kept context past the pool's storage budget gives its storage back and is kept empty.
    Reused, it takes the same blocks back if they are still pooled, and keeps the tiles it
    checked, which point into them. If another context took them meanwhile, it gets other
    bytes: a kept tile would then read and write the other context's storage, so they go."""
    from pypto import platforms

    native = platforms.get("a2a3sim").to_native()
    kept, same_storage = _native_testing.context_reuse_after_release(native, taken_meanwhile)
    assert same_storage is not taken_meanwhile
    assert kept is not taken_meanwhile


def put_off_model(ops):
    """put_off_writes by brute force: every read still put off is looked at, per write."""
    live, reads, out = {}, 0, []
    for kind, a, b in ops:
        if kind == 0:
            live[reads] = (a, b)
            reads += 1
        elif kind == 1:
            hit = sorted(n for n, (lo, hi) in live.items() if lo < b and a < hi)
            for n in hit:
                del live[n]
            out.append(hit)
        else:
            live.pop(a, None)
    return out, len(live)


@pytest.mark.parametrize("seed", range(6))
def test_a_write_flushes_exactly_the_put_off_reads_its_bytes_meet(seed):
    """The put-off reads are kept in address order and a write looks only at those beginning
    within the longest read's length below it (DataQueue::before_write): it must still flush
    every read it overlaps — one wholly around it, one reaching into it from below, one the
    longest read's length away — and no other, as a scan of them all does."""
    rng = np.random.default_rng(seed)
    ops = []
    for _ in range(400):
        kind = rng.choice(3, p=[0.45, 0.45, 0.1])
        if kind == 2:
            ops.append((2, int(rng.integers(0, 200)), 0))
            continue
        a = int(rng.integers(0, 4000))
        length = int(rng.choice([0, 1, 16, 64, 512, 2048]))
        ops.append((int(kind), a, a + length))
    got = _native_testing.put_off_writes(ops)
    assert (list(got[0]), got[1]) == put_off_model(ops)
    assert any(len(hit) > 1 for hit in got[0])  # writes that meet several reads at once
