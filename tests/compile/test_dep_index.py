"""The dependency index finds exactly the earlier tasks a task must follow: those that wrote a
window it reads or writes, or read a window it writes, where the windows overlap; but not the
other iterations' tasks of a pl.parallel loop it is in, and of tasks that add atomically into a
buffer it too only adds into, only as write gates. Checked against every pair of tasks, on plans
whose windows of one buffer come in any order and of any length (the index searches them by
where they start), and on task sets of a few to thousands of tasks far up a long plan."""

from __future__ import annotations

import random

import pytest

from pypto.compile.deps import DepIndex, Use


def _overlap(a, b) -> bool:
    if a is None or b is None:
        return True
    return all(a0 < b1 and b0 < a1 for (a0, a1), (b0, b1) in zip(a, b))


def _box(rng: random.Random):
    if rng.random() < 0.05:
        return None  # the whole buffer
    box = []
    for size in (64, 8):
        lo = rng.randrange(size)
        box.append((lo, min(size, lo + rng.choice((1, 1, 2, 4, 16)))))
    return tuple(box)


class _Task:
    def __init__(self, rng: random.Random, atomics: bool, loops: bool) -> None:
        self.uses = []
        for root in rng.sample(range(3), rng.randint(1, 3)):
            writes = rng.random() < 0.3
            self.uses.append(Use(root, _box(rng), reads=not writes or rng.random() < 0.5, writes=writes))
        written = sorted({u.root for u in self.uses if u.writes and not u.reads})
        self.atomic = frozenset(r for r in written if atomics and rng.random() < 0.6)
        self.parallel = []  # (loop run, iteration) of the pl.parallel loops it is in
        if loops and rng.random() < 0.7:
            self.parallel.append((1, rng.randrange(3)))
            if rng.random() < 0.5:
                self.parallel.append((2 + rng.randrange(2), rng.randrange(2)))


def _expected(plan: list[_Task], task: _Task) -> tuple[list[int], list[tuple[int, int]]]:
    """The rule, task pair by task pair."""
    shared: dict[int, set[int]] = {}
    for j, earlier in enumerate(plan):
        loops = dict(earlier.parallel)
        if any(run in loops and loops[run] != it for run, it in task.parallel):
            continue  # another iteration of a pl.parallel loop both are in
        for a in earlier.uses:
            for b in task.uses:
                if a.root == b.root and _overlap(a.box, b.box) and (a.writes or b.writes):
                    if not (b.root in task.atomic and b.root in earlier.atomic):
                        shared.setdefault(b.root, set()).add(j)
                    else:
                        shared.setdefault(b.root, set())
    ordered = set().union(*shared.values())
    plain = set().union(*(s for r, s in shared.items() if r not in task.atomic))
    gates = [(i, r) for i in sorted(ordered - plain) for r in sorted(task.atomic) if i in shared.get(r, ())]
    return sorted(ordered), gates


@pytest.mark.parametrize("atomics, loops", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("seed", range(3))
def test_a_task_follows_exactly_the_earlier_tasks_the_rule_names(seed, atomics, loops):
    rng = random.Random(seed)
    index, plan = DepIndex(), []
    for _ in range(300):
        task = _Task(rng, atomics, loops)
        assert index.submit(task.uses, task.atomic, task.parallel) == _expected(plan, task)
        plan.append(task)
    assert index.count == 300


def test_a_short_window_after_many_is_found_among_them_and_past_them():
    index = DepIndex()
    for start in range(1000, 0, -1):  # a thousand reads, the last one of the buffer's start
        index.submit([Use(0, ((start, start + 1),), True, False)], frozenset(), [])
    assert index.submit([Use(0, ((500, 502),), False, True)], frozenset(), []) == ([499, 500], [])
    tasks, _ = index.submit([Use(0, ((0, 2000),), False, True)], frozenset(), [])
    assert tasks == list(range(1001))  # every read, and the write just before


@pytest.mark.parametrize("count", [1, 2, 9, 33, 300, 5000])
def test_a_task_following_tasks_spread_over_a_long_plan_gets_them_ascending(count):
    rng = random.Random(count)
    writers = set(rng.sample(range(20_000), count))
    index = DepIndex()
    for t in range(20_000):  # the writers write the buffer, every other task another one
        index.submit([Use(0 if t in writers else 1, None, False, True)], frozenset(), [])
    assert index.submit([Use(0, None, True, False)], frozenset(), []) == (sorted(writers), [])


@pytest.mark.parametrize("span", [1, 2, 63, 64, 65, 200])
def test_recent_tasks_far_up_a_long_plan(span):
    index = DepIndex()
    for t in range(16_000 + span):
        index.submit([Use(t % 3, ((t, t + 1),), False, True)], frozenset(), [])
    window = ((16_000, 16_000 + span),)
    tasks, _ = index.submit([Use(r, window, True, False) for r in range(3)], frozenset(), [])
    assert tasks == list(range(16_000, 16_000 + span))


def test_malformed_uses_are_a_type_error():
    with pytest.raises(TypeError, match="a use is"):
        DepIndex().submit([(0, None, True)], frozenset(), [])
    with pytest.raises(TypeError, match="box dim"):
        DepIndex().submit([(0, ((0, 1, 2),), True, False)], frozenset(), [])
    with pytest.raises(TypeError, match="parallel loop"):
        DepIndex().submit([(0, None, True, False)], frozenset(), [[0, 1]])
    with pytest.raises(ValueError, match="no dims"):
        DepIndex().submit([(0, (), True, False)], frozenset(), [])
