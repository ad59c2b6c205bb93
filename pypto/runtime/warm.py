"""The warm call's fast path: a kernel called again with the same config object and arguments
of the same kinds, shapes and dtypes runs without the general call's layers.

``call_jit`` keeps one :class:`WarmCall` per kernel (in its compiled-program cache, so whatever
empties that cache drops it too) for its latest plain call, and a ``CompiledProgram`` one for
its own latest plain call (upstream's ``compiled(*tensors)`` on numpy arrays): no trace, no
DFX, not isolated, no hand-written kernels, a task list fixed at compile time. The record holds
everything the general path would compute again (the native runner, the dtype codes, the
traffic), so a call only checks its arguments and runs; for a program without scratch tensors
the native run checks the arrays itself (a ``WarmSpec``: type, shape, dtype, flags, no array
twice), where reading an array's fields costs nanoseconds instead of a Python attribute lookup
each; the spec also holds the run's options, converted once, so a call passes the runner two
arguments. CPU torch tensors (upstream's callers pass them) take the path too: each is viewed
as numpy, as the general path views it (an output's version counter bumped), and their bytes
must not overlap (an input that requires grad, a model's weight, is detached as the general
path detaches it). Anything unusual — another shape, a view, a non-contiguous or read-only
output, an output that requires grad, a changed module constant — is a miss, and the general
path (which names every problem) takes the call.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import numpy as np

from pypto import _native
from pypto.errors import ReadOnlyInputError
from pypto.frontend import captured
from pypto.frontend.specialize import dynamic_axes
from pypto.runtime.compiled import MISS, CompiledProgram
from pypto.runtime.config import RunConfig
from pypto.runtime.device_tensor import ACTIVE, DISPATCHING, account, launch_traffic
from pypto.runtime.dtypes import INPUT, code_of, flagged
from pypto.runtime.launch import name_tensors
from pypto.runtime.marshal import table_names, torch_code, torch_module, torch_view

# numpy's array flag bits (ndarray.flags.num; NPY_ARRAY_* in numpy's C API): one integer read
# answers what three flag attributes would.
_C_CONTIGUOUS, _OWNDATA, _WRITEABLE = 0x0001, 0x0004, 0x0400

# os.environ's own dict and PYPTO_SIM_THREADS as it keys it: the native run reads the variable,
# and the general path refuses a bad value; a value seen valid once needs no parsing again.
_ENV: Any = getattr(os.environ, "_data", None)
_SIM_THREADS = os.environ.encodekey("PYPTO_SIM_THREADS") if _ENV is not None else None


class WarmCall:
    """One specialisation of one kernel under one config, ready to run again."""

    __slots__ = (
        "given", "compiled", "nargs", "tensors", "scalars", "intermediates", "extra",
        "run", "run_args", "spec", "options", "traffic", "returned", "sim_threads", "guards",
        "report", "torch",
    )  # fmt: skip

    def __init__(
        self,
        compiled: CompiledProgram,
        given: RunConfig | None,
        config: RunConfig,
        args: tuple,
        guards: tuple | None = None,
        torch: tuple[tuple[int, bool], ...] = (),
    ) -> None:
        self.given = given  # the call's config= (None: the defaults, which never change)
        self.compiled = compiled
        self.report = compiled.launch_report  # bound once: the report builder of every call
        # The kernel's captured-value guards: set by the compile that filled the kernel's empty
        # program cache, which this record lives in, so they stay the kernel's while it does.
        self.guards = guards
        self.nargs = len(args)
        outputs = compiled.outputs
        # (argument index, is an output) of each torch tensor: viewed as numpy at each call
        self.torch = torch
        tensors_given = args  # the torch tensors themselves: their dtype codes
        args = _viewed(args, torch) if torch else args
        torch_args = {i for i, _ in torch}
        mine = 0 if torch else _OWNDATA  # a torch tensor's view never owns its bytes: checked apart
        # (index, shape, dtype, dtype code as the run takes it, flag bits it must have)
        self.tensors = tuple(
            (
                i,
                args[i].shape,
                args[i].dtype,
                _code(
                    torch_code(tensors_given[i], args[i]) if i in torch_args else code_of(args[i].dtype),
                    i in outputs,
                ),
                _C_CONTIGUOUS | mine | (_WRITEABLE if i in outputs else 0),
            )
            for i in compiled.tensor_params
        )
        tensor_set = set(compiled.tensor_params)
        self.scalars = tuple((i, type(a), a) for i, a in enumerate(args) if i not in tensor_set)
        self.intermediates = tuple(compiled.intermediates)
        runner, self.extra = compiled._native_tasks()
        self.run = runner.run
        # Without scratch tensors the table is the arguments' arrays (and read-only repeats of
        # some): the native run checks and describes them itself (WarmSpec), in a function of
        # the call's arguments bound to the runner and the spec.
        self.options = (False, True, config.seed, config.max_cycles or 0, config.max_instructions or 0)
        self.spec = None if self.intermediates else _native_spec(self.tensors, self.extra, self.options)
        self.run_args = None if self.spec is None else runner.bind(self.spec)
        self.traffic = launch_traffic(args, compiled.tensor_params, outputs)  # fixed by the shapes
        self.returned = compiled.returned
        self.sim_threads = _ENV.get(_SIM_THREADS) if _ENV is not None else None

    @staticmethod
    def of(
        jf: Any,
        compiled: CompiledProgram,
        given: RunConfig | None,
        config: RunConfig,
        args: tuple,
        kwargs: dict,
    ) -> WarmCall | None:
        """The fast path of this call, or None when it needs the general one every time.
        ``jf``: the ``@pl.jit`` kernel called, or None for a call of ``compiled`` itself (a
        ``@pl.program``'s, upstream's ``compiled(*tensors)``: it folds in no module values, and
        a call whose shapes differ from the first's is a miss, so ``pl.dynamic`` dims need no
        care here)."""
        if kwargs or _ENV is None or not _plain_config(config) or not _plain_program(compiled):
            return None
        if config.isolated(bool(compiled.external)):
            return None
        if jf is not None and (compiled.fixed_signature or dynamic_axes(jf)):
            return None
        tensor_set = set(compiled.tensor_params)
        torch = []
        for i, a in enumerate(args):
            if i in tensor_set:
                if type(a) is np.ndarray:
                    if not a.dtype.isnative:
                        return None
                elif (
                    type(a).__module__.startswith("torch")
                    and _torch_view(a, i in compiled.outputs) is not None
                ):
                    torch.append((i, i in compiled.outputs))
                else:
                    return None
            elif type(a) not in (int, float, bool):
                return None
        guards = jf.__dict__.get("_pypto_captured") if jf is not None else None
        return WarmCall(compiled, given, config, args, guards, tuple(torch))

    def call(self, jf: Any, args: tuple) -> Any:
        """Runs the call and returns what the kernel returns; MISS when it cannot. ``jf``: what
        was called (a ``@pl.jit`` kernel or the compiled program), which keeps the report. (A
        method called by name: calling the instance would go through its type's call slot, a
        few hundred nanoseconds more.)"""
        if len(args) != self.nargs:
            return MISS
        for i, kind, value in self.scalars:
            if type(args[i]) is not kind or args[i] != value:
                return MISS
        guards = self.guards
        if guards and captured.changed(guards) is not None:
            return MISS
        if _ENV.get(_SIM_THREADS) != self.sim_threads:
            return MISS
        given = args
        if self.torch:
            viewed = _torch_args(args, self.torch, self.tensors)
            if viewed is None:
                return MISS
            args = viewed
        try:
            results = self._run(args) if self.run_args is None else self.run_args(args)
        except ReadOnlyInputError as e:
            compiled = self.compiled
            raise name_tensors(
                e, table_names(compiled._tensor_table[0], compiled.intermediates, self.extra)
            ) from None
        if results is None:
            return MISS
        if DISPATCHING.get() is not None or ACTIVE.get():
            account(*self.traffic)
        jf._last_report = functools.partial(self.report, results, False, self.traffic)
        outs = self.returned
        if len(outs) == 1:
            return given[outs[0]]
        return tuple(given[i] for i in outs) if outs else None

    def _run(self, args: tuple) -> Any:
        """The run of a program with scratch tensors: its table made and checked here (None:
        a miss)."""
        table = []
        for i, shape, dtype, code, need in self.tensors:
            a = args[i]
            # A view (it may overlap another argument), a non-contiguous array or a read-only
            # output: the general path checks it and names any problem.
            if (
                type(a) is not np.ndarray
                or a.shape != shape
                or a.dtype != dtype
                or a.flags.num & need != need
            ):
                return None
            table.append((a, code))
        if not _distinct(table):
            return None  # one array passed twice: the general path checks the overlap
        compiled = self.compiled
        scratch = compiled.take_scratch()  # the scratch tensors at their initial values
        try:
            return self.run(scratch.table(table), *self.options)
        finally:
            compiled.keep_scratch(scratch)


def _native_spec(tensors: tuple, extra: list[int], options: tuple) -> Any:
    """The WarmSpec of a table of the tensor arguments then read-only repeats of some, run with
    ``options`` (TaskRunner.run's, after the table)."""
    entries = [(i, shape, dtype, code, need) for i, shape, dtype, code, need in tensors]
    for j in extra:  # checked as the entry it repeats
        i, shape, dtype, code, _ = tensors[j]
        entries.append((i, shape, dtype, flagged(code, INPUT), -1))
    return _native.WarmSpec(entries, *options)


def _plain_config(config: RunConfig) -> bool:
    """A config whose compile key cannot change in place and that asks for nothing per call."""
    return not (
        config.trace
        or config.any_dfx_enabled()
        or config.platform_overrides
        or isinstance(config.disabled_diagnostics, set)
    )


def _plain_program(compiled: CompiledProgram) -> bool:
    return not (compiled.external or compiled.dynamic_plan)


def _distinct(table: list[tuple[np.ndarray, int]]) -> bool:
    if len(table) == 2:
        return table[0][0] is not table[1][0]
    return len({id(a) for a, _ in table}) == len(table)


def _code(code: int, output: bool) -> int:
    """A dtype code as the run takes it: flagged an input unless the kernel may write it."""
    return code if output else flagged(code, INPUT)


def _torch_view(t: Any, output: bool) -> np.ndarray | None:
    """The numpy view of a CPU torch tensor or parameter, as the general path makes it (a bf16
    one as int16; an input that requires grad detached, as a model's weights do); None for
    anything it would treat apart (an output that requires grad, a lazy negation or
    conjugation, another device or layout, another subclass)."""
    torch = torch_module()
    kind = type(t)
    if (
        (kind is not torch.Tensor and kind is not torch.nn.Parameter)
        or not t.is_cpu
        or t.layout is not torch.strided
        or t.is_neg()
        or t.is_conj()
    ):
        return None
    if t.requires_grad:
        if output:
            return None
        t = t.detach()
    try:
        return torch_view(t)
    except TypeError:  # a dtype numpy has not
        return None


def _viewed(args: tuple, torch: tuple[tuple[int, bool], ...]) -> tuple:
    """``args`` with each torch tensor replaced by its numpy view (no version bump)."""
    out = list(args)
    for i, output in torch:
        out[i] = _torch_view(args[i], output)
    return tuple(out)


def _torch_args(args: tuple, torch: tuple[tuple[int, bool], ...], tensors: tuple) -> tuple | None:
    """A call's arguments with its torch tensors viewed as numpy, each output's version counter
    bumped as an in-place op's is; None (a miss) when one cannot be viewed so or two tensor
    arguments' bytes overlap (a view of another, or a tensor made from an array passed too:
    the general path checks them). ``tensors``: the record's tensor entries."""
    out = list(args)
    for i, output in torch:
        view = _torch_view(args[i], output)
        if view is None:
            return None
        out[i] = view
    spans = []
    for entry in tensors:
        i = entry[0]
        a = args[i]
        if type(a) is np.ndarray:
            start = a.ctypes.data
        elif type(out[i]) is np.ndarray:  # a torch tensor's view: its pointer read from torch
            start = a.data_ptr()
        else:
            return None
        spans.append((start, start + out[i].nbytes))
    if len(spans) == 2:
        (a0, a1), (b0, b1) = spans
        if a0 < b1 and b0 < a1:
            return None
    elif len(spans) > 2:
        spans.sort()
        if any(spans[k][1] > spans[k + 1][0] for k in range(len(spans) - 1)):
            return None
    bump = _increment_version()
    for i, output in torch:
        if output:
            bump(args[i])
    return tuple(out)


@functools.cache
def _increment_version() -> Any:
    """torch's bump of a tensor's version counter (imported once: not on every call)."""
    from torch.autograd.graph import increment_version

    return increment_version
