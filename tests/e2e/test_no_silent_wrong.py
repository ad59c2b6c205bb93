"""Cases that used to give silently wrong results, crashes or untyped errors: each is now a
typed error naming the argument (or field) and the rule, or handled correctly, and the
caller's arrays are unchanged."""

from __future__ import annotations

import importlib
import re
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import seed_kernels as sk

import pypto.language as pl
from pypto.errors import (
    ArgumentError,
    ArgumentMismatchError,
    ArgumentValueError,
    BoundsCheckError,
    CompileError,
    ConfigError,
    KernelZeroDivisionError,
    PyptoError,
    TypeCheckError,
    VerifyError,
)
from pypto.runtime import RunConfig, run_kernel_file

A = np.arange(sk.ROWS * sk.TC, dtype=np.float32).reshape(sk.ROWS, sk.TC) / 1000
HERE = Path(__file__).read_text().splitlines()


def line_of(text: str) -> int:
    return next(i for i, line in enumerate(HERE, 1) if text in line and "line_of" not in line)


# --- byte order, aliasing, argument binding -----------------------------------------------------
def test_big_endian_input_is_converted():
    out = np.zeros_like(A)
    big = A.astype(">f4")
    sk.single_buffer(big, out)
    np.testing.assert_allclose(out, np.exp(A), rtol=1e-6)
    assert big.dtype == np.dtype(">f4") and (big == A).all()


def test_big_endian_output_is_refused():
    out = np.zeros(A.shape, ">f4")
    with pytest.raises(ArgumentError, match="output argument 'out' is not in native byte order"):
        sk.single_buffer(A, out)
    assert (out == 0).all()


def test_output_overlapping_an_input_is_refused():
    buf = A.copy()
    with pytest.raises(ArgumentError, match="output argument 'out' overlaps argument 'a'"):
        sk.single_buffer(buf, buf)
    with pytest.raises(ArgumentError, match=r"output argument '#1' overlaps argument '#0'"):
        whole = np.zeros((2 * 64, 128), np.float32)
        run_kernel_file(sk_exp(), [whole[: 64 + 1], whole[64:]], outputs={1})
    assert (buf == A).all()


def sk_exp():
    from pypto.kernel_build import KernelSource, build_kernel

    path = Path(__file__).parent.parent / "fixtures" / "kernels" / "exp_single_buffer.cpp"
    return build_kernel(KernelSource(name="exp_single_buffer", path=path), platform="a2a3sim")


def test_argument_given_by_position_and_keyword_is_a_type_error():
    out = np.zeros_like(A)
    with pytest.raises(TypeError, match=r"got multiple values for argument `a`"):
        sk.single_buffer(A, out, a=A)
    assert issubclass(ArgumentMismatchError, ArgumentError) and (out == 0).all()


def test_compiled_run_checks_the_compiled_signature():
    out = np.zeros_like(A)
    compiled = sk.single_buffer.compile(A, out)
    with pytest.raises(
        ArgumentError,
        match=r"argument `a` is \[512, 128\] FP16, but this program was compiled for \[512, 128\] FP32",
    ):
        compiled.run(A.astype(np.float16), out)
    with pytest.raises(
        ArgumentError, match=r"is \[32, 128\] FP32, but this program was compiled for \[512, 128\]"
    ):
        compiled.run(A[:32].copy(), out)
    assert (out == 0).all()


# --- division by zero -----------------------------------------------------------------------------
@pl.jit
def mod_by(a: pl.Tensor, out: pl.Out[pl.Tensor], k: pl.Scalar[pl.INDEX]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            t = pl.load(a, [(i % k) * 32, 0], [32, 128])  # the modulo
            pl.store(t, [i * 32, 0], out)
    return out


@pl.jit
def orchestration_div(a: pl.Tensor, out: pl.Out[pl.Tensor], k: pl.Scalar[pl.INDEX]):
    n = 2 // k  # orchestration arithmetic
    for _i in pl.range(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [64, 128])
            pl.store(t, [0, 0], out)
    return out


def test_modulo_by_zero_at_run_time_names_the_line():
    out = np.zeros_like(A)
    mod_by(A, out, 1)
    np.testing.assert_array_equal(out[:32], A[:32])
    out[:] = 5
    with pytest.raises(KernelZeroDivisionError) as err:
        mod_by(A, out, 0)
    assert isinstance(err.value, ZeroDivisionError)
    assert f"`%` by zero (the divisor evaluated to 0) at {__file__}:{line_of('# the modulo')}" in str(
        err.value
    )
    assert (out == 5).all()


def test_orchestration_division_by_zero_is_a_compile_error():
    with pytest.raises(
        TypeCheckError, match="cannot evaluate `2 // k`: integer division or modulo by zero"
    ) as err:
        orchestration_div(A, np.zeros_like(A), 0)
    assert err.value.span.line == line_of("# orchestration arithmetic")


# --- sizes, offsets, memrefs ----------------------------------------------------------------------
@pl.jit
def zero_rows(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [0, 128])  # zero rows
        pl.store(t, [0, 0], out)
    return out


@pl.jit
def negative_offset(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [-8, 0], [64, 128])  # negative offset
        pl.store(t, [0, 0], out)
    return out


@pl.jit
def two_slot_counts(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            t: pl.Tile[[32, 128], pl.FP32, pl.Mem.Vec, pl.MemRef("ub", slots=2)[i % 2]] = pl.load(
                a, [i * 32, 0], [32, 128]
            )
            u: pl.Tile[[32, 128], pl.FP32, pl.Mem.Vec, pl.MemRef("ub", slots=3)[i % 3]] = pl.exp(t)  # second
            pl.store(u, [i * 32, 0], out)
    return out


@pl.jit
def slot_out_of_range(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t: pl.Tile[[64, 128], pl.FP32, pl.Mem.Vec, pl.MemRef("ub", slots=2)[2]] = pl.load(
            a, [0, 0], [64, 128]
        )
        pl.store(t, [0, 0], out)
    return out


@pl.jit
def dynamic_slot_out_of_range(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            t: pl.Tile[[16, 128], pl.FP32, pl.Mem.Vec, pl.MemRef("ub", slots=2)[i % 3]] = pl.load(  # i % 3
                a, [i * 16, 0], [16, 128]
            )
            pl.store(t, [i * 16, 0], out)
    return out


@pytest.mark.parametrize(
    "kernel, error, text, marker",
    [
        (
            zero_rows,
            TypeCheckError,
            "`shapes` [0, 128] has size 0 on dim 0; sizes must be positive",
            "# zero rows",
        ),
        (
            negative_offset,
            BoundsCheckError,
            "on dim 0 the offset can be -8; offsets must be >= 0",
            "# negative offset",
        ),
        (
            two_slot_counts,
            VerifyError,
            "pl.MemRef 'ub' is declared with slots=3 here but slots=2",
            "# second",
        ),
        (
            dynamic_slot_out_of_range,
            BoundsCheckError,
            "slot index of pl.MemRef('ub', slots=2) ranges over [0, 2], outside [0, 1]",
            "# i % 3",
        ),
        (slot_out_of_range, BoundsCheckError, "pl.MemRef('ub', slots=2) ranges over [2, 2]", "slots=2)[2]"),
    ],
)
def test_bad_sizes_offsets_and_slots_are_compile_errors_at_the_line(kernel, error, text, marker):
    out = np.zeros_like(A)
    with pytest.raises(error) as err:
        kernel(A, out)
    assert text in err.value.message and err.value.span.line == line_of(marker)
    assert (out == 0).all()


# --- config ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, text",
    [
        (dict(seed=-1), "seed must be None or an integer in [0, 2**64), got -1"),
        (dict(seed=2**64), "seed must be None or an integer in [0, 2**64)"),
        (dict(seed=1.5), "seed must be None or an integer"),
        (dict(platform=3), "unknown platform 3"),
        (dict(trace="yes"), "trace must be True or False"),
        (dict(output_dir=5), "output_dir must be a str or pathlib.Path"),
        (dict(disabled_diagnostics="PH001"), "disabled_diagnostics must be a set"),
        (
            dict(platform_overrides={"ub_bytes": 2**40}),
            "platform field 'ub_bytes' must be in [1, 1.07374e+09]",
        ),
        (dict(platform_overrides={"event_ids": 2**31}), "platform field 'event_ids' must be in [1, 64]"),
        (dict(platform_overrides={"bw_gm_to_ub": float("nan")}), "'bw_gm_to_ub' must be a finite number"),
        (dict(platform_overrides={"bw_gm_to_ub": float("inf")}), "'bw_gm_to_ub' must be a finite number"),
        (dict(platform_overrides={"bw_gm_to_ub": 1e-9}), "'bw_gm_to_ub' must be in [0.01, 1e+06]"),
        (dict(platform_overrides={"event_ids": 2.5}), "'event_ids' is an integer field, got 2.5"),
        (dict(platform_overrides={"alignment_bytes": 24}), "'alignment_bytes' must be a power of two"),
        (dict(platform_overrides={"ub_bytes": "big"}), "'ub_bytes' must be a positive number, got 'big'"),
        (dict(platform_overrides={"ub_size": 1}), "unknown platform field 'ub_size'"),
    ],
)
def test_bad_config_fields_are_config_errors_naming_the_field(kwargs, text):
    with pytest.raises(ConfigError) as err:
        RunConfig(**kwargs)
    assert text in str(err.value) and isinstance(err.value, ValueError)


def test_config_given_as_a_string():
    out = np.zeros_like(A)
    with pytest.raises(ConfigError, match="config must be a pypto.runtime.RunConfig, got str 'a5sim'"):
        sk.single_buffer(A, out, config="a5sim")
    assert (out == 0).all()


def test_run_kernel_file_call_arguments():
    so = sk_exp()
    a, out = np.ones((64, 128), np.float32), np.zeros((64, 128), np.float32)
    for kwargs, text in [
        (dict(block_num=0), "block_num must be an integer in [1, 2**20]"),
        (dict(block_num=2**40), "block_num must be an integer in [1, 2**20]"),
        (dict(hazards="warn"), "hazards must be 'error' or 'report'"),
        (dict(isolate="no"), "isolate must be True or False"),
    ]:
        with pytest.raises(ArgumentValueError, match=re.escape(text)):
            run_kernel_file(so, [a, out], outputs={1}, **kwargs)
    with pytest.raises(ArgumentError, match="does not fit a 64-bit integer slot"):
        run_kernel_file(so, [a, out, 2**70], outputs={1})
    with pytest.raises(ArgumentError, match=r"outputs= names argument\(s\) \[5\]"):
        run_kernel_file(so, [a, out], outputs={5})
    with pytest.raises(ArgumentError, match="outputs= must be a set of argument indices, got 1"):
        run_kernel_file(so, [a, out], outputs=1)
    with pytest.raises(ArgumentError, match="args must be a list"):
        run_kernel_file(so, None)
    with pytest.raises(ConfigError, match="platform must be a platform name"):
        run_kernel_file(so, [a, out], outputs={1}, platform=["a5sim"])
    with pytest.raises(ArgumentError, match="argument '#0': unsupported dtype complex64"):
        run_kernel_file(so, [a.astype(np.complex64), out], outputs={1})
    assert (out == 0).all()


def test_argument_errors_form_one_hierarchy():
    for cls in (ArgumentMismatchError, ArgumentValueError):
        assert issubclass(cls, ArgumentError) and issubclass(cls, PyptoError)
    assert issubclass(ArgumentError, TypeError) and issubclass(ArgumentValueError, ValueError)


# --- stale source ---------------------------------------------------------------------------------
def test_kernel_file_changed_after_import_is_refused(tmp_path, monkeypatch):
    src = textwrap.dedent(
        """
        import pypto.language as pl

        @pl.jit
        def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(a, [0, 0], [64, 128])
                pl.store(pl.exp(t), [0, 0], out)
            return out
        """
    )
    (tmp_path / "edited_kernel.py").write_text(src)
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("edited_kernel")
    time.sleep(0.01)
    (tmp_path / "edited_kernel.py").write_text(
        "# moved down a line\n" + src.replace("pl.exp(t)", "pl.neg(t)")
    )
    a, out = np.ones((64, 128), np.float32), np.zeros((64, 128), np.float32)
    with pytest.raises(CompileError, match="the source of kernel 'k' changed on disk after it was imported"):
        mod.k(a, out)
    assert (out == 0).all()
    importlib.reload(mod)
    mod.k(a, out)
    np.testing.assert_array_equal(out, -a)
