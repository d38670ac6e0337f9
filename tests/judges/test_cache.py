"""The content-addressed judge cache and replay mode."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from evalbot.judges.base import JudgeRequest, ReplayMiss
from evalbot.judges.cache import CachingJudge, DiskCache, cache_key
from evalbot.judges.gemini import GeminiJudge
from evalbot.judges.sampling import SamplingJudge
from tests.fakes.fake_gemini import FakeGemini


def _caching(fake: FakeGemini, directory: Path, replay: bool = False) -> CachingJudge:
    backend = SamplingJudge(GeminiJudge(api_key="k", base_url=fake.url, timeout=5))
    return CachingJudge(backend, DiskCache(directory), replay=replay)


def test_second_run_makes_no_requests(fake: FakeGemini, tmp_path: Path) -> None:
    """A fresh process with the same cache directory answers from disk, identically, with zero requests."""
    fake.responder = lambda p, i, r: f"verdict {i}"
    request = JudgeRequest("m", "prompt", {"temperature": 0.5}, 5)
    first = asyncio.run(_caching(fake, tmp_path).generate(request))
    second = asyncio.run(_caching(fake, tmp_path).generate(request))
    assert len(fake.requests) == 1
    assert second.texts == first.texts and second.from_cache and not first.from_cache
    assert second.usage.requests == 0 and second.usage.input_tokens == 0 and second.usage.cached_samples == 5


def test_key_covers_model_config_and_prompt() -> None:
    """Changing any key ingredient changes the address: every config field that is sent is part of it (issue 37
    row 3: a field left out let a steered request's answer be replayed for main's identical one)."""
    base = cache_key("m", {"temperature": 0}, "p")
    assert base != cache_key("m2", {"temperature": 0}, "p")
    assert base != cache_key("m", {"temperature": 1}, "p")
    assert base != cache_key("m", {"temperature": 0}, "p ")
    assert base != cache_key("m", {"temperature": 0, "http_options": {"base_url": "x"}}, "p")
    assert base != cache_key("m", {"temperature": 0, "system_instruction": "say valid"}, "p")


def test_one_file_per_request_with_each_sample_under_its_index(fake: FakeGemini, tmp_path: Path) -> None:
    """Five samples of one request land in one file, keyed by sample index; a later request adds to it."""
    fake.responder = lambda p, i, r: f"verdict {i}"
    judge = _caching(fake, tmp_path)
    asyncio.run(judge.generate(JudgeRequest("m", "p", num_samples=5)))
    (path,) = tmp_path.glob("*/*.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert path.stem == cache_key("m", {}, "p") and data["format"] == 2 and data["model"] == "m"
    assert data["samples"] == {str(i): f"verdict {i}" for i in range(5)}
    asyncio.run(_caching(fake, tmp_path).generate(JudgeRequest("m", "p", num_samples=7)))
    assert len(json.loads(path.read_text(encoding="utf-8"))["samples"]) == 7
    assert [r.candidate_count for r in fake.requests] == [5, 2]


def test_only_missing_samples_are_requested(fake: FakeGemini, tmp_path: Path) -> None:
    """Three cached samples of five: one request for the two others."""
    judge = _caching(fake, tmp_path)
    asyncio.run(judge.generate(JudgeRequest("m", "p", num_samples=3)))
    reply = asyncio.run(judge.generate(JudgeRequest("m", "p", num_samples=5)))
    assert [r.candidate_count for r in fake.requests] == [3, 2]
    assert reply.cached_samples == 3 and len(reply.texts) == 5


def test_replay_hit_and_miss(fake: FakeGemini, tmp_path: Path) -> None:
    """Replay serves recorded answers and turns a miss into ReplayMiss, never calling the network."""
    asyncio.run(_caching(fake, tmp_path).generate(JudgeRequest("m", "seen", num_samples=2)))
    replay = CachingJudge(None, DiskCache(tmp_path), replay=True)
    assert asyncio.run(replay.generate(JudgeRequest("m", "seen", num_samples=2))).from_cache
    with pytest.raises(ReplayMiss, match="not in the cache"):
        asyncio.run(replay.generate(JudgeRequest("m", "unseen", num_samples=2)))
    with pytest.raises(ReplayMiss, match="1 of 3"):
        asyncio.run(replay.generate(JudgeRequest("m", "seen", num_samples=3)))
    assert len(fake.requests) == 1


def test_corrupt_entry_is_a_miss(tmp_path: Path) -> None:
    """A truncated or foreign file is ignored rather than served."""
    cache = DiskCache(tmp_path)
    key = cache_key("m", {}, "p")
    cache.put(key, {0: "good", 1: "fine"}, model="m")
    assert cache.get(key, 2) == ["good", "fine"]
    path = next(tmp_path.glob("*/*.json"))
    path.write_text('{"format": 2, "samples": ', encoding="utf-8")
    assert cache.get(key, 1) == [None]
    path.write_text(json.dumps({"format": 2, "samples": {"0": 3, "x": "y", "1": "ok"}}), encoding="utf-8")
    assert cache.get(key, 2) == [None, "ok"]
    path.write_text(json.dumps({"format": 1, "samples": {"0": "old format"}}), encoding="utf-8")
    assert cache.get(key, 1) == [None]


def test_concurrent_writers_never_expose_partial_files(tmp_path: Path) -> None:
    """Threads rewriting the same entries while others read always see a complete answer."""
    cache = DiskCache(tmp_path)
    keys = [cache_key("m", {}, f"p{i}") for i in range(4)]
    long_text = "x" * 200_000
    errors: list[str] = []

    def writer() -> None:
        for _ in range(30):
            for k in keys:
                cache.put(k, {0: long_text}, model="m")

    def reader() -> None:
        for _ in range(200):
            for k in keys:
                (got,) = DiskCache(tmp_path).get(k, 1)
                if got is not None and got != long_text:
                    errors.append("partial")

    threads = [threading.Thread(target=writer) for _ in range(3)] + [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert not list(tmp_path.glob("*/.tmp-*"))


def test_identical_concurrent_requests_share_one_call(fake: FakeGemini, tmp_path: Path) -> None:
    """Ten simultaneous identical requests cost one request."""
    fake.latency = 0.05
    judge = _caching(fake, tmp_path)

    async def run() -> None:
        await asyncio.gather(*(judge.generate(JudgeRequest("m", "same", num_samples=5)) for _ in range(10)))

    asyncio.run(run())
    assert len(fake.requests) == 1


def test_empty_answers_are_not_cached(fake: FakeGemini, tmp_path: Path) -> None:
    """A blank answer (blocked or truncated) is returned but not stored: the next run asks the judge again."""
    fake.responder = lambda p, i, r: "" if i == 1 else f"verdict {i}"
    request = JudgeRequest("m", "prompt", num_samples=2)
    first = asyncio.run(_caching(fake, tmp_path).generate(request))
    assert first.texts == ("verdict 0", "")
    second = asyncio.run(_caching(fake, tmp_path).generate(request))
    assert [r.candidate_count for r in fake.requests] == [2, 1]
    assert second.cached_samples == 1


def test_run_ends_with_every_answer_on_disk(fake: FakeGemini, tmp_path: Path) -> None:
    """Answers written by the background writer are all on disk when the run's last judge call returns."""
    fake.latency = 0.01
    judge = _caching(fake, tmp_path)

    async def run() -> None:
        await asyncio.gather(*(judge.generate(JudgeRequest("m", f"p{i}", num_samples=3)) for i in range(12)))

    asyncio.run(run())
    assert not judge.cache.writing and judge.cache.writes == 12
    assert len(list(tmp_path.glob("*/*.json"))) == 12 and not list(tmp_path.glob("*/.tmp-*"))
    fresh = DiskCache(tmp_path)
    assert all(fresh.get(cache_key("m", {}, f"p{i}"), 3) == [f"fake answer {s}" for s in range(3)] for i in range(12))


def test_queued_answers_are_served_before_they_are_written(tmp_path: Path) -> None:
    """An answer waiting for the writer is already a hit, and flush puts it on disk."""
    cache = DiskCache(tmp_path)
    key = cache_key("m", {}, "p")
    release = threading.Event()
    original = cache.put

    def slow_put(k: str, answers: Mapping[int, str], *, model: str) -> None:
        release.wait(5)
        original(k, answers, model=model)

    cache.put = slow_put  # type: ignore[method-assign]
    cache.put_later(key, {0: "queued"}, model="m")
    assert cache.get(key, 1) == ["queued"] and cache.writing and DiskCache(tmp_path).get(key, 1) == [None]
    release.set()
    cache.flush()
    assert DiskCache(tmp_path).get(key, 1) == ["queued"] and not cache.writing and not cache._unwritten


def test_write_failure_surfaces_when_the_run_ends(fake: FakeGemini, tmp_path: Path) -> None:
    """A cache that cannot be written (a file where the directory should be) fails the call that drains the
    writer instead of being ignored."""
    blocker = tmp_path / "cache"
    blocker.write_text("not a directory", encoding="utf-8")
    judge = _caching(fake, blocker)
    with pytest.raises(OSError):
        asyncio.run(judge.generate(JudgeRequest("m", "p", num_samples=2)))


def test_answer_written_during_a_lookup_is_still_a_hit(tmp_path: Path) -> None:
    """An answer the writer puts on disk (and unqueues) while a lookup reads the file is still found: a lookup sees
    it queued or on disk, never neither (that gap once cost a duplicate judge request)."""
    cache = DiskCache(tmp_path)
    key = cache_key("m", {}, "p")
    release = threading.Event()
    original_put, original_read = cache.put, cache._read

    def slow_put(k: str, answers: Mapping[int, str], *, model: str) -> None:
        release.wait(5)
        original_put(k, answers, model=model)

    lookups: list[str] = []

    def read_while_the_write_finishes(k: str) -> dict[int, str]:
        found = original_read(k)
        if not lookups:  # only the lookup under test: the write itself reads the file to merge, too
            lookups.append(k)
            release.set()
            cache.flush()  # meanwhile the answer is put in place and dropped from the queue
        return found

    cache.put = slow_put  # type: ignore[method-assign]
    cache.put_later(key, {0: "queued"}, model="m")
    cache._read = read_while_the_write_finishes  # type: ignore[method-assign]
    assert cache.get(key, 1) == ["queued"]


def test_concurrent_writes_of_one_request_keep_every_sample(tmp_path: Path) -> None:
    """Two threads adding different samples of the same request at once (the writer and a flushing caller) both
    land: the read-merge-write of one request is never interleaved."""
    cache = DiskCache(tmp_path)
    key = cache_key("m", {}, "p")
    original_read = cache._read

    def slow_read(k: str) -> dict[int, str]:
        found = original_read(k)
        time.sleep(0.05)  # widen the window between reading the file and replacing it
        return found

    cache._read = slow_read  # type: ignore[method-assign]
    threads = [threading.Thread(target=cache.put, args=(key, {i: f"answer {i}"}), kwargs={"model": "m"})
               for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert DiskCache(tmp_path).get(key, 3) == ["answer 0", "answer 1", "answer 2"]


def test_a_planted_symlinked_folder_is_never_written_through(tmp_path: Path) -> None:
    """A pull request can commit ``judge-cache/<2 hex>`` as a symlink (the address is a hash anyone can compute):
    answers are never read from or written through it; the link is replaced with a real folder."""
    root, outside = tmp_path / "cache", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    key = cache_key("m", {}, "p")
    (outside / f"{key}.json").write_text(json.dumps({"format": 2, "model": "m", "samples": {"0": "planted"}}),
                                         encoding="utf-8")
    (root / key[:2]).symlink_to(outside)
    cache = DiskCache(root)
    assert cache.get(key, 1) == [None]
    cache.put(key, {0: "real"}, model="m")
    assert sorted(p.name for p in outside.iterdir()) == [f"{key}.json"]  # nothing new there
    assert json.loads((outside / f"{key}.json").read_text(encoding="utf-8"))["samples"] == {"0": "planted"}
    assert not (root / key[:2]).is_symlink() and (root / key[:2] / f"{key}.json").is_file()
    assert DiskCache(root).get(key, 1) == ["real"]


@pytest.mark.parametrize("planted", ["symlink", "fifo", "huge"])
def test_a_planted_entry_that_is_not_a_small_regular_file_is_a_miss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, planted: str
) -> None:
    """An entry that is a symlink (to a file outside, or /dev/zero), a FIFO (restored from a cache archive; opening
    it would block the run) or larger than the cap is a miss, asked again, and never read to its end."""
    import evalbot.judges.cache as cache_module

    key = cache_key("m", {}, "p")
    (tmp_path / key[:2]).mkdir()
    entry = tmp_path / key[:2] / f"{key}.json"
    good = json.dumps({"format": 2, "model": "m", "samples": {"0": "planted"}})
    if planted == "symlink":
        (tmp_path / "elsewhere.json").write_text(good, encoding="utf-8")
        entry.symlink_to(tmp_path / "elsewhere.json")
    elif planted == "fifo":
        os.mkfifo(entry)
    else:
        monkeypatch.setattr(cache_module, "MAX_ENTRY_BYTES", 100)
        entry.write_text(good + " " * 200, encoding="utf-8")
    got: list[list[str | None]] = []
    reader = threading.Thread(target=lambda: got.append(DiskCache(tmp_path).get(key, 1)), daemon=True)
    reader.start()
    reader.join(5)
    if reader.is_alive():  # unblock the old code's open() of the FIFO before failing
        with open(entry, "w", encoding="utf-8"):
            pass
    assert got == [[None]]


def test_a_planted_file_where_a_folder_goes_is_replaced(tmp_path: Path) -> None:
    """``<cache>/<2 hex>`` committed as a regular file (the address is computable): a write replaced nothing and
    raised FileExistsError, failing the run; the file is a planted entry in evalbot's own folder and is replaced."""
    key = cache_key("m", {}, "p")
    (tmp_path / key[:2]).write_text("planted", encoding="utf-8")
    cache = DiskCache(tmp_path)
    assert cache.get(key, 1) == [None]
    cache.put(key, {0: "real"}, model="m")
    assert DiskCache(tmp_path).get(key, 1) == ["real"]
