"""A persistent cache of compiled ``@pl.jit`` kernels and ``@pl.program``s, so a new process
skips parse, passes and codegen for a kernel it has compiled before (a ``@pl.program``: the
passes and codegen; its class body is parsed when it is defined).

An entry is the compile's Artifact as bytes (:func:`pypto.compile.codecs.to_bytes`: the lowered
IR and the launch plan each pickled apart, so a hit that only runs never loads the IR classes)
next to the kernel function's dependency record. The kernel binaries stay in the kernel cache
(:mod:`pypto.kernel_build`) and are validated and loaded there on every hit.

**Key** (sha256): the kernel function's file content, qualified name and first line; the call's
specialisation (shapes, dtypes, scalar values); the compile options (never a run's); the platform
table the compile reads; the toolchain fingerprint (compiler, flags, kernel headers, pypto version); and a
signature of pypto's own Python sources (path, size, mtime of each), so an edited compiler
never serves programs it did not produce.

A ``@pl.program`` has no function to key on: its parsed IR, pickled, stands for the file,
name and line (ir_program_key). It holds every value the frontend folded in and every source
position, and nothing it names by reference only (a user function or class would be: such a
program is not cached), so the program has no dependencies to record.

**Dependencies** (checked on each hit): every name the kernel's source mentions is looked up as
the frontend would (closure, then module globals) and recorded — a constant by its value, a
module by the attributes the source reads from it, a dataclass instance (a model's config) by
its fields' values and the files its classes are defined in (a NamedTuple's too), a user's enum
member by its value, a called ``@pl.jit.incore`` or ``@pl.function`` kernel, a
``@pl.jit.inline`` helper or a ``@pl.jit.host`` function by its own file, name and
dependencies. A hit whose recorded values no
longer match (an imported constant changed) is a miss. A kernel that reads a value this cannot
record faithfully (a user object, a helper function) is simply not cached on disk.

Layout::

    $PYPTO_CACHE_DIR/programs/index/<key[:2]>/<key>.pkl   # sha256 of the payload, then the payload

Entries are pickles, written atomically. They are trusted as much as the kernel ``.so`` files
next to them, which are loaded into the process; a damaged entry (bad checksum) is a miss. A hit
writes nothing but its entry's time (at most once a minute, for the size cap: :mod:`pypto.cache`).
``PYPTO_ALWAYS_COMPILE`` (``pypto.knobs.always_compile``) turns every lookup into a miss.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import io
import os
import pickle
import types
from pathlib import Path
from typing import Any

import pypto
from pypto import cache, knobs
from pypto import kernel_build as build
from pypto._light import Logger, Record, sha256
from pypto.compile import codecs
from pypto.compile.artifact import Artifact
from pypto.compile.options import CompileOptions
from pypto.errors import PyptoError
from pypto.frontend.captured import ABSENT, VALUE_PACKAGES, names_in, resolve
from pypto.kernel_build.cache_files import atomic_write, ensure_dir
from pypto.kernel_build.cache_files import digest as file_digest
from pypto.language.decorators import HostFunction, InlineFunction, JitFunction, KernelFunction

log = Logger(__name__)

_SALT = b"pypto-program-cache-6"
_PLAIN = (type(None), bool, int, float, complex, str, bytes)


class Uncacheable(Exception):
    """A kernel reads a value whose identity cannot be recorded across processes."""


class Entry(Record):
    """One stored compile: the dependency record it is valid under (see _record_fn), and its
    Artifact's bytes (pypto.compile.codecs.to_bytes)."""

    __slots__ = ("deps", "artifact")
    deps: tuple
    artifact: bytes

    def __init__(self, deps: tuple, artifact: bytes) -> None:
        object.__setattr__(self, "deps", deps)
        object.__setattr__(self, "artifact", artifact)


def index_dir() -> Path:
    return knobs.cache_dir() / "programs" / "index"


def program_key(fn: Any, spec_key: tuple, options: CompileOptions) -> str | None:
    """The cache key of compiling ``fn`` for ``spec_key`` with ``options`` (None: not cacheable)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    file_sha = file_digest(Path(code.co_filename))
    if file_sha is None:  # no source file (an interactive session): nothing to key on
        return None
    return _key(spec_key, options, file_sha, f"{code.co_filename}:{code.co_firstlineno}:{fn.__qualname__}")


def ir_program_key(program: Any, spec_key: tuple, options: CompileOptions) -> str | None:
    """The cache key of compiling a parsed ``@pl.program`` (None: not cacheable). There is no
    function to key on and record: the parsed IR is the whole input of the passes, values the
    frontend folded in and source positions (which hints and errors name) included, so its
    pickled bytes are the key (see _ir_bytes)."""
    try:
        blob = _ir_bytes(program)
    except Uncacheable as why:
        log.debug("%s is not cached on disk: %s", getattr(program, "name", program), why)
        return None
    return _key(spec_key, options, sha256(blob).hexdigest(), f"program:{program.name}")


def _key(spec_key: tuple, options: CompileOptions, *source: str) -> str:
    """sha256 over what every compile depends on and then ``source``, the compiled code's."""
    plat = options.resolved_platform()
    parts = [
        _package_signature(),
        build.installed_toolchain().fingerprint,
        repr((plat.name, plat.device, sorted(plat.fields.items()))),
        repr(options.key()),
        repr(spec_key),
        *source,
    ]
    digest = sha256(_SALT)
    for part in parts:
        data = part.encode()
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


class _IrPickler(pickle.Pickler):
    """Pickles IR, refusing what pickle would name rather than store (a function or class of
    the user's): its code could change under the same bytes. pypto's own classes are covered
    by the package signature; those of the versioned value packages (numpy's scalar types)
    are taken as the frontend takes them, as values."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType, types.ModuleType)):
            module = str(getattr(obj, "__module__", None) or getattr(obj, "__name__", "")).split(".")[0]
            if module != "builtins" and module not in VALUE_PACKAGES:
                raise Uncacheable(f"its IR holds {obj!r}")
        return NotImplemented


def _ir_bytes(program: Any) -> bytes:
    """``program`` pickled: the same bytes for the same IR in every process (no hash-ordered
    sets in the IR; checked in the tests across hash seeds)."""
    buffer = io.BytesIO()
    try:
        _IrPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(program)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError) as why:
        # (RecursionError: IR nested deeper than pickle recurses, which the passes may still take)
        raise Uncacheable(f"its IR does not pickle ({type(why).__name__}: {why})") from None
    return buffer.getvalue()


def load(key: str, fn: Any) -> tuple[Artifact, tuple] | None:
    """The Artifact of ``key`` and ``fn``'s dependency record (what its source reads, see
    _record_fn) if the entry is intact, its dependencies still hold and its kernels load, else
    None."""
    if knobs.recompile():
        return None
    path = _entry_path(key)
    cache.touch(path)  # marked used before it is read: trimming the cache skips it now
    try:
        blob = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        log.warning("cannot read program cache entry %s: %s", path, exc.strerror)
        return None
    checksum, payload = blob[:32], blob[32:]
    if sha256(payload).digest() != checksum:
        log.warning("corrupt program cache entry %s (checksum mismatch); recompiling", path)
        return None
    try:
        entry = pickle.loads(payload)
        if not isinstance(entry, Entry) or not _deps_hold(fn, entry.deps):
            return None
        artifact = codecs.from_bytes(entry.artifact)
        return None if artifact is None else (artifact, entry.deps)
    except (PyptoError, OSError):
        raise
    except Exception as exc:  # an entry of an incompatible pypto build: recompile
        log.info("unreadable program cache entry %s (%s); recompiling", path, exc)
        return None


def store(key: str, fn: Any, artifact: Artifact) -> None:
    """Record a fresh compile under ``key`` (skipped, with a debug log, if not cacheable).
    ``fn``: the ``@pl.jit`` kernel's function, whose reads are recorded; None for a
    ``@pl.program``, whose key holds all it depends on (ir_program_key)."""
    try:
        deps = _record_fn(fn) if fn is not None else _PROGRAM
    except (Uncacheable, PyptoError, OSError) as why:  # e.g. a source that cannot be re-read
        log.debug("%s is not cached on disk: %s", getattr(fn, "__qualname__", fn), why)
        return
    payload = pickle.dumps(Entry(deps, codecs.to_bytes(artifact)), protocol=pickle.HIGHEST_PROTOCOL)
    path = _entry_path(key)
    ensure_dir(path.parent)
    atomic_write(path, sha256(payload).digest() + payload)
    cache.trim()


def _entry_path(key: str) -> Path:
    return index_dir() / key[:2] / f"{key}.pkl"


@functools.cache
def _package_signature() -> str:
    """pypto's version and the (path, size, mtime) of each of its Python files, hashed."""
    root = Path(pypto.__file__).parent
    digest = sha256(pypto.__version__.encode())
    stack = [root]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as it:
            for e in sorted(it, key=lambda e: e.name):
                if e.is_dir() and e.name != "__pycache__":
                    stack.append(Path(e.path))
                elif e.name.endswith(".py"):
                    st = e.stat()
                    digest.update(f"{e.path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


# --- dependency records -----------------------------------------------------------------------
_RECORDING: set[int] = set()  # kernels being recorded: a reference cycle is not cacheable


def _record_fn(fn: Any) -> tuple:
    """("fn", file sha, where, ((name, record), ...)) for every name ``fn``'s source mentions."""
    from pypto.frontend.source import KernelSource

    src = KernelSource.from_function(fn)
    names, attrs = names_in(src.tree)
    code = fn.__code__
    sha = file_digest(Path(code.co_filename))
    if sha is None:
        raise Uncacheable(f"cannot read {code.co_filename}")
    if id(code) in _RECORDING:
        raise Uncacheable(f"{fn.__qualname__} refers to itself through its globals")
    _RECORDING.add(id(code))
    try:
        records = tuple((name, _record(resolve(fn, name), attrs)) for name in sorted(names))
    finally:
        _RECORDING.discard(id(code))
    return ("fn", sha, _where(fn), records)


# How deep the recording is inside @pl.jit.host functions (run while a kernel compiles, so the
# plain functions they call run too: recorded by their code, not their name).
_RUNNING = [0]

_PROGRAM = ("program",)  # the dependency record of a @pl.program's entry: nothing beyond its key


def _deps_hold(fn: Any, deps: tuple) -> bool:
    if fn is None:
        return deps == _PROGRAM
    return _fn_matches(fn, deps)


def _fn_matches(fn: Any, rec: tuple) -> bool:
    code = getattr(fn, "__code__", None)
    if code is None or rec[0] != "fn" or _where(fn) != rec[2]:
        return False
    if file_digest(Path(code.co_filename)) != rec[1]:
        return False
    return all(_matches(resolve(fn, name), sub) for name, sub in rec[3])


def _where(fn: Any) -> str:
    code = fn.__code__
    return f"{code.co_filename}:{code.co_firstlineno}:{fn.__qualname__}"


def _record(value: Any, attrs: frozenset[str]) -> tuple:
    if value is ABSENT:
        return ABSENT
    if isinstance(value, InlineFunction):  # expanded into the kernel: its own reads count too
        return ("inline", _record_fn(value.fn))
    if isinstance(value, HostFunction):  # run while the kernel compiles: its code and reads count
        _RUNNING[0] += 1  # and so do those of the plain functions it calls
        try:
            return ("host", _record_fn(value.fn))
        finally:
            _RUNNING[0] -= 1
    if isinstance(value, _PLAIN):
        return ("v", type(value).__name__, repr(value))
    if isinstance(value, (JitFunction, KernelFunction)):
        return ("kernel", *_kernel_head(value), _record_fn(value.fn))
    if isinstance(value, types.ModuleType):
        if value.__name__.split(".")[0] in VALUE_PACKAGES:  # versioned packages: opaque
            return ("module", value.__name__, ())
        found = tuple(
            (a, _record(getattr(value, a), frozenset())) for a in sorted(attrs) if hasattr(value, a)
        )
        return ("module", value.__name__, found)
    if isinstance(value, (tuple, list, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, frozenset) else value
        record = ("seq", type(value).__name__, tuple(_record(v, attrs) for v in items))
        if type(value) in (tuple, list, frozenset):
            return record
        return (*record, _class_files(value))  # a NamedTuple's properties run its class's code
    if isinstance(value, dict):
        return ("dict", tuple((repr(k), _record(v, attrs)) for k, v in value.items()))
    if isinstance(value, enum.Enum):
        head = ("enum", type(value).__module__, type(value).__qualname__, value.name)
        if type(value).__module__.split(".")[0] in VALUE_PACKAGES:  # versioned: the name is enough
            return head
        return (*head, _record(value.value, frozenset()))  # a user's enum: its value folds in too
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _record_dataclass(value)
    return _record_object(value)


def _record_dataclass(value: Any) -> tuple:
    """A dataclass instance (a model's shape or tiling config, say): its class by name and by
    the files its classes are defined in, and each field's value as any captured value is
    recorded."""
    fields = tuple((f.name, _record(getattr(value, f.name), frozenset())) for f in dataclasses.fields(value))
    return ("dataclass", type(value).__module__, type(value).__qualname__, _class_files(value), fields)


def _class_files(value: Any) -> tuple[tuple[str, str], ...]:
    """The source file and its digest of each class ``value`` is an instance of, past the
    builtin ones: a property or method the kernel reads runs their code."""
    files: list[tuple[str, str]] = []
    for cls in type(value).__mro__:
        if cls.__module__ == "builtins":
            continue
        try:
            source = inspect.getsourcefile(cls)
        except TypeError:  # a class of an extension module
            source = None
        sha = file_digest(Path(source)) if source else None
        if source is None or sha is None:
            raise Uncacheable(
                f"reads a {type(value).__qualname__}, whose class {cls.__qualname__} has no source file"
            )
        files.append((source, sha))
    return tuple(files)


def _kernel_head(value: Any) -> tuple:
    """What identifies a called kernel besides its function: its class and kind (or function
    type), and the hand-written source it is bound to."""
    head = (type(value).__name__, repr(getattr(value, "kind", None) or value.type))
    extra = (getattr(value, "external_source", None), getattr(value, "include_dirs", ()))
    return head, repr(extra)


def _record_object(value: Any) -> tuple:
    shape, dtype, tobytes = (getattr(value, a, None) for a in ("shape", "dtype", "tobytes"))
    if type(value).__module__.split(".")[0] == "numpy" and shape is not None and callable(tobytes):
        return ("array", str(dtype), repr(shape), sha256(tobytes()).hexdigest())
    if isinstance(value, types.FunctionType):
        if _RUNNING[0]:  # called by a host function while the kernel compiles: its code counts
            return ("called", _record_fn(value))
        return ("named", value.__module__, value.__qualname__)  # the frontend never calls it
    if isinstance(value, (types.BuiltinFunctionType, type)):
        module = getattr(value, "__module__", None) or ""
        if module == "builtins" or module.split(".")[0] in VALUE_PACKAGES:
            return ("named", module, value.__qualname__)
        raise Uncacheable(f"reads {value!r}")
    module = type(value).__module__.split(".")[0]
    text = repr(value)
    if module in VALUE_PACKAGES and " at 0x" not in text and " object>" not in text:
        return ("v", type(value).__qualname__, text)
    raise Uncacheable(f"reads a {type(value).__qualname__} ({text[:60]})")


def _matches(value: Any, rec: tuple) -> bool:
    """Whether ``value`` is what ``rec`` recorded (an unrecordable value never matches)."""
    kind = rec[0]
    if kind == "inline":
        return isinstance(value, InlineFunction) and _fn_matches(value.fn, rec[1])
    if kind == "host":
        return isinstance(value, HostFunction) and _fn_matches(value.fn, rec[1])
    if kind == "called":
        return isinstance(value, types.FunctionType) and _fn_matches(value, rec[1])
    if kind == "kernel":
        if not isinstance(value, (JitFunction, KernelFunction)):
            return False
        return rec[1:3] == _kernel_head(value) and _fn_matches(value.fn, rec[3])
    if kind == "module":
        if not isinstance(value, types.ModuleType) or value.__name__ != rec[1]:
            return False
        return all(_matches(getattr(value, a, ABSENT), sub) for a, sub in rec[2])
    try:
        return _record(value, frozenset()) == rec if kind not in ("seq", "dict") else _seq_matches(value, rec)
    except Uncacheable:
        return False


def _seq_matches(value: Any, rec: tuple) -> bool:
    if rec[0] == "dict":
        if not isinstance(value, dict) or len(value) != len(rec[1]):
            return False
        return all(repr(k) == rk and _matches(v, sub) for (k, v), (rk, sub) in zip(value.items(), rec[1]))
    if type(value).__name__ != rec[1] or not isinstance(value, (tuple, list, frozenset)):
        return False
    if len(rec) > 3 and _class_files(value) != rec[3]:  # a subclass's code (Uncacheable: no match)
        return False
    items = sorted(value, key=repr) if isinstance(value, frozenset) else value
    return len(items) == len(rec[2]) and all(_matches(v, sub) for v, sub in zip(items, rec[2]))
