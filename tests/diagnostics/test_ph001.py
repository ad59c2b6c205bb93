"""PH001 TileInnermostDimGranularity (docs/perf_hints.md): the exact line, the strict threshold per
platform, the moves clause, dedup with a count, disabling, and where the hints land."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import numpy as np
import pytest

import pypto.language as pl
from pypto.diagnostics.checks import check_perf_hints
from pypto.diagnostics.hints import HintSink
from pypto.ir.stmt import Program
from pypto.passes.context import PassContext
from pypto.passes.pipeline import run_passes
from pypto.runtime import RunConfig

HERE = Path(__file__).resolve()
TAIL = "Consider increasing tile shape on the innermost axis."


@pl.program
class MatLoad:
    @pl.function(type=pl.FunctionType.AIC)
    def k(self, a: pl.Tensor[[16, 16], pl.FP32]):
        t: pl.Tile[[16, 16], pl.FP32, pl.Mem.Mat] = pl.load(a, [0, 0], [16, 16], target_memory=pl.Mem.Mat)  # noqa: F841


def line_of(text: str) -> int:
    return next(i for i, line in enumerate(HERE.read_text().splitlines(), 1) if text in line)


@pl.jit
def copy_rows(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, a.shape[1]])  # the row width under test
        pl.store(t, [0, 0], out)
    return out


def hints_of(
    program: Program, platform: str = "a2a3sim", disabled: frozenset[str] = frozenset()
) -> list[str]:
    sink = HintSink(disabled)
    run_passes(program, PassContext(RunConfig(platform=platform).resolved_platform(), hints=sink))
    return sink.lines()


def compile_hints(cols: int, tmp_path: Path, **config) -> tuple[list[str], Path]:
    a = np.ones((64, cols), np.float32)
    compiled = copy_rows.compile(a, np.zeros_like(a), config=RunConfig(output_dir=tmp_path, **config))
    return compiled.hints, tmp_path / "report" / "perf_hints.log"


def test_the_spec_line_exactly():
    (line,) = hints_of(MatLoad)
    where = f"{HERE}:{line_of('t: pl.Tile[[16, 16], pl.FP32, pl.Mem.Mat]')}:8"
    assert line == (
        "[perf_hint PH001] TileInnermostDimGranularity: tile.load has innermost dim = 64B "
        "(tile fp32[16], target_memory=Mat); moves 1024B as 16 x 64B rows; recommended >= 512B "
        f"for backend a2a3 (L2 cache line = 512B). {TAIL} at {where}"
    )


def test_64x16_fp32_on_a2a3_hints_load_and_store_into_the_log(tmp_path: Path, caplog):
    with caplog.at_level(logging.INFO, logger="pypto.perf_hints"):
        hints, log = compile_hints(16, tmp_path)
    span = f"{HERE}:{line_of('t = pl.load(a, [0, 0], [64, a.shape[1]])')}:8"
    load = (
        "[perf_hint PH001] TileInnermostDimGranularity: tile.load has innermost dim = 64B (tile fp32[16], "
        "target_memory=Vec); moves 4096B as 64 x 64B rows; recommended >= 512B for backend a2a3 "
        f"(L2 cache line = 512B). {TAIL} at {span}"
    )
    assert hints[0] == load and hints[1].startswith(
        "[perf_hint PH001] TileInnermostDimGranularity: tile.store"
    )
    assert log.read_text().splitlines() == hints
    summary = f"[perf_hint] 2 hints across 2 sites; see {log}"
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [(logging.WARNING, summary)]


def test_wide_rows_are_silent(tmp_path: Path, caplog):
    with caplog.at_level(logging.DEBUG, logger="pypto.perf_hints"):
        hints, log = compile_hints(128, tmp_path)  # 128 fp32 = 512 B: not strictly below the line
    assert hints == [] and log.exists() and log.read_text() == ""
    assert caplog.records == []


@pytest.mark.parametrize("disabled", [{"PH001"}, {"TileInnermostDimGranularity"}])
def test_disabled_by_code_or_name(tmp_path: Path, disabled: set[str], caplog):
    with caplog.at_level(logging.DEBUG, logger="pypto.perf_hints"):
        hints, log = compile_hints(16, tmp_path, disabled_diagnostics=disabled)
    assert hints == [] and log.read_text() == "" and caplog.records == []
    assert hints_of(MatLoad, disabled=frozenset(disabled)) == []
    assert len(hints_of(MatLoad, disabled=frozenset({"SomethingElse"}))) == 1


def test_a5_uses_its_128_byte_threshold(tmp_path: Path):
    hints, _ = compile_hints(16, tmp_path / "a", platform="a5sim")
    assert len(hints) == 2 and "recommended >= 128B for backend a5 (L2 cache line = 512B)" in hints[0]
    assert compile_hints(32, tmp_path / "b", platform="a5sim")[0] == []  # 128 B: at the threshold
    assert len(compile_hints(32, tmp_path / "c")[0]) == 2  # ... which is still short on a2a3


def test_identical_hits_at_one_site_merge_with_a_count():
    fn = MatLoad.functions[0]
    cloned = dataclasses.replace(fn, body=fn.body * 3)  # as clones of a pipelined body would be
    sink = HintSink()
    check_perf_hints(
        dataclasses.replace(MatLoad, functions=(cloned,)),
        PassContext(RunConfig().resolved_platform(), hints=sink),
    )
    (line,) = sink.lines()
    assert f"{TAIL} (x3) at {HERE}:" in line and list(sink.counts.values()) == [3]


def test_valid_shape_sets_the_moves_clause():
    @pl.program
    class Partial:
        @pl.function(type=pl.FunctionType.AIV)
        def k(self, a: pl.Tensor[[16, 32], pl.FP32]):
            t: pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [16, 32], valid_shape=[10, 24])  # noqa: F841

    (line,) = hints_of(Partial)
    assert "innermost dim = 128B (tile fp32[32], target_memory=Vec); moves 960B as 10 x 96B rows" in line
