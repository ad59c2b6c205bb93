"""examples/qwen3_decode_layer.py at a short context (256 tokens per sequence; the layer's
weights are real size): the layer matches its torch reference, the new token's k and v land in
their cache slots, and the report's kernel table and rooflines are consistent with the tasks."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from pypto.runtime import RunReport

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import qwen3_decode_layer as layer  # noqa: E402

SHORT = layer.LayerShape(context=256)


@pytest.fixture(scope="module")
def short_run():
    args = layer.layer_inputs(SHORT)
    before = {c: args[c].copy() for c in ("k_cache", "v_cache")}
    return (*layer.run(SHORT, args=args), before)


def test_the_layer_matches_torch_at_a_short_context(short_run):
    out, report, _, args, _ = short_run
    assert layer.error(out, layer.reference(SHORT, args), args["x"]) <= layer.TOLERANCE
    assert report.hazards == []
    assert {t.core_type for t in report.tasks} == {"AIC", "AIV"}


def test_the_new_tokens_k_and_v_are_written_to_their_slots_only(short_run):
    _, _, _, args, fresh = short_run
    slots = (args["slots"][:, 0, None] + SHORT.kv_block * np.arange(SHORT.kv_heads)).ravel()
    for cache in ("k_cache", "v_cache"):
        changed = np.flatnonzero((args[cache] != fresh[cache]).any(axis=1))
        assert set(changed) <= set(slots) and len(changed) > 0.9 * len(slots)


def test_the_kernel_table_accounts_for_every_task_and_byte(short_run):
    _, report, _, _, _ = short_run
    rows = {k.kernel: k for k in report.kernels()}
    assert sum(k.tasks for k in rows.values()) == len(report.tasks)
    assert sum(k.hbm_bytes for k in rows.values()) == pytest.approx(report.memory["hbm_bytes"])
    assert {"q_proj", "attention", "gate_up_silu_cube", "down_proj_cube"} <= set(rows)
    gate_up, weights = rows["gate_up_silu_cube"], SHORT.hidden * SHORT.intermediate * 2 * 2  # bf16
    # the weights stream from HBM once (256-column blocks: whole L2 lines per weight row)
    assert weights <= gate_up.hbm_bytes < 1.05 * weights
    assert gate_up.bound in ("HBM", "MTE2") and gate_up.ratio < 1.5
    roof = report.rooflines()
    assert 1.0 <= roof.ratio("hbm") < 2.0 and roof.ratio("cube") > roof.ratio("hbm")
    assert "kernels, in start order" in str(report) and "rooflines: HBM" in str(report)


def test_the_json_report_carries_the_kernel_table(short_run, tmp_path):
    _, report, _, _, _ = short_run
    data = RunReport.load(report.save(tmp_path / "layer.json")).to_dict()
    assert [k["kernel"] for k in data["kernels"]] == [k.kernel for k in report.kernels()]
    assert data["rooflines"]["hbm_ratio"] == pytest.approx(report.rooflines().ratio("hbm"))
    assert data["tasks"][0]["memory"]["hbm_bytes"] == report.tasks[0].memory["hbm_bytes"]
