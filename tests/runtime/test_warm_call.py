"""The warm call of a small kernel stays cheap, checked by the work it does rather than by its
time (which a loaded machine would make flaky): the Python functions a call runs are counted
against a budget, and the report is left to be built when read. benchmarks/bench_jit.py
prints the time, in pieces."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from small_programs import Double

import pypto.language as pl
from pypto import ir
from pypto.errors import ArgumentError, PyptoError
from pypto.report.run_report import RunReport
from pypto.runtime import RunConfig

# Python-level calls (functions and builtins) of one warm call today (13, on the fast path of
# pypto.runtime.warm, the arrays checked by the native run), plus a little slack: a change that
# adds work to every call fails here and says where the calls went.
CALL_BUDGET = 20
CONFIG = RunConfig(platform="a2a3sim")


@pl.jit
def add_one(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [8, 64])
        pl.store(pl.adds(x, 1.0), [0, 0], out)
    return out


def calls_of(fn, *args, **kwargs) -> list[str]:
    """The Python-level calls of ``fn(*args, **kwargs)``, in order."""
    calls: list[str] = []

    def profile(frame, event, arg) -> None:
        if event == "call":
            calls.append(f"{frame.f_code.co_filename.rsplit('/', 1)[-1]}:{frame.f_code.co_name}")
        elif event == "c_call":
            calls.append(getattr(arg, "__qualname__", repr(arg)))

    sys.setprofile(profile)
    try:
        fn(*args, **kwargs)
    finally:
        sys.setprofile(None)
    return calls[:-1]  # sys.setprofile(None) itself


def test_a_warm_call_stays_within_its_python_call_budget():
    a = np.ones((8, 64), np.float32)
    out = np.zeros_like(a)
    add_one(a, out, config=CONFIG)  # compiles; the calls below are warm
    calls = calls_of(add_one, a, out, config=CONFIG)
    assert len(calls) <= CALL_BUDGET, "\n".join(calls)
    built = [c for c in calls if c.startswith(("report", "compiled.py:launch_report", "compiled.py:report"))]
    assert not built, "the report is built only when read"
    np.testing.assert_array_equal(out, a + 1)


def test_the_report_of_a_warm_call_is_built_when_read_and_matches_an_eager_one():
    a = np.ones((8, 64), np.float32)
    out = np.zeros_like(a)
    add_one(a, out, config=CONFIG)
    lazy = add_one.last_report
    eager = add_one.compile(a, out, config=CONFIG).run(a, out)
    assert isinstance(lazy, RunReport)
    assert lazy.to_dict() == eager.to_dict()
    assert add_one.last_report is lazy  # built once


def _warm(shape=(8, 64)) -> tuple[np.ndarray, np.ndarray]:
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    out = np.zeros_like(a)
    add_one(a, out, config=CONFIG)
    add_one(a, out, config=CONFIG)  # the fast path is set up by now
    return a, out


def test_warm_calls_see_new_values_and_other_shapes_compile_their_own_program():
    a, out = _warm()
    b = a * 3
    add_one(b, out, config=CONFIG)
    np.testing.assert_array_equal(out, b + 1)
    wide = np.full((16, 64), 2.0, np.float32)
    wide_out = np.zeros_like(wide)
    add_one(wide, wide_out, config=CONFIG)  # another specialisation: only its first tile is written
    np.testing.assert_array_equal(wide_out[:8], wide[:8] + 1)
    add_one(a, out, config=None)  # the default config: the same program, another face
    np.testing.assert_array_equal(out, a + 1)
    add_one(a, out, config=RunConfig(platform="a2a3sim"))  # an equal config, another object
    np.testing.assert_array_equal(out, a + 1)
    assert add_one.last_report.cycles > 0


def test_views_and_bad_outputs_after_a_warm_call_are_checked_as_on_the_first():
    a, out = _warm()
    buffer = np.zeros((16, 64), np.float32)
    add_one(a, buffer[8:], config=CONFIG)  # a contiguous view: runs, writes through
    np.testing.assert_array_equal(buffer[8:], a + 1)
    with pytest.raises(ArgumentError, match="overlaps argument"):
        add_one(a, a, config=CONFIG)
    frozen = np.zeros_like(a)
    frozen.flags.writeable = False
    with pytest.raises(ArgumentError, match="read-only"):
        add_one(a, frozen, config=CONFIG)
    with pytest.raises(ArgumentError, match="not contiguous"):
        add_one(a, np.zeros((64, 8), np.float32).T, config=CONFIG)
    with pytest.raises(ArgumentError, match="takes 2 arguments"):
        add_one(a, out, out, config=CONFIG)


def test_a_bad_sim_threads_value_set_after_a_warm_call_is_refused(monkeypatch):
    a, out = _warm()
    monkeypatch.setenv("PYPTO_SIM_THREADS", "zero")
    with pytest.raises(PyptoError, match="PYPTO_SIM_THREADS"):
        add_one(a, out, config=CONFIG)
    monkeypatch.setenv("PYPTO_SIM_THREADS", "1")  # valid: runs on one thread, same result
    add_one(a * 2, out, config=CONFIG)
    np.testing.assert_array_equal(out, a * 2 + 1)


@pl.jit
def add_then_double(a: pl.Tensor, out: pl.Out[pl.Tensor], twice: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [8, 64])
        pl.store(pl.adds(x, 1.0), [0, 0], out)
    with pl.at(level=pl.Level.CORE_GROUP):
        y = pl.load(out, [0, 0], [8, 64])  # an output another kernel writes: read-only here
        pl.store(pl.muls(y, 2.0), [0, 0], twice)
    return out, twice


def test_the_native_checks_of_a_warm_call_pass_only_the_arrays_it_was_set_up_for():
    a, out = _warm()
    frozen = a.copy()
    frozen.flags.writeable = False  # a read-only input runs warm: the kernel only reads it
    add_one(frozen, out, config=CONFIG)
    np.testing.assert_array_equal(out, a + 1)
    half = a.astype(np.float16)  # same shape, another dtype: its own program
    half_out = np.zeros_like(half)
    add_one(half, half_out, config=CONFIG)
    np.testing.assert_array_equal(half_out, (a + 1).astype(np.float16))
    add_one(a, out, config=CONFIG)  # the float32 fast path again
    np.testing.assert_array_equal(out, a + 1)
    fortran = np.asfortranarray(np.zeros((8, 64), np.float32))  # owns its data, not C order
    with pytest.raises(ArgumentError, match="not contiguous"):
        add_one(a, fortran, config=CONFIG)
    with pytest.raises(ArgumentError, match="overlaps argument"):
        add_one(out, out, config=CONFIG)


def test_a_warm_call_passes_an_output_another_kernel_reads_as_read_only_to_that_kernel():
    a = np.arange(8 * 64, dtype=np.float32).reshape(8, 64)
    out, twice = np.zeros_like(a), np.zeros_like(a)
    for scale in (1, 3, 5):  # the first call compiles, the later ones are warm
        add_then_double(a * scale, out, twice, config=CONFIG)
        np.testing.assert_array_equal(out, a * scale + 1)
        np.testing.assert_array_equal(twice, (a * scale + 1) * 2)
    compiled = add_then_double.compile(a, out, twice, config=CONFIG)
    assert compiled._native_tasks()[1], "the reading kernel gets a read-only repeat of out"
    assert add_then_double.last_report.cycles > 0


def test_a_compiled_program_called_again_alike_takes_the_warm_path():
    # upstream's compiled(*tensors): the same budget as a @pl.jit kernel's warm call
    compiled = ir.compile(Double, platform="a2a3sim")
    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    out = np.zeros_like(a)
    compiled(a, out)
    calls = calls_of(compiled, a * 3, out)
    assert len(calls) <= CALL_BUDGET, "\n".join(calls)
    np.testing.assert_array_equal(out, a * 3 * 2)
    lazy = compiled.last_report
    assert isinstance(lazy, RunReport) and lazy.to_dict() == compiled.run(a * 2, out).to_dict()


def test_a_compiled_programs_warm_path_leaves_anything_else_to_the_general_one():
    compiled = ir.compile(Double, platform="a2a3sim")
    a = np.ones((64, 64), np.float32)
    out = np.zeros_like(a)
    compiled(a, out, config=CONFIG)
    compiled(a, out, config=CONFIG)  # warm, for this config object
    with pytest.raises(ArgumentError, match="must be a tensor of shape"):
        compiled(np.ones((32, 64), np.float32), np.zeros((32, 64), np.float32), config=CONFIG)
    with pytest.raises(ArgumentError, match="overlaps argument"):
        compiled(a, a, config=CONFIG)
    made = compiled(a * 3, config=CONFIG)  # upstream's return style: the output made
    np.testing.assert_array_equal(made, a * 3 * 2)
    compiled(a * 5, out, config=RunConfig(platform="a2a3sim"))  # an equal config, another object
    np.testing.assert_array_equal(out, a * 5 * 2)
    compiled(a * 7, out, config=CONFIG)
    np.testing.assert_array_equal(out, a * 7 * 2)


# A budget for the same call on torch tensors (31 calls today): each is viewed as numpy (a
# handful of torch attribute reads and calls), and the two tensors' bytes checked apart.
TORCH_CALL_BUDGET = 40


def test_torch_tensors_take_the_warm_path_with_the_general_paths_checks():
    """Upstream's callers pass CPU torch tensors: a warm call views them as numpy as the first
    call did (bf16 included), bumps each output's version counter as an in-place op does, and
    leaves anything unusual (overlapping tensors, an output that requires grad, a view of an
    array passed too) to the general path, which names it."""
    torch = pytest.importorskip("torch")
    a, out = torch.arange(8 * 64, dtype=torch.float32).reshape(8, 64), torch.zeros(8, 64)
    add_one(a, out, config=CONFIG)
    for scale in (2, 3):
        version = out._version
        calls = calls_of(add_one, a * scale, out, config=CONFIG)
        assert len(calls) <= TORCH_CALL_BUDGET, "\n".join(calls)
        assert not any("compiled.py:execute" in c for c in calls), "the warm path ran it"
        torch.testing.assert_close(out, a * scale + 1, rtol=0, atol=0)
        assert out._version > version  # as after an in-place op: a saved tensor is stale
    half, half_out = a.to(torch.bfloat16), torch.zeros(8, 64, dtype=torch.bfloat16)
    for _ in range(2):  # cold, then warm
        assert add_one(half, half_out, config=CONFIG) is half_out
    torch.testing.assert_close(half_out, (half.float() + 1).to(torch.bfloat16), rtol=0, atol=0)
    with pytest.raises(ArgumentError, match="overlaps argument"):
        add_one(a, a, config=CONFIG)
    shared = np.zeros((8, 64), np.float32)
    with pytest.raises(ArgumentError, match="overlaps argument"):
        add_one(shared, torch.from_numpy(shared), config=CONFIG)  # one buffer, two faces
    with pytest.raises(ArgumentError, match="requires grad"):
        add_one(a, torch.zeros(8, 64, requires_grad=True), config=CONFIG)
    weight = torch.nn.Parameter(a * 5)  # an input that requires grad: detached, warm
    add_one(weight, out, config=CONFIG)
    calls = calls_of(add_one, weight, out, config=CONFIG)
    assert not any("compiled.py:execute" in c for c in calls)
    torch.testing.assert_close(out, a * 5 + 1, rtol=0, atol=0)
    add_one(a, out, config=CONFIG)
    torch.testing.assert_close(out, a + 1, rtol=0, atol=0)
    compiled = ir.compile(Double, platform="a2a3sim")  # upstream's compiled(*tensors)
    big, big_out = torch.ones(64, 64), torch.zeros(64, 64)
    compiled(big, big_out)
    calls = calls_of(compiled, big * 3, big_out)
    assert len(calls) <= TORCH_CALL_BUDGET and not any("compiled.py:execute" in c for c in calls)
    torch.testing.assert_close(big_out, big * 6, rtol=0, atol=0)
