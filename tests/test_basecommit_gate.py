"""basecommit/gate.py: which of the base commit's files hold the gate policy (found in the base tree, not the PR's), and
the one-section rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalbot.basecommit.gate import base_eval_files, config_candidates, settings_at
from evalbot.errors import InputError
from evalbot.forge.base import ForgeUnavailable

BASE = {
    "evals": [("a", "dir"), ("b", "dir"), ("top.evalset.json", "file"), ("test_config.json", "file"),
              ("notes.json", "file")],
    "evals/a": [("one.evalset.json", "file"), ("test_config.json", "file"), ("link.evalset.json", "symlink")],
    "evals/b": [("deep", "dir"), ("two.test.json", "file")],
    "evals/b/deep": [("three.evalset.json", "file")],
    "": [("evals", "dir"), ("README.md", "file")],
}


def listing(path: str) -> list[tuple[str, str]] | None:
    return BASE.get(path)


def test_folders_are_searched_recursively_for_eval_sets_only() -> None:
    """A folder input: every *.evalset.json / *.test.json file below it (no configs, results or symlinks)."""
    assert base_eval_files(listing, ["evals"], Path("/ws")) == [
        "evals/a/one.evalset.json", "evals/b/deep/three.evalset.json", "evals/b/two.test.json",
        "evals/top.evalset.json"]


@pytest.mark.parametrize(("pattern", "found"), [
    ("evals/**/*.evalset.json", ["evals/a/one.evalset.json", "evals/b/deep/three.evalset.json",
                                 "evals/top.evalset.json"]),
    ("evals/*/*.evalset.json", ["evals/a/one.evalset.json"]),
    ("evals/[ab]/*.json", ["evals/a/one.evalset.json", "evals/b/two.test.json"]),
    ("**/t*.json", ["evals/b/deep/three.evalset.json", "evals/b/two.test.json", "evals/top.evalset.json"]),
    ("./evals/?/one.evalset.json", ["evals/a/one.evalset.json"]),
])
def test_globs_match_as_the_run_expands_them(pattern: str, found: list[str]) -> None:
    """Glob inputs are matched against the base tree with glob's recursive semantics."""
    assert base_eval_files(listing, [pattern], Path("/ws")) == found


def test_a_file_input_and_paths_outside_are_handled() -> None:
    """A named file is taken as is (its config is looked for beside it); ``..`` and absolute paths outside the
    checkout are ignored; configs are the folders' test_config.json, deduplicated, in order."""
    files = base_eval_files(listing, ["evals/a/one.evalset.json", "../elsewhere", "/etc"], Path("/ws"))
    assert files == ["evals/a/one.evalset.json"]
    assert config_candidates(None, ["evals/a/x.evalset.json", "evals/a/y.evalset.json", "z.evalset.json"],
                             Path("/ws")) == ["evals/a/test_config.json", "test_config.json"]


def test_too_many_folders_fail_closed() -> None:
    """A tree of thousands of folders is not walked without end: the run fails closed naming the config input."""
    def endless(path: str) -> list[tuple[str, str]]:
        return [("d", "dir")]
    with pytest.raises(ForgeUnavailable, match="config input"):
        base_eval_files(endless, ["evals"], Path("/ws"))


def test_two_different_sections_name_both_files() -> None:
    """Configs with different evalbot sections: InputError naming both; equal ones (any key spelling) and configs
    without a section are fine."""
    texts = {"a/test_config.json": '{"evalbot": {"fail_on": "threshold"}}',
             "b/test_config.json": '{"evalbot": {"failOn": "threshold"}}',
             "c/test_config.json": '{"criteria": {}}',
             "d/test_config.json": '{"evalbot": {"fail_on": "never"}}'}

    def read(path: str, what: str) -> str | None:
        return texts.get(path)

    def label(path: str) -> str:
        return f"base:{path}"

    ok = settings_at(read, ["a/test_config.json", "b/test_config.json", "c/test_config.json"], label)
    assert ok == ({"fail_on": "threshold"}, "a/test_config.json")
    with pytest.raises(InputError) as err:
        settings_at(read, list(texts), label)
    assert "base:d/test_config.json" in str(err.value) and "base:a/test_config.json" in str(err.value)
