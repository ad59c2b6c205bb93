"""Host memory: a legal on-chip size override times the cores that run at once can exceed the
machine. The run is refused before any core allocates, with a HostMemoryError naming the
field, the override and the figures — never a std::bad_alloc or the out-of-memory killer.
Run in a fresh interpreter under an address-space limit, so a regression fails cleanly
instead of exhausting the machine."""

from __future__ import annotations

BLOCKS_SCRIPT = """
import resource
import numpy as np
import pypto.language as pl
from pypto.errors import HostMemoryError
from pypto.runtime import RunConfig

status = open("/proc/self/status").read()
mapped = int(next(l for l in status.splitlines() if l.startswith("VmSize:")).split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (mapped + 3 * 2**30, resource.RLIM_INFINITY))

B, R, C = 48, 16, 64

@pl.jit
def exp_rows(x: pl.Tensor[[B * R, C], pl.FP32], out: pl.Out[pl.Tensor[[B * R, C], pl.FP32]]):
    with pl.spmd(BLOCKS, name_hint="exp_rows"):
        i = pl.get_block_idx()
        pl.store(pl.exp(pl.load(x, [i * R, 0], [R, C])), [i * R, 0], out)
    return out

x = np.ones((B * R, C), np.float32)
out = np.zeros_like(x)
try:
    exp_rows(x, out, config=RunConfig(platform_overrides={"ub_bytes": UB}))
    print("ran", bool(np.isclose(out[0, 0], np.e)))
except HostMemoryError as e:
    assert isinstance(e, MemoryError)
    print("refused", (out == 0).all())
    print(e)
"""


def run(run_python, ub: int, blocks: int):
    done = run_python(BLOCKS_SCRIPT.replace("UB", str(ub)).replace("BLOCKS", str(blocks)), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def test_a_huge_override_with_many_blocks_is_refused_before_allocating(run_python):
    lines = run(run_python, 2**30, 48)
    assert lines[0] == "refused True"
    message = lines[1]
    assert "the simulated cores need 48.00 GiB of host memory" in message
    assert "48 vector cores run at once with 1.00 GiB each" in message
    assert "ub_bytes=1073741824 (a platform override)" in message


def test_the_same_override_with_one_block_runs(run_python):
    assert run(run_python, 2**30, 1) == ["ran True"]
