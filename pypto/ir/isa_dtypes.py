"""The dtypes the ISA accepts, checked when an op is typed, so a kernel the simulator would
refuse mid-run is a ``TypeCheckError`` at its source line before anything is built.

The accepted dtypes are not listed here: ``pypto.hardware.ISA_DTYPES`` reads them from the
ISA's own checks (``vec_math``'s ``*_supported``, the cube's input rule). This module only maps
an IR op name onto its ISA op: ``tile.adds`` and ``tensor.add`` are the vector unit's add,
``tile.row_expand_max`` its max, ``tile.row_sum`` a row reduction, ``tile.matmul`` the cube.
"""

from __future__ import annotations

_ALIASES = {"maximum": "max", "minimum": "min"}
_EXPAND = ("row_expand_", "col_expand_")
_REDUCE = frozenset({"row_sum", "row_max", "row_min"})
_FLOAT_MATH = frozenset({"rsqrt", "sin", "cos"})


def isa_op(op: str) -> tuple[str, str] | None:
    """(family, ISA op) that ``op`` (``tile.add``, ``tensor.exps``...) runs as, or None."""
    from pypto.hardware import ISA_DTYPES

    name = op.split(".", 1)[-1]
    if name in _REDUCE:
        return ("reduce", name)
    if name in _FLOAT_MATH:
        return ("float_math", name)
    if name in ISA_DTYPES["unary"]:
        return ("unary", name)
    for prefix in _EXPAND:
        if name.startswith(prefix):
            name = name[len(prefix) :]
    binary = ISA_DTYPES["binary"]
    for candidate in (name, name[:-1] if name.endswith("s") else name):  # adds: add with a scalar
        candidate = _ALIASES.get(candidate, candidate)
        if candidate in binary:
            return ("binary", candidate)
    return None


def accepted(family: str, name: str) -> tuple[str, ...]:
    """The dtype names (``fp32``, ``int32``...) the ISA accepts for ``name`` of ``family``."""
    from pypto.hardware import ISA_DTYPES

    table = ISA_DTYPES[family]
    return tuple(table.get(name, ()) if isinstance(table, dict) else table)


def refusal(op: str, dtype_name: str) -> str | None:
    """Why the ISA would refuse ``op`` on ``dtype_name`` (a DSL name: ``INT8``), or None."""
    found = isa_op(op)
    if found is None:
        return None
    family, name = found
    ok = accepted(family, name)
    if dtype_name.lower() in ok:
        return None
    what = "reduction" if family == "reduce" else name
    listed = ", ".join(d.upper() for d in ok)
    return f"the vector unit has no {dtype_name} {what} (it takes {listed}); pl.cast the operand first"


_CUBE_WORDS = {
    "cube_inputs": "the simulated cube multiplies {ok} operands, not {dt}; pl.cast them first",
    "gemv_inputs": "a gemv multiplies {ok} operands, not {dt}; pl.cast them first",
    "cube_acc": "the cube sums {source} inputs in {ok}, not {dt}",
    "fixpipe_out": "FIXPIPE stores a {source} accumulator as {ok}, not {dt}",
}


def cube_refusal(dtype_name: str, part: str = "cube_inputs", source: str = "") -> str | None:
    """Why the cube would refuse ``dtype_name`` as its ``part``: ``cube_inputs`` or
    ``gemv_inputs``; ``cube_acc``, the accumulator of ``source`` inputs; ``fixpipe_out``, what
    a store out of a ``source`` accumulator writes. None when it would not."""
    ok = accepted(part, source.lower())
    if dtype_name.lower() in ok:
        return None
    listed = ", ".join(d.upper() for d in ok) or "nothing"
    return _CUBE_WORDS[part].format(ok=listed, dt=dtype_name, source=source)


def cube_accumulator(input_name: str) -> str:
    """The dtype name (``INT32``, ``FP32``) the cube sums ``input_name`` inputs in."""
    ok = accepted("cube_acc", input_name.lower())
    return ok[0].upper() if ok else "FP32"  # an input the cube refuses: its check says so
