"""Type stub of the compiled module (csrc/bindings/bind_*.cpp). Thin bindings only."""

from typing import Any, TypeAlias, TypedDict

import numpy as np

abi_version: int

# One task as run_tasks and TaskRunner take it: (kernel .so path, entry name, tensor indices,
# scalars, core kind 0=AIV/1=AIC/2=cluster, deps, write gates (task, tensor), block index,
# block count, early resolve).
_TaskTuple: TypeAlias = tuple[
    str, str, list[int], list[int], int, list[int], list[tuple[int, int]], int, int, bool
]

class Platform:
    @property
    def name(self) -> str: ...

def make_platform(table: dict[str, Any]) -> Platform: ...
def platform_names() -> list[str]: ...
def platform_table(name: str, cost_profile: str = ...) -> dict[str, Any]: ...
def cost_profile_names() -> list[str]: ...

class _HardwareFacts(TypedDict):
    """What hardware_facts() returns (csrc/simulator/hardware.hpp)."""

    pipes: list[str]  # in ABI order, as the report names them
    flag_pipes: list[str]  # the same pipes as traces' flag details spell them
    mem_spaces: list[str]  # in ABI order
    dtypes: list[tuple[int, str, str, int]]  # (code, name, numpy name, size)
    routes: list[tuple[str, str, str, bool, bool]]  # (src, dst, pipe, vec_mat only, windowed)
    max_event_ids: int
    max_l2_ways: int
    isa_dtypes: dict[str, Any]  # per ISA op family, the dtype names its check accepts

def hardware_facts() -> _HardwareFacts: ...
def load_kernel(path: str) -> None: ...
def probe_kernel(path: str) -> str: ...
def run_kernel(
    path: str,
    tensors: list[tuple[np.ndarray, int]],
    scalars: list[int],
    platform: Platform,
    kernel_name: str = "kernel",
    block_num: int = 1,
    record: bool = False,
    hazards_fatal: bool = True,
    core: str = "aiv",
    max_cycles: int = 0,
    max_instructions: int = 0,
) -> dict[str, Any]: ...
def run_tasks(
    tasks: list[_TaskTuple],
    tensors: list[tuple[np.ndarray, int]],
    platform: Platform,
    record: bool = False,
    hazards_fatal: bool = True,
    seed: int | None = None,
    max_cycles: int = 0,
    max_instructions: int = 0,
) -> dict[str, Any]: ...

class RunResults:
    def to_dict(self) -> dict[str, Any]: ...

# (argument index, shape, dtype, dtype code with flags, numpy flag bits it needs or -1 for an
# argument another entry checks)
class WarmSpec:
    def __init__(self, entries: list[tuple[int, tuple[int, ...], np.dtype, int, int]]) -> None: ...

class TaskRunner:
    def __init__(
        self,
        tasks: list[_TaskTuple],
        platform: Platform,
    ) -> None: ...
    def run(
        self,
        tensors: list[tuple[np.ndarray, int]],
        record: bool = False,
        hazards_fatal: bool = True,
        seed: int | None = None,
        max_cycles: int = 0,
        max_instructions: int = 0,
    ) -> RunResults: ...
    def run_args(
        self,
        spec: WarmSpec,
        args: tuple[Any, ...],
        record: bool = False,
        hazards_fatal: bool = True,
        seed: int | None = None,
        max_cycles: int = 0,
        max_instructions: int = 0,
    ) -> RunResults | None: ...

class CoreModel:
    def __init__(self, platform: Platform, record: bool = True) -> None: ...
    def op(
        self,
        pipe: int,
        cost: int,
        name: str = "OP",
        reads: list[tuple[int, int, int]] = ...,
        writes: list[tuple[int, int, int]] = ...,
        loc: str = "",
    ) -> None: ...
    def instr(self, pipe: int, spec: dict[str, Any], name: str = "INSTR") -> None: ...
    def set_flag(self, src: int, dst: int, event_id: int) -> None: ...
    def wait_flag(self, src: int, dst: int, event_id: int) -> None: ...
    def barrier(self, pipe: int) -> None: ...
    def finish(self) -> None: ...
    @property
    def records(self) -> list[dict[str, Any]]: ...
    @property
    def cycles(self) -> int: ...
    @property
    def pipe_busy(self) -> list[int]: ...
    @property
    def hazards(self) -> list[str]: ...

def data_queue_exercise(ops: int, rows: int, drain_every: int) -> np.ndarray: ...
def data_queue_times() -> dict[str, int]: ...
def matmul_f32_forms() -> list[str]: ...
def matmul_f32_form(
    form: str,
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    accumulate: bool = False,
    exact_products: bool = False,
) -> None: ...
def fractal_forms() -> list[str]: ...
def fractal_form(form: str, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]: ...

class TraceFormatError(ValueError):
    """A TRACE payload that is ``not valid JSON: <problem> at byte N`` or ``not a trace: ...``."""

def clean_trace(
    payload: bytes | bytearray | memoryview, keep_scalar: bool = False, source: str = ""
) -> tuple[bytes, dict[str, int]]:
    """trace.clean.json for a TRACE payload, and its counts: ``slices``, ``lanes``, ``flows``,
    ``skipped_flags`` (csrc/tools/trace_clean.hpp). Releases the GIL."""

# isolated runs (bind_isolate.cpp)
def arm_crash_report(fd: int) -> None: ...
def last_instruction() -> tuple[str, str]: ...

class TraceWriteError(OSError):
    """A trace file could not be created or written (names the file and the OS error)."""

def write_trace(
    cores: list[tuple[str, dict[str, Any], list[str]]],
    layout: dict[str, Any],
    bin_prefix: bytes,
    json_path: str,
    bin_path: str,
) -> dict[str, Any]:
    """Writes ``visualize_data.bin`` (``bin_prefix`` + the TRACE block) of one launch and, unless
    ``json_path`` is empty, ``trace.json``, from (pid, records dict, JSON-quoted strings) per
    core; returns ``sites`` ((name, loc, pipe) per static instruction), per-core totals ``cores``
    and ``events`` (csrc/tools/trace_write.hpp). Releases the GIL."""

def perfetto_lane_slices(
    seq: int,
    start: np.ndarray,
    end: np.ndarray,
    name_iid: np.ndarray,
    loc_iid: np.ndarray,
    flow_out: np.ndarray,
    flow_in: np.ndarray,
) -> bytes:
    """The begin and end TracePackets of one lane's slices (int64 columns; flow ids 0 where none;
    a negative value is a ValueError) — csrc/tools/perfetto_slices.hpp. Releases the GIL."""
