"""``evalbot <command> --help`` says where a flag's default comes from: a gate setting left off the command line is
the config's ``evalbot`` section's, and only then the built-in default (the help once said "default: regression"
for ``--fail-on`` while a config's ``fail_on: never`` decided)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalbot.cli.commands import main
from evalbot.compare.gate import SETTINGS_KEYS


def option_help(capsys: pytest.CaptureFixture[str], command: str, flag: str) -> str:
    """The help entry of ``flag`` in ``evalbot command --help`` (from its line to the next option's), on one line."""
    with pytest.raises(SystemExit) as done:
        main([command, "--help"], env={})
    assert done.value.code == 0
    entries = re.split(r"\n(?=  -)", capsys.readouterr().out)
    found = [e for e in entries if re.match(rf"  (?:-\w, )?{re.escape(flag)}\b(?!-)", e)]
    assert len(found) == 1, f"{command} --help: {flag}"
    return " ".join(found[0].split())


SETTINGS = [("compare", "--fail-on", "fail_on"), ("compare", "--judge-failures", "judge_failures"),
            ("compare", "--tolerance", "tolerance"), ("compare", "--alpha", "alpha"),
            ("compare", "--resample-split", "resample_split"), ("compare", "--comment-template", "comment_template"),
            ("compare", "--baseline", "baseline_path"), ("compare", "--sampling", "sampling"),
            ("compare", "--block-flaky", "block_flaky"), ("merge", "--fail-on", "fail_on"),
            ("merge", "--tolerance", "tolerance"), ("merge", "--baseline", "baseline_path"),
            ("run", "--judge-failures", "judge_failures"), ("run", "--sampling", "sampling"),
            ("baseline", "--resample-split", "resample_split")]


@pytest.mark.parametrize(("command", "flag", "key"), SETTINGS, ids=[f"{c} {f}" for c, f, _ in SETTINGS])
def test_a_gate_flag_names_the_config_setting_it_overrides(command: str, flag: str, key: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert key in SETTINGS_KEYS
    assert f"default: the config's evalbot.{key}, else " in option_help(capsys, command, flag)


def test_merge_continues_the_history_of_the_file_it_writes(capsys: pytest.CaptureFixture[str]) -> None:
    """merge has no --output: its --previous defaults to the --write-baseline file."""
    assert "default: the --write-baseline file" in option_help(capsys, "merge", "--previous")
    assert "default: the --output file" in option_help(capsys, "baseline", "--previous")


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("command", [None, "run", "baseline", "compare", "merge", "plan"])
def test_every_option_is_in_the_cli_page(command: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    """Each option ``--help`` lists is documented in docs/cli.md (the command-line page names the rest)."""
    with pytest.raises(SystemExit):
        main([command, "--help"] if command else ["--help"], env={})
    options = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", capsys.readouterr().out)) - {"--help"}
    assert len(options) >= {None: 2, "plan": 3}.get(command, 10)
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert sorted(o for o in options if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", page)) == []
