"""The Python <-> C++ seam: ``pypto/_native.pyi`` and ``pypto/_native_testing.pyi`` are what the
build gives (mypy reads them, so a call mypy accepts is one the binding accepts); tasks, results
and platforms cross it as bound classes with typed attributes; the product module carries no
test hooks."""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import pypto
from pypto import _native, _native_testing, platforms
from pypto.runtime.dtypes import code_of

ROOT = Path(__file__).resolve().parents[2]
HOOKS = {"CoreModel", "data_queue_exercise", "data_queue_times", "matmul_f32_form", "matmul_f32_forms",
         "fractal_form", "fractal_forms"}  # fmt: skip


def _declared(module: str) -> set[str]:
    stub = ast.parse((Path(pypto.__file__).parent / f"{module}.pyi").read_text())
    names = {n.name for n in stub.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    names |= {
        n.target.id for n in stub.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }
    return {name for name in names if not name.startswith("_")}


@pytest.mark.skipif(not (ROOT / ".ci" / "native-stubs").exists(), reason="needs the source checkout")
@pytest.mark.skipif(
    shutil.which("stubgen") is None or shutil.which("ruff") is None, reason="needs the lint extra"
)
def test_the_checked_in_stubs_are_what_the_build_gives(tmp_path):
    script = str(ROOT / ".ci" / "native-stubs")
    done = subprocess.run([script, "--check"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("module", [_native, _native_testing], ids=lambda m: m.__name__)
def test_each_stub_declares_every_binding_and_nothing_else(module):
    public = {name for name in dir(module) if not name.startswith("_")}
    assert _declared(module.__name__.rsplit(".", 1)[1]) == public


def test_the_product_module_carries_no_test_hooks():
    assert not HOOKS & set(dir(_native))
    assert set(dir(_native_testing)) >= HOOKS


def test_the_bound_platform_has_every_field_of_the_table_with_its_type():
    table = platforms.get("a2a3sim", "pto-isa")
    native = table.to_native()
    for key, value in table.fields.items():
        assert getattr(native, key) == value and type(getattr(native, key)) is type(value), key
    assert (native.name, native.device, native.cost_profile) == ("a2a3sim", table.device, "pto-isa")
    assert {n for n in dir(native) if not n.startswith("_")} == {
        *table.fields,
        "name",
        "device",
        "cost_profile",
    }
    assert table.with_overrides(ub_bytes=4096).to_native().ub_bytes == 4096


def test_each_override_range_is_the_simulators_and_is_checked_on_both_sides():
    table = platforms.get("a2a3sim", "pto-isa")  # its zero costs are table values, not overrides
    assert table.to_native().sync_cycles == 0
    for field, limit in [("event_ids", 64), ("l2_ways", 255), ("ub_bytes", 1 << 30)]:
        assert platforms.override_rule(field) == (int, 1, limit)
        assert table.with_overrides(**{field: limit}).to_native() is not None
        with pytest.raises(ValueError, match=rf"a2a3sim: {field} must be in \[1, {limit}\], got {limit + 1}"):
            _native.make_platform({**table.as_dict(), field: limit + 1})  # past Python's check


def _task(so: Path, **changes) -> _native.Task:
    spec = dict(kernel_path=str(so), name="exp", tensors=[0, 1], scalars=[], core=_native.CoreKind.aiv)
    return _native.Task(**{**spec, **changes})


def test_a_task_is_checked_when_it_is_described(fixture_kernel):
    so = fixture_kernel("exp_single_buffer")
    t = _task(so, deps=[], write_gates=[(0, 1)], block_idx=1, block_num=2)
    assert (t.name, t.tensors, t.core, t.write_gates, t.block_idx, t.block_num) == (
        "exp", [0, 1], _native.CoreKind.aiv, [(0, 1)], 1, 2,
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"task block index must be in \[0, block_num\)"):
        _task(so, block_idx=2, block_num=2)
    with pytest.raises(TypeError):  # a core kind is a CoreKind, not a number
        _task(so, core=1)


def test_run_results_are_typed_attributes_that_agree_with_the_report_dict(fixture_kernel):
    so = fixture_kernel("exp_single_buffer")
    plat = platforms.get("a2a3sim").to_native()
    matmul = _task(
        fixture_kernel("matmul_probe"), name="mm", tensors=[2, 3, 4], scalars=[0, 0, 0],
        core=_native.CoreKind.aic, deps=[0],
    )  # fmt: skip
    runner = _native.TaskRunner([_task(so), matmul], plat)
    x = np.linspace(-1, 1, 64 * 128, dtype=np.float32).reshape(64, 128)
    out = np.zeros_like(x)
    a, c = np.eye(16, dtype=np.float16), np.zeros((16, 16), np.float32)
    fp16 = code_of(a.dtype)  # a table entry: the array and its dtype code (fp32 is 0)
    results = runner.run([(x, 0), (out, 0), (a, fp16), (a, fp16), (c, 0)])
    np.testing.assert_allclose(out, np.exp(x), rtol=1e-6)
    np.testing.assert_array_equal(c, np.eye(16, dtype=np.float32))
    d = results.to_dict()
    assert [t.name for t in results.tasks] == ["exp", "mm"]
    assert [t.cube for t in results.tasks] == [False, True]
    for t, r in zip(results.tasks, d["tasks"]):
        assert (t.task, t.core, t.start, t.end, t.cycles, t.instructions) == (
            r["task"], r["core"], r["start"], r["end"], r["cycles"], r["instructions"],
        )  # fmt: skip
        assert t.pipe_busy == r["pipe_busy"] and t.hazards == r["hazards"] == []
        assert t.cycles > 0 and t.memory.hbm_bytes == r["memory"]["hbm_bytes"]
    assert results.races == d["races"] == []
    assert results.memory.l2_misses == d["memory"]["l2_misses"] > 0
