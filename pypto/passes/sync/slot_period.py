"""How often a loop's slot index repeats (private to InsertSync): the walk of a loop needs
only ``2 * period`` trips to reach the steady state of its slot pattern."""

from __future__ import annotations

from pypto.ir.expr import BinOp, Const, UnaryOp, Var, as_const
from pypto.ir.stmt import For
from pypto.passes.sync.sync_state import evaluate

MAX_PERIOD = 16
_MAX_ENUMERATED_TRIPS = 4096


def _affine(e, var: str) -> tuple[int, int] | None:
    """``e`` as ``a * var + b`` with integer a, b (None when it is not affine in ``var``)."""
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return 0, int(e.value)
    if isinstance(e, Var):
        return (1, 0) if e.name == var else None
    if isinstance(e, UnaryOp) and e.op == "-":
        f = _affine(e.operand, var)
        return None if f is None else (-f[0], -f[1])
    if isinstance(e, BinOp) and e.op in ("+", "-", "*"):
        x, y = _affine(e.lhs, var), _affine(e.rhs, var)
        if x is None or y is None:
            return None
        if e.op == "+":
            return x[0] + y[0], x[1] + y[1]
        if e.op == "-":
            return x[0] - y[0], x[1] - y[1]
        if x[0] == 0 or y[0] == 0:  # a product stays affine only with a constant side
            return x[0] * y[1] + y[0] * x[1], x[1] * y[1]
    return None


def _modular_period(index, s: For) -> int | None:
    """The period of ``(a * i + b) % m`` over a loop stepping by ``step``, decided without
    enumerating the trips (any trip count): the least p with ``a * p * step ≡ 0 (mod m)``."""
    if not (isinstance(index, BinOp) and index.op == "%" and isinstance(index.rhs, Const)):
        return None
    m, f = int(index.rhs.value), _affine(index.lhs, s.var.name)
    if f is None or m == 0:
        return None
    return next(
        (p for p in range(1, MAX_PERIOD + 1) if (f[0] * p * int(as_const(s.step).value)) % m == 0), None
    )


def sequence_period(index, s: For, trips: int) -> int | None:
    if trips > _MAX_ENUMERATED_TRIPS:  # too long to enumerate: the slot index must be modular
        return _modular_period(index, s)
    values = s.constant_range() or range(0)
    seq = [evaluate(index, {s.var.name: i}) for i in values]
    if None in seq:
        return None
    for p in range(1, min(MAX_PERIOD, len(seq)) + 1):
        if all(seq[t] == seq[t + p] for t in range(len(seq) - p)):
            return p
    return None
