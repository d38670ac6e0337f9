"""Content-addressed on-disk cache of judge answers, one file per request, and the replay (cache-only) mode.

A file's address is a SHA-256 of the model, the generation config (without transport settings) and the full prompt;
inside, each answer is kept under its sample index, so a run asking for more samples reuses the ones it has.  A
cache directory can be restored between CI runs (``actions/cache``) and shared by concurrent writers: every file is
written to a temporary file and moved into place with ``os.replace`` (readers never see a partial file; two writers
of the same request at once may drop each other's extra samples, which are then asked again).  During a run, new
answers are written by one background thread, off the event loop that sends judge requests.

Entries are signed: with a key (``EVALBOT_JUDGE_CACHE_KEY``, the Action's ``judge-cache-key``), each answer is stored
with an HMAC-SHA256 of the request's address, its sample index and its text, and only answers whose HMAC verifies
with that key are replayed. The address is computable by anyone (it is a hash of the prompt), the HMAC is not: a
pull request that commits or plants cache files cannot forge a verdict. Answers that fail the check are asked from
the judge again and counted (``DiskCache.ignored``). Without a key, unsigned answers are replayed only where the run
says so (``CacheTrust.unsigned``: the command line outside pull-request events, e.g. the bundled example); the
Action never replays them.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import itertools
import json
import os
import stat
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from evalbot.judges.base import Judge, JudgeError, JudgeReply, JudgeRequest, ReplayMiss, Usage
from evalbot.judges.writer import WriteQueue
from evalbot.redact import scrub

CACHE_FORMAT = 2
"""1: one file per sample (evalbot 0.x before the judge benchmark work); 2: one file per request."""
MAX_ENTRY_BYTES = 16 * 1024 * 1024
"""A cache file larger than this is a miss, not read (64 samples of a judge answer are far below it)."""
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
"""A cache file is opened without following a symlink and without blocking on a FIFO (a pull request can commit or
plant files in the cache folder; see :meth:`DiskCache._read`)."""


def cache_key(model: str, config: Mapping[str, Any], prompt: str) -> str:
    """The content address of a request's answers."""
    material = {
        "format": CACHE_FORMAT,
        "model": model,
        "config": dict(config),  # every field that is sent (a config holds generation parameters only)
        "prompt": prompt,
    }
    canonical = json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


KEY_ENV = "EVALBOT_JUDGE_CACHE_KEY"
"""The secret that signs judge cache entries (the Action's ``judge-cache-key`` input sets it)."""
UNSIGNED_EVENTS_REFUSED = frozenset({"pull_request", "pull_request_target", "pull_request_review",
                                     "pull_request_review_comment", "issue_comment", "merge_group", "workflow_run"})
"""GitHub events whose runs gate, or run on, a pull request's tree: the command line never replays unsigned
answers there either."""


@dataclass(frozen=True)
class CacheTrust:
    """Which cached answers a run replays: those signed with ``key``, and unsigned ones only when ``unsigned``."""

    key: bytes | None = None
    unsigned: bool = False

    @classmethod
    def for_run(cls, env: Mapping[str, str], *, action: bool = False) -> CacheTrust:
        """The run's trust from ``env``: signed answers with EVALBOT_JUDGE_CACHE_KEY; without it, unsigned answers on
        the command line only, and never on a pull-request event (``UNSIGNED_EVENTS_REFUSED``) nor in the Action."""
        key = env.get(KEY_ENV) or None
        refused = action or (env.get("GITHUB_ACTIONS") == "true"
                             and env.get("GITHUB_EVENT_NAME") in UNSIGNED_EVENTS_REFUSED)
        return cls(key.encode("utf-8") if key else None, unsigned=key is None and not refused)

    def sign(self, address: str, index: int, text: str) -> str | None:
        """The HMAC of one stored answer, None without a key."""
        if self.key is None:
            return None
        message = f"{address}\x00{index}\x00{text}".encode()
        return hmac.new(self.key, message, hashlib.sha256).hexdigest()

    def accepts(self, address: str, index: int, text: str, signature: str | None) -> bool:
        """Whether a stored answer may be replayed: its HMAC verifies with our key, or it is unsigned-trusted."""
        if self.key is None:
            return self.unsigned
        expected = self.sign(address, index, text)
        return isinstance(signature, str) and expected is not None and hmac.compare_digest(expected, signature)


Stored = dict[int, tuple[str, str | None]]
"""A cache file's answers by sample index: the text and its signature (None when unsigned)."""


def _samples_of(data: Any) -> Stored:
    """The answers of a cache file's content; anything malformed is left out (a miss, asked again)."""
    if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT or not isinstance(data.get("samples"), dict):
        return {}
    raw_signatures = data.get("signatures")
    signatures = raw_signatures if isinstance(raw_signatures, dict) else {}
    out: Stored = {}
    for i, t in data["samples"].items():
        if isinstance(i, str) and i.isdigit() and len(i) < 6 and isinstance(t, str):
            mac = signatures.get(i)
            out[int(i)] = (t, mac if isinstance(mac, str) else None)
    return out


class DiskCache:
    """Judge answers stored as ``<dir>/<2 hex>/<sha256>.json``: ``{"format", "model", "samples": {index: text}}``,
    with ``"signatures": {index: hmac}`` when written with a key (see CacheTrust)."""

    def __init__(self, directory: Path | str, trust: CacheTrust | None = None) -> None:
        self.directory = Path(directory)
        self.trust = trust if trust is not None else CacheTrust(unsigned=True)
        self.hits = 0
        self.misses = 0
        self.writes = 0
        self.ignored = 0
        """Stored answers not replayed because their signature did not verify (asked from the judge again)."""
        self._root = os.fspath(self.directory)
        self._made: set[str] = set()
        self._serial = itertools.count()
        self._count_lock = threading.Lock()  # the writer thread and a flushing thread may both write
        self._unwritten: dict[str, dict[int, str]] = {}
        """Answers queued for the writer and not on disk yet, per request; guarded by ``_queue_lock``."""
        self._queue_lock = threading.Lock()
        self._writer = WriteQueue()
        self._stripes = [threading.Lock() for _ in range(16)]

    def _real_folder(self, parent: str) -> bool:
        """Whether ``parent`` (a ``<2 hex>`` folder) is a directory, not a symlink to one elsewhere."""
        if parent in self._made:
            return True
        try:
            real = stat.S_ISDIR(os.lstat(parent).st_mode)
        except OSError:
            return False
        if real:
            self._made.add(parent)
        return real

    def _read(self, key: str) -> Stored:
        """The answers stored for ``key``; a miss unless the file is a regular file of at most ``MAX_ENTRY_BYTES``
        in a real folder: a planted symlink (out of the workspace, to /dev/zero), FIFO or huge file is never read."""
        parent = os.path.join(self._root, key[:2])
        if not self._real_folder(parent):
            return {}
        try:
            fd = os.open(os.path.join(parent, f"{key}.json"), _READ_FLAGS)
        except OSError:
            return {}
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ENTRY_BYTES:
                return {}
            chunks, left = [], info.st_size + 1
            while left > 0 and (chunk := os.read(fd, left)):
                chunks.append(chunk)
                left -= len(chunk)
            data = b"".join(chunks)
            if len(data) > MAX_ENTRY_BYTES:
                return {}
            return _samples_of(json.loads(data.decode("utf-8")))
        except (OSError, ValueError, RecursionError):
            return {}
        finally:
            os.close(fd)

    def get(self, key: str, samples: int, first: int = 0) -> list[str | None]:
        """The cached answers of samples ``first .. first+samples-1`` (None where one is missing, unreadable or not
        trusted: see CacheTrust; those are counted in ``ignored``)."""
        # Queued answers first: the writer thread drops them from the queue only after their file is in place, so
        # an answer is either in this snapshot or already on disk (reading the file first could miss it in between).
        # Queued answers are this run's own: trusted without a signature.
        with self._queue_lock:
            queued = dict(self._unwritten.get(key, {}))
        stored = self._read(key)
        texts: list[str | None] = []
        for i in range(first, first + samples):
            if i in queued:
                texts.append(queued[i])
            elif i in stored:
                text, signature = stored[i]
                trusted = self.trust.accepts(key, i, text, signature)
                self.ignored += not trusted
                texts.append(text if trusted else None)
            else:
                texts.append(None)
        hits = sum(t is not None for t in texts)
        self.hits += hits
        self.misses += samples - hits
        return texts

    def put(self, key: str, answers: Mapping[int, str], *, model: str) -> None:
        """Add answers to the request's file atomically (readers never see a partial file).

        Within this process, writes of one request are serialised (the writer thread and a flushing caller may
        both be writing), so adding samples never drops the ones another write is adding."""
        with self._stripes[int(key[:2], 16) % len(self._stripes)]:
            self._merge_and_write(key, answers, model)

    def _merge_and_write(self, key: str, answers: Mapping[int, str], model: str) -> None:
        parent = os.path.join(self._root, key[:2])
        if parent not in self._made:
            with contextlib.suppress(FileNotFoundError):
                if not stat.S_ISDIR(os.lstat(parent).st_mode):  # lstat: a link to a folder is not one
                    os.unlink(parent)  # a planted link or file is replaced with a real folder, never written through
            os.makedirs(parent, exist_ok=True)
            self._made.add(parent)
        merged = self._read(key)
        merged.update({i: (scrub(text), None) for i, text in answers.items()})  # an answer may echo a key
        samples: dict[str, str] = {}
        signatures: dict[str, str] = {}
        for i in sorted(merged):
            text, signature = merged[i]
            samples[str(i)] = text
            if i in answers:  # ours: signed now; a stored answer keeps the signature it had (checked when read)
                signature = self.trust.sign(key, i, text)
            if signature is not None:
                signatures[str(i)] = signature
        content: dict[str, Any] = {"format": CACHE_FORMAT, "model": model, "samples": samples}
        if signatures:
            content["signatures"] = signatures
        payload = json.dumps(content, ensure_ascii=False)
        data = payload.encode("utf-8")
        # A temporary name unique to this process and thread (O_EXCL guards against leftovers of a crashed run),
        # written with plain os calls: fewer system calls than mkstemp + a text wrapper.
        while True:
            tmp = os.path.join(parent, f".tmp-{os.getpid()}-{threading.get_ident()}-{next(self._serial)}.json")
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
            except FileExistsError:
                continue
            break
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.replace(tmp, os.path.join(parent, f"{key}.json"))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        with self._count_lock:
            self.writes += 1

    def put_later(self, key: str, answers: Mapping[int, str], *, model: str) -> None:
        """Queue answers for the background writer (see evalbot.judges.writer); ``get`` serves them at once,
        ``flush`` waits until they are on disk."""
        with self._queue_lock:  # the writer thread may be emptying this request's entry right now
            self._unwritten.setdefault(key, {}).update(answers)
        self._writer.submit([partial(self._write, key, dict(answers), model)])

    def _write(self, key: str, answers: dict[int, str], model: str) -> None:
        try:
            self.put(key, answers, model=model)
        finally:
            with self._queue_lock:
                queued = self._unwritten.get(key)
                if queued is not None:
                    for index, text in answers.items():
                        if queued.get(index) is text:
                            del queued[index]
                    if not queued:
                        self._unwritten.pop(key, None)

    @property
    def writing(self) -> bool:
        """True while queued entries are not all on disk yet."""
        return self._writer.busy

    def flush(self) -> None:
        """Block until every queued entry is written; re-raise the first write error since the last flush."""
        self._writer.wait()


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
        key = cache_key(request.model, request.config, request.prompt)
        async with self._lock(key):
            first = request.first_sample
            texts = self.cache.get(key, request.num_samples, first)
            missing = [i for i, t in enumerate(texts) if t is None]
            cached = len(texts) - len(missing)
            if not missing:
                return JudgeReply(tuple(t or "" for t in texts), Usage(cached_samples=cached), cached)
            if self.replay or self.inner is None:
                raise ReplayMiss(
                    f"replay mode: {len(missing)} of {len(texts)} judge answers are not in the cache "
                    f"{self.cache.directory} or not signed with this run's key (run once without --judge-replay "
                    "to record them)"
                )
            fresh = await self.inner.generate(request.with_samples(len(missing)))
            if len(fresh.texts) < len(missing):
                raise JudgeError(f"the judge returned {len(fresh.texts)} answers, {len(missing)} were needed")
            for index, text in zip(missing, fresh.texts, strict=False):
                texts[index] = text
            # An empty answer (blocked or truncated) is not a verdict: it is not cached, so a later run asks again.
            answers = {first + i: answer for i in missing if (answer := texts[i])}
            if answers:
                self.cache.put_later(key, answers, model=request.model)
        usage = fresh.usage + Usage(cached_samples=cached)
        return JudgeReply(tuple(t or "" for t in texts), usage, cached, fresh.served)
