"""PyGithubForge: the Forge protocol over GitHub's REST API, the only module that imports PyGithub."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any, Literal, Self, TypeVar
from urllib.parse import quote

import requests
from github import Auth, Github, GithubException, GithubRetry, UnknownObjectException
from github.Artifact import Artifact
from github.ContentFile import ContentFile
from github.Issue import Issue
from github.IssueComment import IssueComment
from github.PaginatedList import PaginatedList
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from evalbot.errors import RetryPolicy
from evalbot.forge.archive import join_capped, unzip_in_memory
from evalbot.forge.base import (
    COMMENT_MAX_CHARS,
    MAX_PR_FILES,
    CommentRef,
    ForgeConflict,
    ForgeError,
    ForgeForbidden,
    ForgeUnavailable,
    PullRef,
    StatusState,
    status_description,
    with_marker,
)
from evalbot.redact import scrub

log = logging.getLogger(__name__)
# Importing PyGithub sets its logger to INFO with its own stderr handler; its INFO lines (every expected 403 on
# GET /user, every retry) are noise in a job log, so only its warnings stay.
logging.getLogger("github").setLevel(logging.WARNING)

ACTIONS_BOT = "github-actions[bot]"
"""Author of comments made with the workflow's GITHUB_TOKEN (which may not call GET /user)."""
INSTALLATION_TOKEN_PREFIX = "ghs_"
"""GitHub's prefix of installation access tokens, such as a workflow's GITHUB_TOKEN: GET /user answers them 403."""
RAW = "application/vnd.github.raw+json"
"""Media type that makes the contents API return a file's bytes; needed for files over 1 MB."""
MAX_PR_SCAN = 300
MAX_ARTIFACTS = 256
"""Most artifacts an artifact-name pattern may match (one per shard of a matrix)."""
"""Open PRs examined when looking for a head sha without an owner:branch hint."""

T = TypeVar("T")
Action = Literal["created", "edited", "unchanged"]
DEFAULT_RETRY = RetryPolicy()


def _is_rate_limit(exc: GithubException) -> bool:
    """True for 403/429 answers that are rate limits rather than missing permissions."""
    message = str(exc.data.get("message", "")) if isinstance(exc.data, dict) else str(exc.data)
    headers = exc.headers or {}
    return exc.status == 429 or (
        exc.status == 403 and ("rate limit" in message.lower() or "retry-after" in {h.lower() for h in headers})
    )


def _retry_after(exc: GithubException) -> float | None:
    """The server's Retry-After hint in seconds, if any."""
    for key, value in (exc.headers or {}).items():
        if key.lower() == "retry-after" and str(value).strip().isdigit():
            return float(value)
    return None


def _translate(operation: str, exc: Exception) -> ForgeError:
    """Map PyGithub/requests failures onto evalbot's typed forge errors."""
    if isinstance(exc, GithubException):
        message = exc.data.get("message", str(exc)) if isinstance(exc.data, dict) else str(exc.data)
        if exc.status in (401, 403) and not _is_rate_limit(exc):
            return ForgeForbidden(operation, f"token not allowed: {message}", status=exc.status)
        if exc.status >= 500 or _is_rate_limit(exc):
            return ForgeUnavailable(operation, f"GitHub kept failing: {message}", status=exc.status)
        if exc.status == 409:
            return ForgeConflict(operation, str(message), status=409)
        return ForgeError(operation, str(message), status=exc.status)
    if isinstance(exc, requests.HTTPError) and exc.response is not None:
        return ForgeUnavailable(operation, scrub(str(exc)), status=exc.response.status_code)
    if isinstance(exc, requests.exceptions.RetryError):
        # urllib3 gave up: "Max retries exceeded with url: ... (Caused by ResponseError('too many 503 error
        # responses'))"; say that plainly (the status is in the cause) and keep the URL out of it
        cause = re.search(r"too many (\d{3}) error responses", str(exc))
        status = int(cause.group(1)) if cause else None
        return ForgeUnavailable(operation, "GitHub kept failing after every retry", status=status)
    return ForgeUnavailable(operation, scrub(f"{type(exc).__name__}: {exc}"))


class RequestCounter:
    """HTTP requests sent to the API: one per PyGithub request (counted when the token is added to its headers)
    plus one per retry urllib3 makes of it."""

    def __init__(self) -> None:
        self.requests = 0
        self._lock = threading.Lock()

    def add(self) -> None:
        with self._lock:
            self.requests += 1


class _CountingToken(Auth.Token):
    """The token, counting each request it authenticates."""

    def __init__(self, token: str, counter: RequestCounter) -> None:
        super().__init__(token)
        self.counter = counter

    def authentication(self, headers: dict[str, Any]) -> None:
        self.counter.add()
        super().authentication(headers)


class _CountingRetry(GithubRetry):
    """PyGithub's retry policy, counting each retry it grants (each is one more request)."""

    def __init__(self, *, counter: RequestCounter | None = None, **kwargs: Any) -> None:
        self.counter = counter if counter is not None else RequestCounter()
        super().__init__(**kwargs)

    def new(self, **kw: Any) -> Self:
        kw["counter"] = self.counter
        return super().new(**kw)

    def increment(self, *args: Any, **kwargs: Any) -> Retry:  # type: ignore[override]  # as GithubRetry does
        retry = super().increment(*args, **kwargs)
        self.counter.add()
        return retry


class PyGithubForge:
    """Talks to github.com or a GitHub Enterprise ``api_url`` for one repository ("owner/name")."""

    def __init__(
        self,
        *,
        token: str,
        repository: str,
        api_url: str = "https://api.github.com",
        bot_login: str | None = None,
        retry: RetryPolicy = DEFAULT_RETRY,
        timeout_s: float = 30.0,
        seconds_between_writes: float | None = 1.0,
        per_page: int = 100,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self._policy = retry
        self._timeout_s = timeout_s
        self._sleep = sleep if sleep is not None else time.sleep  # looked up now, as urllib3 looks it up per wait
        self._bot_login = bot_login
        self._installation_token = token.startswith(INSTALLATION_TOKEN_PREFIX)
        self.counter = RequestCounter()
        # POST is left out on purpose: a lost POST response would duplicate the comment, so
        # upsert_comment retries it itself after re-listing. PATCH/PUT/DELETE are safe to repeat.
        urllib3_retry = _CountingRetry(
            counter=self.counter,
            total=retry.retries,
            backoff_factor=retry.base_delay,
            backoff_max=retry.max_delay,
            secondary_rate_wait=retry.rate_limit_wait,
            max_rate_limit_wait=retry.max_wait,
            allowed_methods=Retry.DEFAULT_ALLOWED_METHODS | {"GET", "PATCH"},
        )
        self._gh = Github(
            auth=_CountingToken(token, self.counter),
            base_url=api_url.rstrip("/"),
            per_page=per_page,
            timeout=int(timeout_s),
            retry=urllib3_retry,
            seconds_between_requests=None,
            seconds_between_writes=seconds_between_writes,
            lazy=True,
        )
        self._repo = self._gh.get_repo(repository)

    # -- helpers -------------------------------------------------------------------------------

    def _call(self, operation: str, fn: Callable[[], T]) -> T:
        """Run one PyGithub call, translating its failures."""
        try:
            return fn()
        except ForgeError:
            raise
        except (GithubException, requests.RequestException) as exc:
            raise _translate(operation, exc) from exc

    @property
    def api_requests(self) -> int:
        """HTTP requests sent to the API so far, retries included (not the artifact storage download)."""
        return self.counter.requests

    def bot_login(self) -> str:
        """Login whose comments we own. An installation token (GITHUB_TOKEN, a GitHub App's) comments as the
        Actions bot and may not call GET /user, so it is not asked; other tokens (a PAT) ask GET /user once."""
        if self._bot_login is None and self._installation_token:
            self._bot_login = ACTIONS_BOT
        if self._bot_login is None:
            try:
                self._bot_login = self._gh.get_user().login
            except GithubException as exc:
                if exc.status not in (401, 403):
                    raise _translate("identify the token's user", exc) from exc
                self._bot_login = ACTIONS_BOT
        return self._bot_login

    def _file(self, operation: str, path: str, ref: str) -> ContentFile | None:
        """The contents API's answer for file ``path`` at ``ref``, None when absent; ForgeError when it is no file."""
        found = self._contents(operation, path, ref)
        if found is None:
            return None
        if not isinstance(found, ContentFile) or found.type != "file":
            raise ForgeError(operation, "not a file (a directory, symlink or submodule); point it at a file")
        return found

    def _get_file(self, path: str, ref: str) -> tuple[str, str] | None:
        """(text, blob sha) of ``path`` at ``ref``; the raw media type for files the JSON omits."""
        operation = f"read {path} at {ref}"
        found = self._file(operation, path, ref)
        if found is None:
            return None
        if found.encoding == "base64":
            try:
                return found.decoded_content.decode("utf-8"), found.sha
            except UnicodeDecodeError as exc:
                raise ForgeError(operation, f"not UTF-8 text (byte {exc.start} is not valid UTF-8); save it as "
                                            "UTF-8") from None
        # Files of 1-100 MB come back with encoding "none" and empty content: ask for the bytes.
        status, _, text = self._call(
            operation,
            lambda: self._gh.requester.requestJson(
                "GET", f"{self._repo.url}/contents/{quote(path)}", parameters={"ref": ref}, headers={"Accept": RAW}
            ),
        )
        if status != 200:
            raise ForgeError(operation, "raw download failed", status=status)
        return text, found.sha

    def _contents(self, operation: str, path: str, ref: str) -> ContentFile | list[ContentFile] | None:
        """The contents API's answer for ``path`` at ``ref`` (a file or a directory listing), None when absent."""
        try:
            return self._repo.get_contents(path, ref=ref)
        except UnknownObjectException:
            return None
        except (GithubException, requests.RequestException) as exc:
            raise _translate(operation, exc) from exc

    def _marked(self, number: int, marker: str) -> list[IssueComment]:
        """Comments on ``number`` carrying ``marker`` and written by us, oldest first, all pages."""
        comments = self._call(f"list comments on #{number}", lambda: list(self._issue(number).get_comments()))
        carrying = [c for c in comments if marker in (c.body or "") and c.user is not None]
        if not carrying:  # nothing to attribute: who we are does not matter yet
            return []
        me = self.bot_login()
        return sorted((c for c in carrying if c.user.login == me), key=lambda c: c.id)

    def _issue(self, number: int) -> Issue:
        """The PR as an issue (PR comments live there), without fetching it."""
        return self._repo.get_issue(number)

    # -- Forge protocol ------------------------------------------------------------------------

    def read_file(self, path: str, *, ref: str) -> str | None:
        """Text of ``path`` at ``ref`` through the contents API, or None if absent there."""
        found = self._get_file(path, ref)
        return None if found is None else found[0]

    def file_sha(self, path: str, *, ref: str) -> str | None:
        """Git's blob id of ``path`` at ``ref`` (the contents API's ``sha``), None when absent there."""
        found = self._file(f"read {path} at {ref}", path, ref)
        return None if found is None else str(found.sha)

    def list_directory(self, path: str, *, ref: str) -> list[tuple[str, str]] | None:
        """Entries of directory ``path`` at ``ref`` through the contents API (GitHub lists up to 1,000 per
        directory), or None when no directory is there."""
        found = self._contents(f"list {path or '/'} at {ref}", path, ref)
        if found is None:
            return None
        if not isinstance(found, list):
            return None  # a file (or symlink, submodule) by that name: no directory
        return [(entry.name, entry.type) for entry in found]

    def upsert_comment(self, *, number: int, marker: str, body: str) -> CommentRef:
        """Edit our marked comment in place, or create it; never leave two behind."""
        body = with_marker(marker, body)
        if len(body) > COMMENT_MAX_CHARS:
            raise ForgeError(f"comment on #{number}", f"body has {len(body)} characters, GitHub allows 65536")
        existing = self._marked(number, marker)
        if existing:
            keep = existing[0]
            action: Action = "unchanged"
            if keep.body != body:
                self._call(f"edit comment {keep.id}", lambda: keep.edit(body))
                action = "edited"
            removed = self._delete(existing[1:])
            return CommentRef(id=keep.id, url=keep.html_url, action=action, removed_duplicates=removed)
        created = self._create(number, marker, body)
        # Another run may have created its own copy meanwhile: keep the oldest, delete the rest.
        marked = self._marked(number, marker) or [created]
        keep = marked[0]
        removed = self._delete(marked[1:])
        outcome: Action = "created"
        if keep.id != created.id and keep.body != body:
            self._call(f"edit comment {keep.id}", lambda: keep.edit(body))
            outcome = "edited"
        return CommentRef(id=keep.id, url=keep.html_url, action=outcome, removed_duplicates=removed)

    def _create(self, number: int, marker: str, body: str) -> IssueComment:
        """POST the comment; on 5xx/rate limits re-list before trying again (POST is not idempotent)."""
        operation = f"comment on #{number}"
        for attempt in range(self._policy.attempts):
            try:
                created = self._issue(number).create_comment(body)
                if self._bot_login is None and created.user is not None:
                    self._bot_login = created.user.login  # the author GitHub gave our comment: no GET /user
                return created
            except (GithubException, requests.RequestException) as exc:
                error = _translate(operation, exc)
                if not isinstance(error, ForgeUnavailable) or attempt == self._policy.retries:
                    raise error from exc
                hint = _retry_after(exc) if isinstance(exc, GithubException) else None
                if hint is None and isinstance(exc, GithubException) and _is_rate_limit(exc):
                    hint = self._policy.rate_limit_wait
                wait = hint if hint is not None else self._policy.backoff(attempt + 1)
                if wait > self._policy.max_wait:
                    raise error from exc
                log.warning("%s failed (%s); retrying in %.1fs", operation, error, wait)
                self._sleep(wait)
            landed = self._marked(number, marker)
            if landed:
                return landed[0]
        raise AssertionError("unreachable")  # pragma: no cover

    def _delete(self, duplicates: list[IssueComment]) -> int:
        """Delete our later copies; one already deleted by a concurrent run counts as done."""
        removed = 0
        for dup in duplicates:
            try:
                dup.delete()
                removed += 1
            except UnknownObjectException:
                continue
            except (GithubException, requests.RequestException) as exc:
                raise _translate(f"delete duplicate comment {dup.id}", exc) from exc
        return removed

    def commit_file(self, *, path: str, content: str, branch: str, message: str) -> str | None:
        """Create or update ``path`` on ``branch`` through the contents API; None when unchanged."""
        operation = f"commit {path} to {branch}"
        for attempt in range(2):
            current = self._get_file(path, branch)
            if current is not None and current[0] == content:
                return None
            try:
                if current is None:
                    result = self._repo.create_file(path, message, content, branch=branch)
                else:
                    result = self._repo.update_file(path, message, content, current[1], branch=branch)
                return str(result["commit"].sha)
            except GithubException as exc:
                # 409: stale sha; 422: created meanwhile. Re-read once and try again.
                if exc.status in (409, 422) and attempt == 0:
                    continue
                raise _translate(operation, exc) from exc
            except requests.RequestException as exc:
                raise _translate(operation, exc) from exc
        raise ForgeConflict(operation, "another writer kept changing the file; rerun the job")

    def find_pr_by_head_sha(
        self, head_sha: str, *, head_label: str | None = None, head_repo: str | None = None
    ) -> PullRef | None:
        """The one open PR whose head is ``head_sha`` on branch ``head_label`` ("owner:branch") of ``head_repo``
        ("owner/name"; never trust a PR number from an artifact). Without a label nothing is guessed from the sha
        alone (two PRs can share a head commit); several matches (one branch, two base branches) are None too."""
        if not head_label or ":" not in head_label:
            return None
        branch = head_label.partition(":")[2]

        def scan() -> PullRef | None:
            found: list[PullRef] = []
            for index, pr in enumerate(self._repo.get_pulls(state="open", head=head_label)):
                repo = pr.head.repo
                if (
                    pr.head.sha == head_sha and pr.head.ref == branch
                    and (head_repo is None or (repo is not None and repo.full_name == head_repo))
                ):
                    found.append(PullRef(number=pr.number, base_sha=pr.base.sha, base_ref=pr.base.ref,
                                         head_sha=head_sha))
                if index + 1 >= MAX_PR_SCAN:
                    break
            if len(found) > 1:
                log.warning("evalbot: %d open PRs have head %s at %s; not guessing which", len(found), head_label,
                            head_sha[:12])
            return found[0] if len(found) == 1 else None

        return self._call(f"find the PR of {head_sha[:12]}", scan)

    def changed_files(self, *, number: int) -> list[str]:
        """The paths pull request ``number`` changes (``pulls/list-files``, 100 a page; a rename gives both names);
        ForgeError when GitHub may have cut the list (``MAX_PR_FILES`` or more)."""
        operation = f"list the files of #{number}"

        def scan() -> list[str]:
            names: list[str] = []
            listed = 0
            for entry in self._repo.get_pull(number).get_files():
                listed += 1
                names.append(entry.filename)
                if entry.previous_filename:
                    names.append(entry.previous_filename)
                if listed >= MAX_PR_FILES:
                    raise ForgeError(operation, f"GitHub lists at most {MAX_PR_FILES:,} files of a pull request and "
                                                "this one has as many: the list may be cut")
            return list(dict.fromkeys(names))

        return self._call(operation, scan)

    def download_artifact(self, *, run_id: int, name: str, max_bytes: int) -> dict[str, bytes]:
        """Files of artifact ``name`` from run ``run_id``, unzipped in memory (no paths touch disk).

        A ``name`` with ``*`` is a pattern (the parts of a sharded run): every matching artifact is downloaded and its
        files are keyed ``<artifact name>/<path>``; ``max_bytes`` caps them all together."""
        operation = f"download artifact {name!r} of run {run_id}"
        pattern = "*" in name
        artifacts: PaginatedList[Artifact] = PaginatedList(
            Artifact,
            self._gh.requester,
            f"{self._repo.url}/actions/runs/{run_id}/artifacts",
            {} if pattern else {"name": name},
            list_item="artifacts",
        )

        wanted = re.compile(".*".join(map(re.escape, name.split("*"))), re.S)  # only * is special

        def listed() -> list[Artifact]:
            found = [a for a in artifacts if wanted.fullmatch(a.name) and not a.expired]
            if not pattern:
                return found[-1:]
            latest: dict[str, Artifact] = {a.name: a for a in found}  # a re-run's upload replaces the first
            return [latest[key] for key in sorted(latest)]

        matches = self._call(operation, listed)
        if not matches:
            raise ForgeError(operation, "no such unexpired artifact; did the first workflow upload it?")
        if len(matches) > MAX_ARTIFACTS:
            raise ForgeError(operation, f"{len(matches)} artifacts match, limit {MAX_ARTIFACTS}")
        size = sum(a.size_in_bytes for a in matches)
        if size > max_bytes:
            raise ForgeError(operation, f"artifact is {size} bytes, limit {max_bytes}")
        files: dict[str, bytes] = {}
        budget = max_bytes
        for artifact in matches:
            url = artifact.archive_download_url
            status, headers, _ = self._call(operation, partial(self._gh.requester.requestJson, "GET", url))
            location = {k.lower(): v for k, v in headers.items()}.get("location")
            if status != 302 or not location:
                raise ForgeError(operation, "GitHub did not redirect to the archive (expired?)", status=status)
            data = self._fetch_signed(location, budget, operation)
            try:
                unpacked = unzip_in_memory(data, budget)
            except ValueError as exc:
                raise ForgeError(operation, f"artifact unusable: {exc}") from exc
            budget -= sum(len(v) for v in unpacked.values())
            files.update({f"{artifact.name}/{k}" if pattern else k: v for k, v in unpacked.items()})
        return files

    def set_commit_status(
        self, *, sha: str, state: StatusState, context: str, description: str, target_url: str | None
    ) -> None:
        """POST a commit status on ``sha``; setting the same status again is harmless, so 5xx and rate limits are
        retried (urllib3 does not retry a POST)."""
        operation = f"set the commit status {context!r} on {sha[:12]}"
        commit = self._repo.get_commit(sha)  # lazy: no request until the status is created
        text = status_description(description)
        for attempt in range(self._policy.attempts):
            try:
                if target_url:
                    commit.create_status(state, target_url=target_url, description=text, context=context)
                else:
                    commit.create_status(state, description=text, context=context)
                return
            except (GithubException, requests.RequestException) as exc:
                error = _translate(operation, exc)
                if not isinstance(error, ForgeUnavailable) or attempt == self._policy.retries:
                    raise error from exc
                hint = _retry_after(exc) if isinstance(exc, GithubException) else None
                wait = hint if hint is not None else self._policy.backoff(attempt + 1)
                if wait > self._policy.max_wait:
                    raise error from exc
                log.warning("%s failed (%s); retrying in %.1fs", operation, error, wait)
                self._sleep(wait)

    def _fetch_signed(self, url: str, max_bytes: int, operation: str) -> bytes:
        """GET the short-lived storage URL the API redirected to, without our token, size-capped."""
        session = requests.Session()
        retries = Retry(
            total=self._policy.retries,
            backoff_factor=self._policy.base_delay,
            backoff_max=self._policy.max_delay,
            status_forcelist=range(500, 600),
            allowed_methods={"GET"},
        )
        session.mount("http://", HTTPAdapter(max_retries=retries))
        session.mount("https://", HTTPAdapter(max_retries=retries))
        try:
            with session.get(url, stream=True, timeout=self._timeout_s) as response:
                response.raise_for_status()
                return join_capped(response.iter_content(chunk_size=65_536), max_bytes)
        except ValueError as exc:
            raise ForgeError(operation, str(exc)) from exc
        except requests.RequestException as exc:
            raise _translate(operation, exc) from exc
        finally:
            session.close()
