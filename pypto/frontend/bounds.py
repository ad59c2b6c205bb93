"""Static reasoning about index expressions: value intervals and exact differences.

``interval`` bounds an index expression from the ranges of the enclosing loops (so a load
at ``[i * 64, 0]`` inside ``pl.range(8)`` is known to start in ``[0, 448]``); ``difference``
computes ``hi - lo`` when it is a constant (the extent of ``a[:, k0:k0 + KS]``).
"""

from __future__ import annotations

from collections.abc import Mapping

from pypto.ir.expr import BinOp, Const, Expr, UnaryOp, Var

Interval = tuple[int, int]


def interval(e: Expr, ranges: Mapping[str, Interval]) -> Interval | None:
    """Inclusive bounds of an integer expression, or None when unknown."""
    if isinstance(e, Const):
        return (int(e.value), int(e.value)) if isinstance(e.value, int) else None
    if isinstance(e, Var):
        return ranges.get(e.name)
    if isinstance(e, UnaryOp) and e.op == "-":
        inner = interval(e.operand, ranges)
        return (-inner[1], -inner[0]) if inner else None
    if not isinstance(e, BinOp):
        return None
    a, b = interval(e.lhs, ranges), interval(e.rhs, ranges)
    if e.op == "%" and b is not None and b[0] == b[1] and b[0] > 0:
        # Conservative; C's % differs from Python's on negatives, so those stay unknown.
        return (0, min(a[1], b[0] - 1)) if a is not None and a[0] >= 0 else None
    if a is None or b is None:
        return None
    if e.op == "+":
        return (a[0] + b[0], a[1] + b[1])
    if e.op == "-":
        return (a[0] - b[1], a[1] - b[0])
    if e.op == "*":
        products = [x * y for x in a for y in b]
        return (min(products), max(products))
    if e.op == "//" and b[0] == b[1] and b[0] > 0:
        return (a[0] // b[0], a[1] // b[0])
    return None


def loop_interval(start: Expr, stop: Expr, step: Expr) -> Interval | None:
    """The values a loop variable takes, when the bounds are constants and the loop runs."""
    values = [x.value for x in (start, stop, step) if isinstance(x, Const) and isinstance(x.value, int)]
    if len(values) != 3:
        return None
    lo, hi, st = (int(v) for v in values)
    if st > 0 and hi > lo:
        return (lo, lo + (hi - lo - 1) // st * st)
    if st < 0 and hi < lo:
        return (lo + (lo - hi - 1) // (-st) * st, lo)
    return None


Linear = tuple[dict[str, int], int]


def linear(e: Expr) -> Linear | None:
    """``e`` as sum(coef * var) + const, when it is linear with integer coefficients."""
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return {}, e.value
    if isinstance(e, Var):
        return {e.name: 1}, 0
    if isinstance(e, UnaryOp) and e.op == "-":
        inner = linear(e.operand)
        return ({k: -v for k, v in inner[0].items()}, -inner[1]) if inner else None
    if not isinstance(e, BinOp) or e.op not in ("+", "-", "*"):
        return None
    a, b = linear(e.lhs), linear(e.rhs)
    if a is None or b is None:
        return None
    if e.op == "*":
        if a[0] and b[0]:
            return None
        (terms, c), k = (a, b[1]) if not b[0] else (b, a[1])
        return {n: v * k for n, v in terms.items()}, c * k
    sign = 1 if e.op == "+" else -1
    terms = dict(a[0])
    for n, v in b[0].items():
        terms[n] = terms.get(n, 0) + sign * v
    return {n: v for n, v in terms.items() if v}, a[1] + sign * b[1]


def difference(hi: Expr, lo: Expr) -> int | None:
    """``hi - lo`` when it does not depend on any variable."""
    a, b = linear(hi), linear(lo)
    if a is None or b is None:
        return None
    terms = dict(a[0])
    for n, v in b[0].items():
        terms[n] = terms.get(n, 0) - v
    return None if any(terms.values()) else a[1] - b[1]
