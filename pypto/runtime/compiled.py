"""A compiled program and how it runs: the arguments checked against what it was compiled
for, the native task list (built once per compile), the launch (in process or isolated)
and the RunReport.

:class:`CompiledProgram` is made from a compile's ``Artifact`` (:mod:`pypto.compile`) and the
config of the runs it serves (:mod:`pypto.runtime.jit`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pypto import _native, knobs
from pypto._collector import collector_paused
from pypto.compile.artifact import Artifact
from pypto.errors import ArgumentError, ConfigError, ReadOnlyInputError
from pypto.frontend.specialize import bind_arguments, tensor_arg
from pypto.kernel_build import build_kernels
from pypto.kernel_build.cache_files import ensure_dir
from pypto.runtime.config import RunConfig, call_config
from pypto.runtime.device_tensor import ACTIVE, DISPATCHING, account, check_declared, launch_traffic
from pypto.runtime.isolate import run_isolated
from pypto.runtime.launch import name_tensors
from pypto.runtime.marshal import (
    as_array,
    check_no_overlap,
    scalar_slot,
    table_names,
    table_roots,
)
from pypto.runtime.scratch import KEPT, ScratchTable

if TYPE_CHECKING:
    from pypto.compile.plan import Plan, Task
    from pypto.ir.stmt import Param, Program
    from pypto.report.run_report import RunReport

# The frontend, the planner and the report are imported when first needed: a program from the
# program cache runs without loading them.

_PLANS_KEPT = 16  # plans of dynamic pl.spmd counts kept per program, one per size seen


MISS = object()  # a warm call's answer when the general path must take the call (runtime/warm.py)
_MANY_TASKS = 1024  # a report of this many tasks is built with the cycle collector held off


class CompiledProgram:
    """A compiled program as a run sees it: an ``Artifact`` (the compile's product) with the
    config it runs under and the folder its reports go to. ``run(*args)`` executes it and
    returns a RunReport; calling it runs in place like the kernel.

    Everything a warm call reads is a plain attribute, copied from the Artifact once here; the
    IR (``program``) and the launch ``plan`` are read from the Artifact when first used (a
    program from the program cache runs without unpickling them)."""

    def __init__(self, artifact: Artifact, config: RunConfig, output_dir: Path) -> None:
        self.artifact = artifact
        self.name = artifact.name
        self.output_dir = output_dir
        self.config = config
        self.platform = config.platform
        self.param_names = list(artifact.param_names)
        self.kernels = dict(artifact.kernels)  # hand-written kernels are rebuilt when edited
        self.outputs = artifact.outputs
        self.tensor_params = list(artifact.tensor_params)
        self.hints = list(artifact.hints)
        self.external = list(artifact.external)
        self.scalar_values = dict(artifact.params)  # the compiled scalar arguments
        self.fixed_signature = False  # a @pl.program: arguments are checked against its types
        # Whether the task list depends on the call's sizes (a pl.spmd of dynamic dims) or on
        # its inputs' values (pl.read in orchestration): then each call may plan again.
        self.dynamic_plan = artifact.launch.dynamic
        self.cube_kernels = list(artifact.launch.cube_kernels)
        # Seeded from the Artifact; computed from the new plan when a call plans again.
        self.__dict__.update(
            launch_specs=list(artifact.launch.specs), intermediates=list(artifact.launch.intermediates)
        )

    # Properties, not __getattr__: a class with __getattr__ loses CPython's fast attribute
    # reads, which every warm call makes dozens of.
    @property
    def program(self) -> Program:
        """The lowered IR, read from the Artifact on first use."""
        return self.artifact.program.get()

    @property
    def plan(self) -> Plan:
        """The launch plan in use: the Artifact's, until a call of other sizes plans again."""
        plan = self.__dict__.get("_plan")
        return self.artifact.plan.get() if plan is None else plan

    @plan.setter
    def plan(self, plan: Plan) -> None:
        self.__dict__["_plan"] = plan

    @property
    def last_report(self) -> RunReport | None:
        """The RunReport of the latest call (None before one). A call leaves a builder here,
        as a ``@pl.jit`` call does, and the first read builds it: a decode's 16,448 task
        reports, and the collector's pass over them, were a tenth of its call."""
        report = self.__dict__.get("_last_report")
        if callable(report):
            report = self.__dict__["_last_report"] = report()
        return report

    @last_report.setter
    def last_report(self, value: RunReport | Callable[[], RunReport] | None) -> None:
        self.__dict__["_last_report"] = value

    def __repr__(self) -> str:
        return f"<CompiledProgram {self.name} for {self.platform} in {self.output_dir}>"

    # As upstream's: a compile reads as the folder it wrote (``os.path.join(compiled, "kernels")``).
    def __str__(self) -> str:
        return str(self.output_dir)

    def __fspath__(self) -> str:
        return str(self.output_dir)

    @classmethod
    def from_dir(cls, output_dir: str | Path) -> CompiledProgram:
        """The compiled program kept in a compile's ``output_dir`` (kernels rebuilt if needed)."""
        from pypto.runtime.entry import from_dir

        return from_dir(output_dir)

    def __call__(self, *args: Any, config: Any = None, **kwargs: Any) -> Any:
        """Runs in place, like a ``@pl.jit`` call: returns the outputs, keeps ``last_report``.
        ``config`` (upstream passes one on every call): see ``_check_call_config``."""
        warm = self.__dict__.get("_warm")
        if warm is not None and warm.given is config and not kwargs:  # the same config object
            outs = warm.call(self, args)
            if outs is not MISS:
                return outs
        given = config
        if config is not None:
            config = call_config(config)
            self._check_call_config(config)
        trace = self.config.trace if config is None else config.trace
        args = self.positional(args, kwargs)
        args, made = self._with_outputs(args)
        dfx = (config or self.config).dfx
        snapshot = dfx.before_launch(self, args) if dfx.any() else None
        with collector_paused(self.dynamic_plan):  # planned again each call (see _collector)
            results = self.execute(args, trace, config)
            traffic = self.account_worker(args)
            if trace or snapshot is not None:  # the trace files are written now, with the report
                self.last_report = self.launch_report(results, trace, traffic)
            else:  # built when first read, for the task list this call ran
                self.last_report = functools.partial(
                    self.launch_report, results, False, traffic, self.launch_specs
                )
                if not made:  # the next call like this one takes the fast path
                    self._keep_warm(given, config or self.config, args, kwargs)
        if snapshot is not None:
            dfx.after_launch(self, args, self.last_report, snapshot)
        outs = made or self.returned
        if len(outs) == 1:
            return args[outs[0]]
        return tuple(args[i] for i in outs) if outs else None

    def _keep_warm(self, given: Any, config: RunConfig, args: tuple, kwargs: dict) -> None:
        """This call's fast path kept for the next one (runtime/warm.py), if it can have one."""
        from pypto.runtime.warm import WarmCall  # it builds on this module

        self.__dict__["_warm"] = WarmCall.of(None, self, given, config, args, kwargs)

    def _check_call_config(self, config: RunConfig) -> None:
        """A call's config runs the compiled kernels on the compiled platform table: one that
        would need others (another platform, planner, cost profile or hardware override) is
        refused, naming what differs. Its run options (trace, seed, limits, isolation) are
        honoured; its compile-time ones (pass dumps, diagnostics) were used at the compile."""
        if config.compile_key()[:2] != self.config.compile_key()[:2]:
            raise ConfigError(
                f"{self.name} was compiled for {self.config.platform!r} / {self.config.planner.name}; "
                f"a call may not change them (compile again for {config.platform!r} / "
                f"{config.planner.name})"
            )
        for name in ("cost_profile", "platform_overrides"):
            mine, theirs = getattr(self.config, name), getattr(config, name)
            if theirs != mine:
                raise ConfigError(
                    f"{self.name} was compiled with {name}={mine!r}; a call's config may not "
                    f"change it (compile again with {name}={theirs!r})"
                )

    def _with_outputs(self, args: tuple) -> tuple[tuple, tuple[int, ...]]:
        """Upstream's return style: called with every argument but the ``pl.Out`` tensors, the
        outputs are made here — zeroed, of the declared shapes, torch tensors when an input is
        one — and returned; their indices (none when every argument was given)."""
        if len(args) == len(self.param_names):  # the common case: the program is not read
            return args, ()
        from pypto.ir.enums import Direction

        params = self.program.entry.params
        made = tuple(i for i, p in enumerate(params) if p.direction is Direction.Out)
        if not made or len(args) != len(params) - len(made):
            outs = ", ".join(params[i].var.name for i in made)
            raise ArgumentError(
                f"{self.name} takes {len(params)} arguments ({', '.join(self.param_names)})"
                + (f", or {len(params) - len(made)} without its outputs ({outs})" if made else "")
                + f"; got {len(args)}"
            )
        torch_like = any(type(a).__module__.startswith("torch") for a in args)
        given = iter(args)
        full = [_new_output(p, torch_like) if i in made else next(given) for i, p in enumerate(params)]
        return tuple(full), made

    @property
    def tasks(self) -> list[Task]:
        return self.plan.tasks

    def _platform(self) -> tuple:
        cached = self.__dict__.get("_plat")
        if cached is None:  # resolved once: the config of a compiled program never changes
            plat = self.config.resolved_platform()
            cached = self.__dict__["_plat"] = (plat, plat.to_native())
        return cached

    def _array(self, args: tuple, i: int) -> tuple:
        try:
            if type(args[i]).__name__ == "DeviceTensor":
                check_declared(args[i], self.program.entry.params[i], self.name)
            return as_array(args[i], name=self.param_names[i], output=i in self.outputs)
        except ArgumentError as e:  # point at the parameter in the user's kernel
            raise type(e)(e.message, _param_span(self.program, i)) from None

    def refresh_external(self) -> None:
        """Hand-written kernels are rebuilt when their source or a header they include changed
        (a cache lookup when nothing did)."""
        if self.external:
            paths = build_kernels(self.external, platform=self.platform, output_dir=self.output_dir)
            fresh = {src.name: path for src, path in zip(self.external, paths)}
            if any(self.kernels.get(k) != v for k, v in fresh.items()):
                self.kernels.update(fresh)
                self.__dict__.pop("_native_cache", None)  # rebuilt with the new paths

    def run(self, *args: Any, trace: bool | None = None, **kwargs: Any) -> RunReport:
        """Runs the plan; ``trace`` (default: the config's) keeps records and writes traces."""
        trace = self.config.trace if trace is None else trace
        args = self.positional(args, kwargs)
        self.check_signature(args)
        with collector_paused(self.dynamic_plan):
            results = self.execute(args, trace)
            return self.launch_report(results, trace, self.account_worker(args))

    def launch_report(
        self, results: Any, trace: bool, traffic: tuple[int, int], specs: list[tuple] | None = None
    ) -> RunReport:
        """``report`` with the launch's host -> device and device -> host bytes in its ``memory``
        (``specs``: the launch specs of the task list that ran, when it may since have changed)."""
        report = self.report(results, trace, specs)
        report.memory["host_to_device_bytes"], report.memory["device_to_host_bytes"] = traffic
        return report

    def account_worker(self, args: tuple) -> tuple[int, int]:
        """The launch's host <-> device bytes, added to the ChipWorker it ran on, if any."""
        traffic = launch_traffic(args, self.tensor_params, self.outputs)
        if DISPATCHING.get() is not None or ACTIVE.get():
            account(*traffic)
        return traffic

    def check_signature(self, args: tuple) -> None:
        """``run`` takes the arguments the program was compiled for: each tensor of the compiled
        shape and dtype, each scalar of the compiled value (scalars are compile-time constants)."""
        if len(args) != len(self.param_names):
            return  # execute names the count
        from pypto.ir.types import TensorType  # the IR's: loaded with the program

        for i, p in enumerate(self.program.entry.params):
            if isinstance(p.var.type, TensorType):
                if not isinstance(args[i], np.ndarray) and not type(args[i]).__module__.startswith("torch"):
                    continue  # as_array names the kind
                got = tensor_arg(args[i], self.param_names[i], self.name, None, p.span)
                if got != p.var.type:
                    raise ArgumentError(
                        f"argument `{self.param_names[i]}` is {list(got.shape)} {got.dtype}, but this "
                        f"program was compiled for {list(p.var.type.shape)} {p.var.type.dtype}; compile it "
                        "for these arguments (kernel.compile(...)) or call the kernel directly",
                        p.span,
                    )
            elif (
                self.param_names[i] in self.scalar_values
                and args[i] != self.scalar_values[self.param_names[i]]
            ):
                raise ArgumentError(
                    f"argument `{self.param_names[i]}` is {args[i]!r}, but this program was compiled with "
                    f"{self.scalar_values[self.param_names[i]]!r} (scalars are compile-time constants)",
                    p.span,
                )

    def positional(self, args: tuple, kwargs: dict) -> tuple:
        """The arguments in parameter order (keywords placed by name)."""
        if not kwargs:
            return args

        return tuple(bind_arguments(self.name, self.param_names, args, kwargs, None))

    def execute(self, args: tuple, trace: bool, config: RunConfig | None = None) -> Any:
        """Runs the plan; the native results (``_native.RunResults``, or their dict from an
        isolated run), for ``report``. ``config`` (default: the compile's) decides isolation
        and its timeout."""
        arrays, scratch = self._marshal(args)
        runner, extra = self._native_tasks()
        config = config or self.config
        options = (trace, True, config.seed, config.max_cycles or 0, config.max_instructions or 0)
        knobs.SIM_THREADS.get()  # the native runtime reads it; a bad value is refused here
        try:
            if not config.isolated(bool(self.external)):
                return runner.run(arrays, *options)

            written = sorted(self._tensor_table[1])
            label = self.name + (
                f" (hand-written: {', '.join(s.name for s in self.external)})" if self.external else ""
            )
            return run_isolated(
                lambda tensors: runner.run(tensors, *options).to_dict(),
                arrays, written, kernel=label, timeout_s=config.timeout_s,
            )  # fmt: skip
        except ReadOnlyInputError as e:
            raise name_tensors(e, table_names(self._tensor_table[0], self.intermediates, extra)) from None
        finally:
            self.keep_scratch(scratch)

    def marshal(self, args: tuple) -> list[tuple[np.ndarray, int]]:
        """The run's tensor table: (array, flagged dtype code) per tensor argument (checked),
        then the scratch tensors and views the plan adds, then the read-only duplicates. The
        scratch tensors are the caller's for good (a later run makes its own)."""
        return self._marshal(args)[0]

    def take_scratch(self) -> ScratchTable:
        """The table's part after the arguments for this plan (``ScratchTable``): the one the
        last run kept, or a new one. Taken for one run: give it back with ``keep_scratch``."""
        kept = self.__dict__.pop("_scratch", None)
        if kept is not None:
            KEPT.take(kept)  # then checked: it may have been let go of before
        intermediates, extra = self.intermediates, self._native_tasks()[1]
        if kept is not None and kept.fits(intermediates, extra):
            return kept
        return ScratchTable(intermediates, extra, len(self.tensor_params), kept)

    def keep_scratch(self, scratch: ScratchTable) -> None:
        """Keeps ``scratch`` for the next run, its run over (the run's results hold none of it),
        within the process's budget for kept tables (``scratch.KEPT``)."""
        self.__dict__["_scratch"] = scratch
        KEPT.keep(scratch)

    def _marshal(self, args: tuple) -> tuple[list[tuple[np.ndarray, int]], ScratchTable]:
        if self.fixed_signature:
            from pypto.runtime.entry import check_signature

            check_signature(self.program, args)
        if len(args) != len(self.param_names):
            raise ArgumentError(
                f"{self.name} takes {len(self.param_names)} arguments "
                f"({', '.join(self.param_names)}), got {len(args)}"
            )
        self._replan(args)
        arrays = [self._array(args, i) for i in self.tensor_params]
        if len(arrays) > 1 and self.outputs:
            try:
                check_no_overlap(arrays, *self._tensor_table)
            except ArgumentError as e:
                raise ArgumentError(e.message, self.program.span) from None
        scratch = self.take_scratch()
        return scratch.table(arrays), scratch

    def _replan(self, args: tuple) -> None:
        """A ``pl.spmd`` count of ``pl.dynamic`` dims: switch to the plan of this call's sizes
        (planned once per size; the program and its kernels stay, only the task list changes).
        A task list that follows the inputs' values is made again when they differ where the
        last plan read them (``InputsRead``)."""
        if not self.dynamic_plan:
            return
        from pypto.compile.plan import PlanFacts, dynamic_dims, plan_orchestration

        if self.plan.data:  # the task list follows the inputs' values: made again for each call,
            read = self.plan.read  # unless they hold what the last plan read (the same tasks)
            if read is not None and read.hold_in(args):
                return
        facts = self.__dict__.get("_plan_facts")
        if facts is None:  # what every plan of the program reads of its kernels, kept
            facts = self.__dict__["_plan_facts"] = PlanFacts(self.program)
        if self.plan.data:
            self.plan = plan_orchestration(self.program, self.program.entry, self.scalar_values, args, facts)
            for cached in ("_native_cache", "launch_specs", "intermediates"):
                self.__dict__.pop(cached, None)
            return
        dims = dynamic_dims(self.program, self.program.entry, args, set(self.plan.dynamic))
        if dims == self.plan.dims:
            return
        plans = self.__dict__.setdefault("_plans", {})
        key = tuple(sorted(dims.items()))
        if key not in plans:
            if len(plans) >= _PLANS_KEPT:
                plans.pop(next(iter(plans)))
            plans[key] = plan_orchestration(self.program, self.program.entry, self.scalar_values, args, facts)
        self.plan = plans[key]
        for cached in ("_native_cache", "launch_specs", "intermediates"):
            self.__dict__.pop(cached, None)

    def load(self) -> None:
        """Loads the kernels into the native task runner now, as the first call would. A
        program whose task list depends on the call (``dynamic_plan``) loads at its calls."""
        if not self.dynamic_plan:
            self._native_tasks()

    def _native_tasks(self) -> tuple[_native.TaskRunner, list[int]]:
        """The native task runner (built once per task list: its kernels loaded, its cores kept
        between runs) and the table entries duplicated as read-only views: a kernel's input
        that is written elsewhere in the program (an output or an intermediate) is passed to
        that kernel flagged as an input."""
        cached = self.__dict__.get("_native_cache")
        if cached is not None:
            return cached
        n_params = len(self.tensor_params)
        n_table = n_params + len(self.intermediates)
        writable = {k for k, i in enumerate(self.tensor_params) if i in self.outputs}
        writable |= {n_params + k for k, e in enumerate(self.intermediates) if e[0] == "new"}
        root = table_roots(self.intermediates, n_params)
        extra: list[int] = []
        tasks: list[_native.Task] = []
        cores = _native.CoreKind.__members__  # a new dict at each read
        kinds = {kind: cores[kind] for kind in ("aiv", "aic", "cluster")}
        paths = {name: str(path) for name, path in self.kernels.items()}
        # Positional: pybind11 matches keywords by name for every argument of every task.
        for spec in self.launch_specs:
            kernel, tensors, scalars, core_kind, deps, gates, block_idx, block_num, only_read, early = spec
            indices = tensors
            if not only_read.isdisjoint(writable):  # a tensor to pass read-only: a duplicate entry
                indices = []
                for j in tensors:
                    if root[j] in only_read and root[j] in writable:
                        extra.append(j)
                        j = n_table + len(extra) - 1
                    indices.append(j)
            slots = [scalar_slot(v, name=kernel) for v in scalars]
            tasks.append(
                _native.Task(
                    paths[kernel], kernel, indices, slots, kinds[core_kind], deps, gates,
                    block_idx, block_num, early,
                )
            )  # fmt: skip
        runner = _native.TaskRunner(tasks, self._platform()[1])
        cached = self.__dict__["_native_cache"] = (runner, extra)
        return cached

    @functools.cached_property
    def _tensor_table(self) -> tuple[list[str], set[int]]:
        """The tensor parameters' names, and the indices of the ones a kernel may write."""
        names = [self.param_names[i] for i in self.tensor_params]
        return names, {k for k, i in enumerate(self.tensor_params) if i in self.outputs}

    @functools.cached_property
    def launch_specs(self) -> list[tuple]:
        """Per task, as plain data (``Plan.launch_specs``)."""
        return self.plan.launch_specs()

    @functools.cached_property
    def intermediates(self) -> list[tuple]:
        """The table entries after the parameters, as plain data (``Plan.table_entries``)."""
        return self.plan.table_entries()

    def report(self, results: Any, trace: bool, specs: list[tuple] | None = None) -> RunReport:
        """The RunReport of ``execute``'s results (and, when tracing, the trace files)."""
        from pypto.report.run_report import scheduled_report

        specs = self.launch_specs if specs is None else specs
        plat = self._platform()[0]
        # A report of thousands of tasks is some ten objects a task, none in a cycle: made with
        # the collector held off, whose passes over a large heap (the plan's objects) took up to
        # two thirds of a decode's report (0.11-0.33 -> 0.1 s for 16,448 tasks).
        with collector_paused(len(specs) >= _MANY_TASKS):
            if not isinstance(results, dict):
                results = results.to_dict()
            report = scheduled_report(plat.name, plat.clock_hz, results)
        if len(report.tasks) == len(specs):  # one result per planned task, in order
            for t, planned in zip(report.tasks, specs):
                t.deps = planned[4]
        if trace:  # records are kept only then: recording off costs nothing
            from pypto.report.run_files import write_run_files

            ensure_dir(self.output_dir / "trace")  # unusable: a CacheDirError naming it
            write_run_files(
                report,
                self.output_dir,
                cube_kernels=self.cube_kernels,
                platform=plat,
                json_copy=self.config.trace_json,
            )
            if self.config.timeline:
                report.timeline_html(self.output_dir / "report" / "timeline.html")
        return report

    @functools.cached_property
    def returned(self) -> tuple[int, ...]:
        """Indices of the arguments a call returns: the outputs, in parameter order."""
        return tuple(sorted(self.outputs))


def _new_output(param: Param, torch_like: bool) -> Any:
    """A zeroed output for ``param``, which must declare its sizes."""
    from pypto.ir.dtypes import numpy_dtype
    from pypto.ir.types import TensorType, format_type

    t = param.var.type
    if not isinstance(t, TensorType) or not all(isinstance(d, int) for d in t.shape):
        raise ArgumentError(
            f"`{param.var.name}` is {format_type(t)}: its sizes are known only from the array passed, "
            "so pass it (a call may leave out only the outputs whose sizes the signature declares)",
            param.span,
        )
    shape, dtype = tuple(int(d) for d in t.shape if isinstance(d, int)), numpy_dtype(t.dtype)
    if torch_like:
        import torch

        return torch.zeros(shape, dtype=getattr(torch, dtype.name))
    return np.zeros(shape, dtype)


def _param_span(program: Program, i: int):
    return program.entry.params[i].span
