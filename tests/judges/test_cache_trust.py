"""Issue 24, item 1: which cached judge answers a run replays (evalbot.judges.cache.CacheTrust)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalbot.judges.cache import CACHE_FORMAT, KEY_ENV, CacheTrust, DiskCache, cache_key

ADDRESS = cache_key("gemini-2.5-flash", {}, "judge this")
OTHER = cache_key("gemini-2.5-flash", {}, "judge that")


def _store(directory: Path, address: str, samples: dict[str, str], signatures: dict[str, str] | None = None) -> None:
    path = directory / address[:2] / f"{address}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    content: dict[str, object] = {"format": CACHE_FORMAT, "model": "m", "samples": samples}
    if signatures is not None:
        content["signatures"] = signatures
    path.write_text(json.dumps(content), encoding="utf-8")


@pytest.mark.parametrize(("env", "action", "key", "unsigned"), [
    ({}, False, None, True),  # the command line on a developer's machine: the quickstart's replay
    ({KEY_ENV: "s3cret-key"}, False, b"s3cret-key", False),
    ({}, True, None, False),  # the Action never replays unsigned answers
    ({KEY_ENV: "s3cret-key"}, True, b"s3cret-key", False),
    ({"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request"}, False, None, False),
    ({"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "merge_group"}, False, None, False),
    ({"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "push"}, False, None, True),
])
def test_trust_for_a_run(env: dict[str, str], action: bool, key: bytes | None, unsigned: bool) -> None:
    trust = CacheTrust.for_run(env, action=action)
    assert (trust.key, trust.unsigned) == (key, unsigned)


def test_only_answers_signed_with_the_key_for_their_own_request_and_index_replay(tmp_path: Path) -> None:
    mine = CacheTrust(b"workflow-key")
    good = mine.sign(ADDRESS, 0, "valid")
    assert good is not None
    _store(tmp_path, ADDRESS, {"0": "valid", "1": "valid", "2": "forged", "3": "unsigned"},
           {"0": good, "1": good, "2": good})  # 1: index moved; 2: text edited; 3: no signature
    cache = DiskCache(tmp_path, mine)
    assert cache.get(ADDRESS, 4) == ["valid", None, None, None]
    assert (cache.hits, cache.ignored) == (1, 3)
    _store(tmp_path, OTHER, {"0": "valid"}, {"0": good})  # another request's address
    assert cache.get(OTHER, 1) == [None] and cache.ignored == 4
    assert DiskCache(tmp_path, CacheTrust(b"another-key")).get(ADDRESS, 1) == [None]
    assert DiskCache(tmp_path, CacheTrust()).get(ADDRESS, 1) == [None]  # no key, untrusted: nothing
    assert DiskCache(tmp_path, CacheTrust(unsigned=True)).get(ADDRESS, 4) == ["valid", "valid", "forged", "unsigned"]
    junk = {"0": ["not", "text"], "1": 7}
    _store(tmp_path, ADDRESS, {"0": "valid"}, junk)  # type: ignore[arg-type]
    assert DiskCache(tmp_path, mine).get(ADDRESS, 1) == [None]


def test_written_answers_are_signed_and_replayed_by_the_next_run(tmp_path: Path) -> None:
    trust = CacheTrust(b"workflow-key")
    writer = DiskCache(tmp_path, trust)
    writer.put(ADDRESS, {0: "first", 1: "second"}, model="m")
    stored = json.loads((tmp_path / ADDRESS[:2] / f"{ADDRESS}.json").read_text(encoding="utf-8"))
    assert set(stored["signatures"]) == {"0", "1"}
    reader = DiskCache(tmp_path, trust)
    assert reader.get(ADDRESS, 2) == ["first", "second"] and reader.ignored == 0
    # Adding a sample keeps the others' signatures; an unsigned one planted meanwhile stays untrusted.
    stored["samples"]["2"] = "planted"
    (tmp_path / ADDRESS[:2] / f"{ADDRESS}.json").write_text(json.dumps(stored), encoding="utf-8")
    writer.put(ADDRESS, {3: "fourth"}, model="m")
    assert DiskCache(tmp_path, trust).get(ADDRESS, 4) == ["first", "second", None, "fourth"]
    # Without a key nothing is signed (the file stays format 2, readable by older versions).
    DiskCache(tmp_path / "plain", CacheTrust(unsigned=True)).put(ADDRESS, {0: "x"}, model="m")
    plain = json.loads((tmp_path / "plain" / ADDRESS[:2] / f"{ADDRESS}.json").read_text(encoding="utf-8"))
    assert "signatures" not in plain and plain["format"] == CACHE_FORMAT
