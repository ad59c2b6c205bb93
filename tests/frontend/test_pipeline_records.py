"""The pipelining records in program text: a planned loop's ``staged=`` and a kernel's
``pipeline_groups=`` parse back from dumps (also imported as Python), are checked, and are
refused where a kernel author writes code (``@pl.jit``)."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys

import numpy as np
import pytest
import seed_kernels

from pypto import errors, ir, platforms
from pypto.frontend import parse_text
from pypto.frontend.parser import parse_jit
from pypto.passes import pipeline as pp
from pypto.passes.context import PassContext


def _after(pass_name: str) -> ir.Program:
    a = np.zeros((seed_kernels.ROWS, seed_kernels.TC), np.float32)
    seen = {}
    ctx = PassContext(platforms.get("a2a3sim"))
    pp.run_passes(parse_jit(seed_kernels.pipelined, [a, a]), ctx, dump=lambda i, n, p: seen.setdefault(n, p))
    return seen[pass_name]


@pytest.fixture(scope="module")
def expanded() -> ir.Program:
    return _after("ExpandPipelineLoops")


def test_a_dump_with_clone_groups_imports_as_python(expanded, tmp_path, monkeypatch):
    text = ir.print_program(expanded)
    path = tmp_path / "dump_groups.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("dump_groups", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "dump_groups", module)  # inspect finds the class source so
    spec.loader.exec_module(module)  # importing ran @pl.program, which re-parsed the class
    ir.assert_structural_equal(getattr(module, expanded.name), expanded, names=True)
    kernel = getattr(module, expanded.name).functions[1]
    (group,) = kernel.pipeline_groups
    assert (group.name, group.depth, [len(b) for b in group.blocks]) == ("i", 2, [2])


@pytest.mark.parametrize(
    ("edit", "error", "message"),
    [
        (
            ('defs=["tile", "exp"]', 'defs=["tile", "nowhere"]'),
            errors.VerifyError,
            "names `nowhere`, which is not",
        ),
        (("pl.PipelineClone(", "pl.PipelineGroup("), errors.TypeCheckError, "expected pl.PipelineClone"),
        (
            ('hoisted=["tile"]', "hoisted=[1]"),
            errors.TypeCheckError,
            "hoisted= must be a list of value names",
        ),
        (("depth=2", "depth=0"), errors.TypeCheckError, "depth must be an int >= 1"),
        (("depth=2, ", ""), errors.TypeCheckError, "needs depth"),
    ],
)
def test_bad_records_are_refused_at_their_line(expanded, edit, error, message):
    text = ir.print_program(expanded)
    assert edit[0] in text
    with pytest.raises(error, match=message) as e:
        parse_text(text.replace(edit[0], edit[1], 1), "dump.py")
    assert e.value.span.file == "dump.py"


def test_groups_belong_to_incore_kernels(expanded):
    entry, kernel = expanded.functions
    moved = dataclasses.replace(entry, pipeline_groups=kernel.pipeline_groups)
    with pytest.raises(errors.VerifyError, match="pipeline_groups belong to InCore kernels"):
        ir.verify(dataclasses.replace(expanded, functions=(moved, kernel)))


def test_staged_is_a_pl_pipeline_keyword_only():
    planned = ir.print_program(_after("PlanPipelineLoops"))
    assert 'pl.pipeline(8, stage=2, staged=["tile", "exp"])' in planned
    with pytest.raises(errors.TypeCheckError, match="pl.range has no parameter `staged`"):
        parse_text(planned.replace("pl.pipeline(8, stage=2,", "pl.range(8,"))


EXTERNAL_WITH_GROUPS = """\
import pypto.language as pl


@pl.function(type=pl.FunctionType.AIV, external_source="k.cpp",
             pipeline_groups=[pl.PipelineGroup("i", 2, ())])
def my_kernel(x: pl.Tensor[[16, 16], pl.FP16], out: pl.Out[pl.Tensor[[16, 16], pl.FP16]]):
    ...


@pl.jit
def entry(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    my_kernel(x, out)
    return out
"""


def test_a_jit_program_may_not_call_a_kernel_with_groups(tmp_path, monkeypatch):
    (tmp_path / "k.cpp").write_text("")
    path = tmp_path / "ext_groups.py"
    path.write_text(EXTERNAL_WITH_GROUPS)
    spec = importlib.util.spec_from_file_location("ext_groups", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "ext_groups", module)
    spec.loader.exec_module(module)
    x = np.zeros((16, 16), np.float16)
    with pytest.raises(
        errors.UnsupportedSyntaxError, match="is a compiler record printed in pass dumps"
    ) as e:
        module.entry.parse(x, x)
    assert e.value.span.file == str(path)
