"""Hardware facts are defined once in C++ and read by Python; overrides that the flag encoding
or the models cannot hold are refused before anything runs."""

from __future__ import annotations

import numpy as np
import pytest

from pypto import _native, hardware, platforms
from pypto.codegen.cpp_expr import DTYPE_ENUM
from pypto.codegen.emitters import PIPE_CPP
from pypto.codegen.kernel import MEM_CPP
from pypto.codegen.regions import MEM_ABI
from pypto.errors import ConfigError
from pypto.ir.dtypes import ELEMENT_DTYPES, FP32, from_array_dtype
from pypto.ir.enums import MemorySpace, Pipe
from pypto.ir.ops import get_op
from pypto.ir.types import TileType
from pypto.passes._cluster_sides import CUBE_SPACES
from pypto.report import run_report as report
from pypto.report import trace
from pypto.runtime import dtypes
from pypto.runtime.pto_isa import pto_isa_include_dir


def test_python_reads_the_native_tables():
    facts = _native.hardware_facts()
    assert report.PIPES == hardware.PIPES == tuple(facts["pipes"])
    assert tuple(facts["flag_pipes"]) == trace.FLAG_PIPE_NAMES
    assert [p.name for p in Pipe] == list(hardware.PIPES)  # the DSL's pipes are the hardware's, in order
    assert {numpy: code for code, _, numpy, _ in facts["dtypes"]} == dtypes.CODES
    for name, code in dtypes.CODES.items():
        if name != "bfloat16":
            assert np.dtype(name).itemsize == hardware.DTYPE_SIZES[code]
    # The IR's memory spaces are the simulator's, in its order; the IR calls global memory DDR.
    assert ["GM" if m is MemorySpace.DDR else m.name for m in MemorySpace] == list(hardware.MEM_SPACES)
    # The compiler's cube side is the simulator's AIC: L1, L0 and bias; Vec is the AIV's alone.
    assert hardware.AIC_SPACES == ("Mat", "Left", "Right", "Acc", "Bias")
    assert {MemorySpace[name] for name in hardware.AIC_SPACES} == CUBE_SPACES
    # The IR's element dtypes are the ABI's, one each, of the same size.
    native = {name: size for _, name, _, size in facts["dtypes"]}
    assert {d.name.lower(): d.itemsize for d in ELEMENT_DTYPES} == native
    for _, name, numpy_name, _ in facts["dtypes"]:  # and arrays of numpy's name convert to it
        assert from_array_dtype(numpy_name).name.lower() == name


def test_the_ir_puts_each_on_chip_route_on_the_simulators_pipe():
    # A move or a windowed move the IR puts on another pipe than the ISA runs it on would only
    # show at run time, as a race between the two pipes.
    def tile(space: str) -> TileType:
        return TileType((16, 16), FP32, MemorySpace.DDR if space == "GM" else MemorySpace[space])

    routes = _native.hardware_facts()["routes"]
    assert {(src, dst) for src, dst, *_ in routes} >= {("Mat", "Left"), ("Acc", "Mat"), ("Vec", "Mat")}
    for src, dst, pipe, _vec_mat, windowed in routes:
        assert get_op("tile.move").pipe({"tile": tile(src), "result": tile(dst)}) is Pipe[pipe]
        if windowed:
            assert get_op("tile.extract").pipe({"src": tile(src), "result": tile(dst)}) is Pipe[pipe]


def test_codegen_spells_each_fact_as_the_kernel_header_does():
    # Each C++ spelling codegen writes is an enumerator of <pypto/kernel.hpp> standing for the
    # ABI value of the same pipe, memory space or dtype.
    header = (pto_isa_include_dir() / "pypto" / "kernel.hpp").read_text()
    for pipe, spelled in PIPE_CPP.items():
        assert f"{spelled} = PYPTO_{pipe.name}," in header  # abi.h names pipes as the report does
    assert set(PIPE_CPP) == set(Pipe)
    for space, spelled in MEM_CPP.items():
        assert f"{spelled.removeprefix('Mem::')} = {MEM_ABI[space]}" in header
    assert set(MEM_CPP) == {m.name for m in MemorySpace} - {"DDR"}
    for dtype, spelled in DTYPE_ENUM.items():
        assert f"{spelled.removeprefix('DType::')} = PYPTO_{dtype}" in header


def test_an_l2_line_that_is_not_a_power_of_two_is_refused_by_the_simulator():
    with pytest.raises(ValueError, match="l2_line_bytes must be a power of two"):
        platforms.get("a2a3sim").with_overrides(l2_line_bytes=500).to_native()


@pytest.mark.parametrize(("field", "limit"), [("event_ids", 64), ("cross_flag_ids", 64), ("l2_ways", 255)])
def test_python_refuses_an_override_at_the_simulators_own_limit(field, limit):
    # the limit is the simulator's (hardware.hpp), read through pypto.hardware: one rule
    table = platforms.get("a2a3sim")
    assert table.with_overrides(**{field: limit}).to_native() is not None
    with pytest.raises(ConfigError, match=rf"'{field}' must be in \[1, {limit}\]"):
        table.with_overrides(**{field: limit + 1})
