"""Issue 37 row 14 end to end: a PR renaming its regressed case to an all-Cyrillic look-alike (``сору`` for ``copy``)
and committing the baseline its run writes had no look-alike flag (one script: nothing the mixed-script check sees;
the rename the update records is accepted, as any rename it records is). Ids whose UTS #39 confusable skeleton is another id's are now flagged under the
headline, escaped, with the id they read as; an honest rename is not.

main's eval set names the case that regresses ``copy`` (the e2e data's ``refund``, renamed in the eval set and both
recorded runs); main's baseline is made by the Action's mode baseline and published at the base commit only.
"""

from __future__ import annotations

import json

from tests.e2e.conftest import Action, event, measure_baseline, pull_request_event

EVAL_SET = "evals/shop.evalset.json"
LOOKALIKE = "\u0441\u043e\u0440\u0443"  # Cyrillic es, o, er, u: "сору"


def rename(action: Action, old: str, new: str) -> None:
    """Rename case ``old`` to ``new`` in the eval set and in both recorded runs."""
    path = action.workspace / EVAL_SET
    data = json.loads(path.read_text(encoding="utf-8"))
    for case in data["eval_cases"]:
        if case["eval_id"] == old:
            case["eval_id"] = new
    path.write_text(json.dumps(data), encoding="utf-8")
    for name in ("good", "regressed"):
        runs = action.workspace / "actuals" / f"{name}.json"
        actuals = json.loads(runs.read_text(encoding="utf-8"))
        actuals[new] = actuals.pop(old)
        runs.write_text(json.dumps(actuals), encoding="utf-8")


def main_with_copy(action: Action) -> None:
    rename(action, "refund", "copy")
    measure_baseline(action)


def renamed_and_accepted(action: Action, new: str) -> tuple[int, str]:
    """The PR renames ``copy`` to ``new``, commits the baseline its (regressed) run writes, and is gated."""
    rename(action, "copy", new)
    refresh = action.run("push", event("push"), inputs={"mode": "baseline", "actuals": "actuals/regressed.json"},
                         ref="refs/heads/feature")
    assert refresh.code == 0, refresh.stdout + refresh.stderr
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/regressed.json"})
    return run.code, action.github.comments_on(7)[-1].body


def test_an_all_cyrillic_lookalike_of_the_regressed_case_is_flagged(action: Action) -> None:
    main_with_copy(action)
    code, body = renamed_and_accepted(action, LOOKALIKE)
    assert code == 0, body  # accepting is explicit: the rename the update records is accepted, in plain sight
    headline = body.splitlines()[1]
    assert "⚠️ 1 id(s) with invisible or look-alike characters" in headline, headline
    notice = next(line for line in body.splitlines() if "id(s) hold invisible" in line)
    assert "shop / \\\\u0441\\\\u043e\\\\u0440\\\\u0443 (looks like copy)" in notice, notice
    assert "read as another id" in notice


def test_an_honest_rename_is_not_flagged(action: Action) -> None:
    main_with_copy(action)
    code, body = renamed_and_accepted(action, "copy_v2")
    assert "look-alike" not in body.splitlines()[1] and "id(s) hold invisible" not in body, body
    assert code == 0 and "renamed to copy\\_v2" in body, body
