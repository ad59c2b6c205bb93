"""``@pl.program`` classes, program text and files, and external kernels."""

from __future__ import annotations

import importlib.util
import sys
import textwrap

import numpy as np
import pytest

import pypto.language as pl
from pypto import errors, ir
from pypto.frontend import parse_file, parse_text

D = 64


def _load(tmp_path, name: str, text: str, monkeypatch=None):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    if monkeypatch is not None:  # inspect finds class sources through sys.modules
        monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


@pl.program
class TwoKernels:
    """An orchestration calling an InCore kernel defined after it."""

    @pl.function
    def main(
        self, x: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]
    ) -> pl.Tensor[[D, D], pl.FP32]:
        r: pl.Tensor[[D, D], pl.FP32] = self.kernel(x, out)
        return r

    @pl.function(type=pl.FunctionType.AIV)
    def kernel(
        self, x: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]
    ) -> pl.Tensor[[D, D], pl.FP32]:
        t: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [D, D])
        pl.tile.store(t, [0, 0], out)
        return out


def test_program_class_parses_to_ir():
    assert isinstance(TwoKernels, ir.Program) and TwoKernels.name == "TwoKernels"
    main, kernel = TwoKernels.functions
    assert main.kind is ir.FunctionType.Orchestration and kernel.kind is ir.FunctionType.AIV
    call = main.body[0].value
    assert isinstance(call, ir.FuncCall) and call.callee == "kernel"
    assert call.type == ir.TensorType((D, D), ir.FP32)
    assert main.span.file == __file__


def _built(rows: int, d: int) -> ir.Program:
    """A program class built inside a function: its annotations name the function's variables
    (in no method's closure: Python evaluates them in the class body)."""
    width = d * 2

    @pl.program
    class Built:
        @pl.function(type=pl.FunctionType.AIV)
        def kernel(
            self, x: pl.Tensor[[rows, width], pl.FP32], out: pl.Out[pl.Tensor[[rows, width], pl.FP32]]
        ):
            t: pl.Tile[[rows, width], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [rows, width])
            pl.tile.store(t, [0, 0], out)

    return Built


def test_a_program_built_in_a_function_reads_the_functions_variables():
    (kernel,) = _built(16, 32).functions
    assert [p.var.type for p in kernel.params] == [ir.TensorType((16, 64), ir.FP32)] * 2
    (kernel,) = _built(32, 8).functions  # each call its own values
    assert kernel.params[0].var.type == ir.TensorType((32, 16), ir.FP32)


ALLOCATED = textwrap.dedent(
    """\
    # pypto.program: planned
    from __future__ import annotations

    import pypto.language as pl

    ROWS = 64


    @pl.program
    class planned:
        @pl.function(type=pl.FunctionType.AIV)
        def k(self, a: pl.Tensor[[512, 128], pl.FP32], out: pl.Out[pl.Tensor[[512, 128], pl.FP32]]):
            for i in pl.range(8):
                t: pl.Tile[[ROWS, 128], pl.FP32, pl.MemRef(mem_vec_0, 0, 32768), pl.Mem.Vec] = pl.tile.load(
                    a, [i * 64, 0], [64, 128]
                )
                u: pl.Tile[[64, 128], pl.FP32, pl.MemRef(ub, 32768, 32768, slots=2)[i % 2], pl.Mem.Vec] = (
                    pl.tile.exp(t)
                )
                pl.tile.store(u, [i * 64, 0], out)
    """
)


def test_allocated_memrefs_round_trip(tmp_path):
    p = parse_text(ALLOCATED)
    loop = p.functions[0].body[0]
    t, u = loop.body[0].var.type, loop.body[1].var.type
    assert t.memref == ir.MemRef("mem_vec_0", 1, None, 0, 32768) and t.memref.allocated
    assert u.memref.slots == 2 and u.memref.offset == 32768 and u.memref.index is not None
    text = ir.print_program(p)
    assert "pl.MemRef(mem_vec_0, 0, 32768), pl.Mem.Vec] = pl.tile.load(" in text
    assert "pl.MemRef(ub, 32768, 32768, slots=2)[i % 2]" in text
    dump = tmp_path / "03_after_AllocateMemoryAddr.py"
    dump.write_text(text)
    again = parse_file(dump)
    ir.assert_structural_equal(p, again, names=True)
    assert again.functions[0].span.file == str(dump)


def test_printed_text_is_importable_python(tmp_path, monkeypatch):
    module = _load(tmp_path, "dump_module", ir.print_program(TwoKernels), monkeypatch)
    # importing ran the @pl.program decorator, which re-parsed the file
    ir.assert_structural_equal(module.TwoKernels, TwoKernels, names=True)


def test_errors_in_program_text_point_at_the_text():
    bad = ALLOCATED.replace("pl.tile.exp(t)", "pl.tile.exp(missing)")
    with pytest.raises(errors.UnknownNameError) as exc:
        parse_text(bad, "dump_07.py")
    assert exc.value.span.file == "dump_07.py"
    assert "pl.tile.exp(missing)" in str(exc.value)


def test_text_without_program_class():
    with pytest.raises(errors.CompileError, match="no @pl.program class"):
        parse_text("x = 1\n")


EXTERNAL_MODULE = textwrap.dedent(
    """\
    import pypto.language as pl

    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/my_kernel.cpp")
    def my_kernel(x: pl.Tensor[[128, 128], pl.FP16], out: pl.Out[pl.Tensor[[128, 128], pl.FP16]]):
        ...

    @pl.jit
    def entry(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        my_kernel(x, out)
        return out
    """
)


def test_external_source_resolves_against_the_defining_file(tmp_path):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "my_kernel.cpp").write_text("// hand-written\n")
    module = _load(tmp_path, "ext_ok", EXTERNAL_MODULE)
    x = np.zeros((128, 128), np.float16)
    p = module.entry.parse(x, x)
    kernel = p.get("my_kernel")
    assert kernel.kind is ir.FunctionType.AIV and kernel.body == ()
    assert kernel.external_source == str(tmp_path / "kernels" / "my_kernel.cpp")
    assert isinstance(p.entry.body[0], ir.Eval)
    ir.assert_structural_equal(p, parse_text(ir.print_program(p)), names=True)


def test_missing_external_source_names_the_resolved_path(tmp_path):
    module = _load(tmp_path, "ext_missing", EXTERNAL_MODULE)
    x = np.zeros((128, 128), np.float16)
    with pytest.raises(errors.CompileError, match=str(tmp_path / "kernels" / "my_kernel.cpp")):
        module.entry.parse(x, x)


def test_external_kernel_argument_shapes_are_checked(tmp_path):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "my_kernel.cpp").write_text("")
    module = _load(tmp_path, "ext_shape", EXTERNAL_MODULE)
    x = np.zeros((64, 128), np.float16)
    with pytest.raises(errors.TypeCheckError, match="argument `x` of `my_kernel` must be"):
        module.entry.parse(x, x)
