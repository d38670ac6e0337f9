"""Route handlers of the fake GitHub, one per operationId of the committed OpenAPI subset."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tests.fakes.openapi_contract import contract

if TYPE_CHECKING:
    from tests.fakes.fake_github import FakeGitHub, Token

Answer = tuple[int, Any, dict[str, str]]
ROUTES: dict[str, Callable[..., Answer]] = {}
COMMENT_LIMIT = 65_536
STATUS_DESCRIPTION_LIMIT = 140
"""GitHub answers 422 "description is too long (maximum is 140 characters)" beyond this (not in the spec)."""
NOT_YOURS = "Must have admin rights to Repository."
GITHUB_API_ROOT = "https://api.github.com"
STORAGE_SIGNATURE = "Fake0Storage0Signature0Secret"
"""The sig= value of every artifact download URL the fake redirects to."""


@dataclass
class Status:
    """A commit status as created (GitHub keeps every one; the latest per sha and context is the check's state)."""

    id: int
    sha: str
    state: str
    context: str
    description: str | None
    target_url: str | None
    login: str


def error(status: int, message: str) -> dict[str, Any]:
    """GitHub's basic-error body."""
    return {"message": message, "documentation_url": "https://docs.github.com/rest", "status": str(status)}


def route(operation: str) -> Callable[[Callable[..., Answer]], Callable[..., Answer]]:
    def register(fn: Callable[..., Answer]) -> Callable[..., Answer]:
        ROUTES[operation] = fn
        return fn

    return register


def blob_sha(data: bytes) -> str:
    """Git's blob id for ``data``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def page(fake: FakeGitHub, items: list[Any], query: dict[str, str], path: str) -> tuple[list[Any], dict[str, str]]:
    """Slice ``items`` by per_page/page and build GitHub's Link header."""
    per, number = int(query.get("per_page", 30)), int(query.get("page", 1))
    last = max(1, -(-len(items) // per))
    keep = "".join(f"&{k}={v}" for k, v in query.items() if k not in ("per_page", "page"))
    link = f"{fake.base_url}{path}?per_page={per}{keep}&page="
    rels = [f'<{link}{number + 1}>; rel="next"', f'<{link}{last}>; rel="last"'] if number < last else []
    return items[(number - 1) * per : number * per], ({"Link": ", ".join(rels)} if rels else {})


@route("users/get-authenticated")
def get_user(fake: FakeGitHub, token: Token, q: dict[str, str], body: Any, headers: Any) -> Answer:
    if token.is_app:  # installation tokens (GITHUB_TOKEN) may not read /user
        return 403, error(403, "Resource not accessible by integration"), {}
    user = contract().example("private-user-response-with-public-and-private-profile-information")
    user.update(login=token.login)
    return 200, user, {}


@route("repos/get")
def get_repo(
    fake: FakeGitHub, token: Token, q: dict[str, str], body: Any, headers: Any, owner: str, repo: str
) -> Answer:
    out = contract().example("full-repository-default-response")
    for obj in (out, out.get("source", {}), out.get("parent", {})):
        obj.setdefault("language", None)  # GitHub's example lags its own schema here
    out.update(name=repo, full_name=f"{owner}/{repo}", default_branch="main")
    return 200, fake._rebase(out), {}


@route("pulls/get")
def get_pull(fake: FakeGitHub, token: Token, q: dict[str, str], body: Any, headers: Any, **a: str) -> Answer:
    pull = fake.pulls.get(int(a["pull_number"]))
    return (404, error(404, "Not Found"), {}) if pull is None else (200, fake.pull_json(pull, "pull-request"), {})


@route("pulls/list")
def list_pulls(fake: FakeGitHub, token: Token, q: dict[str, str], body: Any, headers: Any, **a: str) -> Answer:
    state, head = q.get("state", "open"), q.get("head")
    pulls = [
        p
        for p in sorted(fake.pulls.values(), key=lambda p: -p.number)
        if (state == "all" or p.state == state) and (head is None or head == f"{p.head_owner}:{p.head_ref}")
    ]
    chunk, link = page(fake, pulls, q, f"/repos/{fake.repo}/pulls")
    return 200, [fake.pull_json(p, "pull-request-simple-items") for p in chunk], link


@route("pulls/list-files")
def list_pull_files(fake: FakeGitHub, token: Token, q: dict[str, str], body: Any, headers: Any, **a: str) -> Answer:
    number = int(a["pull_number"])
    pull = fake.pulls.get(number)
    if pull is None:  # real GitHub answers 404 here; the spec declares no 404 for this operation
        return 404, error(404, "Not Found"), {"X-Contract-Undeclared": "ok"}
    template = contract().example("diff-entry-items")[0]
    entries = []
    for name, previous in pull.files:
        entry = {**template, "filename": name, "status": "renamed" if previous else "modified",
                 "sha": blob_sha(name.encode())}
        entry.pop("previous_filename", None)
        if previous:
            entry["previous_filename"] = previous
        entries.append(entry)
    chunk, link = page(fake, entries, q, f"/repos/{fake.repo}/pulls/{number}/files")
    return 200, chunk, link


@route("issues/list-comments")
def list_comments(fake: FakeGitHub, token: Token, q: dict[str, str], body: Any, headers: Any, **a: str) -> Answer:
    number = int(a["issue_number"])
    chunk, link = page(fake, fake.comments_on(number), q, f"/repos/{fake.repo}/issues/{number}/comments")
    return 200, [fake.comment_json(c) for c in chunk], link


@route("issues/create-comment")
def create_comment(fake: FakeGitHub, token: Token, q: dict[str, str], body: Any, headers: Any, **a: str) -> Answer:
    if len(body["body"]) > COMMENT_LIMIT:  # enforced by GitHub, absent from the spec
        out = error(422, "Validation Failed")
        out["errors"] = [
            {
                "resource": "IssueComment",
                "code": "custom",
                "field": "body",
                "message": "body is too long (maximum is 65536 characters)",
            }
        ]
        return 422, out, {}
    cid = fake.add_comment(int(a["issue_number"]), body["body"], login=token.login)
    out = fake.comment_json(fake.comments[cid])
    return 201, out, {"Location": out["url"]}


@route("issues/get-comment")
def get_comment(fake: FakeGitHub, token: Token, q: dict[str, str], body: Any, headers: Any, **a: str) -> Answer:
    found = fake.comments.get(int(a["comment_id"]))
    return (404, error(404, "Not Found"), {}) if found is None else (200, fake.comment_json(found), {})


@route("issues/update-comment")
def update_comment(fake: FakeGitHub, token: Token, q: dict[str, str], body: Any, headers: Any, **a: str) -> Answer:
    found = fake.comments.get(int(a["comment_id"]))
    if found is None:
        return 404, error(404, "Not Found"), {"X-Contract-Skip": "real GitHub answers 404; spec omits it"}
    if found.login != token.login:
        return 403, error(403, NOT_YOURS), {"X-Contract-Skip": "real GitHub answers 403; spec omits it"}
    found.body = body["body"]
    return 200, fake.comment_json(found), {}


@route("issues/delete-comment")
def delete_comment(fake: FakeGitHub, token: Token, q: dict[str, str], body: Any, headers: Any, **a: str) -> Answer:
    found = fake.comments.pop(int(a["comment_id"]), None)
    if found is None:
        return 404, error(404, "Not Found"), {"X-Contract-Skip": "real GitHub answers 404; spec omits it"}
    return 204, None, {}


@route("repos/get-content")
def get_content(fake: FakeGitHub, token: Token, q: dict[str, str], body: Any, headers: Any, **a: str) -> Answer:
    ref, path = q.get("ref", "main"), a["path"].strip("/")
    data = fake.files.get((ref, path))
    if data is None:
        listed = directory(fake, ref, path)
        if listed:
            return 200, listed, {}
        return 404, error(404, "Not Found"), {}
    if "raw" in headers.get("Accept", ""):
        return (
            200,
            data,
            {
                "Content-Type": "application/vnd.github.raw+json; charset=utf-8",
                "X-Contract-Skip": "the raw media type is described in prose only",
            },
        )
    out = contract().example("content-file-response-if-content-is-a-file")
    large = len(data) > fake.large_file_bytes  # GitHub omits the content of files over 1 MB
    out.update(
        path=path,
        name=path.rsplit("/", 1)[-1],
        sha=blob_sha(data),
        size=len(data),
        encoding="none" if large else "base64",
        content="" if large else base64.encodebytes(data).decode(),
        url=f"https://api.github.com/repos/{fake.repo}/contents/{path}?ref={ref}",
    )
    return 200, fake._rebase(out), {}


def directory(fake: FakeGitHub, ref: str, path: str) -> list[dict[str, Any]]:
    """The contents API's answer for a directory: one entry per file or folder directly inside ``path`` at ``ref``
    (``fake.files`` holds files only; a folder exists when some file lies under it)."""
    prefix = f"{path}/" if path else ""
    entries: dict[str, str] = {}
    for (at, name) in fake.files:
        if at == ref and name.startswith(prefix):
            first, _, rest = name[len(prefix):].partition("/")
            entries[first] = "dir" if rest else "file"
    template = contract().example("content-file-response-if-content-is-a-directory")[0]
    out = []
    for name, kind in sorted(entries.items()):
        full = f"{prefix}{name}"
        item = dict(template, name=name, path=full, type=kind, size=0 if kind == "dir" else len(fake.files[(ref, full)]),
                    sha=blob_sha(full.encode()), url=f"https://api.github.com/repos/{fake.repo}/contents/{full}?ref={ref}")
        out.append(fake._rebase(item))
    return out


@route("repos/create-or-update-file-contents")
def put_content(fake: FakeGitHub, token: Token, q: dict[str, str], body: Any, headers: Any, **a: str) -> Answer:
    branch, path = body.get("branch", "main"), a["path"]
    old = fake.files.get((branch, path))
    if old is not None and body.get("sha") != blob_sha(old):
        status = 409 if body.get("sha") else 422
        msg = f"{path} does not match {body.get('sha')}" if body.get("sha") else '"sha" wasn\'t supplied.'
        return status, error(status, msg), {"X-Contract-Skip": "the spec's 409/422 bodies accept anything"}
    data = base64.b64decode(body["content"])
    fake.files[(branch, path)] = data
    fake.commits.append((branch, path, body["message"]))
    out = contract().example(
        "file-commit-example-for-updating-a-file" if old else "file-commit-example-for-creating-a-file"
    )
    out["content"].update(path=path, name=path.rsplit("/", 1)[-1], sha=blob_sha(data), size=len(data))
    out["commit"].update(sha=hashlib.sha1(f"{len(fake.commits)}".encode()).hexdigest(), message=body["message"])
    return (200 if old else 201), fake._rebase(out), {}


@route("actions/list-workflow-run-artifacts")
def list_artifacts(fake: FakeGitHub, token: Token, q: dict[str, str], body: Any, headers: Any, **a: str) -> Answer:
    template = contract().example("artifact-paginated")["artifacts"][0]
    items = []
    for aid, (run_id, name, data) in sorted(fake.artifacts.items()):
        if run_id == int(a["run_id"]) and q.get("name") in (None, name):
            item = dict(
                template,
                id=aid,
                node_id=f"A_{aid}",
                name=name,
                size_in_bytes=len(data),
                expired=False,
                url=f"{fake.base_url}/repos/{fake.repo}/actions/artifacts/{aid}",
                archive_download_url=f"{fake.base_url}/repos/{fake.repo}/actions/artifacts/{aid}/zip",
            )
            item["workflow_run"] = dict(template["workflow_run"], id=run_id)
            items.append(item)
    chunk, link = page(fake, items, q, f"/repos/{fake.repo}/actions/runs/{a['run_id']}/artifacts")
    return 200, {"total_count": len(items), "artifacts": chunk}, link


@route("actions/download-artifact")
def download_artifact(fake: FakeGitHub, token: Token, q: dict[str, str], body: Any, headers: Any, **a: str) -> Answer:
    if int(a["artifact_id"]) not in fake.artifacts:
        return 404, error(404, "Not Found"), {"X-Contract-Skip": "real GitHub answers 404; spec omits it"}
    # A different host name, as GitHub redirects to blob storage: the client must not send the token there.
    # Signed, like the real storage URL (the signature is a secret for its lifetime: it must never be printed).
    storage = fake.storage or f"http://localhost:{fake.port}"
    signed = f"?sig={STORAGE_SIGNATURE}&se=2099-01-01T00%3A00%3A00Z&sp=r"
    return 302, None, {"Location": f"{storage}/_blobs/artifacts/{a['artifact_id']}.zip{signed}"}


@route("repos/create-commit-status")
def create_status(fake: FakeGitHub, token: Token, q: dict[str, str], body: Any, headers: Any, **a: str) -> Answer:
    if not token.statuses:  # the job's permissions lack statuses: write
        return 403, error(403, "Resource not accessible by integration"), {"X-Contract-Undeclared": "ok"}
    description = body.get("description")
    if description is not None and len(description) > STATUS_DESCRIPTION_LIMIT:  # enforced by GitHub, not the spec
        out = error(422, "Validation Failed")
        out["errors"] = [{"resource": "Status", "code": "custom", "field": "description",
                          "message": "description is too long (maximum is 140 characters)"}]
        return 422, out, {"X-Contract-Undeclared": "ok"}
    status = Status(next(fake._ids), a["sha"], body["state"], body.get("context", "default"), description,
                    body.get("target_url"), token.login)
    fake.statuses.append(status)
    out = contract().example("status")
    out.update(id=status.id, node_id=f"SC_{status.id}", state=status.state, context=status.context,
               description=status.description, target_url=status.target_url,
               url=f"{GITHUB_API_ROOT}/repos/{fake.repo}/statuses/{status.sha}")
    if out.get("creator"):
        out["creator"].update(login=token.login, type="Bot" if token.login.endswith("[bot]") else "User")
    out = fake._rebase(out)
    return 201, out, {"Location": out["url"]}
