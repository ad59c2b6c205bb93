"""Static reasoning about index expressions: value intervals and exact differences.

``interval`` bounds an index expression from the ranges of the enclosing loops (so a load
at ``[i * 64, 0]`` inside ``pl.range(8)`` is known to start in ``[0, 448]``); ``difference``
computes ``hi - lo`` when it is a constant (the extent of ``a[:, k0:k0 + KS]``, of
``a[i * n : i * n + 1]``, or of ``a[c0:c1]`` after ``c1 = c0 + KS``).
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


Monomial = tuple[str, ...]  # sorted variable names; () is the constant term
Polynomial = dict[Monomial, int]
MAX_TERMS = 64  # a product of sums grows fast; past this the difference is left unknown


def polynomial(e: Expr, defs: Mapping[str, Expr] | None = None, depth: int = 0) -> Polynomial | None:
    """``e`` as a sum of integer multiples of variable products, when it is one.

    A variable with an entry in ``defs`` (an integer scalar assigned once, so its definition
    holds wherever it is read) is replaced by that definition, so ``c1 = c0 + 64`` gives
    ``c1 - c0 == 64``."""
    if depth > 32:  # definitions form a chain, never a cycle; this bounds the work
        return None
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return {(): e.value} if e.value else {}
    if isinstance(e, Var):
        if defs is not None and e.name in defs:
            return polynomial(defs[e.name], defs, depth + 1)
        return {(e.name,): 1}
    if isinstance(e, UnaryOp) and e.op == "-":
        inner = polynomial(e.operand, defs, depth + 1)
        return {m: -c for m, c in inner.items()} if inner is not None else None
    if not isinstance(e, BinOp) or e.op not in ("+", "-", "*"):
        return None
    a, b = polynomial(e.lhs, defs, depth + 1), polynomial(e.rhs, defs, depth + 1)
    if a is None or b is None:
        return None
    out: Polynomial = {}
    if e.op == "*":
        for (ma, ca), (mb, cb) in ((x, y) for x in a.items() for y in b.items()):
            m = tuple(sorted(ma + mb))
            out[m] = out.get(m, 0) + ca * cb
    else:
        sign = 1 if e.op == "+" else -1
        out = dict(a)
        for m, c in b.items():
            out[m] = out.get(m, 0) + sign * c
    out = {m: c for m, c in out.items() if c}
    return out if len(out) <= MAX_TERMS else None


def difference(hi: Expr, lo: Expr, defs: Mapping[str, Expr] | None = None) -> int | None:
    """``hi - lo`` when it does not depend on any variable (``defs`` as for ``polynomial``)."""
    a, b = polynomial(hi, defs), polynomial(lo, defs)
    if a is None or b is None:
        return None
    terms = dict(a)
    for m, c in b.items():
        terms[m] = terms.get(m, 0) - c
    if any(c for m, c in terms.items() if m):
        return None
    return terms.get((), 0)
