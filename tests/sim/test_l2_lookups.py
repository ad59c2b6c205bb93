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
MORE_SETS = 300  # another split of a line into set and tag
# The store keeps a set of at most 16 ways in 32 bytes (8-bit tags, the ways' LRU order in
# nibbles) and a wider one in plain arrays: both are held to the model.
PACKED_WAYS, WIDE_WAYS = 16, 20
FIRST_DEVICE_LINE = 2**48 // LINE  # where the registrations start


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


@pytest.mark.parametrize(("ways", "sets"), [(WAYS, SETS), (WAYS, MORE_SETS), (WIDE_WAYS, SETS)])
@pytest.mark.parametrize("overlapping", [False, True])
def test_l2_lookups_follow_the_lru_model(overlapping, ways, sets):
    host = np.zeros(300 * LINE, np.uint8)
    buffers = BUFFERS if overlapping else [BUFFERS[0], BUFFERS[2]]
    got = _native_testing.l2_lookups(platform(ways, sets).to_native(), host, buffers, WINDOWS)
    assert got == reference(host, buffers, WINDOWS, ways, sets)
    assert got[1] == (got[0][1], 0)  # the repeated window hits every line it filled


@pytest.mark.parametrize("sets", [SETS, MORE_SETS])
def test_runs_found_in_any_way(sets):
    """Three buffers of one line per set each, so every set holds a line of each in the way its
    buffer was first read into: runs read back find their lines in the second and third ways
    (their hits must make those ways the most recent: a fourth buffer then evicts the third's
    lines, read least recently), and a run crossing from one buffer into the next changes way
    mid-run."""
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
    got = _native_testing.l2_lookups(platform(ways, sets).to_native(), host, buffers, windows)
    assert got == reference(host, buffers, windows, ways, sets)
    assert got[3:5] == [(SETS, 0)] * 2
    assert got[6] == (SETS - 7, 7)
    assert got[7] == (SETS, 0)
    assert got[10] == (7, 0)


def one_set_touches(n_lines: int, seed: int, count: int = 400):
    """`count` one-line windows over `n_lines` lines that all lie in set 0, in a seeded random
    order: hits at every LRU rank, repeats of the most recent line, and misses evicting
    whichever way is the oldest."""
    order = np.random.default_rng(seed).integers(0, n_lines, count)
    return [(int(k) * SETS * LINE, 1, LINE, LINE) for k in order]


@pytest.mark.parametrize("ways", [1, 4, 5, PACKED_WAYS, 17, WIDE_WAYS])
def test_the_victim_is_the_least_recent_way(ways):
    """A set touched in random orders of twice its ways' lines: a way aged once too often or
    too rarely, or a hit that did not make its way the most recent, evicts another line than
    the model's and the hits part from it within a few misses. Two runs on the thread's store:
    the second (a new run id) finds none of the first's lines, and its LRU order starts afresh
    over the first's stale one."""
    n_lines = 2 * ways
    host = np.zeros(n_lines * SETS * LINE, np.uint8)
    buffers = [(0, host.nbytes)]
    p = platform(ways, SETS).to_native()
    for seed in (1, 2):
        windows = one_set_touches(n_lines, seed)
        got = _native_testing.l2_lookups(p, host, buffers, windows)
        assert got == reference(host, buffers, windows, ways, SETS)
        hits = sum(h for h, _ in got)
        assert 0 < hits < len(windows) - n_lines  # neither all misses nor all hits


@pytest.mark.parametrize("sets", [3, SETS])
def test_tags_at_the_edge_of_the_packed_range(sets):
    """A packed tag is the line's quotient by the sets less the first device line's, in 8
    bits; 0xFF and above are kept whole beside the set. Lines of one set with relative
    quotients 0xFE (the last that fits), 0xFF, 0x100 and 0x1FE (whose low 8 bits are 0xFE's)
    and 0: each is told from the others, and a host address's line (unregistered, far below
    the device lines) from all of them."""
    ways = 4
    first_q, s = divmod(FIRST_DEVICE_LINE, sets)  # the first device line: quotient 0, set s

    def offset(rel: int) -> int:  # the buffer's byte holding the line of relative quotient rel
        return ((first_q + rel) * sets + s - FIRST_DEVICE_LINE) * LINE

    edge = [0xFE, 0xFF, 0x100, 0x1FE]
    host = np.zeros(offset(max(edge)) + 2 * sets * LINE, np.uint8)
    buffers = [(0, offset(max(edge)) + LINE)]
    read = {rel: (offset(rel), 1, LINE, LINE) for rel in [0, *edge]}
    # The first whole unregistered line past the buffer in set s: tagged by its host address.
    after = -(-(host.ctypes.data + buffers[0][1]) // LINE)
    unregistered = (after + (s - after) % sets) * LINE - host.ctypes.data
    windows = [read[r] for r in edge] * 2  # fill the set's four ways, then hit each
    # Each evicts the least recent: 0xFE, 0xFF, 0x100, then 0 after 0x1FE's hit, then 0xFE.
    windows += [read[0], read[0xFE], read[0xFF], read[0x1FE], read[0x100]]
    windows += [(unregistered, 1, LINE, LINE), read[0x1FE], (unregistered, 1, LINE, LINE)]
    got = _native_testing.l2_lookups(platform(ways, sets).to_native(), host, buffers, windows)
    assert got == reference(host, buffers, windows, ways, sets)
    assert got[:8] == [(0, 1)] * 4 + [(1, 0)] * 4
    assert got[8:] == [(0, 1)] * 3 + [(1, 0), (0, 1)] + [(0, 1), (1, 0), (1, 0)]


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
