"""Content-addressed on-disk cache of judge answers, one file per sample, and the replay (cache-only) mode.

The key is a SHA-256 of the model, the generation config (without transport settings), the full prompt and the
sample index, so a cache directory can be restored between CI runs (``actions/cache``) and shared by concurrent
writers: every entry is written to a temporary file and moved into place with ``os.replace``.  During a run, new
answers are written by one background thread, off the event loop that sends judge requests.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import tempfile
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from evalbot.judges.base import Judge, JudgeError, JudgeReply, JudgeRequest, ReplayMiss, Usage

CACHE_FORMAT = 1
_TRANSPORT_KEYS = frozenset({"http_options"})
"""Config keys that change how a request travels, not what the judge answers."""


def cache_key(model: str, config: Mapping[str, Any], prompt: str, sample: int) -> str:
    """The content address of one sample's answer."""
    material = {
        "format": CACHE_FORMAT,
        "model": model,
        "config": {k: v for k, v in config.items() if k not in _TRANSPORT_KEYS},
        "prompt": prompt,
        "sample": sample,
    }
    canonical = json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class DiskCache:
    """Judge answers stored as ``<dir>/<2 hex>/<sha256>.json``."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)
        self.hits = 0
        self.misses = 0
        self.writes = 0
        self._made: set[Path] = set()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._queue: deque[tuple[str, str, str]] = deque()
        self._unwritten: dict[str, str] = {}
        self._writing = False
        self._failures: list[OSError] = []

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> str | None:
        """The cached answer text, or None (a missing or unreadable entry is a miss)."""
        queued = self._unwritten.get(key)
        if queued is not None:
            self.hits += 1
            return queued
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.misses += 1
            return None
        text = data.get("text") if isinstance(data, dict) else None
        if not isinstance(text, str):
            self.misses += 1
            return None
        self.hits += 1
        return text

    def put(self, key: str, text: str, *, model: str) -> None:
        """Store an answer atomically (readers never see a partial file; the last writer wins)."""
        path = self._path(key)
        if path.parent not in self._made:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._made.add(path.parent)
        payload = json.dumps({"format": CACHE_FORMAT, "model": model, "text": text}, ensure_ascii=False)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(payload)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.writes += 1

    def put_later(self, entries: Iterable[tuple[str, str]], *, model: str) -> None:
        """Queue entries for the background writer; ``get`` serves them at once, ``flush`` waits until written.

        The writer is a non-daemon thread that exits when the queue is empty, so the interpreter finishes the
        queue before it exits even if nobody flushes."""
        with self._lock:
            for key, text in entries:
                self._unwritten[key] = text
                self._queue.append((key, text, model))
            if self._queue and not self._writing:
                self._writing = True
                threading.Thread(target=self._drain, name="evalbot-judge-cache", daemon=False).start()

    @property
    def writing(self) -> bool:
        """True while queued entries are not all on disk yet."""
        return self._writing

    def _drain(self) -> None:
        while True:
            with self._lock:
                if not self._queue:
                    self._writing = False
                    self._idle.notify_all()
                    return
                key, text, model = self._queue.popleft()
            try:
                self.put(key, text, model=model)
            except OSError as exc:
                with self._lock:
                    self._failures.append(exc)
            with self._lock:
                if self._unwritten.get(key) is text:
                    del self._unwritten[key]

    def flush(self) -> None:
        """Block until every queued entry is written; re-raise the first write error since the last flush."""
        with self._idle:
            while self._writing:
                self._idle.wait()
            failures, self._failures = self._failures, []
        if failures:
            raise failures[0]


class CachingJudge:
    """Serves samples from ``cache``; asks ``inner`` only for the missing ones (never, in replay mode).

    Identical requests running concurrently are answered by a single call to ``inner``.
    """

    def __init__(self, inner: Judge | None, cache: DiskCache, *, replay: bool = False) -> None:
        if inner is None and not replay:
            raise ValueError("a cache without a judge behind it only works in replay mode")
        self.inner = inner
        self.cache = cache
        self.replay = replay
        self._locks: dict[str, asyncio.Lock] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._active = 0

    def _lock(self, key: str) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._locks, self._loop = {}, loop
        return self._locks.setdefault(key, asyncio.Lock())

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """Answer from the cache, filling the gaps from ``inner``.

        New answers are queued for the cache's writer thread; when the last call in progress finishes it waits for
        the queue to be written (so a run's answers are on disk when its judging is done) and raises a write error
        if there was one."""
        self._active += 1
        try:
            return await self._generate(request)
        finally:
            self._active -= 1
            if self._active == 0 and self.cache.writing:
                await asyncio.to_thread(self.cache.flush)

    async def _generate(self, request: JudgeRequest) -> JudgeReply:
        keys = [cache_key(request.model, request.config, request.prompt, i) for i in range(request.num_samples)]
        async with self._lock(keys[0] if keys else ""):
            texts: list[str | None] = [self.cache.get(k) for k in keys]
            missing = [i for i, t in enumerate(texts) if t is None]
            cached = len(keys) - len(missing)
            if not missing:
                return JudgeReply(tuple(t or "" for t in texts), Usage(cached_samples=cached), cached)
            if self.replay or self.inner is None:
                raise ReplayMiss(
                    f"replay mode: {len(missing)} of {len(keys)} judge answers are not in the cache "
                    f"{self.cache.directory} (run once without --judge-replay to record them)"
                )
            fresh = await self.inner.generate(request.with_samples(len(missing)))
            if len(fresh.texts) < len(missing):
                raise JudgeError(f"the judge returned {len(fresh.texts)} answers, {len(missing)} were needed")
            for index, text in zip(missing, fresh.texts, strict=False):
                texts[index] = text
            # An empty answer (blocked or truncated) is not a verdict: it is not cached, so a later run asks again.
            self.cache.put_later(((keys[i], answer) for i in missing if (answer := texts[i])), model=request.model)
        usage = fresh.usage + Usage(cached_samples=cached)
        return JudgeReply(tuple(t or "" for t in texts), usage, cached)
