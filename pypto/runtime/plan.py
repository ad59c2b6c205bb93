"""The launch plan: the orchestration function evaluated once per specialisation into the
list of kernel tasks it submits, each with its tensor arguments (indices into the call's
tensor parameters) and its scalar values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pypto.errors import CompileError
from pypto.ir.expr import BinOp, Call, Const, Expr, FuncCall, UnaryOp, Var
from pypto.ir.stmt import Assign, Eval, For, Function, If, Program, Return, Stmt
from pypto.ir.types import ScalarType, TensorType


@dataclass(frozen=True)
class Task:
    kernel: str
    tensors: tuple[int, ...]
    scalars: tuple[int | float, ...]


@dataclass(frozen=True)
class Intermediate:
    """A ``pl.create_tensor`` buffer: allocated (zeroed) for each run, after the parameters."""

    shape: tuple[int, ...]
    dtype: str  # numpy dtype name


@dataclass
class Plan:
    tasks: list[Task]
    intermediates: list[Intermediate]


@dataclass
class _Env:
    scalars: dict[str, int | float | bool] = field(default_factory=dict)
    tensors: dict[str, int] = field(default_factory=dict)  # var name -> tensor table index
    intermediates: list[Intermediate] = field(default_factory=list)
    n_params: int = 0


_ARITH = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "//": lambda a, b: a // b,
    "%": lambda a, b: a % b,
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
        return _ARITH[e.op](_value(e.lhs, env), _value(e.rhs, env))
    if isinstance(e, UnaryOp):
        v = _value(e.operand, env)
        return (not v) if e.op == "not" else -v
    raise CompileError("orchestration value is not known at compile time", e.span)


def _submit(call: FuncCall, program: Program, env: _Env, tasks: list[Task]) -> None:
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
    tasks.append(Task(call.callee, tuple(tensors), tuple(scalars)))


def _walk(body: tuple[Stmt, ...], program: Program, env: _Env, tasks: list[Task]) -> None:
    for s in body:
        if isinstance(s, (Eval, Assign)) and isinstance(s.value, FuncCall):
            _submit(s.value, program, env, tasks)
            if isinstance(s, Assign) and isinstance(s.var.type, TensorType):
                out = next((a for a in s.value.args if isinstance(a, Var) and a.name in env.tensors), None)
                if out is not None:  # `c = kernel(a, c)` names the written tensor
                    env.tensors[s.var.name] = env.tensors[out.name]
        elif isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tensor.create":
            t = s.var.type
            env.tensors[s.var.name] = env.n_params + len(env.intermediates)
            env.intermediates.append(Intermediate(tuple(t.shape), _numpy_dtype(t.dtype)))
        elif isinstance(s, Assign) and isinstance(s.var.type, ScalarType):
            env.scalars[s.var.name] = _value(s.value, env)
        elif isinstance(s, Assign) and isinstance(s.value, Var) and s.value.name in env.tensors:
            env.tensors[s.var.name] = env.tensors[s.value.name]
        elif isinstance(s, For):
            for i in range(_value(s.start, env), _value(s.stop, env), _value(s.step, env)):
                env.scalars[s.var.name] = i
                _walk(s.body, program, env, tasks)
        elif isinstance(s, If):
            _walk(s.then_body if _value(s.cond, env) else s.else_body, program, env, tasks)
        elif isinstance(s, Return):
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
        "BOOL": "bool",
    }
    return names[dtype.name]


def plan_orchestration(program: Program, entry: Function, scalar_args: dict[str, Any]) -> Plan:
    """Tasks in submission order. ``scalar_args``: values of the entry's scalar parameters.
    Tensor indices address the entry's tensor parameters, then the intermediates."""
    tensor_params = [p for p in entry.params if isinstance(p.var.type, TensorType)]
    env = _Env(scalars=dict(scalar_args), n_params=len(tensor_params))
    env.tensors = {p.var.name: i for i, p in enumerate(tensor_params)}
    tasks: list[Task] = []
    _walk(entry.body, program, env, tasks)
    return Plan(tasks, env.intermediates)
