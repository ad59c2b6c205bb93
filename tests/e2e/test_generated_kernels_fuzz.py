"""Random @pl.jit kernels, with the simulator as the oracle.

Hypothesis draws a small program — windowed loads (also from the output, read after
write) and stores, elementwise chains (tile and scalar forms, exp/relu/neg/abs/sqrt),
row_sum/row_max with a scratch tile and the row_expand ops, ``pl.range`` loops (1–4
trips, nested), loop-carried accumulators, ``if`` on the loop variable, tiles in explicit
``pl.MemRef(..., slots=N)[i % N]`` slots. It is written out as a real ``.py`` module,
imported, compiled through the whole pipeline and run on the simulator; the result must
match a numpy interpretation of the same program (float32, same op order), and the run
must raise no HazardError (a missing sync is a race the native checker reports) and no
DeadlockError. Magnitudes are tracked while drawing so that no value overflows: every
difference is a bug. ``PYPTO_FUZZ_EXAMPLES`` raises the example count for a long hunt
(with ``PYPTO_FUZZ_RANDOM=1``; the suite's own run is derandomised).
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import os
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pypto.runtime import RunConfig

CFG = RunConfig(platform="a2a3sim")
SHAPES = [(8, 32), (16, 64), (8, 128), (4, 64), (32, 32)]  # fp32 tiles of 1-4 KiB
ROWS = 16  # input/output tensors hold ROWS tiles stacked vertically
UNARY = {
    "exp": np.exp,
    "relu": lambda x: np.maximum(x, np.float32(0)),
    "neg": np.negative,
    "abs": np.abs,
}
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply}
SCALAR = {"adds": np.add, "subs": np.subtract, "muls": np.multiply, "divs": np.divide}
ROW_EXPAND = {"add": np.add, "sub": np.subtract, "mul": np.multiply}
MAX_MAGNITUDE = 1e4


# --- the program -------------------------------------------------------------------------
@dataclass(frozen=True)
class E:
    """An expression: ``src`` is its DSL text, ``fn(env)`` its numpy value, ``bound`` a bound on
    its magnitude, ``col`` whether it is an [r, 1] row vector."""

    src: str
    fn: object
    bound: float
    col: bool = False


@dataclass
class Gen:
    draw: st.DrawFn
    r: int
    c: int
    tiles: dict[str, tuple[bool, float, int]] = field(default_factory=dict)  # name -> (col, bound, level)
    loops: list[tuple[str, int]] = field(default_factory=list)
    names: itertools.count = field(default_factory=itertools.count)
    stores: int = 0

    def row(self) -> tuple[str, object]:
        """A window row (in tiles): a constant plus some enclosing loop variables."""
        base = self.draw(st.integers(0, 3))
        used = [v for v, _ in self.loops if self.draw(st.booleans())]
        text = " + ".join([str(base), *used])
        return f"({text}) * {self.r}", lambda env: (base + sum(env[v] for v in used)) * self.r

    def leaf(self, col: bool) -> E:
        have = [n for n, (c, _, _) in self.tiles.items() if c == col]
        if have and self.draw(st.integers(0, 2)):
            n = self.draw(st.sampled_from(have))
            return E(n, lambda env: env[n], self.tiles[n][1], col)
        if col:
            x = self.expr(depth=0, col=False)
            return self.reduce(x)
        tensor = self.draw(st.sampled_from(["a", "b", "a", "b", "out"]))  # out: read after write in GM
        text, at = self.row()
        return E(
            f"pl.load({tensor}, [{text}, 0], [{self.r}, {self.c}])",
            lambda env: env[tensor][at(env) : at(env) + self.r].copy(),
            1.0,
        )

    def reduce(self, x: E) -> E:
        kind = self.draw(st.sampled_from(["row_sum", "row_max"]))
        src = f"pl.{kind}({x.src}, pl.create_tile([{self.r}, {self.c}], pl.FP32))"
        f = np.sum if kind == "row_sum" else np.max
        bound = x.bound * (self.c if kind == "row_sum" else 1)
        return E(src, lambda env: f(x.fn(env), axis=1, keepdims=True).astype(np.float32), bound, True)

    def expr(self, depth: int = 2, col: bool = False) -> E:
        x = self.leaf(col)
        for _ in range(self.draw(st.integers(0, depth))):
            x = self.step(x)
        return x

    def step(self, x: E) -> E:
        """One op applied to ``x`` (only when the result stays far from overflow)."""
        kind = self.draw(st.sampled_from(["unary", "binary", "scalar", "sqrt", "div", "row"]))
        if kind == "unary":
            op = self.draw(st.sampled_from(sorted(UNARY)))
            if op == "exp" and x.bound > 5:
                return x
            bound = math.exp(x.bound) if op == "exp" else x.bound
            return E(f"pl.{op}({x.src})", lambda env: UNARY[op](x.fn(env)), bound, x.col)
        if kind == "sqrt":  # of |x|: no NaN
            return E(
                f"pl.sqrt(pl.abs({x.src}))", lambda env: np.sqrt(np.abs(x.fn(env))), math.sqrt(x.bound), x.col
            )
        if kind == "scalar":
            op = self.draw(st.sampled_from(sorted(SCALAR)))
            k = self.draw(st.sampled_from([0.5, 2.0, -1.5, 3.0]))
            bound = x.bound + abs(k) if op in ("adds", "subs") else x.bound * max(abs(k), 1 / abs(k))
            return E(f"pl.{op}({x.src}, {k})", lambda env: SCALAR[op](x.fn(env), np.float32(k)), bound, x.col)
        if kind == "div":  # by |y| + 1: no division by zero
            y = self.expr(0, x.col)
            src = f"pl.div({x.src}, pl.adds(pl.abs({y.src}), 1.0))"
            return E(src, lambda env: x.fn(env) / (np.abs(y.fn(env)) + np.float32(1)), x.bound, x.col)
        if kind == "row" and not x.col:
            v = self.expr(0, col=True)
            op = self.draw(st.sampled_from(sorted(ROW_EXPAND)))
            bound = x.bound * v.bound if op == "mul" else x.bound + v.bound
            return E(
                f"pl.row_expand_{op}({x.src}, {v.src})",
                lambda env: ROW_EXPAND[op](x.fn(env), v.fn(env)),
                bound,
                False,
            )
        op = self.draw(st.sampled_from(sorted(BINARY)))
        y = self.expr(0, x.col)
        bound = x.bound * y.bound if op == "mul" else x.bound + y.bound
        return E(f"pl.{op}({x.src}, {y.src})", lambda env: BINARY[op](x.fn(env), y.fn(env)), bound, x.col)

    # --- statements ------------------------------------------------------------------------
    def block(self, depth: int, n: int) -> list:
        return [self.stmt(depth) for _ in range(n)]

    def stmt(self, depth: int):
        kind = self.draw(st.sampled_from(["assign", "assign", "store", "loop", "accumulate", "if"]))
        if kind == "loop" and depth < 2:
            return self.loop(depth)
        if kind == "accumulate" and depth < 2:
            return self.accumulate(depth)
        if kind == "if" and self.loops:
            return self.if_(depth)
        if kind == "store":
            return self.store()
        if self.loops and self.draw(st.integers(0, 3)) == 0:
            return self.slotted()
        return self.assign()

    def slotted(self):
        """A tile in an explicit ``pl.MemRef(..., slots=N)[index]`` (its own declaration)."""
        var = self.draw(st.sampled_from(self.loops))[0]
        slots = self.draw(st.integers(2, 3))
        index = self.draw(st.sampled_from([f"{var} % {slots}", f"({var} + 1) % {slots}"]))
        name, x = self.assign(col=False)[1:]
        mem = f'pl.MemRef("ub{next(self.names)}", slots={slots})[{index}]'
        annotated = E(x.src, x.fn, x.bound)
        return (
            "assign",
            f"{name}: pl.Tile[[{self.r}, {self.c}], pl.FP32, {mem}, pl.Mem.Vec]",
            annotated,
            name,
        )

    def assign(self, name: str | None = None, col: bool | None = None):
        x = self.expr(col=self.draw(st.booleans()) if col is None else col)
        if x.bound > MAX_MAGNITUDE:
            x = E(f"pl.muls({x.src}, 0.0)", lambda env, f=x.fn: f(env) * np.float32(0), 0.0, x.col)
        name = name or f"t{next(self.names)}"
        self.tiles[name] = (x.col, x.bound, len(self.loops))
        return ("assign", name, x)

    def store(self, x: E | None = None):
        x = x or self.expr(col=False)
        text, at = self.row()
        self.stores += 1
        return ("store", x, text, at)

    def loop(self, depth: int):
        var, trips = f"i{len(self.loops)}", self.draw(st.integers(1, 4))
        self.loops.append((var, trips))
        outer = dict(self.tiles)
        body = self.block(depth + 1, self.draw(st.integers(1, 3)))
        self.loops.pop()
        self.tiles = {n: outer[n] for n in outer}  # body-local names end with the body
        return ("loop", var, trips, body)

    def accumulate(self, depth: int):
        """acc = x; for i: acc = pl.add(acc, <expr>) — a loop-carried tile. The body does not
        read acc otherwise, so its magnitude grows at most linearly with the trips."""
        init = self.assign(col=False)
        acc = init[1]
        start = self.tiles.pop(acc)
        var, trips = f"i{len(self.loops)}", self.draw(st.integers(1, 4))
        self.loops.append((var, trips))
        outer = dict(self.tiles)
        body = self.block(depth + 1, self.draw(st.integers(0, 2)))
        x = self.expr(depth=1, col=False)
        op = self.draw(st.sampled_from(["add", "sub"]))
        bound = start[1] + trips * x.bound
        self.loops.pop()
        self.tiles = dict(outer)
        if bound > MAX_MAGNITUDE:
            self.tiles[acc] = start
            return init
        self.tiles[acc] = (False, bound, start[2])
        update = E(f"pl.{op}({acc}, {x.src})", lambda env: BINARY[op](env[acc], x.fn(env)), bound)
        return ("block", [init, ("loop", var, trips, [*body, ("assign", acc, update)])])

    def if_(self, depth: int):
        var, trips = self.draw(st.sampled_from(self.loops))
        k = self.draw(st.integers(0, max(trips - 1, 0)))
        test, cond = self.draw(
            st.sampled_from(
                [
                    (f"{var} % 2 == 0", lambda env: env[var] % 2 == 0),
                    (f"{var} == {k}", lambda env: env[var] == k),
                    (f"{var} < {k}", lambda env: env[var] < k),
                ]
            )
        )
        level = len(self.loops)  # rebinding a tile of an outer level would make it loop-carried
        existing = [n for n, (c, _, lv) in self.tiles.items() if not c and lv == level]
        target = self.draw(st.sampled_from(existing)) if existing and self.draw(st.booleans()) else None
        target = target or f"t{next(self.names)}"
        outer = dict(self.tiles)
        then = self.block(depth + 1, self.draw(st.integers(0, 1))) + [self.assign(target, col=False)]
        then_bound = self.tiles[target][1]
        self.tiles = dict(outer)
        other = self.block(depth + 1, self.draw(st.integers(0, 1))) + [self.assign(target, col=False)]
        bound = max(then_bound, self.tiles[target][1])
        self.tiles = {**outer, target: (False, bound, level)}
        return ("if", test, cond, then, other)


@st.composite
def programs(draw):
    r, c = draw(st.sampled_from(SHAPES))
    g = Gen(draw, r, c)
    body = g.block(0, draw(st.integers(1, 5)))
    body.append(g.store(g.expr(col=False)))
    for name in [n for n, (col, _, _) in g.tiles.items() if not col][-3:]:  # so every value is checked
        body.append(g.store(E(name, lambda env, n=name: env[n], 0.0)))
    return r, c, body


# --- source text and the numpy reference ----------------------------------------------------
def source(body: list) -> str:
    lines = [
        "import pypto.language as pl",
        "",
        "",
        "@pl.jit",
        "def kernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):",
        "    with pl.at(level=pl.Level.CORE_GROUP):",
    ]
    _lines(body, 2, lines)
    lines.append("    return out")
    return "\n".join(lines) + "\n"


def _lines(body: list, depth: int, out: list[str]) -> None:
    pad = "    " * depth
    for s in body:
        if s[0] == "assign":
            out.append(f"{pad}{s[1]} = {s[2].src}")
        elif s[0] == "store":
            col = "0"
            out.append(f"{pad}pl.store({s[1].src}, [{s[2]}, {col}], out)")
        elif s[0] == "loop":
            out.append(f"{pad}for {s[1]} in pl.range({s[2]}):")
            _lines(s[3] or [("pass",)], depth + 1, out)
        elif s[0] == "if":
            out.append(f"{pad}if {s[1]}:")
            _lines(s[3], depth + 1, out)
            out.append(f"{pad}else:")
            _lines(s[4], depth + 1, out)
        elif s[0] == "block":
            _lines(s[1], depth, out)
        else:
            out.append(f"{pad}pass")


def reference(body: list, env: dict) -> None:
    for s in body:
        if s[0] == "assign":
            env[s[-1] if len(s) > 3 else s[1]] = s[2].fn(env).astype(np.float32)
        elif s[0] == "store":
            tile, row = s[1].fn(env), s[3](env)
            env["out"][row : row + tile.shape[0], : tile.shape[1]] = tile
        elif s[0] == "loop":
            for i in range(s[2]):
                env[s[1]] = i
                reference(s[3], env)
        elif s[0] == "if":
            reference(s[3] if s[2](env) else s[4], env)
        elif s[0] == "block":
            reference(s[1], env)


# --- the test ------------------------------------------------------------------------------------
_modules = itertools.count()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz_kernels")


@settings(
    max_examples=int(os.environ.get("PYPTO_FUZZ_EXAMPLES", "25")),
    # The suite's run is reproducible (same programs every time); PYPTO_FUZZ_RANDOM=1 hunts.
    derandomize=os.environ.get("PYPTO_FUZZ_RANDOM", "") != "1",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(prog=programs(), seed=st.integers(0, 2**16))
def test_generated_kernel_matches_numpy_without_races(workdir, prog, seed):
    r, c, body = prog
    text = source(body)
    path = workdir / f"gen_{next(_modules)}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    rng = np.random.default_rng(seed)
    a, b = (rng.uniform(-1, 1, (ROWS * r, c)).astype(np.float32) for _ in range(2))
    out = np.zeros((ROWS * r, c), np.float32)
    env = {"a": a, "b": b, "out": out.copy()}
    reference(body, env)
    module.kernel(a, b, out, config=CFG)  # HazardError / DeadlockError fail the test here
    assert module.kernel.last_report.hazards == []
    np.testing.assert_allclose(
        out, env["out"], rtol=2e-5, atol=2e-5 * max(1.0, np.abs(env["out"]).max()), err_msg=text
    )
