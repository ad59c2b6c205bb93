"""The dependency index finds exactly the earlier tasks a task must follow: those that wrote a
window it reads or writes, or read a window it writes, where the windows overlap. Checked
against every pair of tasks, on plans whose windows of one buffer come in any order and of
any length (the index searches them by where they start)."""

from __future__ import annotations

import random

import pytest

from pypto.compile.deps import DepIndex, Use, overlap


def _box(rng: random.Random) -> tuple[tuple[int, int], ...] | None:
    if rng.random() < 0.05:
        return None  # the whole buffer
    box = []
    for size in (64, 8):
        lo = rng.randrange(size)
        box.append((lo, min(size, lo + rng.choice((1, 1, 2, 4, 16)))))
    return tuple(box)


def _task(rng: random.Random) -> list[Use]:
    uses = []
    for root in rng.sample(range(3), rng.randint(1, 3)):
        writes = rng.random() < 0.3
        uses.append(Use(root, _box(rng), reads=not writes or rng.random() < 0.5, writes=writes))
    return uses


def _conflict(earlier: list[Use], later: list[Use]) -> bool:
    return any(
        a.root == b.root and overlap(a.box, b.box) and (a.writes or b.writes) for a in earlier for b in later
    )


@pytest.mark.parametrize("seed", range(6))
def test_a_task_follows_exactly_the_earlier_tasks_whose_windows_conflict(seed):
    rng = random.Random(seed)
    index, plan = DepIndex(), []
    for uses in (_task(rng) for _ in range(400)):
        found, gates = index.follow(uses, frozenset(), [])
        assert found == [j for j, earlier in enumerate(plan) if _conflict(earlier, uses)]
        assert gates == []
        index.add(uses, frozenset(), [])
        plan.append(uses)


def test_a_short_window_after_many_is_found_among_them_and_past_them():
    index = DepIndex()
    for start in range(1000, 0, -1):  # a thousand reads, the last one of the buffer's start
        index.add([Use(0, ((start, start + 1),), True, False)], frozenset(), [])
    write_all = [Use(0, ((0, 2000),), False, True)]
    assert index.follow([Use(0, ((500, 502),), False, True)], frozenset(), [])[0] == [499, 500]
    assert len(index.follow(write_all, frozenset(), [])[0]) == 1000
