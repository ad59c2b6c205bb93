"""Module constants and closure values a kernel folds in, rebound in the same process: the next
call compiles again and uses the new value (as a new process would), and an unchanged value
never costs a compile."""

from __future__ import annotations

import types
from dataclasses import dataclass

import numpy as np
import pytest

import pypto.language as pl
from pypto.runtime import jit

SCALE = 2.0
ROWS = [16, 64]
knobs = types.ModuleType("pc_captured_knobs")
knobs.OFFSET = 1.0


@pl.jit.inline
def shifted(t):
    return pl.adds(t, knobs.OFFSET)


@pl.jit
def scale(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], ROWS)
        pl.store(shifted(pl.muls(t, SCALE)), [0, 0], out)
    return out


def make(factor):
    @pl.jit
    def closure_kernel(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.muls(pl.load(a, [0, 0], [16, 64]), factor), [0, 0], out)
        return out

    return closure_kernel, lambda value: setattr_cell(closure_kernel, value)


def setattr_cell(kernel, value):
    kernel.fn.__closure__[kernel.fn.__code__.co_freevars.index("factor")].cell_contents = value


@dataclass
class Config:  # a model's config: not frozen, so it can also change in place
    factor: float = 2.0


CONFIG = Config()
host_mod = types.ModuleType("pc_captured_host")
host_mod.CONFIG = Config(3.0)
host_mod.ONE = 1.0


def _one():  # a plain helper the host function calls: its reads count too
    return host_mod.ONE


def _host_factor():
    return host_mod.CONFIG.factor + _one()


host_mod.host_scale = pl.jit.host(_host_factor)


@pl.jit
def configured(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.muls(pl.load(a, [0, 0], [16, 64]), CONFIG.factor)
        pl.store(pl.muls(t, host_mod.host_scale()), [0, 0], out)
    return out


LOAD = jit.program_cache.load  # the real lookup, for the test that reads the program cache


@pytest.fixture(autouse=True)
def in_process_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the in-process cache here: the program cache on disk is never read."""
    monkeypatch.setattr(jit.program_cache, "load", lambda *a: None)


A = np.random.default_rng(0).uniform(-1, 1, (16, 64)).astype(np.float32)


def call(kernel):
    out = np.zeros_like(A)
    kernel(A, out)
    return out


def test_rebinding_a_module_constant_or_a_module_attribute_compiles_again(compiles):
    global SCALE
    try:
        np.testing.assert_array_equal(call(scale), A * np.float32(2) + np.float32(1))
        call(scale)
        assert compiles == ["scale"]  # unchanged values: no compile
        SCALE = 3.0
        np.testing.assert_array_equal(call(scale), A * np.float32(3) + np.float32(1))
        knobs.OFFSET = -1.0  # read by an inline helper, through a module attribute
        np.testing.assert_array_equal(call(scale), A * np.float32(3) - np.float32(1))
        assert compiles == ["scale"] * 3
    finally:
        SCALE, knobs.OFFSET = 2.0, 1.0


def test_a_list_changed_in_place_is_a_change(compiles):
    try:
        call(scale)
        ROWS[0] = 8
        out = call(scale)
        np.testing.assert_array_equal(out[8:], 0)
        np.testing.assert_array_equal(out[:8], A[:8] * np.float32(2) + np.float32(1))
        assert compiles == ["scale", "scale"]
    finally:
        ROWS[0] = 16


def test_a_rebound_closure_value_compiles_again(compiles):
    kernel, rebind = make(2.0)
    np.testing.assert_array_equal(call(kernel), A * np.float32(2))
    rebind(0.5)
    np.testing.assert_array_equal(call(kernel), A * np.float32(0.5))
    assert compiles == ["closure_kernel", "closure_kernel"]


def test_guards_read_from_the_program_cache_record_are_the_ones_the_source_gives():
    from pypto.frontend import captured
    from pypto.runtime.program_cache import _record_fn

    # module values, an inline helper's module attribute, a closure; a config, a host function's
    # read through a module attribute and its helper's
    for fn, names in ((scale.fn, {"SCALE", "ROWS", "OFFSET"}), (make(2.0)[0].fn, {None}),
                      (configured.fn, {"CONFIG", "ONE"})):  # fmt: skip
        found = captured.guards(fn, _record_fn(fn))
        assert found == captured.guards(fn)
        assert {name for _, name, _ in found} >= names


def test_a_kernel_served_by_the_program_cache_still_compiles_again_when_a_constant_changes(
    monkeypatch, compiles
):
    global SCALE
    monkeypatch.setattr(jit.program_cache, "load", LOAD)
    try:
        call(scale)  # compiled and stored on disk (or found there)
        before = len(compiles)
        scale.__dict__.pop("_pypto_compiled")  # as a new process: served by the program cache,
        np.testing.assert_array_equal(call(scale), A * np.float32(2) + np.float32(1))
        assert len(compiles) == before  # its guards made from the cache's record
        SCALE = 3.0
        np.testing.assert_array_equal(call(scale), A * np.float32(3) + np.float32(1))
        assert len(compiles) == before + 1
    finally:
        SCALE = 2.0


def test_a_config_rebound_or_changed_in_place_and_a_host_function_s_reads_compile_again(compiles):
    """A dataclass config the kernel reads, rebound or changed in place, a value a @pl.jit.host
    function reads (reached through a module attribute), and one a plain function it calls
    reads: each compiles again in the same process (each had served the program compiled with
    the old value)."""
    global CONFIG
    try:
        np.testing.assert_array_equal(call(configured), A * np.float32(2) * np.float32(4))
        call(configured)
        CONFIG = Config(2.0)  # an equal config, another object: no compile
        call(configured)
        assert compiles == ["configured"]
        CONFIG = Config(5.0)
        np.testing.assert_array_equal(call(configured), A * np.float32(5) * np.float32(4))
        CONFIG.factor = 0.5  # in place
        np.testing.assert_array_equal(call(configured), A * np.float32(0.5) * np.float32(4))
        host_mod.CONFIG = Config(7.0)  # read by the host function only
        np.testing.assert_array_equal(call(configured), A * np.float32(0.5) * np.float32(8))
        host_mod.ONE = 2.0  # read by a plain function the host function calls
        np.testing.assert_array_equal(call(configured), A * np.float32(0.5) * np.float32(9))
        assert compiles == ["configured"] * 5
    finally:
        CONFIG, host_mod.CONFIG, host_mod.ONE = Config(), Config(3.0), 1.0
