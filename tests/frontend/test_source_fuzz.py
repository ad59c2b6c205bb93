"""Random user-style kernels (Python rebinding, ``+=``, nested loops, runtime ``if``) parse,
verify, and survive ``parse(print(p)) == p``.

The kernels are written as real files (the frontend reads source with ``inspect``), so this
also exercises the implicit loop-carried / branch-merge conversion on shapes nobody wrote
by hand.
"""

from __future__ import annotations

import atexit
import importlib.util
import itertools
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pypto import ir
from pypto.frontend import parse_text

NAMES = ["x0", "x1", "x2"]
_DIR = Path(tempfile.mkdtemp(prefix="pypto_fuzz_"))
atexit.register(shutil.rmtree, _DIR, ignore_errors=True)
_IDS = itertools.count()


@st.composite
def statements(draw: st.DrawFn, defined: frozenset[str], depth: int, indent: str, loop_vars: tuple[str, ...]):
    """Lines of a block and the names defined after it."""
    lines: list[str] = []
    names = set(defined)
    for _ in range(draw(st.integers(1, 4))):
        pool = sorted(names)
        kind = draw(st.integers(0, 9))
        src = draw(st.sampled_from(pool))
        dst = draw(st.sampled_from(NAMES))
        if kind <= 2:
            op = draw(st.sampled_from(["pl.exp", "pl.relu", "pl.neg", "pl.abs"]))
            lines.append(f"{indent}{dst} = {op}({src})")
        elif kind <= 4:
            other = draw(st.sampled_from(pool))
            op = draw(st.sampled_from(["+", "-", "*"]))
            lines.append(f"{indent}{dst} = {src} {op} {other}")
        elif kind == 5 and dst in names:
            lines.append(f"{indent}{dst} += {src}")
        elif kind == 6:
            scale = draw(st.sampled_from(["2.0", "0.5", "3"]))
            lines.append(f"{indent}{dst} = pl.muls({src}, {scale})")
        elif kind == 7 and depth > 0:
            var = f"i{depth}"
            loop = draw(
                st.sampled_from(
                    ["pl.range(3)", "pl.range(0, 4, 2)", "pl.unroll(2)", "pl.pipeline(4, stage=2)"]
                )
            )
            body, _ = draw(statements(frozenset(names), depth - 1, indent + "    ", loop_vars + (var,)))
            lines += [f"{indent}for {var} in {loop}:", *body]
            continue  # names first bound in the loop body are not visible after it
        elif kind == 8 and loop_vars and depth > 0:
            cond = f"{draw(st.sampled_from(loop_vars))} % 2 == 0"
            then, then_names = draw(statements(frozenset(names), depth - 1, indent + "    ", loop_vars))
            other, else_names = draw(statements(frozenset(names), depth - 1, indent + "    ", loop_vars))
            lines += [f"{indent}if {cond}:", *then, f"{indent}else:", *other]
            names |= then_names & else_names
            continue
        else:
            lines.append(f"{indent}pl.store({src}, [0, 0], out)")
            continue
        names.add(dst)
    return lines, frozenset(names)


@st.composite
def kernels(draw: st.DrawFn) -> str:
    body, names = draw(statements(frozenset({"x0"}), 2, " " * 8, ()))
    last = draw(st.sampled_from(sorted(names)))
    return "\n".join(
        [
            "import pypto.language as pl",
            "",
            "",
            "@pl.jit",
            "def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):",
            "    with pl.at(level=pl.Level.CORE_GROUP):",
            "        x0 = pl.load(a, [0, 0], [64, 128])",
            *body,
            f"        pl.store({last}, [0, 0], out)",
            "    return out",
            "",
        ]
    )


def load_kernel(source: str):
    name = f"pypto_fuzz_{next(_IDS)}"
    path = _DIR / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.kernel


A = np.zeros((64, 128), np.float32)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kernels())
def test_random_user_kernels_round_trip(source: str) -> None:
    p = load_kernel(source).parse(A, A)
    text = ir.print_program(p)
    again = parse_text(text)
    ir.assert_structural_equal(p, again, names=True)
    assert ir.print_program(again) == text
