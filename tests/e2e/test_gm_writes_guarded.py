"""Every path that writes GM goes through the read-only guard: the DSL refuses a write into an
input at its line (``pl.store``, ``pl.assemble``, ``x[...] =``, ``pl.write``), and in the
simulator each ABI call that writes a tensor (TSTORE, its atomic add, TSTORE_BATCH, TWRITE)
refuses an input and read-only memory before touching a byte — a read-only memory map would
otherwise fault, so those cases run in a fresh interpreter."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import pypto.language as pl
from pypto.errors import InputWriteError, ReadOnlyInputError
from pypto.runtime import run_kernel_file

ABI = Path(__file__).resolve().parents[2] / "csrc" / "include" / "pypto" / "abi.h"
HERE = Path(__file__).read_text().splitlines()
# which= of tests/fixtures/kernels/gm_writers.cpp -> (ABI function, op in the message, dst shape)
WRITERS = {
    0: ("pypto_tstore", "TSTORE", (8, 64)),
    1: ("pypto_tstore", "TSTORE.atomic_add", (8, 64)),
    2: ("pypto_tstore_batch", "TSTORE", (1, 8, 64)),
    3: ("pypto_tensor_write", "TWRITE", (8, 64)),
}


def line_of(text: str) -> int:
    return next(i for i, line in enumerate(HERE, 1) if text in line and "line_of" not in line)


def test_every_abi_call_that_writes_a_tensor_is_exercised_here():
    """The ABI names a written tensor `dst` and a read one `src`: a new writer must join WRITERS."""
    text = ABI.read_text()
    tensor_params = re.findall(r"\b(pypto_\w+)\(([^)]*)\)", text)
    written = {fn for fn, params in tensor_params if re.search(r"pypto_tensor\*\s*dst\b", params)}
    unnamed = {fn for fn, params in tensor_params if re.search(r"pypto_tensor\*\s*(?!dst\b|src\b)\w", params)}
    assert unnamed == set(), "name every tensor parameter of the ABI dst (written) or src (read)"
    assert written == {fn for fn, _, _ in WRITERS.values()}


@pl.jit
def writes_input_element(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.write(a, [0, 0], 5.0)  # the bad scalar write
        pl.store(pl.load(a, [0, 0], [8, 64]), [0, 0], out)
    return out


@pl.jit
def writes_alias_element(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    b = a
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.write(b, [0, 0], 5.0)  # through an alias
        pl.store(pl.load(a, [0, 0], [8, 64]), [0, 0], out)
    return out


@pytest.mark.parametrize(
    "kernel, mark",
    [(writes_input_element, "# the bad scalar write"), (writes_alias_element, "# through an alias")],
)
def test_pl_write_into_an_input_is_a_compile_error_at_the_line(kernel, mark):
    a = np.ones((8, 64), np.float32)
    a.flags.writeable = False
    out = np.zeros_like(a)
    with pytest.raises(InputWriteError, match="`a` is an input of .* pl.write writes into it") as err:
        kernel(a, out)
    assert err.value.span.line == line_of(mark) and err.value.span.file == __file__
    assert (a == 1).all() and (out == 0).all()


def test_pl_write_into_a_read_only_memmap_input_never_faults(run_python, tmp_path):
    np.ones((8, 64), np.float32).tofile(tmp_path / "a.bin")
    done = run_python(
        """
        import numpy as np
        from test_gm_writes_guarded import writes_input_element
        from pypto.errors import InputWriteError
        a = np.memmap("a.bin", dtype=np.float32, mode="r", shape=(8, 64))
        try:
            writes_input_element(a, np.zeros((8, 64), np.float32))
        except InputWriteError:
            print("refused")
        """,
        cwd=tmp_path,
        PYTHONPATH=str(Path(__file__).parent),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "refused"
    assert (np.fromfile(tmp_path / "a.bin", np.float32) == 1).all()


@pytest.mark.parametrize("isolate", [False, True])
@pytest.mark.parametrize("which", sorted(WRITERS))
def test_every_gm_writer_refuses_an_input(fixture_kernel, which, isolate):
    _, op, shape = WRITERS[which]
    so = fixture_kernel("gm_writers")
    dst = np.zeros(shape, np.float32)
    with pytest.raises(
        ReadOnlyInputError, match=rf"{re.escape(op)}: writes into argument #0, an input"
    ) as err:
        run_kernel_file(so, [dst, which], outputs=set(), isolate=isolate)
    assert "gm_writers.cpp:15" in str(err.value)
    assert (dst == 0).all()
    run_kernel_file(so, [dst, which], outputs={0}, isolate=isolate)
    assert dst.reshape(-1)[0] == 5.0


@pytest.mark.parametrize("which", sorted(WRITERS))
def test_every_gm_writer_refuses_read_only_memory_in_process(fixture_kernel, run_python, tmp_path, which):
    """Handed to the native runtime as an output, a read-only memory map is refused by the
    simulator's own check: the store would fault on the mapping."""
    _, op, shape = WRITERS[which]
    so = fixture_kernel("gm_writers")
    np.zeros(shape, np.float32).tofile(tmp_path / "dst.bin")
    done = run_python(
        f"""
        import numpy as np
        from pypto import _native
        from pypto.errors import ReadOnlyInputError
        from pypto.platforms import get
        dst = np.memmap("dst.bin", dtype=np.float32, mode="r", shape={shape})
        try:
            _native.run_kernel({str(so)!r}, [(dst, 0)], [{which}], get("a2a3sim").to_native(), "w")
        except ReadOnlyInputError as e:
            print(e)
        """,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert f"{op}: writes into tensor #0, whose memory is read-only" in done.stdout
    assert (np.fromfile(tmp_path / "dst.bin", np.float32) == 0).all()
