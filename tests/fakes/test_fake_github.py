"""The fake GitHub itself: its routes match the committed OpenAPI subset and the contract check really bites."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.fake_github import APP_TOKEN, FakeGitHub
from tests.fakes.fake_github_routes import ROUTES
from tests.fakes.openapi_contract import contract, to_json_schema


@pytest.fixture
def server() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        yield fake


def call(fake: FakeGitHub, method: str, path: str, body: Any = None) -> tuple[int, dict[str, str], Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(fake.base_url + path, data=data, method=method)
    req.add_header("Authorization", f"token {APP_TOKEN}")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            raw = resp.read()
            return resp.status, dict(resp.headers), json.loads(raw) if raw else None
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), json.loads(err.read() or b"null")


def test_every_route_is_an_operation_of_the_subset_and_vice_versa() -> None:
    """The fake serves exactly the operations committed in contracts/github-openapi-subset.json."""
    assert set(ROUTES) == {op.operation_id for op in contract().operations}


def test_good_exchanges_produce_no_violations(server: FakeGitHub) -> None:
    """Creating and listing comments through raw HTTP satisfies the contract."""
    assert call(server, "POST", f"/repos/{server.repo}/issues/1/comments", {"body": "hi"})[0] == 201
    status, _, listed = call(server, "GET", f"/repos/{server.repo}/issues/1/comments")
    assert status == 200 and listed[0]["body"] == "hi"
    assert server.violations == []


def test_request_outside_the_schema_is_reported(server: FakeGitHub) -> None:
    """A state outside the enum, a non-integer per_page and an unknown query key are all flagged."""
    call(server, "GET", f"/repos/{server.repo}/pulls?state=merged&per_page=many&colour=red")
    joined = " | ".join(server.violations)
    assert "state" in joined and "per_page" in joined and "colour" in joined


def test_request_body_missing_a_required_field_is_reported(server: FakeGitHub) -> None:
    """A comment POST whose body lacks 'body' violates the request schema."""
    assert call(server, "POST", f"/repos/{server.repo}/issues/1/comments", {"text": "wrong key"})[0] == 422
    assert any("'body' is a required property" in v for v in server.violations)


def test_response_outside_the_schema_is_reported(server: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> None:
    """A route answering a comment without its required 'id' is caught on the response side."""

    def broken(fake: FakeGitHub, *args: Any, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        out = fake.comment_json(fake.comments[fake.add_comment(1, "x")])
        del out["id"]
        return 200, out, {}

    monkeypatch.setitem(ROUTES, "issues/get-comment", broken)
    call(server, "GET", f"/repos/{server.repo}/issues/comments/5")
    assert any("'id' is a required property" in v for v in server.violations)


def test_unknown_path_is_reported(server: FakeGitHub) -> None:
    """Calls to endpoints outside the subset are violations (add them to the subset first)."""
    assert call(server, "GET", f"/repos/{server.repo}/labels")[0] == 404
    assert server.violations and "no operation" in server.violations[0]


def test_pagination_links(server: FakeGitHub) -> None:
    """Link carries rel=next until the last page, like GitHub."""
    for i in range(5):
        server.add_comment(2, f"c{i}")
    _, first, items = call(server, "GET", f"/repos/{server.repo}/issues/2/comments?per_page=2")
    _, last, tail = call(server, "GET", f"/repos/{server.repo}/issues/2/comments?per_page=2&page=3")
    assert 'rel="next"' in first["Link"] and "page=2" in first["Link"]
    assert "Link" not in last and [c["body"] for c in items + tail] == ["c0", "c1", "c4"]


def test_nullable_becomes_a_null_option() -> None:
    """OpenAPI 3.0 'nullable' is translated for jsonschema, including on $ref-only schemas."""
    assert to_json_schema({"type": "string", "nullable": True}) == {"type": ["string", "null"]}
    assert to_json_schema({"allOf": [{"$ref": "#/x"}], "nullable": True}) == {
        "anyOf": [{"allOf": [{"$ref": "#/x"}]}, {"type": "null"}]
    }
    assert to_json_schema({"enum": ["a"], "type": "string", "nullable": True})["enum"] == ["a", None]


def test_commit_status_is_served_as_the_contract_says(server: FakeGitHub) -> None:
    """POST /statuses/{sha}: 201 with a Status body; a state outside the enum is a violation; a description over
    GitHub's 140 characters is 422, as GitHub answers it (the spec does not say)."""
    sha = "c" * 40
    body = {"state": "failure", "context": "evalbot", "description": "blocked", "target_url": "https://x/1"}
    status, headers, out = call(server, "POST", f"/repos/{server.repo}/statuses/{sha}", body)
    assert status == 201 and out["state"] == "failure" and out["context"] == "evalbot"
    assert headers["Location"].endswith(f"/statuses/{sha}") and server.violations == []
    assert server.status_of(sha, "EVALBOT") is not None and server.status_of(sha, "other") is None
    assert call(server, "POST", f"/repos/{server.repo}/statuses/{sha}", {**body, "description": "x" * 141})[0] == 422
    assert server.violations == []
    call(server, "POST", f"/repos/{server.repo}/statuses/{sha}", {**body, "state": "blocked"})
    assert any("request body state" in v for v in server.violations), server.violations
