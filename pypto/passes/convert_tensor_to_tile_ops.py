"""ConvertTensorToTileOps: the tensor level of a kernel becomes its tile level.

Inside an InCore kernel the tensor level names slices of the kernel's tensors and calls ops
on them; this pass places them, so that every later pass sees tiles only:

* ``a[:, k0:k1]`` of a parameter is a window (no data moves); an op reading a window (or a
  whole parameter) loads it to Vec first, where the op reads it;
* a vector op on tensors is its tile op (``tensor.row_sum`` → ``tile.row_sum``), with the
  scratch tile the hardware needs allocated here (:mod:`pypto.ir.op_levels`);
* ``pl.matmul`` / ``pl.matmul_acc`` of windows load them to Mat, move them to Left/Right and
  multiply into Acc in K chunks sized to L0A/L0B (``_tensor_matmul.py``); an M or N short of
  whole 16 x 16 fractals is padded to them: the product (and a ``pl.create_tensor`` in Acc) is
  the padded tile, carried so by loops and branches and accumulated so, and what a store or a
  vector op reads is its real part (``tile.slice``);
* ``pl.full`` is a filled Vec tile; a kernel-local ``pl.create_tensor`` is a tile in the space
  of the values merged into it around loops and across branches (``_tensor_places.py``);
* values carried by loops and merged by ``if`` become tiles with their producers (a window
  merged with an on-chip value is loaded where it is yielded); the loads
  and moves both branches of an ``if`` start with (a window each branch multiplies) are
  made once, before it;
* ``pl.assemble(target, src, offset)`` — and ``dst[r0:r1, :] = src``, ``out[:] = expr`` —
  stores ``src`` into the target's window (FIXPIPE from Acc, MTE3 from Vec); into a value
  computed in the kernel (``buf = pl.full(...)`` then ``buf[0:4, :] = x[...]``) it is an
  on-chip insert (``tile.assemble``); a ``[1, M, N]`` batch of one (a matrix times one group
  of a rank-3 weight) is reshaped to the target's ``[M, N]`` first;
* ``pl.read(v, [r, c])`` of a value computed in the kernel reads the element of its tile, and
  ``pl.write(v, [r, c], x)`` writes it in place; of a window of a parameter they address the
  parameter's element (the window's offsets added).

Anything else at tensor level is reported with its line, not guessed.
Tests: tests/passes/test_convert_tensor_to_tile_ops.py (the pass alone), tests/e2e/test_tensor_level.py,
tests/e2e/test_tensor_ops.py, tests/e2e/test_cube_kernels.py, tests/e2e/test_split_k.py
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from pypto.errors import CompileError, SourceSpan
from pypto.ir.bind import bind_call
from pypto.ir.enums import MemorySpace
from pypto.ir.expr import (
    Call,
    Expr,
    ListExpr,
    Literal,
    Var,
    as_expr,
    make_binop,
    shaped_type,
    tensor_type,
    tile_type,
)
from pypto.ir.layout_rules import assembled_shape
from pypto.ir.names import NameSupply
from pypto.ir.op_levels import scratch_params, tile_args, tile_form
from pypto.ir.ops import OPS, Kind
from pypto.ir.stmt import Assign, Eval, For, Function, If, IterArg, Program, Stmt, Yield
from pypto.ir.types import TensorType, TileType, is_static
from pypto.ir.visit import nodes_of, rewrite
from pypto.passes._cluster_sides import CUBE_SPACES
from pypto.passes._scan import defined_names, with_functions
from pypto.passes._tensor_matmul import Blocks, Cube, View, convert_matmul, fixpipe_casts, fractal_padded
from pypto.passes._tensor_places import local_places
from pypto.passes.context import PassContext


class _Converter:
    def __init__(self, fn: Function, ctx: PassContext, cluster: bool = False) -> None:
        self.ctx = ctx
        # a cluster kernel's body (both cores): a value crosses to the side that reads it, once
        # per block that reads it first (tile name -> the crossed tile)
        self.cluster = cluster
        self.crossed: dict[tuple[str, MemorySpace], Var] = {}
        self.names = NameSupply(defined_names(fn.body) | {p.var.name for p in fn.params})
        self.places = local_places(fn.body)
        self.uses = Counter(v.name for v in nodes_of(fn.body, Var))  # a name seen once: defined only
        self.views: dict[str, View] = {}
        self.tiles: dict[str, Var] = {}  # tensor-level name -> the tile that holds its value
        # products too large for L0C, made block by block where they are stored
        self.blocks: dict[str, Blocks] = {}
        self.stores: Counter[str] = Counter()  # stores into each tensor so far
        self.block_reads: dict[str, tuple[int, int]] = {}  # its operands' store counts, at the matmul
        self.fixpipe = fixpipe_casts(fn.body)  # casts of products done on their way into L1
        # (tensor, offsets, shape) -> the Vec tile an earlier load in a dominating block made:
        # `pl.add(a, a)` and a loop body reading a window loaded before the loop load it once.
        self.loaded: dict[tuple, Var] = {}
        # kernel-local tensors with no values yet (a pl.create_tensor, and the loop-carried names
        # it starts on the first trip); a read of one outside any branch is an error
        self.unset: set[str] = set()
        self.branches = 0  # how many ifs enclose the statement (a branch may run only once set)
        self.out: list[Stmt] = []
        self.span: SourceSpan | None = None

    def emit(self, base: str, op: str, args: list, **kw: Any) -> Var:
        call, t = bind_call(op, args, kw, span=self.span)
        var = Var(self.names.fresh(base), t, span=self.span)
        self.out.append(Assign(var, call, span=self.span))
        return var

    def view(self, e: Expr) -> View:
        if isinstance(e, Var) and e.name in self.views:
            return self.views[e.name]
        if isinstance(e, Var) and isinstance(e.type, TensorType):
            return View(e, tuple(as_expr(0, self.span) for _ in e.type.shape), e.type.shape)
        raise CompileError("expected a tensor (or a slice of one) here", self.span)

    def computed(self, e: Expr) -> Var | None:
        """The tile holding ``e`` when it is a value computed in this kernel."""
        if isinstance(e, Var) and isinstance(e.type, TileType):
            return e
        if isinstance(e, Var) and e.name in self.blocks:
            blocks = self.blocks[e.name]
            (m, _, n), (mt, nt, _) = blocks.mkn, blocks.block
            raise CompileError(
                f"`{e.name}` is a matmul output [{m}, {n}] too large for L0C "
                f"({self.ctx.platform.l0c_bytes} B): it is made in [{mt}, {nt}] blocks, each stored "
                "as it is made, so it can only be stored (pl.assemble into a tensor); to use it "
                "on chip, split M or N across tasks",
                self.span,
            )
        return self.tiles.get(e.name) if isinstance(e, Var) else None

    def tile_of(self, e: Expr) -> Var:
        """``e`` as a tile: a computed value as it is (a product padded to whole fractals: its
        real part), a tensor (or a window of one) loaded to Vec."""
        tile = self.held(e)
        if not (isinstance(e, Var) and isinstance(e.type, TensorType) and _padded(tile, e.type)):
            return tile
        key = (tile.name, MemorySpace.Acc)  # the real part of a padded product, once per block
        if key not in self.crossed:
            shape, zeros = list(e.type.shape), [as_expr(0, self.span) for _ in e.type.shape]
            self.crossed[key] = self.emit(f"{tile.name}_part", "tile.slice", [tile, shape, zeros])
        return self.crossed[key]

    def held(self, e: Expr) -> Var:
        """The tile that holds ``e``: a computed value as it is (a product of M or N short of
        whole fractals is the padded tile the matmul wrote), a tensor (or a window of one)
        loaded to Vec."""
        tile = self.computed(e)
        if tile is not None:
            return tile
        v = self.view(e)
        key = (v.base.name, v.offsets, v.shape, v.valid)
        if key not in self.loaded:
            args = [v.base, list(v.offsets), list(v.shape)]
            self.loaded[key] = self.emit(f"{v.base.name}_ub", "tile.load", args, valid_shape=v.valid)
        return self.loaded[key]

    def read_vec(self, e: Expr) -> Var:
        """``e`` as a tile a vector op reads: in a cluster kernel a product (Acc) or an L1
        value (Mat) crosses to the vector side (``_cluster_pipes`` routes the move)."""
        tile = self.read(e)
        t = tile.type
        if self.cluster and isinstance(t, TileType) and t.memory in CUBE_SPACES:
            return self.cross(tile, MemorySpace.Vec)
        return tile

    def cross(self, tile: Var, space: MemorySpace) -> Var:
        """``tile`` moved to ``space`` on the other core, once per value and block."""
        key = (tile.name, space)
        if key not in self.crossed:
            suffix = "vec" if space is MemorySpace.Vec else "mat"
            self.crossed[key] = self.emit(f"{tile.name}_{suffix}", "tile.move", [tile, space])
        return self.crossed[key]

    def read(self, e: Expr) -> Var:
        """``e`` as a tile an op reads: refused when it has no values on every path here."""
        self.check_set(e)
        return self.tile_of(e)

    def check_set(self, e: Expr) -> None:
        """Refuses a read of ``e`` where it has no values on every path."""
        name = getattr(e, "name", None)
        if name in self.unset and not self.branches:
            raise CompileError(
                f"`{name}` is read before it is assigned: pl.create_tensor gives a kernel-local "
                "tensor no values, and here it still has none (on the first trip of a loop, at "
                "least); assign it on every path before reading it, or give init_value=",
                self.span,
            )

    def subst(self, node: Any) -> Any:
        """``node`` with every use of a converted value replaced by its tile."""
        return rewrite(node, lambda x: self.tiles.get(x.name) if isinstance(x, Var) else None)

    # --- statements ---------------------------------------------------------------------------
    def block(self, body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        """``body`` converted; what it loads is reused inside it, never after it."""
        saved, self.out, loaded, crossed = self.out, [], dict(self.loaded), dict(self.crossed)
        for s in body:
            self.span = s.span
            self.stmt(s)
        body, self.out, self.crossed = tuple(self.out), saved, crossed
        still = {k for k, tile in loaded.items() if self.loaded.get(k) is tile}  # minus stored-to
        self.loaded = {k: loaded[k] for k in still}
        return body

    def stmt(self, s: Stmt) -> None:
        if isinstance(s, For):
            self.loop(s)
        elif isinstance(s, If):
            self.branch(s)
        elif isinstance(s, Assign) and isinstance(s.value, Call) and _placed(s.value.op):
            self.convert(s, s.value)
        elif isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tensor.create":
            self.create(s, s.value)
        elif isinstance(s, Assign) and isinstance(s.value, Call) and self.on_chip_read(s.value):
            call, _ = bind_call(
                "tile.read", [self.read(s.value.arg("src")), s.value.arg("indices")], {}, span=s.span
            )
            self.out.append(Assign(s.var, call, span=s.span))  # one element of a value computed here
        elif isinstance(s, Assign) and isinstance(s.value, Var) and s.value.name in self.tiles:
            self.tiles[s.var.name] = self.tiles[s.value.name]  # an alias of a converted value
            if s.value.name in self.unset:
                self.unset.add(s.var.name)
        elif isinstance(s, Assign) and isinstance(s.value, Var) and s.value.name in self.views:
            self.views[s.var.name] = self.views[s.value.name]
        elif isinstance(s, Eval) and isinstance(s.value, Call) and self.on_chip_write(s.value):
            self.write(s, s.value)
        elif isinstance(s, (Assign, Eval)) and isinstance(s.value, Call) and self.window_element(s.value):
            self.out.append(self.subst(dataclasses.replace(s, value=self.element_of_window(s.value))))
        elif isinstance(s, Yield):
            self.out.append(self.subst(dataclasses.replace(s, values=tuple(map(self.merged, s.values)))))
        else:
            self.out.append(self.subst(s))

    def on_chip_read(self, c: Call) -> bool:
        """``pl.read(v, [r, c])`` of a value computed in this kernel (not of a GM tensor)."""
        return c.op == "tensor.read" and self.computed(c.arg("src")) is not None

    def window_element(self, c: Call) -> bool:
        """``pl.read`` / ``pl.write`` of one element of a window of a GM tensor (a view)."""
        name = {"tensor.read": "src", "tensor.write": "dst"}.get(c.op)
        arg = c.arg(name) if name else None
        return isinstance(arg, Var) and arg.name in self.views and self.computed(arg) is None

    def element_of_window(self, c: Call) -> Call:
        """The element read or written through the window, addressed in its base tensor (the
        window is a view with no statement of its own)."""
        name = "src" if c.op == "tensor.read" else "dst"
        v = self.view(c.arg(name))
        at = [make_binop("+", o, i) for o, i in zip(v.offsets, _items(c.arg("indices")))]
        args = {p.name: a for p, a in zip(OPS[c.op].params, c.args)} | {name: v.base, "indices": at}
        call, _ = bind_call(c.op, [], args, span=c.span)
        return call

    def on_chip_write(self, c: Call) -> bool:
        """``pl.write(v, [r, c], x)`` into a value computed in this kernel."""
        return c.op == "tensor.write" and self.computed(c.arg("dst")) is not None

    def write(self, s: Eval, c: Call) -> None:
        """One element of an on-chip value written in place (element by element is how a
        kernel-local tensor of indices is often filled, so a write gives it values)."""
        dst = c.arg("dst")
        args = [self.tile_of(dst), c.arg("indices"), self.subst(c.arg("value"))]
        call, _ = bind_call("tile.write", args, {}, span=s.span)
        self.out.append(dataclasses.replace(s, value=call))
        self.unset.discard(getattr(dst, "name", ""))

    def carried(self, var: Var, value: Expr) -> Var:
        """``var`` (a loop-carried or merged name) retyped to the tile ``value`` is, when it is
        an on-chip value; a carried GM tensor (a parameter being stored into) stays as it is."""
        if var.name not in self.places:
            return self.subst(var)
        tile = self.held(value)
        new = dataclasses.replace(var, type=tile.type)
        self.tiles[var.name] = new
        return new

    def merged(self, value: Expr) -> Expr:
        """A yielded value; a window merged with on-chip values (``v = x[row : row + 1, :]`` in
        one branch, ``v = pl.full(...)`` before it) is loaded here, where its offsets are defined."""
        if isinstance(value, Var) and value.name in self.views and value.name in self.places:
            return self.tile_of(value)
        return value

    def loop(self, s: For) -> None:
        iters = []
        for it in s.iter_args:
            var = self.carried(it.var, it.init)
            on_chip = var.name in self.places
            if getattr(it.init, "name", None) in self.unset:
                self.unset.add(var.name)
            iters.append(IterArg(var, self.held(it.init) if on_chip else self.subst(it.init), span=it.span))
        body = self.block(s.body)
        self.check_yield(body, [it.var for it in iters], s.span)
        results = tuple(self.carried(r, it.var) for r, it in zip(s.results, iters))
        self.out.append(dataclasses.replace(s, iter_args=tuple(iters), body=body, results=results))

    def branch(self, s: If) -> None:
        self.branches += 1
        try:
            then_body, else_body = self.block(s.then_body), self.block(s.else_body)
        finally:
            self.branches -= 1
        hoisted, then_body, else_body = _common_loads(then_body, else_body)
        self.out.extend(hoisted)
        s, then_body, else_body = self.unused_windows(s, then_body, else_body)
        results = s.results
        if then_body and isinstance(then_body[-1], Yield):
            results = tuple(self.carried(r, v) for r, v in zip(s.results, then_body[-1].values))
            self.check_yield(else_body, list(results), s.span)
        self.out.append(dataclasses.replace(s, then_body=then_body, else_body=else_body, results=results))

    def unused_windows(self, s: If, then_body: tuple, else_body: tuple) -> tuple[If, tuple, tuple]:
        """The ``if`` without the windows it merges that nothing reads after it (a name both
        branches bind to a window for their own use): a window is no value to merge."""
        if not (then_body and isinstance(then_body[-1], Yield)):
            return s, then_body, else_body
        windows = [
            k
            for k, (r, v) in enumerate(zip(s.results, then_body[-1].values))
            if self.uses[r.name] == 1 and getattr(v, "name", None) in self.views and r.name not in self.places
        ]
        if not windows:
            return s, then_body, else_body
        keep = [k for k in range(len(s.results)) if k not in windows]

        def kept(body: tuple) -> tuple:
            if not (body and isinstance(body[-1], Yield)):
                return body
            values = tuple(body[-1].values[k] for k in keep)
            return (*body[:-1], dataclasses.replace(body[-1], values=values)) if keep else body[:-1]

        s = dataclasses.replace(s, results=tuple(s.results[k] for k in keep))
        return s, kept(then_body), kept(else_body)

    def check_yield(self, body: tuple[Stmt, ...], targets: list[Var], span: SourceSpan | None) -> None:
        if not body or not isinstance(body[-1], Yield):
            return
        for t, v in zip(targets, body[-1].values):
            got = getattr(v, "type", None)
            if isinstance(t.type, TileType) and got != t.type:
                where = t.type.memory.dsl_name if t.type.memory else "unplaced"
                raise CompileError(
                    f"`{t.name}` is carried as a {where} tile "
                    f"{list(t.type.shape)} but a path gives it {getattr(v, 'name', v)} of another place or "
                    "shape; make every path produce the same kind of value",
                    span,
                )

    # --- tensor-level ops ---------------------------------------------------------------------
    def create(self, s: Assign, c: Call) -> None:
        t = tensor_type(s.var)
        space = self.places.get(s.var.name, MemorySpace.Vec)
        shape, dtype = list(t.shape), t.dtype
        if space is MemorySpace.Acc and len(shape) == 2 and is_static(t.shape):  # padded as products are
            shape = [fractal_padded(n) for n in t.shape if isinstance(n, int)]
        init = c.arg("init_value")
        if isinstance(init, Literal) and init.value is None:
            self.tiles[s.var.name] = self.emit(s.var.name, "tile.create", [shape, dtype, space])
            self.unset.add(s.var.name)
        else:  # init_value=: a filled tile (only Vec has a fill instruction)
            self.tiles[s.var.name] = self.emit(s.var.name, "tile.full", [shape, dtype, init, space])

    def convert(self, s: Assign, c: Call) -> None:
        if c.op == "tensor.slice":
            self.slice(s, c)
        elif c.op == "tensor.cast" and s.var.name in self.fixpipe:
            self.narrow_into_l1(s, c)
        elif (tile_op := tile_form(c.op)) is not None:
            self.tiles[s.var.name] = self.vector(s.var.name, c, tile_op)
        elif c.op == "tensor.full":
            t = tensor_type(s.var)
            args = [list(t.shape), t.dtype, c.arg("value")]
            self.tiles[s.var.name] = self.emit(s.var.name, "tile.full", args)
        elif c.op in ("tensor.matmul", "tensor.matmul_acc"):
            product = self.matmul(s.var.name, c)
            if isinstance(product, Blocks):
                self.blocks[s.var.name] = product
                self.block_reads[s.var.name] = self.operand_stores(product)
            else:
                self.tiles[s.var.name] = product
        elif c.op == "tensor.assemble":
            self.assemble(s, c)
        elif c.op == "tensor.create_l1":  # an L1 accumulator: rows land in it by gather_row
            t = tensor_type(s.var)
            args = [list(t.shape), t.dtype, MemorySpace.Mat]
            self.tiles[s.var.name] = self.emit(s.var.name, "tile.create", args)
        elif c.op == "tensor.gather_row":
            self.gather_row(s, c)
        else:
            raise CompileError(
                f"tensor-level {c.op.removeprefix('tensor.')} inside a kernel is not supported "
                "yet; write it with tiles (pl.load / pl.store)",
                s.span,
            )

    def slice(self, s: Assign, c: Call) -> None:
        computed = self.computed(c.arg("x"))
        valid = None if _is_none(c.arg("valid_shape")) else c.arg("valid_shape")
        if computed is not None:  # a window of a value computed here: an on-chip extract
            args = [self.read(c.arg("x")), c.arg("shape"), c.arg("offset")]
            self.tiles[s.var.name] = self.emit(s.var.name, "tile.slice", args, valid_shape=valid)
            return
        v = self.view(c.arg("x"))
        offs = tuple(make_binop("+", a, b) for a, b in zip(v.offsets, _items(c.arg("offset"))))
        self.views[s.var.name] = View(v.base, offs, tensor_type(s.var).shape, valid or v.valid)

    def vector(self, name: str, c: Call, tile_op: str) -> Var:
        """A vector op: tensor operands loaded to Vec, computed ones as they are, scratch made."""
        arrays = (Kind.TENSOR, Kind.ARRAY)
        given = {
            p.name: self.read_vec(a) if p.kind in arrays and not _is_none(a) else a
            for p, a in zip(OPS[c.op].params, c.args)
        }
        args = tile_args(c.op, given)
        op = OPS[tile_op]
        for p in scratch_params(op):
            x = args[op.params[0].name]
            t = tile_type(x)
            args[p.name] = self.emit("tmp", "tile.create", [list(t.shape), t.dtype])
        return self.emit(name, tile_op, [], **args)  # by name: a left-out scratch shifts nothing

    def operand_stores(self, product: Blocks) -> tuple[int, int]:
        return self.stores[product.a.base.name], self.stores[product.b.base.name]

    def matmul(self, name: str, c: Call) -> Var | Blocks:
        p = self.ctx.platform
        cube = Cube(self.emit, p.l0a_bytes, p.l0b_bytes, p.l0c_bytes, self.span)
        acc = None
        if c.op == "tensor.matmul_acc":
            self.check_set(c.arg("acc"))
            acc = self.held(c.arg("acc"))  # accumulated whole, padding and all
        return convert_matmul(cube, c, name, self.operand(c.arg("lhs")), self.operand(c.arg("rhs")), acc)

    def operand(self, e: Expr) -> View | Var:
        """A matmul operand: a window of a tensor, or (in a cluster kernel) a value computed
        on the vector side, which crosses to the cube side into Mat."""
        tile = self.computed(e)
        if tile is None:
            return self.view(e)
        if isinstance(tile.type, TileType) and tile.type.memory is MemorySpace.Mat:
            return tile  # built in L1 (pl.create_l1 + pl.gather_row): read where it is
        if not self.cluster:
            raise CompileError(
                f"`{getattr(e, 'name', e)}` is computed on the vector side and multiplied on the "
                "cube side; store it and multiply a window of the tensor",
                self.span,
            )
        tile = self.read(e)
        if tile_type(tile).memory is MemorySpace.Mat:
            return tile
        return self.cross(tile, MemorySpace.Mat)

    def gather_row(self, s: Assign, c: Call) -> None:
        """GM rows DMAed into a window of an L1 accumulator (the result is its storage)."""
        acc = self.tile_of(c.arg("acc"))
        if not (isinstance(acc.type, TileType) and acc.type.memory is MemorySpace.Mat):
            raise CompileError("pl.gather_row fills an accumulator from pl.create_l1", self.span)
        src = self.view(c.arg("src"))
        offs = [make_binop("+", a, b) for a, b in zip(src.offsets, _items(c.arg("src_offset")))]
        args = [acc, src.base, c.arg("dst_offset"), offs, c.arg("shapes")]
        self.tiles[s.var.name] = self.emit(
            s.var.name, "tile.gather_row", args, valid_shape=c.arg("valid_shape")
        )

    def assemble(self, s: Assign, c: Call) -> None:
        src = c.arg("src")
        if isinstance(src, Var) and src.name in self.blocks and self.computed(c.arg("target")) is None:
            self.store_blocks(s, c, src.name)
            return
        tile = self.read(src)
        rank = len(shaped_type(c.arg("target")).shape)
        shape = tile_type(tile).shape
        if len(shape) != rank:  # a batch of one: the type rule allows it
            tile = self.emit(
                f"{tile.name}_2d", "tile.reshape", [tile, list(assembled_shape(shape, rank) or ())]
            )
        if self.computed(c.arg("target")) is not None:  # into a value computed here: on chip
            # writing into a pl.create_tensor that has no values yet is how it gets them
            dst = self.tile_of(c.arg("target"))
            self.tiles[s.var.name] = self.emit(s.var.name, "tile.assemble", [dst, tile, c.arg("offset")])
            return
        target = self.view(c.arg("target"))
        offs = [make_binop("+", a, b) for a, b in zip(target.offsets, _items(c.arg("offset")))]
        call, _ = bind_call("tile.store", [tile, offs, target.base], {"atomic": c.arg("atomic")}, span=s.span)
        self.out.append(Assign(s.var, call, span=s.span))
        self.stored(s, target)

    def stored(self, s: Assign, target: View) -> None:
        """After a store into ``target``: its loads are stale; ``s.var`` names its window."""
        self.loaded = {k: t for k, t in self.loaded.items() if k[0] != target.base.name}
        self.stores[target.base.name] += 1
        self.views[s.var.name] = View(target.base, target.offsets, target.shape)

    def made_here(self, name: str) -> Blocks:
        """The oversized product ``name``, about to be made where it is used. Its operands are
        read here, not where the product was written: refused if the kernel stored into one of
        them in between."""
        product = self.blocks[name]
        if self.operand_stores(product) != self.block_reads[name]:
            raise CompileError(
                f"`{name}` is made where it is used (it is larger than L0C), but an operand of its "
                "matmul was written in between; use the product before writing its operands",
                self.span,
            )
        return product

    def narrow_into_l1(self, s: Assign, c: Call) -> None:
        """A product cast to fp16 / bf16 for another matmul (``fixpipe_casts``): FIXPIPE
        narrows it on its way into an L1 tile, block by block for an oversized one."""
        x = c.arg("x")
        assert isinstance(x, Var)
        dtype = c.arg("target_type")
        shape = list(tensor_type(s.var).shape)
        dst = self.emit(s.var.name, "tile.create", [shape, dtype, MemorySpace.Mat])

        def insert(i: int, j: int, tile: Var) -> None:
            nonlocal dst
            dst = self.emit(s.var.name, "tile.assemble", [dst, tile, [i, j]])

        if x.name in self.blocks:
            self.made_here(x.name).each(insert)
        else:
            insert(0, 0, self.read(x))
        self.tiles[s.var.name] = dst

    def store_blocks(self, s: Assign, c: Call, name: str) -> None:
        """An oversized product stored into a tensor: each block made, then stored at its
        offset, before the next."""
        product = self.made_here(name)
        target = self.view(c.arg("target"))
        base = [make_binop("+", a, b) for a, b in zip(target.offsets, _items(c.arg("offset")))]
        atomic = {"atomic": c.arg("atomic")}

        def store(i: int, j: int, tile: Var) -> None:
            *lead, r0, c0 = base
            offs = [*lead, make_binop("+", r0, as_expr(i)), make_binop("+", c0, as_expr(j))]
            call, t = bind_call("tile.store", [tile, offs, target.base], atomic, span=s.span)
            self.out.append(Assign(Var(self.names.fresh(s.var.name), t, span=s.span), call, span=s.span))

        product.each(store)
        last = self.out[-1]  # the last store names the result
        assert isinstance(last, Assign)
        self.out[-1] = Assign(s.var, last.value, span=s.span)
        self.stored(s, target)


def _padded(tile: Var, t: TensorType) -> bool:
    """Whether ``tile`` holds a product of type ``t`` padded to whole fractals (M or N short)."""
    tt = tile.type
    if not (isinstance(tt, TileType) and tt.memory is MemorySpace.Acc and is_static(t.shape)):
        return False
    padded = [fractal_padded(n) for n in t.shape if isinstance(n, int)]
    return len(t.shape) == 2 and tt.shape != t.shape and list(tt.shape) == padded


def _placed(op: str) -> bool:
    """Whether this pass places ``op``: a tensor-level op (a view or value ops in orchestration
    too, like ``tensor.slice``), not a scalar one or a kernel-local allocation."""
    level = OPS[op].level
    return level == "tensor" or (
        level == "any" and op in ("tensor.slice", "tensor.reshape", "tensor.assemble")
    )


def _common_loads(then_body: tuple[Stmt, ...], else_body: tuple[Stmt, ...]) -> tuple:
    """(the loads and moves both branches start with, the rest of each branch): a window read
    in both branches (``ta`` in ``if kb == 0: matmul(ta, tb) else: matmul_acc(acc, ta, tb)``)
    is loaded once before the ``if``, as a hand-written kernel does, not once per branch: in a
    buffer per branch, the next trip's loads of a loop would wait for this trip's last move."""
    names: dict[str, Var] = {}  # else-branch value -> the then-branch value it repeats

    def renamed(node: Any) -> Any:
        return rewrite(node, lambda x: names.get(x.name) if isinstance(x, Var) else None)

    n = 0
    for a, b in zip(then_body, else_body):
        if not (isinstance(a, Assign) and isinstance(b, Assign) and isinstance(a.value, Call)):
            break
        if (
            a.value.op not in ("tile.load", "tile.move")
            or a.value != renamed(b.value)
            or a.var.type != b.var.type
        ):
            break
        names[b.var.name] = a.var
        n += 1
    return list(then_body[:n]), then_body[n:], tuple(renamed(s) for s in else_body[n:])


def _is_none(e: Expr) -> bool:
    return isinstance(e, Literal) and e.value is None  # an optional operand left out


def _items(e: Expr) -> tuple[Expr, ...]:
    return e.items if isinstance(e, ListExpr) else (e,)


def tensor_level(body: tuple[Stmt, ...]) -> bool:
    """Whether ``body`` has tensor-level work this pass places."""
    return any(_placed(c.op) or c.op == "tensor.create" for c in nodes_of(body, Call))


def convert_cluster_body(fn: Function, body: tuple[Stmt, ...], ctx: PassContext) -> tuple[Stmt, ...]:
    """The tensor level of a cluster kernel's ``body`` (a mixed ``pl.at`` scope of the Group
    function ``fn``) as tiles of both cores, a value read on the other side moved across."""
    return _Converter(dataclasses.replace(fn, body=body), ctx, cluster=True).block(body)


def convert_tensor_to_tile_ops(program: Program, ctx: PassContext) -> Program:
    """Rewrite the tensor-level ops of every generated InCore function into tile ops."""
    fns = []
    for fn in program.functions:
        if fn.kind.is_incore and fn.external_source is None:
            fn = dataclasses.replace(fn, body=_Converter(fn, ctx).block(fn.body))
        fns.append(fn)
    return with_functions(program, tuple(fns))
