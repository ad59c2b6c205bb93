"""Round trip: ``parse(print(p))`` is structurally equal to ``p`` — fixed examples and a
hypothesis strategy generating random small kernels (op chains, loops with carried values,
branches, index arithmetic, declared and allocated memrefs, orchestration scopes)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pypto import ir
from pypto.frontend import parse_text
from pypto.frontend.bounds import interval, loop_interval

SHAPES = [(64, 128), (32, 64), (16, 16)]
DTYPES = [ir.FP32, ir.FP16]
UNARY = ["tile.exp", "tile.log", "tile.sqrt", "tile.recip", "tile.relu", "tile.neg", "tile.abs"]
BINARY = ["tile.add", "tile.sub", "tile.mul", "tile.div"]
SCALAR = ["tile.adds", "tile.subs", "tile.muls", "tile.divs"]


def round_trip(p: ir.Program) -> ir.Program:
    ir.verify(p)
    text = ir.print_program(p)
    again = parse_text(text)
    ir.assert_structural_equal(p, again, names=True)
    assert ir.print_program(again) == text
    return again


@dataclass
class Gen:
    """State of one random kernel under construction."""

    draw: st.DrawFn
    b: ir.Builder
    src: ir.Var
    out: ir.Var
    tiles: list[ir.Var] = field(default_factory=list)
    loop_vars: list[ir.Var] = field(default_factory=list)
    scalars: list[ir.Var] = field(default_factory=list)
    ranges: dict[str, tuple[int, int]] = field(default_factory=dict)
    memrefs: int = 0

    def index_expr(self, depth: int = 2) -> ir.Expr:
        leaves = [ir.Const(self.draw(st.integers(0, 8)))] + self.loop_vars + self.scalars
        e = self.draw(st.sampled_from(leaves))
        if depth == 0 or not self.draw(st.booleans()):
            return e
        op = self.draw(st.sampled_from(["+", "-", "*", "//", "%"]))
        rhs = self.index_expr(depth - 1)
        if op in ("//", "%"):
            rhs = ir.Const(self.draw(st.integers(1, 4)))
        if self.draw(st.integers(0, 9)) == 0:
            rhs = ir.make_unary("-", rhs)
        return ir.make_binop(op, e, rhs)

    def offsets(self, shape: tuple[int, ...], full: tuple[int, ...]) -> list[ir.Expr]:
        """Random offsets, replaced by 0 where the window could leave the tensor."""
        out: list[ir.Expr] = []
        for n, size in zip(shape, full):
            e = self.index_expr()
            iv = interval(e, self.ranges)
            out.append(e if iv is not None and iv[0] >= 0 and iv[1] + n <= size else ir.Const(0))
        return out

    def tile_type(self, shape, dtype) -> ir.TileType | None:
        choice = self.draw(st.integers(0, 3))
        if choice == 1 and self.loop_vars:
            index = ir.make_binop("%", self.draw(st.sampled_from(self.loop_vars)), ir.Const(2))
            return ir.TileType(shape, dtype, ir.MemorySpace.Vec, ir.MemRef("ub", 2, index))
        if choice == 2:
            self.memrefs += 1
            nbytes = shape[0] * shape[1] * dtype.itemsize
            ref = ir.MemRef(f"mem_vec_{self.memrefs}", 1, None, 32 * self.draw(st.integers(0, 64)), nbytes)
            return ir.TileType(shape, dtype, ir.MemorySpace.Vec, ref)
        return None

    def pick(self, shape=None, dtype=None) -> ir.Var | None:
        pool = [
            t
            for t in self.tiles
            if (shape is None or t.type.shape == shape) and (dtype is None or t.type.dtype == dtype)
        ]
        return self.draw(st.sampled_from(pool)) if pool else None

    def load(self) -> ir.Var:
        shape = self.draw(st.sampled_from(SHAPES))
        t = self.b.op(
            "tile.load",
            self.src,
            self.offsets(shape, self.src.type.shape),
            list(shape),
            type=self.tile_type(shape, self.src.type.dtype),
        )
        self.tiles.append(t)
        return t

    def compute(self) -> None:
        x = self.pick() or self.load()
        kind = self.draw(st.integers(0, 5))
        if kind == 0:
            y = self.b.op(self.draw(st.sampled_from(UNARY)), x)
        elif kind == 1:
            other = self.pick(x.type.shape, x.type.dtype) or x
            y = self.b.op(self.draw(st.sampled_from(BINARY)), x, other)
        elif kind == 2:
            value = self.draw(st.one_of(st.integers(-4, 4), st.floats(-8, 8, allow_nan=False, width=32)))
            y = self.b.op(self.draw(st.sampled_from(SCALAR)), x, value)
        elif kind == 3:
            y = self.b.op(
                "tile.cast",
                x,
                self.draw(st.sampled_from(DTYPES)),
                self.draw(st.sampled_from(["round", "floor"])),
            )
        elif kind == 4:
            y = self.b.op("tile.row_sum", x, self.b.op("tile.create", list(x.type.shape), x.type.dtype))
        else:
            r, c = x.type.shape
            y = self.b.op("tile.reshape", x, [c, r])
        self.tiles.append(y)

    def store(self) -> None:
        t = self.pick(dtype=self.out.type.dtype) or self.load()
        if t.type.dtype != self.out.type.dtype:
            t = self.b.op("tile.cast", t, self.out.type.dtype)
        self.b.eval("tile.store", t, self.offsets(t.type.shape, self.out.type.shape), self.out)

    def loop(self, depth: int) -> None:
        kind = self.draw(st.sampled_from(list(ir.ForKind)))
        stop = self.draw(st.integers(1, 6))
        start = self.draw(st.integers(0, 1)) if kind is not ir.ForKind.pipeline else 0
        carried = [t for t in self.tiles if self.draw(st.booleans())][:2]
        stage = self.draw(st.integers(1, 3)) if kind is ir.ForKind.pipeline else None
        saved, saved_scalars = list(self.tiles), list(self.scalars)
        with self.b.loop(f"i{depth}", start, stop, kind=kind, stage=stage, init=carried) as frame:
            self.loop_vars.append(frame.var)
            self.ranges[frame.var.name] = loop_interval(ir.Const(start), ir.Const(stop), ir.Const(1))
            self.tiles = list(frame.iters) + [t for t in self.tiles if t not in carried]
            self.block(depth - 1)
            if carried:
                self.b.yield_(*[self.pick(c.type.shape, c.type.dtype) for c in carried])
            self.loop_vars.pop()
        self.scalars = saved_scalars  # names defined in the body end with it
        self.tiles = saved + list(frame.results)

    def branch(self, depth: int) -> None:
        cond = ir.make_binop("==", ir.make_binop("%", self.loop_vars[-1], ir.Const(2)), ir.Const(0))
        x = self.pick() or self.load()
        saved, saved_scalars = list(self.tiles), list(self.scalars)
        with self.b.if_(cond, names=["merged"]) as frame:
            for part in (frame.then, frame.otherwise):
                self.tiles, self.scalars = list(saved), list(saved_scalars)
                with part():
                    self.compute()
                    self.b.yield_(self.pick(x.type.shape, x.type.dtype) or x)
        self.tiles, self.scalars = saved + list(frame.results), saved_scalars

    def block(self, depth: int) -> None:
        for _ in range(self.draw(st.integers(1, 5))):
            choice = self.draw(st.integers(0, 9))
            if choice < 5:
                self.compute()
            elif choice < 7:
                self.store()
            elif choice < 8 and self.loop_vars:
                self.memrefs += 1
                e = self.index_expr()
                v = self.b.assign(f"s{self.memrefs}", e)
                if (iv := interval(e, self.ranges)) is not None:
                    self.ranges[v.name] = iv
                self.scalars.append(v)
            elif choice < 9 and depth > 0:
                self.loop(depth)
            elif self.loop_vars:
                self.branch(depth)


@st.composite
def programs(draw: st.DrawFn) -> ir.Program:
    b = ir.Builder()
    dtype = draw(st.sampled_from(DTYPES))
    tensor = ir.TensorType((256, 256), dtype)
    with b.function("kernel", ir.FunctionType.InCore):
        src = b.param("a", tensor)
        out = b.param("out", tensor, ir.Direction.Out)
        gen = Gen(draw, b, src, out)
        gen.block(depth=2)
        gen.store()
        b.ret(out)
    kernel = b.functions[-1]
    with b.function("main", ir.FunctionType.Orchestration):
        a = b.param("a", tensor)
        out = b.param("out", tensor, ir.Direction.Out)
        hint = draw(st.one_of(st.none(), st.sampled_from(["tile_k", "odd name"])))
        with b.scope(name_hint=hint, handle="first"):
            r = b.call_function(kernel, a, out)
        with b.loop("t", 0, draw(st.integers(1, 4)), kind=ir.ForKind.parallel, init=[r]) as frame:
            with b.scope(deps=["first"]):
                r2 = b.call_function(kernel, a, frame.iters[0])
            b.yield_(r2)
        b.ret(frame.results[0])
    return b.program("generated")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_kernels_round_trip(p: ir.Program) -> None:
    round_trip(p)


def test_fixed_builder_example_round_trips():
    b = ir.Builder()
    t = ir.TensorType((512, 128), ir.FP32)
    with b.function("k", ir.FunctionType.AIV):
        a = b.param("a", t)
        out = b.param("out", t, ir.Direction.InOut)
        n = b.param("n", ir.ScalarType(ir.INDEX))
        acc = b.op("tile.create", [64, 128], ir.FP32, name="acc")
        with b.loop("i", 0, n, 2, init=[acc]) as loop:
            vec = ir.TileType((64, 128), ir.FP32, ir.MemorySpace.Vec, ir.MemRef("ub", 2, loop.var % 2))
            x = b.op("tile.load", a, [loop.var * 64 + 0, 0], [64, 128], name="x", type=vec)
            y = b.op("tile.fillpad", x, ir.PadValue.max)
            z = b.op("tile.add", loop.iters[0], y)
            b.eval("tile.store", z, [loop.var * 64, 0], out, atomic=ir.AtomicType.Add)
            b.yield_(z)
        m = b.op("tile.row_max", loop.results[0], b.op("tile.create", [64, 128], ir.FP32))
        b.op("tile.row_expand_sub", loop.results[0], m)
        b.ret(out)
    round_trip(b.program("fixed"))


def test_sync_ops_round_trip():
    b = ir.Builder()
    t = ir.TensorType((64, 128), ir.FP32)
    with b.function("k", ir.FunctionType.AIV):
        a = b.param("a", t)
        out = b.param("out", t, ir.Direction.Out)
        x = b.op("tile.load", a, [0, 0], [64, 128])
        b.eval("system.set_flag", ir.Pipe.MTE2, ir.Pipe.VECTOR, 0)
        b.eval("system.wait_flag", ir.Pipe.MTE2, ir.Pipe.VECTOR, 0)
        y = b.op("tile.exp", x)
        b.eval("system.pipe_barrier", ir.Pipe.VECTOR)
        b.eval("system.pipe_barrier")
        b.eval("tile.store", y, [0, 0], out)
    text = ir.print_program(round_trip(b.program("synced")))
    assert "pl.system.set_flag(pl.Pipe.MTE2, pl.Pipe.VECTOR, 0)" in text
    assert "pl.system.pipe_barrier()" in text


def test_expression_precedence_round_trips():
    i, j = ir.Var("i", ir.INDEX_TYPE), ir.Var("j", ir.INDEX_TYPE)
    cases = [
        ir.make_binop("-", i, ir.make_binop("-", j, ir.Const(1))),
        ir.make_binop("*", ir.make_binop("+", i, j), ir.make_unary("-", j)),
        ir.make_binop("//", i, ir.make_binop("*", j, ir.Const(2))),
        ir.make_binop("%", ir.make_unary("-", i), ir.Const(3)),
        ir.make_binop("*", i, ir.Const(-1)),
    ]
    b = ir.Builder()
    with b.function("k", ir.FunctionType.InCore):
        b.param("i", ir.INDEX_TYPE)
        b.param("j", ir.INDEX_TYPE)
        for k, e in enumerate(cases):
            b.assign(f"e{k}", e)
        b.assign(
            "c",
            ir.make_binop("and", ir.make_binop("<", i, j), ir.make_unary("not", ir.make_binop("==", i, j))),
        )
    again = round_trip(b.program("exprs"))
    printed = [ir.print_expr(s.value) for s in again.functions[0].body]
    assert printed[:5] == ["i - (j - 1)", "(i + j) * -j", "i // (j * 2)", "-i % 3", "i * -1"]
    assert printed[5] == "i < j and not i == j"
