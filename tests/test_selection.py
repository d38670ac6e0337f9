"""Which eval sets a change can affect (:mod:`evalbot.selection`): the pure rule, the ``affected_by`` policy key and
what a hostile value of it gets. The same rule on real git repositories is in tests/cli/test_plan.py."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from evalbot.compare.gate import GatePolicy, policy_from_settings
from evalbot.errors import InputError
from evalbot.selection import (
    MAX_MAPPED,
    AffectedByError,
    Selection,
    SetChoice,
    parse_affected_by,
    plan_change,
    select,
)

SETS = ["evals/billing/billing.evalset.json", "evals/search/search.evalset.json", "evals/orders/orders.evalset.json"]
MAPPING = {"evals/billing": ["agents/billing/**", "shared/**"], "evals/search": ["agents/search/**", "shared/**"],
           "evals/orders": ["agents/orders/**"]}


def chosen(changed: list[str], mapping: dict[str, list[str]] | None = MAPPING, **kw: Any) -> list[str]:
    return select(SETS, changed, parse_affected_by(mapping), **kw).affected


def test_a_mapped_path_affects_only_the_eval_sets_mapped_to_it() -> None:
    assert chosen(["agents/billing/tools.py"]) == [SETS[0]]
    assert chosen(["agents/orders/deep/er/x.py"]) == [SETS[2]]
    assert chosen(["shared/util.py"]) == SETS[:2]  # both map shared/**, orders does not
    assert chosen([]) == []


def test_a_file_of_an_eval_sets_own_folder_affects_that_eval_set() -> None:
    assert chosen(["evals/search/test_config.json"]) == [SETS[1]]
    assert chosen(["evals/orders/orders.evalset.json", "evals/orders/data/more.json"]) == [SETS[2]]


def test_an_unmapped_file_outside_every_eval_set_folder_affects_everything() -> None:
    sel = select(SETS, ["agents/billing/x.py", "Dockerfile"], parse_affected_by(MAPPING))
    assert sel.affected == SETS and sel.carried == []
    assert sel.everything is not None and "Dockerfile" in sel.everything and "no affected_by mapping" in sel.everything
    assert chosen(["evals/README.md"]) == SETS  # beside the eval set folders, in none of them


def test_no_mapping_affects_everything() -> None:
    sel = select(SETS, ["agents/billing/x.py"], None)
    assert sel.affected == SETS and sel.everything is not None and "no affected_by" in sel.everything


def test_a_config_given_for_every_eval_set_affects_everything_when_it_changes() -> None:
    """--config FILE applies to every eval set: its change affects all, wherever the file sits."""
    assert chosen(["evals/billing/shared_config.json"], always=["evals/billing/shared_config.json"]) == SETS


def test_an_eval_set_at_the_top_claims_only_the_files_beside_it() -> None:
    """An eval set kept at the repository's top: its folder would hold every file, so shared code would affect it
    alone; the top counts as its folder only for what sits there directly."""
    sets = ["top.evalset.json", "evals/billing/billing.evalset.json"]
    mapping = parse_affected_by({"evals/billing": ["agents/billing/**"]})
    assert select(sets, ["shared/util.py"], mapping).affected == sets  # unmapped, in no eval set's folder
    assert select(sets, ["top.evalset.json"], mapping).affected == ["top.evalset.json"]


def test_a_mapping_key_may_name_the_eval_set_file_or_a_folder_above_it() -> None:
    assert select(SETS, ["agents/x/y.py"], parse_affected_by({SETS[1]: ["agents/x/**"]})).affected == [SETS[1]]
    assert select(SETS, ["agents/x/y.py"], parse_affected_by({"evals": ["agents/x/**"]})).affected == SETS


def test_a_pattern_naming_a_folder_covers_what_is_under_it_and_globs_stay_within_names() -> None:
    assert select(SETS, ["lib/a/b.py"], parse_affected_by({"evals/billing": ["lib"]})).affected == [SETS[0]]
    mapping = parse_affected_by({"evals/billing": ["lib/*.py"]})
    assert select(SETS, ["lib/a.py"], mapping).affected == [SETS[0]]
    assert select(SETS, ["lib/sub/a.py"], mapping).affected == SETS  # * never crosses a '/': unmapped
    assert select(SETS, ["libx/a.py"], parse_affected_by({"evals/billing": ["lib"]})).affected == SETS


def test_the_reasons_name_the_files_and_patterns() -> None:
    sel = select(SETS, ["agents/billing/a.py", "evals/billing/test_config.json"], parse_affected_by(MAPPING))
    reasons = sel.eval_sets[0].reasons
    assert reasons == ("evals/billing/test_config.json changed in its folder",
                       "agents/billing/a.py changed (affected_by agents/billing/**)")
    assert sel.eval_sets[1].reasons == ("no file of its folder or of its affected_by paths changed",)


def test_a_key_naming_no_eval_set_is_a_notice() -> None:
    sel = select(SETS, [], parse_affected_by({"evals/biling": ["x/**"]}))
    assert sel.notes and "'evals/biling'" in sel.notes[0] and "spelling" in sel.notes[0]


def test_a_carried_eval_set_never_has_a_changed_file_of_its_own() -> None:
    """By construction: whatever changed, an eval set with a changed file under its own folder is affected, and a
    Selection holding such a carried eval set cannot even be made."""
    rng = random.Random(40)
    pool = [*(f"{s.rsplit('/', 1)[0]}/{name}" for s in SETS for name in ("a.json", "deep/b.py", "test_config.json")),
            "agents/billing/x.py", "agents/search/y.py", "agents/orders/z.py", "shared/u.py"]
    for _ in range(500):
        changed = rng.sample(pool, rng.randint(0, 4))
        sel = select(SETS, changed, parse_affected_by(MAPPING))
        for choice in sel.eval_sets:
            folder = choice.path.rsplit("/", 1)[0]
            if any(f.startswith(folder + "/") for f in changed):
                assert choice.affected, (choice, changed)
    with pytest.raises(AssertionError, match="would be carried although files of its own changed"):
        Selection((SetChoice(SETS[0], False, ("forged",)),), ("evals/billing/billing.evalset.json",))


def test_plan_change_affects_everything_when_it_cannot_know() -> None:
    def broken() -> list[str]:
        raise InputError("main", "", "git merge-base main HEAD failed: not a commit")

    mapping = parse_affected_by(MAPPING)
    sel = plan_change(SETS, mapping, broken)
    assert sel.affected == SETS and sel.everything is not None and "could not be listed" in sel.everything
    sel = plan_change(SETS, mapping, lambda: ["agents/billing/a.py"], policy_error="git could not read main:x")
    assert sel.affected == SETS and "could not be read" in (sel.everything or "")

    def never() -> list[str]:
        raise AssertionError("git is not asked without a mapping")

    assert plan_change(SETS, None, never).affected == SETS


def test_affected_by_is_a_policy_key_read_like_the_others() -> None:
    policy = policy_from_settings({"affectedBy": {"evals/billing/": ["./agents/billing/**"]}}, source="cfg.json")
    assert policy.affected_by == {"evals/billing": ("agents/billing/**",)}
    assert GatePolicy().affected_by is None


@pytest.mark.parametrize(("value", "pointer", "words"), [
    (["evals/billing"], "/evalbot/affected_by", "must be an object"),
    ({"evals/billing": "agents/**"}, "/evalbot/affected_by/evals~1billing", "must be a list"),
    ({"evals/billing": [3]}, "/evalbot/affected_by/evals~1billing/0", "non-empty string"),
    ({"evals/billing": ["../outside/**"]}, "/evalbot/affected_by/evals~1billing/0", "leads out"),
    ({"evals/billing": ["/etc/**"]}, "/evalbot/affected_by/evals~1billing/0", "absolute"),
    ({"evals/billing": ["a\\b"]}, "/evalbot/affected_by/evals~1billing/0", "backslash"),
    ({"evals/billing": ["a\u0000b"]}, "/evalbot/affected_by/evals~1billing/0", "control character"),
    ({"evals/billing": ["."]}, "/evalbot/affected_by/evals~1billing/0", "whole repository"),
    ({"": ["x"]}, "/evalbot/affected_by/", "non-empty string"),
    ({"evals/billing": ["x" * 2000]}, "/evalbot/affected_by/evals~1billing/0", "longer than"),
    ({"evals/billing": ["x"] * 201}, "/evalbot/affected_by/evals~1billing", "at most 200"),
    ({f"e/{i}": ["x"] for i in range(MAX_MAPPED + 1)}, "/evalbot/affected_by", f"at most {MAX_MAPPED}"),
])
def test_a_bad_affected_by_names_the_file_and_pointer(value: object, pointer: str, words: str) -> None:
    with pytest.raises(InputError) as caught:
        policy_from_settings({"affected_by": value}, source="evals/test_config.json")
    assert caught.value.path == "evals/test_config.json" and caught.value.pointer == pointer, caught.value
    assert words in caught.value.message and "fix it in the config's evalbot section" in caught.value.message


def test_patterns_with_markup_or_regex_characters_are_literal() -> None:
    mapping = parse_affected_by({"evals/billing": ["a+b/(x)|y/**", "[!q]z/**"]})
    assert select(SETS, ["a+b/(x)|y/k.py"], mapping).affected == [SETS[0]]
    assert select(SETS, ["aab/xy/k.py"], mapping).affected == SETS  # '+', '(', '|' are not regex here
    assert select(SETS, ["rz/k"], mapping).affected == [SETS[0]] and select(SETS, ["qz/k"], mapping).affected == SETS


def test_a_huge_change_is_decided_quickly() -> None:
    """100,000 changed files against a dozen mapped folders: well within the plan's 1 s."""
    sets = [f"evals/s{i}/s{i}.evalset.json" for i in range(12)]
    mapping = parse_affected_by({f"evals/s{i}": [f"agents/s{i}/**", "shared/**"] for i in range(12)})
    changed = [f"agents/s{i % 12}/f{i}.py" for i in range(100_000)]
    started = time.perf_counter()
    sel = select(sets, changed, mapping)
    assert time.perf_counter() - started < 5 and sel.affected == sets


def test_parse_rejects_what_is_not_json_shaped() -> None:
    with pytest.raises(AffectedByError):
        parse_affected_by({"evals/billing": {"a": 1}})
    assert parse_affected_by(None) is None
