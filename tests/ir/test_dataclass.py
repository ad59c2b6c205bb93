"""``pypto._dataclass.dataclass`` makes the same classes as ``dataclasses.dataclass``: each
class is declared twice, once with each decorator, and the twins must agree on everything a
user or the IR's walkers see (the signature, the fields, ``repr``, ``==``, ``hash``, frozen
errors, ``replace``, pickling, ``__post_init__``, defaults and factories)."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import os
import pickle
import re
import subprocess
import sys
from dataclasses import field
from pathlib import Path

import pytest

from pypto._dataclass import dataclass


def one() -> int:
    return 1


def declare(decorator):  # the same classes under either decorator
    @decorator(frozen=True)
    class Base:
        """A frozen base with a keyword-only field that == ignores."""

        span: object = field(default=None, compare=False, repr=False, kw_only=True)

    @decorator(frozen=True)
    class Leaf(Base):
        name: str
        size: int = 3
        dims: tuple = field(default_factory=tuple)
        note: str = field(default="", hash=False)

    @decorator
    class Mutable:
        """A mutable class with a factory default and a __post_init__."""

        items: list
        table: dict = field(default_factory=dict)
        hidden: int = field(default=7, init=False)
        count: int = field(default_factory=one, init=False)

        def __post_init__(self) -> None:
            self.total = len(self.items) + self.count

    @decorator(frozen=True)
    class Custom:
        """Its own __repr__ and __hash__ are kept."""

        value: int

        def __repr__(self) -> str:
            return "custom"

        def __hash__(self) -> int:
            return 5

    return Base, Leaf, Mutable, Custom


OURS = dict(zip(("Base", "Leaf", "Mutable", "Custom"), declare(dataclass)))
STD = dict(zip(("Base", "Leaf", "Mutable", "Custom"), declare(dataclasses.dataclass)))
# pickle finds classes by qualified name: these are module globals
Leaf, StdLeaf = OURS["Leaf"], STD["Leaf"]
Leaf.__qualname__, StdLeaf.__qualname__ = "Leaf", "StdLeaf"


@pytest.mark.parametrize("name", sorted(OURS))
def test_signatures_fields_and_docs_match(name: str) -> None:
    ours, std = OURS[name], STD[name]
    assert str(inspect.signature(ours)) == str(inspect.signature(std))
    assert [repr(f) for f in dataclasses.fields(ours)] == [repr(f) for f in dataclasses.fields(std)]
    assert ours.__match_args__ == std.__match_args__ and dataclasses.is_dataclass(ours)
    assert ours.__doc__ == std.__doc__
    assert ours.__init__.__annotations__ == std.__init__.__annotations__


def both(name: str, *args, **kwargs):
    return OURS[name](*args, **kwargs), STD[name](*args, **kwargs)


def test_equality_hash_and_repr_match() -> None:
    (a, sa), (b, sb) = both("Leaf", "x", span=1, note="p"), both("Leaf", "x", span=2, note="q")
    assert (a == b) == (sa == sb) is False  # note is compared
    (c, sc), (d, sd) = both("Leaf", "x", 4, (1, 2), span=1), both("Leaf", "x", 4, (1, 2), span=9)
    assert c == d and sc == sd and hash(c) == hash(d) == hash(sc) and hash(d) == hash(sd)
    assert hash(OURS["Leaf"]("x", note="p")) == hash(OURS["Leaf"]("x", note="q"))  # hash=False
    assert repr(c).replace("Leaf", "X") == repr(sc).replace("StdLeaf", "X")
    assert (c == sc) is False and c.__eq__(sc) is NotImplemented  # another class
    assert repr(OURS["Custom"](1)) == "custom" and hash(OURS["Custom"](1)) == 5


def test_a_mutable_class_runs_post_init_fills_factories_and_is_unhashable() -> None:
    (m, sm) = both("Mutable", [1, 2])
    assert (m.table, m.hidden, m.count, m.total) == (sm.table, sm.hidden, sm.count, sm.total) == ({}, 7, 1, 3)
    assert m.table is not OURS["Mutable"]([]).table  # a new dict per instance
    assert OURS["Mutable"].__hash__ is None is STD["Mutable"].__hash__
    m.items = [5]
    assert m == OURS["Mutable"]([5]) and repr(m).endswith("Mutable(items=[5], table={}, hidden=7, count=1)")


def test_frozen_instances_refuse_changes_as_the_standard_ones_do() -> None:
    leaf, std = both("Leaf", "x")
    for obj in (leaf, std):
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'name'"):
            obj.name = "y"
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'size'"):
            del obj.size
    moved = dataclasses.replace(leaf, name="y")
    assert moved.name == "y" and moved.size == 3 and leaf.name == "x"


def test_frozen_fields_behind_a_descriptor_or_in_slots_are_set_through_them() -> None:
    # A frozen instance's fields go straight into its __dict__, unless a base makes a field's
    # name a data descriptor (it must see the value) or keeps its state in slots.
    class Checked:
        @property
        def size(self) -> int:
            return self.__dict__["seen"]

        @size.setter
        def size(self, value: int) -> None:
            self.__dict__["seen"] = value * 10

    class Slotted:
        __slots__ = ("__dict__", "extra")

    for base, stored in ((Checked, 70), (Slotted, 7), (object, 7)):

        @dataclass(frozen=True)
        class Sized(base):  # type: ignore[valid-type, misc]
            size: int
            name: str = "n"

        ours = Sized(7)
        assert ours.size == stored and ours.name == "n" and vars(ours)["name"] == "n"
        with pytest.raises(dataclasses.FrozenInstanceError):
            ours.name = "m"


def test_instances_pickle_and_copy() -> None:
    leaf = Leaf("x", 4, (1,), span=3)
    for twin in (pickle.loads(pickle.dumps(leaf)), copy.deepcopy(leaf), copy.copy(leaf)):
        assert twin == leaf and twin.span == 3


def test_wrong_calls_and_declarations_fail_like_the_standard_ones() -> None:
    with pytest.raises(TypeError, match=r"__init__\(\) missing 1 required positional argument: 'name'"):
        OURS["Leaf"]()
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):

        @dataclass
        class Bad:
            a: int = 1
            b: int  # type: ignore[misc]

    with pytest.raises(ValueError, match="mutable default"):

        @dataclass
        class Shared:
            items: list = []  # noqa: RUF012


def test_other_options_are_the_standard_decorator() -> None:
    @dataclass(order=True)
    class Ordered:
        a: int

    @dataclass(frozen=True)
    class Odd:
        self: int
        setup: dataclasses.InitVar[int] = 0

        def __post_init__(self, setup: int) -> None:
            object.__setattr__(self, "seen", setup)

    assert Ordered(1) < Ordered(2) and Ordered.__dataclass_params__.order
    assert Odd(1, 5).self == 1 and Odd(1, 5).seen == 5 and Odd.__dataclass_params__.frozen


def test_init_made_on_first_use_works_through_subclasses_and_super() -> None:
    @dataclass(frozen=True)
    class Parent:
        a: int
        b: int = 2

    class Plain(Parent):  # not a dataclass: inherits Parent's __init__
        pass

    class Custom(Parent):
        def __init__(self, a: int) -> None:
            super().__init__(a, b=a * 10)

    assert Plain(1) == Plain(1, 2) and (Plain(1).a, Plain(1).b) == (1, 2)
    assert (Custom(3).a, Custom(3).b) == (3, 30)
    assert Parent(5).b == 2 and str(inspect.signature(Parent)) == "(a: 'int', b: 'int' = 2) -> None"
    assert Parent.__init__.__qualname__.endswith("Parent.__init__")


COMPILER_ROOMS = ("ir", "ops", "frontend", "diagnostics", "passes", "codegen", "compile", "kernel_build")


def test_the_compilers_rooms_make_their_dataclasses_with_the_cheap_decorator() -> None:
    # A new process's first compile imports every class these rooms define: one made by the
    # standard decorator costs it six compiles.
    package = Path(__file__).resolve().parents[2] / "pypto"
    standard = re.compile(r"^from dataclasses import .*\bdataclass\b|@dataclasses\.dataclass\b", re.M)
    offenders = [
        str(path.relative_to(package))
        for room in COMPILER_ROOMS
        for path in sorted((package / room).rglob("*.py"))
        if standard.search(path.read_text())
    ]
    assert offenders == []


# A new process that makes IR nodes: how many ``__init__``s it compiled, and that they work.
MAKE_NODES = """
import pypto._dataclass as made

compiled = []
made.compile = lambda *args: compiled.append(args[0]) or compile(*args)
from pypto.ir.dtypes import FP32
from pypto.ir.expr import Const, Var
from pypto.ir.types import ScalarType

v = Var("n", ScalarType(FP32))
assert (v.name, v.type, Const(3, FP32).value) == ("n", ScalarType(FP32), 3)
print(len(compiled))
"""


def made_nodes(cache: Path, write: bool = True) -> int:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)  # the .pyc files and the init file go there
    if not write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    command = [sys.executable, "-c", MAKE_NODES]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return int(proc.stdout)


def test_compiled_inits_are_kept_beside_the_bytecode_for_the_next_process(tmp_path: Path) -> None:
    assert made_nodes(tmp_path, write=False) > 0
    assert not list(tmp_path.rglob("_dataclass_inits.*"))  # as no .pyc is written
    first = made_nodes(tmp_path)
    [kept] = tmp_path.rglob("_dataclass_inits.*.bin")
    assert first > 0 and made_nodes(tmp_path) == 0  # the next process compiles none
    kept.write_bytes(b"not a table")
    assert made_nodes(tmp_path) == first  # a bad file is ignored, then written anew
    assert made_nodes(tmp_path) == 0
