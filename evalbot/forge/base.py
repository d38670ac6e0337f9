"""The Forge protocol: what evalbot asks of a code host, with typed errors (retries follow ``errors.RetryPolicy``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from evalbot.errors import EvalbotError
from evalbot.redact import scrub

COMMENT_MAX_CHARS = 65_536
"""GitHub rejects issue comments longer than this with 422 (the OpenAPI description does not say so)."""
STATUS_DESCRIPTION_MAX_CHARS = 140
"""GitHub rejects a commit status whose description is longer than this with 422 (the description does not say so)."""

StatusState = Literal["success", "failure", "error", "pending"]
"""A commit status's state, as GitHub's API names them."""


class ForgeError(EvalbotError):
    """A call to the code host failed; ``operation`` names what was attempted."""

    def __init__(self, operation: str, message: str, *, status: int | None = None) -> None:
        message = scrub(message)  # an error body may echo the token; a URL may carry a signature
        self.operation = operation
        self.status = status
        self.message = message
        super().__init__(f"{operation}: {message}" + (f" (HTTP {status})" if status else ""))


class ForgeForbidden(ForgeError):
    """The token may not do this, e.g. the read-only GITHUB_TOKEN of a pull request from a fork."""


class ForgeUnavailable(ForgeError):
    """The host kept failing (5xx, rate limits, network) after every retry."""


class ForgeConflict(ForgeError):
    """A write lost a race with another writer (stale sha) even after re-reading."""


@dataclass(frozen=True)
class CommentRef:
    """Where the sticky comment ended up and what was done to it."""

    id: int
    url: str
    action: Literal["created", "edited", "unchanged"]
    removed_duplicates: int = 0
    """Later copies of the marked comment (from retries or concurrent runs) that were deleted."""


@dataclass(frozen=True)
class PullRef:
    """An open pull request as found from its head commit."""

    number: int
    base_sha: str
    base_ref: str
    head_sha: str


class Forge(Protocol):
    """Everything evalbot needs from GitHub; ``evalbot.forge.pygithub.PyGithubForge`` implements it."""

    def read_file(self, path: str, *, ref: str) -> str | None:
        """Text of ``path`` at commit/branch ``ref``, or None when it does not exist there."""
        ...

    def file_sha(self, path: str, *, ref: str) -> str | None:
        """Git's blob id of file ``path`` at ``ref``, or None when nothing is there (ForgeError when it is no file)."""
        ...

    def list_directory(self, path: str, *, ref: str) -> list[tuple[str, str]] | None:
        """``(name, type)`` of each entry of directory ``path`` ("" for the root) at ``ref`` (type "file", "dir",
        "symlink" or "submodule"), or None when no directory is there."""
        ...

    def upsert_comment(self, *, number: int, marker: str, body: str) -> CommentRef:
        """Create or edit in place the one comment on PR ``number`` carrying ``marker``."""
        ...

    def commit_file(self, *, path: str, content: str, branch: str, message: str) -> str | None:
        """Commit ``content`` to ``path`` on ``branch``; the new commit sha, or None if unchanged."""
        ...

    def find_pr_by_head_sha(
        self, head_sha: str, *, head_label: str | None = None, head_repo: str | None = None
    ) -> PullRef | None:
        """The one open PR whose head is ``head_sha`` on ``head_label`` ("owner:branch") of ``head_repo``
        ("owner/name"); None without a label (the sha alone is not enough) or when several match."""
        ...

    def download_artifact(self, *, run_id: int, name: str, max_bytes: int) -> dict[str, bytes]:
        """Files inside workflow run ``run_id``'s artifact ``name``, read in memory, size-capped."""
        ...

    def changed_files(self, *, number: int) -> list[str]:
        """The repository paths pull request ``number`` changes (a rename: both names), as GitHub lists them against
        its merge base; raises ForgeError when they cannot all be listed (GitHub lists at most
        ``MAX_PR_FILES``)."""
        ...

    def set_commit_status(
        self, *, sha: str, state: StatusState, context: str, description: str, target_url: str | None
    ) -> None:
        """Set commit ``sha``'s status ``context`` (the latest one set is the check's state); ``description`` is
        cut to GitHub's 140 characters. ForgeForbidden when the token lacks ``statuses: write``."""
        ...


def status_description(text: str) -> str:
    """``text`` on one line, within GitHub's limit for a status description (cut with an ellipsis)."""
    line = " ".join(text.split())
    return line if len(line) <= STATUS_DESCRIPTION_MAX_CHARS else line[: STATUS_DESCRIPTION_MAX_CHARS - 1] + "…"


MAX_PR_FILES = 3000
"""Files GitHub lists for one pull request at most: a list that long may be cut, so it never decides alone."""


def with_marker(marker: str, body: str) -> str:
    """``body`` with the hidden marker on its first line (added only if missing)."""
    if not marker.startswith("<!--") or not marker.endswith("-->"):
        raise ValueError(f"comment marker must be an HTML comment, got {marker!r}")
    return body if marker in body else f"{marker}\n{body}"
