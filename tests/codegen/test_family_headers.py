"""The op families (pypto/ops) reach the kernel: the installed ``pypto/families.h`` and
``pypto/families.hpp`` are what the family tables generate, every emitter calls a spelling its
family declares, and no family entry point is also written by hand in ``abi.h`` or
``kernel.hpp``."""

from __future__ import annotations

import re
from pathlib import Path

from pypto.codegen.emitters import EMITTERS
from pypto.ir.ops import DSL_OPS, OPS
from pypto.kernel_build.toolchain import toolchain
from pypto.ops import FAMILIES
from pypto.ops.family import CEntry
from pypto.ops.header import c_header, kernel_header, wrapper

SOURCE_HEADERS = Path(__file__).resolve().parents[2] / "csrc" / "include" / "pypto"


def test_the_installed_headers_are_the_tables() -> None:
    installed = toolchain().include_dir / "pypto"
    assert (installed / "families.h").read_text() == c_header(FAMILIES)
    assert (installed / "families.hpp").read_text() == kernel_header(FAMILIES)


def test_every_family_op_is_in_the_tables() -> None:
    for fam in FAMILIES:
        for op in fam.ops:
            assert OPS[op.name] is op
        for spelling, candidates in fam.dsl.items():
            assert DSL_OPS[spelling][: len(candidates)] == candidates
        assert set(fam.emitters) <= {op.name for op in fam.ops}
        assert all(op in EMITTERS for op in fam.emitters)


def test_every_emitter_calls_a_spelling_of_its_family() -> None:
    for fam in FAMILIES:
        spellings = {s for entry in fam.abi for s, _ in entry.spellings}
        for op, emit in fam.emitters.items():
            if isinstance(emit, str):
                called = re.match(r"\s*(\w+)\(", emit)
                assert called and called.group(1) in spellings, (op, emit)


def test_family_entry_points_are_not_also_written_by_hand() -> None:
    abi, kernel = ((SOURCE_HEADERS / n).read_text() for n in ("abi.h", "kernel.hpp"))
    for fam in FAMILIES:
        for entry in fam.abi:
            assert re.search(rf"\b{entry.name}\(", abi) is None, entry.name
            for spelling, _ in entry.spellings:
                assert re.search(rf"\b{spelling}\(", kernel) is None, spelling


def test_a_wrapper_takes_tiles_by_reference_and_fixes_what_its_spelling_names() -> None:
    entry = CEntry("pypto_tx", ("int32_t mode", "const pypto_tile* dst", "double s"), "", ())
    assert wrapper(entry, "TX2", {"mode": "2"}) == (
        "inline void TX2(const Tile& dst, double s) { pypto_tx(2, &dst, s); }"
    )
    ret = CEntry("pypto_ty", ("const pypto_tile* t",), "", (), returns="double")
    assert wrapper(ret, "TY", {}) == "inline double TY(const Tile& t) { return pypto_ty(&t); }"
