"""ScriptedForge: an in-memory Forge for Action tests that need a code host answering on cue."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from evalbot.forge.base import CommentRef, PullRef, StatusState


class ScriptedForge:
    """A Forge whose calls do what the test says (raise or answer)."""

    def __init__(self, **behaviour: Any) -> None:
        self.behaviour = behaviour

    def _do(self, name: str, default: Any) -> Any:
        action = self.behaviour.get(name, default)
        if isinstance(action, Exception):
            raise action
        return action

    def read_file(self, path: str, *, ref: str) -> str | None:
        return self._do("read_file", None)

    def file_sha(self, path: str, *, ref: str) -> str | None:
        return self._do("file_sha", None)

    def list_directory(self, path: str, *, ref: str) -> list[tuple[str, str]] | None:
        return self._do("list_directory", None)

    def upsert_comment(self, *, number: int, marker: str, body: str) -> CommentRef:
        return self._do("upsert_comment", CommentRef(id=1, url="https://x/1", action="created"))

    def commit_file(self, *, path: str, content: str, branch: str, message: str) -> str | None:
        return self._do("commit_file", None)

    def find_pr_by_head_sha(
        self, head_sha: str, *, head_label: str | None = None, head_repo: str | None = None
    ) -> PullRef | None:
        return self._do("find_pr_by_head_sha", None)

    def download_artifact(self, *, run_id: int, name: str, max_bytes: int) -> dict[str, bytes]:
        return self._do("download_artifact", {})

    def changed_files(self, *, number: int) -> list[str]:
        return self._do("changed_files", [])

    def set_commit_status(
        self, *, sha: str, state: StatusState, context: str, description: str, target_url: str | None
    ) -> None:
        return self._do("set_commit_status", None)


DATA = Path(__file__).parents[1] / "e2e" / "data"


def pr_env(tmp_path: Path) -> dict[str, str]:
    ws = tmp_path / "ws"
    shutil.copytree(DATA, ws)
    event = tmp_path / "event.json"
    pr = {
        "number": 3,
        "base": {"sha": "b" * 40, "ref": "main"},
        "head": {"sha": "c" * 40, "ref": "f", "label": "o:f", "repo": {"full_name": "o/r"}},
    }
    event.write_text(json.dumps({"pull_request": pr, "repository": {"full_name": "o/r", "default_branch": "main"}}))
    (tmp_path / "out").touch()
    return {
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_WORKSPACE": str(ws),
        "GITHUB_OUTPUT": str(tmp_path / "out"),
        "INPUT_ACTUALS": "actuals/good.json",
    }
