"""Cycle-exact tests of the core model alone (stub instructions, no kernel).

Each instruction issues one scalar cycle after the previous (scalar_issue_cycles = 1 on
a2a3sim), so the n-th instruction (0-based) issues at cycle n + 1 and starts at
max(issue, pipe free, awaited flag).
"""

import pytest

from pypto import _native_testing, platforms
from pypto.errors import DeadlockError, FlagError

MTE2, MTE1, CUBE, VECTOR, FIXPIPE, MTE3, SCALAR, ALL = 0, 1, 2, 3, 4, 5, 6, 8
VEC = 1  # pypto_mem of the Vec space


def model():
    return _native_testing.CoreModel(platforms.get("a2a3sim").to_native(), True)


def spans(m):
    return [(r["name"], r["pipe"], r["start"], r["end"]) for r in m.records]


def test_issue_cost_is_one_cycle_per_instruction():
    assert platforms.get("a2a3sim").scalar_issue_cycles == 1


def test_first_instruction_starts_at_issue_not_before():
    m = model()
    m.op(MTE2, 100, "LOAD")
    m.finish()
    (rec,) = m.records
    assert (rec["issue"], rec["start"], rec["end"]) == (1, 1, 101)
    assert rec["start"] != 0 and rec["end"] != 100


def test_same_pipe_serialises_other_pipe_overlaps():
    m = model()
    m.op(MTE2, 100, "A")
    m.op(MTE2, 100, "B")
    m.op(VECTOR, 50, "C")
    m.finish()
    assert spans(m) == [("A", "MTE2", 1, 101), ("B", "MTE2", 101, 201), ("C", "VECTOR", 3, 53)]
    assert m.cycles == 201
    assert m.pipe_busy[MTE2] == 200 and m.pipe_busy[VECTOR] == 50 and m.pipe_busy[SCALAR] == 3


def test_wait_flag_holds_the_consumer_until_the_set_fires():
    m = model()
    m.op(MTE2, 100, "LOAD")
    m.set_flag(MTE2, VECTOR, 0)
    m.wait_flag(MTE2, VECTOR, 0)
    m.op(VECTOR, 10, "EXP")
    m.finish()
    assert spans(m) == [
        ("LOAD", "MTE2", 1, 101),
        ("SET_FLAG", "MTE2", 101, 101),  # fires when MTE2 drains to it (flags take no pipe time)
        ("WAIT_FLAG", "VECTOR", 101, 101),  # not 4 (its issue): waits for the set
        ("EXP", "VECTOR", 101, 111),
    ]


def test_wait_issued_before_its_set_blocks_the_pipe_until_then():
    m = model()
    m.wait_flag(MTE2, VECTOR, 0)  # issued 1st: nothing set yet, VECTOR blocks
    m.op(VECTOR, 10, "EXP")  # issued 2nd: queued behind the wait
    m.op(MTE2, 100, "LOAD")  # issued 3rd
    m.set_flag(MTE2, VECTOR, 0)  # issued 4th: fires at 103 and releases the wait
    m.finish()
    by_name = {r["name"]: (r["start"], r["end"]) for r in m.records}
    assert by_name == {"LOAD": (3, 103), "SET_FLAG": (103, 103), "WAIT_FLAG": (103, 103), "EXP": (103, 113)}


def test_flags_are_counted_per_event_id():
    m = model()
    m.op(MTE2, 100, "L0")
    m.set_flag(MTE2, VECTOR, 0)
    m.op(MTE2, 100, "L1")
    m.set_flag(MTE2, VECTOR, 1)
    m.wait_flag(MTE2, VECTOR, 1)  # id 1 fires after L1
    m.finish()
    wait = [r for r in m.records if r["name"] == "WAIT_FLAG"][0]
    assert wait["start"] == 201  # L0 [1,101), set0 at 101, L1 [101,201), set1 at 201


def test_pipe_barrier_all_drains_every_pipe_before_issuing_more():
    m = model()
    m.op(MTE2, 100, "LOAD")
    m.barrier(ALL)  # scalar waits for MTE2 (101), then issues at 102
    m.op(VECTOR, 10, "EXP")
    m.finish()
    assert spans(m) == [
        ("LOAD", "MTE2", 1, 101),
        ("PIPE_BARRIER", "SCALAR", 102, 102),
        ("EXP", "VECTOR", 103, 113),
    ]


def test_pipe_barrier_on_one_pipe_orders_only_that_pipe():
    m = model()
    m.op(VECTOR, 100, "V0")
    m.barrier(VECTOR)
    m.op(MTE2, 10, "L")
    m.finish()
    assert spans(m) == [("V0", "VECTOR", 1, 101), ("PIPE_BARRIER", "VECTOR", 101, 101), ("L", "MTE2", 3, 13)]


def test_wait_never_set_is_a_deadlock_naming_the_wait():
    m = model()
    m.op(MTE2, 100, "LOAD")
    m.wait_flag(MTE2, VECTOR, 3)
    m.op(VECTOR, 10, "EXP")
    with pytest.raises(DeadlockError, match=r"WAIT_FLAG #1 \(MTE2 -> VECTOR, event 3\) is never satisfied"):
        m.finish()


def test_barrier_all_behind_a_blocked_pipe_is_a_deadlock():
    m = model()
    m.wait_flag(MTE2, VECTOR, 0)
    with pytest.raises(DeadlockError, match="pipe_barrier"):
        m.barrier(ALL)


@pytest.mark.parametrize(
    "src,dst,eid,why",
    [
        (MTE2, MTE2, 0, "two different pipes"),
        (MTE2, VECTOR, 8, "event id out of range"),
        (MTE2, VECTOR, -1, "event id out of range"),
        (9, 0, 0, "two different pipes"),
        (-1, VECTOR, 0, "two different pipes"),
        (MTE2, -2, 0, "two different pipes"),
    ],
)
def test_invalid_flags_are_refused(src, dst, eid, why):
    m = model()
    with pytest.raises(FlagError, match=why):
        m.set_flag(src, dst, eid)
    with pytest.raises(FlagError, match=why):
        m.wait_flag(src, dst, eid)


def test_race_without_sync_is_reported_with_both_instructions():
    m = model()
    m.op(MTE2, 100, "TLOAD", writes=[(VEC, 0, 1024)], loc="k.py:3:4")
    m.op(VECTOR, 10, "TEXP", reads=[(VEC, 0, 1024)], loc="k.py:4:4")
    m.finish()
    (hazard,) = m.hazards
    assert hazard.startswith("RAW race: TEXP #1 on VECTOR [2, 12) at k.py:4:4 overlaps TLOAD #0 on MTE2")
    assert "k.py:3:4" in hazard


def test_synchronised_accesses_are_race_free():
    m = model()
    m.op(MTE2, 100, "TLOAD", writes=[(VEC, 0, 1024)])
    m.set_flag(MTE2, VECTOR, 0)
    m.wait_flag(MTE2, VECTOR, 0)
    m.op(VECTOR, 10, "TEXP", reads=[(VEC, 0, 1024)], writes=[(VEC, 0, 1024)])
    m.finish()
    assert m.hazards == []


def test_disjoint_addresses_do_not_race_and_war_is_caught():
    m = model()
    m.op(MTE2, 100, "TLOAD", writes=[(VEC, 1024, 1024)])
    m.op(VECTOR, 10, "TEXP", reads=[(VEC, 0, 1024)])  # [0, 1024) vs [1024, 2048): disjoint
    assert m.hazards == []
    m.op(VECTOR, 300, "TREAD", reads=[(VEC, 4096, 64)])
    m.op(MTE2, 10, "TLOAD2", writes=[(VEC, 4096 + 32, 32)])  # overwrites what TREAD still reads
    m.finish()
    (hazard,) = m.hazards
    assert hazard.startswith("WAR race: TLOAD2")


def test_a_loop_repeating_one_access_still_races_with_another_pipe():
    # Repeats of the same accesses on one pipe share their in-flight entries (the newest
    # instruction stands for them: it ends last and touches the same bytes), so a racing
    # access on another pipe is still caught, named against the newest repeat.
    m = model()
    for _ in range(3):
        m.op(VECTOR, 10, "TADDS", reads=[(VEC, 0, 1024)], writes=[(VEC, 0, 1024)])
    m.op(MTE3, 5, "TSTORE", reads=[(VEC, 0, 1024)])
    m.finish()
    (hazard,) = m.hazards
    assert hazard.startswith("RAW race: TSTORE #3 on MTE3 [4, 9)")
    assert "overlaps TADDS #2 on VECTOR [21, 31)" in hazard


def test_repeats_race_with_every_pipe_still_in_flight():
    # A repeat is taken over inline only while no other pipe is in flight; here two are (MTE2
    # the latest, MTE3 behind it), so each of the three repeats is checked against both.
    m = model()
    m.op(MTE2, 1000, "TLOAD", writes=[(VEC, 0, 1024)])  # [1, 1001)
    m.op(MTE3, 500, "TSTORE", reads=[(VEC, 4096, 1024)])  # [2, 502)
    for _ in range(3):
        m.op(VECTOR, 10, "TADDS", reads=[(VEC, 0, 1024)], writes=[(VEC, 4096, 1024)])
    m.finish()
    kinds = sorted(h.split(":")[0] + " " + h.split(" overlaps ")[1].split(" ")[0] for h in m.hazards)
    assert kinds == ["RAW race TLOAD"] * 3 + ["WAR race TSTORE"] * 3
    assert [h.split(" race: ")[1].split(" on ")[0] for h in m.hazards[::2]] == [
        "TADDS #2",
        "TADDS #3",
        "TADDS #4",
    ]


def test_a_repeat_of_part_of_the_newest_list_takes_over_only_that_part():
    # B repeats only the last access of A's list: the write becomes B's, the read stays A's.
    m = model()
    m.op(VECTOR, 10, "A", reads=[(VEC, 0, 64)], writes=[(VEC, 4096, 64)])  # [1, 11)
    m.op(VECTOR, 10, "B", writes=[(VEC, 4096, 64)])  # [11, 21)
    m.op(MTE3, 5, "S1", writes=[(VEC, 0, 64)])
    m.op(MTE2, 5, "S2", reads=[(VEC, 4096, 64)])
    m.finish()
    assert [h.split(" with ")[0] for h in m.hazards] == [
        "WAR race: S1 #2 on MTE3 [3, 8) overlaps A #0 on VECTOR [1, 11)",
        "RAW race: S2 #3 on MTE2 [4, 9) overlaps B #1 on VECTOR [11, 21)",
    ]


def test_a_repeat_reaching_past_the_newest_list_takes_over_every_entry_it_repeats():
    # Z's two accesses are the ring's newest two, pushed by X and Y: both become Z's.
    m = model()
    m.op(VECTOR, 10, "X", reads=[(VEC, 0, 64)])  # [1, 11)
    m.op(VECTOR, 10, "Y", writes=[(VEC, 4096, 64)])  # [11, 21)
    m.op(VECTOR, 10, "Z", reads=[(VEC, 0, 64)], writes=[(VEC, 4096, 64)])  # [21, 31)
    m.op(MTE3, 5, "S1", writes=[(VEC, 0, 64)])
    m.op(MTE2, 5, "S2", reads=[(VEC, 4096, 64)])
    m.finish()
    assert [h.split(" with ")[0] for h in m.hazards] == [
        "WAR race: S1 #3 on MTE3 [4, 9) overlaps Z #2 on VECTOR [21, 31)",
        "RAW race: S2 #4 on MTE2 [5, 10) overlaps Z #2 on VECTOR [21, 31)",
    ]


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_a_list_differing_from_the_newest_in_one_access_is_not_a_repeat(n):
    # B's list is A's with access k moved to other bytes: not a repeat, for every length a
    # list can have and every position, so A keeps all its entries and B's moved access is
    # its own (a store into either is named against the right instruction).
    for k in range(n):
        m = model()
        a = [(VEC, 1024 * i, 64) for i in range(n)]
        b = a[:k] + [(VEC, 1024 * k + 512, 64)] + a[k + 1 :]
        m.op(VECTOR, 10, "A", reads=a)  # [1, 11)
        m.op(VECTOR, 10, "B", reads=b)  # [11, 21)
        m.op(MTE3, 5, "S1", writes=[a[k]])
        m.op(MTE2, 5, "S2", writes=[b[k]])
        m.finish()
        assert [h.split(" with ")[0] for h in m.hazards] == [
            "WAR race: S1 #2 on MTE3 [3, 8) overlaps A #0 on VECTOR [1, 11)",
            "WAR race: S2 #3 on MTE2 [4, 9) overlaps B #1 on VECTOR [11, 21)",
        ], (n, k)


def test_a_repeated_access_is_kept_in_flight_until_its_newest_repeat_ends():
    # T's read is repeated until cycle 302; P before it ends at 2. Once the issue passes T's
    # first end (102), a new vector op drops P but keeps T's entry (its newest repeat's end
    # counts), so a store into T's bytes at ~160 is still a race with T #3.
    m = model()
    m.op(VECTOR, 1, "P", writes=[(VEC, 0, 64)])  # [1, 2)
    for _ in range(3):
        m.op(VECTOR, 100, "T", reads=[(VEC, 4096, 64)])  # [2, 102), [102, 202), [202, 302)
    for _ in range(150):
        m.op(SCALAR, 1, "NOP")  # no accesses: the issue moves on to cycle 154
    m.op(VECTOR, 1, "Q", writes=[(VEC, 8192, 64)])  # drops what ended by its issue
    m.op(MTE3, 5, "S", writes=[(VEC, 4096, 64)])
    m.finish()
    (hazard,) = m.hazards
    assert hazard.startswith("WAR race: S #155 on MTE3")
    assert "overlaps T #3 on VECTOR [202, 302)" in hazard


def test_accesses_wider_than_a_ring_entry_race_exactly():
    # A ring entry keeps rows, row bytes and stride in 32 bits and space and write in 8; an
    # access outside those ranges is kept whole beside the ring. Each case fails if it were
    # narrowed: 2**33 bytes to 0, space 300 to 44.
    big = 2**33
    m = model()
    m.op(MTE2, 1000, "WIDE", writes=[(VEC, 0, big)])  # [1, 1001)
    m.op(VECTOR, 10, "INSIDE", reads=[(VEC, big - 64, 64)])
    m.op(VECTOR, 10, "PAST", reads=[(VEC, big, 64)])
    m.op(MTE3, 1000, "SPACE300", writes=[(300, 0, 64)])  # [4, 1004)
    m.op(VECTOR, 10, "SPACE44", reads=[(44, 0, 64)])
    m.op(FIXPIPE, 10, "ALSO300", reads=[(300, 32, 8)])
    m.finish()
    assert [h.split(" with ")[0] for h in m.hazards] == [
        "RAW race: INSIDE #1 on VECTOR [2, 12) overlaps WIDE #0 on MTE2 [1, 1001)",
        "RAW race: ALSO300 #5 on FIXPIPE [6, 16) overlaps SPACE300 #3 on MTE3 [4, 1004)",
    ]


def test_wide_accesses_survive_the_ring_growing_and_repeats_reaching_past_the_newest_list():
    # 40 in-flight wide reads (the ring grows past its first 16 entries and keeps each access
    # in its slot); then Z repeats X's wide read and Y's narrow write, reaching past the newest
    # list, and takes both over.
    big = 2**33
    m = model()
    for i in range(40):
        m.op(VECTOR, 1000, f"R{i}", reads=[(VEC, i * big, big)])
    m.op(VECTOR, 10, "X", reads=[(VEC, 65 * big, big)])
    m.op(VECTOR, 10, "Y", writes=[(VEC, 64 * big, 64)])
    m.op(VECTOR, 10, "Z", writes=[(VEC, 64 * big, 64)], reads=[(VEC, 65 * big, big)])
    m.op(MTE3, 5, "S1", writes=[(VEC, 5 * big + big - 1, 1)])
    m.op(MTE3, 5, "S2", writes=[(VEC, 65 * big + 7, 1)])
    m.op(MTE3, 5, "S3", reads=[(VEC, 64 * big, 1)])
    m.finish()
    assert [h.split(" with ")[0].split(" [")[0] for h in m.hazards] == [
        "WAR race: S1 #43 on MTE3",
        "WAR race: S2 #44 on MTE3",
        "RAW race: S3 #45 on MTE3",
    ]
    assert [h.split(" overlaps ")[1].split(" on ")[0] for h in m.hazards] == ["R5 #5", "Z #42", "Z #42"]


def run_mixed_program(general: bool, record: bool = True):
    """A program exercising every case a vector op meets: runs that continue and break, a
    repeat taken over by the race check, a race with another pipe, a vector pipe blocked on a
    wait whose set comes later (ops queued behind it), and a PIPE_ALL barrier."""
    m = _native_testing.CoreModel(platforms.get("a2a3sim").to_native(), record)

    def vop(vec, nbytes, reads=(), writes=(), name="VOP"):
        m.vector(vec, nbytes, reads=list(reads), writes=list(writes), name=name, general=general)

    m.op(MTE2, 300, "TLOAD", writes=[(VEC, 0, 1024)])
    for _ in range(3):
        vop("add", 1024, reads=[(VEC, 4096, 1024)], writes=[(VEC, 8192, 1024)], name="TADD")
    vop("exp", 1024, reads=[(VEC, 0, 1024)], writes=[(VEC, 0, 1024)], name="TEXP")  # races TLOAD
    vop("div", 64, writes=[(VEC, 2048, 64)], name="TDIVS")
    m.wait_flag(MTE2, VECTOR, 1)  # its set comes later: the vector pipe blocks
    vop("binary", 256, reads=[(VEC, 0, 256)], writes=[(VEC, 256, 256)], name="TMUL")
    vop("binary", 256, reads=[(VEC, 0, 256)], writes=[(VEC, 256, 256)], name="TMUL")
    m.op(MTE2, 50, "TLOAD2", writes=[(VEC, 16384, 512)])
    m.set_flag(MTE2, VECTOR, 1)
    vop("copy", 32, writes=[(VEC, 512, 32)], name="TEXPANDS")
    m.barrier(ALL)
    for n in (32, 32, 4096, 32):
        vop("unary", n, reads=[(VEC, 0, n)], writes=[(VEC, 0, n)], name="TADDS")
    m.finish()
    return m


@pytest.mark.parametrize("record", [True, False])
def test_vector_issue_path_matches_the_general_issue_path(record):
    fast, general = run_mixed_program(False, record), run_mixed_program(True, record)
    assert fast.records == general.records
    assert (fast.cycles, fast.pipe_busy, fast.hazards) == (general.cycles, general.pipe_busy, general.hazards)
    assert len(fast.hazards) == 1 and fast.hazards[0].startswith("RAW race: TEXP")
    if record:
        mul = [r for r in fast.records if r["name"] == "TMUL"]
        load2 = next(r for r in fast.records if r["name"] == "TLOAD2")
        assert len(mul) == 2 and mul[0]["start"] >= load2["end"]  # queued behind the wait
        assert [r["bytes"] for r in fast.records if r["name"] == "TADDS"] == [32, 32, 4096, 32]
