"""``evalbot <command> --help`` says where a flag's default comes from: a gate setting left off the command line is
the config's ``evalbot`` section's, and only then the built-in default (the help once said "default: regression"
for ``--fail-on`` while a config's ``fail_on: never`` decided)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from evalbot.cli.commands import build_parser, main
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


@pytest.mark.parametrize("command", [None, "run", "baseline", "compare", "merge", "plan", "criteria", "judge-diff"])
def test_every_option_is_in_the_cli_page(command: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    """Each option ``--help`` lists is documented in docs/cli.md (the command-line page names the rest)."""
    with pytest.raises(SystemExit):
        main([command, "--help"] if command else ["--help"], env={})
    options = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", capsys.readouterr().out)) - {"--help"}
    assert len(options) >= {None: 2, "plan": 3, "criteria": 1}.get(command, 10)
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert sorted(o for o in options if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", page)) == []


def help_text(capsys: pytest.CaptureFixture[str], command: str) -> str:
    with pytest.raises(SystemExit) as done:
        main([command, "--help"], env={})
    assert done.value.code == 0
    return capsys.readouterr().out


def sections(text: str) -> dict[str, list[str]]:
    """The options listed under each heading of a help text (``heading:`` at the start of a line)."""
    found: dict[str, list[str]] = {}
    heading = ""
    for line in text.splitlines():
        if re.match(r"^[a-zA-Z].*:$", line):
            heading = line[:-1]
            found[heading] = []
        elif m := re.match(r"^  (?:-\w, )?(--?[\w-]+|[A-Z]+)\b", line):
            found.setdefault(heading, []).append(m.group(1))
    return found


GROUPS = {
    "run": {"inputs": ["PATH", "--actuals", "--config"], "gate policy": ["--judge-failures"],
            "judge": ["--judge-cache", "--judge-replay", "--sampling"], "outputs": ["--report", "--html"],
            "CI and scale": ["--shard", "--jobs"], "running the agent (instead of --actuals)": ["--agent", "--record"]},
    "compare": {"inputs": ["PATH", "--actuals", "--config", "--baseline"],
                "gate policy": ["--fail-on", "--judge-failures", "--block-flaky", "--tolerance", "--alpha",
                                "--resample-split"],
                "judge": ["--judge-concurrency", "--judge-timeout", "--judge-deadline"],
                "outputs": ["--comment", "--summary", "--report", "--html", "--comment-template"],
                "CI and scale": ["--shard", "--comment-id"]},
    "baseline": {"inputs": ["PATH", "--actuals", "--previous", "--reset-history"],
                 "gate policy": ["--resample-split"],
                 "outputs": ["--output", "--commit", "--created-at", "--allow-errors"], "CI and scale": ["--shard"]},
    "merge": {"inputs": ["PART", "--eval-sets", "--actuals", "--config", "--baseline"],
              "gate policy": ["--fail-on", "--tolerance"], "judge": ["--judge-cache", "--judge-replay"],
              "outputs": ["--write-baseline", "--comment", "--report"]},
    "plan": {"inputs": ["PATH", "--base", "--config"], "outputs": ["--json"]},
}


@pytest.mark.parametrize("command", sorted(GROUPS))
def test_options_are_grouped(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Each command's options sit under inputs / agent / gate policy / judge / outputs / CI and scale, in that order;
    the gate policy group says once where a flag left off takes its value from."""
    text = help_text(capsys, command)
    found = sections(text)
    for title, flags in GROUPS[command].items():
        assert set(flags) <= set(found.get(title, [])), (command, title, found.get(title))
    # only -h and -v are left in the catch-all list
    assert sorted(found["options"]) == ["--help", "--verbose"]
    order = [t for t in ("inputs", "running the agent (instead of --actuals)", "gate policy", "judge", "outputs",
                         "CI and scale") if t in found]
    assert [t for t in found if t in order] == order
    said = " ".join(text.split())
    assert said.count("takes its value from the evalbot section of test_config.json") == 1
    assert said.count("evalbot section of test_config.json") == 1


def test_the_top_level_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"], env={})
    out = capsys.readouterr().out
    for command in ("run", "baseline", "compare", "merge", "criteria", "plan"):
        assert re.search(rf"^    {command} ", out, re.M), command


def examples(text: str) -> list[tuple[list[str], int]]:
    """The commands of a help's examples epilog (continuation lines joined) and the exit code each one states."""
    epilog = text.split("\nexamples (from the repository's root", 1)[1]
    found: list[tuple[list[str], int]] = []
    stated: int | None = None
    lines = iter(epilog.splitlines())
    for line in lines:
        if m := re.search(r"\(exit (\d)", line):
            stated = int(m.group(1))
        if line.startswith("  evalbot "):
            while line.endswith("\\"):
                line = line[:-1] + next(lines)
            assert stated is not None, f"no exit code stated for {line}"
            found.append((shlex.split(line)[1:], stated))
    return found


@pytest.mark.parametrize("command", ["run", "compare", "baseline", "merge", "criteria", "plan"])
def test_every_example_of_the_help_runs_with_the_exit_code_it_states(
        command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The examples run as shown from a copy of the repository's examples/ (nothing written into the checkout)."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    if command == "plan":  # a checkout with a main branch
        for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "main"]):
            subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True)
    found = examples(help_text(capsys, command))
    assert found and any(argv[0] == command for argv, _ in found)
    for argv, code in found:
        assert main(argv, env={}) == code, argv
        capsys.readouterr()
    if command in ("run", "compare"):
        assert (tmp_path / "report.json").is_file()
    if command == "baseline":
        assert json.loads((tmp_path / "baseline.json").read_text())["eval_sets"]


@pytest.mark.parametrize("argv", [["-v", "run", "x"], ["run", "-v", "x"], ["run", "x", "--verbose"],
                                  ["compare", "x", "-v"], ["merge", "p", "-v"], ["baseline", "-v", "x"]])
def test_verbose_is_accepted_before_and_after_the_command(argv: list[str]) -> None:
    assert build_parser().parse_args(argv).verbose is True


def test_verbose_is_off_unless_given() -> None:
    assert build_parser().parse_args(["run", "x"]).verbose is False
    assert build_parser().parse_args(["compare", "x"]).verbose is False


def _baseline_project(tmp_path: Path, section: dict[str, object] | None) -> list[str]:
    shutil.copytree(ROOT / "examples" / "evals", tmp_path / "evals")
    shutil.copytree(ROOT / "examples" / "runs", tmp_path / "runs")
    shutil.copytree(ROOT / "examples" / "judge-cache", tmp_path / "judge-cache")
    for name in ("faq", "orders"):
        config = tmp_path / "evals" / name / "test_config.json"
        data = json.loads(config.read_text())
        if section is None:
            del data["evalbot"]
        else:
            data["evalbot"] = section
        config.write_text(json.dumps(data))
    return ["baseline", "evals", "--actuals", "runs/main.json", "--judge-cache", "judge-cache", "--judge-replay"]


def test_baseline_writes_the_configured_baseline_path_without_output(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    argv = _baseline_project(tmp_path, {"baseline_path": "gate/main-baseline.json"})
    assert main(argv, env={}) == 0
    assert "wrote gate/main-baseline.json: 2 eval set(s), 6 case(s)" in capsys.readouterr().out
    assert json.loads((tmp_path / "gate" / "main-baseline.json").read_text())["eval_sets"]
    assert not (tmp_path / ".evalbot").exists()


def test_baseline_writes_the_default_path_without_output_or_setting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(_baseline_project(tmp_path, None), env={}) == 0
    assert "wrote .evalbot/baseline.json: 2 eval set(s)" in capsys.readouterr().out
    assert (tmp_path / ".evalbot" / "baseline.json").is_file()


@pytest.mark.parametrize(("value", "says"), [
    (7, "/evalbot/baseline_path: expected a file path such as .evalbot/baseline.json, got 7"),
    ("evals", "evalbot.baseline_path ('evals') cannot be written: "),
])
def test_a_configured_baseline_path_that_cannot_be_written_is_exit_2(
        value: object, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(_baseline_project(tmp_path, {"baseline_path": value}), env={}) == 2
    err = capsys.readouterr().err
    assert says in err and "test_config.json" in err
