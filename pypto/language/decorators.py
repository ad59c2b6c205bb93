"""``@pl.jit``, ``@pl.jit.incore``, ``@pl.function`` and ``@pl.program``.

The decorated function's body is never executed: the frontend reads its source. A
``JitFunction`` keeps what parsing needs (the function, hence its source, globals and
closure) and specialises on call arguments; running and compiling belong to the runtime.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from pypto.errors import OutsideKernelError
from pypto.ir.enums import FunctionType

TYPE_CHECKING = False  # annotations only: not importing typing keeps `import pypto.language` light
if TYPE_CHECKING:
    from typing import Any


class JitFunction:
    """A ``@pl.jit`` (orchestration) or ``@pl.jit.incore`` (device kernel) function."""

    def __init__(self, fn: Callable[..., Any], kind: FunctionType, auto_scope: bool = True) -> None:
        self.fn = fn
        _remember_source(fn)
        self.kind = kind
        # Upstream PyPTO's switch between compiler-placed and hand-placed runtime scopes. The
        # simulator has no runtime scopes: task order always follows the tensors each task
        # reads and writes, so both values compile to the same program.
        self.auto_scope = _check_auto_scope(auto_scope)
        self._last_report: Any = None
        functools.update_wrapper(self, fn)

    @property
    def last_report(self) -> Any:  # -> pypto.runtime.RunReport | None
        """The RunReport of the latest call. A call leaves a builder here instead, so the warm
        path does not pay for a report nobody reads; the first read builds it."""
        report = self._last_report
        if callable(report):
            report = self._last_report = report()
        return report

    @last_report.setter
    def last_report(self, value: Any) -> None:
        self._last_report = value

    @property
    def name(self) -> str:
        return self.fn.__name__

    @functools.cached_property
    def param_names(self) -> tuple[str, ...]:
        """Parameter names in order (read once: the warm-call cache key is built from them)."""
        import inspect  # here, not at the top: it costs `import pypto.language` ~10 ms

        return tuple(inspect.signature(self.fn).parameters)

    @property
    def globals(self) -> dict[str, Any]:
        """The defining module's namespace (module constants fold from here)."""
        return self.fn.__globals__

    @property
    def closure(self) -> dict[str, Any]:
        """Free variables of the kernel and their current values."""
        from pypto.frontend.source import closure_values

        return closure_values(self.fn)

    @property
    def source(self) -> str:
        """The dedented source text of the function, decorators included."""
        from pypto.frontend.source import KernelSource

        return KernelSource.from_function(self.fn).text

    def specialization_key(self, *args: Any, **kwargs: Any) -> tuple:
        """The cache key of a call: per argument (shape, dtype) of a tensor or a scalar value."""
        return _specialization_key()(self, args, kwargs)

    def parse(self, *args: Any, **kwargs: Any):  # -> pypto.ir.Program
        """Parse the kernel specialised on these arguments (arrays, tensors, scalars)."""
        from pypto.frontend.parser import parse_jit

        return parse_jit(self, args, kwargs)

    def __call__(self, *args: Any, config: Any = None, **kwargs: Any) -> Any:
        """Compile (cached per specialisation) and run; ``pl.Out`` arguments are written in
        place and returned. The run's RunReport is kept in ``last_report``."""
        return _call_jit()(self, args, kwargs, config)

    def compile(self, *args: Any, config: Any = None, **kwargs: Any) -> Any:
        """The ``CompiledProgram`` for these arguments (the same instance for the same key).
        With no positional arguments, tensors come from the signature's full annotations
        (``pypto.runtime.signature``) and scalars from the keywords."""
        from pypto.runtime.config import RunConfig
        from pypto.runtime.jit import compile_program

        if not args:
            from pypto.runtime.signature import samples_from_signature

            args, kwargs = samples_from_signature(self.fn, self.name, kwargs)

        return compile_program(self, args, kwargs, config or RunConfig())

    def lower(self, *args: Any, config: Any = None, **kwargs: Any) -> Any:
        """The post-pass IR ``Program`` only: no codegen, no artifacts."""
        from pypto.runtime.config import RunConfig
        from pypto.runtime.jit import lower_program

        return lower_program(self, args, kwargs, config or RunConfig())

    def __repr__(self) -> str:
        return f"<pl.jit {self.kind.name} function {self.name}>"


@functools.cache
def _remember_source(fn: Any) -> None:
    from pypto.frontend.source_stamps import remember_source

    remember_source(fn)


_WARM: dict[str, Callable[..., Any]] = {}  # the warm call's functions, imported once


def _specialization_key() -> Callable[..., tuple]:
    # Imported on first use (the frontend imports this module); kept for the warm-call path,
    # where an import statement costs most of a microsecond.
    found = _WARM.get("key")
    if found is None:
        from pypto.frontend.specialize import specialization_key

        found = _WARM["key"] = specialization_key
    return found


def _call_jit() -> Callable[..., Any]:
    # Imported on first call (the runtime is heavy); kept for the warm-call path.
    found = _WARM.get("call")
    if found is None:
        from pypto.runtime.jit import call_jit

        found = _WARM["call"] = call_jit
    return found


class InlineFunction:
    """``@pl.jit.inline``: a kernel helper whose body is expanded at each call site.

    Arguments bind to the caller's values (tiles, tensors, scalars or compile-time
    constants); the statements run in the caller's kernel and a final ``return value`` is the
    call's value. Names inside stay local to the helper."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        functools.update_wrapper(self, fn)

    @property
    def name(self) -> str:
        return self.fn.__name__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise OutsideKernelError(f"{self.name} is a @pl.jit.inline helper; call it inside a kernel body")

    def __repr__(self) -> str:
        return f"<pl.jit.inline {self.name}>"


class HostFunction:
    """``@pl.jit.host``: plain Python run on the host while a kernel is compiled.

    Called from a kernel body with compile-time arguments (shapes, constants, dtypes) it
    returns a compile-time value (a tile size, a block count ...); outside kernels it is the
    function itself."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<pl.jit.host {self.fn.__name__}>"


def _check_auto_scope(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"auto_scope must be True or False, got {value!r}")
    return value


class _Jit:
    """``pl.jit``: the decorator object; ``pl.jit.incore`` makes a device kernel."""

    def __call__(self, fn: Callable[..., Any] | None = None, *, auto_scope: bool = True) -> Any:
        _check_auto_scope(auto_scope)
        if fn is None:  # @pl.jit() or @pl.jit(auto_scope=False)
            return lambda f: JitFunction(f, FunctionType.Orchestration, auto_scope)
        return JitFunction(fn, FunctionType.Orchestration, auto_scope)

    def incore(self, fn: Callable[..., Any] | None = None, **kwargs: Any) -> Any:
        """A kernel callable by name from a ``@pl.jit`` body (ops allowed directly)."""
        if "auto_scope" in kwargs:
            raise TypeError(
                "auto_scope= is not for @pl.jit.incore (an outlined kernel has no orchestration body to "
                "place scopes in); put it on the @pl.jit entry or a @pl.jit.inline helper"
            )
        if kwargs:
            raise TypeError(f"pl.jit.incore() got an unexpected keyword argument {next(iter(kwargs))!r}")
        if fn is None:
            return self.incore
        return JitFunction(fn, FunctionType.InCore)

    def inline(self, fn: Callable[..., Any] | None = None, *, auto_scope: bool = True) -> Any:
        """A helper expanded inline where a kernel calls it (see :class:`InlineFunction`);
        ``auto_scope=`` as on ``@pl.jit``."""
        _check_auto_scope(auto_scope)
        if fn is None:  # @pl.jit.inline(auto_scope=False)
            return InlineFunction
        return InlineFunction(fn)

    def host(self, fn: Callable[..., Any]) -> HostFunction:
        """A host-side function evaluated at compile time (see :class:`HostFunction`)."""
        return HostFunction(fn)

    def extern(self, fn: Callable[..., Any] | None = None, **options: Any) -> Any:
        """``@pl.jit.extern(source="k.cpp", core_type="aiv", include_dirs=[...])``: a
        hand-written C++ kernel a ``@pl.jit`` body calls, declared by its signature (body
        ``...``); the same as ``@pl.function(type=AIV or AIC, external_source=...)``."""
        from pypto.language.extern import extern

        return extern(fn, **options)


jit = _Jit()


class KernelFunction:
    """``@pl.function(type=..., external_source=...)``: a function with an explicit signature.

    Inside a ``@pl.program`` class it is one function of the program; used directly with
    ``external_source`` it is a hand-written C++ kernel a ``@pl.jit`` body may call.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        type: FunctionType,
        external_source: str | None,
        include_dirs: tuple[str, ...] = (),
        pipeline_groups: tuple[Any, ...] = (),
        outer: dict[str, Any] | None = None,
    ) -> None:
        self.fn = fn
        self.outer = outer or {}  # the defining function's variables
        self.pipeline_groups = pipeline_groups
        _remember_source(fn)
        self.type = type
        self.external_source = external_source
        self.include_dirs = include_dirs
        functools.update_wrapper(self, fn)

    @property
    def name(self) -> str:
        return self.fn.__name__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise OutsideKernelError(f"{self.name} is a pypto kernel function; call it from a @pl.jit body")

    def __repr__(self) -> str:
        return f"<pl.function {self.type.name} {self.name}>"


def function(
    fn: Callable[..., Any] | None = None,
    *,
    type: FunctionType = FunctionType.Orchestration,
    external_source: str | None = None,
    include_dirs: list[str] | tuple[str, ...] = (),
    pipeline_groups: list[Any] | tuple[Any, ...] = (),
    auto_scope: bool = True,
) -> Any:
    """``@pl.function`` or ``@pl.function(type=pl.FunctionType.AIV, external_source="k.cpp")``.

    ``external_source`` (and each of ``include_dirs``) resolves against the defining file's
    folder; the ``.cpp`` is compiled in place, so its relative ``#include``s work.
    ``pipeline_groups`` is what ExpandPipelineLoops records in a pass dump; only a
    ``@pl.program`` class (the form dumps are printed in) reads it. ``auto_scope`` is upstream's
    choice of who places runtime scopes; task order follows the tensors here either way.
    """
    _check_auto_scope(auto_scope)
    dirs = tuple(include_dirs)
    groups = tuple(pipeline_groups)
    if fn is None:
        return lambda f: KernelFunction(f, type, external_source, dirs, groups, _outer(2))
    return KernelFunction(fn, type, external_source, dirs, groups, _outer(2))


def _outer(depth: int) -> dict[str, Any]:
    """The variables of the function a kernel is defined in (its annotations may name them, as
    a builder's sizes), at ``depth`` frames above this one; none at module level."""
    import sys

    caller = sys._getframe(depth)
    return dict(caller.f_locals) if caller.f_locals is not caller.f_globals else {}


def program(cls: type):  # -> pypto.ir.Program
    """``@pl.program class Name: ...`` — parses the class into an IR ``Program`` named ``Name``.

    A class defined inside a function sees that function's variables, as Python's class body
    does: ``pl.Tensor[[rows, d], pl.BF16]`` may name the builder's ``rows``."""
    from pypto.frontend.parser import parse_class

    return parse_class(cls, _outer(2))
