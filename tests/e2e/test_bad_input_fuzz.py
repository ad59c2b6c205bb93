"""Random bad arguments, configs and malformed kernels: every outcome is a correct result or a
typed PyptoError — never a crash, never an untyped exception — and no input is changed."""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import itertools
import math
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import seed_kernels as sk
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pypto.errors import ConfigError, PyptoError
from pypto.runtime import RunConfig

A = np.random.default_rng(0).uniform(-2, 2, (sk.ROWS, sk.TC)).astype(np.float32)
SHAPES = [
    (sk.ROWS, sk.TC),
    (64, sk.TC),
    (sk.ROWS, 64),
    (0, sk.TC),
    (sk.ROWS * sk.TC,),
    (2, sk.ROWS, sk.TC),
    (),
]
DTYPES = ["float32", ">f4", "float16", "int32", "complex64", "bool", "object", "float64"]
LAYOUTS = ["c", "fortran", "strided", "readonly"]
JUNK = [None, "x", 3, -1, 2**70, math.nan, [1.0, 2.0], object(), b"bytes"]
FUZZ = settings(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


def make_array(shape: tuple, dtype: str, layout: str) -> np.ndarray:
    base = np.arange(math.prod(shape) * (2 if layout == "strided" else 1)) % 7 - 3
    a = base.astype(dtype)
    if layout == "strided":
        a = a[::2]
    a = a.reshape(shape, order="F" if layout == "fortran" else "C")
    if layout == "readonly":
        a.flags.writeable = False
    return a


ARRAYS = st.builds(make_array, st.sampled_from(SHAPES), st.sampled_from(DTYPES), st.sampled_from(LAYOUTS))
VALUES = ARRAYS | ARRAYS | st.sampled_from(JUNK)


def snapshot(v: Any) -> Any:
    return v.copy() if isinstance(v, np.ndarray) else v


def same(v: Any, before: Any) -> bool:
    if isinstance(v, np.ndarray):
        nan = v.dtype.kind in "fc"
        return (
            v.dtype == before.dtype and v.shape == before.shape and np.array_equal(v, before, equal_nan=nan)
        )
    return v is before or v == before or (isinstance(v, float) and math.isnan(v))


@settings(FUZZ, max_examples=120)
@given(a=VALUES, out=VALUES, by_keyword=st.booleans(), alias=st.booleans())
def test_bad_arguments(a, out, by_keyword, alias):
    if alias and isinstance(a, np.ndarray):
        out = a  # one buffer as input and output
    a0, out0 = snapshot(a), snapshot(out)
    try:
        if by_keyword:
            sk.single_buffer(a, out=out)
        else:
            sk.single_buffer(a, out)
    except PyptoError:
        assert same(out, out0)
    else:  # it ran: the arguments were a valid pair, and the result is right
        np.testing.assert_allclose(out, np.exp(a.astype(np.float32)), rtol=1e-6)
    assert same(a, a0) or out is a


FIELDS = [
    "ub_bytes",
    "bw_gm_to_ub",
    "event_ids",
    "alignment_bytes",
    "clock_hz",
    "vec_exp_base",
    "aiv_cores",
    "bogus",
]
NUMBERS = st.sampled_from(
    [0, -1, 1, 2, 3, 32, 2**31, 2**63, 1e-300, 1e300, math.inf, -math.inf, math.nan, 0.5]
)


@st.composite
def config_kwargs(draw: st.DrawFn) -> dict[str, Any]:
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        kw["platform"] = draw(st.sampled_from(["a2a3sim", "a5sim", "a9", "", 7, None]))
    if draw(st.booleans()):
        kw["seed"] = draw(st.sampled_from([0, 1, -1, 2**64, 2**64 - 1, 1.5, "3", True]))
    if draw(st.booleans()):
        kw["platform_overrides"] = draw(
            st.dictionaries(st.sampled_from(FIELDS), NUMBERS | st.sampled_from(["1", None]), max_size=2)
        )
    if draw(st.booleans()):
        kw["isolate"] = draw(st.sampled_from([True, False, None, 1, "no"]))
    if draw(st.booleans()):
        kw["timeout_s"] = draw(st.sampled_from([None, 0, -1, 1e-9, 30, math.nan, "5"]))
    if draw(st.booleans()):
        kw["trace"] = draw(st.sampled_from([False, "yes", None]))
    return kw


@settings(FUZZ, max_examples=60)
@given(kw=config_kwargs())
def test_random_configs(kw):
    try:
        config = RunConfig(**kw)
    except ConfigError:
        return
    out = np.zeros_like(A)
    a0 = A.copy()
    try:
        sk.single_buffer(A, out, config=config)
    except PyptoError:
        pass
    else:
        np.testing.assert_allclose(out, np.exp(A), rtol=1e-6)
    assert np.array_equal(A, a0)


# --- malformed kernels: written as real files (the frontend reads source with inspect) ---------
_DIR = Path(tempfile.mkdtemp(prefix="pypto_bad_kernels_"))
atexit.register(shutil.rmtree, _DIR, ignore_errors=True)
_IDS = itertools.count()

TEMPLATE = """
import pypto.language as pl


@pl.jit
def k(a: pl.Tensor, out: {out_ann}):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range({trips}):
            t = pl.load(a, [{off}, 0], [{rows}, {cols}])
            u = {op}(t)
            pl.store(u, [{store_off}, 0], {target})
    return out
"""


def mostly(good: str, *bad: str) -> st.SearchStrategy[str]:
    """The valid choice half the time, so random kernels also reach codegen and the simulator."""
    return st.just(good) | st.sampled_from(bad)


@st.composite
def kernel_source(draw: st.DrawFn) -> str:
    return TEMPLATE.format(
        out_ann=draw(mostly("pl.Out[pl.Tensor]", "pl.Tensor", "pl.InOut[pl.Tensor]", "pl.Out")),
        trips=draw(mostly("2", "0", "-1", "2.5", "a", "3")),
        off=draw(mostly("i * 64", "-64", "i // 0", "2**40", "i * 64 + 1", "None", "i * 32")),
        rows=draw(mostly("64", "0", "-64", "2**31", "100000", "32")),
        cols=draw(mostly("128", "0", "64", "129")),
        op=draw(mostly("pl.exp", "pl.neg", "pl.nonexistent", "len", "pl.load")),
        store_off=draw(mostly("i * 64", "-1", "i", "2**62", "i * 96")),
        target=draw(mostly("out", "a", "t", "undefined_name")),
    )


def load_kernel(source: str) -> Any:
    name = f"bad_kernel_{next(_IDS)}"
    path = _DIR / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.k


@settings(FUZZ, max_examples=60)
@given(source=kernel_source())
def test_malformed_kernels(source):
    a = np.arange(128 * 128, dtype=np.float32).reshape(128, 128) / 1000
    a0, out = a.copy(), np.zeros_like(a)
    with contextlib.suppress(PyptoError):  # out may hold what ran before a run-time error
        load_kernel(source)(a, out)
    assert np.array_equal(a, a0)
