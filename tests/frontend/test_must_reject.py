"""Kernels the frontend must reject: typed error, clear message, ``file:line:col`` + the line.

Each offending line carries a ``# E:<tag>`` comment; the test checks the error points at it.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import pypto.language as pl
from pypto import errors

TR, TC = 64, 128
A = np.zeros((512, 128), np.float32)
B = np.zeros((512, 64), np.float32)
H = np.zeros((512, 128), np.float16)
SOURCE = Path(__file__).read_text().splitlines()


def line_of(tag: str) -> int:
    hits = [i + 1 for i, text in enumerate(SOURCE) if re.search(rf"# E:{tag}(\s|$)", text)]
    assert len(hits) == 1, tag
    return hits[0]


def check(exc: pytest.ExceptionInfo, cls: type, tag: str, *fragments: str) -> None:
    err = exc.value
    assert isinstance(err, cls), f"{type(err).__name__}: {err}"
    text = str(err)
    for fragment in fragments:
        assert fragment in text, text
    assert err.span is not None and err.span.file == __file__
    assert err.span.line == line_of(tag), text
    assert re.search(rf" at {re.escape(__file__)}:{err.span.line}:\d+\n    \S", text), text
    assert SOURCE[err.span.line - 1].strip().split("  # E:")[0] in text


@pl.jit
def op_outside_at(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    for i in pl.range(8):
        tile = pl.load(a, [i * TR, 0], [TR, TC])  # E:misplaced
        pl.store(tile, [i * TR, 0], out)
    return out


def test_op_outside_pl_at():
    with pytest.raises(errors.CompileError) as exc:
        op_outside_at.parse(A, A)
    check(
        exc,
        errors.MisplacedOpError,
        "misplaced",
        "Misplaced tensor op `pl.load`",
        "should be inside InCore block",
    )


@pl.jit
def unknown_pl_name(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        tile = pl.lod(a, [0, 0], [TR, TC])  # E:unknown_pl
        pl.store(tile, [0, 0], out)
    return out


def test_unknown_pl_name():
    with pytest.raises(errors.CompileError) as exc:
        unknown_pl_name.parse(A, A)
    check(exc, errors.UnknownNameError, "unknown_pl", "`pl.lod` is not defined", "did you mean `pl.load`")


@pl.jit
def unknown_tile_op(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        tile = pl.tile.expp(pl.load(a, [0, 0], [TR, TC]))  # E:unknown_tile
        pl.store(tile, [0, 0], out)
    return out


def test_unknown_pl_tile_name():
    with pytest.raises(errors.CompileError) as exc:
        unknown_tile_op.parse(A, A)
    check(exc, errors.UnknownNameError, "unknown_tile", "`pl.tile.expp` is not defined", "pl.tile.exp")


@pl.jit
def unknown_bare_name(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        tile = pl.load(a, [0, 0], [TR, WIDTH])  # E:bare  # noqa: F821
        pl.store(tile, [0, 0], out)
    return out


def test_unknown_bare_name():
    with pytest.raises(errors.CompileError) as exc:
        unknown_bare_name.parse(A, A)
    check(exc, errors.UnknownNameError, "bare", "name `WIDTH` is not defined")


@pl.jit
def with_while(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        while True:  # E:while
            pass
    return out


@pl.jit
def with_try(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        try:  # E:try
            pass
        finally:
            pass
    return out


@pl.jit
def with_lambda(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        f = lambda x: x  # E:lambda  # noqa: E731, F841
    return out


@pl.jit
def with_open(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with open("x"):  # E:with
        pass
    return out


@pl.jit
def with_break(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for _ in pl.range(4):
            break  # E:break
    return out


@pytest.mark.parametrize(
    ("kernel", "tag", "fragment"),
    [
        (with_while, "while", "`while` loops are not supported inside a pypto kernel"),
        (with_try, "try", "`try` is not supported inside a pypto kernel"),
        (with_lambda, "lambda", "`lambda` is not supported inside a pypto kernel"),
        (with_open, "with", "`with` is only supported for pl.at(...)"),
        (with_break, "break", "`break` is not supported"),
    ],
)
def test_unsupported_python(kernel, tag, fragment):
    with pytest.raises(errors.CompileError) as exc:
        kernel.parse(A, A)
    check(exc, errors.UnsupportedSyntaxError, tag, fragment)


@pl.jit
def shape_mismatch(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [TR, TC])
        y = pl.load(b, [0, 0], [TR, 64])
        pl.store(pl.add(x, y), [0, 0], out)  # E:shape
    return out


def test_shape_mismatch():
    with pytest.raises(errors.CompileError) as exc:
        shape_mismatch.parse(A, B, A)
    check(exc, errors.TypeCheckError, "shape", "pl.add: shape mismatch: lhs is [64, 128] but rhs is [64, 64]")


@pl.jit
def dtype_mismatch(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [TR, TC])
        y = pl.load(b, [0, 0], [TR, TC])
        z = x * y  # E:dtype
        pl.store(z, [0, 0], out)
    return out


def test_dtype_mismatch():
    with pytest.raises(errors.CompileError) as exc:
        dtype_mismatch.parse(A, H, A)
    check(exc, errors.TypeCheckError, "dtype", "dtype mismatch", "FP32", "FP16", "no implicit promotion")


@pl.jit
def store_dtype_mismatch(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [TR, TC])
        pl.store(x, [0, 0], out)  # E:store_dtype
    return out


def test_store_dtype_mismatch():
    with pytest.raises(errors.CompileError) as exc:
        store_dtype_mismatch.parse(A, H)
    check(exc, errors.TypeCheckError, "store_dtype", "pl.store", "dtype mismatch")


@pl.jit
def annotation_mismatch(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x: pl.Tile[[TR, 64], pl.FP32] = pl.load(a, [0, 0], [TR, TC])  # E:annot
        pl.store(x, [0, 0], out)
    return out


def test_annotation_disagrees_with_value():
    with pytest.raises(errors.CompileError) as exc:
        annotation_mismatch.parse(A, A)
    check(
        exc,
        errors.TypeCheckError,
        "annot",
        "`x` is annotated pl.Tile[[64, 64], pl.FP32]",
        "pl.Tile[[64, 128], pl.FP32, pl.Mem.Vec]",
    )


@pl.jit
def window_out_of_bounds(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(9):
            tile = pl.load(a, [i * TR, 0], [TR, TC])  # E:oob
            pl.store(tile, [0, 0], out)
    return out


def test_load_window_outside_tensor():
    with pytest.raises(errors.CompileError) as exc:
        window_out_of_bounds.parse(A, A)
    check(exc, errors.BoundsCheckError, "oob", "window is outside `a`", "[0, 512]", "576 > size 512")


@pl.jit
def memref_without_space(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(8):
            t: pl.Tile[[TR, TC], pl.FP32, pl.MemRef("ub", slots=2)[i % 2]] = pl.load(  # E:mr
                a, [0, 0], [TR, TC]
            )
            pl.store(t, [0, 0], out)
    return out


def test_memref_needs_memory_space():
    with pytest.raises(errors.CompileError) as exc:
        memref_without_space.parse(A, A)
    check(exc, errors.TypeCheckError, "mr", "needs a memory space")


@pl.jit
def arg_count(a: pl.Tensor, out: pl.Out[pl.Tensor]):  # E:argc
    return out


def test_wrong_argument_count():
    with pytest.raises(errors.CompileError) as exc:
        arg_count.parse(A)
    check(
        exc, errors.ArgumentMismatchError, "argc", "arg_count() takes 2 arguments (a, out) but 1 were given"
    )
    with pytest.raises(errors.ArgumentMismatchError, match="but 3 were given"):
        arg_count.parse(A, A, A)


def test_wrong_argument_kind():
    with pytest.raises(errors.ArgumentMismatchError, match="argument `a` of arg_count.. must be a tensor"):
        arg_count.parse("not an array", A)


@pl.jit
def declared_shape(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor]):
    return out


def test_argument_disagrees_with_declared_shape():
    with pytest.raises(
        errors.ArgumentMismatchError, match=r"is \[512, 128\] FP32 but the signature declares"
    ):
        declared_shape.parse(A, A)


@pl.jit.incore
def nested_scope(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):  # E:incore_at
        pass


def test_pl_at_inside_incore_kernel():
    with pytest.raises(errors.CompileError) as exc:
        nested_scope.parse(A, A)
    check(exc, errors.MisplacedOpError, "incore_at", "pl.at belongs in a @pl.jit (orchestration) body")


@pl.jit
def use_after_loop(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(8):
            tile = pl.load(a, [i * TR, 0], [TR, TC])
        pl.store(tile, [0, 0], out)  # E:after_loop
    return out


def test_loop_local_used_after_loop():
    with pytest.raises(errors.CompileError) as exc:
        use_after_loop.parse(A, A)
    check(exc, errors.UnknownNameError, "after_loop", "`tile` is only defined inside the loop at line")


@pl.jit
def carried_type_change(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.create_tile([TR, TC], pl.FP32)
        for _ in pl.range(8):  # E:carry
            acc = pl.cast(acc, pl.FP16)
        pl.store(acc, [0, 0], out)
    return out


def test_loop_carried_value_changes_type():
    with pytest.raises(errors.CompileError) as exc:
        carried_type_change.parse(A, A)
    check(exc, errors.TypeCheckError, "carry", "`acc` is carried around the loop/branch but its type changes")


@pl.jit
def pipeline_without_stage(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for _ in pl.pipeline(8):  # E:stage
            pass
    return out


def test_pipeline_needs_stage():
    with pytest.raises(errors.CompileError) as exc:
        pipeline_without_stage.parse(A, A)
    check(exc, errors.TypeCheckError, "stage", "pl.pipeline needs stage=")


@pl.jit
def python_range(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for _ in range(8):  # E:pyrange
            pass
    return out


def test_python_range_is_not_a_kernel_loop():
    with pytest.raises(errors.CompileError) as exc:
        python_range.parse(A, A)
    check(exc, errors.UnsupportedSyntaxError, "pyrange", "pl.range / pl.parallel / pl.pipeline / pl.unroll")


@pl.jit
def early_return(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    for _ in pl.range(8):
        return out  # E:return
    return out


def test_return_must_be_last():
    with pytest.raises(errors.CompileError) as exc:
        early_return.parse(A, A)
    check(exc, errors.UnsupportedSyntaxError, "return", "`return` must be the last statement")


@pl.jit
def integer_index(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        row = a[0, :]  # E:intindex  # noqa: F841
    return out


def test_integer_indexing_rejected():
    with pytest.raises(errors.CompileError) as exc:
        integer_index.parse(A, A)
    check(exc, errors.UnsupportedSyntaxError, "intindex", "index tiles and tensors with slices")


@pl.jit
def scalar_promotion(a: pl.Tensor, out: pl.Out[pl.Tensor], x: pl.FP32):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            y = i * 2.5  # E:promote  # noqa: F841
    return out


def test_no_implicit_scalar_promotion():
    with pytest.raises(errors.CompileError) as exc:
        scalar_promotion.parse(A, A, 1.0)
    check(exc, errors.TypeCheckError, "promote", "no implicit promotion")


def test_markers_raise_outside_a_kernel():
    with pytest.raises(errors.OutsideKernelError, match="pl.exp can only be used inside a @pl.jit kernel"):
        pl.exp(A)
    with pytest.raises(errors.OutsideKernelError, match="pl.range can only be used inside a @pl.jit kernel"):
        pl.range(4)
    with pytest.raises(errors.OutsideKernelError, match="pl.tile.load can only be used"):
        pl.tile.load(A, [0, 0], [1, 1])
