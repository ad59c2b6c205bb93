"""IR statements, functions and programs.

Control flow is structured (no jumps). Values are SSA: a Python rebinding becomes a fresh
name, and a value that flows around a loop is explicit:

* ``For.iter_args`` — each ``IterArg`` is a name visible in the body, initialised from
  ``init`` on the first trip and from the body's trailing ``Yield`` on later trips;
* ``For.results`` — the names holding the last yielded values after the loop.

``If`` merges branch values the same way (both branches end in a ``Yield``; ``results``
names the merged values). ``Scope`` is a ``pl.at`` block; it does not hide names, so values
defined inside are visible after it (outlining turns them into kernel outputs).

Pipelining decisions travel in the IR, so a pass dump holds everything the next pass reads:
``For.staged`` is PlanPipelineLoops' plan of a ``pl.pipeline`` loop, and
``Function.pipeline_groups`` are the clones ExpandPipelineLoops made (read by the memory
planner's depth gate). Both name values of the function: those fields carry
:data:`NAME_REFS` metadata, so structural equality maps them like the variables they name.
"""

from __future__ import annotations

from dataclasses import field

from pypto._dataclass import dataclass
from pypto.ir.enums import Direction, ForKind, FunctionType, Level, SplitMode
from pypto.ir.expr import Const, Expr, Node, Var, as_const
from pypto.ir.types import Type

# Metadata of a field holding names (str, or tuples of str) of values the function defines:
# structural equality compares them through the same renaming as the variables.
NAME_REFS = {"names": True}


class Stmt(Node):
    """Base of statements."""


@dataclass(frozen=True)
class Assign(Stmt):
    """``var = value``; ``var.type`` is the declared (possibly refined) type of the value."""

    var: Var
    value: Expr


@dataclass(frozen=True)
class Eval(Stmt):
    """An op or function call evaluated for its effect (``pl.store(...)``)."""

    value: Expr


@dataclass(frozen=True)
class IterArg(Node):
    """A loop-carried value: ``var`` inside the body, starting from ``init``."""

    var: Var
    init: Expr


@dataclass(frozen=True)
class Yield(Stmt):
    """Last statement of a loop or branch body that carries values: the next values."""

    values: tuple[Expr, ...]


@dataclass(frozen=True)
class For(Stmt):
    """``for var in pl.<kind>(start, stop, step)``; ``stage`` is set for ``pl.pipeline``.

    ``cond`` makes it ``pl.while_``: each trip first tests ``cond`` (over the carried values)
    and the loop ends when it is false; the bounds then only cap the trip count.

    ``staged`` is the plan of a ``pl.pipeline`` loop (None until PlanPipelineLoops ran): the
    tiles its body defines, in definition order, of which each clone gets its own copy."""

    var: Var
    start: Expr
    stop: Expr
    step: Expr
    kind: ForKind
    body: tuple[Stmt, ...]
    iter_args: tuple[IterArg, ...] = ()
    results: tuple[Var, ...] = ()
    stage: int | None = None
    cond: Expr | None = None
    staged: tuple[str, ...] | None = field(default=None, metadata=NAME_REFS)

    def constant_range(self) -> range | None:
        """The loop values when ``start``, ``stop`` and ``step`` are all constants, else None
        (a ``pl.while_`` may stop earlier: its condition is not looked at)."""
        bounds = (self.start, self.stop, self.step)
        if not all(isinstance(b, Const) for b in bounds):
            return None
        return range(*(int(as_const(b).value) for b in bounds))


@dataclass(frozen=True)
class If(Stmt):
    """``if cond: ... else: ...``; ``results`` are the values merged from both branches."""

    cond: Expr
    then_body: tuple[Stmt, ...]
    else_body: tuple[Stmt, ...] = ()
    results: tuple[Var, ...] = ()


# Ascend kernel launches take a block count below 65536 (blockDim is 16-bit); every block is a
# task of the launch plan, so the cap also bounds the plan's size.
MAX_BLOCKS = 65535


@dataclass(frozen=True)
class Scope(Stmt):
    """``with pl.at(level=..., name_hint=..., deps=[...]) as handle:`` — one InCore task;
    ``with pl.spmd(blocks, ...)``: ``blocks`` tasks of it, one per block index.
    ``cluster``: ``with pl.cluster(...)`` — one task on a whole cluster (1 AIC + its AIVs);
    ``split``: ``pl.at(..., optimizations=[pl.split(mode)])`` — how the AIVs share tiles;
    ``slots``: ``pl.cross_core_slot(slot_num=n)`` there — the ring depth of its automatic
    cross-core pipes (None: the platform's ``tpipe_slots``).
    ``early_resolve`` (``allow_early_resolve=True``): consumers whose producers all carry it
    are staged before those end, so they start without the pickup latency; ``no_dep``
    (``no_dep_args=[t]``): tensors this task's dependencies are not inferred from."""

    level: Level
    body: tuple[Stmt, ...]
    name_hint: str | None = None
    deps: tuple[str, ...] = ()
    handle: str | None = None
    blocks: int | Expr = 1  # an Expr of pl.dynamic dims is evaluated by the launch plan per call
    cluster: bool = False
    split: SplitMode | None = None
    slots: int | None = None
    early_resolve: bool = False
    no_dep: tuple[Var, ...] = ()
    dep_values: tuple[Expr, ...] = ()  # deps= TaskId values (pl.TASK_ID scalars and arrays)
    # pl.spmd(sync_start=True): the device admits every block at once; a launch hint here (blocks
    # are tasks that become ready together and each takes the earliest-free core)
    sync_start: bool = False


@dataclass(frozen=True)
class TaskRegion(Stmt):
    """``with pl.scope():`` / ``with pl.manual_scope():`` in orchestration: a region of task
    submissions. In a manual one no dependency is inferred for its tasks, to or from any task
    (only ``deps=`` orders them); an AUTO one changes nothing here (the device runtime also
    reclaims its memory tier at the end). Names defined inside stay visible after it."""

    body: tuple[Stmt, ...]
    manual: bool = False


@dataclass(frozen=True)
class Return(Stmt):
    """Function result(s); only as the last statement of a function body."""

    values: tuple[Expr, ...]


@dataclass(frozen=True)
class Param(Node):
    """A function parameter and its data direction."""

    var: Var
    direction: Direction = Direction.In


@dataclass(frozen=True)
class PipelineClone(Node):
    """One clone of a replicated ``pl.pipeline`` body: ``staged`` are its copies of the
    plan's tiles (position ``j`` of every clone is the same source tile), ``defs`` every
    name its top-level statements bind, ``hoisted`` the names bound by its loads, which
    were moved ahead of all compute."""

    staged: tuple[str, ...] = field(metadata=NAME_REFS)
    defs: tuple[str, ...] = field(metadata=NAME_REFS)
    hoisted: tuple[str, ...] = field(metadata=NAME_REFS)


@dataclass(frozen=True)
class PipelineGroup(Node):
    """The clones of one expanded ``pl.pipeline`` loop (named by its loop variable):
    ``blocks`` are the replicated blocks (the loop body, then the static leftover clones
    after the loop), each a tuple of clones; ``span`` is the source loop's."""

    name: str = field(metadata=NAME_REFS)
    depth: int
    blocks: tuple[tuple[PipelineClone, ...], ...]


@dataclass(frozen=True)
class Function(Node):
    """One function: the orchestration entry or an InCore kernel (maybe external C++)."""

    name: str
    params: tuple[Param, ...]
    kind: FunctionType
    body: tuple[Stmt, ...]
    return_types: tuple[Type, ...] = ()
    external_source: str | None = None
    include_dirs: tuple[str, ...] = ()  # extra header folders of an external_source kernel
    # Written by ExpandPipelineLoops, consumed by the memory planner (InCore kernels only).
    pipeline_groups: tuple[PipelineGroup, ...] = ()

    def param(self, name: str) -> Param:
        """The parameter called ``name`` (KeyError when absent)."""
        for p in self.params:
            if p.var.name == name:
                return p
        raise KeyError(name)

    def as_python(self, concise: bool = False) -> str:
        """The function as a ``@pl.function`` method (``pypto.ir.print_function``)."""
        from pypto.ir.printer import print_function

        return print_function(self, concise)

    @property
    def func_type(self) -> FunctionType:
        """``kind``, by upstream PyPTO's name."""
        return self.kind


class FunctionTable(tuple):
    """A program's functions, in order (a tuple: iterating gives the functions). Upstream
    PyPTO's ``Program.functions`` is a table keyed by the functions' global names, so its
    reading is here too, by name: ``keys()``, ``values()``, ``items()``."""

    __slots__ = ()

    def keys(self) -> list[str]:
        return [f.name for f in self]

    def values(self) -> list[Function]:
        return list(self)

    def items(self) -> list[tuple[str, Function]]:
        return [(f.name, f) for f in self]


@dataclass(frozen=True)
class Program(Node):
    """A compilation unit: functions in a stable order (entry first when from ``@pl.jit``)."""

    name: str
    functions: tuple[Function, ...]

    def __post_init__(self) -> None:
        if type(self.functions) is not FunctionTable:
            object.__setattr__(self, "functions", FunctionTable(self.functions))

    def get(self, name: str) -> Function:
        """The function called ``name`` (KeyError when absent)."""
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)

    def as_python(self, concise: bool = False) -> str:
        """The program as ``@pl.program`` source text (what ``pypto.ir.print_program`` writes);
        ``concise`` leaves out the types of assigned values."""
        from pypto.ir.printer import print_program

        return print_program(self, concise)

    @property
    def entry(self) -> Function:
        """The first orchestration function, else the first function."""
        for f in self.functions:
            if f.kind is FunctionType.Orchestration:
                return f
        return self.functions[0]
