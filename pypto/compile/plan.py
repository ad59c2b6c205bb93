"""The launch plan: the orchestration function evaluated once per specialisation into the
list of kernel tasks it submits, each with its tensor arguments (indices into the call's
tensor parameters) and its scalar values."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from itertools import compress
from typing import Any

import numpy as np

from pypto._collector import collector_paused
from pypto._dataclass import dataclass
from pypto.compile.deps import Box, DepIndex, Use
from pypto.errors import ArgumentError, CompileError
from pypto.ir.aliases import tensor_aliases, written_arguments
from pypto.ir.dtypes import cast_scalar, numpy_dtype
from pypto.ir.enums import AtomicType, Direction, ForKind, FunctionType
from pypto.ir.expr import (
    BinOp,
    Call,
    Const,
    Expr,
    FuncCall,
    Literal,
    UnaryOp,
    Var,
    array_type,
    scalar_type,
    tensor_type,
)
from pypto.ir.printer import print_expr
from pypto.ir.stmt import (
    MAX_BLOCKS,
    Assign,
    Eval,
    For,
    Function,
    If,
    Program,
    Return,
    Stmt,
    TaskRegion,
    Yield,
)
from pypto.ir.types import ArrayType, DynDim, ScalarType, TensorType
from pypto.ir.visit import nodes_of


@dataclass(frozen=True)
class Task:
    """One kernel submission. ``deps``: earlier tasks it must follow (from the directions of
    the tensors both touch, where atomic-add-only writers of one tensor commute and the
    iterations of one ``pl.parallel`` loop are independent; and from ``pl.at(deps=[...])``). ``write_gates``:
    the (task, tensor) pairs of those deps that only order this task's atomic adds into a
    tensor after the earlier task — the task itself need not wait to start."""

    kernel: str
    tensors: tuple[int, ...]
    scalars: tuple[int | float, ...]
    cube: bool = False
    deps: tuple[int, ...] = ()
    reads: frozenset[int] = frozenset()
    writes: frozenset[int] = frozenset()
    atomic: frozenset[int] = frozenset()  # written only by atomic adds, never read
    write_gates: tuple[tuple[int, int], ...] = ()
    block_idx: int = 0  # pl.spmd: this task's block, of block_num blocks of one dispatch
    block_num: int = 1
    cluster: bool = False  # one AIC and its AIVs together (a Group function)
    # no_dep_args= and manual_dep tensors: no dependency is inferred from them (either way)
    untracked: frozenset[int] = frozenset()
    early_resolve: bool = False  # pl.at(allow_early_resolve=True)

    @property
    def core_kind(self) -> str:
        """The cores the task runs on, by the name of the native ``CoreKind`` member: ``"aiv"``,
        ``"aic"``, or ``"cluster"`` (one AIC and its AIVs)."""
        return "cluster" if self.cluster else "aic" if self.cube else "aiv"

    @property
    def start_deps(self) -> tuple[int, ...]:
        """The deps the task waits for before it starts (the rest gate only its writes)."""
        if not self.write_gates:  # as most tasks: every dep
            return self.deps
        gated = {t for t, _ in self.write_gates}
        return tuple(d for d in self.deps if d not in gated)


@dataclass(frozen=True)
class Intermediate:
    """A ``pl.create_tensor`` buffer: allocated (zeroed) for each run, after the parameters."""

    shape: tuple[int, ...]
    dtype: str  # numpy dtype name
    init: int | float = 0  # pl.create_tensor(..., init_value=)
    manual_dep: bool = False  # pl.create_tensor(..., manual_dep=True): never a dependency


@dataclass(frozen=True)
class View:
    """A ``pl.reshape`` / ``pl.slice`` of a tensor in orchestration: the same bytes as table entry
    ``base`` (a parameter, an intermediate or another view), seen with ``shape`` (from
    ``offsets`` for a slice; None for a reshape)."""

    base: int
    shape: tuple[int, ...]
    offsets: tuple[int, ...] | None = None


@dataclass(frozen=True)
class InputsRead:
    """What a plan read of its call's arrays: their sizes, and the values each ``pl.read``
    found. A later call whose arrays hold the same there walks the orchestration code the same
    way, so it gets the same task list (the plan depends on nothing else of the call)."""

    positions: tuple[int, ...]  # the entry's tensor parameters, by position among its parameters
    shapes: tuple[tuple[int, ...], ...]  # their sizes at the planned call
    # per array read: (its tensor parameter, the positions read as index arrays, their values)
    values: tuple[tuple[int, tuple[np.ndarray, ...], np.ndarray], ...]

    def hold_in(self, args: tuple) -> bool:
        """Whether ``args`` (a call's, positional) have these sizes and values."""
        if len(args) <= max(self.positions, default=-1):
            return False
        try:
            if any(tuple(np.shape(args[p])) != s for p, s in zip(self.positions, self.shapes)):
                return False
            for index, at, values in self.values:
                found = np.asarray(args[self.positions[index]])[at]
                if found.dtype != values.dtype or found.tobytes() != values.tobytes():  # bits: NaN too
                    return False
        except (TypeError, ValueError):  # an argument numpy cannot read: plan again, which says why
            return False
        return True


@dataclass
class Plan:
    tasks: list[Task]
    intermediates: list[Intermediate | View]  # the table entries after the parameters
    # pl.spmd counts of pl.dynamic dims: the sizes this plan was made for; a call with other
    # sizes is planned again (the program and its kernels serve every size)
    dims: dict[str, int] = field(default_factory=dict)
    dynamic: frozenset[str] = frozenset()  # the dims the counts read (planned at each call's sizes)
    data: bool = False  # orchestration reads input values (pl.read): planned again when they change
    read: InputsRead | None = None  # with data: what it read (None: made without the arrays)

    def launch_specs(self) -> list[tuple]:
        """Per task, as plain data (what a run needs, kept without the IR classes): (kernel,
        tensor indices, scalar values, core kind, start deps, write gates, block index, block
        count, the tensors it only reads, whether it allows early resolve)."""
        return [
            (
                t.kernel, tuple(t.tensors), tuple(t.scalars), t.core_kind, t.start_deps,
                tuple(t.write_gates), t.block_idx, t.block_num, frozenset(t.reads - t.writes),
                t.early_resolve,
            )
            for t in self.tasks
        ]  # fmt: skip

    def table_entries(self) -> list[tuple]:
        """The table entries after the parameters, as plain data: ("new", shape, numpy dtype
        name, fill value) for a scratch tensor a run allocates, ("view", base entry, shape,
        offsets or None) for a view of an earlier entry."""
        return [
            ("view", t.base, t.shape, t.offsets) if isinstance(t, View) else ("new", t.shape, t.dtype, t.init)
            for t in self.intermediates
        ]


@dataclass
class _Env:
    scalars: dict[str, int | float | bool] = field(default_factory=dict)
    tensors: dict[str, int] = field(default_factory=dict)  # var name -> tensor table index
    intermediates: list[Intermediate | View] = field(default_factory=list)
    n_params: int = 0
    handles: dict[str, list[int]] = field(default_factory=dict)  # pl.at handle -> its tasks
    latest: dict[str, list[int]] = field(default_factory=dict)  # pl.at handle -> its last dispatch
    manual: bool = False  # inside pl.manual_scope(): no dependency is inferred
    # (loop instance, iteration) of each enclosing pl.parallel loop
    parallel: list[tuple[int, int]] = field(default_factory=list)
    deps: DepIndex = field(default_factory=DepIndex)  # the tasks so far, by the windows they used
    loops_run: int = 0
    effects: dict[tuple, tuple[frozenset[int], frozenset[int], frozenset[int]]] = field(default_factory=dict)
    args: list[Any] | None = None  # the call's arrays, by tensor parameter (None: not known)
    arg_shapes: list[tuple[int, ...]] = field(default_factory=list)  # their sizes, read once
    tasks: list[Task] = field(default_factory=list)  # submitted so far
    read_data: bool = False  # a pl.read of an input's value steered the plan
    written: set[int] = field(default_factory=set)  # the buffers the tasks so far write
    manual_deps: bool = False  # a pl.create_tensor(manual_dep=True) buffer made so far
    facts: PlanFacts | None = None  # the program's kernels, as every plan of it reads them
    arrays: dict[int, np.ndarray] = field(default_factory=dict)  # the inputs pl.read reads
    reads: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)  # (input, position) per pl.read


@dataclass(frozen=True)
class _TensorParam:
    """A kernel's tensor parameter as its every task reads it (_tensor_params)."""

    name: str
    shape: tuple
    reads: bool
    writes: bool
    atomic_only: bool  # every write of it an atomic add (_atomic_only)


def _tensor_params(fn: Function, env: _Env) -> list[_TensorParam]:
    """``fn``'s tensor parameters, read from its IR once per program (``PlanFacts``)."""
    assert env.facts is not None
    return env.facts.params(fn)


@dataclass(frozen=True)
class _Site:
    """A kernel call of the orchestration code, as each of its submissions reads it."""

    callee: Function
    written: tuple[str, ...]  # its pl.Out / pl.InOut arguments (``c = kernel(a, c)`` names the first)
    tensors: tuple[str, ...]  # the names passed for its tensor parameters ('': not a name)
    tensor_params: tuple[str, ...]  # those parameters' names
    scalars: tuple[Expr, ...]  # the values passed for the others


class PlanFacts:
    """What planning reads of a program's IR that is the same for every plan of it: the
    pl.dynamic dims it reads, each kernel's tensor parameters, each call site's kernel. A
    program planned at every call (its orchestration reads input values) keeps one, so each
    plan walks only its orchestration code, not the kernels' IR again."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.dims_used = _dims_used(program)
        self._params: dict[str, list[_TensorParam]] = {}
        self._sites: dict[int, _Site] = {}  # by id of the FuncCall node (the program keeps it)
        self._masks: dict[str, tuple[tuple[bool, ...], ...]] = {}
        self.steps: dict[int, _Step] = {}  # by id of the statement (_walk)
        self._views: dict[int, _ViewSite] = {}  # by id of the reshape or slice call
        self._creates: dict[int, _CreateSite] = {}  # by id of the pl.create_tensor call

    def params(self, fn: Function) -> list[_TensorParam]:
        got = self._params.get(fn.name)
        if got is None:
            got = self._params[fn.name] = [
                _TensorParam(
                    p.var.name,
                    tuple(tensor_type(p.var).shape),
                    p.direction in (Direction.In, Direction.InOut),
                    p.direction in (Direction.Out, Direction.InOut),
                    _atomic_only(fn, p.var.name),
                )
                for p in fn.params
                if isinstance(p.var.type, TensorType)
            ]
        return got

    def masks(self, fn: Function) -> tuple[tuple[bool, ...], ...]:
        got = self._masks.get(fn.name)
        if got is None:
            params = self.params(fn)
            got = self._masks[fn.name] = (
                tuple(p.reads for p in params),
                tuple(p.writes for p in params),
                tuple(p.atomic_only for p in params),
            )
        return got

    def view(self, c: Call) -> _ViewSite:
        got = self._views.get(id(c))
        if got is None:
            got = self._views[id(c)] = _view_site(c)
        return got

    def create(self, c: Call) -> _CreateSite:
        got = self._creates.get(id(c))
        if got is None:
            got = self._creates[id(c)] = _create_site(c)
        return got

    def site(self, call: FuncCall) -> _Site:
        got = self._sites.get(id(call))
        if got is None:
            callee = self.program.get(call.callee)
            written = tuple(a.name for a in written_arguments(callee.params, call.args))
            pairs = list(zip(callee.params, call.args))
            tensors = [(p.var.name, a) for p, a in pairs if isinstance(p.var.type, TensorType)]
            got = self._sites[id(call)] = _Site(
                callee,
                written,
                tuple(a.name if isinstance(a, Var) else "" for _, a in tensors),
                tuple(name for name, _ in tensors),
                tuple(a for p, a in pairs if not isinstance(p.var.type, TensorType)),
            )
        return got


class _NeedsData(Exception):
    """Orchestration reads an input's values, and this plan is made without the call's arrays."""


_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "//": lambda a, b: a // b,
    "%": lambda a, b: a % b,
    "min": min,
    "max": max,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "and": lambda a, b: a and b,
    "or": lambda a, b: a or b,
}


def _value(e: Expr, env: _Env) -> Any:
    # By exact type (the expression classes have no subclasses), the commonest first: a plan
    # evaluates hundreds of thousands of these.
    if type(e) is Var:
        got = env.scalars.get(e.name, _UNSET)
        if got is not _UNSET:
            return got
    elif type(e) is Const:
        return e.value
    elif type(e) is BinOp:
        try:
            return _ARITH[e.op](_value(e.lhs, env), _value(e.rhs, env))
        except ZeroDivisionError:
            raise CompileError(
                f"`{e.op}` by zero in orchestration code (the divisor evaluated to 0)", e.span
            ) from None
    elif type(e) is UnaryOp:
        v = _value(e.operand, env)
        return (not v) if e.op == "not" else -v
    elif type(e) is Call:
        return _call_value(e, env)
    raise CompileError("orchestration value is not known at compile time", e.span)


_UNSET = object()  # a name no scalar of the orchestration holds yet


def _call_value(e: Call, env: _Env) -> Any:
    if e.op == "scalar.cast":
        return cast_scalar(_value(e.arg("x"), env), scalar_type(e).dtype)
    if e.op == "tensor.read":
        return _read(e, env)
    if e.op in _TASK_OPS:
        return _TASK_OPS[e.op](e, env)
    if e.op == "tensor.dim":  # a pl.dynamic dim: this call's size
        d = _dim_of(e)
        return d if isinstance(d, int) else env.scalars[d.name]
    raise CompileError("orchestration value is not known at compile time", e.span)


def _dim_of(c: Call) -> int | DynDim:
    """The dim a ``tensor.dim`` call reads: an int, or the ``pl.dynamic`` dim sized per call."""
    return tensor_type(c.arg("x")).shape[int(c.const_arg("axis").value)]


def _read(c: Call, env: _Env) -> int | float | bool:
    """``pl.read(x, [i, j])`` in orchestration: the value the call's input holds (the plan is
    made before any kernel runs, so only inputs no task of the program writes can be read)."""
    src = c.arg("src")
    index = env.tensors.get(src.name) if isinstance(src, Var) else None
    if index is None or index >= env.n_params or index in env.written:
        raise CompileError(
            f"orchestration reads `{getattr(src, 'name', src)}`, which a kernel of this program writes "
            "(or which is not a parameter): the task list is made before the kernels run, so it "
            "can only read inputs; read it inside a pl.at scope instead",
            c.span,
        )
    env.read_data = True
    if env.args is None:
        raise _NeedsData
    at = tuple(_value(i, env) for i in c.list_arg("indices").items)
    data = env.arrays.get(index)
    if data is None:
        data = env.arrays[index] = np.asarray(env.args[index])
    if len(at) != data.ndim or not all(0 <= i < n for i, n in zip(at, data.shape)):
        raise ArgumentError(  # numpy would wrap a negative index and read the wrong element
            f"pl.read of `{getattr(src, 'name', src)}` at {list(at)} is outside its shape {list(data.shape)}",
            c.span,
        )
    env.reads.append((index, at))
    return data[at].item()


def _inputs_read(env: _Env, positions: list[int]) -> InputsRead:
    """The sizes of the call's arrays and the values the plan's ``pl.read`` calls found."""
    assert env.args is not None
    by_input: dict[int, list[tuple[int, ...]]] = {}
    for index, at in env.reads:
        by_input.setdefault(index, []).append(at)
    values: list[tuple[int, tuple[np.ndarray, ...], np.ndarray]] = []
    for index, ats in by_input.items():
        data = env.arrays[index]
        where = tuple(np.array(ats, dtype=np.intp).reshape(len(ats), data.ndim).T)
        values.append((index, where, data[where]))  # fancy indexing: a copy, not a view of the input
    shapes = tuple(env.arg_shapes)
    return InputsRead(tuple(positions), shapes, tuple(values))


# The task family's values: a TaskId is the frozenset of tasks it names, an array a tuple.
def _task_set(e: Expr, env: _Env) -> frozenset[int]:
    v = _value(e, env)
    return frozenset().union(*v) if isinstance(v, tuple) else v


def _array_create(c: Call, env: _Env) -> tuple:
    t = array_type(c)
    empty: frozenset[int] | int = frozenset() if t.dtype.kind == "task" else 0
    return (empty,) * t.size


def _array_index(c: Call, env: _Env) -> int:
    i, n = _value(c.arg("index"), env), array_type(c.arg("array")).size
    if not 0 <= i < n:
        raise CompileError(f"array index {i} is outside the array of {n}", c.span)
    return i


def _array_set(c: Call, env: _Env) -> tuple:
    items = list(_value(c.arg("array"), env))
    items[_array_index(c, env)] = _value(c.arg("value"), env)
    return tuple(items)


_TASK_OPS: dict[str, Any] = {
    "system.task_of": lambda c, env: frozenset(env.latest.get(c.arg("handle").value, ())),
    "system.task_dummy": lambda c, env: frozenset().union(*(_task_set(d, env) for d in c.arg("deps").items)),
    "system.task_invalid": lambda c, env: frozenset(),
    "array.create": _array_create,
    "array.get": lambda c, env: _value(c.arg("array"), env)[_array_index(c, env)],
    "array.set": _array_set,
}


def _block_count(call: FuncCall, env: _Env) -> int:
    """The call's block count; one of ``pl.dynamic`` dims is evaluated with this call's sizes."""
    if isinstance(call.blocks, int):
        return call.blocks
    n = _value(call.blocks, env)
    if not 1 <= n <= MAX_BLOCKS:
        sizes = ", ".join(
            f"{v.name} = {env.scalars[v.name]}" for v in dict.fromkeys(nodes_of(call.blocks, Var))
        )
        raise ArgumentError(
            f"pl.spmd({print_expr(call.blocks)}) gives {n} blocks for {sizes}; a dispatch takes "
            f"1 to {MAX_BLOCKS} blocks",
            call.blocks.span or call.span,
        )
    return n


def _submit(call: FuncCall, program: Program, env: _Env, tasks: list[Task]) -> None:
    """One task per block of the call; the blocks of a pl.spmd dispatch are independent of
    each other, as the iterations of a pl.parallel loop are."""
    blocks = _block_count(call, env)
    if call.handle is not None:
        env.latest[call.handle] = []  # `as h` as a value names this dispatch's tasks
    if blocks == 1:
        _submit_block(call, program, env, tasks, 0, 1)
        return
    env.loops_run += 1
    for b in range(blocks):
        env.parallel.append((env.loops_run, b))
        _submit_block(call, program, env, tasks, b, blocks)
        env.parallel.pop()


def _submit_block(
    call: FuncCall, program: Program, env: _Env, tasks: list[Task], block: int, blocks: int
) -> None:
    assert env.facts is not None
    site = env.facts.site(call)
    callee = site.callee
    named_tensors = env.tensors
    tensors = [named_tensors.get(name, -1) for name in site.tensors]
    if -1 in tensors:
        param = site.tensor_params[tensors.index(-1)]
        raise CompileError(
            f"argument {param!r} of {call.callee} must be a tensor: a parameter "
            "of the entry function or a pl.create_tensor intermediate",
            call.span,
        )
    scalars = [_value(a, env) for a in site.scalars]
    _check_sizes(callee, tensors, env, call)
    # Task.reads/writes are buffers (a view's are its base's); dependencies, on their windows
    windows = [_window(env, t) for t in tensors]
    roots = [root for root, _ in windows]
    key = (call.callee, tuple(roots))  # the blocks of a dispatch share their effects
    effects = env.effects.get(key)
    if effects is None:
        effects = env.effects[key] = _effects(callee, roots, env)
    reads, writes, atomic = effects
    untracked = _untracked(call, env, roots)
    uses = _uses(callee, windows, env, untracked)
    ordered, gates = env.deps.submit(uses, atomic, env.parallel)
    deps = tuple(ordered)
    if call.deps or call.dep_values:
        # deps=[h]: after every task submitted so far under handle h (each iteration's, in a
        # loop); one that shares tensors with this task is ordered by the tensor rule above,
        # as if implicit.
        named = [env.handles.get(h, ()) for h in call.deps] + [_task_set(v, env) for v in call.dep_values]
        if any(named):  # none yet: no order; the inferred ones come ascending
            deps = tuple(sorted(set(ordered).union(*named)))
    if call.handle is not None:
        env.handles.setdefault(call.handle, []).append(len(tasks))
        env.latest[call.handle].append(len(tasks))
    env.written |= writes
    tasks.append(
        Task(
            call.callee,
            tuple(tensors),
            tuple(scalars),
            callee.kind is FunctionType.AIC,
            deps,
            reads,
            writes,
            atomic,
            tuple(gates),
            block,
            blocks,
            callee.kind is FunctionType.Group,
            untracked,
            call.early_resolve,
        )
    )


def _check_sizes(fn: Function, tensors: list[int], env: _Env, call: FuncCall) -> None:
    """The sizes of a call's tensors against the kernel's parameters where the types left them
    to this call: a size computed at run time against a fixed one, and the sizes one
    ``pl.dynamic`` dim of the kernel takes in all its parameters, which must agree."""
    bound: dict[str, tuple[int, str]] = {}  # the kernel's dim -> (its size, the parameter giving it)
    n_params, entries, arg_shapes = env.n_params, env.intermediates, env.arg_shapes
    for k, (param, index) in enumerate(zip(_tensor_params(fn, env), tensors)):
        # the sizes of table entry `index` at this call (None: not known yet)
        have: tuple[int, ...] | None
        if index >= n_params:
            have = entries[index - n_params].shape
        else:
            have = arg_shapes[index] if env.args is not None else None
        if have is None or have == param.shape:  # fixed sizes that match: nothing to check
            continue
        for want, size in zip(param.shape, have):
            if isinstance(want, int) and want != size:
                arg = [a for p, a in zip(fn.params, call.args) if isinstance(p.var.type, TensorType)][k]
                raise ArgumentError(
                    f"`{param.name}` of `{call.callee}` is {list(param.shape)}, but at this "
                    f"call `{getattr(arg, 'name', arg)}` is {list(have)} "
                    "(its sizes are computed at run time)",
                    call.span,
                )
            if isinstance(want, DynDim):
                first = bound.setdefault(want.name, (size, param.name))
                if first[0] != size:
                    raise ArgumentError(
                        f"`{call.callee}`'s dim {want.name} is {first[0]} in `{first[1]}` but {size} in "
                        f"`{param.name}` at this call",
                        call.span,
                    )


def _uses(fn: Function, windows: list[tuple[int, Box]], env: _Env, untracked: frozenset[int]) -> list[Use]:
    """The windows of buffers (``windows``: its tensors' _window) a task of ``fn`` reads and
    writes, but for untracked ones."""
    params = _tensor_params(fn, env)
    if not untracked:
        return [Use(root, box, p.reads, p.writes) for p, (root, box) in zip(params, windows)]
    return [
        Use(root, box, p.reads, p.writes) for p, (root, box) in zip(params, windows) if root not in untracked
    ]


def _window(env: _Env, index: int) -> tuple[int, Box]:
    """The buffer table entry ``index`` sees and the box of it (None: the whole buffer): a
    slice's box, moved by each slice it was taken from; a reshape's place in its base is no
    box, so it is its base's whole window."""
    box: Box = None
    while index >= env.n_params and isinstance(v := env.intermediates[index - env.n_params], View):
        if v.offsets is None:
            box = None
        elif not box:  # the view's own box (of a whole buffer, or of a 0-dim window)
            box = tuple([(o, o + n) for o, n in zip(v.offsets, v.shape)])
        else:
            box = tuple([(o + lo, o + hi) for o, (lo, hi) in zip(v.offsets, box)])
        index = v.base
    return index, box


def _untracked(call: FuncCall, env: _Env, roots: list[int]) -> frozenset[int]:
    """The buffers of this task (``roots``) no dependency is inferred from: its no_dep_args=
    and the manual_dep intermediates; in a pl.manual_scope every tensor it uses."""
    if not (env.manual or call.no_dep or env.manual_deps):  # none, as mostly: one shared empty set
        return _NO_BUFFERS
    listed = _tensor_args(call, env) if env.manual else [v for v in call.no_dep if v.name in env.tensors]
    named = {root_of(env.intermediates, env.n_params, env.tensors[v.name]) for v in listed}
    manual = {r for r in roots if getattr(_entry(env, r), "manual_dep", False)}
    return frozenset(named | manual)


_NO_BUFFERS: frozenset[int] = frozenset()


def _entry(env: _Env, index: int) -> Intermediate | View | None:
    """The table entry ``index`` names after the parameters (None: a parameter)."""
    return env.intermediates[index - env.n_params] if index >= env.n_params else None


def _atomic_only(fn: Function, name: str) -> bool:
    """True when every write of parameter `name` in `fn` is an atomic add (and it is not read)."""
    names = tensor_aliases(fn, name)
    stores = [c for c in nodes_of(fn, Call) if any(isinstance(a, Var) and a.name in names for a in c.args)]
    if not stores or fn.external_source is not None:
        return False
    return all(
        c.op == "tile.store"
        and c.var_arg("output_tensor").name in names
        and c.arg("atomic") == Literal(AtomicType.Add)
        for c in stores
    )


def _effects(
    fn: Function, tensors: list[int], env: _Env
) -> tuple[frozenset[int], frozenset[int], frozenset[int]]:
    reads, writes, atomic_only = _masks(fn, env)
    written = frozenset(compress(tensors, writes))
    atomic = (
        frozenset(t for t in compress(tensors, atomic_only) if t in written)
        if any(atomic_only)
        else _NO_BUFFERS
    )
    return frozenset(compress(tensors, reads)), written, atomic


def _masks(fn: Function, env: _Env) -> tuple[tuple[bool, ...], ...]:
    """Which of ``fn``'s tensor parameters it reads, writes, and only adds into atomically."""
    assert env.facts is not None
    return env.facts.masks(fn)


def _written_arg(call: FuncCall, env: _Env) -> str | None:
    """The tensor argument a call writes (`c = kernel(a, c)` names it)."""
    assert env.facts is not None
    for name in env.facts.site(call).written:
        if name in env.tensors:
            return name
    return None


def _carry(names: tuple[Var, ...], values: tuple[Expr, ...], env: _Env) -> None:
    """Loop-carried tensors keep naming the buffer their value came from."""
    for var, value in zip(names, values):
        if isinstance(value, Var) and value.name in env.tensors:
            env.tensors[var.name] = env.tensors[value.name]
        elif isinstance(var.type, (ScalarType, ArrayType)):
            env.scalars[var.name] = _value(value, env)


def _for(s: For, program: Program, env: _Env, tasks: list[Task]) -> None:
    _carry(tuple(it.var for it in s.iter_args), tuple(it.init for it in s.iter_args), env)
    env.loops_run += 1
    run = env.loops_run
    for i in range(_value(s.start, env), _value(s.stop, env), _value(s.step, env)):
        env.scalars[s.var.name] = i
        if s.kind is ForKind.parallel:
            env.parallel.append((run, i))
        _walk(s.body, program, env, tasks)
        if s.kind is ForKind.parallel:
            env.parallel.pop()
        if s.body and isinstance(s.body[-1], Yield):
            _carry(tuple(it.var for it in s.iter_args), s.body[-1].values, env)
    _carry(s.results, tuple(it.var for it in s.iter_args), env)


def _walk(body: tuple[Stmt, ...], program: Program, env: _Env, tasks: list[Task]) -> None:
    assert env.facts is not None
    steps = env.facts.steps
    for s in body:
        step = steps.get(id(s))
        if step is None:
            step = steps[id(s)] = _step_of(s)
        step(s, program, env, tasks)


_Step = Callable[[Any, Program, _Env, list[Task]], None]


def _step_of(s: Stmt) -> _Step:
    """What walking ``s`` does, by its kind and its value's: decided once per statement."""
    if isinstance(s, (Eval, Assign)) and isinstance(s.value, FuncCall):
        return _call_step
    if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tensor.create":
        return _create_step
    if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op in _VIEW_OPS:
        return _view_step
    if isinstance(s, Assign) and isinstance(s.var.type, (ScalarType, ArrayType)):
        return _scalar_step
    if isinstance(s, Assign) and isinstance(s.value, Var):
        return _alias_step
    if isinstance(s, For):
        return _for
    if isinstance(s, If):
        return _if_step
    if isinstance(s, TaskRegion):
        return _region_step
    if isinstance(s, (Return, Yield)):
        return _no_step
    return _unsupported


def _call_step(s: Eval | Assign, program: Program, env: _Env, tasks: list[Task]) -> None:
    call = s.value
    assert isinstance(call, FuncCall)
    _submit(call, program, env, tasks)
    out = _written_arg(call, env)
    if isinstance(s, Assign) and out is not None:
        env.tensors[s.var.name] = env.tensors[out]


def _create_step(s: Assign, program: Program, env: _Env, tasks: list[Task]) -> None:
    assert isinstance(s.value, Call)
    env.tensors[s.var.name] = env.n_params + len(env.intermediates)
    env.intermediates.append(_intermediate(s.value, env))


def _view_step(s: Assign, program: Program, env: _Env, tasks: list[Task]) -> None:
    assert isinstance(s.value, Call)
    env.tensors[s.var.name] = env.n_params + len(env.intermediates)
    env.intermediates.append(_view(s.value, env))


def _scalar_step(s: Assign, program: Program, env: _Env, tasks: list[Task]) -> None:
    env.scalars[s.var.name] = _value(s.value, env)


def _alias_step(s: Assign, program: Program, env: _Env, tasks: list[Task]) -> None:
    assert isinstance(s.value, Var)
    if s.value.name not in env.tensors:
        _unsupported(s, program, env, tasks)
    env.tensors[s.var.name] = env.tensors[s.value.name]


def _if_step(s: If, program: Program, env: _Env, tasks: list[Task]) -> None:
    taken = s.then_body if _value(s.cond, env) else s.else_body
    _walk(taken, program, env, tasks)
    if taken and isinstance(taken[-1], Yield):  # the names the if merges take this branch's
        _carry(s.results, taken[-1].values, env)


def _region_step(s: TaskRegion, program: Program, env: _Env, tasks: list[Task]) -> None:
    outer, env.manual = env.manual, env.manual or s.manual
    _walk(s.body, program, env, tasks)
    env.manual = outer


def _no_step(s: Stmt, program: Program, env: _Env, tasks: list[Task]) -> None:
    pass


def _unsupported(s: Stmt, program: Program, env: _Env, tasks: list[Task]) -> None:
    raise CompileError(f"{type(s).__name__} is not supported in orchestration code yet", s.span)


_VIEW_OPS = ("tensor.reshape", "tensor.slice", "tensor.view")


def _view(c: Call, env: _Env) -> View:
    """An orchestration view of a tensor: its base entry and the window it sees."""
    assert env.facts is not None
    site = env.facts.view(c)
    src = site.src
    if not isinstance(src, Var) or src.name not in env.tensors:
        raise CompileError("a view in orchestration takes a tensor of this function", c.span)
    shape = tuple([_value(d, env) for d in site.shape])
    if site.offsets is None:  # a reshape, to sizes known now or at run time (tensor.view)
        return View(env.tensors[src.name], shape)
    if not site.plain:
        raise CompileError(
            "valid_shape= of a slice in orchestration is not supported: give it to the slice inside "
            "the pl.at scope that loads it",
            c.span,
        )
    offsets = tuple([_value(o, env) for o in site.offsets])
    for d, (o, n, size) in enumerate(zip(offsets, shape, site.full)):
        if isinstance(size, int) and not 0 <= o <= size - n:
            raise CompileError(
                f"pl.slice of `{src.name}` {list(site.full)}: on dim {d} the window [{o}, {o + n}) is "
                f"outside [0, {size})",
                c.span,
            )
    return View(env.tensors[src.name], shape, offsets)


@dataclass(frozen=True)
class _ViewSite:
    """An orchestration reshape or slice, as each of its evaluations reads it."""

    src: Expr
    shape: tuple[Expr, ...]
    offsets: tuple[Expr, ...] | None  # None: a reshape
    plain: bool  # no valid_shape= (a slice's, which orchestration does not take)
    full: tuple  # the sliced tensor's sizes


def _view_site(c: Call) -> _ViewSite:
    src = c.arg("x")
    shape = tuple(c.list_arg("shape").items)
    if c.op != "tensor.slice":
        return _ViewSite(src, shape, None, True, ())
    full = tuple(src.type.shape) if isinstance(src, Var) and isinstance(src.type, TensorType) else ()
    plain = isinstance(c.arg("valid_shape"), Literal)
    return _ViewSite(src, shape, tuple(c.list_arg("offset").items), plain, full)


def root_of(entries: list[Intermediate | View], n_params: int, index: int) -> int:
    """The table entry whose buffer ``index`` sees (itself, unless it is a view)."""
    while index >= n_params and isinstance(entry := entries[index - n_params], View):
        index = entry.base
    return index


def _tensor_args(call: FuncCall, env: _Env) -> list[Var]:
    return [a for a in call.args if isinstance(a, Var) and a.name in env.tensors]


def _intermediate(c: Call, env: _Env) -> Intermediate:
    """The GM buffer of an orchestration ``pl.create_tensor``."""
    assert env.facts is not None
    site = env.facts.create(c)
    value = 0 if site.init is None else _value(site.init, env)
    env.manual_deps = env.manual_deps or site.manual
    shape = tuple([_value(d, env) for d in site.shape])
    return Intermediate(shape, site.dtype, value, site.manual)


@dataclass(frozen=True)
class _CreateSite:
    """An orchestration ``pl.create_tensor``, as each of its evaluations reads it."""

    shape: tuple[Expr, ...]
    dtype: str  # numpy dtype name
    init: Expr | None  # None: no init_value= (zeros)
    manual: bool  # manual_dep=True


def _create_site(c: Call) -> _CreateSite:
    init = c.arg("init_value")
    plain = isinstance(init, Literal) and init.value is None
    manual = bool(c.const_arg("manual_dep").value)
    dtype = _numpy_dtype(tensor_type(c).dtype)
    return _CreateSite(tuple(c.list_arg("shape").items), dtype, None if plain else init, manual)


_DTYPE_NAMES: dict[str, str] = {}  # numpy's dtype.name is computed in Python: ~4 us a read


def _numpy_dtype(dtype: Any) -> str:
    name = _DTYPE_NAMES.get(dtype.name)
    if name is None:  # bfloat16's numpy dtype is ml_dtypes', whose import takes 0.7 s: not for a name
        name = _DTYPE_NAMES[dtype.name] = "bfloat16" if dtype.name == "BF16" else str(numpy_dtype(dtype).name)
    return name


def plan_orchestration(
    program: Program,
    entry: Function,
    scalar_args: dict[str, Any],
    args: tuple = (),
    facts: PlanFacts | None = None,
) -> Plan:
    """Tasks in submission order. ``scalar_args``: values of the entry's scalar parameters;
    ``args`` (the call's, positional) size the ``pl.dynamic`` dims of dynamic block counts.
    Tensor indices address the entry's tensor parameters, then the intermediates.
    ``facts``: ``program``'s, kept from an earlier plan of it."""
    facts = facts if facts is not None and facts.program is program else PlanFacts(program)
    tensor_params = [p for p in entry.params if isinstance(p.var.type, TensorType)]
    used = facts.dims_used
    dims = dynamic_dims(program, entry, args, used)
    if set(dims) != used:  # no sizes yet (a program read back from its folder): plan at the call
        return Plan([], [], {}, frozenset(used))
    env = _Env(scalars={**scalar_args, **dims}, n_params=len(tensor_params), facts=facts)
    env.tensors = {p.var.name: i for i, p in enumerate(tensor_params)}
    positions = [i for i, p in enumerate(entry.params) if isinstance(p.var.type, TensorType)]
    if len(args) == len(entry.params):
        env.args = [args[i] for i in positions]
        env.arg_shapes = [tuple(np.shape(a)) for a in env.args]
    try:
        with collector_paused():
            _walk(entry.body, program, env, env.tasks)
    except _NeedsData:  # no arrays yet (a program read back from its folder): plan at the call
        return Plan([], [], {}, frozenset(used), data=True)
    read = _inputs_read(env, positions) if env.read_data else None
    return Plan(env.tasks, env.intermediates, dims, frozenset(used), data=env.read_data, read=read)


def _dims_used(program: Program) -> set[str]:
    """The ``pl.dynamic`` dims that block counts and orchestration code of ``program`` read."""
    dyn = {d.name for d in _entry_dims(program)}
    counts = {
        v.name
        for f in program.functions
        for c in nodes_of(f, FuncCall)
        if not isinstance(c.blocks, int)
        for v in nodes_of(c.blocks, Var)
        if v.name in dyn  # a count may also read scalars of the orchestration code itself
    }
    read = {
        d.name
        for f in program.functions
        if f.kind in (FunctionType.Orchestration, FunctionType.Group)
        for c in nodes_of(f, Call)
        if c.op == "tensor.dim"
        for d in [_dim_of(c)]
        if isinstance(d, DynDim)
    }
    return counts | read


def _entry_dims(program: Program) -> list[DynDim]:
    """The ``pl.dynamic`` dims of the entry's parameters."""
    return [
        d for p in program.entry.params for d in getattr(p.var.type, "shape", ()) if isinstance(d, DynDim)
    ]


def dynamic_dims(
    program: Program, entry: Function, args: tuple, used: set[str] | None = None
) -> dict[str, int]:
    """The sizes ``args`` give the ``pl.dynamic`` dims that block counts of ``program`` read
    (``used``, when the caller knows them)."""
    used = _dims_used(program) if used is None else used
    dims: dict[str, int] = {}
    for i, p in enumerate(entry.params):
        for axis, d in enumerate(getattr(p.var.type, "shape", ())):
            if isinstance(d, DynDim) and d.name in used and i < len(args):
                dims.setdefault(d.name, int(np.shape(args[i])[axis]))
    return dims
