"""A stateful loopback fake of GitHub's REST API whose every exchange is checked against the OpenAPI subset."""

from __future__ import annotations

import io
import itertools
import json
import re
import threading
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.fakes.fake_github_routes import ROUTES, Status, error
from tests.fakes.openapi_contract import Operation, contract

GITHUB_API = "https://api.github.com"
APP_TOKEN = "ghs_fake_app_token"
"""Like a workflow's GITHUB_TOKEN: may write, may not call GET /user, comments as github-actions[bot]."""
READ_ONLY_TOKEN = "ghs_fake_fork_token"
"""Like GITHUB_TOKEN on a pull request from a fork: every write is 403."""
SECONDARY_LIMIT = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
NO_STATUSES_TOKEN = "ghs_fake_no_statuses_token"
"""Like GITHUB_TOKEN of a job granted contents and pull-requests but not ``statuses: write``."""
NOT_ACCESSIBLE = "Resource not accessible by integration"


@dataclass
class Token:
    login: str
    can_write: bool = True
    is_app: bool = True
    statuses: bool = True
    """May create commit statuses (``statuses: write``)."""


@dataclass
class Comment:
    id: int
    issue: int
    body: str
    login: str
    created_at: str = "2026-01-01T00:00:00Z"


@dataclass
class Pull:
    number: int
    head_sha: str
    base_sha: str
    head_ref: str = "feature"
    base_ref: str = "main"
    head_owner: str = ""
    state: str = "open"
    files: list[tuple[str, str | None]] = field(default_factory=list)
    """What ``pulls/list-files`` lists: (filename, previous_filename of a rename)."""


@dataclass
class Fault:
    """An injected answer for requests matching ``method`` + ``path`` regex, ``times`` times."""

    method: str
    path: str
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    times: int = 1
    after_effect: bool = False
    """Do the work first, then answer with the fault (a response lost after the write landed)."""


@dataclass
class Exchange:
    method: str
    path: str
    operation: str
    status: int
    authorized: bool


class FakeGitHub:
    """Owns the server thread and the repository state; use as a context manager."""

    def __init__(self, *, repo: str = "octo-org/evals", prefix: str = "", large_file_bytes: int = 1_000_000):
        self.repo, self.prefix, self.large_file_bytes = repo, prefix.rstrip("/"), large_file_bytes
        self.tokens = {APP_TOKEN: Token("github-actions[bot]"), READ_ONLY_TOKEN: Token("github-actions[bot]", False),
                       NO_STATUSES_TOKEN: Token("github-actions[bot]", statuses=False)}
        self.files: dict[tuple[str, str], bytes] = {}
        self.comments: dict[int, Comment] = {}
        self.pulls: dict[int, Pull] = {}
        self.artifacts: dict[int, tuple[int, str, bytes]] = {}  # id -> (run_id, name, zip)
        self.faults: list[Fault] = []
        self.hooks: dict[str, list[Callable[[], None]]] = {}
        self.exchanges: list[Exchange] = []
        self.violations: list[str] = []
        self.skipped: list[str] = []
        self.commits: list[tuple[str, str, str]] = []  # (branch, path, message)
        self.statuses: list[Status] = []  # in the order they were created
        self.storage: str | None = None  # where artifact downloads redirect (None: this server, as another host)
        self._ids = itertools.count(1001)
        self._lock = threading.RLock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), type("H", (_Handler,), {"fake": self}))
        self.port = self._server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}{self.prefix}"

    def __enter__(self) -> FakeGitHub:
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- arranging state ------------------------------------------------------------------------
    def put_file(self, path: str, content: str | bytes, *, ref: str = "main") -> None:
        self.files[(ref, path)] = content.encode() if isinstance(content, str) else content

    def add_comment(self, number: int, body: str, *, login: str = "octocat") -> int:
        cid = next(self._ids)
        self.comments[cid] = Comment(cid, number, body, login)
        return cid

    def add_pull(self, pull: Pull) -> None:
        pull.head_owner = pull.head_owner or self.repo.split("/")[0]
        self.pulls[pull.number] = pull

    def add_artifact(self, run_id: int, name: str, files: dict[str, bytes]) -> int:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as archive:
            for member, data in files.items():
                archive.writestr(member, data)
        aid = next(self._ids)
        self.artifacts[aid] = (run_id, name, buf.getvalue())
        return aid

    def fail(self, method: str, path: str, status: int, **kw: Any) -> None:
        default = error(status, SECONDARY_LIMIT if status == 403 else "Server Error")
        self.faults.append(Fault(method, path, status, kw.pop("body", default), **kw))

    def on(self, operation: str, hook: Callable[[], None]) -> None:
        """Run ``hook`` before serving each request for ``operation`` (outside the state lock)."""
        self.hooks.setdefault(operation, []).append(hook)

    def comments_on(self, number: int) -> list[Comment]:
        return sorted((c for c in self.comments.values() if c.issue == number), key=lambda c: c.id)

    def status_of(self, sha: str, context: str) -> Status | None:
        """The latest status of ``context`` on ``sha`` (GitHub's contexts are case-insensitive), or None."""
        found = [s for s in self.statuses if s.sha == sha and s.context.lower() == context.lower()]
        return found[-1] if found else None

    def calls(self, operation: str, *, status: int | None = None) -> int:
        """How many requests reached ``operation`` (only those answered with ``status``, if given)."""
        return sum(1 for e in self.exchanges if e.operation == operation and status in (None, e.status))

    # -- JSON shapes, seeded from the spec's own examples -----------------------------------------
    def _rebase(self, obj: Any) -> Any:
        return json.loads(json.dumps(obj).replace(GITHUB_API, self.base_url))

    def comment_json(self, c: Comment) -> dict[str, Any]:
        out = contract().example("issue-comment")
        url = f"{GITHUB_API}/repos/{self.repo}"
        out.update(
            id=c.id,
            node_id=f"IC_{c.id}",
            body=c.body,
            url=f"{url}/issues/comments/{c.id}",
            html_url=f"https://github.com/{self.repo}/pull/{c.issue}#issuecomment-{c.id}",
            issue_url=f"{url}/issues/{c.issue}",
            created_at=c.created_at,
            updated_at=c.created_at,
        )
        out["user"].update(login=c.login, type="Bot" if c.login.endswith("[bot]") else "User")
        return self._rebase(out)  # type: ignore[no-any-return]

    def pull_json(self, p: Pull, example: str) -> dict[str, Any]:
        raw = contract().example(example)
        out = raw[0] if isinstance(raw, list) else raw
        for team in out.get("requested_teams") or []:  # GitHub's example lags its own schema here
            team.setdefault("type", "organization")
        out.update(number=p.number, state=p.state, url=f"{GITHUB_API}/repos/{self.repo}/pulls/{p.number}")
        fork = f"{p.head_owner}/{self.repo.split('/')[1]}"
        out["head"].update(sha=p.head_sha, ref=p.head_ref, label=f"{p.head_owner}:{p.head_ref}")
        if out["head"].get("repo"):
            out["head"]["repo"].update(full_name=fork, fork=fork != self.repo)
        out["base"].update(sha=p.base_sha, ref=p.base_ref, label=f"{self.repo.split('/')[0]}:{p.base_ref}")
        return self._rebase(out)  # type: ignore[no-any-return]


class _Handler(BaseHTTPRequestHandler):
    fake: FakeGitHub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        fake, parts = self.fake, urlsplit(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        auth = self.headers.get("Authorization", "")
        if parts.path.startswith("/_blobs/"):  # the storage host a download redirects to
            return self._blob(parts.path, bool(auth))
        path = parts.path[len(fake.prefix) :] if parts.path.startswith(fake.prefix + "/") else None
        found = fake_contract_match(self.command, path)
        if found is None:
            fake.violations.append(f"no operation in the subset for {self.command} {parts.path}")
            return self._send(404, error(404, "Not Found"), {})
        op, args = found
        for hook in list(fake.hooks.get(op.operation_id, [])):
            hook()
        with fake._lock:
            bad_request = contract().check_request(op, args, query, raw)
            fake.violations += [f"{op.operation_id} {v}" for v in bad_request]
            token = fake.tokens.get(auth.split(" ")[-1])
            fault = next((f for f in fake.faults if f.method == self.command and re.search(f.path, path or "")), None)
            if fault and not fault.after_effect:
                status, out, extra = fault.status, fault.body, dict(fault.headers)
            elif bad_request:  # GitHub would refuse it too; the violation is already recorded
                status, out, extra = 422, error(422, "Validation Failed"), {"X-Contract-Undeclared": "ok"}
            elif token is None:
                status, out, extra = 401, error(401, "Bad credentials"), {}
            elif self.command != "GET" and not token.can_write:
                status, out, extra = 403, error(403, NOT_ACCESSIBLE), {"X-Contract-Undeclared": "ok"}
            else:
                body = json.loads(raw) if raw else {}
                decoded = {k: unquote(v) for k, v in args.items()}
                status, out, extra = ROUTES[op.operation_id](fake, token, query, body, self.headers, **decoded)
                if fault:
                    status, out, extra = fault.status, fault.body, dict(fault.headers)
            if fault:
                fault.times -= 1
                if fault.times <= 0:
                    fake.faults.remove(fault)
            fake.exchanges.append(Exchange(self.command, parts.path, op.operation_id, status, bool(auth)))
            if fault:
                extra.setdefault("X-Contract-Undeclared", "ok")
            self._check_and_send(op, status, out, extra)

    def _check_and_send(self, op: Operation, status: int, out: Any, extra: dict[str, str]) -> None:
        data = out if isinstance(out, bytes) else b"" if out is None else json.dumps(out).encode()
        ctype = extra.pop("Content-Type", "application/json; charset=utf-8")
        skip = extra.pop("X-Contract-Skip", None)
        tolerate = extra.pop("X-Contract-Undeclared", None)  # 5xx/403 GitHub sends but rarely declares
        if skip:
            self.fake.skipped.append(f"{op.operation_id} {status}: {skip}")
        else:
            found = contract().check_response(op, status, ctype, data)
            if tolerate and found and "not declared" in found[0]:
                self.fake.skipped.append(f"{op.operation_id} {status}: real GitHub sends it; spec omits it")
                found = []
            self.fake.violations += [f"{op.operation_id} -> {status}: {v}" for v in found]
        self._send(status, data, {"Content-Type": ctype, **extra})

    def _blob(self, path: str, had_auth: bool) -> None:
        aid = int(path.rsplit("/", 1)[-1].split(".")[0])
        if had_auth:
            self.fake.violations.append("the token was sent to the artifact storage host")
        self.fake.exchanges.append(Exchange("GET", path, "blob", 200, had_auth))
        self._send(200, self.fake.artifacts[aid][2], {"Content-Type": "application/zip"})

    def _send(self, status: int, out: Any, headers: dict[str, str]) -> None:
        data = out if isinstance(out, bytes) else json.dumps(out).encode()
        self.send_response(status)
        for key, value in {"Content-Length": str(len(data)), **headers}.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve


def fake_contract_match(method: str, path: str | None) -> tuple[Operation, dict[str, str]] | None:
    return None if path is None else contract().match(method, path)
