"""The launch plan: the orchestration function evaluated once per specialisation into the
list of kernel tasks it submits, each with its tensor arguments (indices into the call's
tensor parameters) and its scalar values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pypto.errors import ArgumentError, CompileError
from pypto.ir.enums import AtomicType, Direction, ForKind, FunctionType
from pypto.ir.expr import BinOp, Call, Const, Expr, FuncCall, Literal, UnaryOp, Var
from pypto.ir.printer import print_expr
from pypto.ir.stmt import MAX_BLOCKS, Assign, Eval, For, Function, If, Program, Return, Stmt, Yield
from pypto.ir.types import DynDim, ScalarType, TensorType
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

    @property
    def core_kind(self) -> int:
        """The native scheduler's core kind: 0 AIV, 1 AIC, 2 a whole cluster."""
        return 2 if self.cluster else int(self.cube)

    @property
    def start_deps(self) -> tuple[int, ...]:
        """The deps the task waits for before it starts (the rest gate only its writes)."""
        gated = {t for t, _ in self.write_gates}
        return tuple(d for d in self.deps if d not in gated)


@dataclass(frozen=True)
class Intermediate:
    """A ``pl.create_tensor`` buffer: allocated (zeroed) for each run, after the parameters."""

    shape: tuple[int, ...]
    dtype: str  # numpy dtype name


@dataclass
class Plan:
    tasks: list[Task]
    intermediates: list[Intermediate]
    # pl.spmd counts of pl.dynamic dims: the sizes this plan was made for; a call with other
    # sizes is planned again (the program and its kernels serve every size)
    dims: dict[str, int] = field(default_factory=dict)
    dynamic: frozenset[str] = frozenset()  # the dims the counts read (planned at each call's sizes)


@dataclass
class _Env:
    scalars: dict[str, int | float | bool] = field(default_factory=dict)
    tensors: dict[str, int] = field(default_factory=dict)  # var name -> tensor table index
    intermediates: list[Intermediate] = field(default_factory=list)
    n_params: int = 0
    handles: dict[str, list[int]] = field(default_factory=dict)  # pl.at handle -> its tasks
    # (loop instance, iteration) of each enclosing pl.parallel loop, now and per task
    parallel: list[tuple[int, int]] = field(default_factory=list)
    parallel_of: list[tuple[tuple[int, int], ...]] = field(default_factory=list)
    loops_run: int = 0
    effects: dict[tuple, tuple[frozenset[int], frozenset[int], frozenset[int]]] = field(default_factory=dict)


_ARITH = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
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
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Var) and e.name in env.scalars:
        return env.scalars[e.name]
    if isinstance(e, BinOp):
        try:
            return _ARITH[e.op](_value(e.lhs, env), _value(e.rhs, env))  # type: ignore[operator]
        except ZeroDivisionError:
            raise CompileError(
                f"`{e.op}` by zero in orchestration code (the divisor evaluated to 0)", e.span
            ) from None
    if isinstance(e, UnaryOp):
        v = _value(e.operand, env)
        return (not v) if e.op == "not" else -v
    raise CompileError("orchestration value is not known at compile time", e.span)


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
    callee = program.get(call.callee)
    tensors, scalars = [], []
    for p, a in zip(callee.params, call.args):
        if isinstance(p.var.type, TensorType):
            if not isinstance(a, Var) or a.name not in env.tensors:
                raise CompileError(
                    f"argument {p.var.name!r} of {call.callee} must be a tensor: a parameter "
                    "of the entry function or a pl.create_tensor intermediate",
                    call.span,
                )
            tensors.append(env.tensors[a.name])
        else:
            scalars.append(_value(a, env))
    key = (call.callee, tuple(tensors))  # the blocks of a dispatch share their effects
    if key not in env.effects:
        env.effects[key] = _effects(callee, tensors)
    reads, writes, atomic = env.effects[key]
    shared = {
        i: _conflict(t, reads, writes, atomic)
        for i, t in enumerate(tasks)
        if not _parallel_siblings(env.parallel_of[i], env.parallel)
    }
    ordered = {i for i, tensors_ in shared.items() if tensors_}
    gates = tuple((i, x) for i in sorted(ordered) if shared[i] <= atomic for x in sorted(shared[i]))
    # deps=[h]: after every task submitted so far under handle h (each iteration's, in a loop);
    # one that shares tensors with this task is ordered by the tensor rule above, as if implicit.
    deps = tuple(sorted(ordered.union(*(env.handles.get(h, ()) for h in call.deps))))  # none yet: no order
    if call.handle is not None:
        env.handles.setdefault(call.handle, []).append(len(tasks))
    env.parallel_of.append(tuple(env.parallel))
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
            gates,
            block,
            blocks,
            callee.kind is FunctionType.Group,
        )
    )


def _aliases(fn: Function, name: str) -> set[str]:
    """`name` and every variable that names the same tensor: store results and loop-carried
    values initialised from it."""
    names, grew = {name}, True
    while grew:
        size = len(names)
        for s in nodes_of(fn, For):
            for it, result in zip(s.iter_args, s.results):
                if isinstance(it.init, Var) and it.init.name in names:
                    names |= {it.var.name, result.name}
        for s in nodes_of(fn, Assign):  # type: ignore[assignment]
            v = s.value  # type: ignore[attr-defined]
            source = v.arg("output_tensor") if isinstance(v, Call) and v.op == "tile.store" else v
            if isinstance(source, Var) and source.name in names:
                names.add(s.var.name)
        grew = len(names) > size
    return names


def _atomic_only(fn: Function, name: str) -> bool:
    """True when every write of parameter `name` in `fn` is an atomic add (and it is not read)."""
    names = _aliases(fn, name)
    stores = [c for c in nodes_of(fn, Call) if any(isinstance(a, Var) and a.name in names for a in c.args)]
    if not stores or fn.external_source is not None:
        return False
    return all(
        c.op == "tile.store"
        and c.arg("output_tensor").name in names  # type: ignore[attr-defined]
        and c.arg("atomic") == Literal(AtomicType.Add)
        for c in stores
    )


def _effects(fn: Function, tensors: list[int]) -> tuple[frozenset[int], frozenset[int], frozenset[int]]:
    params = [p for p in fn.params if isinstance(p.var.type, TensorType)]
    reads = {t for p, t in zip(params, tensors) if p.direction in (Direction.In, Direction.InOut)}
    writes = {t for p, t in zip(params, tensors) if p.direction in (Direction.Out, Direction.InOut)}
    atomic = {t for p, t in zip(params, tensors) if t in writes and _atomic_only(fn, p.var.name)}
    return frozenset(reads), frozenset(writes), frozenset(atomic)


def _conflict(
    earlier: Task, reads: frozenset[int], writes: frozenset[int], atomic: frozenset[int]
) -> frozenset[int]:
    """The tensors that order a new task after `earlier` (empty: independent)."""
    shared = (earlier.writes & (reads | writes)) | (earlier.reads & writes)
    return shared - (earlier.atomic & atomic)


def _written_arg(call: FuncCall, program: Program, env: _Env) -> Var | None:
    """The tensor argument a call writes (`c = kernel(a, c)` names it)."""
    callee = program.get(call.callee)
    for p, a in zip(callee.params, call.args):
        if p.direction in (Direction.Out, Direction.InOut) and isinstance(a, Var) and a.name in env.tensors:
            return a
    return None


def _carry(names: tuple[Var, ...], values: tuple[Expr, ...], env: _Env) -> None:
    """Loop-carried tensors keep naming the buffer their value came from."""
    for var, value in zip(names, values):
        if isinstance(value, Var) and value.name in env.tensors:
            env.tensors[var.name] = env.tensors[value.name]
        elif isinstance(var.type, ScalarType):
            env.scalars[var.name] = _value(value, env)


def _parallel_siblings(earlier: tuple[tuple[int, int], ...], now: list[tuple[int, int]]) -> bool:
    """True when two tasks come from different iterations of one pl.parallel loop run, which
    the loop declares independent: no tensor dependency between them (deps= still orders)."""
    here = dict(now)
    return any(loop in here and here[loop] != it for loop, it in earlier)


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
    for s in body:
        if isinstance(s, (Eval, Assign)) and isinstance(s.value, FuncCall):
            _submit(s.value, program, env, tasks)
            out = _written_arg(s.value, program, env)
            if isinstance(s, Assign) and out is not None:
                env.tensors[s.var.name] = env.tensors[out.name]
        elif isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tensor.create":
            t = s.var.type
            env.tensors[s.var.name] = env.n_params + len(env.intermediates)
            env.intermediates.append(Intermediate(tuple(t.shape), _numpy_dtype(t.dtype)))  # type: ignore[attr-defined]
        elif isinstance(s, Assign) and isinstance(s.var.type, ScalarType):
            env.scalars[s.var.name] = _value(s.value, env)
        elif isinstance(s, Assign) and isinstance(s.value, Var) and s.value.name in env.tensors:
            env.tensors[s.var.name] = env.tensors[s.value.name]
        elif isinstance(s, For):
            _for(s, program, env, tasks)
        elif isinstance(s, If):
            _walk(s.then_body if _value(s.cond, env) else s.else_body, program, env, tasks)
        elif isinstance(s, (Return, Yield)):
            continue
        else:
            raise CompileError(f"{type(s).__name__} is not supported in orchestration code yet", s.span)


def _numpy_dtype(dtype: Any) -> str:
    names = {
        "FP32": "float32",
        "FP16": "float16",
        "BF16": "bfloat16",
        "INT32": "int32",
        "INT8": "int8",
        "INT16": "int16",
        "INT64": "int64",
        "UINT8": "uint8",
        "UINT32": "uint32",
        "BOOL": "bool",
    }
    return names[dtype.name]


def plan_orchestration(
    program: Program, entry: Function, scalar_args: dict[str, Any], args: tuple = ()
) -> Plan:
    """Tasks in submission order. ``scalar_args``: values of the entry's scalar parameters;
    ``args`` (the call's, positional) size the ``pl.dynamic`` dims of dynamic block counts.
    Tensor indices address the entry's tensor parameters, then the intermediates."""
    tensor_params = [p for p in entry.params if isinstance(p.var.type, TensorType)]
    used, dims = _dims_used(program), dynamic_dims(program, entry, args)
    if set(dims) != used:  # no sizes yet (a program read back from its folder): plan at the call
        return Plan([], [], {}, frozenset(used))
    env = _Env(scalars={**scalar_args, **dims}, n_params=len(tensor_params))
    env.tensors = {p.var.name: i for i, p in enumerate(tensor_params)}
    tasks: list[Task] = []
    _walk(entry.body, program, env, tasks)
    return Plan(tasks, env.intermediates, dims, frozenset(used))


def _dims_used(program: Program) -> set[str]:
    """The ``pl.dynamic`` dims that block counts of ``program`` read."""
    return {
        v.name
        for f in program.functions
        for c in nodes_of(f, FuncCall)
        if not isinstance(c.blocks, int)
        for v in nodes_of(c.blocks, Var)
    }


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
