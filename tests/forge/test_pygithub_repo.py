"""PyGithubForge's file, pull request and artifact calls against the contract-checked fake GitHub."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable

import pytest

from evalbot.forge.base import ForgeError, ForgeForbidden
from evalbot.forge.pygithub import PyGithubForge
from tests.fakes.fake_github import NO_STATUSES_TOKEN, READ_ONLY_TOKEN, FakeGitHub, Pull
from tests.forge.malformed_zips import MALFORMED

Make = Callable[..., PyGithubForge]
BASE = "b" * 40
HEAD = "c" * 40


def test_read_file_at_a_commit(fake: FakeGitHub, make_forge: Make) -> None:
    """The file is read at the exact ref asked for, not at the default branch."""
    fake.put_file(".evalbot/baseline.json", '{"v": "base"}', ref=BASE)
    fake.put_file(".evalbot/baseline.json", '{"v": "main"}', ref="main")
    assert make_forge().read_file(".evalbot/baseline.json", ref=BASE) == '{"v": "base"}'


def test_missing_file_is_none(fake: FakeGitHub, make_forge: Make) -> None:
    """A 404 from the contents API means no baseline, not an error."""
    assert make_forge().read_file(".evalbot/baseline.json", ref=BASE) is None


def test_large_file_is_fetched_with_the_raw_media_type(fake: FakeGitHub, make_forge: Make) -> None:
    """Files whose JSON has encoding 'none' (over 1 MB on GitHub) are re-read as raw bytes, UTF-8 intact."""
    fake.large_file_bytes = 64
    text = '{"note": "Größe ✓", "pad": "' + "x" * 200 + '"}'
    fake.put_file("big.json", text, ref=BASE)
    assert make_forge().read_file("big.json", ref=BASE) == text
    assert fake.calls("repos/get-content") == 2


def test_read_is_retried_on_a_server_error(fake: FakeGitHub, make_forge: Make) -> None:
    """A transient 502 on GET is retried by the client."""
    fake.put_file("a.json", "{}", ref=BASE)
    fake.fail("GET", r"/contents/a\.json$", 502)
    assert make_forge().read_file("a.json", ref=BASE) == "{}"


def test_commit_creates_updates_and_skips_unchanged(fake: FakeGitHub, make_forge: Make) -> None:
    """Create, then update with the blob sha, then no commit when the content is the same."""
    forge = make_forge()
    first = forge.commit_file(path=".evalbot/baseline.json", content="1", branch="main", message="m1")
    second = forge.commit_file(path=".evalbot/baseline.json", content="2", branch="main", message="m2")
    third = forge.commit_file(path=".evalbot/baseline.json", content="2", branch="main", message="m3")
    assert first and second and first != second and third is None
    assert fake.files[("main", ".evalbot/baseline.json")] == b"2"
    assert [m for _, _, m in fake.commits] == ["m1", "m2"]


def test_commit_recovers_from_a_concurrent_writer(fake: FakeGitHub, make_forge: Make) -> None:
    """A stale sha (409) makes the forge re-read the file and commit on top of the newer version."""
    fake.put_file("b.json", "old", ref="main")
    raced: list[bool] = []

    def other_writer() -> None:
        if not raced:
            raced.append(True)
            fake.put_file("b.json", "theirs", ref="main")

    fake.on("repos/create-or-update-file-contents", other_writer)
    assert make_forge().commit_file(path="b.json", content="ours", branch="main", message="m")
    assert fake.files[("main", "b.json")] == b"ours"
    assert fake.calls("repos/create-or-update-file-contents") == 2


def test_commit_with_a_read_only_token_is_forbidden(fake: FakeGitHub, make_forge: Make) -> None:
    """A push from a token without contents: write raises ForgeForbidden."""
    with pytest.raises(ForgeForbidden):
        make_forge(token=READ_ONLY_TOKEN).commit_file(path="x.json", content="1", branch="main", message="m")


def test_pr_found_by_head_sha_and_label(fake: FakeGitHub, make_forge: Make) -> None:
    """The owner:branch hint narrows the search; the sha must still match."""
    fake.add_pull(Pull(11, head_sha="1" * 40, base_sha=BASE, head_ref="topic", head_owner="forker"))
    fake.add_pull(Pull(12, head_sha=HEAD, base_sha=BASE, head_ref="topic", head_owner="forker"))
    forge = make_forge()
    found = forge.find_pr_by_head_sha(HEAD, head_label="forker:topic")
    assert found is not None and (found.number, found.base_sha, found.base_ref) == (12, BASE, "main")
    assert forge.find_pr_by_head_sha("9" * 40, head_label="forker:topic") is None


def test_pr_found_by_head_across_pages_and_never_by_sha_alone(fake: FakeGitHub, make_forge: Make) -> None:
    """Pagination is followed and closed PRs are ignored; without a head label (or with the wrong repository, or
    with two PRs from one branch) nothing is guessed."""
    for n in range(1, 6):
        fake.add_pull(Pull(n, head_sha="1" * 40 if n == 1 else f"{n}" * 40, base_sha=BASE, head_ref="topic"))
    fake.add_pull(Pull(6, head_sha=HEAD, base_sha=BASE, state="closed"))
    forge = make_forge(per_page=2)
    owner = fake.repo.split("/")[0]
    found = forge.find_pr_by_head_sha("1" * 40, head_label=f"{owner}:topic", head_repo=fake.repo)
    assert found is not None and found.number == 1
    assert forge.find_pr_by_head_sha("1" * 40) is None
    assert forge.find_pr_by_head_sha("1" * 40, head_label=f"{owner}:topic", head_repo="forker/other") is None
    assert forge.find_pr_by_head_sha(HEAD, head_label=f"{owner}:topic") is None
    fake.add_pull(Pull(7, head_sha="1" * 40, base_sha=BASE, head_ref="topic", base_ref="release"))
    assert forge.find_pr_by_head_sha("1" * 40, head_label=f"{owner}:topic") is None  # two bases: ambiguous


def test_artifact_download_is_unzipped_in_memory_without_leaking_the_token(fake: FakeGitHub, make_forge: Make) -> None:
    """The storage redirect is followed without Authorization and the zip's files come back."""
    fake.add_artifact(99, "other", {"x": b"no"})
    fake.add_artifact(99, "evalbot-report", {"report.json": b'{"ok": true}', "event.json": b"{}"})
    files = make_forge().download_artifact(run_id=99, name="evalbot-report", max_bytes=1_000_000)
    assert files == {"report.json": b'{"ok": true}', "event.json": b"{}"}
    blob = [e for e in fake.exchanges if e.operation == "blob"]
    assert len(blob) == 1 and not blob[0].authorized


def test_missing_artifact_says_what_to_check(fake: FakeGitHub, make_forge: Make) -> None:
    """No artifact of that name on the run gives an actionable ForgeError."""
    with pytest.raises(ForgeError, match="did the first workflow upload it"):
        make_forge().download_artifact(run_id=5, name="evalbot-report", max_bytes=1000)


def test_oversized_artifact_is_refused(fake: FakeGitHub, make_forge: Make) -> None:
    """An artifact larger than the cap is not downloaded."""
    fake.add_artifact(7, "evalbot-report", {"r.json": b"x" * 5000})
    with pytest.raises(ForgeError, match="limit 100"):
        make_forge().download_artifact(run_id=7, name="evalbot-report", max_bytes=100)
    assert fake.calls("actions/download-artifact") == 0


def test_unsafe_member_path_is_refused(fake: FakeGitHub, make_forge: Make) -> None:
    """A zip-slip name inside the (untrusted) artifact is an error, not a file."""
    aid = fake.add_artifact(8, "evalbot-report", {})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        archive.writestr("../../etc/evil", b"x")
    fake.artifacts[aid] = (8, "evalbot-report", buf.getvalue())
    with pytest.raises(ForgeError, match="unsafe path"):
        make_forge().download_artifact(run_id=8, name="evalbot-report", max_bytes=10_000)


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_malformed_artifact_is_unusable(kind: str, fake: FakeGitHub, make_forge: Make) -> None:
    """Through the real download path (listing, 302 redirect, signed URL): a malformed member is a ForgeError
    saying the artifact is unusable, never another exception type."""
    aid = fake.add_artifact(9, "evalbot-report", {})
    fake.artifacts[aid] = (9, "evalbot-report", MALFORMED[kind])
    with pytest.raises(ForgeError, match=r"artifact unusable: artifact member 'report\.json' cannot be read"):
        make_forge().download_artifact(run_id=9, name="evalbot-report", max_bytes=1_000_000)


def test_a_file_that_is_not_utf8_is_a_forge_error(fake: FakeGitHub, make_forge: Make) -> None:
    """A config or template at the base commit with invalid UTF-8 is a ForgeError naming the read (the caller then
    tries git, which says the same, and fails closed), not a UnicodeDecodeError (exit 70)."""
    fake.put_file("evals/test_config.json", b'\xff\xfe{"evalbot": {"fail_on": "never"}}', ref=BASE)
    with pytest.raises(ForgeError, match="not UTF-8") as caught:
        make_forge().read_file("evals/test_config.json", ref=BASE)
    assert f"read evals/test_config.json at {BASE}" in str(caught.value)


def test_a_forks_baseline_that_is_not_utf8_is_not_considered(fake: FakeGitHub, make_forge: Make) -> None:
    """The fork-safe second stage reads the pull request's own baseline at its head: invalid UTF-8 there (the
    fork's to write) leaves its baseline update out, with a warning, instead of crashing the stage (exit 70)."""
    from evalbot.action.second_stage import pr_baseline_at

    fake.put_file(".evalbot/baseline.json", b'{"schema_version": 1, "x": "\xff"}', ref=HEAD)
    assert pr_baseline_at(make_forge(), ".evalbot/baseline.json", HEAD) is None


def test_changed_files_lists_every_page_and_both_names_of_a_rename(fake: FakeGitHub, make_forge: Make) -> None:
    """250 files over three pages of 100; a rename gives its old name too (the old folder's eval set is affected)."""
    files: list[tuple[str, str | None]] = [(f"agents/a{i}.py", None) for i in range(249)]
    files.append(("agents/new/x.py", "agents/old/x.py"))
    fake.add_pull(Pull(5, head_sha=HEAD, base_sha=BASE, files=files))
    names = make_forge().changed_files(number=5)
    assert names == [*(f"agents/a{i}.py" for i in range(249)), "agents/new/x.py", "agents/old/x.py"]
    assert fake.calls("pulls/list-files") == 3


def test_changed_files_refuses_a_list_github_may_have_cut(fake: FakeGitHub, make_forge: Make) -> None:
    """GitHub lists at most 3,000 files of a pull request: a list that long never decides what was not changed."""
    fake.add_pull(Pull(6, head_sha=HEAD, base_sha=BASE, files=[(f"f{i}", None) for i in range(3000)]))
    with pytest.raises(ForgeError, match="at most 3,000 files"):
        make_forge().changed_files(number=6)


def test_changed_files_of_an_unknown_pull_request_is_an_error(fake: FakeGitHub, make_forge: Make) -> None:
    with pytest.raises(ForgeError):
        make_forge().changed_files(number=404)


def test_commit_status_is_set_on_the_sha(fake: FakeGitHub, make_forge: Make) -> None:
    """One POST /statuses/{sha} (no GET of the commit first); a description over GitHub's 140 characters is cut,
    not refused with 422; a token without statuses: write is ForgeForbidden naming the call; a 502 is retried."""
    forge = make_forge()
    forge.set_commit_status(sha=HEAD, state="failure", context="evalbot", description="blocked: " + "x" * 300,
                            target_url="https://github.com/o/r/actions/runs/1")
    (status,) = fake.statuses
    assert (status.sha, status.state, status.context) == (HEAD, "failure", "evalbot")
    assert status.description is not None and len(status.description) == 140 and status.description.endswith("…")
    assert status.target_url == "https://github.com/o/r/actions/runs/1"
    assert [e.operation for e in fake.exchanges] == ["repos/create-commit-status"]
    fake.fail("POST", r"/statuses/", 502)
    forge.set_commit_status(sha=HEAD, state="success", context="evalbot", description="passed", target_url=None)
    assert fake.status_of(HEAD, "evalbot") is not None and fake.statuses[-1].state == "success"
    with pytest.raises(ForgeForbidden, match=r"set the commit status 'evalbot'.*\(HTTP 403\)"):
        make_forge(token=NO_STATUSES_TOKEN).set_commit_status(sha=HEAD, state="success", context="evalbot",
                                                              description="passed", target_url=None)
    assert len(fake.statuses) == 2
