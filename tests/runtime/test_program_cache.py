"""The persistent program cache (pypto.runtime.program_cache): a fresh kernel object — as in a new
process — is served from disk without parse, passes or codegen, with the same outputs and cycles;
each cause of change (kernel source, an imported constant, a called kernel, the pypto version,
the platform table) recompiles; damaged entries recompile.

Kernels are written into ``tmp_path`` and imported under fresh module names, so every "process"
gets new function objects and only the disk cache can carry a compile over.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import pypto
from pypto import platforms
from pypto.passes.options import MemoryPlanner
from pypto.runtime import RunConfig, program_cache

# Subprocesses run outside the checkout: its pypto/ (no native module) must not shadow the
# installed package.
HERE = Path(__file__).resolve().parent

KERNEL = """
import pypto.language as pl
{imports}

@pl.jit
def scale_rows(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            t = pl.load(a, [i * 8, 0], [8, 64])
            pl.store(pl.muls(t, {factor}), [i * 8, 0], out)
    return out
"""

_IDS = itertools.count()


def load_module(path: Path):
    """Import ``path`` under a new name: new function objects, as a new process would have."""
    name = f"pc_kernel_{next(_IDS)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(cache))
    return cache


A = np.arange(16 * 64, dtype=np.float32).reshape(16, 64) / 7


def write_kernel(folder: Path, factor: str = "2.0", imports: str = "") -> Path:
    path = folder / "kern.py"
    path.write_text(KERNEL.format(factor=factor, imports=imports))
    return path


def run(path: Path, config: RunConfig | None = None):
    module = load_module(path)
    out = np.zeros_like(A)
    module.scale_rows(A, out, config=config or RunConfig())
    return out, module.scale_rows.last_report


def test_fresh_kernel_object_is_served_from_disk_with_identical_results(tmp_path, compiles):
    path = write_kernel(tmp_path)
    first, report1 = run(path)
    second, report2 = run(path)
    assert compiles == ["scale_rows"]  # the second object never parsed
    np.testing.assert_array_equal(first, A * np.float32(2.0))
    assert first.tobytes() == second.tobytes()
    assert report1.cycles == report2.cycles and report1.pipe_busy == report2.pipe_busy


def test_source_edit_recompiles(tmp_path, compiles):
    path = write_kernel(tmp_path, "2.0")
    run(path)
    write_kernel(tmp_path, "3.00")
    out, _ = run(path)
    assert compiles == ["scale_rows", "scale_rows"]
    np.testing.assert_array_equal(out, A * np.float32(3.0))


def test_imported_constant_change_recompiles(tmp_path, compiles):
    sys.path.insert(0, str(tmp_path))
    try:
        (tmp_path / "pc_consts.py").write_text("FACTOR = 2.0\n")
        path = write_kernel(tmp_path, "FACTOR", "from pc_consts import FACTOR")
        run(path)
        run(path)
        assert compiles == ["scale_rows"]
        (tmp_path / "pc_consts.py").write_text("FACTOR = 5.0  # edited\n")  # new size: no stale .pyc
        sys.modules.pop("pc_consts")
        out, _ = run(path)
        assert compiles == ["scale_rows", "scale_rows"]
        np.testing.assert_array_equal(out, A * np.float32(5.0))
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("pc_consts", None)


CONFIG_CLASSES = {
    "dataclass": "from dataclasses import dataclass\n\n\n@dataclass(frozen=True)\nclass Shape:\n",
    "NamedTuple": "from typing import NamedTuple\n\n\nclass Shape(NamedTuple):\n",
}
CONFIG_BODY = """    factor: float = 2.0

    @property
    def scaled(self) -> float:
        return self.factor * {mult}


SHAPE = Shape({factor})
"""


@pytest.mark.parametrize("kind", sorted(CONFIG_CLASSES))
def test_a_config_object_is_recorded_by_its_fields_and_its_class_file(tmp_path, compiles, kind):
    """A model's shape or tiling config the kernel reads (a dataclass: it had compiled at every
    call in a new process; a NamedTuple): a hit needs the same field values and the same class
    code (a property the kernel reads runs it; a NamedTuple's changed property had been served
    the program compiled with the old one)."""
    sys.path.insert(0, str(tmp_path))
    try:
        module = CONFIG_CLASSES[kind] + CONFIG_BODY
        (tmp_path / "pc_shape.py").write_text(module.format(mult="1.0", factor="2.0"))
        path = write_kernel(tmp_path, "SHAPE.scaled", "from pc_shape import SHAPE")
        run(path)
        out, _ = run(path)
        assert compiles == ["scale_rows"]
        np.testing.assert_array_equal(out, A * np.float32(2.0))
        for mult, factor, want in (("1.0", "3.00", 3.0), ("10.0", "3.00", 30.0)):  # a field, then the class
            (tmp_path / "pc_shape.py").write_text(module.format(mult=mult, factor=factor))
            sys.modules.pop("pc_shape")
            out, _ = run(path)
            np.testing.assert_array_equal(out, A * np.float32(want))
        assert compiles == ["scale_rows"] * 3
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("pc_shape", None)


def test_an_enum_member_is_recorded_with_its_value(tmp_path, compiles):
    """An enum member whose value the kernel folds in: a changed value compiles again (the
    member's name alone had served the program compiled with the old value)."""
    sys.path.insert(0, str(tmp_path))
    try:
        module = "import enum\n\n\nclass Scale(enum.Enum):\n    BY = {value}\n"
        (tmp_path / "pc_enum.py").write_text(module.format(value="2.0"))
        path = write_kernel(tmp_path, "BY.value", "from pc_enum import Scale\nBY = Scale.BY")
        run(path)
        run(path)
        assert compiles == ["scale_rows"]
        (tmp_path / "pc_enum.py").write_text(module.format(value="7.00"))
        sys.modules.pop("pc_enum")
        out, _ = run(path)
        assert compiles == ["scale_rows"] * 2
        np.testing.assert_array_equal(out, A * np.float32(7.0))
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("pc_enum", None)


def test_a_host_function_s_code_is_a_dependency(tmp_path, compiles):
    """A @pl.jit.host helper in another module, run while the kernel compiles: an edit of its
    body, or of a plain function in a third module it calls, compiles the kernel again (their
    names alone had served the program compiled with the old code: a stale, wrong result)."""
    sys.path.insert(0, str(tmp_path))
    try:
        host = (
            "import pypto.language as pl\nfrom pc_base import base\n\n\n"
            "@pl.jit.host\ndef factor():\n    return base() * {scale}\n"
        )
        (tmp_path / "pc_base.py").write_text("def base():\n    return 2.0\n")
        (tmp_path / "pc_host.py").write_text(host.format(scale="1.0"))
        path = write_kernel(tmp_path, "factor()", "from pc_host import factor")
        run(path)
        out, _ = run(path)
        assert compiles == ["scale_rows"]
        np.testing.assert_array_equal(out, A * np.float32(2.0))
        (tmp_path / "pc_host.py").write_text(host.format(scale="3.00"))  # the host function's body
        sys.modules.pop("pc_host")
        out, _ = run(path)
        np.testing.assert_array_equal(out, A * np.float32(6.0))
        (tmp_path / "pc_base.py").write_text("def base():\n    return 5.00\n")  # what it calls
        sys.modules.pop("pc_base")
        sys.modules.pop("pc_host")
        out, _ = run(path)
        np.testing.assert_array_equal(out, A * np.float32(15.0))
        assert compiles == ["scale_rows"] * 3
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("pc_host", "pc_base"):
            sys.modules.pop(name, None)


def test_module_attribute_change_recompiles(tmp_path, compiles):
    sys.path.insert(0, str(tmp_path))
    try:
        (tmp_path / "pc_cfg.py").write_text("FACTOR = 2.0\n")
        path = write_kernel(tmp_path, "pc_cfg.FACTOR", "import pc_cfg")
        run(path)
        (tmp_path / "pc_cfg.py").write_text("FACTOR = 0.5  # edited\n")  # new size: no stale .pyc
        sys.modules.pop("pc_cfg")
        out, _ = run(path)
        assert compiles == ["scale_rows", "scale_rows"]
        np.testing.assert_array_equal(out, A * np.float32(0.5))
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("pc_cfg", None)


CALLER = """
import pypto.language as pl
from pc_callee import add_k

@pl.jit
def caller(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    for i in pl.range(2):
        out = add_k(a, i, out)
    return out
"""

CALLEE = """
import pypto.language as pl

@pl.jit.incore
def add_k(a: pl.Tensor, i: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor]):
    t = pl.load(a, [i * 8, 0], [8, 64])
    pl.store(pl.adds(t, {value}), [i * 8, 0], out)
    return out
"""


def test_called_kernel_edit_recompiles(tmp_path, compiles):
    sys.path.insert(0, str(tmp_path))
    try:
        (tmp_path / "caller.py").write_text(CALLER)
        (tmp_path / "pc_callee.py").write_text(CALLEE.format(value="1.0"))
        out = np.zeros_like(A)
        load_module(tmp_path / "caller.py").caller(A, out)
        sys.modules.pop("pc_callee")
        load_module(tmp_path / "caller.py").caller(A, out)
        assert compiles == ["caller"]
        (tmp_path / "pc_callee.py").write_text(CALLEE.format(value="10.0"))
        sys.modules.pop("pc_callee")
        load_module(tmp_path / "caller.py").caller(A, out)
        assert compiles == ["caller", "caller"]
        np.testing.assert_array_equal(out, A + np.float32(10.0))
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("pc_callee", None)


def test_package_version_change_recompiles(tmp_path, compiles, monkeypatch):
    path = write_kernel(tmp_path)
    run(path)
    monkeypatch.setattr(pypto, "__version__", pypto.__version__ + ".post1")
    program_cache._package_signature.cache_clear()
    try:
        run(path)
    finally:
        monkeypatch.undo()
        program_cache._package_signature.cache_clear()
    assert compiles == ["scale_rows", "scale_rows"]


def test_platform_table_change_recompiles(tmp_path, compiles, monkeypatch):
    path = write_kernel(tmp_path)
    run(path)
    edited = platforms.get("a2a3sim").with_overrides(ub_bytes=platforms.get("a2a3sim").ub_bytes // 2)
    real_get = platforms.get
    monkeypatch.setattr(
        platforms,
        "get",
        lambda name, profile="device": (
            edited if (name, profile) == ("a2a3sim", "device") else real_get(name, profile)
        ),
    )
    run(path)
    assert compiles == ["scale_rows", "scale_rows"]


def test_other_platform_or_compile_option_is_another_entry(tmp_path, compiles):
    path = write_kernel(tmp_path)
    run(path)
    others = [n for n in platforms.names() if n != "a2a3sim"]
    if others:
        run(path, RunConfig(platform=others[0]))
    run(path, RunConfig(memory_planner=MemoryPlanner.PTOAS))
    assert len(compiles) == 2 + bool(others)


def test_run_options_share_the_entry(tmp_path, compiles):
    """Trace, timeline, cost profile and output folder are read by runs only: a new process
    asking for any of them is served from the entry of the first compile."""
    path = write_kernel(tmp_path)
    plain, _ = run(path)
    traced, report = run(path, RunConfig(trace=True, timeline=True, output_dir=tmp_path / "traced"))
    run(path, RunConfig(cost_profile="pto-isa"))
    assert compiles == ["scale_rows"]
    assert plain.tobytes() == traced.tobytes()
    assert (tmp_path / "traced" / "report" / "timeline.html").is_file() and report.instructions
    assert list((tmp_path / "traced" / "kernels").glob("*.cpp"))


def test_corrupt_entry_and_missing_kernel_recompile(tmp_path, compiles, private_cache):
    path = write_kernel(tmp_path)
    run(path)
    (entry,) = (private_cache / "programs" / "index").rglob("*.pkl")
    entry.write_bytes(entry.read_bytes()[:-10])  # truncated
    out, _ = run(path)
    np.testing.assert_array_equal(out, A * np.float32(2.0))
    for so in (private_cache / "kernels").rglob("*.so"):
        so.unlink()
    out, _ = run(path)
    np.testing.assert_array_equal(out, A * np.float32(2.0))
    assert compiles == ["scale_rows"] * 3


def test_user_output_dir_gets_sources_on_a_hit(tmp_path, compiles):
    path = write_kernel(tmp_path)
    run(path, RunConfig(output_dir=tmp_path / "a"))
    run(path, RunConfig(output_dir=tmp_path / "a"))
    assert compiles == ["scale_rows"]
    assert list((tmp_path / "a" / "kernels").glob("*.cpp"))


def test_unrecordable_global_compiles_every_time(tmp_path, compiles):
    """A kernel reading an attribute of a user object: its value cannot be recorded, so the
    program is not cached on disk (and a changed value is never served stale)."""
    imports = "class Cfg:\n    factor = {f}\nCFG = Cfg()"
    path = write_kernel(tmp_path, "CFG.factor", imports.format(f="2.0"))
    first, _ = run(path)
    write_kernel(tmp_path, "CFG.factor", imports.format(f="4.00"))  # new size: no stale .pyc
    second, _ = run(path)
    assert compiles == ["scale_rows", "scale_rows"]
    np.testing.assert_array_equal(first, A * np.float32(2.0))
    np.testing.assert_array_equal(second, A * np.float32(4.0))
    assert not list((tmp_path / "cache" / "programs" / "index").rglob("*.pkl"))


def test_new_process_hit_skips_the_compiler(tmp_path):
    # A hit runs from plain launch data: neither the passes nor the launch planner load.
    path = write_kernel(tmp_path)
    script = textwrap.dedent(
        f"""
        import sys
        import numpy as np
        sys.path.insert(0, {str(tmp_path)!r})
        import kern
        a = np.arange(16 * 64, dtype=np.float32).reshape(16, 64) / 7
        out = np.zeros_like(a)
        kern.scale_rows(a, out)
        loaded = "pypto.passes.pipeline" in sys.modules or "pypto.compile.plan" in sys.modules
        print(out.sum(), kern.scale_rows.last_report.cycles, loaded)
        """
    )
    first = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=HERE
    )
    second = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=HERE
    )
    s1, c1, compiled1 = first.stdout.splitlines()[-1].split()
    s2, c2, compiled2 = second.stdout.splitlines()[-1].split()
    assert (s1, c1) == (s2, c2)
    assert compiled1 == "True" and compiled2 == "False"
    assert path.exists()


EXTERNAL = """
import pypto.language as pl



@pl.function(type=pl.FunctionType.AIV, external_source="ext.cpp")
def ext(x: pl.Tensor[[8, 64], pl.FP32], out: pl.Out[pl.Tensor[[8, 64], pl.FP32]]): ...


@pl.jit
def call_ext(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    ext(x, out)
    return out
"""

EXT_CPP = """#include <pypto/kernel.hpp>
using namespace pypto;
extern "C" void kernel_entry(__gm__ int64_t* args) {{
  Tensor x = arg_tensor(args, 0), out = arg_tensor(args, 1);
  VecTile<float, 8, 64> t(0);
  TLOAD(t, x, 0, 0);
  set_flag(PIPE_MTE2, PIPE_V, 0);
  wait_flag(PIPE_MTE2, PIPE_V, 0);
  TADDS(t, t, {add});
  set_flag(PIPE_V, PIPE_MTE3, 0);
  wait_flag(PIPE_V, PIPE_MTE3, 0);
  TSTORE(out, 0, 0, t);
}}
"""


def test_hand_written_kernel_edit_is_rebuilt_on_a_hit(tmp_path, compiles):
    (tmp_path / "ext_prog.py").write_text(EXTERNAL)
    (tmp_path / "ext.cpp").write_text(EXT_CPP.format(add="1.0"))
    x = np.arange(8 * 64, dtype=np.float32).reshape(8, 64)
    out = np.zeros_like(x)
    load_module(tmp_path / "ext_prog.py").call_ext(x, out)
    np.testing.assert_array_equal(out, x + 1)
    (tmp_path / "ext.cpp").write_text(EXT_CPP.format(add="10.0"))
    load_module(tmp_path / "ext_prog.py").call_ext(x, out)
    assert compiles == ["call_ext"]  # the program came from disk; its .cpp was rebuilt
    np.testing.assert_array_equal(out, x + 10)


SCALAR_KERNEL = """
import pypto.language as pl


@pl.jit
def scaled(a: pl.Tensor, f: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.muls(pl.load(a, [0, 0], [16, 64]), f), [0, 0], out)
    return out
"""


def test_program_restored_in_a_new_process_still_checks_its_scalar_arguments(tmp_path):
    (tmp_path / "skern.py").write_text(SCALAR_KERNEL)
    script = textwrap.dedent(
        f"""
        import sys
        import numpy as np
        sys.path.insert(0, {str(tmp_path)!r})
        import skern
        from pypto.errors import ArgumentError
        a = np.ones((16, 64), np.float32)
        prog = skern.scaled.compile(a, 2.0, np.zeros_like(a))
        out = np.zeros_like(a)
        prog.run(a, 2.0, out)
        try:
            prog.run(a, 3.0, out)
            print("ran", "pypto.passes.pipeline" in sys.modules)
        except ArgumentError as e:
            print("refused", "pypto.passes.pipeline" in sys.modules, str(e).splitlines()[0])
        """
    )
    runs = [
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=HERE)
        for _ in range(2)
    ]
    first, second = (r.stdout.splitlines()[-1] for r in runs)
    assert first.startswith("refused True")  # compiled in this process
    assert second.startswith("refused False")  # restored from disk, no compiler loaded
    assert "is 3.0, but this program was compiled with 2.0" in second


def test_program_read_back_from_its_folder_checks_its_scalar_arguments(tmp_path):
    from pypto.errors import ArgumentError
    from pypto.runtime.jit import CompiledProgram

    (tmp_path / "skern2.py").write_text(SCALAR_KERNEL)
    kern = load_module(tmp_path / "skern2.py").scaled
    a = np.ones((16, 64), np.float32)
    kern.compile(a, 2.0, np.zeros_like(a), config=RunConfig(output_dir=tmp_path / "out"))
    again = CompiledProgram.from_dir(tmp_path / "out")
    out = np.zeros_like(a)
    again.run(a, 2.0, out)
    np.testing.assert_array_equal(out, 2 * a)
    with pytest.raises(ArgumentError, match="is 3.0, but this program was compiled with 2.0"):
        again.run(a, 3.0, out)


HELPER_USER = """
import pypto.language as pl
import pc_knobs
from pc_helpers import scaled

@pl.jit
def via_helper(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(scaled(pl.load(a, [0, 0], [16, 64])), [0, 0], out)
    return out
"""

HELPERS = """
import pypto.language as pl
import pc_knobs

@pl.jit.inline
def scaled(t):
    return pl.muls(t, pc_knobs.FACTOR)
"""


def test_a_constant_read_by_an_inline_helper_is_a_dependency(tmp_path, compiles):
    sys.path.insert(0, str(tmp_path))
    try:
        (tmp_path / "pc_knobs.py").write_text("FACTOR = 2.0\n")
        (tmp_path / "pc_helpers.py").write_text(HELPERS)
        (tmp_path / "user.py").write_text(HELPER_USER)
        out = np.zeros_like(A)
        load_module(tmp_path / "user.py").via_helper(A, out)
        (tmp_path / "pc_knobs.py").write_text("FACTOR = 4.0  # edited\n")  # new size: no stale .pyc
        for name in ("pc_knobs", "pc_helpers"):
            sys.modules.pop(name)
        load_module(tmp_path / "user.py").via_helper(A, out)
        assert compiles == ["via_helper", "via_helper"]
        np.testing.assert_array_equal(out, A * np.float32(4.0))
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("pc_knobs", "pc_helpers"):
            sys.modules.pop(name, None)


PROGRAM = """
import pypto.language as pl

FACTOR = {factor}
{blank}
@pl.program
class Scaled:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]
    ) -> pl.Tensor[[16, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            t: pl.Tile[[16, 64], pl.FP32] = pl.tile.load(a, [0, 0], [16, 64])
            pl.tile.store(pl.tile.muls(t, FACTOR), [0, 0], out)
        return out
"""


def run_program(folder: Path, factor: str = "2.0", blank: str = ""):
    """A @pl.program parsed afresh from its file (a new process's object), compiled and run."""
    path = folder / "prog.py"
    path.write_text(PROGRAM.format(factor=factor, blank=blank))
    compiled = pypto.runtime.run(load_module(path).Scaled)
    out = np.zeros_like(A)
    compiled(A, out)
    return out, compiled.last_report


def test_a_program_parsed_again_is_served_from_disk(tmp_path, compiles):
    first, report1 = run_program(tmp_path)
    second, report2 = run_program(tmp_path)
    assert compiles == ["Scaled"]  # the second program never went through the passes
    np.testing.assert_array_equal(first, A * np.float32(2.0))
    assert first.tobytes() == second.tobytes() and report1.cycles == report2.cycles


def test_a_program_whose_folded_value_changed_compiles_again(tmp_path, compiles):
    run_program(tmp_path, "2.0")
    out, _ = run_program(tmp_path, "3.0")
    assert compiles == ["Scaled", "Scaled"]
    np.testing.assert_array_equal(out, A * np.float32(3.0))


def test_a_program_moved_in_its_file_compiles_again(tmp_path, compiles):
    # its hints and errors name its lines, which the IR's spans hold
    run_program(tmp_path)
    run_program(tmp_path, blank="\n\n")
    assert compiles == ["Scaled", "Scaled"]


def test_a_programs_key_is_the_same_in_every_process(tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM.format(factor="2.0", blank=""))
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        import prog
        from pypto.runtime import RunConfig
        from pypto.runtime.entry import ProgramSource
        from pypto.runtime.jit import program_key
        print(program_key(ProgramSource(prog.Scaled), (), RunConfig().compile_options()))
        """
    )
    keys = {
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            cwd=HERE,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout.split()[-1]
        for seed in ("1", "2", "3")
    }
    assert len(keys) == 1 and len(keys.pop()) == 64


def _user_hook() -> None:
    """A function of the user's: pickle would store its name, not its code."""


def test_a_program_holding_what_pickle_only_names_is_not_cached(tmp_path):
    _, _ = run_program(tmp_path)
    program = load_module(tmp_path / "prog.py").Scaled
    options = RunConfig().compile_options()
    assert program_cache.ir_program_key(program, (), options) is not None
    held = dataclasses.replace(program, name=_user_hook)
    assert program_cache.ir_program_key(held, (), options) is None
    deep: tuple = ()
    for _ in range(100_000):  # deeper than pickle recurses: not cached, and no error
        deep = (deep,)
    assert program_cache.ir_program_key(dataclasses.replace(program, span=deep), (), options) is None
