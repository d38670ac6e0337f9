"""Error types that say where the problem is, the process exit codes, and the one retry policy of transient
failures (the judge's and GitHub's)."""

from __future__ import annotations

import difflib
import json
import random
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from evalbot import __version__

EXIT_OK = 0
"""Every case passed (or the gate let the run through)."""
EXIT_FAILED = 1
"""Some case failed, or the comparison gate found a regression."""
EXIT_INVALID_INPUT = 2
"""Invalid command line, configuration or input files; nothing could be scored."""
EXIT_UNAVAILABLE = 3
"""GitHub or the judge were unavailable after retries in a way that prevents a verdict."""
EXIT_INTERNAL = 70
"""A bug in evalbot."""


REPOSITORY = "https://github.com/evalbot/evalbot"
"""Where evalbot is installed from when nothing says otherwise (its release tags: ``v<major>`` follows a major)."""


def install_command(extra: str, *, direct_url: Mapping[str, Any] | None, installed: bool, version: str,
                    python: str = "python", source_root: Path | None = None) -> str:
    """The command that adds the optional extra ``extra`` to this evalbot, the way this evalbot was installed.

    ``direct_url`` is the installation's ``direct_url.json`` (PEP 610; None when it has none: installed from an
    index); ``installed`` False means evalbot runs from a source tree without being installed, ``source_root`` being
    that tree when it holds a ``pyproject.toml``. A clone installed in place gets ``pip install -e "CLONE[extra]"``,
    a git install the same repository and revision, an archive the same archive, an index install the same version;
    anything else the repository's release tag for this major version."""
    pip = f"{python} -m pip install"
    info = dict(direct_url or {})
    url = str(info.get("url", ""))
    if installed and url.startswith("file://") and isinstance(info.get("dir_info"), dict):
        where = unquote(urlparse(url).path)
        editable = "-e " if info["dir_info"].get("editable") else ""
        return f'{pip} {editable}"{where}[{extra}]"'
    vcs = info.get("vcs_info")
    if installed and isinstance(vcs, dict) and vcs.get("vcs") == "git" and url:
        revision = vcs.get("requested_revision") or vcs.get("commit_id")
        return f'{pip} "evalbot[{extra}] @ git+{url}{"@" + str(revision) if revision else ""}"'
    if installed and isinstance(info.get("archive_info"), dict) and url:
        return f'{pip} "evalbot[{extra}] @ {url}"'
    if installed and direct_url is None:
        return f'{pip} "evalbot[{extra}]=={version}"'
    if not installed and source_root is not None:
        return f'{pip} -e "{source_root}[{extra}]"'
    return f'{pip} "evalbot[{extra}] @ git+{REPOSITORY}@v{version.split(".")[0]}"'


def install_hint(extra: str, search_path: list[str] | None = None) -> str:
    """:func:`install_command` for the evalbot running here (``search_path``: where to look for its installation's
    metadata, default ``sys.path``), with this interpreter: what an error about a missing extra tells the user.

    Only an installation counts: metadata an installer wrote (an ``INSTALLER`` or ``direct_url.json`` file). The
    ``evalbot.egg-info`` folder a build leaves in a clone is not one, though it comes first on ``sys.path`` when
    evalbot runs from the clone's top folder."""
    from importlib import metadata  # lazily: only an error about a missing extra needs the installation's metadata

    version, direct_url, installed = __version__, None, False
    for dist in metadata.distributions(name="evalbot", path=search_path or sys.path):
        text = dist.read_text("direct_url.json")
        if text is None and dist.read_text("INSTALLER") is None:
            continue  # build metadata (a clone's evalbot.egg-info), not an installation
        try:
            loaded = json.loads(text) if text else None
        except ValueError:
            loaded = None
        version, installed = dist.version or version, True
        direct_url = loaded if isinstance(loaded, dict) else None
        break
    root = Path(__file__).resolve().parents[1]
    return install_command(extra, direct_url=direct_url, installed=installed, version=version,
                           python=sys.executable or "python",
                           source_root=root if (root / "pyproject.toml").is_file() else None)


def json_pointer(loc: Sequence[str | int]) -> str:
    """RFC 6901 pointer for a pydantic ``loc`` tuple (``~`` and ``/`` escaped)."""
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in loc]
    return "/" + "/".join(parts) if parts else ""


def printable(text: str) -> str:
    """``text`` with lone surrogates (a JSON ``"\\ud800"`` escape, a file name's non-UTF-8 byte) written as
    backslash escapes, so that it can be printed, hashed and posted."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def did_you_mean(key: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` when a known key is close to ``key``, else ""."""
    close = difflib.get_close_matches(key.lower(), sorted(known), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_key_notice(where: str, key: str, known: Iterable[str], effect: str) -> str:
    """A notice about an unknown key: where it is, a suggestion when a known key is close, and what happens."""
    return printable(f"{where}: unknown key {key!r}{did_you_mean(key, known)}; {effect}")


class EvalbotError(Exception):
    """Base class of every error evalbot reports to the user."""


class InputError(EvalbotError):
    """A file could not be used: names the file, the JSON pointer and what was expected."""

    def __init__(self, path: Path | str, pointer: str, message: str) -> None:
        self.path = printable(str(path))
        self.pointer = printable(pointer)
        self.message = printable(message)
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = f"{self.path}:{self.pointer}" if self.pointer else self.path
        return f"{where}: {self.message}"


class ConfigError(EvalbotError):
    """A criterion or option in the evaluation config is invalid."""


@dataclass(frozen=True)
class RetryPolicy:
    """How evalbot retries a service's transient failures: the judge's (408/429/5xx, timeouts; ``judges/retry``)
    and GitHub's (5xx, rate limits; ``forge/pygithub``). One policy, one set of defaults, for both.

    Retry ``n`` (from 1) waits up to ``backoff(n)`` = ``base_delay * 2**(n-1)``, capped at ``max_delay``: the judge
    waits a random time below it ("full jitter", ``delay``) but never less than the service's ``Retry-After``
    (itself capped at ``max_retry_after``); GitHub's client waits ``backoff(n)`` itself, or the rate limit's reset,
    and gives up rather than wait longer than ``max_wait``.
    """

    attempts: int = 6
    """Tries in all, the first included (``retries`` = ``attempts - 1``)."""
    timeout_attempts: int = 2
    """Judge: tries of a call that keeps timing out, so a judge that accepts connections and never answers costs
    one timeout and one retry per call, not ``attempts`` of them."""
    base_delay: float = 1.0
    """Seconds before the first retry; doubled for each next one."""
    max_delay: float = 30.0
    """Cap of the doubled delay."""
    max_retry_after: float = 120.0
    """Judge: the longest ``Retry-After`` honoured (a longer one is cut to this)."""
    rate_limit_wait: float = 60.0
    """GitHub: wait after a secondary rate limit answered without ``Retry-After`` (GitHub asks for a minute)."""
    max_wait: float = 300.0
    """GitHub: give up rather than wait longer than this for a rate limit to reset."""

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.timeout_attempts < 1:
            raise ValueError("a retry policy needs at least one attempt")

    @property
    def retries(self) -> int:
        """Retries after the first try."""
        return self.attempts - 1

    def backoff(self, attempt: int) -> float:
        """The longest wait after failed try number ``attempt`` (1-based): ``base_delay * 2**(attempt-1)``,
        capped at ``max_delay``."""
        return float(min(self.max_delay, self.base_delay * (2 ** (attempt - 1))))

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds a judge call waits after failed try ``attempt``: uniform in ``[0, backoff(attempt)]``, but no
        less than ``retry_after`` (capped at ``max_retry_after``)."""
        wait = rng.uniform(0.0, self.backoff(attempt))
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_retry_after))
        return wait
