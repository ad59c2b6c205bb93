"""``Artifact``: the one product of a compile, and what every other form of it is made from.

The kernel object keeps Artifacts in memory; the program cache keeps one as bytes and the
output folder as files (:mod:`pypto.compile.codecs`); ``CompiledProgram`` is the public face a
run uses, made from an Artifact and a run's options.

An Artifact holds nothing of a run and nothing of a folder: two runs with different trace,
timeline, cost profile or output folder share it.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pypto._light import Record
from pypto.compile.options import CompileOptions
from pypto.kernel_build import KernelSource

if TYPE_CHECKING:
    from pypto.compile.plan import Plan
    from pypto.ir.stmt import Program

T = TypeVar("T")

DUMP_FOLDER = "passes_dump"  # where a folder holds the Artifact's pass dumps


class Lazy(Generic[T]):
    """A part of an Artifact kept pickled until first read: a run from the program cache needs
    only the plain data, so it never loads the IR classes."""

    __slots__ = ("_blob", "_value")

    def __init__(self, value: T | None = None, blob: bytes | None = None) -> None:
        if (value is None) == (blob is None):
            raise ValueError("a Lazy part holds either a value or its pickle")
        self._value, self._blob = value, blob

    def get(self) -> T:
        if self._value is None:
            assert self._blob is not None
            self._value = pickle.loads(self._blob)
        return self._value

    def blob(self) -> bytes:
        if self._blob is None:
            self._blob = pickle.dumps(self._value, protocol=pickle.HIGHEST_PROTOCOL)
        return self._blob

    @property
    def loaded(self) -> bool:
        return self._value is not None


class Launch(Record):
    """What a run needs of the launch plan, as plain data (see ``Plan.launch_specs`` and
    ``Plan.table_entries``)."""

    __slots__ = ("specs", "intermediates", "dynamic", "cube_kernels")
    specs: tuple[tuple, ...]
    intermediates: tuple[tuple, ...]
    dynamic: bool  # the task list depends on the call's sizes or input values: planned per call
    cube_kernels: tuple[str, ...]

    def __init__(
        self,
        specs: tuple[tuple, ...],
        intermediates: tuple[tuple, ...],
        dynamic: bool,
        cube_kernels: tuple[str, ...],
    ) -> None:
        _fill(self, specs=specs, intermediates=intermediates, dynamic=dynamic, cube_kernels=cube_kernels)


class Artifact(Record):
    """One compiled program: the lowered IR, its launch plan, its kernels and all a run needs.

    A frozen value class (``pypto._light.Record``, not a dataclass: a dataclass of this many
    fields costs a new process's first call about a millisecond to define)."""

    __slots__ = (
        "name", "options", "program", "plan", "launch", "kernels", "sources", "external", "hints",
        "params", "param_names", "outputs", "tensor_params", "dumps",
    )  # fmt: skip
    name: str
    options: CompileOptions
    program: Lazy[Program]  # the lowered IR
    plan: Lazy[Plan]  # the launch plan of the compiled arguments
    launch: Launch
    kernels: Mapping[str, Path]  # kernel name -> its shared object (in the kernel cache)
    sources: Mapping[str, str]  # generated kernel name -> its C++ source
    external: tuple[KernelSource, ...]  # the hand-written kernels (built from their files)
    hints: tuple[str, ...]  # the perf hint lines of the compile
    params: Mapping[str, Any]  # the compiled scalar arguments (a run refuses other values)
    param_names: tuple[str, ...]
    outputs: frozenset[int]  # indices of the parameters a kernel writes
    tensor_params: tuple[int, ...]  # indices of the tensor parameters
    dumps: tuple[tuple[str, str], ...]  # (file stem, program text) per pass, when asked for

    def __init__(
        self,
        *,
        name: str,
        options: CompileOptions,
        program: Lazy[Program],
        plan: Lazy[Plan],
        launch: Launch,
        kernels: Mapping[str, Path],
        sources: Mapping[str, str],
        external: tuple[KernelSource, ...],
        hints: tuple[str, ...],
        params: Mapping[str, Any],
        param_names: tuple[str, ...],
        outputs: frozenset[int],
        tensor_params: tuple[int, ...],
        dumps: tuple[tuple[str, str], ...] = (),
    ) -> None:
        _fill(
            self, name=name, options=options, program=program, plan=plan, launch=launch,
            kernels=kernels, sources=sources, external=external, hints=hints, params=params,
            param_names=param_names, outputs=outputs, tensor_params=tensor_params, dumps=dumps,
        )  # fmt: skip

    def __reduce__(self) -> tuple[Any, ...]:  # keyword-only fields
        return _artifact, (dict(zip(self.__slots__, self._values())),)

    def replace(self, **changes: Any) -> Artifact:
        """A copy with ``changes`` to some fields (``dataclasses.replace``)."""
        return Artifact(**{**dict(zip(self.__slots__, self._values())), **changes})


def _artifact(fields: dict[str, Any]) -> Artifact:
    return Artifact(**fields)


def _fill(record: Record, **fields: Any) -> None:
    for name, value in fields.items():
        object.__setattr__(record, name, value)
