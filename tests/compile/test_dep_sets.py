"""Task sets are Python ints, one bit per task: their members come back ascending, whether a
task follows a few tasks spread over a long plan or thousands of them."""

from __future__ import annotations

import random

import pytest

from pypto.compile.deps import members


@pytest.mark.parametrize("count", [0, 1, 2, 9, 33, 300, 5000])
def test_members_are_the_set_bits_ascending(count):
    rng = random.Random(count)
    tasks = sorted(rng.sample(range(20_000), count))
    assert members(sum(1 << t for t in tasks)) == tasks


def test_members_of_neighbouring_bits_in_one_byte_and_far_apart():
    assert members(0b1011_0110) == [1, 2, 4, 5, 7]
    assert members(1 << 16_447 | 1 << 8 | 1) == [0, 8, 16_447]


@pytest.mark.parametrize("span", [1, 2, 63, 64, 65, 200])
def test_members_of_recent_tasks_far_up_a_long_plan(span):
    # a task mostly follows a few recent ones: read from their stretch (within 64) or by bytes
    tasks = [16_000, 16_000 + span // 2, 16_000 + span - 1]
    assert members(sum(1 << t for t in set(tasks))) == sorted(set(tasks))
