"""The partition of a run's cases over N shards: deterministic, complete, never splitting a case, balanced."""

from __future__ import annotations

import random

import pytest

from evalbot.shard.partition import Shard, partition


def _cases(n: int, seed: int = 1) -> list[tuple[str, str, int]]:
    rng = random.Random(seed)
    return [(f"set-{i % 3}", f"case-{i}", rng.randint(1, 9)) for i in range(n)]


@pytest.mark.parametrize("count", [1, 2, 4, 7])
def test_every_case_in_exactly_one_shard_whatever_the_order(count: int) -> None:
    cases = _cases(300)
    first = partition(cases, count)
    shuffled = list(cases)
    random.Random(5).shuffle(shuffled)
    assert partition(shuffled, count) == first  # the file order does not matter, only ids and weights
    assert set(first) == {(s, c) for s, c, _ in cases}
    assert set(first.values()) == set(range(1, count + 1))


def test_balanced_by_invocations() -> None:
    cases = _cases(300)
    loads = [0] * 4
    for (s, c), shard in partition(cases, 4).items():
        loads[shard - 1] += next(w for s2, c2, w in cases if (s2, c2) == (s, c))
    assert max(loads) - min(loads) <= 9  # within the heaviest case (greedy, heaviest first)


def test_same_key_stays_together_and_counts_once_per_file() -> None:
    """The same eval set id in two files: a case id in both is one unit (never split across shards)."""
    out = partition([("s", "a", 3), ("s", "b", 1), ("s", "a", 2)], 2)
    assert out == {("s", "a"): 1, ("s", "b"): 2}


def test_changing_a_weight_only_moves_cases_deterministically() -> None:
    cases = _cases(40)
    assert partition(cases, 3) == partition(list(reversed(cases)), 3)
    heavier = [(s, c, w + 100 if c == "case-3" else w) for s, c, w in cases]
    assert partition(heavier, 3)[("set-0", "case-3")] == 1  # the heaviest case goes first, to shard 1


@pytest.mark.parametrize(("raw", "message"), [
    ("0/4", "K from 1 to N"), ("5/4", "K from 1 to N"), ("1/0", "N from 1 to"), ("2", "expected K/N"),
    ("a/b", "expected K/N"), ("-1/4", "expected K/N"), ("1/1001", "N from 1 to 1000"), ("", "expected K/N"),
])
def test_shard_parse_refuses(raw: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Shard.parse(raw)


def test_shard_parse_accepts() -> None:
    assert Shard.parse(" 2/4 ") == Shard(2, 4)
    assert str(Shard.parse("1/1")) == "1/1"
