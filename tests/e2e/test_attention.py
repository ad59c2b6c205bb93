"""FlashAttention as fused cluster kernels against torch's scaled_dot_product_attention:
forward, causal and decode shapes (small, to keep the suite fast; the example runs
[24, 2048, 128]), and the same algorithm in upstream PyPTO's example form.

Tolerance: inputs are fp16, scores and softmax state fp32, P is rounded to fp16 before
P·V (as on the device), so |error| stays near fp16's 2^-11 relative step of the output
scale: rtol = atol = 2e-3."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import flash_attention as fa  # noqa: E402

RTOL = ATOL = 2e-3


@pytest.mark.parametrize(
    ("shape", "causal"),
    [((2, 128, 256, 128), False), ((2, 128, 128, 128), True), ((2, 64, 1024, 128), False)],
    ids=["forward", "causal", "decode"],
)
def test_attention_matches_torch(shape, causal):
    heads, sq, skv, d = shape
    br = bc = 64 if causal else None
    kernel = fa.make_attention(heads, sq, skv, d, br or 64, bc or 128, causal)
    q, k, v = fa.inputs(heads, sq, skv, d)
    out = np.zeros((heads * sq, d), np.float32)
    kernel(q, k, v, fa.causal_mask(br or 64, bc or 128), out)
    np.testing.assert_allclose(out, fa.reference(q, k, v, heads, causal), rtol=RTOL, atol=ATOL)
    rep = kernel.last_report
    assert {t.core_name[:3] for t in rep.tasks} == {"AIC", "AIV"}
    assert len(rep.tasks) == 3 * heads  # one cluster task per head: an AIC and two AIVs each
    assert len({t.core_name for t in rep.tasks if t.core_name.startswith("AIC")}) == heads  # in parallel


def test_upstream_example_form_matches_torch():
    import upstream_attention as ua

    q, k, v = fa.inputs(1, ua.Q_ROWS, ua.KV_ROWS, ua.D)
    out = np.zeros((ua.Q_ROWS, ua.D), np.float32)
    ua.flash_attn(q, k, v, out)
    np.testing.assert_allclose(out, fa.reference(q, k, v, 1), rtol=RTOL, atol=ATOL)
    assert sorted(t.core_name for t in ua.flash_attn.last_report.tasks) == ["AIC0", "AIV0", "AIV1"]


@pytest.mark.parametrize(
    ("shape", "causal"), [((2, 128, 512, 128), False), ((2, 256, 256, 64), True)], ids=["forward", "causal"]
)
def test_two_key_blocks_per_trip_compute_the_same_numbers_in_fewer_cycles(shape, causal):
    """pl.pipeline(stage=2) over the key blocks: the second block of a trip reads the score
    block the first one was handed ahead, and Vec cannot hold two stages, so the stages share
    storage only where the hand-over allows. The output is bit for bit the plain loop's, in
    fewer cycles (the second block's loads go ahead of the first block's compute). Causal, the
    trip count depends on the query block: a main loop of pairs and a remainder loop, whose
    copies of the loads' flags would need more event ids than a pipe pair has."""
    heads, sq, skv, d = shape  # forward: 4 key blocks, 2 trips of 2; causal: 1 to 4 key blocks
    br, bc = (64, 64) if causal else (64, 128)
    q, k, v = fa.inputs(heads, sq, skv, d)
    outs, cycles = [], []
    for stage in (1, 2):
        kernel = fa.make_attention(heads, sq, skv, d, br, bc, causal, stage=stage)
        out = np.zeros((heads * sq, d), np.float32)
        kernel(q, k, v, fa.causal_mask(br, bc), out)
        assert kernel.last_report.hazards == []
        outs.append(out)
        cycles.append(kernel.last_report.cycles)
    np.testing.assert_array_equal(outs[1], outs[0])
    np.testing.assert_allclose(outs[1], fa.reference(q, k, v, heads, causal), rtol=RTOL, atol=ATOL)
    assert cycles[1] < cycles[0]
