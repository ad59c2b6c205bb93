"""torch tensors as kernel arguments, at autograd's and layout's edges: writing an output that
autograd saved for backward makes backward raise (the version counter is bumped, as torch's
own in-place ops do) instead of giving a wrong gradient; a leaf that requires grad is refused
as an output; sparse and lazily negated tensors are refused or resolved, naming the argument."""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto.errors import ArgumentError

torch = pytest.importorskip("torch")


@pl.jit
def double(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.muls(pl.load(a, [0, 0], [8, 64]), 2.0), [0, 0], out)
    return out


def test_writing_a_tensor_saved_for_backward_makes_backward_raise():
    x = torch.ones(8, 64, requires_grad=True)
    y = x * 3
    z = (y * y).sum()  # saves y for backward
    with torch.no_grad():
        double(torch.ones(8, 64), y)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_a_leaf_that_requires_grad_is_refused_as_an_output():
    out = torch.zeros(8, 64, requires_grad=True)
    with pytest.raises(ArgumentError, match="output argument 'out' is a leaf tensor that requires grad"):
        double(torch.ones(8, 64), out)
    assert (out == 0).all()


def test_an_input_that_requires_grad_is_read():
    a = torch.ones(8, 64, requires_grad=True)
    out = torch.zeros(8, 64)
    double(a, out)
    assert (out == 2).all()


def test_sparse_and_negated_tensors():
    out = torch.zeros(8, 64)
    with pytest.raises(ArgumentError, match="argument 'a': a torch.sparse_coo torch tensor"):
        double(torch.ones(8, 64).to_sparse(), out)
    double(torch.ones(8, 64)._neg_view(), out)  # an input is resolved: -1 * 2
    assert (out == -2).all()
    with pytest.raises(ArgumentError, match="output argument 'out' is a lazily negated"):
        double(torch.ones(8, 64), torch.zeros(8, 64)._neg_view())
    np.testing.assert_array_equal(out.numpy(), -2)
