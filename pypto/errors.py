"""Typed errors raised by pypto.

Every user-facing failure is a :class:`PyptoError`. Errors that point at user source carry a
``span`` (``file:line:col``) and show the offending line, so a kernel author sees *where*
before *what*. The simulator's run-time errors (raised from C++) map onto the
``SimulationError`` branch of this hierarchy in ``csrc/bindings/bind_errors.cpp``.
"""

from __future__ import annotations

from pypto._light import Record


class SourceSpan(Record):
    """A position in user Python source (1-based line, 0-based column as ``ast`` reports)."""

    __slots__ = ("file", "line", "col")
    file: str
    line: int
    col: int

    def __init__(self, file: str, line: int, col: int = 0) -> None:
        object.__setattr__(self, "file", file)
        object.__setattr__(self, "line", line)
        object.__setattr__(self, "col", col)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def source_line(self) -> str:
        import linecache  # here: it imports tokenize and re, ~5 ms of `import pypto.language`

        return linecache.getline(self.file, self.line).rstrip("\n")


class PyptoError(Exception):
    """Base of every error pypto raises on purpose."""

    def __init__(self, message: str, span: SourceSpan | None = None) -> None:
        self.message = message
        self.span = span
        super().__init__(self._render())

    def _render(self) -> str:
        if self.span is None:
            return self.message
        text = f"{self.message} at {self.span}"
        line = self.span.source_line()
        if line:
            text += f"\n    {line.strip()}"
        return text


# --- compile time -------------------------------------------------------------------------
class CompileError(PyptoError):
    """The program is rejected before anything runs."""


class KernelBuildError(CompileError):
    """The host C++ compiler failed on a kernel; the message carries its diagnostics."""


class TypeCheckError(CompileError):
    """Operand types disagree: shapes, dtypes, memory spaces, or the kind of an argument."""


class WrongLevelError(TypeCheckError, TypeError):
    """A keyword only one level of an op honours (tile or tensor) was given to the other."""


class StaticAssertError(CompileError):
    """A ``pl.static_assert`` condition is false for this specialisation."""


class BoundsCheckError(CompileError):
    """A statically known window (load/store/slice) reaches outside its tensor or tile."""


class UnsupportedSyntaxError(CompileError):
    """A Python construct that a kernel body cannot contain (while, try, lambda, ...)."""


class UnknownNameError(CompileError):
    """A name (``pl.<x>`` or a bare identifier) that the kernel cannot resolve."""


class MisplacedOpError(CompileError):
    """An op used where its kind of function does not allow it (e.g. outside ``pl.at``)."""


class InputWriteError(CompileError):
    """A kernel writes (``pl.store``, ``pl.assemble``, ``x[...] = ...``) into a parameter that is
    not ``pl.Out``/``pl.InOut``: inputs are read-only to kernels."""


class OutsideKernelError(CompileError):
    """A DSL marker (``pl.exp``, ``pl.range``, ...) was called as ordinary Python code."""


class CodegenError(CompileError):
    """The lowered IR cannot be turned into C++ (names the op or declaration and its line)."""


class VerifyError(CompileError):
    """The IR verifier rejected a program; the span names the offending node."""


class MemoryCapacityError(CompileError):
    """Tiles that must be live together do not fit in their on-chip memory space (names the
    function, the space, the bytes needed and available, and the largest tiles)."""


class CacheDirError(PyptoError):
    """A folder pypto must write (``PYPTO_CACHE_DIR``, an ``output_dir``) cannot be created or
    written; names the variable or field and the path."""


class KernelLoadError(PyptoError):
    """A built kernel could not be loaded (missing ``kernel_entry``, bad shared object)."""


# --- call time: one hierarchy for every argument problem ----------------------------------
class ArgumentError(PyptoError, TypeError):
    """A call argument cannot be passed to the kernel (kind, dtype, layout, aliasing, ...)."""


class ArgumentValueError(ArgumentError, ValueError):
    """A call argument has the right kind but a value outside its rule (a negative
    ``block_num``, an unknown ``hazards`` mode, a ``seed`` out of range, ...)."""


class ArgumentMismatchError(CompileError, ArgumentError):
    """Call arguments do not fit the kernel signature (count, kind, shape or dtype)."""


class DeviceTensorError(ArgumentValueError):
    """A ``DeviceTensor`` that cannot be used where it was passed: freed, of another
    ``ChipWorker``, made by hand (no owning worker), or of the wrong shape or dtype; names the
    argument."""


class WorkerClosedError(PyptoError, RuntimeError):
    """A ``ChipWorker`` (or one of its ``DeviceTensor``s or registration handles) used after
    ``close()``; names the operation."""


class ConfigError(PyptoError, ValueError):
    """A ``RunConfig`` field (or a call's ``config=``) is invalid; the message names the field."""


# --- run time (raised by the native simulator) --------------------------------------------
class SimulationError(PyptoError):
    """A kernel did something the simulated core refuses; names the instruction."""


class MemorySpaceError(SimulationError):
    """A tile lies outside its on-chip memory space, or a route between spaces is illegal."""


class OutOfBoundsError(SimulationError):
    """A GM window reaches outside its tensor."""


class ShapeMismatchError(SimulationError):
    """Operand shapes do not agree."""


class DTypeMismatchError(SimulationError):
    """Operand dtypes do not agree, or a dtype is unsupported by the op."""


class FlagError(SimulationError):
    """A set_flag/wait_flag uses an invalid pipe pair or event id."""


class DeadlockError(SimulationError):
    """A wait_flag can never be satisfied; the simulator stops instead of hanging."""


class HazardError(SimulationError):
    """The hazard checker found a race: two accesses from different pipes overlap in time."""


class SimulationLimitError(SimulationError):
    """A run passed ``RunConfig(max_cycles=...)``, its instruction budget or an isolated run's
    ``timeout_s``; the message names the kernel and its last instruction's source line."""


class HostMemoryError(SimulationLimitError, MemoryError):
    """The simulated cores of a run would need more host memory than the machine has available
    (a platform override of an on-chip size times the cores that run at once); refused before
    anything is allocated, naming the field, its value and the figures."""


class CrossCoreError(SimulationError):
    """A cross-core pipe or flag was misused (a popped tile of another shape, a free with nothing
    popped); the message names both cores."""


class RaceError(SimulationError):
    """Two tasks overlapping in simulated time, with no dependency between them, touched the same
    GM bytes and at least one wrote them."""


class ReadOnlyInputError(SimulationError):
    """A TSTORE or atomic add into an input tensor (not ``pl.Out``/``pl.InOut``, not in
    ``outputs=``) or into read-only memory; nothing was written."""


class KernelZeroDivisionError(SimulationError, ZeroDivisionError):
    """Kernel scalar code evaluated ``x // 0`` or ``x % 0``; names the line."""


class KernelCrashError(PyptoError):
    """An isolated run's worker process died (signal, abort, ``exit()``) inside a kernel. Names the
    kernel, the signal or exit code and the last ISA instruction; the caller's arrays are
    untouched and the calling process carries on."""
