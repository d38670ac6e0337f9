"""Keep secrets and signed URLs out of everything evalbot writes (comment, summary, annotations, report, cache, logs).

Pure text functions plus one process-wide set of secret values that the edges register (the Action's
github-token and judge-api-key, the judge key from the environment). ``scrub`` replaces every registered value
with ``***`` and drops the query string of every URL-like text (a signed storage URL's signature lives there),
with or without a scheme: urllib3 names the URL of a refused connection as ``/path?sig=...`` or ``host/path?...``.
"""

from __future__ import annotations

import re
import threading
from typing import Any, TextIO

MASK = "***"
MIN_SECRET_CHARS = 6
"""Shorter values are not treated as secrets (masking "true" or "1" everywhere would garble the text)."""
_URL_QUERY = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s?#\"'<>`]+)\?[^\s#\"'<>`)\]]*")
_PATH_QUERY = re.compile(
    r"([^\s?#\"'<>`]*/[^\s?#\"'<>`]*|\b[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+(?::\d+)?)\?[^\s#\"'<>`)\]]+"
)
"""URL-like text without a scheme: a word holding a ``/`` (``/path``, ``host/path``, ``host:443/path``) or a dotted
host name (``storage.example.net``), followed by ``?`` and a non-empty query.  A sentence ending in ``and/or?`` has no query and is left alone."""
_secrets: set[str] = set()
_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    """Treat ``value`` (and its surrounding-whitespace-stripped form) as a secret from now on."""
    for candidate in {value or "", (value or "").strip()}:
        if len(candidate) >= MIN_SECRET_CHARS:
            with _lock:
                _secrets.add(candidate)


def forget_secrets() -> None:
    """Drop every registered secret (tests)."""
    with _lock:
        _secrets.clear()


def holds_secret(text: str) -> bool:
    """Whether ``text`` contains a registered secret."""
    with _lock:
        return any(secret in text for secret in _secrets)


_TOKEN = re.compile(r"\S+")
_ANY_QUERY = re.compile(r"\?[^\s#\"'<>`)\]]+")
"""Any ``?`` followed by query-like text: the rule for tokens too long for the two URL patterns."""
PATTERN_TOKEN_LIMIT = 256
"""Longer tokens holding a ``?`` drop every ``?…`` query-like tail instead of running the URL patterns, whose
backtracking is quadratic in a token's dotted or alphanumeric runs (``x?a.a.a…`` of 100,000 characters took 143 s).
Dropping more than a URL's query from such a token only ever removes text, never leaves a signature behind."""


def _strip_token(match: re.Match[str]) -> str:
    token = match.group()
    if "?" not in token:
        return token
    if len(token) > PATTERN_TOKEN_LIMIT:
        return _ANY_QUERY.sub("?…", token)
    return _PATH_QUERY.sub(r"\1?…", _URL_QUERY.sub(r"\1?…", token))


def strip_url_queries(text: str) -> str:
    """Every URL in ``text``, with or without a scheme, without its query string (``?…`` kept as a hint that one
    was there).

    No match can span whitespace and every one holds a ``?``, so the patterns run only on the whitespace-separated
    tokens holding one: the same result, and a long token without a query (a 200,000-character judge answer in the
    cache) costs one linear scan instead of the path pattern's backtracking from each of its positions (minutes)."""
    return _TOKEN.sub(_strip_token, text) if "?" in text else text


def scrub(text: str, extra: tuple[str, ...] = ()) -> str:
    """``text`` with every registered secret (and the ``extra`` ones) masked and URL query strings dropped."""
    with _lock:
        secrets = sorted(_secrets | {s for s in extra if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return strip_url_queries(text)


def scrub_utf8(data: bytes) -> bytes:
    """:func:`scrub` of UTF-8 text given and returned as bytes: as it is when no secret is registered and it holds no
    ``?`` (the case of most lines of a large report), without decoding and encoding it."""
    if not _secrets and b"?" not in data:  # reading the set's size needs no lock: it is one atomic check
        return data
    return scrub(data.decode("utf-8")).encode("utf-8")


class ScrubbingWriter:
    """A text stream that scrubs everything written through it (``write`` calls are whole lines or JSON pieces, so
    a secret is never split across two of them by evalbot's own writers)."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(scrub(text))
        return len(text)

    def flush(self) -> None:
        self.inner.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
