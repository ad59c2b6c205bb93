"""A golden-data harness written the way model repositories write theirs against upstream
PyPTO's run-time API: named tensor specs with init functions, a golden function that fills the
expected outputs, ``ir.compile`` (or ``kernel.compile``) into a work folder, ``execute_compiled``
on that folder, a tolerance check per output, and an optional ``benchmark``.

It uses only upstream names (``pypto.backend``, ``pypto.ir.compile``, ``pypto.runtime``), so
it shows that such a harness runs here unchanged."""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from pypto import ir
from pypto.backend import BackendType
from pypto.runtime import BenchmarkStats, RunConfig, benchmark, execute_compiled

_BACKENDS = {"a2a3": BackendType.Ascend910B, "a2a3sim": BackendType.Ascend910B,
             "a5": BackendType.Ascend950, "a5sim": BackendType.Ascend950}  # fmt: skip


@dataclass
class TensorSpec:
    """A named tensor argument; ``init_value`` is a callable ``(shape, dtype) -> tensor``, a
    number to fill with, or None for zeros. ``is_output`` marks what the golden fills."""

    name: str
    shape: list[int]
    dtype: torch.dtype
    init_value: Any = None
    is_output: bool = False

    def create_tensor(self) -> torch.Tensor:
        if callable(self.init_value):
            return self.init_value(self.shape, self.dtype).to(self.dtype).contiguous()
        fill = 0 if self.init_value is None else self.init_value
        return torch.full(self.shape, fill, dtype=self.dtype)


@dataclass
class ScalarSpec:
    name: str
    ctype: type = ctypes.c_int64
    value: int | float = 0

    def to_ctypes(self) -> Any:
        return self.ctype(self.value)


@dataclass
class RunResult:
    passed: bool
    error: str | None = None
    work_dir: Path | None = None
    outputs: dict[str, torch.Tensor] = field(default_factory=dict)
    bench: BenchmarkStats | None = None
    seconds: float = 0.0


def _compile(program: Any, specs: list[Any], work_dir: Path, platform: str) -> Any:
    if hasattr(program, "compile"):  # a @pl.jit kernel: shapes from the signature or the specs
        samples = [s.create_tensor() if isinstance(s, TensorSpec) else s.value for s in specs]
        return program.compile(*samples, config=RunConfig(platform=platform, output_dir=work_dir))
    return ir.compile(program, output_dir=work_dir, platform=platform, backend_type=_BACKENDS[platform])


def _check(specs: list[Any], tensors: dict[str, torch.Tensor], golden: dict[str, torch.Tensor],
           rtol: float, atol: float) -> None:  # fmt: skip
    for s in specs:
        if isinstance(s, TensorSpec) and s.is_output:
            got, want = tensors[s.name].float(), golden[s.name].float()
            if not torch.allclose(got, want, rtol=rtol, atol=atol):
                worst = (got - want).abs().max().item()
                raise AssertionError(f"output {s.name!r} differs from the golden: max |diff| {worst:.3g}")


def run(
    program: Any,
    specs: list[TensorSpec | ScalarSpec],
    golden_fn: Callable[[dict[str, Any]], None] | None,
    work_dir: Path,
    *,
    runtime_cfg: dict[str, Any] | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-5,
    bench_rounds: int = 0,
) -> RunResult:
    """Compile, create inputs, compute the golden, run the folder, compare; optionally time it."""
    start = time.perf_counter()
    runtime_cfg = dict(runtime_cfg or {"platform": "a2a3sim", "device_id": 0})
    compiled = _compile(program, specs, work_dir, runtime_cfg.get("platform", "a2a3sim"))
    tensors = {s.name: s.create_tensor() for s in specs if isinstance(s, TensorSpec)}
    golden = {name: t.clone() for name, t in tensors.items()}
    if golden_fn is not None:
        golden_fn({**golden, **{s.name: s.value for s in specs if isinstance(s, ScalarSpec)}})
    ordered = [tensors[s.name] if isinstance(s, TensorSpec) else s.to_ctypes() for s in specs]
    execute_compiled(compiled.output_dir, ordered, **runtime_cfg)
    result = RunResult(True, work_dir=Path(compiled.output_dir), outputs=tensors)
    try:
        if golden_fn is not None:
            _check(specs, tensors, golden, rtol, atol)
    except AssertionError as e:
        result.passed, result.error = False, str(e)
    if bench_rounds:
        fresh = [t.clone() if isinstance(t, torch.Tensor) else t for t in ordered]
        result.bench = benchmark(compiled, fresh, rounds=bench_rounds, warmup=1,
                                 platform=runtime_cfg.get("platform"))  # fmt: skip
    result.seconds = time.perf_counter() - start
    return result
