"""PyGithubForge's sticky comment against the fake GitHub: find, edit in place, no duplicates, typed errors."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from evalbot.errors import RetryPolicy
from evalbot.forge.base import ForgeError, ForgeForbidden, ForgeUnavailable
from evalbot.forge.pygithub import PyGithubForge
from tests.fakes.fake_github import READ_ONLY_TOKEN, SECONDARY_LIMIT, FakeGitHub, Token
from tests.fakes.fake_github_routes import error

MARK = "<!-- evalbot:ci/evals -->"
BOT = "github-actions[bot]"
Make = Callable[..., PyGithubForge]


def test_created_then_edited_in_place_then_left_alone(fake: FakeGitHub, make_forge: Make) -> None:
    """First run creates, a changed body edits the same comment, an unchanged body sends no PATCH."""
    forge = make_forge()
    first = forge.upsert_comment(number=7, marker=MARK, body="score 0.80")
    second = forge.upsert_comment(number=7, marker=MARK, body="score 0.81")
    third = forge.upsert_comment(number=7, marker=MARK, body="score 0.81")
    assert (first.action, second.action, third.action) == ("created", "edited", "unchanged")
    assert first.id == second.id == third.id
    assert [c.body for c in fake.comments_on(7)] == [f"{MARK}\nscore 0.81"]
    assert fake.calls("issues/update-comment") == 1
    assert first.url.endswith(f"/pull/7#issuecomment-{first.id}")


def test_marker_found_beyond_the_first_page(fake: FakeGitHub, make_forge: Make) -> None:
    """The search follows Link rel=next: our comment on page 3 is edited, not duplicated."""
    for i in range(4):
        fake.add_comment(7, f"human {i}")
    ours = fake.add_comment(7, f"{MARK}\nold", login=BOT)
    forge = make_forge(per_page=2)
    result = forge.upsert_comment(number=7, marker=MARK, body="new")
    assert result.id == ours and result.action == "edited"
    assert len(fake.comments_on(7)) == 5
    assert fake.calls("issues/list-comments") == 3  # pages 1, 2 and 3 of 2 comments each


def test_forged_marker_from_a_human_is_not_ours(fake: FakeGitHub, make_forge: Make) -> None:
    """A PR author pasting our marker does not get their comment overwritten."""
    forged = fake.add_comment(7, f"{MARK}\nall evals passed ✅", login="mallory")
    result = make_forge().upsert_comment(number=7, marker=MARK, body="real results")
    assert result.action == "created" and result.id != forged
    assert fake.comments[forged].body.endswith("all evals passed ✅")


def test_later_duplicates_are_deleted_and_the_oldest_kept(fake: FakeGitHub, make_forge: Make) -> None:
    """Left-over copies from an earlier race are cleaned up on the next run."""
    oldest = fake.add_comment(7, f"{MARK}\na", login=BOT)
    fake.add_comment(7, "human")
    fake.add_comment(7, f"{MARK}\nb", login=BOT)
    result = make_forge().upsert_comment(number=7, marker=MARK, body="c")
    assert result.id == oldest and result.removed_duplicates == 1
    assert [c.body for c in fake.comments_on(7)] == [f"{MARK}\nc", "human"]


def test_lost_post_response_does_not_duplicate(fake: FakeGitHub, make_forge: Make) -> None:
    """A 502 after the comment landed: re-listing finds it instead of posting again."""
    fake.fail("POST", r"/issues/7/comments$", 502, after_effect=True)
    result = make_forge().upsert_comment(number=7, marker=MARK, body="x")
    assert len(fake.comments_on(7)) == 1
    assert result.id == fake.comments_on(7)[0].id
    assert fake.calls("issues/create-comment") == 1


def test_comment_created_by_another_run_meanwhile_is_deduplicated(fake: FakeGitHub, make_forge: Make) -> None:
    """If another run posts between our listing and our POST, the later copy (ours) is deleted."""
    other: list[int] = []

    def concurrent_run() -> None:
        if not other:
            other.append(fake.add_comment(7, f"{MARK}\nfrom the other run", login=BOT))

    fake.on("issues/create-comment", concurrent_run)
    result = make_forge().upsert_comment(number=7, marker=MARK, body="from this run")
    assert [c.id for c in fake.comments_on(7)] == other == [result.id]
    assert fake.comments_on(7)[0].body == f"{MARK}\nfrom this run"
    assert result.removed_duplicates == 1


def test_two_concurrent_runs_leave_one_comment(fake: FakeGitHub, make_forge: Make) -> None:
    """Two threads that both list before either posts still converge on a single comment."""
    # The first POST is held until the second arrives. A thread posts only after its listing found no comment, and
    # no comment exists while the first POST is held, so both runs really do create one. (Holding the listings
    # instead was racy: a released thread could post before the other's listing was answered, and then that one
    # only edited, failing the create count about 1 run in 4.) Generous timeouts: a loaded CI machine is slow.
    barrier = threading.Barrier(2, timeout=60)
    posted: list[int] = []

    def hold_first_post() -> None:
        posted.append(1)
        if len(posted) <= 2:
            barrier.wait()

    fake.on("issues/create-comment", hold_first_post)
    results = []
    threads = [
        threading.Thread(target=lambda b=b: results.append(make_forge().upsert_comment(number=7, marker=MARK, body=b)))
        for b in ("run A", "run B")
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(results) == 2
    assert len(fake.comments_on(7)) == 1
    assert fake.calls("issues/create-comment") == 2


def test_read_only_fork_token_gives_a_typed_error(fake: FakeGitHub, make_forge: Make) -> None:
    """403 'not accessible by integration' is ForgeForbidden, with no retries."""
    with pytest.raises(ForgeForbidden) as caught:
        make_forge(token=READ_ONLY_TOKEN).upsert_comment(number=7, marker=MARK, body="x")
    assert caught.value.status == 403
    assert fake.calls("issues/create-comment") == 1


def test_forbidden_edit_is_typed_too(fake: FakeGitHub, make_forge: Make) -> None:
    """An existing comment that the read-only token cannot PATCH also raises ForgeForbidden."""
    fake.add_comment(7, f"{MARK}\nold", login=BOT)
    with pytest.raises(ForgeForbidden):
        make_forge(token=READ_ONLY_TOKEN).upsert_comment(number=7, marker=MARK, body="new")


def test_secondary_rate_limit_on_post_is_retried(fake: FakeGitHub, make_forge: Make) -> None:
    """A 403 secondary-rate-limit answer to the POST is waited out and retried once."""
    waits: list[float] = []
    fake.fail("POST", r"/issues/7/comments$", 403, body=error(403, SECONDARY_LIMIT))
    result = make_forge(sleep=waits.append).upsert_comment(number=7, marker=MARK, body="x")
    assert result.action == "created" and len(fake.comments_on(7)) == 1
    assert waits == [0.01]  # the policy's rate_limit_wait


def test_retry_after_header_is_honoured_for_post(fake: FakeGitHub, make_forge: Make) -> None:
    """Retry-After on a 403 sets the wait before the second POST."""
    waits: list[float] = []
    fake.fail("POST", r"/issues/7/comments$", 403, headers={"Retry-After": "2"})
    make_forge(sleep=waits.append).upsert_comment(number=7, marker=MARK, body="x")
    assert waits == [2.0]


@pytest.mark.parametrize("status", [500, 502, 503])
def test_edit_is_retried_on_server_errors(fake: FakeGitHub, make_forge: Make, status: int) -> None:
    """PATCH is idempotent, so 5xx answers to the edit are retried with backoff."""
    cid = fake.add_comment(7, f"{MARK}\nold", login=BOT)
    fake.fail("PATCH", rf"/issues/comments/{cid}$", status, times=2)
    assert make_forge().upsert_comment(number=7, marker=MARK, body="new").action == "edited"
    assert fake.calls("issues/update-comment") == 3


def test_edit_is_retried_after_secondary_rate_limit(fake: FakeGitHub, make_forge: Make) -> None:
    """A secondary rate limit on PATCH is retried by the client's retry policy."""
    cid = fake.add_comment(7, f"{MARK}\nold", login=BOT)
    fake.fail("PATCH", rf"/issues/comments/{cid}$", 403, body=error(403, SECONDARY_LIMIT))
    make_forge().upsert_comment(number=7, marker=MARK, body="new")
    assert fake.comments[cid].body == f"{MARK}\nnew"


def test_persistent_outage_becomes_forge_unavailable(fake: FakeGitHub, make_forge: Make) -> None:
    """After every retry is spent the error says GitHub is unavailable (the app maps it to exit 3)."""
    fake.fail("GET", r"/issues/7/comments$", 503, times=10)
    with pytest.raises(ForgeUnavailable):
        make_forge(retry=RetryPolicy(attempts=3, base_delay=0.0)).upsert_comment(number=7, marker=MARK, body="x")
    assert fake.calls("issues/list-comments") == 3


def test_too_long_body_is_refused_before_sending(fake: FakeGitHub, make_forge: Make) -> None:
    """Bodies over GitHub's 65,536-character limit fail fast with a clear error, not a 422."""
    with pytest.raises(ForgeError, match="65536"):
        make_forge().upsert_comment(number=7, marker=MARK, body="x" * 70_000)
    assert fake.calls("issues/create-comment") == 0


def test_personal_token_author_comes_from_get_user(fake: FakeGitHub, make_forge: Make) -> None:
    """With a PAT the author is whoever GET /user says, so a PAT user's comments are found."""
    fake.tokens["ghp_personal"] = Token("octo-maintainer", is_app=False)
    mine = fake.add_comment(7, f"{MARK}\nold", login="octo-maintainer")
    fake.add_comment(7, f"{MARK}\nold", login=BOT)  # not ours under this token
    result = make_forge(token="ghp_personal").upsert_comment(number=7, marker=MARK, body="new")
    assert result.id == mine and result.removed_duplicates == 0


def test_enterprise_base_url_is_honoured() -> None:
    """A GitHub Enterprise API root (/api/v3) is used for every call."""
    with FakeGitHub(prefix="/api/v3") as ghe:
        forge = PyGithubForge(
            token="ghs_fake_app_token",
            repository=ghe.repo,
            api_url=ghe.base_url,
            retry=RetryPolicy(attempts=1),
            seconds_between_writes=None,
        )
        forge.upsert_comment(number=3, marker=MARK, body="on GHE")
        assert all(e.path.startswith("/api/v3/") for e in ghe.exchanges)
        assert len(ghe.comments_on(3)) == 1
        assert ghe.violations == []


def test_marker_must_be_an_html_comment(make_forge: Make) -> None:
    """A visible marker would show up in the PR, so it is rejected."""
    with pytest.raises(ValueError, match="HTML comment"):
        make_forge().upsert_comment(number=7, marker="evalbot", body="x")


def test_installation_token_never_calls_get_user(fake: FakeGitHub, make_forge: Make) -> None:
    """GITHUB_TOKEN (ghs_) comments as github-actions[bot]: our marked comment is found without GET /user (which
    GitHub answers 403 for such tokens), and a forged copy by a human is not ours."""
    forged = fake.add_comment(7, f"{MARK}\nforged", login="mallory")
    ours = fake.add_comment(7, f"{MARK}\nold", login=BOT)
    forge = make_forge()
    result = forge.upsert_comment(number=7, marker=MARK, body="new")
    assert result.id == ours and result.action == "edited" and result.removed_duplicates == 0
    assert fake.comments[forged].body == f"{MARK}\nforged"
    assert fake.calls("users/get-authenticated") == 0
    assert forge.api_requests == len(fake.exchanges) == 2  # list comments, edit


def test_personal_token_asks_get_user_only_when_a_marked_comment_exists(fake: FakeGitHub, make_forge: Make) -> None:
    """A PAT's first comment needs no identity (GitHub names its author in the answer); later runs ask once."""
    fake.tokens["ghp_personal"] = Token("octo-maintainer", is_app=False)
    first = make_forge(token="ghp_personal").upsert_comment(number=7, marker=MARK, body="one")
    assert first.action == "created" and fake.calls("users/get-authenticated") == 0
    second = make_forge(token="ghp_personal").upsert_comment(number=7, marker=MARK, body="two")
    assert second.id == first.id and second.action == "edited"
    assert fake.calls("users/get-authenticated") == 1


def test_request_count_includes_retries(fake: FakeGitHub, make_forge: Make) -> None:
    """Every HTTP request is counted, including the ones urllib3 retries after a 5xx."""
    fake.fail("GET", r"/issues/7/comments$", 502, times=2)
    forge = make_forge()
    forge.upsert_comment(number=7, marker=MARK, body="x")
    assert fake.calls("issues/list-comments") == 4  # 1 + 2 retries, and the re-list after creating
    assert forge.api_requests == len(fake.exchanges) == 5


def test_server_errors_on_post_wait_the_shared_policy_backoff(fake: FakeGitHub, make_forge: Make) -> None:
    """Without a hint from GitHub the POST retries wait errors.RetryPolicy's doubling backoff (1 s, 2 s by default),
    the same policy the judge retries with; its ``attempts`` count the first try."""
    waits: list[float] = []
    fake.fail("POST", r"/issues/7/comments$", 502, times=2)
    result = make_forge(retry=RetryPolicy(), sleep=waits.append).upsert_comment(number=7, marker=MARK, body="x")
    assert result.action == "created" and len(fake.comments_on(7)) == 1
    assert waits == [1.0, 2.0]
    fake.fail("POST", r"/issues/8/comments$", 502, times=10)
    with pytest.raises(ForgeUnavailable):
        make_forge(retry=RetryPolicy(attempts=2, base_delay=0.0)).upsert_comment(number=8, marker=MARK, body="x")
    assert fake.calls("issues/create-comment") == 3 + 2
