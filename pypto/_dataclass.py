"""``@dataclass`` for the compiler's classes, made without compiling code per method.

The standard decorator writes each generated method (``__init__``, ``__repr__``, ``__eq__``,
``__hash__``, and a frozen class's ``__setattr__``/``__delattr__``) as source text and
compiles it: six compiles for a frozen class, about half a millisecond. A compile in a new
process imports some sixty dataclasses, so that was a third of its Python time. Here the
standard module still reads the fields (``dataclasses.fields``, ``replace``, ``asdict`` and
``is_dataclass`` see the usual ``Field`` records) but is asked to generate nothing; only
``__init__`` is compiled, once per class and only when first looked up (about half the
classes a compile loads make no instance in it), and the other methods are shared functions
over the class's field names, with the standard ones' behaviour: ``==`` by the compared
fields between instances of the same class, the hash of their tuple, the same ``repr`` and
the same ``FrozenInstanceError``. ``__dataclass_params__`` says what the standard module was
asked to generate (nothing), so it does not check that a frozen class's bases are frozen too.

Options beyond ``frozen`` (and a field typed ``InitVar`` or named ``self``) go to the standard
decorator as is.

The compiled ``__init__``s are kept as bytecode is: in a file beside this module's ``.pyc``
(``_dataclass_inits.<tag>.bin``, by the same rules: not written under
``PYTHONDONTWRITEBYTECODE``, moved by ``PYTHONPYCACHEPREFIX``), keyed by their exact source
text, so a new process unmarshals them (microseconds) instead of compiling them (a new
process's first compile compiled some fifty, an eighth of its Python instructions). A
process that compiled one the file lacked adds it at exit.
"""

from __future__ import annotations

import dataclasses
import marshal
import os
import reprlib
import sys
from operator import attrgetter
from types import CodeType

TYPE_CHECKING = False
if TYPE_CHECKING:  # type checkers know the standard decorator's rules; these are the same
    from collections.abc import Callable
    from dataclasses import dataclass as dataclass
    from typing import Any
else:
    __all__ = ["dataclass"]

    def dataclass(cls=None, /, *, frozen=False, **options):
        """``dataclasses.dataclass`` (``@dataclass`` or ``@dataclass(frozen=True)``)."""

        def wrap(cls):
            if options or _needs_the_standard_init(cls):
                return dataclasses.dataclass(cls, frozen=frozen, **options)
            return _process(cls, frozen)

        return wrap if cls is None else wrap(cls)


_MISSING = dataclasses.MISSING


def _needs_the_standard_init(cls: type) -> bool:
    """A field typed ``InitVar`` or named ``self``: the standard ``__init__`` handles them."""
    notes = cls.__dict__.get("__annotations__", {})
    return "self" in notes or any("InitVar" in (n if isinstance(n, str) else repr(n)) for n in notes.values())


def _process(cls: type, frozen: bool) -> type:
    documented = bool(cls.__dict__.get("__doc__"))
    if not documented:
        cls.__doc__ = cls.__name__  # keeps the standard module from reading a signature now
    dataclasses.dataclass(cls, init=False, repr=False, eq=False)
    fields = dataclasses.fields(cls)
    own = cls.__dict__
    if frozen and ("__setattr__" in own or "__delattr__" in own):
        raise TypeError(f"Cannot overwrite attribute __setattr__ in class {cls.__name__}")
    _check_defaults_last(fields)
    if "__init__" not in own:
        cls.__init__ = _LazyInit(cls, fields, frozen, hasattr(cls, "__post_init__"))  # type: ignore[misc]
    _set(cls, "__repr__", _repr(cls, tuple(f.name for f in fields if f.repr)))
    _set(cls, "__eq__", _eq(cls, _getter(tuple(f.name for f in fields if f.compare))))
    _hash(cls, fields, frozen)
    if frozen:
        _freeze(cls, frozenset(f.name for f in fields))
    if not documented:
        _document(cls, fields)
    return cls


def _set(cls: type, name: str, fn: Any) -> None:
    """Adds a generated method unless the class defines its own (as the standard module does)."""
    if name not in cls.__dict__:
        fn.__qualname__ = f"{cls.__qualname__}.{fn.__name__}"
        setattr(cls, name, fn)


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of an instance's ``names`` (a tuple even for one name or none)."""
    if len(names) >= 2:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


_OBJECT, _HAS_FACTORY = "__dataclass_builtins_object__", "__dataclass_HAS_DEFAULT_FACTORY__"


class _LazyInit:
    """``cls.__init__`` until it is first looked up (an instance made, a signature read): then
    it compiles the real one, which replaces it. A compile that makes no instance of a class
    never pays for its ``__init__``."""

    __slots__ = ("cls", "fields", "frozen", "post_init")

    def __init__(self, cls: type, fields: tuple[dataclasses.Field[Any], ...], frozen: bool, post_init: bool):
        self.cls, self.fields, self.frozen, self.post_init = cls, fields, frozen, post_init

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        real = self.cls.__dict__["__init__"]
        if real is self:
            real = _init(self.cls, self.fields, self.frozen, self.post_init)
            real.__qualname__ = f"{self.cls.__qualname__}.__init__"
            type.__setattr__(self.cls, "__init__", real)
        return real.__get__(obj, owner)


def _init(cls: type, fields: tuple[dataclasses.Field[Any], ...], frozen: bool, post_init: bool) -> Any:
    """The one compiled method: the text the standard module writes, with its checks."""
    scope: dict[str, Any] = {_OBJECT: object, _HAS_FACTORY: _FACTORY}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    in_dict = frozen and _plain_instance_dict(cls, fields)
    if in_dict:
        body.append("__dataclass_d__=self.__dict__")
    for f in fields:
        default = f"__dataclass_dflt_{f.name}__"
        if f.init:
            (keyword if f.kw_only else positional).append(f.name + _parameter_default(f, default))
        value = _initial_value(f, default)
        if value is not None:
            scope[default] = f.default if f.default_factory is _MISSING else f.default_factory
            if in_dict:
                body.append(f"__dataclass_d__[{f.name!r}]={value}")
            elif frozen:
                body.append(f"{_OBJECT}.__setattr__(self,{f.name!r},{value})")
            else:
                body.append(f"self.{f.name}={value}")
    if post_init:
        body.append("self.__post_init__()")
    args = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    exec(_compiled(f"def __init__({args}):\n" + "".join(f" {line}\n" for line in body or ["pass"])), scope)
    fn = scope["__init__"]
    fn.__annotations__ = {**{f.name: f.type for f in fields if f.init}, "return": None}
    return fn


class _Codes:
    """The compiled ``__init__`` texts: those of the file beside this module's ``.pyc`` (read on
    first use, each code object unmarshalled only when its class needs it) and those compiled
    here, which are added to the file at exit."""

    MAX = 4096  # entries kept; past it the file keeps only what this process used
    stored: dict[str, bytes] | None = None
    used: dict[str, bytes] = {}
    fresh = False

    @staticmethod
    def path() -> str | None:
        pyc = globals().get("__cached__")  # None when this module was not loaded from a file
        if not pyc:
            return None
        tag = f"{sys.implementation.cache_tag}-{sys.hexversion:x}"  # bytecode of this interpreter
        return os.path.join(os.path.dirname(pyc), f"_dataclass_inits.{tag}.bin")

    @staticmethod
    def read(path: str | None) -> dict[str, bytes]:
        """The file's table (source text -> marshalled code); empty when it is missing,
        unreadable or not such a table."""
        try:
            with open(path or "", "rb") as f:
                table = marshal.loads(f.read())
        except (OSError, ValueError, EOFError, TypeError):
            return {}
        if not isinstance(table, dict):
            return {}
        return {k: v for k, v in table.items() if isinstance(k, str) and isinstance(v, bytes)}

    @classmethod
    def save(cls) -> None:
        """Adds what this process compiled to the file (written whole, then renamed in)."""
        path = cls.path()
        if path is None:
            return
        table = {**cls.read(path), **cls.used}
        if len(table) > cls.MAX:
            table = dict(cls.used)
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(tmp, "wb") as f:
                f.write(marshal.dumps(table))
            os.replace(tmp, path)
        except OSError:
            import contextlib  # at exit only

            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _compiled(source: str) -> CodeType:
    """The code of ``source`` (a ``def __init__``), from the file when it has it."""
    if _Codes.stored is None:
        _Codes.stored = _Codes.read(_Codes.path())
    data = _Codes.stored.get(source)
    code = None
    if data is not None:
        try:
            code = marshal.loads(data)
        except (ValueError, EOFError, TypeError):
            code = None
    if not isinstance(code, CodeType):
        code = compile(source, "<string>", "exec")
        data = marshal.dumps(code)
        if not _Codes.fresh and not sys.dont_write_bytecode:
            import atexit

            atexit.register(_Codes.save)
            _Codes.fresh = True
    assert data is not None
    _Codes.used[source] = data
    return code


def _plain_instance_dict(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> bool:
    """Whether a frozen instance's fields may be stored straight into its ``__dict__`` (what
    ``object.__setattr__`` does then, at a fifth of the cost: a plan of 16,448 tasks makes some
    fifty thousand frozen instances): it has one, and no class on its MRO makes a field's name a
    data descriptor."""
    if any("__slots__" in vars(c) for c in cls.__mro__[:-1]):
        return False
    for f in fields:
        for c in cls.__mro__:
            attr = vars(c).get(f.name)
            if attr is not None and hasattr(type(attr), "__set__"):
                return False
    return True


def _parameter_default(f: dataclasses.Field[Any], default: str) -> str:
    if f.default_factory is not _MISSING:
        return "=" + _HAS_FACTORY
    return "" if f.default is _MISSING else "=" + default


def _initial_value(f: dataclasses.Field[Any], default: str) -> str | None:
    """What ``__init__`` sets the field to; None: nothing (the class attribute holds it)."""
    if f.default_factory is _MISSING:
        return f.name if f.init else None
    return f"{default}() if {f.name} is {_HAS_FACTORY} else {f.name}" if f.init else f"{default}()"


def _check_defaults_last(fields: tuple[dataclasses.Field[Any], ...]) -> None:
    seen_default = False
    for f in fields:
        if f.init and not f.kw_only:
            has_default = f.default is not _MISSING or f.default_factory is not _MISSING
            if seen_default and not has_default:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
            seen_default = seen_default or has_default


class _HasDefaultFactory:
    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _HasDefaultFactory()


def _repr(cls: type, names: tuple[str, ...]) -> Any:
    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{self.__class__.__qualname__}({shown})"

    return __repr__


def _eq(cls: type, key: Callable[[Any], tuple[Any, ...]]) -> Any:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented

    return __eq__


def _hash(cls: Any, fields: tuple[dataclasses.Field[Any], ...], frozen: bool) -> None:
    """As the standard module with ``eq=True``: a frozen class hashes its fields, a mutable one
    is unhashable; a ``__hash__`` the class defines is kept."""
    own = cls.__dict__.get("__hash__", _MISSING)
    if not (own is _MISSING or (own is None and "__eq__" in cls.__dict__)):
        return
    if not frozen:
        cls.__hash__ = None
        return
    key = _getter(tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash)))

    def __hash__(self: Any) -> int:
        return hash(key(self))

    __hash__.__qualname__ = f"{cls.__qualname__}.__hash__"
    cls.__hash__ = __hash__


def _freeze(cls: Any, names: frozenset[str]) -> None:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    _set(cls, "__setattr__", __setattr__)
    _set(cls, "__delattr__", __delattr__)


def _document(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> None:
    """The standard module's docstring for an undocumented class, its name and ``__init__``'s
    signature, written from the fields (reading the signature would compile ``__init__``)."""
    import inspect  # loaded by dataclasses already

    def parameter(f: dataclasses.Field[Any]) -> inspect.Parameter:
        kind = inspect.Parameter.KEYWORD_ONLY if f.kw_only else inspect.Parameter.POSITIONAL_OR_KEYWORD
        default = _FACTORY if f.default_factory is not _MISSING else f.default
        return inspect.Parameter(
            f.name,
            kind,
            default=inspect.Parameter.empty if default is _MISSING else default,
            annotation=f.type,
        )

    shown = [f for f in fields if f.init and not f.kw_only] + [f for f in fields if f.init and f.kw_only]
    cls.__doc__ = cls.__name__ + str(inspect.Signature([parameter(f) for f in shown]))
