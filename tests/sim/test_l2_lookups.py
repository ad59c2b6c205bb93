"""The L2's line lookups against a plain LRU model of its contract: lines tagged by (the earliest
registration holding a byte, offset in it) — the registrations laid out one after another from
device address 2**48, each starting on a line — unregistered bytes by address, each window's lines
looked up once in row order, least recently used way evicted. Windows of every shape the
simulator takes apart differently: contiguous, overlapping rows, strided rows, rows sharing a
line, windows leaving their buffer or starting outside any."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

from pypto import _native_testing, platforms

LINE, WAYS, SETS = 512, 2, 48  # a small L2 (48 sets, not a power of two) so windows evict
# The store keeps 32-bit tags and stamps once a line's quotient by the sets fits (from 257 sets
# of 512-B lines); below, 64-bit. Both are held to the model.
NARROW_SETS = 300


def platform(ways: int = WAYS, sets: int = SETS):
    return platforms.get("a2a3sim").with_overrides(
        l2_bytes=LINE * ways * sets, l2_ways=ways, l2_line_bytes=LINE
    )


def reference(
    host: np.ndarray, buffers, windows, n_ways: int = WAYS, n_sets: int = SETS
) -> list[tuple[int, int]]:
    at = host.ctypes.data
    regs, dev = [], 2**48
    for tag, (off, n) in enumerate(buffers, start=1):
        regs.append((at + off, at + off + n, tag, dev))
        dev += -(-n // LINE) * LINE

    def canonical(x: int) -> int:
        holding = [(tag, lo, base) for lo, hi, tag, base in regs if lo <= x < hi]
        if not holding:
            return x
        _, lo, base = min(holding)
        return base + x - lo

    sets: dict[int, OrderedDict[int, None]] = {}
    out = []
    for off, rows, row_bytes, stride in windows:
        hits = misses = 0
        last = None
        for r in range(rows):
            lo = canonical(at + off + r * stride)
            first, end = lo // LINE, (lo + row_bytes - 1) // LINE
            for line in range(first if last is None else max(first, last + 1), end + 1):
                ways = sets.setdefault(line % n_sets, OrderedDict())
                if line in ways:
                    ways.move_to_end(line)
                    hits += 1
                else:
                    if len(ways) == n_ways:
                        ways.popitem(last=False)
                    ways[line] = None
                    misses += 1
                last = line
        out.append((hits, misses))
    return out


BUFFERS = [(0, 96 * LINE), (64 * LINE, 64 * LINE), (200 * LINE + 100, 40 * LINE)]
WINDOWS = [
    (0, 64, 256, 256),  # contiguous rows, two to a line
    (0, 64, 256, 256),  # again: hits
    (LINE * 10 + 32, 1, 5000, 5000),  # one row over many lines, unaligned
    (0, 16, 1024, 3 * 1024),  # strided rows: gaps between them
    (0, 16, 200, 256),  # strided, rows sharing lines
    (100, 12, 1024, 700),  # overlapping rows
    (64, 8, 512, 0),  # one row repeated
    (80 * LINE, 40, LINE, LINE),  # runs from the first buffer into the second's bytes
    (90 * LINE, 10, 3 * LINE, 4 * LINE),  # strided, across the first buffer's end
    (180 * LINE, 40, 256, 256),  # starts unregistered, runs into the third buffer
    (250 * LINE, 8, 512, 600),  # leaves the third buffer: its tail is unregistered
    (1000, 200, 512, 512),  # a long run: every set several times, evicting
    (0, 400, 256, 512),  # strided over two buffers: the second registration's bytes
]


@pytest.mark.parametrize("sets", [SETS, NARROW_SETS])
@pytest.mark.parametrize("overlapping", [False, True])
def test_l2_lookups_follow_the_lru_model(overlapping, sets):
    host = np.zeros(300 * LINE, np.uint8)
    buffers = BUFFERS if overlapping else [BUFFERS[0], BUFFERS[2]]
    got = _native_testing.l2_lookups(platform(sets=sets).to_native(), host, buffers, WINDOWS)
    assert got == reference(host, buffers, WINDOWS, n_sets=sets)
    assert got[1] == (got[0][1], 0)  # the repeated window hits every line it filled


@pytest.mark.parametrize("sets", [SETS, NARROW_SETS])
@pytest.mark.parametrize("clock_left", [None, 1, 5])
def test_runs_found_in_any_way(sets, clock_left):
    """Three buffers of one line per set each, so every set holds a line of each in the way its
    buffer was first read into: runs read back find their lines in the second and third ways
    (their hits must refresh those ways' LRU stamps: a fourth buffer then evicts the third's
    lines, read least recently), and a run crossing from one buffer into the next changes way
    mid-run. With `clock_left`, the LRU clock starts that many whole buffers' lookups (plus 3)
    short of a stored stamp's range (2**32 - 1 for 32-bit stamps, 2**64 - 1 for 64-bit): the
    store renumbers its stamps on the way, and the evictions stay those of the model."""
    ways = 3
    SETS = sets  # noqa: N806 - the test's set count, as the module's constant elsewhere
    host = np.zeros(4 * SETS * LINE, np.uint8)
    buffers = [(i * SETS * LINE, SETS * LINE) for i in range(4)]
    whole = [(i * SETS * LINE, SETS, LINE, LINE) for i in range(4)]
    windows = [whole[0], whole[1], whole[2], whole[0], whole[1]]  # fill ways 0-2, then hits
    windows += [
        (3 * SETS * LINE + 5 * LINE, 7, LINE, LINE),  # the fourth: evicts the third's lines
        whole[2],  # those 7 miss
        whole[1],  # in way 1 still
        (2 * SETS * LINE, SETS // 2, 256, 256),  # half the third's lines, two rows to a line
        (SETS * LINE // 2, SETS, LINE, LINE),  # the second's lines, then the third's
        (3 * SETS * LINE + 5 * LINE, 7, LINE, LINE),  # the fourth's: whole[2] evicted the first's
    ]
    top = 2**32 - 1 if sets == NARROW_SETS else 2**64 - 1
    clock = None if clock_left is None else top - clock_left * SETS - 3
    got = _native_testing.l2_lookups(
        platform(ways, sets).to_native(), host, buffers, windows, lru_clock=clock
    )
    assert got == reference(host, buffers, windows, ways, sets)
    assert got[3:5] == [(SETS, 0)] * 2
    assert got[6] == (SETS - 7, 7)
    assert got[7] == (SETS, 0)
    assert got[10] == (7, 0)


def test_many_small_buffers_spread_over_the_sets():
    """Sixty one-line buffers (a run's pipe rings and small tensors) read twice on the real L2:
    laid out one after another they take sixty sets, so the second pass hits. (Placed far
    apart, 2**40 bytes each, they would share three sets, twenty lines to a 16-way set, and
    every line of the second pass would miss.)"""
    p = platforms.get("a2a3sim")
    line = p.l2_line_bytes
    assert p.l2_ways < 20  # the case the old placement failed
    host = np.zeros(60 * line, np.uint8)
    buffers = [(i * line, line) for i in range(60)]
    windows = [(i * line, 1, line, line) for i in range(60)] * 2
    got = _native_testing.l2_lookups(p.to_native(), host, buffers, windows)
    assert got == [(0, 1)] * 60 + [(1, 0)] * 60


@pytest.mark.parametrize("rows", [512, 1024])
def test_a_transfer_before_every_claimed_bucket_shares_as_one_after_them(rows):
    """The HBM budget claimed per 64-cycle bucket is stored from the first bucket a run claims,
    so a later transfer that starts earlier (another core's, issued after) claims buckets in
    front of the stored ones. It must share exactly as when an earlier claim had made those
    buckets stored already. Y starts 3200 cycles before X, issued after it: 1 MiB finishes
    alone before X's first bucket; 2 MiB runs alone until X's buckets, waits out the ones X
    filled, and finishes after them."""
    p = platforms.get("a2a3sim").to_native()
    mib = 1 << 20
    host = np.zeros(8 * mib, np.uint8)
    buffers = [(0, 4 * mib), (4 * mib, 4 * mib)]
    x = (6400.0, 0, 1024, 2048, 2048)  # 2 MiB from cycle 6400 (bucket 100)
    y = (3200.0, 4 * mib, rows, 2048, 2048)  # from cycle 3200 (bucket 50), elsewhere
    early = (0.0, 7 * mib, 1, 512, 512)  # one line in bucket 0, far from both
    port = 1e6  # bytes a cycle: HBM's budget binds, not the port
    x_alone, y_alone = (_native_testing.gm_transfers(p, host, buffers, [t], port)[0] for t in (x, y))
    got = _native_testing.gm_transfers(p, host, buffers, [x, y], port)
    assert got == _native_testing.gm_transfers(p, host, buffers, [early, x, y], port)[1:]
    assert got[0] == x_alone
    if rows == 512:
        assert 3200 + y_alone < 6400 and got[1] == y_alone
    else:
        assert got[1] > y_alone + 3000  # waited out X's buckets


def test_the_memory_hooks_refuse_buffers_outside_the_host_array_and_bad_windows():
    p = platform().to_native()
    host = np.zeros(4 * LINE, np.uint8)
    with pytest.raises(ValueError, match="a buffer at 0 of 8192 bytes lies outside"):
        _native_testing.l2_lookups(p, host, [(0, 4 * LINE * 4)], [(0, 1, LINE, LINE)])
    with pytest.raises(ValueError, match="stride >= 0"):
        _native_testing.gm_transfers(p, host, [(0, 4 * LINE)], [(0.0, 0, 2, LINE, -8)], 64.0)
