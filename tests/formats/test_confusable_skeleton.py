"""UTS #39 skeletons (evalbot.formats.lookalike.skeleton): ids that read as another, whatever their scripts (issue 37
row 14), from Unicode's confusables.txt as evalbot/data/confusables.json keeps it."""

from __future__ import annotations

import json
import time

import pytest

from evalbot.formats.lookalike import CONFUSABLES, confusable_with, escape_confusable, skeleton


def test_the_table_is_unicodes_and_idempotent() -> None:
    data = json.loads(CONFUSABLES.read_text(encoding="utf-8"))
    assert data["source"].startswith("Unicode confusables.txt, UTS #39 version ")
    table = data["prototypes"]
    assert len(table) > 6000 and table["\u0441"] == "c" and table["m"] == "rn" and table["0"] == "O"
    assert not {ch for target in table.values() for ch in target} & set(table)  # a prototype is never a source


@pytest.mark.parametrize(("one", "other"), [
    ("\u0441\u043e\u0440\u0443", "copy"),  # all Cyrillic
    ("c\u043epy", "copy"),  # Latin and Cyrillic
    ("\u03bfrder", "order"),  # Greek omicron
    ("refu\u0578d", "refund"),  # Armenian vo
    ("modern", "rnodern"),  # ASCII only
    ("case_1", "case_l"),
    ("re\u200bfund", "refund"),  # default-ignorable removed
    ("caf\u00e9", "cafe\u0301"),  # NFD
])
def test_confusable_ids_share_a_skeleton(one: str, other: str) -> None:
    assert one != other and skeleton(one) == skeleton(other)


@pytest.mark.parametrize(("one", "other"), [("copy", "Copy"), ("refund", "refund_v2"), ("order", "orders"),
                                            ("\u0441\u043e\u043a", "cok_")])
def test_different_ids_keep_different_skeletons(one: str, other: str) -> None:
    assert skeleton(one) != skeleton(other)


def test_the_plain_ascii_id_is_the_original_and_the_lookalike_is_escaped() -> None:
    lookalike = "\u0441\u043e\u0440\u0443"
    assert confusable_with(["refund", lookalike, "greeting", "copy", "copy"]) == {lookalike: "copy"}
    assert confusable_with(["case_1", "case_l", "other"]) == {"case_l": "case_1"}
    assert confusable_with(["refund", "greeting"]) == {}
    assert escape_confusable(lookalike) == "\\u0441\\u043e\\u0440\\u0443"
    assert escape_confusable("caf\u00e9\\x") == "caf\u00e9\\\\x"  # é has no prototype: kept as written


def test_a_hundred_thousand_ids_and_a_huge_one_are_quick() -> None:
    ids = [f"order_status_case_{i}" for i in range(100_000)]
    started = time.perf_counter()
    assert confusable_with(ids) == {}
    assert time.perf_counter() - started < 2.0
    huge = "\u0441\u043e" * 500_000 + "\u200b" * 100_000
    started = time.perf_counter()
    assert skeleton(huge) == "co" * 500_000
    assert time.perf_counter() - started < 2.0
