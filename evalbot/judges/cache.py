"""Content-addressed on-disk cache of judge answers, one file per sample, and the replay (cache-only) mode.

The key is a SHA-256 of the model, the generation config (without transport settings), the full prompt and the
sample index, so a cache directory can be restored between CI runs (``actions/cache``) and shared by concurrent
writers: every entry is written to a temporary file and moved into place with ``os.replace``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
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

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> str | None:
        """The cached answer text, or None (a missing or unreadable entry is a miss)."""
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

    def _lock(self, key: str) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._locks, self._loop = {}, loop
        return self._locks.setdefault(key, asyncio.Lock())

    def _store(self, entries: list[tuple[str, str]], model: str) -> None:
        for key, text in entries:
            self.cache.put(key, text, model=model)

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """Answer from the cache, filling the gaps from ``inner``."""
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
            # File writes happen in a worker thread so the event loop keeps other judge calls moving.
            # An empty answer (blocked or truncated) is not a verdict: it is not cached, so a later run asks again.
            answered = [(keys[i], answer) for i in missing if (answer := texts[i])]
            await asyncio.to_thread(self._store, answered, request.model)
        usage = fresh.usage + Usage(cached_samples=cached)
        return JudgeReply(tuple(t or "" for t in texts), usage, cached)
