"""DSL functions that only have meaning inside a kernel body.

Ops (``pl.exp``), loops (``pl.range``), scopes (``pl.at``) and ``pl.yield_`` are markers:
the frontend recognises them while reading the kernel's source; calling one as ordinary
Python raises :class:`pypto.errors.OutsideKernelError`.
"""

from __future__ import annotations

from pypto.errors import OutsideKernelError
from pypto.ir.enums import ForKind

TYPE_CHECKING = False  # annotations only: not importing typing keeps `import pypto.language` light
if TYPE_CHECKING:
    from typing import Any, NoReturn

# The op table (pypto.ir.ops) is read when an op marker is first wanted, not at import:
# `import pypto.language` stays light, and parsing a kernel needs the table anyway.


class Marker:
    """Base of markers; ``dsl_name`` is the spelling users write after ``pl.``."""

    def __init__(self, dsl_name: str, doc: str = "") -> None:
        self.dsl_name = dsl_name
        self.__name__ = dsl_name.rsplit(".", 1)[-1]
        self.__doc__ = doc or f"pl.{dsl_name} (a pypto kernel construct)"

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise OutsideKernelError(
            f"pl.{self.dsl_name} can only be used inside a @pl.jit kernel "
            "(the kernel body is compiled, not run as Python)"
        )

    def __repr__(self) -> str:
        return f"<pypto marker pl.{self.dsl_name}>"


class OpMarker(Marker):
    """An op spelling; ``candidates`` are the IR ops it may mean (see ``pypto.ir.ops``)."""

    def __init__(self, dsl_name: str, candidates: tuple[str, ...]) -> None:
        from pypto.ir.ops import OPS

        super().__init__(dsl_name, OPS[candidates[0]].doc)
        self.candidates = candidates


class LoopMarker(Marker):
    """``pl.range`` / ``pl.parallel`` / ``pl.pipeline`` / ``pl.unroll``."""

    def __init__(self, kind: ForKind) -> None:
        super().__init__(kind.name)
        self.kind = kind


class ScopeMarker(Marker):
    """``pl.at(level=..., name_hint=..., deps=[...])``."""


class WhileMarker(Marker):
    """``for (a, b) in pl.while_(init_values=(a0, b0)):`` whose body starts with ``pl.cond(...)``."""


class CondMarker(Marker):
    """``pl.cond(condition)``: the first statement of a ``pl.while_`` body."""


class ConstMarker(Marker):
    """``pl.const(value, dtype)``: a scalar constant of an explicit dtype."""


class StaticAssertMarker(Marker):
    """``pl.static_assert(cond, msg="")``: a compile-time check of the specialisation."""


class ScalarFnMarker(Marker):
    """``pl.min(a, b)`` / ``pl.max(a, b)``: the smaller / larger of scalar values (a tail's
    valid length, a clamped index)."""


class NoDepMarker(Marker):
    """``pl.no_dep(t)`` as an argument of a kernel call: no dependency of that task is inferred
    from ``t`` (the call site's ``no_dep_args=[t]``)."""


class YieldMarker(Marker):
    """``pl.yield_(...)``: the next values of a loop's (or branch's) carried names."""


class Namespace:
    """``pl.tile`` / ``pl.tensor``: the ops of one level under their IR names."""

    def __init__(self, prefix: str, **names: object) -> None:
        self._prefix = prefix
        self.__dict__.update(names)  # values spelled under the level (pl.tile.MaskPattern)

    @property
    def _ops(self) -> dict[str, OpMarker]:
        ops = self.__dict__.get("_table")
        if ops is None:  # built on first use
            from pypto.ir.ops import DSL_OPS, OPS

            prefix = self._prefix + "."
            ops = {name.split(".", 1)[1]: OpMarker(name, (name,)) for name in OPS if name.startswith(prefix)}
            # A pl.* spelling whose ops are all of this level is also spelled under it
            # (pl.tile.arange is pl.arange, i.e. tile.ci; pl.tile.create_tile is tile.create).
            for name, cands in DSL_OPS.items():
                if name not in ops and all(c.startswith(prefix) for c in cands):
                    ops[name] = OpMarker(name, cands)
            self.__dict__["_table"] = ops
        return ops

    def __getattr__(self, name: str) -> OpMarker:
        if name.startswith("__") or name in ("_prefix", "_table"):
            raise AttributeError(name)
        try:
            return self._ops[name]
        except KeyError:
            import difflib  # error path only: kept out of `import pypto.language`

            close = difflib.get_close_matches(name, self._ops, n=1)
            hint = f" (did you mean pl.{self._prefix}.{close[0]}?)" if close else ""
            raise AttributeError(f"pl.{self._prefix} has no op {name!r}{hint}") from None

    def __dir__(self) -> list[str]:
        return sorted(self._ops)


def op_markers() -> dict[str, OpMarker]:
    """The top-level op spellings (``pl.load``, ``pl.add`` ...)."""
    from pypto.ir.ops import DSL_OPS

    return {name: OpMarker(name, cands) for name, cands in DSL_OPS.items()}
