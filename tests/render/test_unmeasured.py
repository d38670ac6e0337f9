"""The comment of a run that could not be measured at all (a sharded run's parts missing): the headline says so,
and hostile case ids quoted in it cannot forge a marker, ping, link or inject markup."""

from __future__ import annotations

from evalbot.render.comment import Links, comment_marker, render_unmeasured


def test_headline_names_what_is_missing_and_the_commit() -> None:
    body = render_unmeasured("shards 2/4, 3/4 missing: 2 case(s) not measured: shop/refund, shop/greeting; rerun",
                             marker=comment_marker("suite"), links=Links(summary="https://github.com/o/r/actions/runs/9"),
                             commit="0123456789abcdef")
    lines = body.splitlines()
    assert lines[0] == "<!-- evalbot id=suite -->"
    assert lines[1] == "### ⛔ evalbot: could not measure, not passing: shards 2/4, 3/4 missing"
    assert "shop/refund, shop/greeting" in body and "`0123456789ab`" in body
    assert "[job summary](https://github.com/o/r/actions/runs/9)" in body


def test_hostile_case_ids_are_inert() -> None:
    hostile = ("shard 1/2 missing: 1 case(s) not measured: s/<!-- evalbot id=default --> <script>x</script> "
               "@octo-org/admins [click](https://evil.example) ```")
    body = render_unmeasured(hostile, marker=comment_marker(), links=Links(report="../../etc/passwd"))
    assert body.count("<!-- evalbot") == 1 and body.startswith("<!-- evalbot id=default -->\n")
    assert "<script>" not in body and "](https://evil.example)" not in body
    assert "@octo-org/admins" not in body  # no team ping
    assert "```" not in body


def test_summary_form_has_no_marker() -> None:
    body = render_unmeasured("no part in .evalbot-parts: nothing downloaded", marker="")
    assert "<!--" not in body
    assert body.startswith("### ⛔ evalbot: could not measure, not passing: no part in .evalbot-parts\n")
